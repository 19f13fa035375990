"""Hardware as it is built: each figure asserted against its source's own number.

Sources (the hwdb records and topology files cite them): NVIDIA's GB300 NVL72 reference
architecture (18 trays x 4 GPUs + 2 Grace, 4 ConnectX-8 per tray) and Hot Chips 2025
(ConnectX-8: Gen6 x16 to its GPU, Gen5 x16 to Grace); Google's TPU v5p page (pod 8,960
chips, largest slice 16x16x24 = 6,144, torus only for whole 4x4x4 cubes), v6e page (4 ICI
ports, 2D torus, 256-chip pod, 8 chips per host) and TPU7x page (pod 9,216); AWS's
trn2-arch.rst (4x4 torus per instance, 1,024 and 256 GB/s per chip, 3,200 Gb/s EFA per
instance); the GPUs' FP8/FP4 tables in hwdb/gpus.yaml.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.bulk import BulkRouter
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.traffic import pattern_flows
from fabricui.engine.training.device import make_device
from fabricui.errors import EngineError
from fabricui.fabric import DeviceKind, build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.jobs import group_ranks
from fabricui.services.session import collective_algorithms


def fabric_of(catalog, name, nodes=None):
    return build_fabric(resolve_topology(name, catalog, nodes), catalog)


def write(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# --- scale-up racks as trays ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["gb200-nvl72", "gb300-nvl72", "vera-rubin-nvl144"])
def test_nvl72_racks_are_18_trays_of_4_gpus_and_2_cpus(catalog, name):
    """18 trays (hosts) x 4 GPUs share one NVLink domain; each tray has 2 CPUs, C2C to its
    own 2 GPUs, one C2C link between them and none to another tray (not 630 links of a
    36-CPU mesh); --group host is one tray."""
    fabric = fabric_of(catalog, name)
    assert (fabric.nodes, fabric.gpus_per_node, fabric.hosts_per_domain) == (18, 4, 18)
    cpus = fabric.devices_of_kind(DeviceKind.CPU)
    assert cpus.shape[0] == 36
    between = np.isin(fabric.link_src, cpus) & np.isin(fabric.link_dst, cpus)
    assert between.sum() == 2 * 18  # one bundle per tray, both directions
    assert np.all(
        fabric.dev_node[fabric.link_src[between]] == fabric.dev_node[fabric.link_dst[between]]
    )
    assert np.array_equal(group_ranks(fabric, "host"), np.arange(4))


def test_gb300_paths_in_a_tray_across_trays_and_racks(catalog):
    """Same tray and another tray of the rack: over the NVLink switch; another rack: the
    GPU's own PCIe Gen6 x16 into its ConnectX-8's switch, never through Grace."""
    fabric = fabric_of(catalog, "gb300-nvl72", 36)
    for dst in ("n0.g3", "n5.g2"):
        report = api.path(fabric, "n0.g0", dst)
        assert [h.link for h in report.hops] == ["nvlink5", "nvlink5"]
        assert report.hops[0].dst == "d0.nvsw0"
    report = api.path(fabric, "n0.g1", "n20.g1")
    hops = [(h.src, h.dst, h.link) for h in report.hops]
    assert hops[:2] == [("n0.g1", "n0.pcie1", "pcie6"), ("n0.pcie1", "n0.nic1", "pcie6")]
    assert not any("cpu" in h.src or "cpu" in h.dst for h in report.hops)
    assert report.hops[0].bw_GBps == pytest.approx(catalog.links["pcie6"].bw_GBps)
    assert report.bottleneck_GBps == pytest.approx(800 / 8)  # ConnectX-8, 800 Gb/s


def test_gb300_pcie_switch_uplinks_run_at_grace_gen5(catalog):
    """Each ConnectX-8 switch reaches its Grace over PCIe Gen5 x16 (Grace has no Gen6)."""
    fabric = fabric_of(catalog, "gb300-nvl72", 1)
    sw = fabric.devices_of_kind(DeviceKind.PCIE_SWITCH)
    cpus = fabric.devices_of_kind(DeviceKind.CPU)
    up = np.isin(fabric.link_src, sw) & np.isin(fabric.link_dst, cpus)
    assert sw.shape[0] == 4 and up.sum() == 4
    assert {fabric.generations[g] for g in fabric.link_gen[up]} == {"pcie5"}


def test_nic_attachment_is_expressible_in_yaml(catalog, tmp_path):
    """net.nic_attach puts the NIC on the GPU, its PCIe switch or the CPU; pcie-switch on a
    host without switches is one line."""
    base = (
        "gpu: gb300\nnodes: 2\ngpus_per_node: 4\n"
        "intra: {fabric: nvswitch, link: nvlink5, hosts_per_domain: 1, sockets: 2, "
        "pcie_switches: %d, host_link: nvlink-c2c}\n"
        "net: {link: ib-xdr, gbps: 800, nics_per_node: 4, nic: cx8-xdr, nic_attach: %s}\n"
    )
    first = {}
    for attach, switches in (("gpu", 0), ("pcie-switch", 4), ("cpu", 0)):
        spec = resolve_topology(
            write(tmp_path, base % (switches, attach), f"{attach}.yaml"), catalog
        )
        fabric = build_fabric(spec, catalog)
        hops = api.path(fabric, "n0.g0", "n1.g0").hops
        first[attach] = hops[0].dst
    assert first == {"gpu": "n0.nic0", "pcie-switch": "n0.pcie0", "cpu": "n0.cpu0"}
    spec = resolve_topology(write(tmp_path, base % (0, "pcie-switch")), catalog)
    with pytest.raises(EngineError, match="nic_attach pcie-switch: the host has no PCIe switches"):
        build_fabric(spec, catalog)


def test_a_newer_nic_on_an_older_pcie_switch_runs_at_the_switch_generation(catalog, tmp_path):
    """A Gen5 ConnectX-7 (NDR) in an A100 host's Gen4 switch trains at Gen4 (PCIe runs at
    the older generation of a link's two ends), as `import nvidia-smi --net ib-ndr:400`
    writes for an A100 box."""
    text = (
        "gpu: a100-sxm4-80gb\nnodes: 2\ngpus_per_node: 8\n"
        "intra: {fabric: nvswitch, link: nvlink3}\n"
        "net: {link: ib-ndr, gbps: 400, nics_per_node: 8}\n"
    )
    fabric = build_fabric(resolve_topology(write(tmp_path, text), catalog), catalog)
    hops = api.path(fabric, "n0.g0", "n1.g0").hops
    to_nic = [h for h in hops if h.dst == "n0.nic0"]
    assert [(h.link, h.bw_GBps) for h in to_nic] == [("pcie4", 31.5)]


def test_gb300_rail_build_at_1k_gpus_is_per_tray(catalog):
    """1,008 GPUs (252 trays, 4 rails): 16 leafs and 8 spines on Q3400s, not a leaf per GPU of
    a 72-GPU host; scalable units are whole racks (72 trays = 4 of 18)."""
    fabric = fabric_of(catalog, "gb300-nvl72-xdr-cluster", 252)
    leafs = fabric.devices_of_kind(DeviceKind.LEAF).shape[0]
    spines = fabric.devices_of_kind(DeviceKind.SPINE).shape[0]
    assert (leafs, spines) == (16, 8)
    assert dict(fabric.network_plan)["scalable unit"] == "72 nodes = 4 whole domains of 18"


def test_a_32_tray_su_that_splits_racks_says_so(catalog):
    """GB200 on 64-port NDR leafs: an SU is 32 trays, not whole 18-tray racks."""
    plan = dict(fabric_of(catalog, "gb200-nvl72-cluster", 144).network_plan)
    assert plan["scalable unit"].startswith("32 nodes, not whole domains of 18")
    assert "d1" in plan["scalable unit"] and "straddle" in plan["scalable unit"]


def test_gaudi3_nic_hop_is_on_die(catalog):
    """Gaudi 3's scale-out ports are on its die: the hop to them is not PCIe."""
    hop = api.path(fabric_of(catalog, "gaudi3-node", 2), "n0.g0", "n1.g0").hops[0]
    assert (hop.link, hop.count, hop.bw_GBps) == ("gaudi3-nic-port", 3, 3 * 25.0)


