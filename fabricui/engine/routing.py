"""Routing: the path between two GPUs as an array of link ids, as the fabric routes it.

Within a node: over NVLink/NVSwitch when present, else PCIe (through host memory when
peer-to-peer is off). Across nodes: GPU -> its NIC -> up to the lowest common switch ->
down -> NIC -> GPU. Among equally short routes the widest wins; remaining ties (ECMP over
spines) are spread by a deterministic hash of the endpoints.

Intra-node routes are computed once on node 0 and shifted (every node block is identical);
switch-to-switch routes are computed once per pair of leafs. A single route costs a few
dictionary look-ups after the first.

Dragonflies and tori (a network torus, or the torus of each scale-up domain) are routed
from their tables (``Dragonfly.router_links``, ``Torus.paths``), the same functions the
vectorized router uses: minimal dragonfly routes (an idle fabric's adaptive routing takes
them), dimension-order torus routes through intermediate chips.

PXN (NCCL's "PCI x NVLink", on by default): on a rail-optimized fat-tree, traffic for a NIC
on another rail first moves over NVLink to the GPU of the same scale-up domain whose NIC is
on the destination's rail (the *proxy*), which sends it: the network part stays on one
rail, under one leaf switch when both nodes share it.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable
from functools import cached_property
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from fabricui.engine.capacity import link_capacity_GBps
from fabricui.engine.constants import DEFAULT
from fabricui.engine.route_rows import join_rows, pad_rows
from fabricui.errors import EngineError
from fabricui.fabric.fabric import NETWORK_SWITCHES, DeviceKind, Fabric, IntArray

#: Switch-level route trees (one per source leaf) kept per router, in tree cells: one per
#: switch-graph link and source, kept as one bit (64 MiB at most). A 192,000-link graph of
#: 2,000 leaves keeps every leaf's tree (48 MB); a bigger graph keeps fewer, oldest first out.
_MAX_TREE_CELLS = 1 << 29

T = TypeVar("T")


class RouteMemo:
    """Routing results kept for a fabric and its variants that differ only in link
    efficiency and latency (calibration trials), which route every flow alike.

    Routes and flow incidences read the links' line rates, never their efficiency or
    latency, so a trial asks for what the trial before it routed. Least recently used
    entries go first once the arrays kept exceed ``max_elements`` elements.

    Args:
        max_elements: Array elements kept at most (8 bytes each).
    """

    #: Elements kept per GPU of the fabric (``for_fabric``): the flow incidences of every
    #: algorithm of a calibration take ~310 per rank (2.5 million at 8,192 ranks).
    ELEMENTS_PER_GPU = 384

    @classmethod
    def for_fabric(cls, fabric: Fabric) -> RouteMemo:
        """A memo that holds what the collectives of a calibration among every GPU of
        ``fabric`` route: ``ELEMENTS_PER_GPU`` per GPU, and 32 MiB at least."""
        return cls(max(1 << 22, cls.ELEMENTS_PER_GPU * fabric.n_gpus))

    def __init__(self, max_elements: int = 1 << 22) -> None:
        self.max_elements = max_elements
        self._entries: OrderedDict[object, tuple[object, int]] = OrderedDict()
        self._elements = 0
        self.hits = 0
        """Answers given from memory (for tests)."""

    def remember(self, key: object, compute: Callable[[], T], elements: Callable[[T], int]) -> T:
        """The value kept under ``key``, else ``compute()`` kept when it fits.

        Args:
            key: What identifies the result (hashable).
            compute: Computes it.
            elements: Its size in array elements.
        """
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]  # type: ignore[return-value]
        value = compute()
        size = elements(value)
        if size > self.max_elements:
            return value
        while self._entries and self._elements + size > self.max_elements:
            self._elements -= self._entries.popitem(last=False)[1][1]
        self._entries[key] = (value, size)
        self._elements += size
        return value


class _Graph:
    """Outgoing and incoming adjacency (CSR) over a subset of a fabric's links."""

    def __init__(
        self,
        fabric: Fabric,
        link_ids: npt.NDArray[np.int64],
        n_devices: int,
        bw_GBps: npt.NDArray[np.float64] | None = None,
    ) -> None:
        order = np.argsort(fabric.link_src[link_ids], kind="stable")
        self.links = link_ids[order]
        self.src = fabric.link_src[self.links].astype(np.int64)
        self.dst = fabric.link_dst[self.links].astype(np.int64)
        bw = fabric.link_bw_GBps[link_ids] if bw_GBps is None else bw_GBps
        self.bw = bw[order]
        self.ptr = np.searchsorted(self.src, np.arange(n_devices + 1))
        self.in_order = np.argsort(self.dst, kind="stable")
        self.in_ptr = np.searchsorted(self.dst[self.in_order], np.arange(n_devices + 1))
        self.n_devices = n_devices

    def _out_positions(self, nodes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Positions (into the CSR arrays) of every outgoing link of ``nodes``."""
        starts, ends = self.ptr[nodes], self.ptr[nodes + 1]
        counts = ends - starts
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
        return offsets + np.arange(total)

    def single_source(self, src: int, transit: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """Widest-shortest route tree from ``src``: which links lie on some best route.

        Breadth-first by levels (vectorized): hop distance first, then the widest bottleneck
        among the shortest routes. Only ``transit`` devices (and ``src``) forward.

        Returns:
            (n_graph_links,) mask of links usable as the last hop of a best route to their
            destination.
        """
        dist = np.full(self.n_devices, -1, dtype=np.int64)
        best = np.zeros(self.n_devices)
        dist[src], best[src] = 0, np.inf
        on_route = np.zeros(self.links.shape[0], dtype=bool)
        frontier = np.array([src], dtype=np.int64)
        level = 0
        while frontier.size:
            forwarding = frontier[(frontier == src) | transit[frontier]]
            pos = self._out_positions(forwarding)
            dsts = self.dst[pos]
            fresh = dist[dsts] == -1
            new_nodes = np.unique(dsts[fresh])
            dist[new_nodes] = level + 1
            pos = pos[dist[dsts] == level + 1]
            width = np.minimum(best[self.src[pos]], self.bw[pos])
            np.maximum.at(best, self.dst[pos], width)
            on_route[pos] = width >= best[self.dst[pos]] * (1 - 1e-9)
            frontier = new_nodes
            level += 1
        return on_route

    def pick(self, on_route: npt.NDArray[np.bool_], src: int, dst: int, salt: int) -> list[int]:
        """One best route from ``src`` to ``dst`` (link ids); ``salt`` picks among equals.

        Raises:
            EngineError: ``dst`` is not reachable from ``src``.
        """
        hops: list[int] = []
        v = dst
        while v != src:
            incoming = self.in_order[self.in_ptr[v] : self.in_ptr[v + 1]]
            choices = incoming[on_route[incoming]]
            if choices.size == 0 or len(hops) > self.n_devices:
                raise EngineError(f"no route from device {src} to device {dst}")
            k = int(choices[salt % choices.size])
            hops.append(int(self.links[k]))
            v = int(self.src[k])
        hops.reverse()
        return hops


def uncabled(fabric: Fabric, nics: list[int]) -> str:
    """The one-line error for routes through NICs without a cable to a switch (as imported,
    or every cable of their host down in a health file)."""
    names = " and ".join(sorted({fabric.device_name(int(n)) for n in nics}))
    return (
        f"{fabric.spec.id}: NIC {names} has no cable to a switch (not cabled, or down with "
        "every other NIC of its host): no route over the network"
    )


class Router:
    """Routes between GPUs of one fabric, caching template and switch-level routes."""

    memo: RouteMemo | None
    """Results shared with this fabric's variants (``variant``), None without any."""

    @classmethod
    def for_fabric(cls, fabric: Fabric) -> Router:
        """The shared router of ``fabric``, so repeated queries share caches.

        Kept on the fabric itself (built on first use), so it is freed with the fabric; a
        module-level table would keep every fabric ever routed alive.
        """
        router = fabric.__dict__.get("_router")
        if router is None:
            origin = fabric.__dict__.get("_routed_as")
            router = cls(fabric) if origin is None else cls.for_fabric(origin).variant(fabric)
            # A cache kept on the frozen fabric, not one of its fields.
            object.__setattr__(fabric, "_router", router)
        return router

    @staticmethod
    def share_routes(variant: Fabric, fabric: Fabric) -> None:
        """Let ``variant``, a copy of ``fabric`` with other link efficiencies or latencies
        only (a calibration trial), reuse the routing work of ``fabric``'s router: routes
        and flow incidences read neither, so they are the same (``variant``)."""
        origin = fabric.__dict__.get("_routed_as", fabric)
        object.__setattr__(variant, "_routed_as", origin)

    @staticmethod
    def forget_variants(fabric: Fabric) -> None:
        """Drop the memo ``fabric``'s router shares with its variants (the calibration that
        made them is over): what it holds is of no use to other queries."""
        router = fabric.__dict__.get("_router")
        if router is not None:
            router.memo = None

    def variant(self, fabric: Fabric) -> Router:
        """A router of ``fabric`` (this router's fabric with other link efficiencies or
        latencies) sharing this router's route caches and memo; its capacities are
        ``fabric``'s own.

        Shared: the route trees and templates, the PXN proxies, the switch-level routes,
        and a ``RouteMemo`` of flow incidences and route rows. A dragonfly's adaptive
        routing reads capacities, so the bulk router computes its split per fabric, from
        the remembered incidences of each mode.
        """
        if self.memo is None:
            self.memo = RouteMemo.for_fabric(self.fabric)
        router = copy.copy(self)
        router.fabric = fabric
        for per_fabric in ("capacity_GBps", "_bulk", "_bulk_line"):
            router.__dict__.pop(per_fabric, None)
        return router

    def shared(self, name: str, build: Callable[[], T]) -> T:
        """What ``build()`` makes, made once for this router and every variant of it
        (``variant``), whichever asks first: for what reads the routes only (a calibration
        trial's router then routes on its origin's switch-level routes, not on its own)."""
        value = self._shared.get(name)
        if value is None:
            value = self._shared[name] = build()
        return value  # type: ignore[return-value]

    @staticmethod
    def forget(fabric: Fabric) -> None:
        """Drop the router kept on ``fabric`` and the bulk router kept on that router: each
        pair refers to each other, so without this a fabric used once (a calibration trial)
        and its routes wait for Python's next full garbage collection, and pile up."""
        router = fabric.__dict__.pop("_router", None)
        if router is not None:
            router.__dict__.pop("_bulk", None)

    @cached_property
    def capacity_GBps(self) -> npt.NDArray[np.float64]:
        """(n_links,) achievable bandwidth ``bw * eff`` [GB/s], TCP links capped at what the
        socket transport drives (``ModelConstants.socket_max_GBps``)."""
        return link_capacity_GBps(self.fabric, DEFAULT.socket_max_GBps)

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.memo = None
        # One dict for this router and every variant of it (``copy.copy`` shares it).
        self._shared: dict[str, object] = {}
        dn, ln = fabric.node_devices, fabric.node_links
        kinds = fabric.dev_kind
        # A link that carries nothing (every NVLink of a GPU down, by a health overlay) is
        # no route: domains with such links route inside on their own graph, the others on
        # the template of a domain without any.
        blocks = fabric.link_bw_GBps[: fabric.domains * ln].reshape(fabric.domains, ln)
        dead = blocks <= 0.0
        self._irregular = frozenset(int(d) for d in np.flatnonzero(dead.any(axis=1)))
        regular = np.flatnonzero(~dead.any(axis=1))
        self._blocks = blocks
        # With no domain left whole, the template is the domain as built (every flow is then
        # routed on its own domain's graph anyway).
        self._node_graph = (
            self._block_graph(int(regular[0]))
            if regular.size
            else _Graph(fabric, np.arange(ln, dtype=np.int64), dn)
        )
        self._domain_graphs: dict[int, _Graph] = {}
        node_kinds = kinds[:dn]
        self._node_transit = (node_kinds != DeviceKind.GPU) & (node_kinds != DeviceKind.NIC)
        self._intra_cache: dict[tuple[int, int], IntArray] = {}
        self._node_trees: dict[int, npt.NDArray[np.bool_]] = {}
        self._domain_cache: dict[tuple[int, int, int], IntArray] = {}
        intra = fabric.spec.intra
        self._staged = intra.fabric == "pcie" and not intra.p2p
        # Network: each NIC's single cable to its leaf, and the switch-only graph above. A
        # NIC cable that carries nothing (down, on a dragonfly whose tables keep it) is none.
        net_links = np.arange(fabric.domains * ln, fabric.n_links, dtype=np.int64)
        is_switch = np.isin(kinds, NETWORK_SWITCHES)
        alive = fabric.link_bw_GBps[net_links] > 0.0
        from_nic = net_links[(kinds[fabric.link_src[net_links]] == DeviceKind.NIC) & alive]
        to_nic = net_links[(kinds[fabric.link_dst[net_links]] == DeviceKind.NIC) & alive]
        self._nic_up: dict[int, int] = {}
        self._nic_down: dict[int, int] = {}
        for k in from_nic:
            self._nic_up.setdefault(int(fabric.link_src[k]), int(k))
        for k in to_nic:
            self._nic_down.setdefault(int(fabric.link_dst[k]), int(k))
        between = net_links[
            is_switch[fabric.link_src[net_links]] & is_switch[fabric.link_dst[net_links]]
        ]
        self._switch_graph = _Graph(fabric, between, fabric.n_devices)
        self._switch_transit = is_switch
        self._switch_trees: dict[int, npt.NDArray[np.uint8]] = {}
        """Best-route tree of each source leaf, packed to bits (``_switch_tree``)."""
        self._dragonfly = fabric.dragonfly
        self._torus = fabric.torus
        self.proxy = self._pxn_proxies()
        """(gpus_per_domain, rails) local GPU that sends for a local GPU to a NIC of that rail
        (PXN), -1 where the GPU's own NIC is on that rail; None without PXN."""

    @property
    def rails(self) -> int:
        """Rails of a rail-optimized network: NICs per host (1 otherwise). Read over every
        host: a health file can move the first host's GPUs off a rail the others still use."""
        fabric = self.fabric
        nic = fabric.gpu_nic
        return int(fabric.dev_index[nic].max()) + 1 if (nic >= 0).all() else 1

    def rail_of(self, rank: int | npt.NDArray[np.int64]):
        """Rail (NIC index within its host) of each rank's NIC."""
        return self.fabric.dev_index[self.fabric.gpu_nic[rank]]

    def _pxn_proxies(self) -> npt.NDArray[np.int64] | None:
        """PXN's proxy table, or None when PXN does not apply: no rail-optimized fat-tree of
        several leafs, or no GPU-to-GPU scale-up links to reach a proxy."""
        fabric = self.fabric
        net = fabric.spec.net
        if net is None or not net.rail_optimized or net.layout in ("torus", "dragonfly"):
            return None
        if fabric.spec.intra.fabric not in ("nvswitch", "switch", "mesh") or (
            fabric.gpus_per_domain < 2
        ):
            return None
        # One switch for every NIC: nothing to keep on a rail.
        first_switches = {int(fabric.link_dst[k]) for k in self._nic_up.values()}
        if len(first_switches) < 2:
            return None
        rails = self.rails
        if rails < 2:
            return None
        g, per_host = fabric.gpus_per_domain, fabric.gpus_per_node
        local = np.arange(g)
        rail = np.asarray(self.rail_of(local), dtype=np.int64)
        proxy = np.full((g, rails), -1, dtype=np.int64)
        for r in range(rails):
            on_rail = np.flatnonzero(rail == r)
            if not on_rail.size:
                continue
            host = local // per_host
            # A GPU of the same host on that rail (same position first), else the domain's.
            same_host = on_rail[None, :] // per_host == host[:, None]
            pick = np.where(
                same_host.any(axis=1), on_rail[np.argmax(same_host, axis=1)], on_rail[0]
            )
            proxy[:, r] = np.where(rail == r, -1, pick)
        return proxy

    def pxn_proxy(self, src_rank: int, dst_rank: int) -> int:
        """Rank that sends for ``src_rank`` to ``dst_rank``'s NIC (PXN), or -1 for itself."""
        if self.proxy is None:
            return -1
        g = self.fabric.gpus_per_domain
        local = self.proxy[src_rank % g, int(self.rail_of(dst_rank))]
        return -1 if local < 0 else (src_rank // g) * g + int(local)

    def _block_graph(self, domain: int) -> _Graph:
        """Domain ``domain``'s links that carry something, as a graph over domain 0's link
        and device ids (every block has the same shape) with that domain's bandwidths."""
        alive = np.flatnonzero(self._blocks[domain] > 0.0).astype(np.int64)
        return _Graph(self.fabric, alive, self.fabric.node_devices, self._blocks[domain][alive])

    @property
    def irregular_domains(self) -> frozenset[int]:
        """Scale-up domains with a link that carries nothing (a health overlay's down
        NVLinks): their routes inside are their own, not the template's."""
        return self._irregular

    def dead_rows(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """(n_rows,) which routes (absolute link ids, -1 padded) cross a link that carries
        nothing: a template shifted into an irregular domain, to be routed there again."""
        rows = np.asarray(rows, dtype=np.int64)
        if not self._irregular or rows.size == 0:
            return np.zeros(rows.shape[0], dtype=bool)
        bw = self.fabric.link_bw_GBps[np.maximum(rows, 0)]
        return np.asarray(((rows >= 0) & (bw <= 0.0)).any(axis=1), dtype=bool)

    def template_route(self, a_dev: int, b_dev: int) -> IntArray:
        """Links from device ``a_dev`` to device ``b_dev`` of a domain whose links all carry
        traffic, as domain 0's ids (devices too): the template every such domain shifts."""
        key = (a_dev, b_dev)
        cached = self._intra_cache.get(key)
        if cached is None:
            tree = self._node_trees.get(key[0])
            if tree is None:
                tree = self._node_trees[key[0]] = self._node_graph.single_source(
                    key[0], self._node_transit
                )
            hops = [] if key[0] == key[1] else self._node_graph.pick(tree, key[0], key[1], 0)
            cached = self._intra_cache[key] = np.asarray(hops, dtype=np.int32)
        return cached

    def template_routes(
        self, a_devs: npt.NDArray[np.int64], b_devs: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | None:
        """``template_route`` of many device pairs at once, as (n, width) rows, -1 padded
        (width the longest route, 1 at least); None when a pair has no route (its error is
        ``template_route``'s to raise).

        Each source's route tree gives every device the link it is reached by (the first
        best incoming one, as ``_Graph.pick`` with salt 0 takes it); the routes are walked
        back from every destination at once.
        """
        graph = self._node_graph
        sources, which = np.unique(a_devs, return_inverse=True)
        parent = np.full((sources.shape[0], graph.n_devices), -1, dtype=np.int64)
        for i, s in enumerate(sources.tolist()):
            tree = self._node_trees.get(s)
            if tree is None:
                tree = self._node_trees[s] = graph.single_source(s, self._node_transit)
            on = np.flatnonzero(tree)
            # Positions ascend, so the first of each destination is the first best link in.
            reached, first = np.unique(graph.dst[on], return_index=True)
            parent[i, reached] = on[first]
        cur = np.asarray(b_devs, dtype=np.int64).copy()
        src = np.asarray(a_devs, dtype=np.int64)
        back: list[npt.NDArray[np.int64]] = []
        walking = np.flatnonzero(cur != src)
        while walking.size:
            if len(back) > graph.n_devices:
                return None
            k = parent[which[walking], cur[walking]]
            if (k < 0).any():
                return None
            column = np.full(cur.shape[0], -1, dtype=np.int64)
            column[walking] = graph.links[k]
            back.append(column)
            cur[walking] = graph.src[k]
            walking = walking[cur[walking] != src[walking]]
        if not back:
            return np.full((cur.shape[0], 1), -1, dtype=np.int64)
        hops = np.stack(back, axis=1)
        length = (hops >= 0).sum(axis=1)
        at = length[:, None] - 1 - np.arange(hops.shape[1])[None, :]
        return np.where(at >= 0, np.take_along_axis(hops, np.maximum(at, 0), axis=1), -1)

    def local_routes(
        self, a_local: npt.NDArray[np.int64], b_local: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64] | None:
        """``local_route(a, b, None)`` of many pairs of local GPUs at once, as (n, width)
        rows, -1 padded (width the longest route, 1 at least): from the domain's torus
        table, else from the template's route trees (staged through the host on PCIe
        without peer-to-peer). None when a pair has no route inside the domain: the
        per-pair ``local_route`` raises its error."""
        fabric = self.fabric
        a = np.asarray(a_local, dtype=np.int64).reshape(-1)
        b = np.asarray(b_local, dtype=np.int64).reshape(-1)
        if fabric.domain_torus is not None:
            return join_rows([fabric.domain_torus.paths(a, b)])
        a_dev, b_dev = fabric.gpu_dev[a].astype(np.int64), fabric.gpu_dev[b].astype(np.int64)
        if not self._staged:
            return self.template_routes(a_dev, b_dev)
        cpu = fabric.gpu_cpu[a].astype(np.int64)
        up, down = self.template_routes(a_dev, cpu), self.template_routes(cpu, b_dev)
        return None if up is None or down is None else join_rows([up, down])

    def _irregular_route(self, domain: int, a_dev: int, b_dev: int) -> IntArray:
        """``template_route`` on an irregular domain's own graph (its dead links left out),
        in domain 0's ids.

        Raises:
            EngineError: The two devices are no longer connected inside the domain.
        """
        key = (domain, a_dev, b_dev)
        cached = self._domain_cache.get(key)
        if cached is None:
            graph = self._domain_graphs.get(domain)
            if graph is None:
                graph = self._domain_graphs[domain] = self._block_graph(domain)
            hops: list[int] = []
            if a_dev != b_dev:
                tree = graph.single_source(a_dev, self._node_transit)
                try:
                    hops = graph.pick(tree, a_dev, b_dev, 0)
                except EngineError:
                    fabric = self.fabric
                    dn = fabric.node_devices
                    raise EngineError(
                        f"{fabric.device_name(domain * dn + a_dev)} cannot reach "
                        f"{fabric.device_name(domain * dn + b_dev)}: every link between them "
                        "is down"
                    ) from None
            cached = self._domain_cache[key] = np.asarray(hops, dtype=np.int32)
        return cached

    def domain_route(self, domain: int, a_dev: int, b_dev: int) -> IntArray:
        """Links from device ``a_dev`` to device ``b_dev`` of scale-up domain ``domain``.

        Computed once on a template domain and shifted (every domain block is the same), so
        the bulk router builds its template tables without routing each domain again; a
        domain with links that carry nothing (``irregular_domains``) routes on its own.

        Args:
            domain: The domain both devices belong to.
            a_dev: Source device id (absolute).
            b_dev: Destination device id (absolute).

        Returns:
            (n_hops,) link ids (absolute), empty when the devices are the same.
        """
        dn, ln = self.fabric.node_devices, self.fabric.node_links
        a_rel, b_rel = a_dev - domain * dn, b_dev - domain * dn
        if domain in self._irregular:
            return self._irregular_route(domain, a_rel, b_rel) + np.int32(domain * ln)
        return self.template_route(a_rel, b_rel) + np.int32(domain * ln)

    def _network(self, nic_a: int, nic_b: int, salt: int) -> list[int]:
        fabric = self.fabric
        up, down = self._nic_up.get(nic_a), self._nic_down.get(nic_b)
        if up is None or down is None:
            raise EngineError(uncabled(fabric, [nic_a] if up is None else [nic_b]))
        leaf_a, leaf_b = int(fabric.link_dst[up]), int(fabric.link_src[down])
        if leaf_a == leaf_b:
            return [up, down]
        if self._dragonfly is not None:
            ra, rb = int(fabric.dev_index[leaf_a]), int(fabric.dev_index[leaf_b])
            middle = self._dragonfly.router_links([ra], [rb], [salt])[0]
            return [up, *(int(k) for k in middle[middle >= 0]), down]
        tree = self._switch_tree(leaf_a)
        return [up, *self._switch_graph.pick(tree, leaf_a, leaf_b, salt), down]

    @property
    def switch_graph(self) -> _Graph:
        """The switch-to-switch links as an adjacency graph (what network routes cross)."""
        return self._switch_graph

    @property
    def switch_transit(self) -> npt.NDArray[np.bool_]:
        """(n_devices,) devices that forward network traffic (the network switches)."""
        return self._switch_transit

    def nic_cables(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(n_devices,) link from each NIC up to its switch and back down, -1 for devices
        without a cable: the first and last network hop of every route."""
        n = self.fabric.n_devices
        up = np.full(n, -1, dtype=np.int64)
        down = np.full(n, -1, dtype=np.int64)
        if self._nic_up:
            up[np.fromiter(self._nic_up, np.int64)] = np.fromiter(self._nic_up.values(), np.int64)
        if self._nic_down:
            keys = np.fromiter(self._nic_down, np.int64)
            down[keys] = np.fromiter(self._nic_down.values(), np.int64)
        return up, down

    def switch_tree(self, leaf: int) -> npt.NDArray[np.bool_]:
        """(n_switch_graph_links,) which switch links lie on a best route from ``leaf``
        (by ``switch_graph`` position): the router picks among exactly these."""
        return self._switch_tree(leaf)

    def _switch_tree(self, leaf: int) -> npt.NDArray[np.bool_]:
        """Best-route tree from one leaf over the switches (cached as bits, at most
        ``_MAX_TREE_CELLS`` cells: the oldest trees go first)."""
        cells = self._switch_graph.links.shape[0]
        packed = self._switch_trees.get(leaf)
        if packed is not None:
            return np.unpackbits(packed, count=cells).view(np.bool_)
        tree = self._switch_graph.single_source(leaf, self._switch_transit)
        keep = max(1, _MAX_TREE_CELLS // max(cells, 1))
        while len(self._switch_trees) >= keep:
            del self._switch_trees[next(iter(self._switch_trees))]
        self._switch_trees[leaf] = np.packbits(tree)
        return tree

    def to_leaf(self, rank: int) -> IntArray:
        """Links from a GPU up to the first network switch (through its NIC).

        Raises:
            EngineError: The GPU has no NIC cabled to a switch.
        """
        fabric = self.fabric
        nic = int(fabric.gpu_nic[rank])
        up = self._nic_up.get(nic) if nic >= 0 else None
        if up is None:
            raise EngineError(f"{fabric.gpu_name(rank)} has no network uplink")
        node = rank // fabric.gpus_per_domain
        gpu = int(fabric.gpu_dev[rank])
        return np.concatenate([self.domain_route(node, gpu, nic), np.asarray([up], dtype=np.int32)])

    def route(self, src_rank: int, dst_rank: int) -> IntArray:
        """Link ids of the path from one GPU to another, in order.

        Args:
            src_rank: Global rank of the source GPU.
            dst_rank: Global rank of the destination GPU.

        Returns:
            (n_hops,) link ids; empty when source and destination are the same GPU.

        Raises:
            EngineError: A rank is out of range or the nodes are not connected.
        """
        fabric = self.fabric
        g = fabric.gpus_per_domain
        for rank in (src_rank, dst_rank):
            if not 0 <= rank < fabric.n_gpus:
                raise EngineError(f"rank {rank} out of range 0..{fabric.n_gpus - 1}")
        if src_rank == dst_rank:
            return np.zeros(0, dtype=np.int32)
        if self._torus is not None:
            row = self._torus.paths([src_rank], [dst_rank])[0]
            return row[row >= 0].astype(np.int32)
        a = int(fabric.gpu_dev[src_rank])
        node_a, node_b = src_rank // g, dst_rank // g
        if node_a == node_b:
            return self.local_route(src_rank % g, dst_rank % g, node_a)
        nic_a, nic_b = int(fabric.gpu_nic[src_rank]), int(fabric.gpu_nic[dst_rank])
        if nic_a < 0 or nic_b < 0:
            raise EngineError(
                f"{fabric.spec.id}: no network between {fabric.gpu_name(src_rank)} and "
                f"{fabric.gpu_name(dst_rank)}"
            )
        first = [self.domain_route(node_a, a, nic_a)]
        proxy = self.pxn_proxy(src_rank, dst_rank)
        if proxy >= 0 and node_a in self._irregular:
            # PXN reaches its proxy over NVLink: not when those links are down.
            dn, ln = fabric.node_devices, fabric.node_links
            hop = self.template_route(a - node_a * dn, int(fabric.gpu_dev[proxy]) - node_a * dn)
            if self.dead_rows((hop.astype(np.int64) + node_a * ln)[None, :]).any():
                proxy = -1
        if proxy >= 0:
            via, nic_a = int(fabric.gpu_dev[proxy]), int(fabric.gpu_nic[proxy])
            first = [self.domain_route(node_a, a, via), self.domain_route(node_a, via, nic_a)]
        return self._over_network(src_rank, dst_rank, first, nic_a, nic_b)

    def _over_network(
        self, src_rank: int, dst_rank: int, first: list[IntArray], nic_a: int, nic_b: int
    ) -> IntArray:
        """``first`` (up to the sending NIC ``nic_a``), the network from ``nic_a`` to
        ``nic_b``, and the way down from ``nic_b`` to ``dst_rank``'s GPU."""
        fabric = self.fabric
        salt = (src_rank * 2654435761 + dst_rank) & 0x7FFFFFFF
        node_b = dst_rank // fabric.gpus_per_domain
        b = int(fabric.gpu_dev[dst_rank])
        return np.concatenate(
            [
                *first,
                np.asarray(self._network(nic_a, nic_b, salt), dtype=np.int32),
                self.domain_route(node_b, nic_b, b),
            ]
        )

    def local_route(self, a_local: int, b_local: int, domain: int | None) -> IntArray:
        """Links between the ``a_local``-th and ``b_local``-th GPUs of a scale-up domain:
        of domain ``domain`` (absolute ids), or the template every regular domain shifts
        (None: domain 0's ids, as if domain 0 had no dead link).

        Over the domain's torus, staged through the host on PCIe without peer-to-peer, else
        the domain's best route (``domain_route``).
        """
        fabric = self.fabric
        g = fabric.gpus_per_domain
        node = 0 if domain is None else domain
        src_rank, dst_rank = node * g + a_local, node * g + b_local
        domain_torus = fabric.domain_torus
        if domain_torus is not None:  # chips of one domain talk over its torus
            row = domain_torus.paths([a_local], [b_local])[0]
            return (row[row >= 0] + node * fabric.node_links).astype(np.int32)
        a, b = int(fabric.gpu_dev[src_rank]), int(fabric.gpu_dev[dst_rank])

        def hop(x: int, y: int) -> IntArray:
            if domain is None:
                return self.template_route(x, y)
            return self.domain_route(node, x, y)

        try:
            if self._staged:
                cpu = int(fabric.gpu_cpu[src_rank])
                return np.concatenate([hop(a, cpu), hop(cpu, b)])
            return hop(a, b)
        except EngineError:
            # Cut off inside its domain (every NVLink of a GPU of a rack down): over the
            # network, GPU to NIC to NIC to GPU, as NCCL leaves such a GPU out of the NVLink
            # domain. Without NICs on both ends the domain error stands.
            nic_a, nic_b = int(fabric.gpu_nic[src_rank]), int(fabric.gpu_nic[dst_rank])
            if domain is None or nic_a < 0 or nic_b < 0 or nic_a == nic_b:
                raise
            first = [self.domain_route(node, a, nic_a)]
            return self._over_network(src_rank, dst_rank, first, nic_a, nic_b)

    def route_rows(
        self, src_ranks: npt.ArrayLike, dst_ranks: npt.ArrayLike
    ) -> npt.NDArray[np.int64]:
        """``route`` of many pairs, one by one, as one (n_pairs, width) array of link ids,
        -1 padded: what the bulk router's ``route_rows`` builds at once, and where it
        turns for the pairs it refuses.

        Args:
            src_ranks: (n_pairs,) source ranks.
            dst_ranks: (n_pairs,) destination ranks.
        """
        a = np.asarray(src_ranks, dtype=np.int64).reshape(-1)
        b = np.asarray(dst_ranks, dtype=np.int64).reshape(-1)
        return pad_rows([self.route(int(x), int(y)) for x, y in zip(a, b)])
