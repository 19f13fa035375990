"""A dragonfly: groups of all-to-all routers joined by global cables.

A dragonfly (Kim et al., ISCA 2008) has groups of routers, all-to-all inside a group by
one local cable per router pair, and global cables between groups spread over *all*
routers of a group: global port ``q`` of a group (router ``q // h``, ``h`` global ports per
router) leads to the group ``(q mod (groups - 1)) + 1`` ahead, the consecutive arrangement
of Camarero et al. (ACM TACO 2014), so every router holds global cables and every group
pair gets ``a * h / (groups - 1)`` of them. NICs fill the routers' terminal ports in
node-major order. Its ``Dragonfly`` table gives minimal routes (the router's own cable to
the target group when it has one); adaptive routing (UGAL: minimal or Valiant through an
intermediate group, whichever is less loaded) is priced by the bulk router.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.cabling import Cabling, IntArray, NetworkBlock, check_bundles, shift_ids
from fabricui.fabric.kinds import DeviceKind
from fabricui.model import NetSpec


@dataclass(frozen=True)
class Dragonfly:
    """Groups of all-to-all routers joined by global bundles spread over every router;
    link ids local to the network block until ``shifted``.

    Router ``r`` is router ``r % routers_per_group`` of group ``r // routers_per_group``
    (device ``router<r>``). Global bundles are directed and sorted by group pair: those
    from group ``i`` to group ``j`` are ``global_*[pair_start[i * groups + j] :
    pair_start[i * groups + j + 1]]``.
    """

    router_of_nic: IntArray
    """(nodes * nics_per_node,) router of each NIC, NICs in node-major order."""
    nic_link: IntArray
    """(nodes * nics_per_node,) link id NIC -> router (the reverse is ``+ n_nics``)."""
    routers_per_group: int
    """Routers in each group."""
    local: IntArray
    """(routers, routers_per_group) link router -> router ``j`` of its group (-1: itself)."""
    global_src: IntArray
    """(n_bundles,) router a directed global bundle leaves."""
    global_dst: IntArray
    """(n_bundles,) router it enters (in another group)."""
    global_link: IntArray
    """(n_bundles,) its link id."""
    global_count: IntArray
    """(n_bundles,) cables in it."""
    pair_start: IntArray
    """(groups * groups + 1,) first bundle of each (source group, target group) pair."""
    own: IntArray
    """(routers, groups) a bundle leaving this router for that group, -1 when it holds
    none."""
    global_cables: int
    """Fewest cables between any two groups."""

    @property
    def groups(self) -> int:
        """Number of groups."""
        return int(self.own.shape[1])

    @property
    def routers(self) -> int:
        """Number of routers."""
        return int(self.local.shape[0])

    def minimal_bundle(self, ra: IntArray, rb: IntArray, salt: IntArray) -> IntArray:
        """The global bundle a minimal route takes from router ``ra`` to router ``rb`` (in
        another group): ``ra``'s own cable to the target group, else one entering ``rb``,
        else one picked by ``salt`` (a hash of the endpoints)."""
        per = self.routers_per_group
        ga, gb = ra // per, rb // per
        choice = self.own[ra, gb]
        arrive = self.own[rb, ga]
        # The reverse of rb's bundle to ga enters rb: bundles are stored in both directions
        # with the same position within their pair.
        has_arrive = (choice < 0) & (arrive >= 0)
        if has_arrive.any():
            back = arrive[has_arrive]
            pos = back - self.pair_start[gb[has_arrive] * self.groups + ga[has_arrive]]
            choice[has_arrive] = (
                self.pair_start[ga[has_arrive] * self.groups + gb[has_arrive]] + pos
            )
        rest = choice < 0
        if rest.any():
            p = ga[rest] * self.groups + gb[rest]
            n = self.pair_start[p + 1] - self.pair_start[p]
            choice[rest] = self.pair_start[p] + salt[rest] % np.maximum(n, 1)
        return choice

    def router_links(
        self, ra: npt.ArrayLike, rb: npt.ArrayLike, salt: npt.ArrayLike = 0
    ) -> IntArray:
        """(n, 3) links of the minimal route from router ``ra`` to ``rb``, -1 padded.

        Columns: local hop to the router holding the global bundle, the global bundle, local
        hop from the router it enters; same group: only the first column; same router: none.
        """
        a_r = np.asarray(ra, dtype=np.int64).reshape(-1)
        b_r = np.asarray(rb, dtype=np.int64).reshape(-1)
        salt_arr = np.broadcast_to(np.asarray(salt, dtype=np.int64), a_r.shape).copy()
        per = self.routers_per_group
        out = np.full((a_r.shape[0], 3), -1, dtype=np.int64)
        ga, gb = a_r // per, b_r // per
        inside = (ga == gb) & (a_r != b_r)
        out[inside, 0] = self.local[a_r[inside], b_r[inside] % per]
        cross = np.flatnonzero(ga != gb)
        if cross.size:
            src, dst = a_r[cross], b_r[cross]
            bundle = self.minimal_bundle(src, dst, salt_arr[cross])
            gw_src, gw_dst = self.global_src[bundle], self.global_dst[bundle]
            first = src != gw_src
            out[cross[first], 0] = self.local[src[first], gw_src[first] % per]
            out[cross, 1] = self.global_link[bundle]
            last = gw_dst != dst
            out[cross[last], 2] = self.local[gw_dst[last], dst[last] % per]
        return out

    def shifted(self, offset: int) -> Dragonfly:
        """The same structure with link ids made absolute."""
        return replace(
            self,
            nic_link=shift_ids(self.nic_link, offset),
            local=shift_ids(self.local, offset),
            global_link=shift_ids(self.global_link, offset),
        )


#: Most dragonfly groups the builder accepts (its group tables are groups x groups).
MAX_GROUPS = 4096


def plan_dragonfly(
    net: NetSpec, ports_total: int, radix: int, ports_per_node: int = 0
) -> tuple[int, int, int]:
    """Groups, routers per group and the fewest cables between two groups of a dragonfly.

    A balanced dragonfly (Kim et al.) gives each router ``p = radix/4`` terminal ports,
    ``a = radix/2`` routers per group (``a - 1`` local ports) and ``h = radix/4`` global
    ports. Unset sizes follow from the terminal ports needed: ``ceil(ports / p)`` routers in
    whole groups of ``a`` (a group is a cabinet: a job that fills part of it still has its
    other routers to route through), then as many groups as needed.
    A group's ``a * h`` global ports spread over the other groups: ``floor(a * h /
    (groups - 1))`` cables per pair at least (``global_links`` sets it).

    Raises:
        EngineError: More than ``MAX_GROUPS`` groups, more groups than a group's global
            ports can reach (a pair without a cable has no minimal route), or more global
            cables than a group's routers have ports for.
    """
    p = max(1, radix // 4)
    needed = max(1, math.ceil(ports_total / p))
    groups, per = net.groups, net.routers_per_group
    if groups is None and per is None:
        per = max(1, radix // 2)
        groups = math.ceil(needed / per)
    elif groups is None:
        assert per is not None
        groups = math.ceil(needed / per)
    elif per is None:
        per = max(1, math.ceil(needed / groups))
    if groups > MAX_GROUPS:
        raise EngineError(
            f"dragonfly of {groups} groups exceeds {MAX_GROUPS}; set net.routers_per_group "
            "or net.groups"
        )
    check_bundles(
        groups * per * (per - 1) // 2 + groups * (groups - 1) // 2,
        f"dragonfly of {groups} groups x {per} routers",
    )
    cables = net.global_links
    if cables is None:
        global_ports = per * max(1, radix // 4)
        if groups - 1 > global_ports:
            # Every pair of groups needs a global cable for a minimal route.
            most = (global_ports + 1) * per * p
            fits = f"{most:,} NIC ports"
            if ports_per_node:
                fits = f"up to --nodes {most // ports_per_node}"
            raise EngineError(
                f"dragonfly of {groups} groups: a group of {per} {radix}-port routers has "
                f"{global_ports} global ports, enough for {global_ports + 1} groups "
                f"({fits}); use fewer nodes, or set net.routers_per_group"
            )
        cables = max(1, global_ports // max(1, groups - 1))
    return groups, per, cables


def _global_ports(net: NetSpec, groups: int, per: int, cables: int, radix: int) -> int:
    """Global ports per router: radix/4 (balanced), or what ``global_links`` needs.

    Raises:
        EngineError: The routers have too few ports left for the cables asked for.
    """
    if net.global_links is None:
        return max(1, radix // 4)
    need = math.ceil(cables * (groups - 1) / per)
    spare = radix - max(1, radix // 4) - (per - 1)
    if need > max(spare, 1):
        raise EngineError(
            f"net.global_links: {cables} cables to each of {groups - 1} groups need {need} "
            f"global ports per router; {radix}-port routers have {max(spare, 0)} left"
        )
    return need


class _DragonflyShape(NamedTuple):
    """Sizes of a dragonfly (``plan_dragonfly``) and how its NICs fill the routers."""

    groups: int
    routers_per_group: int
    cables: int
    """Global cables asked for between every pair of groups (``plan_dragonfly``)."""
    nics_per_router: int
    """NICs each router's terminal ports take (the last routers may take fewer)."""

    @property
    def routers(self) -> int:
        """Routers of all groups."""
        return self.groups * self.routers_per_group


