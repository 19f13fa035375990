"""A fat-tree of one switch, or of two or three tiers, above the NICs.

Fat-trees are radix-true: leaf, spine and core counts follow from the switch radix (in
ports of the NIC rate, so a 64 x 800G switch takes 128 x 400G NICs) and the requested
oversubscription, cables are whole numbers, and a two-tier fabric that outgrows its radix
becomes three-tier. Rail-optimized wiring follows the reference architectures: one leaf per
rail per *scalable unit* (SU), the nodes one leaf's down ports hold. Three tiers group
leafs into pods (whole SUs), each with its own spines; spine ``i`` of every pod connects to
the cores of plane ``i``. A spec asking for what the switches cannot build (more ports than
a switch has, more pods than a core has ports) is a one-line ``EngineError``, made while
sizing the tiers before any cable is laid (``check_fat_tree`` makes it alone). Besides
device and link tables the builder returns a ``FatTree`` (the regular structure the
vectorized router, ``fabricui.engine.networks.fat_tree``, uses to spread flows over
equal-cost routes without enumerating them) and the figures it chose (``NetworkBlock.plan``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from fabricui.errors import EngineError
from fabricui.fabric.cabling import (
    Cabling,
    IntArray,
    NetworkBlock,
    check_bundles,
    shift_ids,
    spread,
)
from fabricui.fabric.kinds import DeviceKind
from fabricui.model import NetSpec


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

    def shifted(self, offset: int) -> FatTree:
        """The same structure with link ids made absolute (network links follow the node
        blocks)."""
        return replace(
            self,
            nic_link=shift_ids(self.nic_link, offset),
            leaf_up=shift_ids(self.leaf_up, offset),
            leaf_down=shift_ids(self.leaf_down, offset),
            spine_up=shift_ids(self.spine_up, offset),
            spine_down=shift_ids(self.spine_down, offset),
            direct=shift_ids(self.direct, offset),
        )


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


def _direct_cables(t: _Tiering) -> int:
    """``spines: 0``: the cables joining each pair of leafs, every leaf's uplinks shared
    evenly over the other leafs.

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
    check_bundles(leafs * (leafs - 1) // 2, f"{leafs} leafs joined directly")
    return up // (leafs - 1)


def _join_leafs_directly(t: _Tiering, per_pair: int, cabling: Cabling) -> _UpperTiers:
    """``spines: 0``: every pair of leafs cabled directly by ``per_pair`` cables
    (``_direct_cables``)."""
    leafs = t.leafs
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


def _spine_cables(t: _Tiering, spines: int) -> IntArray:
    """(spines,) cables from every leaf to each spine of a two-tier fat-tree: the leaf's
    uplinks spread over all of them.

    Raises:
        EngineError: A spine would get no cable from a leaf, or has too few ports.
    """
    leafs, up, switch_ports = t.leafs, t.uplinks.cables, t.uplinks.switch_ports
    cables = spread(up, spines)
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
    check_bundles(leafs * spines, f"{leafs} leafs x {spines} spines")
    return cables


def _two_tiers(t: _Tiering, cables: IntArray, cabling: Cabling) -> _UpperTiers:
    """Spines above the leafs, ``cables[i]`` from every leaf to spine ``i``
    (``_spine_cables``)."""
    leafs, spines = t.leafs, cables.shape[0]
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
        leaf_cables = spread(up, spines_per_pod)
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
    check_bundles(leafs * spines_per_pod, f"{leafs} leafs x {spines_per_pod} spines")
    check_bundles(sized.spines * cores_per_plane, f"{sized.spines} spines x cores")
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


def _three_tiers(t: _Tiering, pods: _Pods, cabling: Cabling) -> _UpperTiers:
    """Pods of leafs under their own spines, and the cores joining the pods
    (``_size_pods``)."""
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


@dataclass(frozen=True)
class _TierSizes:
    """The tiers above a fat-tree's leafs as sized before any cable is laid: every refusal
    of the switches above the leafs is made while sizing them (``_size_tiers``)."""

    per_pair: int | None = None
    """``spines: 0``: cables joining each pair of leafs."""
    spine_cables: IntArray | None = None
    """Two tiers: (spines,) cables from every leaf to each spine."""
    pods: _Pods | None = None
    """Three tiers: the pods, spines and cores."""


def _size_tiers(t: _Tiering) -> _TierSizes:
    """Size the tiers above the leafs (none for one leaf): leafs joined directly, spines,
    or pods and cores.

    Raises:
        EngineError: The switches cannot build them (one line naming what is missing).
    """
    if t.leafs <= 1:
        return _TierSizes()
    if t.net.spines == 0:
        return _TierSizes(per_pair=_direct_cables(t))
    spines = _two_tier_spines(t)
    if spines is not None:
        return _TierSizes(spine_cables=_spine_cables(t, spines))
    return _TierSizes(pods=_size_pods(t))


def _upper_tiers(
    t: _Tiering, sizes: _TierSizes, cabling: Cabling, hosts_per_domain: int
) -> _UpperTiers:
    """The tiers above the leafs as sized (``_size_tiers``), with the leafs' closing plan
    lines: their built oversubscription and how scalable units meet scale-up domains."""
    if t.leafs <= 1:
        return _UpperTiers([], [], [("switches", "1")], _one_pod(t))
    if sizes.per_pair is not None:
        tiers = _join_leafs_directly(t, sizes.per_pair, cabling)
    elif sizes.spine_cables is not None:
        tiers = _two_tiers(t, sizes.spine_cables, cabling)
    else:
        assert sizes.pods is not None
        tiers = _three_tiers(t, sizes.pods, cabling)
    up_nic_ports = t.uplinks.cables * t.uplinks.nic_ports_per_cable
    tiers.plan.append(("leaf oversubscription", f"{t.down_used / max(up_nic_ports, 1):.2f}"))
    su = _su_plan(t.leaf_plan.per_su, t.nodes, hosts_per_domain)
    if su is not None:
        tiers.plan.append(su)
    return tiers


def _sized(
    net: NetSpec,
    nodes: int,
    nics_per_node: int,
    ports: int,
    port_bw_GBps: float,
    radix: int,
    base: int,
    cable_ports: int,
) -> tuple[_Tiering, _TierSizes]:
    """Every figure of a fat-tree before any cable is laid (arguments as ``build_fat_tree``'s),
    so every refusal it can make: its layout, its leafs (``_plan_leafs``) and the tiers
    above them (``_size_tiers``).

    Raises:
        EngineError: A layout the switches cannot build (one line naming what is missing).
    """
    if net.layout not in ("auto", "single", "leaf-spine", "three-tier"):
        raise EngineError(f"unknown network layout {net.layout!r}")
    leaf_plan = _plan_leafs(net, nodes, nics_per_node, ports, radix)
    uplinks = _leaf_uplinks(leaf_plan.up, radix, port_bw_GBps, cable_ports)
    tiering = _Tiering(net, nodes, nics_per_node, radix, base, leaf_plan, uplinks)
    return tiering, _size_tiers(tiering)


def check_fat_tree(
    net: NetSpec, nodes: int, nics_per_node: int, ports: int, radix: int, cable_ports: int = 1
) -> None:
    """Refuse what ``build_fat_tree`` refuses (arguments as there, ``nics_per_node`` the
    NICs of each node it would cable), without cabling it: every refusal is arithmetic on
    the sizes, so node counts can be tried at a fraction of a build (``build.most_nodes``).

    Raises:
        EngineError: ``build_fat_tree`` would refuse (the same line).
    """
    # Rates and device ids size no switch: a leaf's uplinks are counted in cables.
    _sized(net, nodes, nics_per_node, ports, 0.0, radix, 0, cable_ports)


def build_fat_tree(
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
) -> NetworkBlock[FatTree]:
    """Leaf, spine and core switches and their cables above the NICs.

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
    tiering, sizes = _sized(
        net, nodes, nic_devs.shape[1], ports, port_bw_GBps, radix, base, cable_ports
    )
    leaf_plan = tiering.leaf_plan
    leaf_of_nic = leaf_plan.assign.reshape(-1)
    nic_flat = nic_devs.reshape(-1)
    n_nics = nic_flat.shape[0]
    cabling = Cabling()
    nic_link = cabling.add(
        nic_flat, base + leaf_of_nic, np.full(n_nics, nic_bw_GBps), np.full(n_nics, ports)
    )
    tiers = _upper_tiers(tiering, sizes, cabling, hosts_per_domain)
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
