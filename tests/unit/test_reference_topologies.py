"""Every built-in topology builds, and its paths match hand-derived hop lists and formulas.

Latencies are written as the sum a person would do on paper: link latencies along the path
plus the forwarding latency of every switch and NIC passed (figures from the catalog).
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui import api
from fabricui.fabric import DeviceKind, build_fabric
from fabricui.fabric.ids import parse_gpu_id, placement
from fabricui.hwdb.resolve import resolve_topology
from fabricui.render.path import render_path

REFERENCE = [
    "dgx-a100",
    "dgx-h100",
    "hgx-h200",
    "dgx-b200",
    "gb200-nvl72",
    "dgx-h100-pod",
    "pcie-rtx4090x2",
    "pcie-rtx4090x8",
    "mi300x-node",
    "gh200-quad",
    "h100-ib-cluster",
]


def fabric_of(catalog, name, nodes=None):
    return build_fabric(resolve_topology(name, catalog, nodes), catalog)


def count(fabric, kind):
    return int((fabric.dev_kind == kind).sum())


@pytest.mark.parametrize("name", REFERENCE)
def test_every_reference_topology_builds_and_routes(catalog, name):
    """Each builds, every GPU reaches GPU 0 and its last peer, over connected hops."""
    fabric = fabric_of(catalog, name)
    assert fabric.n_gpus == fabric.nodes * fabric.gpus_per_node
    last = fabric.n_gpus - 1
    report = api.path(fabric, "0", str(last), size_bytes=1 << 20)
    assert report.bottleneck_GBps > 0 and report.latency_us > 0
    assert report.hops[0].src == "n0.g0" and report.hops[-1].dst == fabric.gpu_name(last)
    for before, after in zip(report.hops, report.hops[1:]):
        assert before.dst == after.src


def test_dgx_h100_pod_layout_and_cross_node_path(catalog):
    """4 nodes x 8 GPUs, one NDR NIC per GPU, two leafs joined directly, 1 NVSwitch per node.
    n0.g0 -> n3.g7 crosses rails: PXN hands the data over NVLink to n0.g7, whose NIC is on
    rail 7, so the network part stays under leaf1."""
    fabric = fabric_of(catalog, "dgx-h100-pod")
    assert (fabric.n_gpus, count(fabric, DeviceKind.NIC)) == (32, 32)
    assert count(fabric, DeviceKind.LEAF) == 2 and count(fabric, DeviceKind.SPINE) == 0
    assert count(fabric, DeviceKind.NVSWITCH) == 4
    report = api.path(fabric, "n0.g0", "n3.g7", size_bytes=2**30)
    assert [h.dst for h in report.hops] == [
        "n0.nvsw0",
        "n0.g7",
        "n0.pcie3",
        "n0.nic7",
        "leaf1",
        "n3.nic7",
        "n3.pcie3",
        "n3.g7",
    ]
    links, sw = catalog.links, catalog.switches
    ndr = links["ib-ndr"]
    assert report.bottleneck_GBps == ndr.bw_GBps == 50.0
    assert report.bottleneck_link == "n0.nic7->leaf1"
    tree = fabric.tree
    assert fabric.link_count[tree.direct[0, 1]] == 16  # 16 NICs per leaf, all crossing
    expected_lat = (
        2 * links["nvlink4"].lat_us
        + sw["nvswitch3"].lat_us
        + 4 * links["pcie5"].lat_us
        + 2 * ndr.lat_us
        + 2 * sw["pcie-gen5-switch"].lat_us
        + 2 * catalog.nics["cx7-ndr"].lat_us
        + sw["quantum-2"].lat_us
    )
    assert report.latency_us == pytest.approx(expected_lat)
    assert report.transfer_us == pytest.approx(expected_lat + 2**30 / 50e3)


@pytest.mark.parametrize(
    ("name", "link", "per_gpu_GBps"),
    [
        ("dgx-a100", "nvlink3", 12 * 25.0),
        ("dgx-h100", "nvlink4", 18 * 25.0),
        ("hgx-h200", "nvlink4", 18 * 25.0),
        ("dgx-b200", "nvlink5", 18 * 50.0),
        ("gb200-nvl72", "nvlink5", 18 * 50.0),
    ],
)
def test_nvswitch_nodes_route_over_nvlink(catalog, name, link, per_gpu_GBps):
    """GPU -> NVSwitch -> GPU at the GPU's full NVLink bandwidth per direction."""
    fabric = fabric_of(catalog, name)
    report = api.path(fabric, "0", str(fabric.gpus_per_node - 1))
    assert [h.link for h in report.hops] == [link, link]
    assert report.bottleneck_GBps == pytest.approx(per_gpu_GBps)
    expected = (
        2 * catalog.links[link].lat_us
        + fabric.dev_lat_us[fabric.devices_of_kind(DeviceKind.NVSWITCH)[0]]
    )
    assert report.latency_us == pytest.approx(expected)