def _dragonfly_shape(
    net: NetSpec, nodes: int, n_nics: int, ports: int, radix: int
) -> _DragonflyShape:
    """Groups and routers for ``n_nics`` NICs of ``ports`` ports each: NICs fill routers at
    ``radix / 4`` terminal ports each unless the spec sets groups or routers, then they
    spread evenly.

    Raises:
        EngineError: The dragonfly cannot be built (``plan_dragonfly``).
    """
    groups, per, cables = plan_dragonfly(
        net, n_nics * ports, radix, ports_per_node=n_nics * ports // max(nodes, 1)
    )
    per_router = math.ceil(n_nics / (groups * per))
    if net.groups is None and net.routers_per_group is None:
        # Whole groups: terminals fill routers at radix/4 ports each, the rest stay empty.
        per_router = max(per_router, max(1, radix // 4) // max(1, ports))
    return _DragonflyShape(groups, per, cables, per_router)


def check_dragonfly(net: NetSpec, nodes: int, n_nics: int, ports: int, radix: int) -> None:
    """Refuse what ``build_dragonfly`` refuses (arguments as there, ``n_nics`` the NICs it
    would cable), without cabling it: every refusal is arithmetic on the sizes, so node
    counts can be tried at no cost (``build.most_nodes``), not a whole build each.

    Raises:
        EngineError: ``build_dragonfly`` would refuse (the same line).
    """
    _checked_shape(net, nodes, n_nics, ports, radix)


def _checked_shape(
    net: NetSpec, nodes: int, n_nics: int, ports: int, radix: int
) -> _DragonflyShape:
    """``_dragonfly_shape``, its global ports checked too (``_global_ports``).

    Raises:
        EngineError: The dragonfly cannot be built.
    """
    shape = _dragonfly_shape(net, nodes, n_nics, ports, radix)
    if shape.groups > 1:
        _global_ports(net, shape.groups, shape.routers_per_group, shape.cables, radix)
    return shape


def _local_bundles(
    shape: _DragonflyShape, base: int, port_bw_GBps: float, cabling: Cabling
) -> IntArray:
    """One cable between every pair of routers of every group; returns the ``local`` table
    (``Dragonfly.local``)."""
    per, routers = shape.routers_per_group, shape.routers
    iu, ju = np.triu_indices(per, 1)
    first = (np.arange(shape.groups, dtype=np.int64) * per)[:, None]
    la, lb = (first + iu[None, :]).reshape(-1), (first + ju[None, :]).reshape(-1)
    ids = cabling.add_cables(
        base + la, base + lb, np.ones(la.shape[0], dtype=np.int64), port_bw_GBps
    )
    local = np.full((routers, per), -1, dtype=np.int64)
    local[la, lb % per] = ids
    local[lb, la % per] = ids + la.shape[0]
    return local


class _GlobalBundles(NamedTuple):
    """The directed global bundles of a dragonfly, sorted by (source group, target group),
    both directions of a bundle at the same position in their pair (``Dragonfly``)."""

    src: IntArray
    dst: IntArray
    link: IntArray
    cables: IntArray
    """Cables in each bundle."""
    pair_start: IntArray
    own: IntArray
    fewest: int
    """Fewest cables between any two groups."""


def _global_cable_ends(
    net: NetSpec, shape: _DragonflyShape, radix: int
) -> tuple[IntArray, IntArray, int]:
    """The two routers of every global cable, and the fewest cables of any group pair.

    Cable ``k`` between groups ``i < j`` leaves ``i``'s port ``(j - i - 1) + k (g - 1)``
    and ``j``'s port ``(i - j) mod g - 1 + k (g - 1)``; a port's router is ``port // h``.

    Raises:
        EngineError: The routers have too few ports for the cables asked for.
    """
    groups, per = shape.groups, shape.routers_per_group
    h = _global_ports(net, groups, per, shape.cables, radix)
    ports_per_group = per * h
    gi, gj = np.triu_indices(groups, 1)
    off_i = gj - gi - 1
    off_j = (gi - gj) % groups - 1
    if net.global_links is not None:
        k_max = np.full(gi.shape[0], shape.cables, dtype=np.int64)
    else:
        # Every port used once: offset o gets the ports q = o + k (g - 1) < a h.
        def slots(off: IntArray) -> IntArray:
            return (ports_per_group - 1 - off) // (groups - 1) + 1

        k_max = np.minimum(slots(off_i), slots(off_j))
    pair = np.repeat(np.arange(gi.shape[0]), k_max)
    k = np.arange(pair.shape[0]) - np.repeat(np.cumsum(k_max) - k_max, k_max)
    ra = gi[pair] * per + (off_i[pair] + k * (groups - 1)) // h
    rb = gj[pair] * per + (off_j[pair] + k * (groups - 1)) // h
    return ra, rb, int(k_max.min())


def _global_bundles(
    net: NetSpec,
    shape: _DragonflyShape,
    radix: int,
    base: int,
    port_bw_GBps: float,
    cabling: Cabling,
) -> _GlobalBundles:
    """The global cables (consecutive arrangement), those between the same two routers
    as one bundle, cabled and sorted by group pair for the minimal-route tables.

    Raises:
        EngineError: The routers have too few ports for the cables asked for.
    """
    groups, per, routers = shape.groups, shape.routers_per_group, shape.routers
    own = np.full((routers, groups), -1, dtype=np.int64)
    if groups <= 1:
        none = np.zeros(0, dtype=np.int64)
        pair_start = np.zeros(groups * groups + 1, dtype=np.int64)
        return _GlobalBundles(none, none, none, none, pair_start, own, 0)
    ra, rb, fewest = _global_cable_ends(net, shape, radix)
    uniq, n_cables = np.unique(ra * routers + rb, return_counts=True)
    ua, ub = uniq // routers, uniq % routers
    m = ua.shape[0]
    ids = cabling.add_cables(base + ua, base + ub, n_cables, port_bw_GBps)
    # Both directions, sorted by (source group, target group) with the same position in
    # their pair for both directions.
    d_src = np.concatenate([ua, ub])
    d_dst = np.concatenate([ub, ua])
    rank_in = np.concatenate([np.arange(m), np.arange(m)])
    pair_key = (d_src // per) * groups + d_dst // per
    order = np.lexsort((rank_in, pair_key))
    src, dst = d_src[order], d_dst[order]
    own[src, dst // per] = np.arange(src.shape[0])
    return _GlobalBundles(
        src=src,
        dst=dst,
        link=np.concatenate([ids, ids + m])[order],
        cables=np.concatenate([n_cables, n_cables])[order].astype(np.int64),
        pair_start=np.searchsorted(pair_key[order], np.arange(groups * groups + 1)),
        own=own,
        fewest=fewest,
    )


def build_dragonfly(
    net: NetSpec,
    nodes: int,
    nic_devs: IntArray,
    nic_bw_GBps: float,
    ports: int,
    port_bw_GBps: float,
    radix: int,
    base: int,
) -> NetworkBlock[Dragonfly]:
    """Routers, local and global bundles of a dragonfly (arguments as ``build_network``).

    NICs (node-major) fill the routers in order, ``radix / 4`` terminal ports each (spread
    evenly when the spec sets groups or routers), so the last routers may stay empty.
    Local bundles are one cable.
    Global cables follow the consecutive arrangement (module docstring); cables between
    the same two routers form one bundle. Link order: NIC -> router, router -> NIC, then
    each local bundle's two directions, then each global bundle's.
    """
    nic_flat = nic_devs.reshape(-1)
    n_nics = nic_flat.shape[0]
    shape = _checked_shape(net, nodes, n_nics, ports, radix)
    router_of_nic = np.arange(n_nics, dtype=np.int64) // shape.nics_per_router
    cabling = Cabling()
    nic_link = cabling.add(
        nic_flat, base + router_of_nic, np.full(n_nics, nic_bw_GBps), np.full(n_nics, ports)
    )
    local = _local_bundles(shape, base, port_bw_GBps, cabling)
    bundles = _global_bundles(net, shape, radix, base, port_bw_GBps, cabling)
    table = Dragonfly(
        router_of_nic=router_of_nic,
        nic_link=nic_link,
        routers_per_group=shape.routers_per_group,
        local=local,
        global_src=bundles.src,
        global_dst=bundles.dst,
        global_link=bundles.link,
        global_count=bundles.cables,
        pair_start=bundles.pair_start.astype(np.int64),
        own=bundles.own,
        global_cables=bundles.fewest,
    )
    plan = (
        ("switch ports", f"{radix} at the NIC rate"),
        ("groups", f"{shape.groups} of {shape.routers_per_group} routers"),
        (
            "global cables per group pair",
            f"{bundles.fewest} or more, over every router of a group",
        ),
    )
    routers = shape.routers
    return cabling.block(
        kind=[int(DeviceKind.ROUTER)] * routers, index=list(range(routers)), tree=table, plan=plan
    )