def test_more_scale_up_links_than_the_gpu_has_is_refused(catalog, run_cli):
    """A GB200 has 18 NVLink 5 ports: 36 per GPU (1,800 GB/s) does not exist."""
    status, _, err = run_cli(
        "path", "-t", "gb200-nvl72", "--scale-up-links", "36", "--src", "0", "--dst", "1"
    )
    assert status == 2 and "36 nvlink5 links per GPU, but a gb200 has 18" in err
    assert len(err.strip().splitlines()) == 1


# --- multi-port NICs and multi-cable uplinks at their full rate ---------------------------


@pytest.mark.parametrize(
    ("name", "nodes", "per_gpu_GBps"),
    [
        ("vera-rubin-nvl144", 72, 2 * 800 / 8),  # 2 x ConnectX-9 800G per GPU
        ("aws-p5en-cluster", 128, 2 * 200 / 8),  # 2 x 200G EFA v3 per GPU
        ("gaudi3-node", 64, 3 * 200 / 8),  # 3 x 200GbE on-die ports per Gaudi 3
    ],
)
def test_path_across_spines_gets_the_nics_full_rate(catalog, name, nodes, per_gpu_GBps):
    """Between nodes under different leafs, a transfer spreads over the NIC's ports and the
    leaf's uplinks (NCCL's channels on ECMP/adaptive routing): the NIC's full per-GPU rate,
    as the collective engine's loads give a single flow."""
    fabric = fabric_of(catalog, name, nodes)
    last = fabric.n_gpus - 1
    report = api.path(fabric, "0", str(last))
    assert fabric.devices_of_kind(DeviceKind.SPINE).shape[0] > 0
    assert any(h.routes > 1 for h in report.hops)
    assert report.bottleneck_GBps == pytest.approx(per_gpu_GBps)
    line_rate = BulkRouter(fabric, capacity_GBps=fabric.link_bw_GBps.astype(np.float64))
    spb = line_rate.seconds_per_byte([0], [last], [1.0])
    assert 1.0 / (spb * 1e3) == pytest.approx(report.bottleneck_GBps)


