"""Bulk routing on an imported cluster's own switch graph (``net.layout: explicit``).

An imported cluster has no regular ``FatTree`` table: its routes come from ``Router``'s
widest-shortest search over the real switch graph, and routing a million flows one by one
with ``Router.route`` takes minutes. A route between GPUs of two domains is three parts:
the template route from the GPU (through its PXN proxy) to the NIC and the NIC's cable to a
leaf; the part between the two leaves; the cable down and the template route to the GPU.
The first and last parts are a handful of distinct template rows shifted to the domain;
the middle part depends only on the two leaves (``switch_routes``), computed once per leaf
pair and shared by every flow between hosts under those leaves: one route as the router
picks it for paths, and the spread over every route it could pick for loads and rates.

Flows carry their own few links plus the id of their leaf pair, and the pair's spread is
applied once per pair (``Incidence``), so memory grows with flows times the short own part,
not with flows times the number of equal-cost links.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.route_rows import compact_rows, pad_rows, row_of_cells
from fabricui.engine.routing import Router, uncabled
from fabricui.engine.switch_routes import ranges, switch_routes
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Multiplier of the per-flow route hash (the router's own).
#: Group entries summed per pass (``Incidence.group_chunks``): about 50 MB of temporaries.
GROUP_CHUNK = 1 << 21
_HASH = 2654435761


def route_salt(src: IntArray, dst: IntArray) -> IntArray:
    """The hash ``Router.route`` picks among equal routes with, for arrays of ranks."""
    return (src.astype(np.int64) * _HASH + dst.astype(np.int64)) & 0x7FFFFFFF


def replace_rows(rows: IntArray, at: npt.ArrayLike, routes: Sequence[npt.ArrayLike]) -> IntArray:
    """``rows`` (-1 padded) with row ``at[i]`` replaced by ``routes[i]``, widened to fit."""
    legs = [np.asarray(r, dtype=np.int64) for r in routes]
    width = max([rows.shape[1], *(leg.shape[0] for leg in legs)])
    out = np.full((rows.shape[0], width), -1, dtype=np.int64)
    out[:, : rows.shape[1]] = rows
    for i, leg in zip(np.asarray(at, dtype=np.int64).tolist(), legs):
        out[i] = -1
        out[i, : leg.shape[0]] = leg
    return out


class DenseRowCache:
    """Rows (routes) computed on first use, for keys below a small bound: a table indexed
    by key, so a million lookups are one gather.

    Args:
        size: Keys are ``0 <= key < size``.
        compute: Returns the rows of an array of keys not seen before.
    """

    def __init__(self, size: int, compute: Callable[[IntArray], IntArray]) -> None:
        self._compute = compute
        self._known = np.zeros(size, dtype=bool)
        self._rows = np.full((size, 1), -1, dtype=np.int64)

    def rows(self, keys: IntArray) -> IntArray:
        """(n, width) rows of ``keys`` (computing the missing ones once)."""
        missing = np.unique(keys[~self._known[keys]])
        if missing.size:
            new = self._compute(missing)
            if new.shape[1] > self._rows.shape[1]:
                wider = np.full((self._rows.shape[0], new.shape[1]), -1, dtype=np.int64)
                wider[:, : self._rows.shape[1]] = self._rows
                self._rows = wider
            self._rows[missing, : new.shape[1]] = new
            self._known[missing] = True
        return self._rows[keys]


@dataclass(frozen=True)
class Incidence:
    """Which resources each flow loads, with the shared part factored out.

    A flow loads its own resources (``flow``, ``res``, ``weight`` triples) and, when its
    ``group`` is not -1, every resource of that group with the group's weights (the leaf
    pair's spread). ``expanded`` gives plain triples.
    """

    n_flows: int
    """Number of flows."""
    flow: IntArray
    """(n_entries,) flow of each own entry."""
    res: IntArray
    """(n_entries,) resource it loads."""
    weight: FloatArray | None
    """(n_entries,) bytes on the resource per byte of the flow (None: 1 everywhere)."""
    group: IntArray | None = None
    """(n_flows,) shared group of each flow, -1 for none (None: no groups)."""
    group_ptr: IntArray | None = None
    """(n_groups + 1,) start of each group's entries."""
    group_res: IntArray | None = None
    """(n_group_entries,) resources of the groups."""
    group_weight: FloatArray | None = None
    """(n_group_entries,) their weights."""

    @property
    def group_row(self) -> IntArray:
        """(n_group_entries,) the group each group entry belongs to."""
        assert self.group_ptr is not None
        counts = np.diff(self.group_ptr)
        return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)

    def group_chunks(self) -> Iterator[tuple[slice, IntArray]]:
        """The group entries in order, a bounded chunk at a time: (entries, their groups).

        The groups of a big imported cluster hold tens of millions of entries; a whole-array
        temporary per pass (the entries' groups, their weights) costs gigabytes.
        """
        ptr = self.group_ptr
        assert ptr is not None
        total = int(ptr[-1])
        for start in range(0, total, GROUP_CHUNK):
            stop = min(start + GROUP_CHUNK, total)
            first = int(np.searchsorted(ptr, start, side="right")) - 1
            last = int(np.searchsorted(ptr, stop - 1, side="right")) - 1
            bounds = np.minimum(np.maximum(ptr[first : last + 2], start), stop)
            yield slice(start, stop), np.repeat(np.arange(first, last + 1), np.diff(bounds))

    def add_group_loads(self, per_group: FloatArray, out: FloatArray) -> None:
        """Add to ``out`` (per resource) every group entry's weight times ``per_group`` of
        its group, summed entry by entry in order: the same sums as one ``np.bincount``
        over all entries, bit for bit, without its whole-array temporaries."""
        assert self.group_res is not None and self.group_weight is not None
        for entries, rows in self.group_chunks():
            weights = per_group[rows]
            weights *= self.group_weight[entries]
            np.add.at(out, self.group_res[entries], weights)

    def expanded(self) -> tuple[IntArray, IntArray, FloatArray]:
        """Plain (flow, resource, weight) triples, the groups' entries repeated per flow."""
        weight = self.unit_weight()
        if self.group is None or self.group_ptr is None:
            return self.flow, self.res, weight
        assert self.group_res is not None and self.group_weight is not None
        members = np.flatnonzero(self.group >= 0)
        groups = self.group[members]
        counts = self.group_ptr[groups + 1] - self.group_ptr[groups]
        at = ranges(self.group_ptr[groups], counts)
        return (
            np.concatenate([self.flow, np.repeat(members, counts)]),
            np.concatenate([self.res, self.group_res[at]]),
            np.concatenate([weight, self.group_weight[at]]),
        )

    def unit_weight(self) -> FloatArray:
        """(n_entries,) the own entries' weights, ones filled in."""
        return np.ones(self.flow.shape[0]) if self.weight is None else self.weight

    def loads(self, volume: FloatArray, size: int) -> FloatArray:
        """(size,) bytes on every resource per message byte for per-flow ``volume``."""
        per_entry = volume[self.flow] if self.weight is None else volume[self.flow] * self.weight
        load: FloatArray = np.bincount(self.res, weights=per_entry, minlength=size).astype(
            np.float64, copy=False
        )
        if self.group is not None and self.group_ptr is not None:
            assert self.group_res is not None and self.group_weight is not None
            n_groups = self.group_ptr.shape[0] - 1
            member = self.group >= 0
            per_group: FloatArray = np.bincount(
                self.group[member], weights=volume[member], minlength=n_groups
            ).astype(np.float64, copy=False)
            shared = np.zeros(size)
            self.add_group_loads(per_group, shared)
            load += shared
        return load


