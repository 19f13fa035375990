"""Explicit cluster fabrics: the ``cluster`` section loads strictly, builds exactly (real names,
real bundles), routes with the existing routers, and stays fast at 4,000 switches."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from fabricui.engine.bulk import bulk_router
from fabricui.engine.routing import Router
from fabricui.errors import EngineError, HwdbError
from fabricui.fabric import DeviceKind, build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.model.cluster import ClusterCable, ClusterHost, ClusterSpec, ClusterSwitch
from fabricui.model.topology import IntraSpec, NetSpec, TopologySpec

MINI = """\
id: mini
gpu: h100-sxm
nodes: 4
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, link: nvlink4, sockets: 2, pcie_switches: 4}
net: {link: ib-ndr, gbps: 400, nics_per_node: 2, layout: explicit}
cluster:
  switches:
    - L1 leaf QM9700
    - L2 leaf
    - S1 spine
    - S2 spine
  hosts:
    - h1 L1 L1
    - h2 L1 L1@200
    - h3 L2 -
    - h4 L2 L2
  cables:
    - L1 S1 2 400
    - L1 S2 2 400
    - L2 S1 2 400
    - L2 S2 1 400
    - L2 S2 1 400
"""


def load(text: str, catalog):
    return parse_topology(parse_yaml(text, "cluster.yaml"), catalog)


def names_on(fabric, links) -> list[str]:
    return [fabric.device_name(int(fabric.link_dst[k])) for k in links]


def test_mini_builds_exactly(catalog):
    """Real names and tiers, one bundle per cable line (repeated lines add up), per-cable
    rates, and the cluster's node count fixed."""
    spec = load(MINI, catalog)
    fabric = build_fabric(spec, catalog)
    switches = fabric.devices_of_kind(DeviceKind.LEAF).tolist()
    assert [fabric.device_name(d) for d in switches] == ["L1", "L2"]
    assert [fabric.device_name(d) for d in fabric.devices_of_kind(DeviceKind.SPINE)] == [
        "S1",
        "S2",
    ]
    assert fabric.model_of(switches[0]) == "QM9700"
    bw = {
        (fabric.device_name(int(a)), fabric.device_name(int(b))): (float(w), int(c))
        for a, b, w, c in zip(
            fabric.link_src, fabric.link_dst, fabric.link_bw_GBps, fabric.link_count
        )
        if int(fabric.dev_node[a]) < 0 and int(fabric.dev_node[b]) < 0
    }
    assert bw[("L1", "S1")] == (100.0, 2) and bw[("L2", "S2")] == (100.0, 2)
    nic_rates = sorted(
        float(w)
        for a, b, w in zip(fabric.link_src, fabric.link_dst, fabric.link_bw_GBps)
        if fabric.dev_kind[a] == DeviceKind.NIC and int(fabric.dev_node[b]) < 0
    )
    assert nic_rates == [25.0] + [50.0] * 6
    assert not spec.nodes_settable


def test_routes_cross_real_switches(catalog):
    """The router's path names the real switches; the bulk router agrees on its metrics."""
    fabric = build_fabric(load(MINI, catalog), catalog)
    router = Router.for_fabric(fabric)
    path = router.route(0, 31)
    hops = names_on(fabric, path)
    assert "L1" in hops and "L2" in hops and ({"S1", "S2"} & set(hops))
    metrics = bulk_router(router).path_metrics([0, 15], [31, 31])
    assert metrics.bottleneck_GBps[0] == pytest.approx(50.0)
    assert metrics.bottleneck_GBps[1] == pytest.approx(25.0)  # n1.g7 uses h2's 200G port


def test_uncabled_port_uses_the_next_port(catalog):
    """h3's second NIC port has no cable: its GPUs use the first port (as NCCL would)."""
    fabric = build_fabric(load(MINI, catalog), catalog)
    nics = {fabric.device_name(int(fabric.gpu_nic[r])) for r in range(16, 24)}
    assert nics == {"h3.nic0"}
    assert "h3.nic0" in names_on(fabric, Router.for_fabric(fabric).route(23, 0))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    - L1 S1 2 400", "    - L1 S9 2 400", "switch S9 is not in cluster.switches"),
        ("    - L1 S1 2 400", "    - L1 L1 2 400", "a self-loop"),
        ("    - L1 S1 2 400", "    - L1 S1 two 400", "SWITCH SWITCH CABLES GBPS"),
        ("    - L1 S1 2 400", "    - L1 S1 2 -5", "not a positive number of Gb/s"),
        ("    - L2 leaf", "    - L2 tor", "TIER leaf/spine/core"),
        ("    - L2 leaf", "    - L1 leaf", "switch L1 is listed twice"),
        ("    - h4 L2 L2", "    - h1 L2 L2", "host h1 is listed twice"),
        ("    - h4 L2 L2", "    - h4 L2", "expected 2 NIC port(s) per host"),
        ("    - h4 L2 L2", "    - h4 L2 X9", "switch X9 is not in switches"),
        ("    - h4 L2 L2\n", "", "needs nodes x hosts_per_node = 4 x 1 = 4 hosts (got 3)"),
        ("layout: explicit}", "layout: leaf-spine}", "only used with net.layout: explicit"),
        ("cluster:\n", "cluster:\n  blocks: [a]\n", "needs one name per node (4), got 1"),
        ("cluster:\n", "cluster:\n  hosts_per_node: 3\n", "does not divide gpus_per_node"),
        ("cluster:\n", "cluster:\n  racks: 1\n", "unknown key"),
    ],
)
def test_bad_cluster_sections_name_the_line(catalog, old, new, message):
    """Every broken cluster line fails on load with its file:line and one line of text."""
    assert old in MINI
    with pytest.raises(HwdbError) as info:
        load(MINI.replace(old, new, 1), catalog)
    text = info.value.message
    assert message in text and text.startswith("cluster.yaml:") and "\n" not in text


