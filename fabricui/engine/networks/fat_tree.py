"""A fat-tree (leaf/spine, three tiers, or leafs joined directly) routed from its table.

A route climbs from the sender's leaf to the lowest common tier and back down. For one
route (paths) ECMP picks a plane and a core by the endpoints' hash, as ``Router`` does;
for loads, each tier where adaptive routing spreads a flow evenly over equal-cost links
is one aggregate resource: a leaf's uplinks, a pod's uplinks to the cores, and their
downward twins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.graph_routes import route_salt
from fabricui.engine.networks.base import (
    FloatArray,
    IntArray,
    Network,
    every_gpu_has_nic,
)
from fabricui.engine.networks.nic_ends import NicEnds

if TYPE_CHECKING:
    from fabricui.engine.networks.domain import DomainRoutes
    from fabricui.engine.routing import Router
    from fabricui.fabric.fabric import Fabric
    from fabricui.fabric.fat_tree import FatTree


class FatTreeNetwork(Network):
    """A fabric with a ``FatTree`` table (every GPU on a NIC)."""

    def __init__(
        self, fabric: Fabric, router: Router, domain: DomainRoutes, capacity_GBps: FloatArray
    ) -> None:
        super().__init__(fabric, router, domain, capacity_GBps)
        assert fabric.tree is not None
        self.tree: FatTree = fabric.tree
        self._ends = NicEnds(fabric, router, self.tree.nic_link)
        self._leaf_up_res: IntArray | None = None
        self._leaf_down_res: IntArray | None = None
        self._pod_up_res: IntArray | None = None
        self._pod_down_res: IntArray | None = None
        self._number_aggregates()

    @staticmethod
    def applies(fabric: Fabric) -> bool:
        """A fat-tree table and a NIC for every GPU."""
        return fabric.tree is not None and every_gpu_has_nic(fabric)

    def _number_aggregates(self) -> None:
        """Aggregates after the links: each leaf's uplinks, then its downlinks; each pod's
        uplinks to the cores, then the cores' links down into it."""
        tree, cap = self.tree, self.capacity_GBps
        if not tree.leaf_up.size:
            return
        n = self.fabric.n_links
        leafs = tree.leaf_up.shape[0]
        self._leaf_up_res = n + np.arange(leafs)
        self._leaf_down_res = n + leafs + np.arange(leafs)
        extra = [cap[tree.leaf_up].sum(axis=1), cap[tree.leaf_down].sum(axis=1)]
        n += 2 * leafs
        if tree.spine_up.size:
            pods = tree.spine_up.shape[0]
            self._pod_up_res = n + np.arange(pods)
            self._pod_down_res = n + pods + np.arange(pods)
            extra += [
                cap[tree.spine_up].reshape(pods, -1).sum(axis=1),
                cap[tree.spine_down].reshape(pods, -1).sum(axis=1),
            ]
        self.aggregate_capacity_GBps = extra

    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """Rows through the tree (see ``Network.segments``); no weights."""
        flows = self.domain.split(a, b)
        ends = self._ends.ends(flows)
        leaf_a, leaf_b = self.tree.leaf_of_nic[ends.nic_a], self.tree.leaf_of_nic[ends.nic_b]
        middle = self._between_leafs(leaf_a, leaf_b, a, b, aggregate)
        return NicEnds.rows(flows, ends, middle), None

    def _between_leafs(
        self, leaf_a: IntArray, leaf_b: IntArray, a: IntArray, b: IntArray, aggregate: bool
    ) -> IntArray:
        """(n_flows, 4) the part between the two leafs, -1 padded: the direct link, or
        leaf up, pod up, pod down, leaf down, as aggregates or as one ECMP route."""
        tree = self.tree
        out = np.full((leaf_a.shape[0], 4), -1, dtype=np.int64)
        moves = leaf_a != leaf_b
        if tree.direct.size:
            out[moves, 0] = tree.direct[leaf_a[moves], leaf_b[moves]]
            return out
        if not tree.leaf_up.size:
            return out
        pod_a, pod_b = tree.pod_of_leaf[leaf_a], tree.pod_of_leaf[leaf_b]
        cross_pod = moves & (pod_a != pod_b) & bool(tree.spine_up.size)
        if aggregate:
            assert self._leaf_up_res is not None and self._leaf_down_res is not None
            out[moves, 0] = self._leaf_up_res[leaf_a[moves]]
            out[moves, 3] = self._leaf_down_res[leaf_b[moves]]
            if tree.spine_up.size:
                assert self._pod_up_res is not None and self._pod_down_res is not None
                out[cross_pod, 1] = self._pod_up_res[pod_a[cross_pod]]
                out[cross_pod, 2] = self._pod_down_res[pod_b[cross_pod]]
            return out
        planes = tree.leaf_up.shape[1]
        salt = route_salt(a, b)
        plane = salt % planes  # ECMP pick, as Router does
        out[moves, 0] = tree.leaf_up[leaf_a[moves], plane[moves]]
        out[moves, 3] = tree.leaf_down[leaf_b[moves], plane[moves]]
        if tree.spine_up.size:
            core = (salt // planes) % tree.spine_up.shape[2]
            idx = (pod_a[cross_pod], plane[cross_pod], core[cross_pod])
            out[cross_pod, 1] = tree.spine_up[idx]
            out[cross_pod, 2] = tree.spine_down[pod_b[cross_pod], plane[cross_pod], core[cross_pod]]
        return out

    def spread_aggregates(self, resource_load: FloatArray, link_load: FloatArray) -> None:
        """Each aggregate's load spread evenly over its links."""
        tree = self.tree
        pairs = (
            (self._leaf_up_res, tree.leaf_up),
            (self._leaf_down_res, tree.leaf_down),
            (self._pod_up_res, tree.spine_up),
            (self._pod_down_res, tree.spine_down),
        )
        for res_ids, links in pairs:
            if res_ids is None or not links.size:
                continue
            flat = links.reshape(links.shape[0], -1)
            share = resource_load[res_ids] / flat.shape[1]
            np.add.at(link_load, flat, np.repeat(share[:, None], flat.shape[1], axis=1))