class ExplicitFlows:
    """Routes of flows between domains of an explicit fabric, assembled in bulk.

    A flow's route is the template route from its GPU (through its PXN proxy when the
    router uses one) to the NIC, the NIC's cable, the middle part between the two leaves
    (``SwitchRoutes``), the cable down and the template route to the GPU: what
    ``Router.route`` returns, link for link.

    Args:
        fabric: The fabric (``net.layout: explicit``).
        router: Its router.
    """

    def __init__(self, fabric: Fabric, router: Router) -> None:
        self.fabric = fabric
        self._router = router
        g = fabric.gpus_per_domain
        self._g, self._dn, self._ln = g, fabric.node_devices, fabric.node_links
        self._gpu_local = fabric.gpu_dev[:g].astype(np.int64)
        nic = fabric.gpu_nic.astype(np.int64)
        self._nic = nic
        self._rail = np.where(nic >= 0, fabric.dev_index[np.maximum(nic, 0)], -1).astype(np.int64)
        self._up, self._down = router.nic_cables()
        self._proxy = router.proxy
        self._switches = switch_routes(router)
        dn = self._dn

        def local(keys: IntArray) -> IntArray:
            return pad_rows(
                [
                    [int(k) for k in router.template_route(int(key // dn), int(key % dn))]
                    for key in keys
                ]
            )

        self._local = DenseRowCache(dn * dn, local)

    def _template(self, a_dev: IntArray, b_dev: IntArray, domain: IntArray) -> IntArray:
        """(n, width) template routes between two devices of each flow's domain, shifted
        to the domain's links."""
        dn = self._dn
        rows = self._local.rows((a_dev - domain * dn) * dn + (b_dev - domain * dn))
        return np.where(rows >= 0, rows + (domain * self._ln)[:, None], -1)

    def _own(
        self,
        rows: IntArray,
        domain: IntArray,
        a_dev: IntArray,
        b_dev: IntArray,
        send_nic: IntArray | None = None,
    ) -> IntArray:
        """``rows`` with those crossing a link a health overlay took down routed in their own
        domain from ``a_dev`` to ``b_dev`` (a GPU's own NIC: no PXN without its NVLinks,
        ``send_nic`` updated in place)."""
        bad = np.flatnonzero(self._router.dead_rows(rows))
        if not bad.size:
            return rows
        legs = [
            self._router.domain_route(int(domain[i]), int(a_dev[i]), int(b_dev[i])) for i in bad
        ]
        if send_nic is not None:
            send_nic[bad] = b_dev[bad]
        return replace_rows(rows, bad, legs)

    def ends(self, a: IntArray, b: IntArray) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """(first part, last part, leaf_a, leaf_b) of flows between different domains:
        the links up to and including the source NIC's cable, the links from the
        destination NIC's cable down, and the two leaves.

        Raises:
            EngineError: A GPU without a network, or a NIC without a cable.
        """
        fabric = self.fabric
        g = self._g
        nic_a, nic_b = self._nic[a], self._nic[b]
        if (nic_a < 0).any() or (nic_b < 0).any():
            i = int(np.argmax((nic_a < 0) | (nic_b < 0)))
            raise EngineError(
                f"{fabric.spec.id}: no network between {fabric.gpu_name(int(a[i]))} and "
                f"{fabric.gpu_name(int(b[i]))}"
            )
        dom_a, dom_b = a // g, b // g
        gpu_a = fabric.gpu_dev[a].astype(np.int64)
        gpu_b = fabric.gpu_dev[b].astype(np.int64)
        parts = []
        send_nic = nic_a
        if self._proxy is not None:
            local = self._proxy[a % g, self._rail[b]]
            proxied = local >= 0
            via = np.where(proxied, dom_a * g + np.maximum(local, 0), a)
            via_dev = fabric.gpu_dev[via].astype(np.int64)
            send_nic = self._nic[via]
            hop = self._template(gpu_a, via_dev, dom_a)
            parts.append(np.where(proxied[:, None], hop, -1))
            parts.append(self._template(via_dev, send_nic, dom_a))
        else:
            parts.append(self._template(gpu_a, send_nic, dom_a))
        tail = self._template(nic_b, gpu_b, dom_b)
        if self._router.irregular_domains:
            leg = np.concatenate(parts, axis=1)
            send_nic = np.array(send_nic, dtype=np.int64, copy=True)
            leg = self._own(leg, dom_a, gpu_a, nic_a, send_nic)
            parts = [leg]
            tail = self._own(tail, dom_b, nic_b, gpu_b)
        up, down = self._up[send_nic], self._down[nic_b]
        if (up < 0).any() or (down < 0).any():
            i = int(np.argmax((up < 0) | (down < 0)))
            nics = [int(send_nic[i])] if up[i] < 0 else [int(nic_b[i])]
            raise EngineError(uncabled(fabric, nics))
        first = np.concatenate([*parts, up[:, None]], axis=1)
        last = np.concatenate([down[:, None], tail], axis=1)
        leaf_a = fabric.link_dst[up].astype(np.int64)
        leaf_b = fabric.link_src[down].astype(np.int64)
        return first, last, leaf_a, leaf_b

    def paths(self, a: IntArray, b: IntArray) -> IntArray:
        """(n, width) links of each flow's route (flows between different domains)."""
        first, last, leaf_a, leaf_b = self.ends(a, b)
        middle = np.full((a.shape[0], 1), -1, dtype=np.int64)
        moves = np.flatnonzero(leaf_a != leaf_b)
        if moves.size:
            picked = self._switches.pick(
                leaf_a[moves], leaf_b[moves], route_salt(a[moves], b[moves])
            )
            middle = np.full((a.shape[0], picked.shape[1]), -1, dtype=np.int64)
            middle[moves] = picked
        return compact_rows(np.concatenate([first, middle, last], axis=1))

    def incidence(self, a: IntArray, b: IntArray, n_flows: int, rows: IntArray) -> Incidence:
        """Loads of flows ``rows`` (of ``n_flows``) between different domains: their own
        links, and their leaf pair's spread as a group.
        """
        first, last, leaf_a, leaf_b = self.ends(a, b)
        own = np.concatenate([first, last], axis=1)
        keep = own >= 0
        group = np.full(n_flows, -1, dtype=np.int64)
        moves = np.flatnonzero(leaf_a != leaf_b)
        ptr = np.zeros(1, dtype=np.int64)
        res = np.zeros(0, dtype=np.int64)
        weight = np.zeros(0)
        if moves.size:
            of_flow, ptr, res, weight = self._switches.spread(leaf_a[moves], leaf_b[moves])
            group[rows[moves]] = of_flow
        return Incidence(
            n_flows=n_flows,
            flow=rows[row_of_cells(keep)],
            res=own[keep],
            weight=None,
            group=group,
            group_ptr=ptr,
            group_res=res,
            group_weight=weight,
        )
