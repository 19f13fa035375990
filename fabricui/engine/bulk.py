"""Vectorized routing for many flows at once: path metrics, link loads, max-min fair rates.

Same-node routes come from a per-node template table; cross-node routes are assembled from
the template (GPU -> NIC), the NIC's cable, the fat-tree segment, and back down. For loads
and rates, the tiers where adaptive routing spreads a flow evenly over equal-cost links are
*aggregate resources* (a leaf's uplinks, a pod's uplinks to the cores, and their downward
twins) whose capacity is the sum of their links: exact for even spreading, and it turns one
flow into a fixed, short list of resources.

Cross-rail flows on a rail-optimized fat-tree go through their PXN proxy (``Router``).

A dragonfly is routed adaptively, as Slingshot and other dragonfly routers do (UGAL, per
packet): each flow splits its bytes between its minimal route (spread over every global
bundle of its group pair) and its Valiant route (through intermediate groups, or another
router of its group) until neither is less loaded (``ugal_split``). Minimal flows load the
pair's global bundles as one aggregate and their routers' local links as aggregates
(weighted by the share of the pair's cables held by other routers); Valiant flows load
their source group's global egress and their target group's global ingress, and their
middle hops spread over every global and local link.
Path queries (an idle fabric) take the minimal route.

A torus's whole route comes from its ``Torus`` table: one dimension-order route per flow,
so its resources are plain links. An imported cluster (``net.layout: explicit``) is routed on
its own switch graph per (leaf, leaf) pair (``graph_routes``): one route per flow as the
router picks it, and loads spread over every route it could pick. A fabric with network
links but none of these (a plugin's builder) is routed pair by pair with ``Router.route``:
slow, never approximate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.capacity import link_capacity_GBps as link_capacity_GBps
from fabricui.engine.graph_routes import ExplicitFlows, Incidence
from fabricui.engine.routing import Router
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric
from fabricui.fabric.network import Dragonfly, FatTree

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _pad(rows: list[list[int]]) -> IntArray:
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), max(width, 1)), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


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
    """

    def __init__(
        self, fabric: Fabric, router: Router | None = None, capacity_GBps: FloatArray | None = None
    ) -> None:
        self.fabric = fabric
        router = router or Router.for_fabric(fabric)
        self._router = router
        # Templates are per scale-up domain block (a node, or the hosts of an NVL72 rack).
        g = fabric.gpus_per_domain
        ln = fabric.node_links
        self._ln, self._g = ln, g
        self._torus = fabric.torus
        self._net: FatTree | Dragonfly | None = (
            fabric.tree if fabric.tree is not None else fabric.dragonfly
        )
        self._has_net = False
        self._fallback = False
        # Same-node routes of node 0 (staging through the host included), filled in on
        # first use: a 1,024-GPU scale-up node has a million pairs, a ring needs a few.
        self._pair_keys = np.zeros(0, dtype=np.int64)
        self._pair_rows = np.full((0, 1), -1, dtype=np.int64)
        if self._torus is None:
            gpu_dev0 = fabric.gpu_dev[:g].astype(np.int64)
            nic_dev0 = fabric.gpu_nic[:g].astype(np.int64)
            self._has_net = self._net is not None and bool((nic_dev0 >= 0).all())
            # Network links but no table to read routes from (e.g. a plugin's builder):
            # route cross-node pairs one by one rather than guess; an imported cluster's
            # graph is routed per leaf pair.
            self._fallback = not self._has_net and fabric.n_links > fabric.domains * ln
        self._graph: ExplicitFlows | None = None
        net_spec = fabric.spec.net
        if self._fallback and net_spec is not None and net_spec.layout == "explicit":
            self._graph = ExplicitFlows(fabric, router)
            self._fallback = False
        self._proxy = router.proxy if self._has_net else None
        if self._has_net:
            self._up = _pad(
                [
                    [int(k) for k in router.domain_route(0, int(a), int(n))]
                    for a, n in zip(gpu_dev0, nic_dev0)
                ]
            )
            if self._proxy is not None:
                # PXN: up routes through the proxy for every (GPU, rail), and the proxy's NIC.
                rows, via_nic = [], []
                for a in range(g):
                    for r in range(self._proxy.shape[1]):
                        p = int(self._proxy[a, r])
                        if p < 0:
                            rows.append(
                                [
                                    int(k)
                                    for k in router.domain_route(
                                        0, int(gpu_dev0[a]), int(nic_dev0[a])
                                    )
                                ]
                            )
                            via_nic.append(a)
                        else:
                            rows.append(
                                [
                                    int(k)
                                    for k in router.domain_route(
                                        0, int(gpu_dev0[a]), int(gpu_dev0[p])
                                    )
                                ]
                                + [
                                    int(k)
                                    for k in router.domain_route(
                                        0, int(gpu_dev0[p]), int(nic_dev0[p])
                                    )
                                ]
                            )
                            via_nic.append(p)
                self._pxn_up = _pad(rows).reshape(g, self._proxy.shape[1], -1)
                self._pxn_via = np.asarray(via_nic, dtype=np.int64).reshape(g, -1)
                self._rail = np.asarray(router.rail_of(np.arange(g)), dtype=np.int64)
            self._down = _pad(
                [
                    [int(k) for k in router.domain_route(0, int(n), int(a))]
                    for a, n in zip(gpu_dev0, nic_dev0)
                ]
            )
            net = self._net
            assert net is not None
            n_nics_total = net.nic_link.shape[0]
            self._nics_per_node = n_nics_total // fabric.domains
            # (g,) NIC index within the domain block, in the network's NIC order.
            per_host = n_nics_total // fabric.nodes
            host_of = np.arange(g) // fabric.gpus_per_node
            local_nic = fabric.dev_index[nic_dev0] + host_of * per_host
            self._local_nic = local_nic.astype(np.int64)
            self._n_nic_links = n_nics_total
        self.capacity_GBps = link_capacity_GBps(fabric) if capacity_GBps is None else capacity_GBps
        self._build_resources()

    # --- resources ---------------------------------------------------------------------

    def _build_resources(self) -> None:
        """Aggregate resources after the links: leaf up/down, pod up/down; for a dragonfly,
        group-pair global bundles, routers' local links, groups' global egress and ingress,
        and all global and all local links."""
        fabric, cap = self.fabric, self.capacity_GBps
        tree = fabric.tree
        n = fabric.n_links
        self._leaf_up_res: IntArray | None = None
        self._leaf_down_res: IntArray | None = None
        self._pod_up_res: IntArray | None = None
        self._pod_down_res: IntArray | None = None
        self._df_res: dict[str, IntArray] = {}
        extra: list[FloatArray] = []
        if tree is not None and tree.leaf_up.size:
            leafs = tree.leaf_up.shape[0]
            self._leaf_up_res = n + np.arange(leafs)
            self._leaf_down_res = n + leafs + np.arange(leafs)
            extra += [cap[tree.leaf_up].sum(axis=1), cap[tree.leaf_down].sum(axis=1)]
            n += 2 * leafs
            if tree.spine_up.size:
                pods = tree.spine_up.shape[0]
                self._pod_up_res = n + np.arange(pods)
                self._pod_down_res = n + pods + np.arange(pods)
                extra += [
                    cap[tree.spine_up].reshape(pods, -1).sum(axis=1),
                    cap[tree.spine_down].reshape(pods, -1).sum(axis=1),
                ]
                n += 2 * pods
        df = fabric.dragonfly
        if df is not None and df.global_link.size:
            groups, routers = df.groups, df.routers
            per = df.routers_per_group
            pair_key = (df.global_src // per) * groups + df.global_dst // per
            pair_cap = np.bincount(pair_key, weights=cap[df.global_link], minlength=groups * groups)
            local = df.local
            valid = local >= 0
            out_cap = np.where(valid, cap[np.where(valid, local, 0)], 0.0).sum(axis=1)
            # A router's incoming local links are the outgoing ones of its group mates.
            in_cap = np.zeros(routers)
            np.add.at(
                in_cap,
                (np.arange(routers)[:, None] // df.routers_per_group) * df.routers_per_group
                + np.arange(df.routers_per_group)[None, :],
                np.where(valid, cap[np.where(valid, local, 0)], 0.0),
            )
            g_src = df.global_src // df.routers_per_group
            g_dst = df.global_dst // df.routers_per_group
            egress = np.bincount(g_src, weights=cap[df.global_link], minlength=groups)
            ingress = np.bincount(g_dst, weights=cap[df.global_link], minlength=groups)
            parts = {
                "pair": pair_cap,
                "local_out": out_cap,
                "local_in": in_cap,
                "egress": egress,
                "ingress": ingress,
                "global": np.array([cap[df.global_link].sum()]),
                "local": np.array([out_cap.sum()]),
            }
            for name, values in parts.items():
                self._df_res[name] = n + np.arange(values.shape[0])
                extra.append(values)
                n += values.shape[0]
        self.resource_capacity_GBps = np.concatenate([cap, *extra]) if extra else cap.copy()

    # --- assembly ----------------------------------------------------------------------

    def _check(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> tuple[IntArray, IntArray]:
        a = np.asarray(src, dtype=np.int64).reshape(-1)
        b = np.asarray(dst, dtype=np.int64).reshape(-1)
        if a.shape != b.shape:
            raise EngineError(f"{a.shape[0]} sources but {b.shape[0]} destinations")
        n = self.fabric.n_gpus
        if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
            raise EngineError(f"ranks must be within 0..{n - 1}")
        return a, b

    def _segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool = False
    ) -> IntArray:
        """(n_flows, width) link (or resource) ids of every flow, -1 padded.

        ``aggregate``: resources (links and aggregates) for loads, else one route per flow;
        ``valiant``: dragonfly flows between groups through intermediate groups.
        """
        return self._weighted_segments(a, b, aggregate, valiant)[0]

    def _weighted_segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool = False
    ) -> tuple[IntArray, FloatArray | None]:
        """``_segments`` plus the bytes each resource carries per byte of its flow (None:
        1 everywhere; only a dragonfly's adaptive routing spreads flows unevenly)."""
        if self._torus is not None:
            return self._torus.paths(a, b), None  # one route per flow: no aggregates
        g, ln = self._g, self._ln
        node_a, node_b = a // g, b // g
        la, lb = a % g, b % g
        same = node_a == node_b
        # Same-node routes come from the template table; only those flows need them.
        pair = np.full((a.shape[0], 1), -1, dtype=np.int64)
        if same.any():
            local = self._pairs(la[same] * g + lb[same])
            pair = np.full((a.shape[0], local.shape[1]), -1, dtype=np.int64)
            pair[same] = np.where(local >= 0, local + (node_a[same] * ln)[:, None], -1)
        if not self._has_net:
            if self._fallback and not same.all():
                return self._routed_one_by_one(a, b, same, pair), None
            if self._graph is not None and not same.all():
                apart = np.flatnonzero(~same)
                routed = self._graph.paths(a[apart], b[apart])
                width = max(pair.shape[1], routed.shape[1])
                out = np.full((a.shape[0], width), -1, dtype=np.int64)
                out[:, : pair.shape[1]] = np.where((a == b)[:, None], -1, pair)
                out[apart, :] = -1
                out[apart, : routed.shape[1]] = routed
                return out, None
            if not same.all():
                raise EngineError(f"{self.fabric.spec.id}: no network between nodes")
            return np.where((a == b)[:, None], -1, pair), None
        tree = self._net
        assert tree is not None
        if self._proxy is not None:
            rail_b = self._rail[lb]
            up = self._pxn_up[la, rail_b]
            via = self._pxn_via[la, rail_b]
        else:
            up, via = self._up[la], la
        up = np.where(up >= 0, up + (node_a * ln)[:, None], -1)
        down = self._down[lb]
        down = np.where(down >= 0, down + (node_b * ln)[:, None], -1)
        nic_a = node_a * self._nics_per_node + self._local_nic[via]
        nic_b = node_b * self._nics_per_node + self._local_nic[lb]
        nic_up = tree.nic_link[nic_a][:, None]
        nic_down = (tree.nic_link[nic_b] + self._n_nic_links)[:, None]
        middle_w: FloatArray | None = None
        if isinstance(tree, Dragonfly):
            ra, rb = tree.router_of_nic[nic_a], tree.router_of_nic[nic_b]
            if aggregate:
                middle, middle_w = self._dragonfly_resources(ra, rb, valiant)
            else:
                salt = (a * 2654435761 + b) & 0x7FFFFFFF
                middle = tree.router_links(ra, rb, salt)
        else:
            leaf_a, leaf_b = tree.leaf_of_nic[nic_a], tree.leaf_of_nic[nic_b]
            middle = self._network(leaf_a, leaf_b, a, b, aggregate)
        cross = np.concatenate([up, nic_up, middle, nic_down, down], axis=1)
        width = max(pair.shape[1], cross.shape[1])
        out = np.full((a.shape[0], width), -1, dtype=np.int64)
        out[:, : cross.shape[1]] = cross
        out[same, :] = -1
        out[same, : pair.shape[1]] = pair[same]
        out[a == b, :] = -1
        if middle_w is None:
            return out, None
        weight = (out >= 0).astype(np.float64)
        start = up.shape[1] + 1
        weight[:, start : start + middle.shape[1]] = np.where(middle >= 0, middle_w, 0.0)
        weight[same] = (out[same] >= 0).astype(np.float64)
        return out, weight

    def _pairs(self, keys: IntArray) -> IntArray:
        """(n_flows, width) node-0 routes of the local pairs ``a * g + b``, -1 padded.

        Routes not asked for before are computed with ``Router.route`` and kept, sorted by
        key, so memory grows with the pairs used, not with ``g**2``.
        """
        known = self._pair_keys
        at = np.minimum(np.searchsorted(known, keys), max(known.shape[0] - 1, 0))
        found = known[at] == keys if known.size else np.zeros(keys.shape[0], dtype=bool)
        missing = np.unique(keys[~found])
        if missing.size:
            g = self._g
            new = _pad(
                [[int(k) for k in self._router.route(int(m) // g, int(m) % g)] for m in missing]
            )
            width = max(new.shape[1], self._pair_rows.shape[1])
            rows = np.full((known.shape[0] + missing.shape[0], width), -1, dtype=np.int64)
            rows[: known.shape[0], : self._pair_rows.shape[1]] = self._pair_rows
            rows[known.shape[0] :, : new.shape[1]] = new
            merged = np.concatenate([known, missing])
            order = np.argsort(merged, kind="stable")
            self._pair_keys, self._pair_rows = merged[order], rows[order]
            known = self._pair_keys
            at = np.searchsorted(known, keys)
        return self._pair_rows[at]

    def _routed_one_by_one(
        self, a: IntArray, b: IntArray, same: npt.NDArray[np.bool_], pair: IntArray
    ) -> IntArray:
        """Rows of ``Router.route`` for cross-node flows of a fabric without a network table
        (slow, exact); same-node flows from the template table."""
        cross = np.flatnonzero(~same)
        routed = _pad([[int(k) for k in self._router.route(int(a[i]), int(b[i]))] for i in cross])
        out = np.full((a.shape[0], max(pair.shape[1], routed.shape[1])), -1, dtype=np.int64)
        out[:, : pair.shape[1]] = np.where((a == b)[:, None], -1, pair)
        out[cross, :] = -1
        out[cross, : routed.shape[1]] = routed
        return out

    def _network(
        self, leaf_a: IntArray, leaf_b: IntArray, a: IntArray, b: IntArray, aggregate: bool
    ) -> IntArray:
        """The part between the two leafs (-1 padded, 4 columns at most)."""
        tree = self.fabric.tree
        assert tree is not None
        n = leaf_a.shape[0]
        out = np.full((n, 4), -1, dtype=np.int64)
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
        salt = (a * 2654435761 + b) & 0x7FFFFFFF
        plane = salt % planes  # ECMP pick, as Router does
        out[moves, 0] = tree.leaf_up[leaf_a[moves], plane[moves]]
        out[moves, 3] = tree.leaf_down[leaf_b[moves], plane[moves]]
        if tree.spine_up.size:
            core = (salt // planes) % tree.spine_up.shape[2]
            idx = (pod_a[cross_pod], plane[cross_pod], core[cross_pod])
            out[cross_pod, 1] = tree.spine_up[idx]
            out[cross_pod, 2] = tree.spine_down[pod_b[cross_pod], plane[cross_pod], core[cross_pod]]
        return out

    #: Most (flow, resource) entries the exact spreading of dragonfly flows may build;
    #: beyond it, a router's local links count as one aggregate.
    _MAX_SPREAD = 1 << 25

    def _dragonfly_resources(
        self, ra: IntArray, rb: IntArray, valiant: bool
    ) -> tuple[IntArray, FloatArray]:
        """Resources (and their weights) between two routers under adaptive routing.

        Inside a group: the one local link, or (Valiant) a hop to any router of the group
        and from it (each of the source's and the target's local links 1/(a-1)). Between
        groups, minimal: the group pair's global bundles as one aggregate, and the local
        hops to and from the bundles' routers, each weighted by its bundle's share of the
        pair's cables. Valiant: a global hop out of the source group
        from any of its routers (each local link of the source router 1/a), its egress, two
        global hops over all global links, a local hop in the intermediate group over all
        local links, the target group's ingress, and a local hop into the target router
        (1/a from each group mate).
        """
        df = self.fabric.dragonfly
        assert df is not None
        n = ra.shape[0]
        per = df.routers_per_group
        ga, gb = ra // per, rb // per
        inside = (ga == gb) & (ra != rb)
        cross = np.flatnonzero(ga != gb)
        res = self._df_res
        if valiant and per > 2 and df.groups > 2 and res and n * (2 * per + 4) > self._MAX_SPREAD:
            return self._valiant_aggregates(ra, rb, inside, cross)
        if valiant and df.groups > 2:
            width = 2 * per + 4
        else:
            p = ga[cross] * df.groups + gb[cross]
            m = df.pair_start[p + 1] - df.pair_start[p]
            most = int(m.max()) if m.size else 0
            width = max(1, 2 * most + 1)
        if valiant and per > 2:
            width = max(width, 2 * per)
        ids = np.full((n, width), -1, dtype=np.int64)
        w = np.zeros((n, width))
        if valiant and per > 2:
            rows = np.flatnonzero(inside)
            ids[rows, :per] = df.local[ra[rows]]
            ids[rows, per : 2 * per] = df.local[
                (rb[rows] // per)[:, None] * per + np.arange(per)[None, :],
                (rb[rows] % per)[:, None],
            ]
            w[rows, : 2 * per] = 1.0 / (per - 1)
            w = np.where(ids >= 0, w, 0.0)
        else:
            ids[inside, 0] = df.local[ra[inside], rb[inside] % per]
            w[inside, 0] = 1.0
        if not cross.size or not res:
            return ids, w
        src, dst = ra[cross], rb[cross]
        if valiant and df.groups > 2:
            ids[cross, :per] = df.local[src]
            w[cross, :per] = 1.0 / per
            ids[cross, per : 2 * per] = df.local[
                (dst // per)[:, None] * per + np.arange(per)[None, :], (dst % per)[:, None]
            ]
            w[cross, per : 2 * per] = 1.0 / per
            tail = 2 * per
            ids[cross, tail] = res["egress"][ga[cross]]
            ids[cross, tail + 1] = res["ingress"][gb[cross]]
            ids[cross, tail + 2] = res["global"][0]
            ids[cross, tail + 3] = res["local"][0]
            w[cross, tail : tail + 2] = 1.0
            w[cross, tail + 2] = 2.0
            w[cross, tail + 3] = (per - 1) / per
            return ids, np.where(ids >= 0, w, 0.0)
        ids[cross, 0] = res["pair"][p]
        w[cross, 0] = 1.0
        if cross.size * width > self._MAX_SPREAD:
            ids[cross, 1] = res["local_out"][src]
            ids[cross, 2] = res["local_in"][dst]
            w[cross, 1:3] = 1.0
            return ids, w
        k = np.arange(most)[None, :]
        valid = k < m[:, None]
        bundle = np.where(valid, df.pair_start[p][:, None] + k, 0)
        total = np.maximum(np.where(valid, df.global_count[bundle], 0).sum(axis=1), 1)
        share = np.where(valid, df.global_count[bundle] / total[:, None], 0.0)
        first, last = df.global_src[bundle], df.global_dst[bundle]
        hop_out = valid & (first != src[:, None])
        hop_in = valid & (last != dst[:, None])
        ids[cross, 1 : 1 + most] = np.where(hop_out, df.local[src[:, None], first % per], -1)
        w[cross, 1 : 1 + most] = np.where(hop_out, share, 0.0)
        ids[cross, 1 + most : 1 + 2 * most] = np.where(
            hop_in, df.local[last, (dst % per)[:, None]], -1
        )
        w[cross, 1 + most : 1 + 2 * most] = np.where(hop_in, share, 0.0)
        return ids, w

    def _valiant_aggregates(
        self, ra: IntArray, rb: IntArray, inside: npt.NDArray[np.bool_], cross: IntArray
    ) -> tuple[IntArray, FloatArray]:
        """``_dragonfly_resources`` under Valiant routing with each router's local links
        as one aggregate (out of it, into it): six resources per flow instead of
        ``2 a + 4``, for more flows than ``_MAX_SPREAD`` allows.

        The same loads: a flow spread evenly over a router's ``a - 1`` local links, ``w``
        on each, puts ``(a - 1) w`` on their aggregate, whose capacity is their sum, and
        ``link_loads`` spreads an aggregate's load back over its links by capacity.
        """
        df = self.fabric.dragonfly
        assert df is not None
        res = self._df_res
        per = df.routers_per_group
        ids = np.full((ra.shape[0], 6), -1, dtype=np.int64)
        w = np.zeros((ra.shape[0], 6))
        rows = np.flatnonzero(inside)  # out of ra over any mate, into rb from it: 1 each
        ids[rows, 0], ids[rows, 1] = res["local_out"][ra[rows]], res["local_in"][rb[rows]]
        w[rows, :2] = 1.0
        src, dst = ra[cross], rb[cross]
        ga, gb = src // per, dst // per
        spread = (per - 1) / per  # the global hop leaves from (enters at) a mate: 1 - 1/a
        ids[cross, 0], ids[cross, 1] = res["local_out"][src], res["local_in"][dst]
        ids[cross, 2], ids[cross, 3] = res["egress"][ga], res["ingress"][gb]
        ids[cross, 4], ids[cross, 5] = res["global"][0], res["local"][0]
        w[cross] = [spread, spread, 1.0, 1.0, 2.0, spread]
        return ids, w

    # --- queries -----------------------------------------------------------------------

    def paths(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
        """(n_flows, width) link ids of one route per flow (gaps are -1), for inspection."""
        a, b = self._check(src, dst)
        return self._segments(a, b, aggregate=False)

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
        valiant = False if self.fabric.dragonfly is not None else None
        load = self.loads([src], [dst], [1.0], valiant=valiant)
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
        each flow (1 on fat-trees and tori; see ``_dragonfly_resources``).

        Args:
            src: (n_flows,) source ranks.
            dst: (n_flows,) destination ranks.
            valiant: Dragonfly only: route flows between groups through intermediate groups.
        """
        return self._incidence(src, dst, valiant).expanded()

    def _incidence(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, valiant: bool | FloatArray
    ) -> Incidence:
        """What ``weighted_incidence`` says, with an imported cluster's leaf-pair spreads
        kept as shared groups (one copy per leaf pair, not per flow); ``valiant`` is one
        mode for every flow or each flow's fraction on its Valiant route (``ugal_split``)."""
        a, b = self._check(src, dst)
        if isinstance(valiant, np.ndarray):
            return self._mixed_incidence(a, b, valiant)
        if self._graph is not None:
            same = (a // self._g) == (b // self._g)
            rows = np.flatnonzero(~same)
            if rows.size:
                inc = self._graph.incidence(a[rows], b[rows], a.shape[0], rows)
                local = np.flatnonzero(same & (a != b))
                pair = self._pairs((a[local] % self._g) * self._g + b[local] % self._g)
                pair = np.where(pair >= 0, pair + ((a[local] // self._g) * self._ln)[:, None], -1)
                i, col = np.nonzero(pair >= 0)
                return Incidence(
                    n_flows=inc.n_flows,
                    flow=np.concatenate([inc.flow, local[i]]),
                    res=np.concatenate([inc.res, pair[i, col]]),
                    weight=None,
                    group=inc.group,
                    group_ptr=inc.group_ptr,
                    group_res=inc.group_res,
                    group_weight=inc.group_weight,
                )
        res, weight = self._weighted_segments(a, b, aggregate=True, valiant=valiant)
        if weight is None:
            flow, col = np.nonzero(res >= 0)
            return Incidence(a.shape[0], flow, res[flow, col], np.ones(flow.shape[0]))
        flow, col = np.nonzero((res >= 0) & (weight > 0))
        return Incidence(a.shape[0], flow, res[flow, col], weight[flow, col])

    def _mixed_incidence(self, a: IntArray, b: IntArray, valiant: FloatArray) -> Incidence:
        """The incidence of flows that split their bytes between their two routes:
        ``valiant`` is each flow's fraction on its Valiant route (0: all minimal, 1: all
        Valiant; booleans give one route per flow)."""
        share = np.asarray(valiant, dtype=np.float64)
        flows, res, weights = [], [], []
        for mode, part in ((False, 1.0 - share), (True, share)):
            rows = np.flatnonzero(part > 0)
            if rows.size:
                f, r, w = self._incidence(a[rows], b[rows], mode).expanded()
                flows.append(rows[f])
                res.append(r)
                weights.append(w * part[rows[f]])
        if not flows:
            return Incidence(a.shape[0], np.zeros(0, np.int64), np.zeros(0, np.int64), None)
        return Incidence(
            a.shape[0], np.concatenate(flows), np.concatenate(res), np.concatenate(weights)
        )

    #: Rounds of successive averages ``ugal_split`` runs.
    _UGAL_ROUNDS = 12
    #: Exponent of the smooth route cost (sum of bytes x utilisation^p): large enough to
    #: act like the busiest resource, smooth enough to let flows share out.
    _UGAL_POWER = 8.0
    #: Most flows split one by one; a larger pattern (a 4,096-GPU all-to-all has 16.8
    #: million flows, spread evenly already) takes the better single mode.
    _UGAL_MAX_FLOWS = 1 << 16

    def ugal_split(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, volume: npt.ArrayLike = 1.0
    ) -> FloatArray:
        """(n_flows,) the fraction of each flow's bytes adaptive routing (UGAL) sends on
        its Valiant route on a dragonfly (through another group, or another router of its
        group); the rest takes its minimal route.

        A UGAL router decides per packet: minimal unless the minimal route's queues are
        the longer, so in the steady state a flow's bytes split between its routes until
        neither is less loaded. That equilibrium is found by successive averages: each
        round every flow's best route under the current loads (cost: its bytes times each
        resource's utilisation to the power ``_UGAL_POWER``, summed) is averaged into its
        split with weight 1/(round + 2); the split whose busiest resource is least loaded
        is kept, and it is never worse than every flow minimal or every flow Valiant.

        Args:
            src: (n_flows,) source ranks.
            dst: (n_flows,) destination ranks.
            volume: Bytes per message byte of each flow (or one value).
        """
        a, b = self._check(src, dst)
        n = a.shape[0]
        vol = np.broadcast_to(np.asarray(volume, dtype=np.float64), a.shape).astype(np.float64)
        if len(self._modes()) < 2 or n == 0:
            return np.zeros(n)
        size = self.resource_capacity_GBps.size
        if n > self._UGAL_MAX_FLOWS:
            pure = (np.zeros(n), np.ones(n))
            return min(
                pure,
                key=lambda x: self._busiest(self._incidence(a, b, bool(x[0])).loads(vol, size)),
            )
        cap = np.where(self.resource_capacity_GBps > 0, self.resource_capacity_GBps, np.inf)
        fm, rm, wm = self._incidence(a, b, False).expanded()
        fv, rv, wv = self._incidence(a, b, True).expanded()
        bytes_m, bytes_v = vol[fm] * wm, vol[fv] * wv

        def load_of(x: FloatArray) -> FloatArray:
            load = np.bincount(rm, weights=bytes_m * (1.0 - x[fm]), minlength=size) + (
                np.bincount(rv, weights=bytes_v * x[fv], minlength=size)
            )
            return load.astype(np.float64, copy=False)

        candidates = [np.zeros(n), np.ones(n)]
        scores = [self._busiest(load_of(x)) for x in candidates]
        x = np.zeros(n)
        for k in range(self._UGAL_ROUNDS):
            util = load_of(x) / cap
            cost_m = np.bincount(fm, weights=bytes_m * util[rm] ** self._UGAL_POWER, minlength=n)
            cost_v = np.bincount(fv, weights=bytes_v * util[rv] ** self._UGAL_POWER, minlength=n)
            x = x + ((cost_v < cost_m).astype(np.float64) - x) / (k + 2)
            candidates.append(x)
            scores.append(self._busiest(load_of(x)))
        return candidates[int(np.argmin(scores))]

    def _modes(self) -> tuple[bool, ...]:
        """Routing modes adaptive routing chooses from: minimal, and on a dragonfly also
        Valiant (through another group, or another router of the group)."""
        df = self.fabric.dragonfly
        if df is None:
            return (False,)
        return (False, True) if df.groups > 2 or df.routers_per_group > 2 else (False,)

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
        if valiant is None:
            modes = self._modes()
            if len(modes) > 1 and np.asarray(src).size > self._UGAL_MAX_FLOWS:
                return min(
                    (self.loads(src, dst, volume, mode) for mode in modes), key=self._busiest
                )
            valiant = modes[0] if len(modes) == 1 else self.ugal_split(src, dst, volume)
        incidence = self._incidence(src, dst, valiant)
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
        load, capacity = self._unfold_router_aggregates(load)
        used = load > 0
        if not used.any():
            return 0.0
        return float(np.max(load[used] / (capacity[used] * 1e3)))

    def _unfold_router_aggregates(self, load: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``load`` with the dragonfly routers' local aggregates (``local_out``,
        ``local_in``) spread onto their links by capacity and zeroed, and the capacities."""
        capacity = self.resource_capacity_GBps
        df = self.fabric.dragonfly
        res = self._df_res
        if df is None or not res:
            return load, capacity
        out_ids, in_ids = res["local_out"], res["local_in"]
        if not (load[out_ids].any() or load[in_ids].any()):
            return load, capacity
        per = df.routers_per_group
        rows, cols = np.nonzero(df.local >= 0)
        links = df.local[rows, cols]
        into = (rows // per) * per + cols  # the router each local link enters
        cap = self.capacity_GBps[links]
        unfolded = np.array(load, dtype=np.float64)
        for agg in (out_ids[rows], in_ids[into]):
            agg_cap = capacity[agg]
            np.add.at(unfolded, links, load[agg] * cap / np.where(agg_cap > 0, agg_cap, 1.0))
        unfolded[out_ids] = 0.0
        unfolded[in_ids] = 0.0
        return unfolded, capacity

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
        modes: list[bool | FloatArray] = list(self._modes() if valiant is None else (valiant,))
        if valiant is None and len(modes) > 1:
            modes.append(self.ugal_split(src, dst))
        for mode in modes:
            result = self._max_min(src, dst, mode)
            total = float(np.where(np.isfinite(result[0]), result[0], 0.0).sum())
            if best is None or total > float(np.where(np.isfinite(best[0]), best[0], 0.0).sum()) * (
                1 + 1e-9
            ):
                best = result
        assert best is not None
        return best

    def _max_min(
        self, src: npt.ArrayLike, dst: npt.ArrayLike, valiant: bool | FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Progressive filling in one routing mode (see ``max_min_rates``).

        Flows that share a leaf pair's spread (an imported cluster) load it as a group: the
        group's resources count its active flows once per iteration, and a full resource
        in a group freezes every flow of the group.
        """
        inc = self._incidence(src, dst, valiant)
        flow, res, weight = inc.flow, inc.res, inc.weight
        n_flows = inc.n_flows
        cap = self.resource_capacity_GBps
        rate = np.zeros(n_flows)
        remaining = cap.astype(np.float64).copy()
        has_links = np.bincount(flow, minlength=n_flows) > 0
        group = inc.group
        grouped = group is not None and inc.group_ptr is not None and inc.group_ptr.size > 1
        if grouped:
            assert group is not None and inc.group_ptr is not None
            assert inc.group_res is not None and inc.group_weight is not None
            member = group >= 0
            of_flow = np.maximum(group, 0)
            n_groups = inc.group_ptr.shape[0] - 1
            group_row, group_res, group_weight = inc.group_row, inc.group_res, inc.group_weight
            has_links |= member
        rate[~has_links] = np.inf
        active = has_links.copy()
        for _ in range(n_flows + 1):
            if not active.any():
                break
            live = active[flow]
            counts = np.bincount(
                res[live], weights=None if weight is None else weight[live], minlength=cap.size
            ).astype(np.float64)
            if grouped:
                per_group = np.bincount(of_flow[active & member], minlength=n_groups)
                counts += np.bincount(
                    group_res, weights=group_weight * per_group[group_row], minlength=cap.size
                )
            used = counts > 0
            share = np.full(cap.size, np.inf)
            share[used] = remaining[used] / counts[used]
            step = share[used].min()
            rate[active] += step
            remaining -= step * counts
            full = used & (share <= step * (1 + 1e-9))
            frozen = np.zeros(n_flows, dtype=bool)
            frozen[flow[live & full[res]]] = True  # flows through a full resource freeze
            if grouped:
                hit = np.zeros(n_groups, dtype=bool)
                hit[group_row[full[group_res]]] = True
                frozen |= member & hit[of_flow]
            active &= ~frozen
        return rate, inc.loads(np.where(np.isfinite(rate), rate, 0.0), cap.size)

    def link_loads(self, resource_load: FloatArray) -> FloatArray:
        """(n_links,) per-link load from resource loads: aggregates spread evenly over
        their links (what adaptive routing does)."""
        fabric = self.fabric
        load = np.array(resource_load[: fabric.n_links], dtype=np.float64)
        tree = fabric.tree
        pairs = (
            (self._leaf_up_res, None if tree is None else tree.leaf_up),
            (self._leaf_down_res, None if tree is None else tree.leaf_down),
            (self._pod_up_res, None if tree is None else tree.spine_up),
            (self._pod_down_res, None if tree is None else tree.spine_down),
        )
        for res_ids, links in pairs:
            if res_ids is None or links is None or not links.size:
                continue
            flat = links.reshape(links.shape[0], -1)
            share = resource_load[res_ids] / flat.shape[1]
            np.add.at(load, flat, np.repeat(share[:, None], flat.shape[1], axis=1))
        df = fabric.dragonfly
        if df is not None and self._df_res:
            cap = self.capacity_GBps
            gl = df.global_link
            per = df.routers_per_group
            pair = (df.global_src // per) * df.groups + df.global_dst // per
            pair_res = self._df_res["pair"][pair]
            pair_cap = self.resource_capacity_GBps[pair_res]
            spread = resource_load[pair_res] * cap[gl] / np.where(pair_cap > 0, pair_cap, 1.0)
            egress = self._df_res["egress"][df.global_src // per]
            ingress = self._df_res["ingress"][df.global_dst // per]
            # A Valiant flow's two global hops are its source group's egress and its target
            # group's ingress; the all-global aggregate bounds their sum and carries no
            # bytes of its own, so it is not spread onto the links again.
            for agg in (egress, ingress):
                agg_cap = self.resource_capacity_GBps[agg]
                spread += resource_load[agg] * cap[gl] / np.where(agg_cap > 0, agg_cap, 1.0)
            np.add.at(load, gl, spread)
            # Local aggregates: a router's outgoing and incoming local links, and all of them.
            valid = df.local >= 0
            rows, cols = np.nonzero(valid)
            links = df.local[rows, cols]
            into = (rows // per) * per + cols  # the router each local link enters
            res = self._df_res
            share = np.zeros(links.shape[0])
            for agg, router in ((res["local_out"], rows), (res["local_in"], into)):
                agg_cap = self.resource_capacity_GBps[agg[router]]
                share += (
                    resource_load[agg[router]] * cap[links] / np.where(agg_cap > 0, agg_cap, 1.0)
                )
            all_cap = self.resource_capacity_GBps[res["local"][0]]
            share += resource_load[res["local"][0]] * cap[links] / max(all_cap, 1e-12)
            np.add.at(load, links, share)
        return load


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
