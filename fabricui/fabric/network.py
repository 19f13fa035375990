"""The network: one switch, a fat-tree of two or three tiers, a dragonfly, or a torus.

Fat-trees are radix-true: leaf, spine and core counts follow from the switch radix (in
ports of the NIC rate, so a 64 x 800G switch takes 128 x 400G NICs) and the requested
oversubscription, cables are whole numbers, and a two-tier fabric that outgrows its radix
becomes three-tier. Rail-optimized wiring follows the reference architectures: one leaf per
rail per *scalable unit* (SU), the nodes one leaf's down ports hold. Three tiers group
leafs into pods (whole SUs), each with its own spines; spine ``i`` of every pod connects to
the cores of plane ``i``. A spec asking for what the switches cannot build (more ports than
a switch has, more pods than a core has ports) is a one-line ``EngineError``. Besides
device and link tables the builder returns a ``FatTree`` (the regular structure the
vectorized router uses to spread flows over equal-cost routes without enumerating them)
and the figures it chose (``NetworkBlock.plan``).

A dragonfly (Kim et al., ISCA 2008) has groups of routers, all-to-all inside a group by
one local cable per router pair, and global cables between groups spread over *all*
routers of a group: global port ``q`` of a group (router ``q // h``, ``h`` global ports per
router) leads to the group ``(q mod (groups - 1)) + 1`` ahead, the consecutive arrangement
of Camarero et al. (ACM TACO 2014), so every router holds global cables and every group
pair gets ``a * h / (groups - 1)`` of them. NICs fill the routers' terminal ports in
node-major order. Its ``Dragonfly`` table gives minimal routes (the router's own cable to
the target group when it has one); adaptive routing (UGAL: minimal or Valiant through an
intermediate group, whichever is less loaded) is priced by the bulk router.

A torus wires chips directly (TPU ICI): ring links along each of up to three dimensions,
dimension-order routing (x, then y, then z), the shorter way around each ring (ties go the
positive way). Hosts occupy blocks of the torus (a TPU v5p host's 4 chips are a 2 x 2 x 1
block), so a host's chips are neighbours. Its ``Torus`` table holds each chip's position
and outgoing link per dimension and direction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.kinds import DeviceKind
from fabricui.model import NetSpec

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class FatTree:
    """Regular leaf/spine(/core) structure; link ids are local to the network block.

    A flow from leaf ``a`` to leaf ``b`` climbs to the lowest common tier: nothing above
    the leaf when ``a == b``; the pod's spines when both are in one pod; the cores otherwise.
    At each tier it spreads evenly over every uplink, as adaptive routing does.
    """

    leaf_of_nic: IntArray
    """(nodes * nics_per_node,) leaf of each NIC, NICs in node-major order."""
    nic_link: IntArray
    """(nodes * nics_per_node,) link id NIC -> leaf (the reverse is ``+ n_nics``)."""
    pod_of_leaf: IntArray
    """(leafs,) pod of each leaf (all 0 without pods)."""
    leaf_up: IntArray
    """(leafs, spines_per_pod) links leaf -> spine (plane) of its pod (empty without
    spines)."""
    leaf_down: IntArray
    """(leafs, spines_per_pod) links spine -> leaf."""
    spine_up: IntArray
    """(pods, spines_per_pod, cores_per_plane) links spine -> core of its plane (empty
    without cores)."""
    spine_down: IntArray
    """(pods, spines_per_pod, cores_per_plane) links core -> spine."""
    direct: IntArray
    """(leafs, leafs) link leaf -> leaf when leafs are joined without spines, else empty."""


def _shift(ids: IntArray, offset: int) -> IntArray:
    """Link ids made absolute (``-1`` gaps kept)."""
    return np.where(ids >= 0, ids + offset, ids)


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
            nic_link=_shift(self.nic_link, offset),
            local=_shift(self.local, offset),
            global_link=_shift(self.global_link, offset),
        )


@dataclass(frozen=True)
class Torus:
    """Chips in a torus of up to three rings; link ids local to the network block until
    ``shifted``.

    Hosts hold blocks of ``block`` chips: host ``h`` sits at block ``(h % HX, (h // HX) %
    HY, h // (HX * HY))`` of the host grid ``(X / bx, Y / by, Z / bz)`` and its chip ``c``
    at ``(c % bx, (c // bx) % by, c // (bx * by))`` inside the block; ``pos`` holds every
    chip's coordinates.
    """

    dims: tuple[int, int, int]
    """Ring sizes (X, Y, Z); 1 for an absent dimension."""
    out: IntArray
    """(chips, 3, 2) link chip -> its +1 (``[..., 0]``) and -1 (``[..., 1]``) neighbour
    along each dimension; both the same link when the ring has two chips, -1 when one."""
    pos: IntArray
    """(chips, 3) coordinates of every chip (global rank)."""
    rank_at: IntArray
    """(X * Y * Z,) chip at ``x + X * (y + Y * z)``."""
    block: tuple[int, int, int] = (1, 1, 1)
    """Chips of one host along each dimension."""
    wrap: tuple[bool, bool, bool] = (True, True, True)
    """Whether each dimension's ring wraps around (False: a line, as a TPU slice smaller
    than a whole cube is a mesh)."""

    def hops_along(self, axis: int) -> int:
        """Most hops a route takes along ``axis``: half the ring, or the whole line."""
        size = self.dims[axis]
        return size // 2 if self.wrap[axis] else size - 1

    @property
    def width(self) -> int:
        """Most hops of any route: ``X//2 + Y//2 + Z//2`` on rings, ``size - 1`` along a
        line (at least 1)."""
        return max(1, sum(self.hops_along(d) for d in range(3)))

    def neighbour(self, ranks: npt.ArrayLike, axis: int, step: int) -> IntArray:
        """Rank of each chip's neighbour ``step`` chips along ``axis`` (wrapping)."""
        r = np.asarray(ranks, dtype=np.int64)
        p = self.pos[r].copy()
        p[:, axis] = (p[:, axis] + step) % self.dims[axis]
        x, y, z = self.dims
        return self.rank_at[p[:, 0] + x * (p[:, 1] + y * p[:, 2])]

    def paths(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
        """(n, width) links of the dimension-order route of each chip pair, -1 padded.

        Along each dimension (x, y, z in turn) the route takes the shorter way around the
        ring, the positive way on a tie (along a line without wrap-around, the only way);
        column block ``d`` holds dimension ``d``'s hops.
        """
        a = np.asarray(src, dtype=np.int64).reshape(-1)
        b = np.asarray(dst, dtype=np.int64).reshape(-1)
        out = np.full((a.shape[0], self.width), -1, dtype=np.int64)
        cur = self.pos[a].copy()
        goal = self.pos[b]
        x_size, y_size, _ = self.dims
        col = 0
        for d, size in enumerate(self.dims):
            if size > 1:
                ahead = (goal[:, d] - cur[:, d]) % size
                plus = ahead <= size // 2 if self.wrap[d] else goal[:, d] >= cur[:, d]
                steps = np.where(plus, ahead, size - ahead)
                direction = np.where(plus, 0, 1)
                step = np.where(plus, 1, -1)
                for k in range(self.hops_along(d)):
                    idx = np.flatnonzero(steps > k)
                    if not idx.size:
                        break
                    here = self.rank_at[cur[idx, 0] + x_size * (cur[idx, 1] + y_size * cur[idx, 2])]
                    out[idx, col + k] = self.out[here, d, direction[idx]]
                    cur[idx, d] = (cur[idx, d] + step[idx]) % size
                col += self.hops_along(d)
        return out

    def shifted(self, offset: int) -> Torus:
        """The same structure with link ids made absolute."""
        return replace(self, out=_shift(self.out, offset))


@dataclass
class NetworkBlock:
    """Switch devices (ids local to the block) and links (absolute device ids)."""

    kind: list[int]
    index: list[int]
    src: IntArray
    dst: IntArray
    bw_GBps: npt.NDArray[np.float64]
    count: IntArray
    tree: FatTree | Dragonfly | Torus
    plan: tuple[tuple[str, str], ...] = ()
    """What was built, as (figure, value) pairs (tiers, switch counts, cables, built
    oversubscription)."""
    axis: IntArray | None = None
    """Torus only: (n_links,) the dimension (0, 1, 2) of each link."""


@dataclass
class _Cabling:
    """Directed links of a network block under construction, ids in the order added: each
    call adds bundles ``a -> b``, then the same bundles ``b -> a``, so a bundle's reverse
    link is its id plus the number of bundles added with it."""

    src: list[IntArray] = field(default_factory=list)
    dst: list[IntArray] = field(default_factory=list)
    bw_GBps: list[npt.NDArray[np.float64]] = field(default_factory=list)
    count: list[IntArray] = field(default_factory=list)
    n_links: int = 0
    """Links added so far (the id of the next one)."""

    def add(
        self, a: IntArray, b: IntArray, bw_GBps: npt.NDArray[np.float64], count: IntArray
    ) -> IntArray:
        """Add bundles ``a[i] <-> b[i]`` of ``bw_GBps[i]`` per direction [GB/s] made of
        ``count[i]`` parallel links; returns the (n,) link ids ``a -> b``."""
        n = a.shape[0]
        ids = self.n_links + np.arange(n, dtype=np.int64)
        self.src += [a, b]
        self.dst += [b, a]
        self.bw_GBps.append(np.concatenate([bw_GBps, bw_GBps]))
        self.count.append(np.concatenate([count, count]))
        self.n_links += 2 * n
        return ids

    def add_cables(
        self, a: IntArray, b: IntArray, cables: npt.ArrayLike, cable_bw_GBps: float
    ) -> IntArray:
        """Add bundles ``a[i] <-> b[i]`` of ``cables[i]`` whole cables of ``cable_bw_GBps``
        each; returns the link ids ``a -> b``."""
        whole = np.asarray(cables, dtype=np.int64)
        return self.add(a, b, np.multiply(whole, cable_bw_GBps, dtype=np.float64), whole)

    def block(
        self,
        kind: list[int],
        index: list[int],
        tree: FatTree | Dragonfly | Torus,
        plan: tuple[tuple[str, str], ...],
    ) -> NetworkBlock:
        """The network block of these links and the given switches."""
        return NetworkBlock(
            kind=kind,
            index=index,
            src=np.concatenate(self.src).astype(np.int64),
            dst=np.concatenate(self.dst).astype(np.int64),
            bw_GBps=np.concatenate(self.bw_GBps).astype(np.float64),
            count=np.concatenate(self.count).astype(np.int64),
            tree=tree,
            plan=plan,
        )


#: Most switch-to-switch bundles a network may have (its link arrays hold two links each).
MAX_BUNDLES = 2**24


def _check_bundles(count: int, what: str) -> None:
    """Raise EngineError when a layout asks for more than ``MAX_BUNDLES`` bundles."""
    if count > MAX_BUNDLES:
        raise EngineError(f"{what} = {count} switch-to-switch bundles exceeds {MAX_BUNDLES}")


def effective_radix(radix: int, switch_port_Gbps: float, nic_port_Gbps: float) -> int:
    """Ports of the NIC rate one switch offers: each switch port splits into as many NIC-rate
    ports as fit (a 64 x 800G switch is 128 x 400G with breakout cables)."""
    if nic_port_Gbps <= 0 or switch_port_Gbps <= nic_port_Gbps:
        return radix
    return radix * int(switch_port_Gbps // nic_port_Gbps)


def _split_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """(down, up) ports of a switch for a down:up capacity ratio, whole ports, at least one
    of each."""
    down = max(1, int(radix * oversubscription / (1 + oversubscription)))
    up = max(1, math.ceil(down / oversubscription))
    while down + up > radix and down > 1:
        down -= 1
        up = max(1, math.ceil(down / oversubscription))
    return down, up


def _spread(total: int, parts: int) -> IntArray:
    """``total`` cables over ``parts`` bundles as evenly as whole cables allow."""
    base, extra = divmod(total, parts)
    return base + (np.arange(parts) < extra).astype(np.int64)


def _smallest_divisor(n: int, at_least: float) -> int | None:
    """Smallest divisor of ``n`` not below ``at_least`` (None when ``at_least > n``)."""
    for d in range(max(1, math.ceil(at_least)), n + 1):
        if n % d == 0:
            return d
    return None


@dataclass(frozen=True)
class _LeafPlan:
    """Leaf assignment and port split of a fat-tree."""

    layout: str
    assign: IntArray
    leafs: int
    up: int
    used: IntArray
    per_su: int = 0
    """Nodes of one rail-optimized scalable unit (0: not rail-optimized by SU)."""


def _plan_leafs(net: NetSpec, nodes: int, n_nic: int, ports: int, radix: int) -> _LeafPlan:
    """Leafs of a fat-tree: one per rail per scalable unit (rail-optimized), or whole nodes
    per leaf; each leaf's uplinks sized for the oversubscription asked.

    Raises:
        EngineError: A switch cannot hold the ports asked for.
    """
    total = nodes * n_nic * ports
    layout = net.layout
    if layout == "auto":
        layout = "single" if total <= radix and net.leafs in (None, 1) else "leaf-spine"
    if layout == "single":
        if total > radix:
            raise EngineError(
                f"net.layout single: {total} NIC ports exceed one {radix}-port switch "
                "(use leaf-spine or auto)"
            )
        assign = np.zeros((nodes, n_nic), dtype=np.int64)
        return _LeafPlan(layout, assign, 1, 0, np.array([total]))
    o = net.oversubscription
    down, up_full = _split_ports(radix, o)
    node_ids, nic_ids = np.arange(nodes)[:, None], np.arange(n_nic)[None, :]
    if net.leafs is not None:
        leafs = net.leafs
        rails = n_nic if net.rail_optimized else 1
        if net.rail_optimized and leafs >= rails:
            per_rail = leafs // rails
            assign = nic_ids * per_rail + (node_ids * per_rail) // nodes
        elif net.rail_optimized:
            assign = (nic_ids * leafs) // rails + 0 * node_ids
        else:
            assign = (node_ids * leafs) // nodes + 0 * nic_ids
        used = np.bincount(assign.reshape(-1), minlength=leafs) * ports
        up = math.ceil(int(used.max()) / o) if leafs > 1 else 0
        if int(used.max()) + up > radix:
            need = math.ceil(total / down)
            raise EngineError(
                f"net.leafs: {leafs} leaf switches of {radix} ports cannot hold {total} NIC "
                f"ports with their uplinks (oversubscription {o:g}; at least {need} leafs)"
            )
        return _LeafPlan(layout, assign.astype(np.int64), leafs, up, used)
    if ports > down:
        raise EngineError(
            f"a NIC's {ports} ports exceed a leaf's {down} down ports (radix {radix})"
        )
    if net.rail_optimized:
        per_su = max(1, down // ports)  # nodes of one scalable unit: one leaf per rail
        assign = (node_ids // per_su) * n_nic + nic_ids
        leafs = math.ceil(nodes / per_su) * n_nic
    else:
        per_leaf = down // (n_nic * ports)
        if per_leaf < 1:
            raise EngineError(
                f"a node's {n_nic * ports} NIC ports exceed a leaf's {down} down ports "
                f"(radix {radix}); use rail_optimized: true"
            )
        assign = node_ids // per_leaf + 0 * nic_ids
        leafs = math.ceil(nodes / per_leaf)
    used = np.bincount(assign.reshape(-1), minlength=leafs) * ports
    # Leafs are cabled for a full scalable unit; a cluster smaller than one SU cables what
    # its leafs use.
    up = up_full if int(used.max()) >= down else math.ceil(int(used.max()) / o)
    per_su = max(1, down // ports) if net.rail_optimized else 0
    return _LeafPlan(layout, assign.astype(np.int64), leafs, up if leafs > 1 else 0, used, per_su)


def _su_plan(per_su: int, nodes: int, hosts_per_domain: int) -> tuple[str, str] | None:
    """The plan line of a rail-optimized scalable unit whose nodes are hosts of multi-host
    scale-up domains (NVL72 trays): whole domains, or which domains straddle two SUs."""
    if per_su <= 0 or hosts_per_domain <= 1 or nodes <= per_su:
        return None
    if per_su % hosts_per_domain == 0:
        domains = per_su // hosts_per_domain
        return ("scalable unit", f"{per_su} nodes = {domains} whole domains of {hosts_per_domain}")
    split = sorted(
        {
            d
            for start in range(per_su, nodes, per_su)
            for d in (start // hosts_per_domain,)
            if start % hosts_per_domain
        }
    )
    shown = ", ".join(f"d{d}" for d in split[:4]) + (", ..." if len(split) > 4 else "")
    return (
        "scalable unit",
        f"{per_su} nodes, not whole domains of {hosts_per_domain}: {len(split)} domain"
        f"{'s' if len(split) != 1 else ''} ({shown}) straddle two SUs' leafs",
    )


@dataclass(frozen=True)
class _LeafUplinks:
    """A leaf's uplinks as cables at the switch's own port rate: a 64 x 800G leaf serving
    400G NICs over breakout ports has 32 800G uplinks, not 64 400G ones."""

    cables: int
    """Uplink cables of each leaf (switch ports at the switch's own rate)."""
    nic_ports_per_cable: int
    """NIC-rate ports one switch port holds (1 without breakout)."""
    switch_ports: int
    """Ports of one switch at its own rate."""
    cable_bw_GBps: float
    """Bandwidth of one switch-to-switch cable per direction [GB/s]."""

    @property
    def label(self) -> str:
        """The leafs' plan line part on their uplinks (``32 up ports of 800 Gb/s``)."""
        if self.nic_ports_per_cable == 1:
            return f"{self.cables} up ports"
        return f"{self.cables} up ports of {self.cable_bw_GBps * 8:g} Gb/s"


def _leaf_uplinks(
    up_nic_ports: int, radix: int, port_bw_GBps: float, cable_ports: int
) -> _LeafUplinks:
    """The uplinks of a leaf sized for ``up_nic_ports`` NIC-rate ports, in whole cables of
    ``cable_ports`` NIC-rate ports each (``build_network``'s arguments)."""
    split = max(1, cable_ports)
    return _LeafUplinks(-(-up_nic_ports // split), split, radix // split, port_bw_GBps * split)


@dataclass(frozen=True)
class _Tiering:
    """What the tiers above a fat-tree's leafs are sized and cabled from."""

    net: NetSpec
    nodes: int
    nics_per_node: int
    radix: int
    """Ports per switch at the NIC port rate."""
    base: int
    """Absolute id of the first switch device (leaf 0)."""
    leaf_plan: _LeafPlan
    uplinks: _LeafUplinks

    @property
    def leafs(self) -> int:
        """Number of leafs."""
        return self.leaf_plan.leafs

    @property
    def down_used(self) -> int:
        """Most down ports (NIC rate) any leaf uses."""
        return int(self.leaf_plan.used.max())

    def leaf_line(self) -> tuple[str, str]:
        """The plan line of the leafs under spines."""
        return ("leafs", f"{self.leafs}, {self.down_used} down / {self.uplinks.label}")


def _no_links(dims: int) -> IntArray:
    """An empty link table of ``dims`` dimensions (a tier the fabric does not have)."""
    return np.zeros((0,) * dims, dtype=np.int64)


@dataclass(frozen=True)
class _UpperTiers:
    """What the tiers above the leafs add: their switches, the fat-tree tables of their
    cables (link ids local to the network block) and the plan lines."""

    kind: list[int]
    index: list[int]
    plan: list[tuple[str, str]]
    pod_of_leaf: IntArray
    leaf_up: IntArray = field(default_factory=lambda: _no_links(2))
    leaf_down: IntArray = field(default_factory=lambda: _no_links(2))
    spine_up: IntArray = field(default_factory=lambda: _no_links(3))
    spine_down: IntArray = field(default_factory=lambda: _no_links(3))
    direct: IntArray = field(default_factory=lambda: _no_links(2))


def _one_pod(t: _Tiering) -> IntArray:
    """Pod of every leaf when there are no pods (all 0)."""
    return np.zeros(t.leafs, dtype=np.int64)


def _join_leafs_directly(t: _Tiering, cabling: _Cabling) -> _UpperTiers:
    """``spines: 0``: every pair of leafs cabled directly, the uplinks shared evenly.

    Raises:
        EngineError: A leaf has fewer uplinks than there are other leafs, or the pairs
            need more than ``MAX_BUNDLES`` bundles.
    """
    leafs, up = t.leafs, t.uplinks.cables
    if leafs - 1 > up:
        raise EngineError(
            f"net.spines 0: {leafs} leafs joined directly need {leafs - 1} uplinks each, "
            f"they have {up} (radix {t.radix})"
        )
    _check_bundles(leafs * (leafs - 1) // 2, f"{leafs} leafs joined directly")
    per_pair = up // (leafs - 1)
    ia, ib = np.triu_indices(leafs, 1)
    ab = cabling.add_cables(
        t.base + ia, t.base + ib, np.full(ia.shape[0], per_pair), t.uplinks.cable_bw_GBps
    )
    direct = np.full((leafs, leafs), -1, dtype=np.int64)
    direct[ia, ib] = ab
    direct[ib, ia] = ab + ia.shape[0]
    plan = [("leafs", f"{leafs}, joined directly, {per_pair} cables per pair")]
    return _UpperTiers([], [], plan, _one_pod(t), direct=direct)


def _two_tier_spines(t: _Tiering) -> int | None:
    """Spines of a two-tier fat-tree: the spec's, else the fewest that split the leafs'
    uplinks evenly and have ports for every leaf; None: three tiers (asked for, or two
    cannot hold the leafs)."""
    if t.leaf_plan.layout == "three-tier":
        return None
    if t.net.spines is not None:
        return t.net.spines
    up = t.uplinks.cables
    return _smallest_divisor(up, t.leafs * up / t.uplinks.switch_ports)


def _two_tiers(t: _Tiering, spines: int, cabling: _Cabling) -> _UpperTiers:
    """Spines above the leafs, every leaf's uplinks spread over all of them.

    Raises:
        EngineError: A spine would get no cable from a leaf, or has too few ports.
    """
    leafs, up, switch_ports = t.leafs, t.uplinks.cables, t.uplinks.switch_ports
    cables = _spread(up, spines)
    if int(cables.min()) < 1:
        raise EngineError(
            f"net.spines: {spines} spines need at least one uplink each from every "
            f"leaf; leafs have {up} (radix {t.radix})"
        )
    if leafs * int(cables.max()) > switch_ports:
        raise EngineError(
            f"net.spines: {spines} spines of {switch_ports} ports cannot take "
            f"{leafs} leafs x {up} uplinks (use more spines, or layout three-tier)"
        )
    _check_bundles(leafs * spines, f"{leafs} leafs x {spines} spines")
    leaf = np.repeat(np.arange(leafs), spines)
    spine = np.tile(np.arange(spines), leafs)
    ids = cabling.add_cables(
        t.base + leaf, t.base + leafs + spine, cables[spine], t.uplinks.cable_bw_GBps
    )
    per = "x".join(sorted({str(int(c)) for c in cables}))
    plan = [
        ("tiers", "2 (leaf, spine)"),
        t.leaf_line(),
        ("spines", f"{spines}, {per} cables from each leaf"),
    ]
    return _UpperTiers(
        kind=[int(DeviceKind.SPINE)] * spines,
        index=list(range(spines)),
        plan=plan,
        pod_of_leaf=_one_pod(t),
        leaf_up=ids.reshape(leafs, spines),
        leaf_down=(ids + leaf.shape[0]).reshape(leafs, spines),
    )


@dataclass(frozen=True)
class _Pods:
    """The pods of a three-tier fat-tree: whole scalable units of leafs under their own
    spines; spine ``i`` of every pod joins the cores of plane ``i``."""

    count: int
    """Number of pods."""
    leafs_per_pod: int
    spines_per_pod: int
    leaf_cables: IntArray
    """(spines_per_pod,) cables from each leaf to spine ``i`` of its pod."""
    spine_down_ports: int
    """Down ports each spine uses."""
    spine_up_ports: int
    """Up ports of each spine, to the cores of its plane."""
    cores_per_plane: int
    core_cables: int
    """Cables from each spine to each core of its plane."""

    @property
    def spines(self) -> int:
        """Spines of all pods."""
        return self.count * self.spines_per_pod

    @property
    def cores(self) -> int:
        """Cores of all planes."""
        return self.spines_per_pod * self.cores_per_plane


def _size_pods(t: _Tiering) -> _Pods:
    """Pods, spines and cores of a three-tier fat-tree: one spine per leaf uplink unless
    the spec sets the spines, as many leafs per pod as a spine's down ports take, the
    spines' uplinks split evenly over the fewest cores per plane that can join every pod.

    Raises:
        EngineError: Spines a leaf cannot reach, more pods than a core has ports for, or
            too many bundles.
    """
    net, leafs, up = t.net, t.leafs, t.uplinks.cables
    switch_ports = t.uplinks.switch_ports
    spine_o = net.spine_oversubscription
    spine_ports_down, spine_up_full = _split_ports(switch_ports, spine_o)
    rails = t.nics_per_node if net.rail_optimized else 1
    if net.spines is not None:
        spines_per_pod = net.spines
        leaf_cables = _spread(up, spines_per_pod)
        if int(leaf_cables.min()) < 1:
            raise EngineError(
                f"net.spines: {spines_per_pod} spines per pod need an uplink each "
                f"from every leaf; leafs have {up}"
            )
    else:
        spines_per_pod = up
        leaf_cables = np.ones(up, dtype=np.int64)
    leafs_per_pod = max(1, spine_ports_down // int(leaf_cables.max()))
    if net.rail_optimized and leafs_per_pod >= rails:
        leafs_per_pod = (leafs_per_pod // rails) * rails  # whole scalable units
    pods = math.ceil(leafs / leafs_per_pod)
    spine_down_used = min(leafs, leafs_per_pod) * int(leaf_cables.max())
    spine_uplinks = (
        spine_up_full
        if spine_down_used >= spine_ports_down
        else math.ceil(spine_down_used / spine_o)
    )
    cores_per_plane = _smallest_divisor(spine_uplinks, pods * spine_uplinks / switch_ports)
    if cores_per_plane is None:
        most = t.radix // 2 * (switch_ports // 2) * switch_ports
        raise EngineError(
            f"{t.nodes} nodes need {pods} pods, more than a {switch_ports}-port core switch "
            f"can join: a three-tier fat-tree of this radix holds about {most} "
            f"ports (use oversubscription, a higher-radix switch, or fewer nodes)"
        )
    sized = _Pods(
        count=pods,
        leafs_per_pod=leafs_per_pod,
        spines_per_pod=spines_per_pod,
        leaf_cables=leaf_cables,
        spine_down_ports=spine_down_used,
        spine_up_ports=spine_uplinks,
        cores_per_plane=cores_per_plane,
        core_cables=spine_uplinks // cores_per_plane,
    )
    _check_bundles(leafs * spines_per_pod, f"{leafs} leafs x {spines_per_pod} spines")
    _check_bundles(sized.spines * cores_per_plane, f"{sized.spines} spines x cores")
    return sized


def _three_tier_plan(t: _Tiering, pods: _Pods) -> list[tuple[str, str]]:
    """The plan lines of a three-tier fat-tree (and why it has three tiers)."""
    switch_ports = t.uplinks.switch_ports
    why = (
        ""
        if t.leaf_plan.layout == "three-tier"
        else f": two tiers hold {switch_ports * (t.radix // 2)} ports"
    )
    return [
        ("tiers", "3 (leaf, spine, core)" + why),
        t.leaf_line(),
        ("pods", f"{pods.count} of {pods.leafs_per_pod} leafs"),
        (
            "spines",
            f"{pods.spines} ({pods.spines_per_pod} per pod), {pods.spine_down_ports} "
            f"down / {pods.spine_up_ports} up ports",
        ),
        (
            "cores",
            f"{pods.cores} ({pods.cores_per_plane} per plane), {pods.core_cables} cables "
            "from each spine",
        ),
        ("spine oversubscription", f"{pods.spine_down_ports / pods.spine_up_ports:.2f}"),
    ]


def _three_tiers(t: _Tiering, cabling: _Cabling) -> _UpperTiers:
    """Pods of leafs under their own spines, and the cores joining the pods.

    Raises:
        EngineError: The switches cannot build it (``_size_pods``).
    """
    pods = _size_pods(t)
    leafs, per_pod, per_plane = t.leafs, pods.spines_per_pod, pods.cores_per_plane
    first_spine = t.base + leafs
    first_core = first_spine + pods.spines
    pod_of_leaf = np.arange(leafs, dtype=np.int64) // pods.leafs_per_pod
    leaf = np.repeat(np.arange(leafs), per_pod)
    plane = np.tile(np.arange(per_pod), leafs)
    spine_of = pod_of_leaf[leaf] * per_pod + plane
    up_ids = cabling.add_cables(
        t.base + leaf, first_spine + spine_of, pods.leaf_cables[plane], t.uplinks.cable_bw_GBps
    )
    spine = np.repeat(np.arange(pods.spines), per_plane)
    core = (spine % per_pod) * per_plane + np.tile(np.arange(per_plane), pods.spines)
    core_ids = cabling.add_cables(
        first_spine + spine,
        first_core + core,
        np.full(spine.shape[0], pods.core_cables),
        t.uplinks.cable_bw_GBps,
    )
    return _UpperTiers(
        kind=[int(DeviceKind.SPINE)] * pods.spines + [int(DeviceKind.CORE)] * pods.cores,
        index=list(range(pods.spines)) + list(range(pods.cores)),
        plan=_three_tier_plan(t, pods),
        pod_of_leaf=pod_of_leaf,
        leaf_up=up_ids.reshape(leafs, per_pod),
        leaf_down=(up_ids + leaf.shape[0]).reshape(leafs, per_pod),
        spine_up=core_ids.reshape(pods.count, per_pod, per_plane),
        spine_down=(core_ids + spine.shape[0]).reshape(pods.count, per_pod, per_plane),
    )


def _upper_tiers(t: _Tiering, cabling: _Cabling, hosts_per_domain: int) -> _UpperTiers:
    """The tiers above the leafs (none for one leaf), with the leafs' closing plan lines:
    their built oversubscription and how scalable units meet scale-up domains."""
    if t.leafs <= 1:
        return _UpperTiers([], [], [("switches", "1")], _one_pod(t))
    if t.net.spines == 0:
        tiers = _join_leafs_directly(t, cabling)
    else:
        spines = _two_tier_spines(t)
        tiers = _two_tiers(t, spines, cabling) if spines is not None else _three_tiers(t, cabling)
    up_nic_ports = t.uplinks.cables * t.uplinks.nic_ports_per_cable
    tiers.plan.append(("leaf oversubscription", f"{t.down_used / max(up_nic_ports, 1):.2f}"))
    su = _su_plan(t.leaf_plan.per_su, t.nodes, hosts_per_domain)
    if su is not None:
        tiers.plan.append(su)
    return tiers


def build_network(
    net: NetSpec,
    nodes: int,
    nic_devs: IntArray,
    nic_bw_GBps: float,
    ports: int,
    port_bw_GBps: float,
    radix: int,
    base: int,
    hosts_per_domain: int = 1,
    cable_ports: int = 1,
) -> NetworkBlock:
    """Switches and cables above the NICs.

    Args:
        net: The network spec.
        nodes: Number of nodes.
        nic_devs: (nodes, nics_per_node) absolute device ids of the NICs.
        nic_bw_GBps: Bandwidth of one NIC device (all its ports) [GB/s].
        ports: Switch ports one NIC device uses.
        port_bw_GBps: Bandwidth of one port (and of one switch-to-switch cable) [GB/s].
        radix: Ports per switch at the NIC port rate (``effective_radix``).
        base: Absolute id of the first switch device.
        hosts_per_domain: Hosts (nodes) of one scale-up domain, for the plan to say when
            a rail-optimized scalable unit splits domains.
        cable_ports: NIC-rate ports one switch port holds (a 800G port split into two
            400G NIC ports: 2); switch-to-switch cables run at the full switch port rate.

    Returns:
        The network block.

    Raises:
        EngineError: A layout the switches cannot build (one line naming what is missing).
    """
    if net.layout == "dragonfly":
        return build_dragonfly(net, nodes, nic_devs, nic_bw_GBps, ports, port_bw_GBps, radix, base)
    if net.layout not in ("auto", "single", "leaf-spine", "three-tier"):
        raise EngineError(f"unknown network layout {net.layout!r}")
    nics_per_node = nic_devs.shape[1]
    leaf_plan = _plan_leafs(net, nodes, nics_per_node, ports, radix)
    leaf_of_nic = leaf_plan.assign.reshape(-1)
    nic_flat = nic_devs.reshape(-1)
    n_nics = nic_flat.shape[0]
    cabling = _Cabling()
    nic_link = cabling.add(
        nic_flat, base + leaf_of_nic, np.full(n_nics, nic_bw_GBps), np.full(n_nics, ports)
    )
    uplinks = _leaf_uplinks(leaf_plan.up, radix, port_bw_GBps, cable_ports)
    tiering = _Tiering(net, nodes, nics_per_node, radix, base, leaf_plan, uplinks)
    tiers = _upper_tiers(tiering, cabling, hosts_per_domain)
    tree = FatTree(
        leaf_of_nic=leaf_of_nic,
        nic_link=nic_link,
        pod_of_leaf=tiers.pod_of_leaf,
        leaf_up=tiers.leaf_up,
        leaf_down=tiers.leaf_down,
        spine_up=tiers.spine_up,
        spine_down=tiers.spine_down,
        direct=tiers.direct,
    )
    leafs = leaf_plan.leafs
    return cabling.block(
        kind=[int(DeviceKind.LEAF)] * leafs + tiers.kind,
        index=list(range(leafs)) + tiers.index,
        tree=tree,
        plan=(("switch ports", f"{radix} at the NIC rate"), *tiers.plan),
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
    _check_bundles(
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


def _local_bundles(
    shape: _DragonflyShape, base: int, port_bw_GBps: float, cabling: _Cabling
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
    cabling: _Cabling,
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
) -> NetworkBlock:
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
    shape = _dragonfly_shape(net, nodes, n_nics, ports, radix)
    router_of_nic = np.arange(n_nics, dtype=np.int64) // shape.nics_per_router
    cabling = _Cabling()
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


def default_host_block(chips_per_host: int, max_dims: int = 3) -> tuple[int, int, int]:
    """Chips of one host as a torus block: 4 -> 2 x 2 x 1 (TPU v4/v5p hosts), 8 -> 2 x 2 x 2
    (2 x 4 x 1 on a 2D torus: a TPU v6e host), 2 -> 2 x 1 x 1; other counts a line along x."""
    if chips_per_host == 8 and max_dims < 3:
        return (2, 4, 1)
    return {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 2, 1), 8: (2, 2, 2)}.get(
        chips_per_host, (chips_per_host, 1, 1)
    )


def torus_shape(
    chips: int, block: tuple[int, int, int] = (1, 1, 1), max_dims: int = 3
) -> tuple[int, int, int]:
    """The most cube-like (X, Y, Z) with ``X * Y * Z == chips`` whose sides are multiples
    of the host block's (smallest ``X + Y + Z``, hence smallest diameter) and with at most
    ``max_dims`` sides above 1 (a chip with 4 ports makes a 2D torus); without such a
    shape, the most cube-like of any."""
    best: tuple[int, int, int] | None = None
    x = 1
    while x <= chips:
        if chips % x == 0:
            rest = chips // x
            y = 1
            while y <= rest:
                if rest % y == 0:
                    shape = (x, y, rest // y)
                    fits = all(s % b == 0 for s, b in zip(shape, block))
                    fits = fits and sum(s > 1 for s in shape) <= max_dims
                    if fits and (best is None or (sum(shape), shape) < (sum(best), best)):
                        best = shape
                y += 1
        x += 1
    if best is None:
        if block != (1, 1, 1):
            return torus_shape(chips, max_dims=max_dims)
        return (1, 1, chips) if max_dims >= 1 else (1, 1, chips)
    return best


def torus_dims(
    net: NetSpec, chips: int, block: tuple[int, int, int] = (1, 1, 1), max_dims: int = 3
) -> tuple[int, int, int]:
    """(X, Y, Z) of a torus: the spec's (padded with 1s) or the derived shape (at most
    ``max_dims`` dimensions).

    Raises:
        EngineError: The spec's shape does not hold exactly ``chips`` chips.
    """
    if net.torus is None:
        shape = torus_shape(chips, block, max_dims)
        # A 2D shape lies in x and y (2 x 4 hosts of a TPU v6e), not in y and z.
        if max_dims == 2 and shape[0] == 1:
            shape = (shape[1], shape[2], 1)
        return shape
    dims = [int(d) for d in net.torus] + [1] * (3 - len(net.torus))
    product = dims[0] * dims[1] * dims[2]
    if len(net.torus) > 3 or product != chips:
        stated = "x".join(str(d) for d in net.torus)
        raise EngineError(f"torus {stated} holds {product} chips, the topology has {chips}")
    return dims[0], dims[1], dims[2]


def torus_positions(
    dims: tuple[int, int, int], chips_per_host: int, block: tuple[int, int, int]
) -> npt.NDArray[np.int64]:
    """(chips, 3) coordinates of every chip: hosts tile the torus in blocks (``Torus``).

    A block that does not tile the torus (or hold a host's chips) falls back to a line of
    consecutive chips along x.
    """
    chips = dims[0] * dims[1] * dims[2]
    rank = np.arange(chips, dtype=np.int64)
    bx, by, bz = block
    fits = bx * by * bz == chips_per_host and all(d % b == 0 for d, b in zip(dims, block))
    if not fits:
        x, y = dims[0], dims[1]
        return np.stack([rank % x, (rank // x) % y, rank // (x * y)], axis=1)
    hx, hy = dims[0] // bx, dims[1] // by
    host, chip = rank // chips_per_host, rank % chips_per_host
    return np.stack(
        [
            (host % hx) * bx + chip % bx,
            ((host // hx) % hy) * by + (chip // bx) % by,
            (host // (hx * hy)) * bz + chip // (bx * by),
        ],
        axis=1,
    )


def build_torus(
    dims: tuple[int, int, int],
    gpu_devs: IntArray,
    link_bw_GBps: float | tuple[float, float, float],
    chips_per_host: int = 1,
    block: tuple[int, int, int] = (1, 1, 1),
    wrap: tuple[bool, bool, bool] = (True, True, True),
) -> NetworkBlock:
    """The chip-to-chip links of a torus (no devices).

    Along every dimension of size >= 3 each chip has a bundle to its +1 neighbour (with
    wrap-around), so two links in and two out; without wrap-around the last chip of each
    line has none; a dimension of size 2 has one bundle per chip pair; size 1 none. Link
    order: per dimension, the +1 direction of every bundle, then the reverse direction.
    ``link_bw_GBps`` is one rate for every link or one per dimension; ``NetworkBlock.axis``
    holds each link's dimension.
    """
    axis_bw = (
        tuple(float(b) for b in link_bw_GBps)
        if isinstance(link_bw_GBps, tuple)
        else (float(link_bw_GBps),) * 3
    )
    chips = int(gpu_devs.shape[0])
    pos = torus_positions(dims, chips_per_host, block)
    x_size, y_size, _ = dims
    flat = pos[:, 0] + x_size * (pos[:, 1] + y_size * pos[:, 2])
    rank_at = np.empty(chips, dtype=np.int64)
    rank_at[flat] = np.arange(chips, dtype=np.int64)
    out = np.full((chips, 3, 2), -1, dtype=np.int64)
    src: list[IntArray] = []
    dst: list[IntArray] = []
    axis: list[IntArray] = []
    next_link = 0
    rank = np.arange(chips, dtype=np.int64)
    for d, size in enumerate(dims):
        if size > 1:
            coord = pos[:, d]
            ahead_pos = pos.copy()
            ahead_pos[:, d] = (coord + 1) % size
            ahead = rank_at[ahead_pos[:, 0] + x_size * (ahead_pos[:, 1] + y_size * ahead_pos[:, 2])]
            if size == 2:
                lower = rank[coord == 0]
            elif wrap[d]:
                lower = rank
            else:
                lower = rank[coord < size - 1]  # a line: the last chip links no further
            upper = ahead[lower]
            m = lower.shape[0]
            ids = next_link + np.arange(m, dtype=np.int64)
            src += [lower, upper]
            dst += [upper, lower]
            axis.append(np.full(2 * m, d, dtype=np.int64))
            if size == 2:
                out[lower, d, :] = ids[:, None]
                out[upper, d, :] = (ids + m)[:, None]
            else:
                out[lower, d, 0] = ids
                out[upper, d, 1] = ids + m
            next_link += 2 * m
    chip_src = np.concatenate(src) if src else np.zeros(0, dtype=np.int64)
    chip_dst = np.concatenate(dst) if dst else np.zeros(0, dtype=np.int64)
    link_axis = np.concatenate(axis) if axis else np.zeros(0, dtype=np.int64)
    shape = "x".join(str(d) for d in dims)
    rings = [d for d in range(3) if dims[d] > 2]
    if rings and not all(wrap[d] for d in rings):
        shape += " (no wrap-around: a mesh)"
    return NetworkBlock(
        kind=[],
        index=[],
        src=gpu_devs[chip_src].astype(np.int64),
        dst=gpu_devs[chip_dst].astype(np.int64),
        bw_GBps=np.asarray(axis_bw, dtype=np.float64)[link_axis],
        count=np.ones(next_link, dtype=np.int64),
        tree=Torus(dims=dims, out=out, pos=pos, rank_at=rank_at, block=block, wrap=wrap),
        plan=(("torus", shape), ("host block", "x".join(map(str, block)))),
        axis=link_axis,
    )
