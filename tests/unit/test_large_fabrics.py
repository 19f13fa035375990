"""Large-fabric builders on small instances, checked by hand: dragonfly, 3D torus, three-tier.

Mini figures (tests/data/hwdb/mini): NDR 50 GB/s x 0.95 = 47.5 GB/s achievable, NVLink4
25 GB/s x 0.8 = 20 GB/s, PCIe5 64 GB/s. A tiny 8-port switch (written to a temporary
directory) keeps the three-tier instance small enough to draw.

Dragonfly, 3 groups x 2 routers, one node (1 GPU, 1 NIC) per router, one global cable
per group pair; global port q of a group ((j - i) mod 3 - 1 for group j) is on router q::

    group 0: router0 router1   group 1: router2 router3   group 2: router4 router5
    cables to the group ahead on router 0, to the group after that on router 1:
    global bundles: router0-router3, router1-router4, router2-router5

Torus 4 x 4 x 2 (32 chips, 4 per node): hosts are 2 x 2 x 1 blocks of the host grid
2 x 2 x 2, host h at block (h % 2, (h // 2) % 2, h // 4), its chip c at (c % 2, c // 2, 0)
inside the block: chip r = 4h + c sits at x = 2 (h % 2) + c % 2, y = 2 ((h // 2) % 2) +
c // 2, z = h // 4.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.bulk import BulkRouter
from fabricui.engine.networks import DragonflyNetwork
from fabricui.engine.routing import Router
from fabricui.errors import EngineError, HwdbError
from fabricui.fabric import DeviceKind, build_fabric
from fabricui.fabric.dragonfly import plan_dragonfly
from fabricui.fabric.torus import torus_shape
from fabricui.hwdb import load_catalog
from fabricui.hwdb.resolve import resolve_topology
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import read_yaml
from fabricui.model import NetSpec
from fabricui.model.topology import IntraSpec, TopologySpec

MINI = Path(__file__).parents[1] / "data" / "hwdb" / "mini"
NIC_RATE = 50.0 * 0.95
ICI_RATE = 25.0 * 0.8


def count(fabric, kind):
    return int((fabric.dev_kind == kind).sum())


def names(report):
    return [h.dst for h in report.hops]


def same_paths(fabric, pairs):
    """Router.route equals the bulk router's row (gaps dropped) for every pair."""
    router = Router(fabric)
    bulk = BulkRouter(fabric, router)
    rows = bulk.paths(pairs[:, 0], pairs[:, 1])
    for (a, b), row in zip(pairs, rows):
        expected = router.route(int(a), int(b))
        assert np.array_equal(row[row >= 0], expected), (a, b)
        # connected: every hop starts where the previous one ended
        assert np.all(fabric.link_src[expected[1:]] == fabric.link_dst[expected[:-1]])


# --- dragonfly ---------------------------------------------------------------------------


def dragonfly_spec(global_links=1, nodes=6):
    return TopologySpec(
        gpu="h100-sxm",
        nodes=nodes,
        gpus_per_node=1,
        net=NetSpec(
            link="ib-ndr",
            layout="dragonfly",
            groups=3,
            routers_per_group=2,
            global_links=global_links,
        ),
        id="df",
    )


@pytest.fixture
def dragonfly(mini):
    return build_fabric(dragonfly_spec(), mini)


def test_dragonfly_devices_and_links(dragonfly):
    """6 nodes (GPU, CPU, NIC) + 6 routers; 6 NIC cables, 3 local and 3 global bundles."""
    fabric = dragonfly
    assert count(fabric, DeviceKind.ROUTER) == 6 and count(fabric, DeviceKind.LEAF) == 0
    assert fabric.n_devices == 6 * 3 + 6
    net_links = fabric.n_links - fabric.nodes * fabric.node_links
    assert net_links == 2 * (6 + 3 + 3)
    table = fabric.dragonfly
    assert (table.groups, table.routers_per_group, table.global_cables) == (3, 2, 1)
    assert table.router_of_nic.tolist() == [0, 1, 2, 3, 4, 5]
    reaches = [[g for g in range(3) if table.own[r, g] >= 0] for r in range(6)]
    assert reaches == [[1], [2], [2], [0], [0], [1]]
    bundles = {
        tuple(sorted((fabric.device_name(int(s)), fabric.device_name(int(d)))))
        for s, d in zip(fabric.link_src, fabric.link_dst)
        if fabric.dev_kind[s] == DeviceKind.ROUTER and fabric.dev_kind[d] == DeviceKind.ROUTER
    }
    assert bundles == {
        ("router0", "router1"),
        ("router2", "router3"),
        ("router4", "router5"),  # local
        ("router0", "router3"),
        ("router1", "router4"),
        ("router2", "router5"),  # global
    }