def test_path_json_reports_routes_and_spread(run_cli):
    """`path --json` keeps bw_GBps per hop and adds routes and spread_GBps."""
    import json

    status, out, _ = run_cli(
        "path", "-t", "aws-p5en-cluster", "--nodes", "128", "--src", "0", "--dst", "1023", "--json"
    )
    hops = json.loads(out)["hops"]
    spine = next(h for h in hops if h["to"].startswith("spine"))
    assert status == 0 and spine["routes"] > 1
    assert spine["spread_GBps"] == pytest.approx(spine["bw_GBps"] * spine["routes"])


def test_spectrum_x_cables_between_switches_are_800g(catalog):
    """SN5600 leafs serve 400G SuperNICs on split ports but uplink on whole 800G ports: 32
    nodes x 8 NICs need 128 800G leaf-spine cables (not 256 of 400G)."""
    fabric = fabric_of(catalog, "spectrum-x-b200-cluster")
    switches = np.isin(fabric.dev_kind, [DeviceKind.LEAF, DeviceKind.SPINE])
    between = switches[fabric.link_src] & switches[fabric.link_dst]
    per_cable = fabric.link_bw_GBps[between] / fabric.link_count[between]
    assert np.allclose(per_cable, 800 / 8)
    assert int(fabric.link_count[between].sum()) // 2 == 128


def test_efa_cluster_grows_past_8k_gpus(catalog):
    """A p6-b200 cluster of 8,200 GPUs builds (three tiers on the 51.2T stand-in switch)."""
    fabric = fabric_of(catalog, "aws-p6-b200-cluster", 1025)
    assert fabric.n_gpus == 8200 and fabric.devices_of_kind(DeviceKind.LEAF).shape[0] > 0


# --- TPU and Trainium limits ---------------------------------------------------------------


def test_v6e_is_a_2d_torus_of_at_most_256_chips(catalog, tmp_path):
    """4 ICI ports per chip: a 3D shape is refused; more than 256 chips is refused; --nodes
    derives a 2D shape of 2x4 hosts."""
    spec = write(
        tmp_path,
        "gpu: tpu-v6e\nnodes: 32\ngpus_per_node: 8\nintra: {fabric: none}\n"
        "net: {link: ici-v6e, layout: torus, torus: [4, 8, 8]}\n",
    )
    with pytest.raises(EngineError, match=r"needs 6 ici-v6e ports per chip, .* has 4 \(a 2D"):
        build_fabric(resolve_topology(spec, catalog), catalog)
    with pytest.raises(EngineError, match=r"512 chips exceed the largest .*v6e.*16x16 \(256"):
        fabric_of(catalog, "tpu-v6e-256", 64)
    fabric = fabric_of(catalog, "tpu-v6e-256", 16)
    assert fabric.torus.dims == (8, 16, 1) and fabric.torus.block == (2, 4, 1)
    assert fabric_of(catalog, "tpu-v6e-256").torus.block == (2, 4, 1)


