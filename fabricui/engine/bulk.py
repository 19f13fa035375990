"""Vectorized routing for many flows at once: path metrics, link loads, max-min fair rates.

Same-domain routes come from a per-domain template table (``networks.DomainRoutes``); how
a flow crosses the network between domains, and which aggregate resources it loads there,
is its network kind's (``networks``: fat-tree, dragonfly, torus, an imported cluster's
switch graph, routing pair by pair, or no network). For loads and rates, the tiers where
adaptive routing spreads a flow evenly over equal-cost links are *aggregate resources*
(a leaf's uplinks, a dragonfly group pair's global bundles ...) whose capacity is the sum
of their links: exact for even spreading, and it turns one flow into a fixed, short list
of resources.

On a dragonfly adaptive routing (UGAL) splits each flow's bytes between its minimal and
its Valiant route until neither is less loaded (``ugal_split``). Path queries (an idle
fabric) take the minimal route.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.capacity import link_capacity_GBps as link_capacity_GBps
from fabricui.engine.fair_share import max_min_rates_GBps
from fabricui.engine.graph_routes import Incidence
from fabricui.engine.networks import DomainRoutes, Network, network_kind
from fabricui.engine.route_rows import compact_rows, row_of_cells
from fabricui.engine.routing import Router
from fabricui.engine.ugal import ugal_equilibrium
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PathMetrics:
    """Bottleneck and latency of many paths."""

    bottleneck_GBps: FloatArray
    """(n_flows,) narrowest link per direction [GB/s] (inf for a GPU to itself)."""
    latency_us: FloatArray
    """(n_flows,) link and forwarding latency [us]."""


class BulkRouter:
    """Routes, loads and max-min rates for arrays of (source, destination) ranks.

    Args:
        fabric: The fabric.
        router: A router to borrow node templates from (a new one by default).
        capacity_GBps: (n_links,) capacity used for loads and rates (default ``bw * eff``).
        network: The kind of network to route with (default: the fabric's own,
            ``networks.network_kind``).
    """

    def __init__(
        self,
        fabric: Fabric,
        router: Router | None = None,
        capacity_GBps: FloatArray | None = None,
        network: type[Network] | None = None,
    ) -> None:
        self.fabric = fabric
        router = router or Router.for_fabric(fabric)
        self._router = router
        self.capacity_GBps = link_capacity_GBps(fabric) if capacity_GBps is None else capacity_GBps
        # Same-domain routes, filled in on first use (shared with the network kind).
        self._domain = DomainRoutes(fabric, router)
        kind = network or network_kind(fabric)
        self._network = kind(fabric, router, self._domain, self.capacity_GBps)
        cap, extra = self.capacity_GBps, self._network.aggregate_capacity_GBps
        self.resource_capacity_GBps = np.concatenate([cap, *extra]) if extra else cap.copy()
        """(n_resources,) capacity of every link, then of the network's aggregates
        [GB/s]."""

    def _check(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> tuple[IntArray, IntArray]:
        """Ranks as flat int arrays of one length, each within the fabric."""
        a = np.asarray(src, dtype=np.int64).reshape(-1)
        b = np.asarray(dst, dtype=np.int64).reshape(-1)
        if a.shape != b.shape:
            raise EngineError(f"{a.shape[0]} sources but {b.shape[0]} destinations")
        n = self.fabric.n_gpus
        if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
            raise EngineError(f"ranks must be within 0..{n - 1}")
        return a, b

    # --- queries -----------------------------------------------------------------------

    def paths(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
        """(n_flows, width) link ids of one route per flow (gaps are -1), for inspection."""
        a, b = self._check(src, dst)
        return self._network.segments(a, b, aggregate=False, valiant=False)[0]

    def route_rows(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
        """``Router.route`` of many pairs as one (n_pairs, width) array: each route's link
        ids in order, -1 padded to the longest route (one column at least); kept in the memo
        shared with the fabric's variants, when there is one.

        The network kind's rows (``paths``) with their gaps closed, link for link what the
        per-pair router routes. When they refuse a pair (a rank out of range, no route),
        ``Router.route_rows`` routes every pair one by one, so the error is the per-pair
        router's, for the first such pair.

        Args:
            src: (n_pairs,) source ranks.
            dst: (n_pairs,) destination ranks.
        """
        a = np.asarray(src, dtype=np.int64).reshape(-1)
        b = np.asarray(dst, dtype=np.int64).reshape(-1)
        router = self._router

        def compute() -> IntArray:
            try:
                # No pairs: the per-pair router's one empty column, not the kind's width.
                rows = compact_rows(self.paths(a, b)) if a.size else router.route_rows(a, b)
            except EngineError:
                rows = router.route_rows(a, b)
            rows.setflags(write=False)
            return rows

        if router.memo is None:
            return compute()
        key = ("route_rows", a.tobytes(), b.tobytes())
        return router.memo.remember(key, compute, lambda rows: int(rows.size))

    def path_metrics(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> PathMetrics:
        """Bottleneck bandwidth and latency of many (source, destination) pairs at once.

        Args:
            src: (n_flows,) source ranks.
            dst: (n_flows,) destination ranks.

        Returns:
            Per-flow bottleneck [GB/s] (line rate, as ``fabricui path``) and latency [us].
        """
        links = self.paths(src, dst)
        fabric = self.fabric
        valid = links >= 0
        safe = np.where(valid, links, 0)
        bw = np.where(valid, fabric.link_bw_GBps[safe], np.inf).min(axis=1)
        hop = fabric.link_lat_us[safe] + fabric.dev_lat_us[fabric.link_dst[safe]]
        # The destination (a GPU) adds no forwarding latency, so summing every hop is exact.
        lat = np.where(valid, hop, 0.0).sum(axis=1)
        return PathMetrics(bottleneck_GBps=bw, latency_us=lat)

    def link_shares(self, src: int, dst: int) -> FloatArray:
        """(n_links,) fraction of one transfer from rank ``src`` to rank ``dst`` that every
        link carries when the transfer spreads as the fabric spreads it: evenly over a
        leaf's (or pod's) equal-cost uplinks, as ECMP over NCCL's many channels and queue
        pairs and adaptive routing do; over a dragonfly group pair's global cables (minimal
        routes: an idle fabric's adaptive routing takes them); over every route of an
        imported cluster's leaf pair. A NIC's ports and a bundle's parallel cables are one
        link already. A link the transfer does not cross carries 0.

        Args:
            src: Source rank.
            dst: Destination rank.
        """
        load = self.loads([src], [dst], [1.0], valiant=False)
        return self.link_loads(load)

    def incidence(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, valiant: bool = False
    ) -> tuple[IntArray, IntArray]:
        """(flow, resource) pairs: which links and aggregates each flow loads."""
        flow, res, _ = self.weighted_incidence(src, dst, valiant)
        return flow, res

    def weighted_incidence(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, valiant: bool = False
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """(flow, resource, weight) triples: the bytes each resource carries per byte of
        each flow (1 on fat-trees and tori; see ``DragonflyNetwork._resources``).

        Args:
            src: (n_flows,) source ranks.
            dst: (n_flows,) destination ranks.
            valiant: Dragonfly only: route flows between groups through intermediate groups.
        """
        return self._incidence(src, dst, valiant).expanded()

    def _incidence(
        self,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        valiant: bool | FloatArray,
        built: dict[bool, Incidence] | None = None,
    ) -> Incidence:
        """What ``weighted_incidence`` says, with an imported cluster's leaf-pair spreads
        kept as shared groups (one copy per leaf pair, not per flow); ``valiant`` is one
        mode for every flow or each flow's fraction on its Valiant route (``ugal_split``),
        whose incidences of every flow in one mode may be ``built`` already (``_split``)."""
        a, b = self._check(src, dst)
        if isinstance(valiant, np.ndarray):
            return self._mixed_incidence(a, b, valiant, {} if built is None else built)
        memo = self._router.memo
        if memo is None:
            return self._routed_incidence(a, b, valiant)
        # The same flows load the same resources on every variant of the fabric (only
        # capacities differ): kept for the next calibration trial.
        key = ("incidence", type(self._network), bool(valiant), a.tobytes(), b.tobytes())
        return memo.remember(key, lambda: self._routed_incidence(a, b, valiant), _incidence_size)

    def _routed_incidence(self, a: IntArray, b: IntArray, valiant: bool) -> Incidence:
        """``_incidence`` of checked flows in one routing mode, from the network kind."""
        grouped = self._network.incidence(a, b)
        if grouped is not None:
            return grouped
        res, weight = self._network.segments(a, b, aggregate=True, valiant=valiant)
        keep = res >= 0
        if weight is None:  # 1 on every entry, as the incidence reads None
            return Incidence(a.shape[0], row_of_cells(keep), res[keep], None)
        keep &= weight > 0
        return Incidence(a.shape[0], row_of_cells(keep), res[keep], weight[keep])

    def _mixed_incidence(
        self, a: IntArray, b: IntArray, valiant: FloatArray, built: dict[bool, Incidence]
    ) -> Incidence:
        """The incidence of flows that split their bytes between their two routes:
        ``valiant`` is each flow's fraction on its Valiant route (0: all minimal, 1: all
        Valiant; booleans give one route per flow). A mode that every flow takes a part of
        is read from ``built`` when there (emptied as it is read: the same entries as
        routing them again); the flows of a mode only some take are routed on their own."""
        share = np.asarray(valiant, dtype=np.float64)
        flows, res, weights = [], [], []
        for mode, part in ((False, 1.0 - share), (True, share)):
            rows = np.flatnonzero(part > 0)
            whole = built.pop(mode, None)
            if rows.size:
                if whole is None or rows.size < a.shape[0]:
                    whole = None  # freed before its part of the flows is routed
                    whole = self._incidence(a[rows], b[rows], mode)
                f, r, w = whole.expanded()
                whole = None
                flows.append(rows[f])
                res.append(r)
                weights.append(w * part[rows[f]])
        if not flows:
            return Incidence(a.shape[0], np.zeros(0, np.int64), np.zeros(0, np.int64), None)
        return Incidence(
            a.shape[0], np.concatenate(flows), np.concatenate(res), np.concatenate(weights)
        )

    #: Most flows split one by one; a larger pattern (a 4,096-GPU all-to-all has 16.8
    #: million flows, spread evenly already) takes the better single mode.
    _UGAL_MAX_FLOWS = 1 << 16

    def ugal_split(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, volume: npt.ArrayLike = 1.0
    ) -> FloatArray:
        """(n_flows,) the fraction of each flow's bytes adaptive routing (UGAL) sends on
        its Valiant route on a dragonfly (through another group, or another router of its
        group); the rest takes its minimal route (``ugal.ugal_equilibrium``). A pattern of
        more than ``_UGAL_MAX_FLOWS`` flows takes the better of all minimal and all
        Valiant.

        Args:
            src: (n_flows,) source ranks.
            dst: (n_flows,) destination ranks.
            volume: Bytes per message byte of each flow (or one value).
        """
        return self._split(src, dst, volume, {})

    def _split(
        self,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        volume: npt.ArrayLike,
        built: dict[bool, Incidence],
    ) -> FloatArray:
        """``ugal_split``, leaving in ``built`` the incidence of every flow in each mode
        when it routed them (a pattern of at most ``_UGAL_MAX_FLOWS`` flows), so that the
        caller's filling or loads read them instead of routing the flows again."""
        a, b = self._check(src, dst)
        n = a.shape[0]
        vol = np.broadcast_to(np.asarray(volume, dtype=np.float64), a.shape).astype(np.float64)
        if len(self._network.modes()) < 2 or n == 0:
            return np.zeros(n)
        size = self.resource_capacity_GBps.size
        if n > self._UGAL_MAX_FLOWS:
            pure = (np.zeros(n), np.ones(n))
            return min(
                pure,
                key=lambda x: self._busiest(self._incidence(a, b, bool(x[0])).loads(vol, size)),
            )
        built[False] = self._incidence(a, b, False)
        built[True] = self._incidence(a, b, True)
        return ugal_equilibrium(
            built[False], built[True], vol, self.resource_capacity_GBps, self._busiest
        )

    def loads(
        self,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        volume: npt.ArrayLike,
        valiant: bool | FloatArray | None = None,
    ) -> FloatArray:
        """(n_resources,) bytes per message byte on every link and aggregate.

        Args:
            src: (n_flows,) source ranks.
            dst: (n_flows,) destination ranks.
            volume: Bytes per message byte of each flow (or one value).
            valiant: Dragonfly routing: one mode for every flow, or each flow's fraction
                on its Valiant route; None: adaptive routing decides (``ugal_split``).
        """
        built: dict[bool, Incidence] = {}
        if valiant is None:
            modes = self._network.modes()
            if len(modes) > 1 and np.asarray(src).size > self._UGAL_MAX_FLOWS:
                return min(
                    (self.loads(src, dst, volume, mode) for mode in modes), key=self._busiest
                )
            valiant = modes[0] if len(modes) == 1 else self._split(src, dst, volume, built)
        incidence = self._incidence(src, dst, valiant, built)
        built.clear()
        vol = np.broadcast_to(
            np.asarray(volume, dtype=np.float64), np.asarray(src).reshape(-1).shape
        )
        return incidence.loads(vol, self.resource_capacity_GBps.size)

    def _busiest(self, load: FloatArray) -> float:
        """Busiest resource's time per message byte [us per byte] of a load vector.

        A dragonfly router's local links counted as aggregates (out of it, into it) are
        judged link by link, as if each flow had been spread over them: a local link
        carries its source router's outgoing share and its target router's incoming share.
        """
        load, capacity = self._network.unfold_aggregates(load), self.resource_capacity_GBps
        used = load > 0
        if not used.any():
            return 0.0
        return float(np.max(load[used] / (capacity[used] * 1e3)))

    def seconds_per_byte(
        self,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        volume: npt.ArrayLike,
        valiant: bool | FloatArray | None = None,
    ) -> float:
        """Busiest resource's time per message byte [us per byte] (0 without traffic);
        dragonfly flows split between their routes as adaptive routing does (UGAL), unless
        ``valiant`` names a mode (as ``loads``)."""
        return self._busiest(self.loads(src, dst, volume, valiant))

    def max_min_rates(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, valiant: bool | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """Max-min fair rates of concurrent flows (progressive filling).

        Every unfrozen flow grows at the same pace until some resource is full; the flows
        through it freeze at that rate; repeat. On a dragonfly adaptive routing splits
        each flow between its routes (``ugal_split``), and the filling that delivers the
        most in total of that, every flow minimal and every flow Valiant is kept, unless
        ``valiant`` names one mode.

        Returns:
            (n_flows,) rate of each flow [GB/s], and (n_resources,) load [GB/s].
        """
        best: tuple[FloatArray, FloatArray] | None = None
        modes: list[bool | FloatArray] = list(
            self._network.modes() if valiant is None else (valiant,)
        )
        # The split's incidences of every flow in each mode, filled as they are.
        built: dict[bool, Incidence] = {}
        if valiant is None and len(modes) > 1:
            # A split that sends every flow one way (always so past ``_UGAL_MAX_FLOWS``)
            # fills exactly as that mode, which is filled already and never kept over it,
            # when the kind loads plain entries (no shared groups, which a split expands):
            # only a real mix is filled again.
            plain = type(self._network).incidence is Network.incidence
            if not plain or np.size(src) <= self._UGAL_MAX_FLOWS:
                split = self._split(src, dst, 1.0, built)
                if not (plain and _one_way(split)):
                    modes.append(split)
        for mode in modes:
            result = self._max_min(src, dst, mode, built)
            total = float(np.where(np.isfinite(result[0]), result[0], 0.0).sum())
            if best is None or total > float(np.where(np.isfinite(best[0]), best[0], 0.0).sum()) * (
                1 + 1e-9
            ):
                best = result
        built.clear()
        assert best is not None
        return best

    def _max_min(
        self,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        valiant: bool | FloatArray,
        built: dict[bool, Incidence] | None = None,
    ) -> tuple[FloatArray, FloatArray]:
        """Progressive filling in one routing mode (``fair_share``): rates [GB/s] and
        resource loads [GB/s]; the incidences of every flow in one mode may be ``built``
        already (``_split``)."""
        if built and isinstance(valiant, bool) and valiant in built:
            inc = built[valiant]
        else:
            inc = self._incidence(src, dst, valiant, built)
        cap = self.resource_capacity_GBps
        rate = max_min_rates_GBps(inc, cap)
        return rate, inc.loads(np.where(np.isfinite(rate), rate, 0.0), cap.size)

    def link_loads(self, resource_load: FloatArray) -> FloatArray:
        """(n_links,) per-link load from resource loads: aggregates spread evenly over
        their links (what adaptive routing does)."""
        load = np.array(resource_load[: self.fabric.n_links], dtype=np.float64)
        self._network.spread_aggregates(resource_load, load)
        return load


def _incidence_size(incidence: Incidence) -> int:
    """Array elements an incidence holds."""
    return sum(int(v.size) for v in vars(incidence).values() if isinstance(v, np.ndarray))


def line_rate_bulk_router(router: Router) -> BulkRouter:
    """The vectorized router over ``router``'s routes with every link at its line rate (what
    ``fabricui path`` reports), cached on the router."""
    cached = router.__dict__.get("_bulk_line")
    if cached is None:
        fabric = router.fabric
        cached = BulkRouter(fabric, router, capacity_GBps=fabric.link_bw_GBps.astype(np.float64))
        router.__dict__["_bulk_line"] = cached
    return cached


def bulk_router(router: Router, capacity_GBps: FloatArray | None = None) -> BulkRouter:
    """The vectorized router over ``router``'s routes: cached on the router for its own
    capacities, a new one for other capacities (a calibration trial).

    Args:
        router: The per-pair router whose caches it shares.
        capacity_GBps: (n_links,) achievable bandwidths [GB/s] (default: the router's).
    """
    if capacity_GBps is not None and capacity_GBps is not router.capacity_GBps:
        return BulkRouter(router.fabric, router, capacity_GBps=capacity_GBps)
    cached = router.__dict__.get("_bulk")
    if cached is None:
        cached = BulkRouter(router.fabric, router, capacity_GBps=router.capacity_GBps)
        router.__dict__["_bulk"] = cached
    return cached


def _one_way(split: FloatArray) -> bool:
    """True when a UGAL split (``BulkRouter.ugal_split``) sends every flow all minimal or
    every flow all Valiant (none when there are no flows)."""
    return bool(split.size == 0 or (split == 0.0).all() or (split == 1.0).all())
