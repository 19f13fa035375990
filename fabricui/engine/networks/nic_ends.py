"""Both ends of a route across a tabled network (fat-tree, dragonfly), for many flows.

A route between domains is the template route from the GPU to its NIC (through its PXN
proxy on a rail-optimized fat-tree), the NIC's cable up, the part between the two first
switches (the network kind's), the far NIC's cable down and the template route to the GPU.
The ends are a handful of distinct domain-0 rows shifted to each flow's domain; a GPU a
health overlay moved to another NIC of its host (its own NIC's cable down) is routed to
that NIC in its own domain, and a route through a NIC whose cable carries nothing is
refused, as on an explicit graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fabricui.engine.graph_routes import replace_rows
from fabricui.engine.route_rows import pad_rows
from fabricui.engine.routing import uncabled
from fabricui.errors import EngineError

if TYPE_CHECKING:
    from collections.abc import Callable

    from fabricui.engine.networks.domain import Flows
    from fabricui.engine.routing import Router
    from fabricui.fabric.fabric import Fabric

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Ends:
    """The parts of each flow's route outside the switches, (n_flows, k) link ids."""

    up: IntArray
    """GPU (through its proxy) to its NIC, -1 padded."""
    nic_up: IntArray
    """(n_flows, 1) the sending NIC's cable up."""
    nic_down: IntArray
    """(n_flows, 1) the receiving NIC's cable down."""
    down: IntArray
    """NIC to GPU, -1 padded."""
    nic_a: IntArray
    """(n_flows,) sending NIC, in the network's NIC order."""
    nic_b: IntArray
    """(n_flows,) receiving NIC."""


