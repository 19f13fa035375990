"""A dragonfly routed adaptively, as Slingshot and other dragonfly routers do (UGAL).

Each flow splits its bytes between its minimal route (spread over every global bundle of
its group pair) and its Valiant route (through intermediate groups, or another router of
its group) until neither is less loaded (``BulkRouter.ugal_split``). Minimal flows load
the pair's global bundles as one aggregate and their routers' local links (weighted by the
share of the pair's cables held by other routers); Valiant flows load their source
group's global egress and their target group's global ingress, and their middle hops
spread over every global and local link. Path queries (an idle fabric) take the minimal
route (``Dragonfly.router_links``).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.graph_routes import route_salt
from fabricui.engine.networks.base import (
    BoolArray,
    FloatArray,
    IntArray,
    Network,
    every_gpu_has_nic,
)
from fabricui.engine.networks.nic_ends import NicEnds

if TYPE_CHECKING:
    from fabricui.engine.networks.domain import DomainRoutes
    from fabricui.engine.routing import Router
    from fabricui.fabric.dragonfly import Dragonfly
    from fabricui.fabric.fabric import Fabric


class DragonflyNetwork(Network):
    """A fabric with a ``Dragonfly`` table (every GPU on a NIC).

    Aggregates (only with global links): each group pair's global bundles, each router's
    local links out and in, each group's global egress and ingress, all global links and
    all local links.
    """

    #: Most (flow, resource) entries the exact spreading of dragonfly flows may build;
    #: beyond it, a router's local links count as one aggregate.
    MAX_SPREAD = 1 << 25

    def __init__(
        self, fabric: Fabric, router: Router, domain: DomainRoutes, capacity_GBps: FloatArray
    ) -> None:
        super().__init__(fabric, router, domain, capacity_GBps)
        assert fabric.dragonfly is not None
        self.table: Dragonfly = fabric.dragonfly
        self._ends = NicEnds(fabric, router, self.table.nic_link)
        self._res: dict[str, IntArray] = {}
        self._cap: dict[str, FloatArray] = {}
        if self.table.global_link.size:
            self._number_aggregates()

    @staticmethod
    def applies(fabric: Fabric) -> bool:
        """A dragonfly table and a NIC for every GPU."""
        return fabric.dragonfly is not None and every_gpu_has_nic(fabric)

    def _number_aggregates(self) -> None:
        """Number the aggregates after the links, in ``_res`` (ids) and ``_cap``."""
        df, cap = self.table, self.capacity_GBps
        groups, routers = df.groups, df.routers
        per = df.routers_per_group
        global_cap = cap[df.global_link]

        def summed(keys: IntArray, size: int) -> FloatArray:
            """Capacity of the global bundles summed per key [GB/s]."""
            return np.asarray(np.bincount(keys, weights=global_cap, minlength=size), np.float64)

        pair_key = (df.global_src // per) * groups + df.global_dst // per
        local = df.local
        valid = local >= 0
        out_cap = np.where(valid, cap[np.where(valid, local, 0)], 0.0).sum(axis=1)
        # A router's incoming local links are the outgoing ones of its group mates.
        in_cap = np.zeros(routers)
        np.add.at(
            in_cap,
            (np.arange(routers)[:, None] // per) * per + np.arange(per)[None, :],
            np.where(valid, cap[np.where(valid, local, 0)], 0.0),
        )
        self._cap = {
            "pair": summed(pair_key, groups * groups),
            "local_out": out_cap,
            "local_in": in_cap,
            "egress": summed(df.global_src // per, groups),
            "ingress": summed(df.global_dst // per, groups),
            "global": np.array([global_cap.sum()]),
            "local": np.array([out_cap.sum()]),
        }
        n = self.fabric.n_links
        for name, values in self._cap.items():
            self._res[name] = n + np.arange(values.shape[0])
            n += values.shape[0]
        self.aggregate_capacity_GBps = list(self._cap.values())

    def modes(self) -> tuple[bool, ...]:
        """Minimal, and Valiant where there is another group or router to go through."""
        df = self.table
        return (False, True) if df.groups > 2 or df.routers_per_group > 2 else (False,)

    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """Rows through the routers (see ``Network.segments``); weighted for loads."""
        flows = self.domain.split(a, b)
        ends = self._ends.ends(flows)
        ra, rb = self.table.router_of_nic[ends.nic_a], self.table.router_of_nic[ends.nic_b]
        if not aggregate:
            middle = self.table.router_links(ra, rb, route_salt(a, b))
            return NicEnds.rows(flows, ends, middle), None
        middle, middle_w = self._resources(ra, rb, valiant)
        out = NicEnds.rows(flows, ends, middle)
        # 1 on each link of the ends, the middle's own weights (0 where no resource).
        start = ends.up.shape[1] + 1
        stop = start + middle.shape[1]
        weight = np.empty(out.shape)
        weight[:, :start] = out[:, :start] >= 0
        weight[:, start:stop] = _zero_where_none(middle, middle_w)
        weight[:, stop:] = out[:, stop:] >= 0
        weight[flows.same] = (out[flows.same] >= 0).astype(np.float64)
        return out, weight

    def _resources(self, ra: IntArray, rb: IntArray, valiant: bool) -> tuple[IntArray, FloatArray]:
        """Resources (and their weights) between two routers under adaptive routing.

        Inside a group: the one local link, or (Valiant) a hop to any router of the group
        and from it (``_spread_inside``). Between groups, minimal: the group pair's global
        bundles and the local hops to and from them (``_minimal_between``); Valiant: out
        of the group, through another and into the target (``_valiant_between``).
        """
        df = self.table
        n = ra.shape[0]
        per = df.routers_per_group
        ga, gb = ra // per, rb // per
        inside = (ga == gb) & (ra != rb)
        cross = np.flatnonzero(ga != gb)
        through_groups = valiant and df.groups > 2
        via_mate = valiant and per > 2
        if via_mate and df.groups > 2 and self._res and n * (2 * per + 4) > self.MAX_SPREAD:
            return self._valiant_aggregates(ra, rb, inside, cross)
        pairs = ga[cross] * df.groups + gb[cross]
        bundles = df.pair_start[pairs + 1] - df.pair_start[pairs]
        most = int(bundles.max()) if bundles.size else 0
        width = 2 * per + 4 if through_groups else max(1, 2 * most + 1)
        if via_mate:
            width = max(width, 2 * per)
        ids = np.full((n, width), -1, dtype=np.int64)
        w = np.zeros((n, width))
        if via_mate:
            ids, w = self._spread_inside(ids, w, ra, rb, np.flatnonzero(inside))
        else:
            ids[inside, 0] = df.local[ra[inside], rb[inside] % per]
            w[inside, 0] = 1.0
        if not cross.size or not self._res:
            return ids, w
        if through_groups:
            return self._valiant_between(ids, w, ra, rb, cross)
        if cross.size * width > self.MAX_SPREAD:  # the routers' local links as aggregates
            ids[cross, 0] = self._res["pair"][pairs]
            w[cross, 0] = 1.0
            ids[cross, 1] = self._res["local_out"][ra[cross]]
            ids[cross, 2] = self._res["local_in"][rb[cross]]
            w[cross, 1:3] = 1.0
            return ids, w
        return self._minimal_between(ids, w, ra[cross], rb[cross], cross, pairs, bundles, most)

    def _mates_into(self, dst: IntArray) -> IntArray:
        """(n, routers_per_group) the local link from each group mate into ``dst``."""
        return self._into[dst]

    @cached_property
    def _into(self) -> IntArray:
        """(routers, routers_per_group) the local link from each group mate into every
        router (-1 from itself): one row gathered per flow."""
        per = self.table.routers_per_group
        dst = np.arange(self.table.routers)
        return self.table.local[
            (dst // per)[:, None] * per + np.arange(per)[None, :], (dst % per)[:, None]
        ]

    def _spread_inside(
        self, ids: IntArray, w: FloatArray, ra: IntArray, rb: IntArray, rows: IntArray
    ) -> tuple[IntArray, FloatArray]:
        """Valiant inside a group: out of ``ra`` to any mate and from it into ``rb``, each
        of the two routers' local links ``1 / (a - 1)``."""
        per = self.table.routers_per_group
        ids[rows, :per] = self.table.local[ra[rows]]
        ids[rows, per : 2 * per] = self._mates_into(rb[rows])
        w[rows, : 2 * per] = 1.0 / (per - 1)
        return ids, _zero_where_none(ids, w)

    def _valiant_between(
        self, ids: IntArray, w: FloatArray, ra: IntArray, rb: IntArray, cross: IntArray
    ) -> tuple[IntArray, FloatArray]:
        """Valiant between groups: a global hop out of the source group from any of its
        routers (each local link of the source router ``1 / a``), its egress, two global
        hops over all global links, a local hop in the intermediate group over all local
        links, the target group's ingress, and a local hop into the target router
        (``1 / a`` from each group mate)."""
        per = self.table.routers_per_group
        res = self._res
        src, dst = ra[cross], rb[cross]
        ids[cross, :per] = self.table.local[src]
        w[cross, :per] = 1.0 / per
        ids[cross, per : 2 * per] = self._mates_into(dst)
        w[cross, per : 2 * per] = 1.0 / per
        tail = 2 * per
        ids[cross, tail] = res["egress"][src // per]
        ids[cross, tail + 1] = res["ingress"][dst // per]
        ids[cross, tail + 2] = res["global"][0]
        ids[cross, tail + 3] = res["local"][0]
        w[cross, tail : tail + 2] = 1.0
        w[cross, tail + 2] = 2.0
        w[cross, tail + 3] = (per - 1) / per
        return ids, _zero_where_none(ids, w)

    def _minimal_between(
        self,
        ids: IntArray,
        w: FloatArray,
        src: IntArray,
        dst: IntArray,
        cross: IntArray,
        pairs: IntArray,
        bundles: IntArray,
        most: int,
    ) -> tuple[IntArray, FloatArray]:
        """Minimal between groups: the group pair's global bundles as one aggregate, and
        the local hops to and from each bundle's routers, each weighted by its bundle's
        share of the pair's cables.

        Args:
            ids, w: The resources and weights being filled.
            src, dst: (n_cross,) routers of the flows ``cross`` between groups.
            cross: Those flows.
            pairs: (n_cross,) their group pair.
            bundles: (n_cross,) global bundles of the pair.
            most: The most bundles of any pair.
        """
        df = self.table
        per = df.routers_per_group
        ids[cross, 0] = self._res["pair"][pairs]
        w[cross, 0] = 1.0
        k = np.arange(most)[None, :]
        valid = k < bundles[:, None]
        bundle = np.where(valid, df.pair_start[pairs][:, None] + k, 0)
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
        self, ra: IntArray, rb: IntArray, inside: BoolArray, cross: IntArray
    ) -> tuple[IntArray, FloatArray]:
        """``_resources`` under Valiant routing with each router's local links as one
        aggregate (out of it, into it): six resources per flow instead of ``2 a + 4``, for
        more flows than ``MAX_SPREAD`` allows.

        The same loads: a flow spread evenly over a router's ``a - 1`` local links, ``w``
        on each, puts ``(a - 1) w`` on their aggregate, whose capacity is their sum, and
        ``spread_aggregates`` spreads an aggregate's load back over its links by capacity.
        """
        res = self._res
        per = self.table.routers_per_group
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

    def _local_links(self) -> tuple[IntArray, IntArray, IntArray]:
        """Every local link, the router it leaves and the router it enters."""
        per = self.table.routers_per_group
        rows, cols = np.nonzero(self.table.local >= 0)
        links = self.table.local[rows, cols]
        return links, rows, (rows // per) * per + cols

    def unfold_aggregates(self, load: FloatArray) -> FloatArray:
        """The routers' local aggregates (out of a router, into it) spread onto their
        links by capacity and zeroed: a local link carries its source router's outgoing
        share and its target router's incoming share, judged link by link."""
        res = self._res
        if not res:
            return load
        out_ids, in_ids = res["local_out"], res["local_in"]
        if not (load[out_ids].any() or load[in_ids].any()):
            return load
        links, leaves, enters = self._local_links()
        cap = self.capacity_GBps[links]
        unfolded = np.array(load, dtype=np.float64)
        for agg, agg_cap in (
            (out_ids[leaves], self._cap["local_out"][leaves]),
            (in_ids[enters], self._cap["local_in"][enters]),
        ):
            np.add.at(unfolded, links, load[agg] * cap / np.where(agg_cap > 0, agg_cap, 1.0))
        unfolded[out_ids] = 0.0
        unfolded[in_ids] = 0.0
        return unfolded

    def spread_aggregates(self, resource_load: FloatArray, link_load: FloatArray) -> None:
        """Global aggregates onto the global links and local aggregates onto the local
        links, each in proportion to the link's capacity."""
        if not self._res:
            return
        self._spread_global(resource_load, link_load)
        self._spread_local(resource_load, link_load)

    def _spread_global(self, resource_load: FloatArray, link_load: FloatArray) -> None:
        """Group pairs, egress and ingress onto the global links.

        A Valiant flow's two global hops are its source group's egress and its target
        group's ingress; the all-global aggregate bounds their sum and carries no bytes of
        its own, so it is not spread onto the links again.
        """
        df, cap, res = self.table, self.capacity_GBps, self._res
        gl = df.global_link
        per = df.routers_per_group
        pair = (df.global_src // per) * df.groups + df.global_dst // per
        pair_cap = self._cap["pair"][pair]
        spread = resource_load[res["pair"][pair]] * cap[gl] / np.where(pair_cap > 0, pair_cap, 1.0)
        for name, group in (("egress", df.global_src // per), ("ingress", df.global_dst // per)):
            agg_cap = self._cap[name][group]
            spread += (
                resource_load[res[name][group]] * cap[gl] / np.where(agg_cap > 0, agg_cap, 1.0)
            )
        np.add.at(link_load, gl, spread)

    def _spread_local(self, resource_load: FloatArray, link_load: FloatArray) -> None:
        """A router's outgoing and incoming local aggregates, and all local links, onto
        the local links."""
        cap, res = self.capacity_GBps, self._res
        links, leaves, enters = self._local_links()
        share = np.zeros(links.shape[0])
        for name, router in (("local_out", leaves), ("local_in", enters)):
            agg_cap = self._cap[name][router]
            share += (
                resource_load[res[name][router]] * cap[links] / np.where(agg_cap > 0, agg_cap, 1.0)
            )
        all_cap = float(self._cap["local"][0])
        share += resource_load[res["local"][0]] * cap[links] / max(all_cap, 1e-12)
        np.add.at(link_load, links, share)


def _zero_where_none(ids: IntArray, weight: FloatArray) -> FloatArray:
    """``weight`` (changed in place) with 0 wherever ``ids`` holds no resource (-1)."""
    weight[ids < 0] = 0.0
    return weight
