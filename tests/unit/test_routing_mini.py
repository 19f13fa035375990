"""Router and path metrics against hand-computed paths on the fixed mini database.

Mini figures: PCIe5 64 GB/s 0.5 us, PCIe switch 0.1 us, NIC 0.5 us, NDR 50 GB/s 1.0 us,
leaf 0.2 us, NVLink4 25 GB/s x18 0.25 us, NVSwitch 0.5 us, UPI 40 GB/s 1.0 us.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.routing import Router
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric


def hops(report):
    return [(h.src, h.dst, h.link, h.count, h.bw_GBps) for h in report.hops]


def test_pod_cross_node_via_two_leafs(mini):
    """n0.g0 -> n3.g7 crosses rails: PXN moves the data over NVLink to n0.g7, whose NIC is
    on rail 7 (leaf1), so the network part stays under one leaf."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    report = api.path(fabric, "n0.g0", "n3.g7", 2**30)
    assert hops(report) == [
        ("n0.g0", "n0.nvsw0", "nvlink4", 18, 450.0),
        ("n0.nvsw0", "n0.g7", "nvlink4", 18, 450.0),
        ("n0.g7", "n0.pcie3", "pcie5", 1, 64.0),
        ("n0.pcie3", "n0.nic7", "pcie5", 1, 64.0),
        ("n0.nic7", "leaf1", "ib-ndr", 1, 50.0),
        ("leaf1", "n3.nic7", "ib-ndr", 1, 50.0),
        ("n3.nic7", "n3.pcie3", "pcie5", 1, 64.0),
        ("n3.pcie3", "n3.g7", "pcie5", 1, 64.0),
    ]
    assert report.bottleneck_GBps == 50.0
    assert report.bottleneck_link == "n0.nic7->leaf1"
    # links 0.25x2 + 0.5x2 + 1.0x2 + 0.5x2 = 4.5; NVSwitch 0.5, pcie sw 0.1 x2, nic 0.5 x2,
    # leaf 0.2 = 1.9 (the proxy GPU forwards with no latency of its own)
    assert report.latency_us == pytest.approx(6.4)
    assert report.transfer_us == pytest.approx(6.4 + 2**30 / 50e3)


def test_pod_leafs_are_joined_directly_by_whole_cables(mini):
    """Rails 0-3 on leaf0, 4-7 on leaf1, no spines: each leaf's 16 NIC ports get 16 uplink
    cables to the other leaf (800 GB/s)."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    tree = fabric.tree
    link = tree.direct[0, 1]
    assert (int(fabric.link_count[link]), float(fabric.link_bw_GBps[link])) == (16, 800.0)


def test_pod_same_rail_stays_on_one_leaf(mini):
    """Same rail on different nodes: NIC -> leaf -> NIC, no leaf-to-leaf hop."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    report = api.path(fabric, "n0.g2", "n1.g2")
    assert [h.dst for h in report.hops] == [
        "n0.pcie1",
        "n0.nic2",
        "leaf0",
        "n1.nic2",
        "n1.pcie1",
        "n1.g2",
    ]


def test_nvswitch_same_node(mini):
    """Inside a node traffic takes NVSwitch, not PCIe: 18 x 25 = 450 GB/s."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    report = api.path(fabric, "n2.g1", "n2.g6", 1000)
    assert hops(report) == [
        ("n2.g1", "n2.nvsw0", "nvlink4", 18, 450.0),
        ("n2.nvsw0", "n2.g6", "nvlink4", 18, 450.0),
    ]
    assert report.latency_us == pytest.approx(0.25 + 0.5 + 0.25)
    assert report.transfer_us == pytest.approx(1.0 + 1000 / 450e3)


def test_pcie_same_switch_and_across_sockets(mini):
    """P2P under one switch stays there; across sockets it climbs to both CPUs over UPI."""
    fabric = build_fabric(mini.topologies["pcie-box"], mini)
    near = api.path(fabric, "n0.g0", "n0.g1")
    assert [h.dst for h in near.hops] == ["n0.pcie0", "n0.g1"]
    far = api.path(fabric, "n0.g0", "n0.g3")
    assert [h.dst for h in far.hops] == ["n0.pcie0", "n0.cpu0", "n0.cpu1", "n0.pcie1", "n0.g3"]
    assert far.bottleneck_GBps == 32.0
    # links 0.5*4 + 1.0 (UPI); pcie switches 0.1 x2; CPUs forward with 0 latency
    assert far.latency_us == pytest.approx(3.2)


def test_pcie_without_p2p_stages_through_host(mini):
    """With p2p off the path goes through the CPU (host memory), even on one root complex."""
    fabric = build_fabric(mini.topologies["pcie-noP2P"], mini)
    report = api.path(fabric, "0", "1")
    assert [h.dst for h in report.hops] == ["n0.cpu0", "n0.g1"]


def test_mesh_direct_link_and_c2c_to_nic(mini):
    """Mesh GPUs talk over their direct links; to the network via Grace (C2C) then PCIe."""
    fabric = build_fabric(mini.topologies["quad"], mini)
    direct = api.path(fabric, "n0.g0", "n0.g2")
    assert hops(direct) == [("n0.g0", "n0.g2", "nvlink4", 6, 150.0)]
    remote = api.path(fabric, "n0.g1", "n1.g3")
    assert [h.link for h in remote.hops] == [
        "nvlink-c2c",
        "pcie5",
        "ib-ndr",
        "ib-ndr",
        "pcie5",
        "nvlink-c2c",
    ]
    assert remote.hops[0].dst == "n0.cpu1"


def test_shared_nic(mini):
    """Two NICs for eight GPUs: GPUs 0-3 use nic0, 4-7 use nic1."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    local_nics = [fabric.device_name(d) for d in fabric.gpu_nic[:8]]
    assert local_nics == ["n0.nic0"] * 4 + ["n0.nic1"] * 4
    report = api.path(fabric, "n0.g3", "n1.g5")
    assert "n0.nic0" in [h.dst for h in report.hops]
    assert "n1.nic1" in [h.dst for h in report.hops]


def test_fat_tree_oversubscribed_spine(mini):
    """2:1 leafs: a leaf's 16 NIC ports (800 GB/s) get 8 whole uplink cables (400 GB/s) to
    the one spine; a cross-rail path takes PXN and stays under the destination's leaf."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    tree = fabric.tree
    assert tree.leaf_up.shape == (8, 1)
    assert fabric.link_count[tree.leaf_up[0, 0]] == 8
    assert fabric.link_bw_GBps[tree.leaf_up[0, 0]] == pytest.approx(400.0)
    report = api.path(fabric, "n0.g0", "n15.g3")
    names = [h.dst for h in report.hops]
    assert names[:2] == ["n0.nvsw0", "n0.g3"] and names[4:6] == ["leaf3", "n15.nic3"]


def test_route_is_symmetric_in_length(mini):
    """Reverse routes have the same hop count and bottleneck."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    router = Router(fabric)
    rng = np.random.default_rng(0)
    for a, b in rng.integers(0, fabric.n_gpus, size=(20, 2)):
        if a == b:
            continue
        ab, ba = router.route(int(a), int(b)), router.route(int(b), int(a))
        assert len(ab) == len(ba)
        assert fabric.link_bw_GBps[ab].min() == fabric.link_bw_GBps[ba].min()
        # a path is connected: each hop starts where the previous one ended
        assert np.all(fabric.link_src[ab[1:]] == fabric.link_dst[ab[:-1]])


def test_same_gpu_is_an_error(mini):
    """Source and destination must differ."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    with pytest.raises(EngineError, match="same GPU"):
        api.path(fabric, "n0.g0", "0")