def test_explicit_without_cluster(catalog):
    """net.layout explicit needs the cluster section."""
    text = MINI.split("cluster:")[0]
    with pytest.raises(HwdbError, match="needs a cluster section"):
        load(text, catalog)


def test_changing_the_node_count_is_refused(catalog):
    """A spec whose hosts do not match its nodes (e.g. rescaled) is a one-line build error."""
    spec = load(MINI, catalog)
    with pytest.raises(EngineError, match="lists 4 hosts for 5 nodes"):
        build_fabric(replace(spec, nodes=5), catalog)


def big_cluster(
    pods: int = 40,
    leaves_per_pod: int = 50,
    spines_per_pod: int = 40,
    cores_per_plane: int = 10,
    hosts: int = 1000,
    rails: int = 8,
) -> ClusterSpec:
    """A 3-tier fat-tree of 2,000 leaves, 1,600 spines and 400 cores (4,000 switches, 96,000
    bundles) with ``hosts`` rail-optimized 8-NIC hosts."""
    leaves = [f"L{p:02d}-{i:02d}" for p in range(pods) for i in range(leaves_per_pod)]
    spines = [[f"S{p:02d}-{i:02d}" for i in range(spines_per_pod)] for p in range(pods)]
    cores = [[f"C{g:02d}-{j:02d}" for j in range(cores_per_plane)] for g in range(spines_per_pod)]
    switches = [ClusterSwitch(n, "leaf") for n in leaves]
    switches += [ClusterSwitch(n, "spine") for row in spines for n in row]
    switches += [ClusterSwitch(n, "core") for row in cores for n in row]
    cables = []
    for p in range(pods):
        for i in range(leaves_per_pod):
            cables += [ClusterCable(leaves[p * leaves_per_pod + i], s, 1, 400.0) for s in spines[p]]
        for g, s in enumerate(spines[p]):
            cables += [ClusterCable(s, c, 1, 400.0) for c in cores[g]]
    host_list = [
        ClusterHost(
            f"node{h:05d}",
            tuple(leaves[((h // 4) * rails + k) % len(leaves)] for k in range(rails)),
        )
        for h in range(hosts)
    ]
    return ClusterSpec(switches=tuple(switches), cables=tuple(cables), hosts=tuple(host_list))


def test_four_thousand_switches_stay_fast(catalog):
    """A generated 4,000-switch, 96,000-bundle fabric of 8,000 GPUs builds in seconds, and a
    path across it (router set up included) takes well under a second."""
    cluster = big_cluster()
    assert len(cluster.switches) == 4000
    spec = TopologySpec(
        gpu="h100-sxm",
        nodes=1000,
        gpus_per_node=8,
        intra=IntraSpec(fabric="nvswitch", link="nvlink4", sockets=2, pcie_switches=4),
        net=NetSpec(link="ib-ndr", gbps=400, nics_per_node=8, layout="explicit"),
        id="big",
        cluster=cluster,
        nodes_settable=False,
    )
    start = time.perf_counter()
    fabric = build_fabric(spec, catalog)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    path = Router.for_fabric(fabric).route(0, 7999)
    path_s = time.perf_counter() - start
    assert build_s < 5.0, f"build took {build_s:.2f} s"
    assert path_s < 1.0, f"first path took {path_s:.2f} s"
    hops = names_on(fabric, path)
    # PXN: over NVLink to the GPU on the destination's rail (node00000.g7), then that
    # rail's leaf; hosts go by their names.
    assert hops[:4] == ["node00000.nvsw0", "node00000.g7", "node00000.pcie3", "node00000.nic7"]
    assert hops[4] == "L00-07" and hops[-4] == "L39-49"
    assert [h[0] for h in hops[4:9]] == ["L", "S", "C", "S", "L"]
    metrics = bulk_router(Router.for_fabric(fabric)).path_metrics(
        np.arange(0, 80, 8), np.arange(7920, 8000, 8)
    )
    assert np.all(metrics.bottleneck_GBps == 50.0)