def test_v5p_refuses_more_than_its_largest_slice(catalog):
    """v5p: 8,960 chips a pod, 16x16x24 = 6,144 the largest slice."""
    with pytest.raises(EngineError, match=r"6,144 chips; a pod is 8,960 chips; https://docs"):
        fabric_of(catalog, "tpu-v5p-torus", 2048)
    assert fabric_of(catalog, "tpu-v5p-torus", 1536).n_gpus == 16 * 16 * 24


def test_tpu7x_refuses_more_than_a_pod(catalog):
    """TPU7x: a pod is 9,216 chips."""
    with pytest.raises(EngineError, match=r"9,216 chips"):
        fabric_of(catalog, "tpu7x-4x4x4", 2308)


def test_wrap_around_only_for_whole_cubes(catalog):
    """A 2x4x4 v5p slice (smaller than a cube) is a mesh: chip 0 reaches the far end of a
    4-chip line in 3 hops, not 1; a 4x4x4 cube wraps (1 hop)."""
    mesh = fabric_of(catalog, "tpu-v5p-torus", 8)
    cube = fabric_of(catalog, "tpu-v5p-torus", 16)
    assert mesh.torus.dims == (2, 4, 4) and mesh.torus.wrap == (False, False, False)
    assert cube.torus.wrap == (True, True, True)
    for fabric, hops in ((mesh, 3), (cube, 1)):
        far = int(fabric.torus.rank_at[0 + fabric.torus.dims[0] * 3])  # (0, 3, 0)
        assert len(api.path(fabric, "0", str(far)).hops) == hops


def test_trn2_link_rates_read_as_both_directions(catalog):
    """AWS: 1,024 GB/s per chip to 4 in-instance neighbours and 256 GB/s per chip to 2 ring
    neighbours across instances; read as both directions: 128 and 64 GB/s per link per
    direction, so a chip's links carry exactly the published figures in all."""
    inner, ring = catalog.links["neuronlink-v3"], catalog.links["neuronlink-v3-ring"]
    assert inner.bw_GBps * 2 * 4 == 1024 and ring.bw_GBps * 2 * 2 == 256
    fabric = fabric_of(catalog, "trn2-ultraserver")
    hop = api.path(fabric, "n0.g0", "n1.g0").hops[0]
    assert (hop.link, hop.bw_GBps) == ("neuronlink-v3-ring", 64.0)


def test_trn2_efa_is_3_2_tbps_per_instance(catalog):
    """16 EFA v3 ports of 200 Gb/s per trn2.48xlarge: 3,200 Gb/s."""
    fabric = fabric_of(catalog, "trn2-cluster", 2)
    nics = fabric.devices_of_kind(DeviceKind.NIC)
    up = np.isin(fabric.link_src, nics) & (fabric.dev_kind[fabric.link_dst] == DeviceKind.LEAF)
    per_instance_GBps = fabric.link_bw_GBps[up].sum() / fabric.nodes
    assert per_instance_GBps * 8 == pytest.approx(3200)


@pytest.mark.parametrize(
    ("name", "group"), [("trn2-ultraserver", "host"), ("trn2-cluster", "host")]
)
def test_trn2_instance_collectives_run_on_its_4x4_torus(catalog, name, group):
    """The 16 chips of an instance run the torus algorithm (rings on both axes at once), not
    a tree: ~400 GB/s bus bandwidth at 128 GB/s x 0.8 per link."""
    fabric = fabric_of(catalog, name, 4)
    prediction = evaluate_collective(
        fabric,
        "all_reduce",
        [2.0**30],
        ranks=group_ranks(fabric, group),
        algorithms=collective_algorithms(),
    )
    assert prediction.algorithm[0].startswith("torus")
    assert 350 < float(prediction.busbw_GBps[0]) < 4 * 128 * 0.8 + 1


# --- dragonfly adaptive routing per flow -----------------------------------------------------


def test_ugal_splits_flows_and_beats_one_mode_for_all(catalog, tmp_path):
    """On 8 groups, a random permutation: adaptive routing gives flows their own split
    between minimal and Valiant routes, and the busiest link is less loaded than with every
    flow minimal or every flow Valiant."""
    spec = write(
        tmp_path,
        "gpu: h100-sxm\nnodes: 64\ngpus_per_node: 8\nintra: {fabric: nvswitch, link: nvlink4}\n"
        "net: {link: slingshot, gbps: 200, nics_per_node: 8, layout: dragonfly, "
        "switch: rosetta, groups: 8, routers_per_group: 4}\n",
    )
    fabric = build_fabric(resolve_topology(spec, catalog), catalog)
    bulk = BulkRouter(fabric)
    src, dst = pattern_flows("random-pairs", np.arange(fabric.n_gpus), 0)
    split = bulk.ugal_split(src, dst)
    assert ((split > 0) & (split < 1)).any() and (split == 0).any()
    busiest = {mode: bulk.seconds_per_byte(src, dst, 1.0, mode) for mode in (False, True, None)}
    assert busiest[None] < min(busiest[False], busiest[True])