class NicEnds:
    """Template tables for the ends of routes across a tabled network.

    Args:
        fabric: The fabric (every GPU of a domain has a NIC).
        router: Its router (domain routes and PXN proxies).
        nic_link: (n_nics,) link from each NIC up to its switch, the network's NIC order
            (the way down is ``+ n_nics``).
    """

    def __init__(self, fabric: Fabric, router: Router, nic_link: IntArray) -> None:
        self._fabric, self._router = fabric, router
        g = fabric.gpus_per_domain
        self._g, self._ln = g, fabric.node_links
        self._nic_link = nic_link
        gpu_dev0 = fabric.gpu_dev[:g].astype(np.int64)
        nic_dev0 = fabric.gpu_nic[:g].astype(np.int64)

        def route(x: int, y: int) -> list[int]:
            return [int(k) for k in router.template_route(int(x), int(y))]

        self._up = pad_rows([route(a, n) for a, n in zip(gpu_dev0, nic_dev0)])
        self._proxy = router.proxy
        if self._proxy is not None:
            self._pxn_up, self._pxn_via = self._pxn_tables(self._proxy, gpu_dev0, nic_dev0, route)
            self._rail = np.asarray(router.rail_of(np.arange(g)), dtype=np.int64)
        self._down = pad_rows([route(n, a) for a, n in zip(gpu_dev0, nic_dev0)])
        n_nics = nic_link.shape[0]
        self._nics_per_domain = n_nics // fabric.domains
        # (g,) NIC index within the domain block, in the network's NIC order.
        per_host = n_nics // fabric.nodes
        host_of = np.arange(g) // fabric.gpus_per_node
        self._local_nic = (fabric.dev_index[nic_dev0] + host_of * per_host).astype(np.int64)
        self._n_nics = n_nics
        self._per_host = per_host
        # Ranks not on their template NIC (a health overlay moved them off a down cable),
        # and NICs whose cable carries nothing (down): routed on their own, refused.
        shift = np.arange(fabric.domains, dtype=np.int64)[:, None] * fabric.node_devices
        template = (nic_dev0[None, :] + shift).reshape(-1)
        self._moved = np.flatnonzero(fabric.gpu_nic.astype(np.int64) != template)
        self._dead = np.asarray(fabric.link_bw_GBps[nic_link] <= 0.0)

    def _pxn_tables(
        self,
        proxy: IntArray,
        gpu_dev0: IntArray,
        nic_dev0: IntArray,
        route: Callable[[int, int], list[int]],
    ) -> tuple[IntArray, IntArray]:
        """PXN: up routes through the proxy for every (GPU, rail), (g, rails, width), and
        the GPU whose NIC sends, (g, rails)."""
        g, rails = proxy.shape
        rows, via_nic = [], []
        for a in range(g):
            for r in range(rails):
                p = int(proxy[a, r])
                if p < 0:
                    rows.append(route(gpu_dev0[a], nic_dev0[a]))
                    via_nic.append(a)
                else:
                    rows.append(route(gpu_dev0[a], gpu_dev0[p]) + route(gpu_dev0[p], nic_dev0[p]))
                    via_nic.append(p)
        return (
            pad_rows(rows).reshape(g, rails, -1),
            np.asarray(via_nic, dtype=np.int64).reshape(g, -1),
        )

    def ends(self, flows: Flows) -> Ends:
        """Both ends of every flow's route, shifted to its domains."""
        la, lb = flows.src_local, flows.dst_local
        if self._proxy is not None:
            rail_b = self._rail[lb]
            up = self._pxn_up[la, rail_b]
            via = self._pxn_via[la, rail_b]
        else:
            up, via = self._up[la], la
        up = np.where(up >= 0, up + (flows.src_domain * self._ln)[:, None], -1)
        down = self._down[lb]
        down = np.where(down >= 0, down + (flows.dst_domain * self._ln)[:, None], -1)
        if self._router.irregular_domains:
            up, via, down = self._own_ends(flows, up, via, down)
        nic_a = flows.src_domain * self._nics_per_domain + self._local_nic[via]
        nic_b = flows.dst_domain * self._nics_per_domain + self._local_nic[lb]
        if self._moved.size:
            up, via, down, nic_a, nic_b = self._moved_ends(flows, up, via, down, nic_a, nic_b)
        if self._dead.any():
            self._refuse_dead(flows, via, nic_a, nic_b)
        nic_up = self._nic_link[nic_a][:, None]
        nic_down = (self._nic_link[nic_b] + self._n_nics)[:, None]
        return Ends(up, nic_up, nic_down, down, nic_a, nic_b)

    def _own_ends(
        self, flows: Flows, up: IntArray, via: IntArray, down: IntArray
    ) -> tuple[IntArray, IntArray, IntArray]:
        """The ends of flows whose template end crosses a link a health overlay took down,
        routed in their own domain: from the GPU to its own NIC (no PXN without its
        NVLinks), from the NIC to the GPU."""
        via = np.array(via, dtype=np.int64, copy=True)
        bad_up = np.flatnonzero(self._router.dead_rows(up))
        via[bad_up] = flows.src_local[bad_up]
        up = self._reroute(up, bad_up, flows.src_domain, flows.src_local, to_nic=True)
        bad_down = np.flatnonzero(self._router.dead_rows(down))
        down = self._reroute(down, bad_down, flows.dst_domain, flows.dst_local, to_nic=False)
        return up, via, down

    def _moved_ends(
        self,
        flows: Flows,
        up: IntArray,
        via: IntArray,
        down: IntArray,
        nic_a: IntArray,
        nic_b: IntArray,
    ) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
        """The ends of flows whose sending or receiving GPU is not on its template NIC (a
        health overlay moved it off a down cable): routed in their own domain to and from
        the GPU's own NIC (no PXN), with that NIC's place in the network's order."""
        g = self._g
        send = flows.src_domain * g + via
        moved_a = np.flatnonzero(np.isin(send, self._moved))
        moved_b = np.flatnonzero(np.isin(flows.dst, self._moved))
        if moved_a.size:
            via = np.array(via, dtype=np.int64, copy=True)
            via[moved_a] = flows.src_local[moved_a]
            nic_a = np.array(nic_a, dtype=np.int64, copy=True)
            nic_a[moved_a] = self._nic_order(flows.src[moved_a])
            up = self._reroute(up, moved_a, flows.src_domain, flows.src_local, to_nic=True)
        if moved_b.size:
            nic_b = np.array(nic_b, dtype=np.int64, copy=True)
            nic_b[moved_b] = self._nic_order(flows.dst[moved_b])
            down = self._reroute(down, moved_b, flows.dst_domain, flows.dst_local, to_nic=False)
        return up, via, down, nic_a, nic_b

    def _nic_order(self, ranks: IntArray) -> IntArray:
        """Place of each rank's own NIC in the network's NIC order."""
        fabric = self._fabric
        nic = fabric.gpu_nic[ranks].astype(np.int64)
        host = ranks // fabric.gpus_per_node
        return np.asarray(host * self._per_host + fabric.dev_index[nic], dtype=np.int64)

    def _refuse_dead(self, flows: Flows, via: IntArray, nic_a: IntArray, nic_b: IntArray) -> None:
        """Refuse flows between domains through a NIC whose cable carries nothing (every
        NIC cable of its host down), naming the NIC, as the per-pair router does.

        Raises:
            EngineError: Such a flow.
        """
        apart = ~flows.same & (flows.src != flows.dst)
        bad_a, bad_b = apart & self._dead[nic_a], apart & self._dead[nic_b]
        if not (bad_a.any() or bad_b.any()):
            return
        fabric = self._fabric
        i = int(np.argmax(bad_a | bad_b))
        rank = int(flows.src_domain[i]) * self._g + int(via[i]) if bad_a[i] else int(flows.dst[i])
        raise EngineError(uncabled(fabric, [int(fabric.gpu_nic[rank])]))

    def _reroute(
        self, rows: IntArray, bad: IntArray, domain: IntArray, local: IntArray, to_nic: bool
    ) -> IntArray:
        """``rows`` with rows ``bad`` routed in their domain between the local GPU and its
        own NIC (GPU to NIC when ``to_nic``, else back)."""
        if not bad.size:
            return rows
        fabric, g = self._fabric, self._g
        legs = []
        for i in bad.tolist():
            d, rank = int(domain[i]), int(domain[i]) * g + int(local[i])
            gpu, nic = int(fabric.gpu_dev[rank]), int(fabric.gpu_nic[rank])
            legs.append(self._router.domain_route(d, *((gpu, nic) if to_nic else (nic, gpu))))
        return replace_rows(rows, bad, legs)

    @staticmethod
    def rows(flows: Flows, ends: Ends, middle: IntArray) -> IntArray:
        """(n_flows, width) every flow's row: the ends around ``middle`` (the part between
        the first and last switch) for flows between domains, the domain route for the
        others, nothing for a GPU to itself."""
        parts = (ends.up, ends.nic_up, middle, ends.nic_down, ends.down)
        pair, same = flows.local_rows, flows.same
        width = max(pair.shape[1], sum(part.shape[1] for part in parts))
        # Each part written into place (no joined copy: these rows are the largest arrays
        # of a routing, a million flows by 80 columns on a dragonfly).
        out = np.empty((flows.src.shape[0], width), dtype=np.int64)
        at = 0
        for part in parts:
            out[:, at : at + part.shape[1]] = part
            at += part.shape[1]
        out[:, at:] = -1
        out[same, :] = -1
        out[same, : pair.shape[1]] = pair[same]
        out[flows.src == flows.dst, :] = -1
        return out