def test_dragonfly_cross_group_path_by_hand(dragonfly):
    """n1 (router1, group 0) -> n2 (router2, group 1): local to gateway router0, global to
    router3, local to router2."""
    report = api.path(dragonfly, "n1.g0", "n2.g0")
    assert names(report) == [
        "n1.cpu0",
        "n1.nic0",
        "router1",
        "router0",
        "router3",
        "router2",
        "n2.nic0",
        "n2.cpu0",
        "n2.g0",
    ]
    assert report.bottleneck_GBps == 50.0
    # from a gateway no local hop first; into a gateway no local hop last
    assert names(api.path(dragonfly, "n0.g0", "n3.g0"))[2:5] == [
        "router0",
        "router3",
        "n3.nic0",
    ]
    # same group: one local hop
    assert names(api.path(dragonfly, "n4.g0", "n5.g0"))[2:5] == [
        "router4",
        "router5",
        "n5.nic0",
    ]


def test_dragonfly_bulk_paths_equal_router(mini):
    """Random pairs on 24 nodes x 1 GPU (4 NICs per router): bulk rows == Router.route."""
    fabric = build_fabric(dragonfly_spec(nodes=24), mini)
    assert fabric.dragonfly.router_of_nic.tolist() == list(np.repeat(np.arange(6), 4))
    rng = np.random.default_rng(3)
    same_paths(fabric, rng.integers(0, fabric.n_gpus, size=(300, 2)))


def test_dragonfly_ring_loads_and_rates_by_hand(dragonfly):
    """Ring 0->1->...->5->0. Minimal routing: cross-group flows 1->2, 3->4, 5->0 each take a
    local hop to the router holding the pair's cable and one from the router it enters;
    local link router1->router0 carries 1->2 and 5->0, so it and its twins (router3->router2,
    router5->router4) are shared by two flows: 47.5 / 2. Adaptive routing (UGAL) sends them
    through the third group instead (Valiant), counted against every global and local link:
    each flow gets its NIC's rate."""
    fabric = dragonfly
    bulk = BulkRouter(fabric)
    src = np.arange(6)
    dst = np.roll(src, -1)
    load = bulk.loads(src, dst, 1.0, valiant=False)

    def link(a, b):
        (k,) = np.flatnonzero(
            (fabric.link_src == fabric_dev(fabric, a)) & (fabric.link_dst == fabric_dev(fabric, b))
        )
        return int(k)

    assert load[link("router1", "router0")] == 2
    assert load[link("router3", "router2")] == 2
    assert load[link("router5", "router4")] == 2
    assert load[link("router0", "router1")] == 1
    rates, _ = bulk.max_min_rates(src, dst, valiant=False)
    np.testing.assert_allclose(rates, [NIC_RATE, NIC_RATE / 2] * 3)
    rates, _ = bulk.max_min_rates(src, dst)
    np.testing.assert_allclose(rates, NIC_RATE)


def fabric_dev(fabric, name):
    (dev,) = [d for d in range(fabric.n_devices) if fabric.device_name(d) == name]
    return dev