@pytest.mark.slow
def test_random_permutation_of_4096_gpus_near_line_rate(catalog):
    """dragonfly-cluster, 4,096 GPUs, a random permutation: ~90% of the NIC's achievable
    rate per flow (was 57% with one mode for the whole pattern). Slow: max-min filling of
    4,096 flows with the per-flow split takes a few seconds."""
    fabric = fabric_of(catalog, "dragonfly-cluster")
    src, dst = pattern_flows("random-pairs", np.arange(fabric.n_gpus), 0)
    rates, _ = BulkRouter(fabric).max_min_rates(src, dst)
    network = np.isfinite(rates) & (src // 8 != dst // 8)
    assert np.median(rates[network]) > 0.85 * 200 / 8 * 0.9


# --- FP8 and FP4 dense peaks -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "fp8", "fp4"),
    [
        ("gb300", 720_000 / 72 / 2, 1_080_000 / 72),  # rack: FP8/FP6 720 PF sparse, FP4 1,080 dense
        ("b300", 72_000 / 8 / 2, 108_000 / 8),  # HGX: FP8/FP6 72 PF sparse, FP4 108 PF dense
        ("b200", 72_000 / 8 / 2, 144_000 / 8 / 2),  # HGX B200: FP8 72 PF, FP4 144 PF sparse
        ("gb200", 720_000 / 72 / 2, 1_440_000 / 72 / 2),  # rack: FP8 720 PF, FP4 1,440 PF sparse
        ("mi325x", 5229.8 / 2, None),  # AMD: 5.2 PF FP8 with sparsity; CDNA3 has no FP4
        ("mi355x", 256 * 8192 * 2.4e9 / 1e12, 2 * 256 * 8192 * 2.4e9 / 1e12),
        ("tpu7x", 4614.0, None),  # Google's TPU7x table
        ("trainium2", 1299.0, None),  # trainium2.rst: 1,299 FP8 TFLOPS (2,563 sparse)
        ("gaudi3", 1835.0, None),  # Hot Chips 2024: 1,835 TFLOPS BF16 and FP8
    ],
)
def test_fp8_and_fp4_dense_peaks(catalog, gpu, fp8, fp4):
    """Each 2026 part's dense FP8 (and FP4) peak is its source's figure, sourced in hwdb, and
    an FP8 plan prices GEMMs at it, not at the BF16 rate."""
    record = catalog.gpus[gpu]
    assert record.fp8_dense_TFLOPS == pytest.approx(fp8, rel=1e-4)
    if fp4 is None:
        assert record.fp4_dense_TFLOPS is None
    else:
        assert record.fp4_dense_TFLOPS == pytest.approx(fp4, rel=1e-4)
    device, notes = make_device(record, "fp8")
    assert device.peak_flops == pytest.approx(fp8 * 1e12, rel=1e-4)
    assert not any("FP8" in n for n in notes)


def test_a_neuronlink_domain_is_at_most_64_chips(catalog, tmp_path):
    """Trainium2's memory pool (one NeuronLink domain) is up to 64 chips: 8 instances in one
    torus are refused; 8 instances as two UltraServers build."""
    spec = write(
        tmp_path,
        "gpu: trainium2\nnodes: 8\ngpus_per_node: 16\n"
        "intra: {fabric: torus, link: neuronlink-v3, hosts_per_domain: 8, torus: [4, 4, 8], "
        "host_block: [4, 4, 1], axis_links: [neuronlink-v3, neuronlink-v3, neuronlink-v3-ring]}\n"
        "net: {link: efa, gbps: 200, nics_per_node: 16, nic: efa-v3}\n",
    )
    with pytest.raises(EngineError, match=r"128 chips exceed .* \(64 chips; .*trainium2\.rst\)"):
        build_fabric(resolve_topology(spec, catalog), catalog)
    assert fabric_of(catalog, "trn2-ultraserver", 8).domains == 2
