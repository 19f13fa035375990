"""The network: one switch, a leaf/spine fabric, a three-tier fat-tree, a dragonfly, or a torus.

Bundles of parallel cables are single links whose bandwidth is the sum of the cables.
Three-tier fabrics group leafs into pods, each with its own spines; spine ``i`` of every pod
connects to core plane ``i`` (the core switches of a plane are one aggregated device, since
traffic spreads evenly over them). Besides device and link tables the builder returns a
``FatTree``: the regular structure the vectorized router uses to spread flows over
equal-cost routes without enumerating them.

A dragonfly (Kim et al., ISCA 2008) has groups of routers, all-to-all inside a group by
one local cable per router pair, and one global bundle between every pair of groups,
between a deterministic *gateway* router on each side. NICs fill the routers' terminal
ports in node-major order. Routing is minimal: router -> (local) gateway -> global ->
gateway -> (local) router; its ``Dragonfly`` table gives that one path per flow.

A torus wires chips directly (TPU ICI): ring links along each of up to three dimensions,
dimension-order routing (x, then y, then z), the shorter way around each ring (ties go the
positive way). Its ``Torus`` table holds each chip's outgoing link per dimension and
direction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
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
    """(leafs, spines_per_pod) links leaf -> spine of its pod (empty without spines)."""
    leaf_down: IntArray
    """(leafs, spines_per_pod) links spine -> leaf."""
    spine_up: IntArray
    """(pods, spines_per_pod) links spine -> core plane (empty without cores)."""
    spine_down: IntArray
    """(pods, spines_per_pod) links core plane -> spine."""
    direct: IntArray
    """(leafs, leafs) link leaf -> leaf when leafs are joined without spines, else empty."""


def _shift(ids: IntArray, offset: int) -> IntArray:
    """Link ids made absolute (``-1`` gaps kept)."""
    return np.where(ids >= 0, ids + offset, ids)


@dataclass(frozen=True)
class Dragonfly:
    """Groups of all-to-all routers joined by global bundles; link ids local to the
    network block until ``shifted``.

    Router ``r`` is router ``r % routers_per_group`` of group ``r // routers_per_group``
    (device ``router<r>``). The bundle between groups ``i`` and ``j`` joins router
    ``gateway[i, j]`` of group ``i`` to router ``gateway[j, i]`` of group ``j``, where
    ``gateway[i, j] = ((j - i) mod groups - 1) mod routers_per_group``: group ``i``
    reaches the next group through its router 0, the one after through router 1, and so on.
    """

    router_of_nic: IntArray
    """(nodes * nics_per_node,) router of each NIC, NICs in node-major order."""
    nic_link: IntArray
    """(nodes * nics_per_node,) link id NIC -> router (the reverse is ``+ n_nics``)."""
    routers_per_group: int
    """Routers in each group."""
    local: IntArray
    """(routers, routers_per_group) link router -> router ``j`` of its group (-1: itself)."""
    gateway: IntArray
    """(groups, groups) router (index within group ``i``) holding the bundle to group
    ``j``; -1 on the diagonal."""
    global_link: IntArray
    """(groups, groups) link from group ``i``'s gateway to group ``j``'s; -1 on the diagonal."""
    global_cables: int
    """Cables in each global bundle."""

    @property
    def groups(self) -> int:
        """Number of groups."""
        return int(self.gateway.shape[0])

    @property
    def routers(self) -> int:
        """Number of routers."""
        return int(self.local.shape[0])

    def router_links(self, ra: npt.ArrayLike, rb: npt.ArrayLike) -> IntArray:
        """(n, 3) links of the minimal route from router ``ra`` to ``rb``, -1 padded.

        Columns: local hop to the gateway, global hop, local hop from the far gateway;
        same group: only the first column; same router: none.
        """
        a_r = np.asarray(ra, dtype=np.int64).reshape(-1)
        b_r = np.asarray(rb, dtype=np.int64).reshape(-1)
        per = self.routers_per_group
        out = np.full((a_r.shape[0], 3), -1, dtype=np.int64)
        ga, gb = a_r // per, b_r // per
        inside = (ga == gb) & (a_r != b_r)
        out[inside, 0] = self.local[a_r[inside], b_r[inside] % per]
        cross = np.flatnonzero(ga != gb)
        if cross.size:
            src, dst, g_src, g_dst = a_r[cross], b_r[cross], ga[cross], gb[cross]
            gw_src = g_src * per + self.gateway[g_src, g_dst]
            gw_dst = g_dst * per + self.gateway[g_dst, g_src]
            first = src != gw_src
            out[cross[first], 0] = self.local[src[first], gw_src[first] % per]
            out[cross, 1] = self.global_link[g_src, g_dst]
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

    Chip (global rank) ``r`` sits at ``x = r % X``, ``y = (r // X) % Y``, ``z = r // (X*Y)``,
    so the chips of one node are consecutive along x.
    """

    dims: tuple[int, int, int]
    """Ring sizes (X, Y, Z); 1 for an absent dimension."""
    out: IntArray
    """(chips, 3, 2) link chip -> its +1 (``[..., 0]``) and -1 (``[..., 1]``) neighbour
    along each dimension; both the same link when the ring has two chips, -1 when one."""

    @property
    def width(self) -> int:
        """Most hops of any route: ``X//2 + Y//2 + Z//2`` (at least 1)."""
        return max(1, sum(d // 2 for d in self.dims))

    def paths(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
        """(n, width) links of the dimension-order route of each chip pair, -1 padded.

        Along each dimension (x, y, z in turn) the route takes the shorter way around the
        ring, the positive way on a tie; column block ``d`` holds dimension ``d``'s hops.
        """
        a = np.asarray(src, dtype=np.int64).reshape(-1)
        b = np.asarray(dst, dtype=np.int64).reshape(-1)
        out = np.full((a.shape[0], self.width), -1, dtype=np.int64)
        cur = a.copy()
        col = 0
        stride = 1
        for d, size in enumerate(self.dims):
            if size > 1:
                ca, cb = (a // stride) % size, (b // stride) % size
                ahead = (cb - ca) % size
                plus = ahead <= size // 2
                steps = np.where(plus, ahead, size - ahead)
                direction = np.where(plus, 0, 1)
                step = np.where(plus, 1, -1)
                coord = ca
                for k in range(size // 2):
                    idx = np.flatnonzero(steps > k)
                    if not idx.size:
                        break
                    out[idx, col + k] = self.out[cur[idx], d, direction[idx]]
                    moved = (coord[idx] + step[idx]) % size
                    cur[idx] += (moved - coord[idx]) * stride
                    coord[idx] = moved
                col += size // 2
            stride *= size
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


#: Most switch-to-switch bundles a network may have (its link arrays hold two links each).
MAX_BUNDLES = 2**24


def _check_bundles(count: int, what: str) -> None:
    """Raise EngineError when a layout asks for more than ``MAX_BUNDLES`` bundles."""
    if count > MAX_BUNDLES:
        raise EngineError(f"{what} = {count} switch-to-switch bundles exceeds {MAX_BUNDLES}")


def _rail_groups(nodes: int, n_nic: int, ports: int, down: int, rail: bool) -> tuple[IntArray, int]:
    """Leaf of every (node, NIC) and the number of leafs, whole node groups per leaf."""
    node_ids = np.arange(nodes)[:, None]
    nic_ids = np.arange(n_nic)[None, :]
    if rail:
        per_group = max(1, down // ports)
        groups = math.ceil(nodes / per_group)
        return (node_ids // per_group) * n_nic + nic_ids, groups * n_nic
    per_leaf = max(1, down // (n_nic * ports))
    return (node_ids // per_leaf) + 0 * nic_ids, math.ceil(nodes / per_leaf)


def plan_leafs(
    net: NetSpec, nodes: int, n_nic: int, ports: int, radix: int
) -> tuple[str, IntArray, int]:
    """Layout actually built, leaf of every (node, NIC), and the number of leafs."""
    total = nodes * n_nic * ports
    layout = net.layout
    if layout == "auto":
        layout = "single" if total <= radix and net.leafs in (None, 1) else "leaf-spine"
    if layout == "single":
        return layout, np.zeros((nodes, n_nic), dtype=np.int64), 1
    o = net.oversubscription
    down = max(1, int(radix * o / (1 + o)))
    if layout == "leaf-spine" and net.leafs is not None:
        leafs = net.leafs
        node_ids, nic_ids = np.arange(nodes)[:, None], np.arange(n_nic)[None, :]
        rails = n_nic if net.rail_optimized else 1
        if net.rail_optimized and leafs >= rails:
            per_rail = leafs // rails
            assign = nic_ids * per_rail + (node_ids * per_rail) // nodes
        elif net.rail_optimized:
            assign = (nic_ids * leafs) // rails + 0 * node_ids
        else:
            assign = (node_ids * leafs) // nodes + 0 * nic_ids
        return layout, assign.astype(np.int64), leafs
    assign, leafs = _rail_groups(nodes, n_nic, ports, down, net.rail_optimized)
    return layout, assign.astype(np.int64), leafs


def build_network(
    net: NetSpec,
    nodes: int,
    nic_devs: IntArray,
    nic_bw_GBps: float,
    ports: int,
    port_bw_GBps: float,
    radix: int,
    base: int,
) -> NetworkBlock:
    """Switches and cables above the NICs.

    Args:
        net: The network spec.
        nodes: Number of nodes.
        nic_devs: (nodes, nics_per_node) absolute device ids of the NICs.
        nic_bw_GBps: Bandwidth of one NIC device (all its ports) [GB/s].
        ports: Switch ports one NIC device uses.
        port_bw_GBps: Bandwidth of one port [GB/s].
        radix: Ports per switch.
        base: Absolute id of the first switch device.

    Returns:
        The network block.

    Raises:
        EngineError: A layout that cannot be built (e.g. too few ports).
    """
    from fabricui.fabric.fabric import DeviceKind

    if net.layout == "dragonfly":
        return build_dragonfly(net, nodes, nic_devs, nic_bw_GBps, ports, port_bw_GBps, radix, base)
    n_nic = nic_devs.shape[1]
    layout, assign, leafs = plan_leafs(net, nodes, n_nic, ports, radix)
    o = net.oversubscription
    leaf_of_nic = assign.reshape(-1)
    nic_flat = nic_devs.reshape(-1)
    n_links = nic_flat.shape[0]
    src = [nic_flat, base + leaf_of_nic]
    dst = [base + leaf_of_nic, nic_flat]
    bw = [np.full(2 * n_links, nic_bw_GBps)]
    count = [np.full(2 * n_links, ports)]
    next_link = 2 * n_links
    kind = [int(DeviceKind.LEAF)] * leafs
    index = list(range(leafs))
    down_bw = np.bincount(leaf_of_nic, minlength=leafs) * nic_bw_GBps
    up_bw = down_bw / o
    empty = np.zeros((0, 0), dtype=np.int64)
    pod_of_leaf = np.zeros(leafs, dtype=np.int64)
    leaf_up = leaf_down = spine_up = spine_down = direct = empty

    def bundle(a: IntArray, b: IntArray, bw_each: npt.NDArray[np.float64]) -> IntArray:
        """Add a <-> b bundles; returns the link ids a -> b (b -> a follow them)."""
        nonlocal next_link
        src.extend([a, b])
        dst.extend([b, a])
        bw.append(np.concatenate([bw_each, bw_each]))
        cables = np.maximum(1, np.round(bw_each / port_bw_GBps))
        count.append(np.concatenate([cables, cables]))
        ids = next_link + np.arange(a.shape[0])
        next_link += 2 * a.shape[0]
        return ids

    if layout == "leaf-spine" and leafs > 1 and net.spines == 0:
        _check_bundles(leafs * (leafs - 1) // 2, f"{leafs} leafs joined directly")
        ia, ib = np.triu_indices(leafs, 1)
        ab = bundle(base + ia, base + ib, np.minimum(up_bw[ia], up_bw[ib]) / (leafs - 1))
        direct = np.full((leafs, leafs), -1, dtype=np.int64)
        direct[ia, ib] = ab
        direct[ib, ia] = ab + ia.shape[0]
    elif layout == "leaf-spine" and leafs > 1:
        cables = float(np.ceil(up_bw / port_bw_GBps).sum())
        spines = net.spines or max(1, math.ceil(cables / radix))
        _check_bundles(leafs * spines, f"{leafs} leafs x {spines} spines")
        kind += [int(DeviceKind.SPINE)] * spines
        index += list(range(spines))
        la = np.repeat(np.arange(leafs), spines)
        sp = np.tile(np.arange(spines), leafs)
        up = bundle(base + la, base + leafs + sp, up_bw[la] / spines)
        leaf_up = up.reshape(leafs, spines)
        leaf_down = (up + la.shape[0]).reshape(leafs, spines)
    elif layout == "three-tier":
        spine_o = net.spine_oversubscription
        spine_down_ports = max(1, int(radix * spine_o / (1 + spine_o)))
        leaf_up_ports = max(1, radix - max(1, int(radix * o / (1 + o))))
        per_pod = max(1, spine_down_ports)
        if net.rail_optimized:
            per_pod = max(n_nic, (per_pod // n_nic) * n_nic)
        pods = math.ceil(leafs / per_pod)
        pod_cables = np.bincount(
            pod_of_leaf := np.arange(leafs) // per_pod,
            weights=np.ceil(up_bw / port_bw_GBps),
            minlength=pods,
        )
        needed = max(1, math.ceil(float(pod_cables.max()) / spine_down_ports))
        spines_per_pod = max(1, min(leaf_up_ports, net.spines or needed))
        _check_bundles(leafs * spines_per_pod, f"{leafs} leafs x {spines_per_pod} spines")
        spine_total = pods * spines_per_pod
        kind += [int(DeviceKind.SPINE)] * spine_total + [int(DeviceKind.CORE)] * spines_per_pod
        index += list(range(spine_total)) + list(range(spines_per_pod))
        la = np.repeat(np.arange(leafs), spines_per_pod)
        plane = np.tile(np.arange(spines_per_pod), leafs)
        spine_of = pod_of_leaf[la] * spines_per_pod + plane
        up = bundle(base + la, base + leafs + spine_of, up_bw[la] / spines_per_pod)
        leaf_up = up.reshape(leafs, spines_per_pod)
        leaf_down = (up + la.shape[0]).reshape(leafs, spines_per_pod)
        pod_down_bw = np.bincount(pod_of_leaf, weights=up_bw, minlength=pods)
        sp = np.arange(spine_total)
        to_core = bundle(
            base + leafs + sp,
            base + leafs + spine_total + sp % spines_per_pod,
            pod_down_bw[sp // spines_per_pod] / spines_per_pod / spine_o,
        )
        spine_up = to_core.reshape(pods, spines_per_pod)
        spine_down = (to_core + spine_total).reshape(pods, spines_per_pod)
    elif layout not in ("single", "leaf-spine"):
        raise EngineError(f"unknown network layout {layout!r}")
    tree = FatTree(
        leaf_of_nic=leaf_of_nic,
        nic_link=np.arange(n_links, dtype=np.int64),
        pod_of_leaf=pod_of_leaf,
        leaf_up=leaf_up,
        leaf_down=leaf_down,
        spine_up=spine_up,
        spine_down=spine_down,
        direct=direct,
    )
    return NetworkBlock(
        kind=kind,
        index=index,
        src=np.concatenate(src),
        dst=np.concatenate(dst),
        bw_GBps=np.concatenate(bw),
        count=np.concatenate(count).astype(np.int64),
        tree=tree,
    )


#: Most dragonfly groups the builder accepts (its group tables are groups x groups).
MAX_GROUPS = 4096


def plan_dragonfly(net: NetSpec, ports_total: int, radix: int) -> tuple[int, int, int]:
    """Groups, routers per group and cables per global bundle of a dragonfly.

    A balanced dragonfly (Kim et al.) gives each router ``p = radix/4`` terminal ports,
    ``a = radix/2`` routers per group (``a - 1`` local ports) and ``h = radix/4`` global
    ports. Unset sizes follow from the terminal ports needed: ``ceil(ports / p)`` routers,
    ``a`` per group (fewer when one group holds them all), then as many groups as needed.
    Global bundles get the group's ``a * h`` global ports spread over the other groups
    (at least one cable each).

    Raises:
        EngineError: More than ``MAX_GROUPS`` groups.
    """
    p = max(1, radix // 4)
    needed = max(1, math.ceil(ports_total / p))
    groups, per = net.groups, net.routers_per_group
    if groups is None and per is None:
        per = max(1, min(radix // 2, needed))
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
        cables = max(1, (per * max(1, radix // 4)) // max(1, groups - 1))
    return groups, per, cables


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

    NICs (node-major) fill the routers in order, ``ceil(NICs / routers)`` per router, so a
    router's last ports (or the last routers) may stay empty. Local bundles are one cable;
    global bundles ``global_links`` cables. Link order: NIC -> router, router -> NIC, then
    each bundle's two directions (local bundles, then global bundles).
    """
    from fabricui.fabric.fabric import DeviceKind

    nic_flat = nic_devs.reshape(-1)
    n_nics = nic_flat.shape[0]
    groups, per, cables = plan_dragonfly(net, n_nics * ports, radix)
    routers = groups * per
    per_router = math.ceil(n_nics / routers)
    router_of_nic = np.arange(n_nics, dtype=np.int64) // per_router
    src = [nic_flat, base + router_of_nic]
    dst = [base + router_of_nic, nic_flat]
    bw = [np.full(2 * n_nics, nic_bw_GBps)]
    count = [np.full(2 * n_nics, ports)]
    next_link = 2 * n_nics

    # Local: every router pair of every group, one cable.
    iu, ju = np.triu_indices(per, 1)
    first = (np.arange(groups, dtype=np.int64) * per)[:, None]
    la, lb = (first + iu[None, :]).reshape(-1), (first + ju[None, :]).reshape(-1)
    m = la.shape[0]
    src += [base + la, base + lb]
    dst += [base + lb, base + la]
    bw.append(np.full(2 * m, port_bw_GBps))
    count.append(np.ones(2 * m, dtype=np.int64))
    local = np.full((routers, per), -1, dtype=np.int64)
    ids = next_link + np.arange(m, dtype=np.int64)
    local[la, lb % per] = ids
    local[lb, la % per] = ids + m
    next_link += 2 * m

    # Global: one bundle per group pair between the two gateways.
    gi, gj = np.triu_indices(groups, 1)
    gateway = np.full((groups, groups), -1, dtype=np.int64)
    gateway[gi, gj] = ((gj - gi) % groups - 1) % per
    gateway[gj, gi] = ((gi - gj) % groups - 1) % per
    ra, rb = gi * per + gateway[gi, gj], gj * per + gateway[gj, gi]
    m = ra.shape[0]
    src += [base + ra, base + rb]
    dst += [base + rb, base + ra]
    bw.append(np.full(2 * m, cables * port_bw_GBps))
    count.append(np.full(2 * m, cables, dtype=np.int64))
    global_link = np.full((groups, groups), -1, dtype=np.int64)
    ids = next_link + np.arange(m, dtype=np.int64)
    global_link[gi, gj] = ids
    global_link[gj, gi] = ids + m

    table = Dragonfly(
        router_of_nic=router_of_nic,
        nic_link=np.arange(n_nics, dtype=np.int64),
        routers_per_group=per,
        local=local,
        gateway=gateway,
        global_link=global_link,
        global_cables=int(cables),
    )
    return NetworkBlock(
        kind=[int(DeviceKind.ROUTER)] * routers,
        index=list(range(routers)),
        src=np.concatenate(src).astype(np.int64),
        dst=np.concatenate(dst).astype(np.int64),
        bw_GBps=np.concatenate(bw).astype(np.float64),
        count=np.concatenate(count).astype(np.int64),
        tree=table,
    )


def torus_shape(chips: int) -> tuple[int, int, int]:
    """The most cube-like (X, Y, Z), X <= Y <= Z, with ``X * Y * Z == chips`` (smallest
    ``X + Y + Z``, hence smallest diameter)."""
    best = (1, 1, chips)
    x = 1
    while x * x * x <= chips:
        if chips % x == 0:
            rest = chips // x
            y = x
            while y * y <= rest:
                if rest % y == 0 and x + y + rest // y < sum(best):
                    best = (x, y, rest // y)
                y += 1
        x += 1
    return best


def torus_dims(net: NetSpec, chips: int) -> tuple[int, int, int]:
    """(X, Y, Z) of a torus: the spec's (padded with 1s) or the derived shape.

    Raises:
        EngineError: The spec's shape does not hold exactly ``chips`` chips.
    """
    if net.torus is None:
        return torus_shape(chips)
    dims = tuple(int(d) for d in net.torus) + (1,) * (3 - len(net.torus))
    product = dims[0] * dims[1] * dims[2]
    if len(net.torus) > 3 or product != chips:
        shape = "x".join(str(d) for d in net.torus)
        raise EngineError(f"torus {shape} holds {product} chips, the topology has {chips}")
    return dims[0], dims[1], dims[2]


def build_torus(
    dims: tuple[int, int, int], gpu_devs: IntArray, link_bw_GBps: float
) -> NetworkBlock:
    """The chip-to-chip links of a torus (no devices).

    Along every dimension of size >= 3 each chip has a bundle to its +1 neighbour (with
    wrap-around), so two links in and two out; a dimension of size 2 has one bundle per
    chip pair; size 1 none. Link order: per dimension, the +1 direction of every bundle,
    then the reverse direction.
    """
    chips = int(gpu_devs.shape[0])
    rank = np.arange(chips, dtype=np.int64)
    out = np.full((chips, 3, 2), -1, dtype=np.int64)
    src: list[IntArray] = []
    dst: list[IntArray] = []
    next_link = 0
    stride = 1
    for d, size in enumerate(dims):
        if size > 1:
            coord = (rank // stride) % size
            ahead = rank + (((coord + 1) % size) - coord) * stride
            lower = rank[coord == 0] if size == 2 else rank
            upper = ahead[lower]
            m = lower.shape[0]
            ids = next_link + np.arange(m, dtype=np.int64)
            src += [lower, upper]
            dst += [upper, lower]
            if size == 2:
                out[lower, d, :] = ids[:, None]
                out[upper, d, :] = (ids + m)[:, None]
            else:
                out[lower, d, 0] = ids
                out[upper, d, 1] = ids + m
            next_link += 2 * m
        stride *= size
    chip_src = np.concatenate(src) if src else np.zeros(0, dtype=np.int64)
    chip_dst = np.concatenate(dst) if dst else np.zeros(0, dtype=np.int64)
    return NetworkBlock(
        kind=[],
        index=[],
        src=gpu_devs[chip_src].astype(np.int64),
        dst=gpu_devs[chip_dst].astype(np.int64),
        bw_GBps=np.full(next_link, link_bw_GBps),
        count=np.ones(next_link, dtype=np.int64),
        tree=Torus(dims=dims, out=out),
    )
