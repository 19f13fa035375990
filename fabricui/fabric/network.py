"""The network above the NICs: one switch, a leaf/spine fabric, or a three-tier fat-tree.

Bundles of parallel cables are single links whose bandwidth is the sum of the cables.
Three-tier fabrics group leafs into pods, each with its own spines; spine ``i`` of every pod
connects to core plane ``i`` (the core switches of a plane are one aggregated device, since
traffic spreads evenly over them). Besides device and link tables the builder returns a
``FatTree``: the regular structure the vectorized router uses to spread flows over
equal-cost routes without enumerating them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


@dataclass
class NetworkBlock:
    """Switch devices (ids local to the block) and links (absolute device ids)."""

    kind: list[int]
    index: list[int]
    src: IntArray
    dst: IntArray
    bw_GBps: npt.NDArray[np.float64]
    count: IntArray
    tree: FatTree


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
        ia, ib = np.triu_indices(leafs, 1)
        ab = bundle(base + ia, base + ib, np.minimum(up_bw[ia], up_bw[ib]) / (leafs - 1))
        direct = np.full((leafs, leafs), -1, dtype=np.int64)
        direct[ia, ib] = ab
        direct[ib, ia] = ab + ia.shape[0]
    elif layout == "leaf-spine" and leafs > 1:
        cables = float(np.ceil(up_bw / port_bw_GBps).sum())
        spines = net.spines or max(1, math.ceil(cables / radix))
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