def test_gb200_nvl72_is_one_nvlink_domain_of_18_hosts(catalog):
    """18 trays x 4 GPUs share one NVLink domain: n0.g0 -> n17.g3 is NVLink 5 all the way,
    through the rack's switch (d0.nvsw0); the old per-rack id n0.g71 still names that GPU."""
    fabric = fabric_of(catalog, "gb200-nvl72")
    assert (fabric.nodes, fabric.gpus_per_node, fabric.hosts_per_domain) == (18, 4, 18)
    assert fabric.n_gpus == 72 and count(fabric, DeviceKind.CPU) == 36
    report = api.path(fabric, "n0.g0", "n17.g3")
    assert [h.dst for h in report.hops] == ["d0.nvsw0", "n17.g3"]
    assert {h.link for h in report.hops} == {"nvlink5"}
    assert report.bottleneck_GBps == pytest.approx(18 * 50.0)
    alias = api.path(fabric, "n0.g0", "n0.g71")
    assert alias.dst == "n17.g3" and alias.hops == report.hops
    assert render_path(report, fabric).splitlines()[0].endswith("(same domain d0, 2 hops)")
    assert placement(fabric, parse_gpu_id(fabric, "n3.g1"), parse_gpu_id(fabric, "n3.g2")) == (
        "same node"
    )


def test_gb200_grace_c2c_joins_a_grace_to_its_own_two_gpus(catalog):
    """NVLink-C2C is per superchip: each Grace links to its own two GPUs (450 GB/s per
    direction shared by the two, 225 each), one C2C bundle joins a tray's two Graces, and
    no Grace links to another tray's (no 36-CPU mesh)."""
    fabric = fabric_of(catalog, "gb200-nvl72")
    c2c = fabric.generations.index("nvlink-c2c")
    links = fabric.link_gen == c2c
    kinds = fabric.dev_kind
    cpu_cpu = (
        links
        & (kinds[fabric.link_src] == DeviceKind.CPU)
        & (kinds[fabric.link_dst] == DeviceKind.CPU)
    )
    assert int(cpu_cpu.sum()) == 2 * 18  # one bundle (two directions) per tray
    same_host = fabric.dev_node[fabric.link_src] == fabric.dev_node[fabric.link_dst]
    assert bool(np.all(same_host[links]))
    gpu_cpu = links & (kinds[fabric.link_src] == DeviceKind.GPU)
    assert int(gpu_cpu.sum()) == 72
    assert np.allclose(fabric.link_bw_GBps[gpu_cpu], catalog.links["nvlink-c2c"].bw_GBps / 2)
    report = api.path(fabric, "n0.g1", "n0.g2")  # two superchips of one tray: NVLink
    assert {h.link for h in report.hops} == {"nvlink5"}


def test_superchip_spec_without_pcie_switches_key_joins_gpu_and_grace_directly(catalog):
    """A spec with the NVLink-C2C host link and no ``pcie_switches`` gets none: GPU -C2C->
    Grace -PCIe-> NIC, as on the shipped GB200 topologies that state ``pcie_switches: 0``."""
    from dataclasses import replace

    spec = resolve_topology("gb200-nvl72-cluster", catalog, None)
    spec = replace(spec, intra=replace(spec.intra, pcie_switches=None))
    fabric = build_fabric(spec, catalog)
    assert count(fabric, DeviceKind.PCIE_SWITCH) == 0
    report = api.path(fabric, "d0.g3", "d1.g3")  # same rail: no PXN detour
    assert [h.link for h in report.hops][:2] == ["nvlink-c2c", "pcie5"]
    assert report.hops[0].dst == "n0.cpu1"


def test_mesh_nodes(catalog):
    """MI300X: one xGMI link per pair (64 GB/s); GH200 quad: 6 NVLink 4 links per pair."""
    mi = api.path(fabric_of(catalog, "mi300x-node"), "n0.g0", "n0.g5")
    assert [(h.link, h.count, h.bw_GBps) for h in mi.hops] == [("xgmi3", 1, 64.0)]
    gh = api.path(fabric_of(catalog, "gh200-quad"), "n0.g1", "n0.g3")
    assert [(h.link, h.count, h.bw_GBps) for h in gh.hops] == [("nvlink4", 6, 150.0)]


def test_gh200_quad_reaches_the_network_through_grace(catalog):
    """Across nodes a GH200 goes GPU -C2C-> Grace -PCIe-> Slingshot NIC."""
    fabric = fabric_of(catalog, "gh200-quad", nodes=2)
    report = api.path(fabric, "n0.g2", "n1.g2")
    assert [h.link for h in report.hops] == [
        "nvlink-c2c",
        "pcie4",
        "slingshot",
        "slingshot",
        "pcie4",
        "nvlink-c2c",
    ]
    assert report.bottleneck_GBps == 25.0  # 200 Gb/s Slingshot-11