def test_dragonfly_max_min_on_a_shared_global_bundle(mini):
    """0->2 and 1->3 both need group 0 -> group 1. Minimal routing puts both on the one
    cable router0->router3: 47.5 / 2 each; two cables (one on each router) give each its
    NIC's rate. Adaptive routing with one cable sends 0->2 through group 2 (router0 ->
    router1 -> router4 -> router5 -> router2), and both run at full rate."""
    for cables, expected in ((1, NIC_RATE / 2), (2, NIC_RATE)):
        fabric = build_fabric(dragonfly_spec(global_links=cables), mini)
        rates, _ = BulkRouter(fabric).max_min_rates([0, 1], [2, 3], valiant=False)
        np.testing.assert_allclose(rates, [expected, expected])
    fabric = build_fabric(dragonfly_spec(global_links=1), mini)
    rates, _ = BulkRouter(fabric).max_min_rates([0, 1], [2, 3])
    np.testing.assert_allclose(rates, [NIC_RATE, NIC_RATE])


def test_dragonfly_global_cables_spread_over_every_router(catalog):
    """A balanced radix-64 dragonfly of 4 groups x 32 routers: every router holds global
    cables (16 ports each), 512 per group over 3 other groups: 170 cables per pair (two
    ports idle), no pair behind a single router pair."""
    spec = resolve_topology("dragonfly-cluster", catalog, 256)  # 2,048 NICs = 4 groups
    table = build_fabric(spec, catalog).dragonfly
    assert (table.groups, table.routers_per_group) == (4, 32)
    per_router = np.bincount(table.global_src, weights=table.global_count, minlength=128)
    assert per_router.min() >= 15 and per_router.max() <= 16
    pair = (table.global_src // 32) * 4 + table.global_dst // 32
    cables = np.bincount(pair, weights=table.global_count, minlength=16).reshape(4, 4)
    assert cables[~np.eye(4, dtype=bool)].min() == 170
    assert table.global_cables == 170
    routers_per_pair = np.bincount(pair, minlength=16).reshape(4, 4)
    assert routers_per_pair[0, 1] >= 10


def test_dragonfly_default_sizing():
    """Balanced radix-64 dragonfly: 16 terminals, 32 routers per group, 16 global ports per
    router; 100,000 ports -> 6,250 routers in 196 groups, 512 / 195 -> 2 cables per pair; a
    job of 64 ports still sits in a whole group of 32 routers (the others carry its
    non-minimal routes)."""
    net = NetSpec(link="x", layout="dragonfly")
    assert plan_dragonfly(net, 100_000, 64) == (196, 32, 2)
    assert plan_dragonfly(net, 64, 64)[:2] == (1, 32)  # one whole group (cabinet)
    assert plan_dragonfly(replace(net, groups=5), 320, 64) == (5, 4, 16)
    assert plan_dragonfly(replace(net, routers_per_group=8), 320, 64) == (3, 8, 64)
    # 513 groups of 32 routers x 16 global ports: every pair of groups has one cable.
    assert plan_dragonfly(net, 513 * 32 * 16, 64) == (513, 32, 1)
    with pytest.raises(EngineError, match=r"514 groups.*513 groups \(up to --nodes 32832\)"):
        plan_dragonfly(net, 514 * 32 * 16, 64, ports_per_node=8)


# --- torus -------------------------------------------------------------------------------


def torus_spec(dims=(4, 4, 2), nodes=8):
    return TopologySpec(
        gpu="h100-sxm",
        nodes=nodes,
        gpus_per_node=4,
        net=NetSpec(link="nvlink4", layout="torus", torus=dims),
        id="torus",
    )


@pytest.fixture
def torus(mini):
    return build_fabric(torus_spec(), mini)


def test_torus_neighbours(torus):
    """Rings of 4 give 2 neighbours each, the ring of 2 one: 5 links out and 5 in per chip;
    no switches, no NICs; every chip-to-chip link is in the network block."""
    fabric = torus
    assert count(fabric, DeviceKind.NIC) == 0 and count(fabric, DeviceKind.ROUTER) == 0
    assert (fabric.gpu_nic == -1).all()
    first = fabric.nodes * fabric.node_links
    src, dst = fabric.link_src[first:], fabric.link_dst[first:]
    assert src.shape[0] == 32 * 5
    assert (np.bincount(src, minlength=fabric.n_devices)[fabric.gpu_dev] == 5).all()
    assert (np.bincount(dst, minlength=fabric.n_devices)[fabric.gpu_dev] == 5).all()
    chip_of = {int(d): r for r, d in enumerate(fabric.gpu_dev)}
    neighbours = sorted(chip_of[int(d)] for s, d in zip(src, dst) if chip_of[int(s)] == 0)
    # chip 0 at (0,0,0): +x (1,0,0) chip 1, -x (3,0,0) chip 5, +y (0,1,0) chip 2,
    # -y (0,3,0) chip 10, z (0,0,1) chip 16
    assert neighbours == [1, 2, 5, 10, 16]


def test_torus_wraparound_and_ties(torus):
    """0 -> 5 (x 0 -> 3) is one hop backwards around the x ring; 0 -> 4 (x 0 -> 2, a tie)
    goes the positive way, through chip 1."""
    back = api.path(torus, "0", "5")
    assert [(h.src, h.dst, h.link) for h in back.hops] == [("n0.g0", "n1.g1", "nvlink4")]
    assert back.latency_us == pytest.approx(0.25)
    assert names(api.path(torus, "0", "4")) == ["n0.g1", "n1.g0"]


def test_torus_dimension_order(torus):
    """0 (0,0,0) -> 31 (3,3,1): x first (backwards to chip 5), then y backwards (to 15),
    then z; the intermediate chips forward with no extra latency: 3 x 0.25 us."""
    report = api.path(torus, "0", "31")
    assert names(report) == ["n1.g1", "n3.g3", "n7.g3"]
    assert report.latency_us == pytest.approx(0.75)
    # y then x is never taken: 5 (3,0,0) -> 8 (0,2,0) wraps in x before moving in y
    assert names(api.path(torus, "5", "8")) == ["n0.g0", "n0.g2", "n2.g0"]


def test_torus_hosts_are_2x2x1_blocks(catalog, torus):
    """A host's 4 chips are a 2 x 2 x 1 block: any two at most 2 hops apart (on the 4,096-chip
    TPU v5p slice too), joined by 4 of the torus's links."""
    for fabric in (torus, build_fabric(resolve_topology("tpu-v5p-torus", catalog), catalog)):
        assert fabric.torus.block == (2, 2, 1)
        hosts = np.arange(fabric.nodes)[:: max(1, fabric.nodes // 64)]
        a = np.repeat(hosts * 4, 16) + np.tile(np.repeat(np.arange(4), 4), hosts.shape[0])
        b = np.repeat(hosts * 4, 16) + np.tile(np.tile(np.arange(4), 4), hosts.shape[0])
        paths = BulkRouter(fabric).paths(a, b)
        assert int((paths >= 0).sum(axis=1).max()) == 2


def test_torus_bulk_paths_equal_router(mini):
    """Random pairs on 4x4x2 and on an odd 3x5x2 shape."""
    rng = np.random.default_rng(4)
    for dims in ((4, 4, 2), (3, 5, 2)):
        nodes = dims[0] * dims[1] * dims[2] // 2
        fabric = build_fabric(replace(torus_spec(dims, nodes), gpus_per_node=2), mini)
        pairs = rng.integers(0, fabric.n_gpus, size=(300, 2))
        same_paths(fabric, pairs)
        width = sum(d // 2 for d in dims)
        assert BulkRouter(fabric).paths(pairs[:, 0], pairs[:, 1]).shape[1] == width


def test_torus_ring_loads_by_hand(torus):
    """Around host 0's block 0 -> 1 -> 3 -> 2 -> 0: one hop each (+x, +y, -x, -y), each
    alone on its link at 20 GB/s. 0 -> 3 goes x then y (0 -> 1 -> 3), so it shares the
    link 1 -> 3 with 1 -> 3: half each."""
    fabric = torus
    table = fabric.torus
    bulk = BulkRouter(fabric)
    src = np.array([0, 1, 3, 2])
    dst = np.array([1, 3, 2, 0])
    load = bulk.loads(src, dst, 1.0)
    assert load.sum() == 4
    for link in (table.out[0, 0, 0], table.out[1, 1, 0], table.out[3, 0, 1], table.out[2, 1, 1]):
        assert load[link] == 1
    rates, _ = bulk.max_min_rates(src, dst)
    np.testing.assert_allclose(rates, ICI_RATE)
    rates, _ = bulk.max_min_rates([0, 1], [3, 3])
    np.testing.assert_allclose(rates, [ICI_RATE / 2] * 2)


def test_torus_spec_checks(mini, tmp_path):
    """One-line errors: a shape that does not hold the chips, torus keys on another layout,
    a scale-up link on a switched layout, a zero group count, an intra-node fabric under a
    torus; a torus without a shape gets the most cube-like one."""
    cases = [
        (
            "none",
            "{link: nvlink4, layout: torus, torus: [4, 4, 4]}",
            r":5: net\.torus: 4x4x4 = 64 chips, but nodes x gpus_per_node = 8 x 4 = 32",
        ),
        (
            "nvswitch",
            "{link: ib-ndr, layout: leaf-spine, torus: [4, 4, 2]}",
            r"net\.torus: only applies to layout torus \(layout is leaf-spine\)",
        ),
        ("nvswitch", "{link: nvlink4, layout: leaf-spine}", r"nvlink4 is not a network link"),
        ("nvswitch", "{link: ib-ndr, layout: dragonfly, groups: 0}", r"net\.groups: must be at"),
        ("mesh", "{link: nvlink4, layout: torus}", r"intra\.fabric: must be none with net"),
    ]
    for i, (intra, net, message) in enumerate(cases):
        path = tmp_path / f"t{i}.yaml"
        path.write_text(
            f"gpu: h100-sxm\nnodes: 8\ngpus_per_node: 4\nintra: {{fabric: {intra}}}\nnet: {net}\n"
        )
        with pytest.raises(HwdbError, match=message) as err:
            parse_topology(read_yaml(path), mini)
        assert "\n" not in str(err.value)
    path = tmp_path / "ok.yaml"
    path.write_text(
        "gpu: h100-sxm\nnodes: 8\ngpus_per_node: 4\n"
        "net: {link: nvlink4, layout: torus, nics_per_node: 0}\n"
    )
    spec = parse_topology(read_yaml(path), mini)
    assert build_fabric(spec, mini).torus.dims == (2, 4, 4)
    with pytest.raises(EngineError, match="torus 4x4 holds 16 chips, the topology has 32"):
        build_fabric(torus_spec(dims=(4, 4)), mini)


def test_torus_shape_and_nodes_option(catalog):
    """Derived shapes are the most cube-like; --nodes re-derives a named torus's shape."""
    assert torus_shape(4096) == (16, 16, 16)
    assert torus_shape(100_000) == (40, 50, 50)
    assert torus_shape(7) == (1, 1, 7)
    spec = resolve_topology("tpu-v5p-torus", catalog)
    assert spec.net.torus == (16, 16, 16) and spec.n_gpus == 4096
    assert resolve_topology("tpu-v5p-torus", catalog, 16).net.torus is None
    fabric = build_fabric(resolve_topology("tpu-v5p-torus", catalog, 16), catalog)
    assert fabric.torus.dims == (4, 4, 4)


# --- three-tier --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    """Mini catalog plus an 8-port switch: 4 ports down, 4 up at 1:1."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "switches.yaml").write_text(
            "switches:\n  - {id: tiny-ib, name: Tiny IB switch, family: infiniband, radix: 8,"
            " port_Gbps: 400, lat_us: 0.2, source: test}\n"
        )
        yield load_catalog([MINI, Path(tmp)])


def three_tier(nodes=8, o=1.0, spine_o=1.0):
    return TopologySpec(
        gpu="h100-sxm",
        nodes=nodes,
        gpus_per_node=4,
        intra=IntraSpec(fabric="nvswitch", link="nvlink4"),
        net=NetSpec(
            link="ib-ndr",
            nics_per_node=4,
            layout="three-tier",
            switch="tiny-ib",
            oversubscription=o,
            spine_oversubscription=spine_o,
        ),
        id="three-tier",
    )


def test_three_tier_cross_pod_path_by_hand(tiny):
    """8 nodes x 4 rails, 4 nodes per rail leaf: leafs 0-3 (nodes 0-3) form pod 0, leafs 4-7
    pod 1, 4 spines per pod, 4 core planes. n0.g0 -> n4.g0 climbs leaf0 -> spine p ->
    core p -> spine 4+p -> leaf4. Leaf uplinks 4 x 50 / 4 = 50 GB/s; spine-core bundles
    carry the pod's 4 x 200 GB/s over 4 spines = 200 GB/s."""
    fabric = build_fabric(three_tier(), tiny)
    assert count(fabric, DeviceKind.LEAF) == 8
    assert count(fabric, DeviceKind.SPINE) == 8 and count(fabric, DeviceKind.CORE) == 4
    assert fabric.tree.pod_of_leaf.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    report = api.path(fabric, "n0.g0", "n4.g0")
    hops = names(report)[2:8]
    plane = int(hops[1][len("spine") :])
    assert hops == [
        "leaf0",
        f"spine{plane}",
        f"core{plane}",
        f"spine{4 + plane}",
        "leaf4",
        "n4.nic0",
    ]
    assert [h.bw_GBps for h in report.hops[3:7]] == [50.0, 200.0, 200.0, 50.0]
    rng = np.random.default_rng(5)
    same_paths(fabric, rng.integers(0, fabric.n_gpus, size=(200, 2)))


def test_three_tier_oversubscription_halves_cross_pod_rates(tiny):
    """Every GPU of pod 0 sends to its twin in pod 1 (16 flows). At 1:1 each gets its NIC's
    47.5 GB/s (pod uplinks 4 x 200 x 0.95 = 760 = 16 x 47.5). At 2:1 spine -> core a spine
    takes 5 ports down and 3 up, using 4 down and 2 up: the pod's uplinks halve, 23.75
    each. At 2:1 leaf -> spine an 8-port leaf splits into 5 down and 3 up (whole ports: 5:3
    built, the plan says so); with 10 nodes each leaf holds 5 of the 20 senders on 3
    uplink cables: 3 x 47.5 / 5 = 28.5 each."""
    src = np.arange(16)
    for spine_o, expected in ((1.0, NIC_RATE), (2.0, NIC_RATE / 2)):
        fabric = build_fabric(three_tier(spine_o=spine_o), tiny)
        rates, load = BulkRouter(fabric).max_min_rates(src, src + 16)
        np.testing.assert_allclose(rates, expected)
    fabric = build_fabric(three_tier(nodes=10, o=2.0), tiny)
    assert fabric.tree.leaf_of_nic.reshape(10, 4)[:, 0].tolist() == [0] * 5 + [4] * 5
    assert ("leaf oversubscription", "1.67") in fabric.network_plan
    src = np.arange(20)
    rates, _ = BulkRouter(fabric).max_min_rates(src, src + 20)
    np.testing.assert_allclose(rates, 3 * NIC_RATE / 5)


# --- named topologies and scale ----------------------------------------------------------


@pytest.mark.parametrize("name", ["tpu-v5p-torus", "gb200-nvl72-cluster", "dragonfly-cluster"])
def test_named_large_topologies_route(catalog, name):
    """Each builds, routes its first to its last GPU, and agrees with the bulk router."""
    fabric = build_fabric(resolve_topology(name, catalog), catalog)
    last = fabric.n_gpus - 1
    report = api.path(fabric, "0", str(last))
    assert report.hops[0].src == "n0.g0" and report.hops[-1].dst == fabric.gpu_name(last)
    rng = np.random.default_rng(6)
    same_paths(fabric, rng.integers(0, fabric.n_gpus, size=(50, 2)))


def test_tpu_v5p_records(catalog):
    """ICI: 100 GB/s per link per direction, 6 per chip, scale-up tier, family ici."""
    link = catalog.links["ici-v5p"]
    assert (link.family, link.tier, link.bw_GBps, link.links_per_gpu) == (
        "ici",
        "scale-up",
        100.0,
        6,
    )
    tpu = catalog.gpus["tpu-v5p"]
    assert (tpu.scaleup_link, tpu.scaleup_links, tpu.hbm_bw_GBps) == ("ici-v5p", 6, 2765.0)


@pytest.mark.parametrize(
    ("name", "nodes"), [("dragonfly-cluster", 12_500), ("tpu-v5p-torus", 25_000)]
)
def test_100k_gpu_builds_and_bulk_metrics(catalog, name, nodes):
    """100,000 GPUs build in < 5 s; path metrics of 10,000 pairs in < 10 s. (A v5p pod
    holds 8,960 chips: the torus case is a v5p-like chip whose ICI record sets no limits.)"""
    if name.startswith("tpu"):
        unlimited = replace(catalog.links["ici-v5p"], torus_max=(), torus_max_chips=None)
        catalog = replace(catalog, links={**catalog.links, "ici-v5p": unlimited})
    spec = resolve_topology(name, catalog, nodes)
    start = time.perf_counter()
    fabric = build_fabric(spec, catalog)
    assert time.perf_counter() - start < 5.0
    assert fabric.n_gpus == 100_000
    rng = np.random.default_rng(7)
    src = rng.integers(0, fabric.n_gpus, 10_000)
    dst = rng.integers(0, fabric.n_gpus, 10_000)
    start = time.perf_counter()
    metrics = BulkRouter(fabric).path_metrics(src, dst)
    assert time.perf_counter() - start < 10.0
    moved = src != dst
    assert np.isfinite(metrics.bottleneck_GBps[moved]).all()
    assert (metrics.latency_us[moved] > 0).all()


def test_bulk_falls_back_to_router_without_a_table(mini):
    """A fabric with network links but no routing table (as a plugin's builder might make)
    is routed pair by pair with Router.route, not guessed."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    bare = replace(fabric, tree=None)
    router = Router(bare)
    rng = np.random.default_rng(8)
    pairs = rng.integers(0, bare.n_gpus, size=(100, 2))
    rows = BulkRouter(bare, router).paths(pairs[:, 0], pairs[:, 1])
    for (a, b), row in zip(pairs, rows):
        assert np.array_equal(row[row >= 0], router.route(int(a), int(b)))
    with_table = BulkRouter(fabric).path_metrics(pairs[:, 0], pairs[:, 1])
    without = BulkRouter(bare).path_metrics(pairs[:, 0], pairs[:, 1])
    np.testing.assert_allclose(without.bottleneck_GBps, with_table.bottleneck_GBps)
    np.testing.assert_allclose(without.latency_us, with_table.latency_us)


def test_valiant_router_aggregates_give_the_same_loads(mini, monkeypatch):
    """Beyond ``MAX_SPREAD`` (flows x resources), Valiant flows count a router's local
    links as two aggregates (out of it, into it) instead of one entry per link: six
    resources per flow, not 2 a + 4. Spread back onto the links, the loads are the same
    and so is the busiest link's time per byte."""
    spec = replace(
        dragonfly_spec(nodes=40), net=replace(dragonfly_spec().net, groups=5, routers_per_group=4)
    )
    fabric = build_fabric(spec, mini)
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, fabric.n_gpus, size=(2, 400))
    keep = src != dst
    src, dst = src[keep], dst[keep]
    volume = rng.uniform(0.5, 2.0, src.shape[0])
    exact = BulkRouter(fabric)
    exact_load = exact.loads(src, dst, volume, valiant=True)
    exact_entries = len(exact._incidence(src, dst, True).res)
    monkeypatch.setattr(DragonflyNetwork, "MAX_SPREAD", 0)
    coarse = BulkRouter(fabric)
    coarse_load = coarse.loads(src, dst, volume, valiant=True)
    assert len(coarse._incidence(src, dst, True).res) < exact_entries
    np.testing.assert_allclose(coarse.link_loads(coarse_load), exact.link_loads(exact_load))
    np.testing.assert_allclose(coarse._busiest(coarse_load), exact._busiest(exact_load))