def test_consumer_pcie_box_stages_through_host(catalog):
    """Two RTX 4090 with P2P off: GPU -> CPU (host memory) -> GPU at PCIe 4.0 x16."""
    report = api.path(fabric_of(catalog, "pcie-rtx4090x2"), "0", "1")
    assert [(h.dst, h.link) for h in report.hops] == [("n0.cpu0", "pcie4"), ("n0.g1", "pcie4")]
    assert report.bottleneck_GBps == catalog.links["pcie4"].bw_GBps


def test_pcie_rtx4090x8_crosses_sockets_and_shares_nics(catalog):
    """GPU 0 to 7 crosses both sockets; 2 NICs are shared by 4 GPUs each."""
    fabric = fabric_of(catalog, "pcie-rtx4090x8")
    report = api.path(fabric, "0", "7")
    assert [h.dst for h in report.hops] == ["n0.pcie0", "n0.cpu0", "n0.cpu1", "n0.pcie3", "n0.g7"]
    nics = [fabric.device_name(d) for d in fabric.gpu_nic]
    assert nics == ["n0.nic0"] * 4 + ["n0.nic1"] * 4


def test_h100_ib_cluster_is_a_rail_optimized_two_tier_fat_tree(catalog):
    """32 nodes: one scalable unit, 8 rail leafs (32 ports down, 32 up each), 4 spines of 64
    ports, 8 whole cables (400 GB/s) per leaf-spine bundle. Same rail: under one leaf;
    another rail: PXN to the local GPU of the destination's rail, still one leaf."""
    fabric = fabric_of(catalog, "h100-ib-cluster")
    assert fabric.n_gpus == 256
    assert count(fabric, DeviceKind.LEAF) == 8 and count(fabric, DeviceKind.SPINE) == 4
    assert set(fabric.link_count[fabric.tree.leaf_up].ravel().tolist()) == {8}
    same_rail = api.path(fabric, "n0.g3", "n31.g3")
    assert [h.dst for h in same_rail.hops][2:4] == ["leaf3", "n31.nic3"]
    cross_rail = api.path(fabric, "n0.g0", "n31.g5")
    names = [h.dst for h in cross_rail.hops]
    assert names[:2] == ["n0.nvsw0", "n0.g5"] and names[4:6] == ["leaf5", "n31.nic5"]


def test_h100_ib_cluster_nodes_option(catalog):
    """--nodes rescales the cluster; 128 nodes = 1,024 GPUs: 4 scalable units, 32 leafs,
    16 spines with 2 cables from every leaf (64 ports each)."""
    fabric = fabric_of(catalog, "h100-ib-cluster", nodes=128)
    assert fabric.n_gpus == 1024
    assert count(fabric, DeviceKind.LEAF) == 32 and count(fabric, DeviceKind.SPINE) == 16
    assert set(fabric.link_count[fabric.tree.leaf_up].ravel().tolist()) == {2}


@pytest.mark.parametrize(("name", "nodes"), [("h100-ib-cluster", 1024), ("dgx-h100-pod", 16)])
def test_idle_paths_get_the_nics_rate_on_whole_cables(catalog, name, nodes):
    """Between any two GPUs of an idle fabric the bottleneck is the NIC's 50 GB/s and every
    switch-to-switch hop is a whole number of cables (issue #13's acceptance check)."""
    from fabricui.engine.bulk import BulkRouter

    fabric = fabric_of(catalog, name, nodes=nodes)
    rng = np.random.default_rng(13)
    src = rng.integers(0, fabric.n_gpus, 2000)
    dst = (src + rng.integers(1, fabric.n_gpus, 2000)) % fabric.n_gpus
    cross = src // fabric.gpus_per_node != dst // fabric.gpus_per_node
    metrics = BulkRouter(fabric).path_metrics(src[cross], dst[cross])
    np.testing.assert_allclose(metrics.bottleneck_GBps, 50.0)
    for a, b in list(zip(src[cross], dst[cross]))[:50]:
        report = api.path(fabric, str(a), str(b))
        assert report.bottleneck_GBps == 50.0
        for hop in report.hops:
            if hop.link == "ib-ndr":
                assert hop.bw_GBps == pytest.approx(hop.count * 50.0)
    switches = np.isin(fabric.dev_kind, [DeviceKind.LEAF, DeviceKind.SPINE, DeviceKind.CORE])
    between = switches[fabric.link_src] & switches[fabric.link_dst]
    port = catalog.links["ib-ndr"].bw_GBps
    np.testing.assert_allclose(fabric.link_bw_GBps[between], fabric.link_count[between] * port)
    nic_ports = np.bincount(
        fabric.link_dst[np.isin(fabric.dev_kind[fabric.link_src], [DeviceKind.NIC])],
        weights=fabric.link_count[np.isin(fabric.dev_kind[fabric.link_src], [DeviceKind.NIC])],
        minlength=fabric.n_devices,
    )
    ports = (
        np.bincount(
            fabric.link_src[between], weights=fabric.link_count[between], minlength=fabric.n_devices
        )
        + nic_ports
    )
    assert ports[switches].max() <= catalog.switches["quantum-2"].radix
