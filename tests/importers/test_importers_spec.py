"""``-o``: imported nodes become topology specs that load, build, and answer ``fabricui path``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _topo_samples import SAMPLES, listing, sample_text

from fabricui.errors import ConfigError
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml, read_yaml
from fabricui.importers.common import NodeLayout, ParseError
from fabricui.importers.spec import build_spec, parse_net, render_yaml, write_spec


def published(tmp_path: Path, folder: str, name: str) -> Path:
    """The sample written to a file as the user saved it."""
    if name not in listing(folder):
        pytest.fail("topology samples not found under tests/data/topo")
    path = tmp_path / name
    path.write_text(sample_text(folder, name), encoding="utf-8")
    return path


def load(path: Path, catalog):
    spec = parse_topology(read_yaml(path), catalog, default_id=path.stem)
    build_fabric(spec, catalog)
    return spec


def test_dgx_like_nv18_with_nics(tmp_path, run_import, run_cli, catalog):
    """HGX H100: NVSwitch with 18 NVLink4 links per GPU, 8 PIX NICs in GPU order, 2 sockets;
    the file validates and ``fabricui path`` routes over NVLink."""
    src = published(tmp_path, "nvidia_smi_topo", "hgx_h100_8gpu_nv18_10nic_tabs_nccl_1264.txt")
    out = tmp_path / "hgx.yaml"
    status, stdout, err = run_import("nvidia-smi", str(src), "-o", str(out))
    assert status == 0 and f"wrote {out}" in stdout
    assert "guessed h100-sxm from NV18" in err and "assumed ib-ndr 400" in err
    spec = load(out, catalog)
    assert (spec.gpu, spec.nodes, spec.gpus_per_node) == ("h100-sxm", 1, 8)
    assert (spec.intra.fabric, spec.intra.link, spec.intra.links_per_gpu) == (
        "nvswitch",
        "nvlink4",
        18,
    )
    assert spec.intra.sockets == 2
    assert spec.net is not None and (spec.net.link, spec.net.gbps) == ("ib-ndr", 400)
    assert spec.net.nics_per_node == 8 and spec.net.nic_map == tuple(range(8))
    text = out.read_text()
    assert "#   GPU3: NIC 3 = NIC5 (PIX)" in text and "NIC3, NIC4" in text
    assert "8x h100-sxm (guessed from NV18)" in spec.description
    status, stdout, _ = run_cli("hwdb", "validate", str(out))
    assert status == 0 and "ok:" in stdout
    status, stdout, _ = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "1")
    assert status == 0 and "nvlink4" in stdout


def test_replicated_into_a_cluster(tmp_path, run_import, run_cli, catalog):
    """``--nodes 4 --net ib-ndr:400 --gpu h100-sxm``: four nodes joined by the network."""
    src = published(tmp_path, "nvidia_smi_topo", "h200_8gpu_nv18_9nic_hand_reformatted_blog.txt")
    out = tmp_path / "cluster.yaml"
    status, _, err = run_import(
        "nvidia-smi", str(src), "-o", str(out), "--nodes", "4", "--net", "ib-ndr:400",
        "--gpu", "h200-sxm",
    )  # fmt: skip
    assert status == 0 and "guessed" not in err and "assumed" not in err
    spec = load(out, catalog)
    assert (spec.gpu, spec.nodes, spec.n_gpus) == ("h200-sxm", 4, 32)
    assert spec.net is not None and spec.net.nics_per_node == 8  # mlx5_bond_0 left out
    assert "left out (nearest to no GPU; storage or management?): mlx5_bond_0" in out.read_text()
    status, stdout, _ = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "31")
    assert status == 0 and "ib-ndr" in stdout


def test_v100_hybrid_cube_mesh_is_a_partial_mesh(tmp_path, run_import, catalog):
    """DGX-1 NV1/NV2 hybrid cube-mesh: a uniform mesh of 1 link per pair, with the warning."""
    src = published(
        tmp_path, "nvidia_smi_topo", "v100_sxm2_8gpu_hybrid_cube_mesh_nv1_nv2_dlperf.txt"
    )
    out = tmp_path / "dgx1.yaml"
    status, _, err = run_import("nvidia-smi", str(src), "-o", str(out))
    assert status == 0
    assert "mesh is partial: 16 of 28 known GPU pairs linked (NV1 x8, NV2 x8)" in err
    assert "mlx5_0 is nearest to GPU2 (PIX)" in err
    spec = load(out, catalog)
    assert (spec.gpu, spec.intra.fabric, spec.intra.link, spec.intra.links_per_pair) == (
        "v100-sxm2",
        "mesh",
        "nvlink2",
        1,
    )
    assert spec.net is not None and spec.net.nic_map == (0,) * 8
    assert "mesh is partial" in out.read_text()


def test_two_gpu_pcie_phb_box(tmp_path, run_import, run_cli, catalog):
    """Two GPUs behind one host bridge: PCIe with P2P, no switch, one socket, no network."""
    src = published(tmp_path, "nvidia_smi_topo", "dual_gpu_phb_ml_engineering.txt")
    out = tmp_path / "phb.yaml"
    assert run_import("nvidia-smi", str(src), "-o", str(out), "--gpu", "rtx-4090")[0] == 0
    spec = load(out, catalog)
    assert (spec.gpu, spec.intra.fabric, spec.intra.p2p) == ("rtx-4090", "pcie", True)
    assert (spec.intra.pcie_switches, spec.intra.sockets, spec.net) == (0, 1, None)
    status, stdout, _ = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "1")
    assert status == 0 and "pcie4" in stdout


def test_one_gpu_one_nic_vm(tmp_path, run_import, run_cli, catalog):
    """A 1 GPU + 1 NIC VM: no intra fabric, one NIC; as two nodes the path crosses the NIC."""
    src = published(tmp_path, "nvidia_smi_topo", "h100_pcie_1gpu_1nic_sglang_check_env.txt")
    out = tmp_path / "vm.yaml"
    status, _, err = run_import("nvidia-smi", str(src), "-o", str(out), "--nodes", "2")
    assert status == 0 and "guessed l40s from a PCIe-only node" in err
    spec = load(out, catalog)
    assert (spec.gpus_per_node, spec.intra.fabric, spec.nodes) == (1, "none", 2)
    assert spec.net is not None and (spec.net.nics_per_node, spec.net.nic_map) == (1, (0,))
    status, stdout, _ = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "1")
    assert status == 0 and "nic0" in stdout and "ib-ndr" in stdout


def test_nics_on_the_cpus_when_every_gpu_sees_them_as_sys(tmp_path, run_import, run_cli, catalog):
    """8 A100 whose 4 NIC ports are SYS to every GPU: the spec puts them on the CPUs' root
    ports (``nic_attach: cpu``), so a path between nodes crosses the CPU; PIX NICs (the HGX
    sample above) stay beside their GPUs."""
    src = published(tmp_path, "nvidia_smi_topo", "a100_sxm4_80gb_8gpu_nv12_4nic_distserve.txt")
    out = tmp_path / "sys.yaml"
    assert run_import("nvidia-smi", str(src), "-o", str(out), "--nodes", "2")[0] == 0
    spec = load(out, catalog)
    assert spec.net is not None and spec.net.nic_attach == "cpu"
    assert "they sit on the CPUs' root ports" in out.read_text()
    status, stdout, _ = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "8")
    assert status == 0 and "n0.cpu0   n0.nic0" in stdout
    hgx = published(tmp_path, "nvidia_smi_topo", "hgx_h100_8gpu_nv18_10nic_tabs_nccl_1264.txt")
    assert run_import("nvidia-smi", str(hgx), "-o", str(tmp_path / "hgx.yaml"))[0] == 0
    assert load(tmp_path / "hgx.yaml", catalog).net.nic_attach is None


def test_pcie_switch_groups(tmp_path, run_import, catalog):
    """7 GPUs in PIX groups of 3 and 4: two PCIe switches, and the uneven split is stated."""
    src = published(tmp_path, "nvidia_smi_topo", "gtx1070x6_1080_7gpu_pcie_switch_rossumai.txt")
    out = tmp_path / "7g.yaml"
    status, _, err = run_import("nvidia-smi", str(src), "-o", str(out))
    assert status == 0 and "PCIe switch groups are GPU0..GPU2; GPU3..GPU6" in err
    spec = load(out, catalog)
    assert (spec.intra.fabric, spec.intra.pcie_switches, spec.intra.sockets) == ("pcie", 2, 1)


def test_dgx_a100_without_visible_nvlink(tmp_path, run_import, catalog):
    """PXB pairs and SYS between them: 4 switches, 4 CPU groups, a NIC per GPU; the hidden
    NVLink of an A100 is stated when the GPU is named."""
    src = published(
        tmp_path, "nvidia_smi_topo", "dgx_a100_no_nvlink_visible_numa_range_ucx_py_749.txt"
    )
    out = tmp_path / "a100.yaml"
    status, _, err = run_import(
        "nvidia-smi", str(src), "-o", str(out), "--gpu", "a100-sxm4-40gb", "--net", "ib-hdr:200"
    )
    assert status == 0 and "has 12 NVLink/xGMI links, but the input shows none" in err
    spec = load(out, catalog)
    assert (spec.intra.fabric, spec.intra.pcie_switches, spec.intra.sockets) == ("pcie", 4, 4)
    assert spec.net is not None and spec.net.nic_map == tuple(range(8))
    assert (spec.net.link, spec.net.gbps) == ("ib-hdr", 200)


def test_truncated_matrix_writes_a_spec_that_says_what_is_missing(tmp_path, run_import, catalog):
    """DGX-2 excerpt (rows GPU4..15 cut): the spec is written, the gaps are in its comments."""
    src = published(tmp_path, "nvidia_smi_topo", "dgx2_16gpu_nv6_10mlx5_nccl_tests_78.txt")
    out = tmp_path / "dgx2.yaml"
    status, _, err = run_import("nvidia-smi", str(src), "-o", str(out), "--gpu", "v100-sxm2")
    assert status == 0
    text = out.read_text()
    for gap in (
        "truncated: rows for GPU4..GPU15 missing",
        "66 of 120 GPU pairs are not in the input",
        "nearest NIC of GPU4..GPU15 not in the input",
    ):
        assert gap in text and gap in err
    spec = load(out, catalog)
    assert (spec.gpus_per_node, spec.intra.fabric, spec.intra.links_per_gpu) == (16, "nvswitch", 6)


@pytest.mark.parametrize(
    ("name", "fabric", "link", "net"),
    [
        ("ibm_cloud_gx3d_h100_topo_dump.txt", "nvswitch", "nvlink4", ("roce", 200, 8)),
        ("aws_p5_48xl_topo_with_gpu_nic_2026.txt", "pcie", None, ("efa", 100, 32)),
        ("azure_ndv4_topo.txt", "pcie", None, ("ib-ndr", 400, 8)),
        ("dgx1_v100_4gpu_dump_fragment_nvlink_mesh_nccl_671.txt", "mesh", "nvlink2", None),
    ],
)
def test_nccl_xml_specs(tmp_path, run_import, catalog, name, fabric, link, net):
    """NCCL XML files become specs: NVSwitch from switch NVLinks, EFA ports per GPU, RoCE."""
    src = published(tmp_path, "nccl_topo_xml", name)
    out = tmp_path / "x.yaml"
    status, _, err = run_import("nccl-xml", str(src), "-o", str(out))
    assert status == 0, err
    spec = load(out, catalog)
    assert spec.intra.fabric == fabric
    if link:
        assert spec.intra.link == link
    if net is None:
        assert spec.net is None
    else:
        assert spec.net is not None
        assert (spec.net.link, spec.net.gbps, spec.net.nics_per_node) == net
    if name.startswith("aws_p5"):
        assert spec.net is not None and spec.net.nic_map is None  # 4 EFA ports per GPU


def test_rocm_xgmi_spec(tmp_path, run_import, catalog):
    """An 8-GPU XGMI node becomes an xGMI mesh of the guessed MI300X."""
    src = published(tmp_path, "ib_rocm", "amd_8gpu_xgmi_weight15_hops1_vllm_53900.txt")
    out = tmp_path / "amd.yaml"
    status, _, err = run_import("rocm-smi", str(src), "-o", str(out))
    assert status == 0 and "guessed mi300x" in err
    spec = load(out, catalog)
    assert (spec.gpu, spec.intra.fabric, spec.intra.link, spec.intra.links_per_pair) == (
        "mi300x",
        "mesh",
        "xgmi3",
        1,
    )


def test_no_overwrite_without_force(tmp_path, run_import):
    """An existing -o file is kept (exit 2) unless --force; no temp file is left behind."""
    src = published(tmp_path, "nvidia_smi_topo", "dual_gpu_nv2_ml_engineering.txt")
    out = tmp_path / "spec.yaml"
    out.write_text("mine\n")
    status, _, err = run_import("nvidia-smi", str(src), "-o", str(out))
    assert status == 2 and "exists; pass --force to overwrite it" in err
    assert out.read_text() == "mine\n"
    status, _, _ = run_import("nvidia-smi", str(src), "-o", str(out), "--force")
    assert status == 0 and out.read_text().startswith("# Topology spec")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, "spec.yaml"])


def test_write_spec_is_atomic_and_refuses_directories(tmp_path):
    """write_spec replaces only with force, never writes into a directory, leaves no temp."""
    target = tmp_path / "a.yaml"
    write_spec(target, "x: 1\n")
    with pytest.raises(ConfigError, match="exists"):
        write_spec(target, "x: 2\n")
    write_spec(target, "x: 2\n", force=True)
    assert target.read_text() == "x: 2\n"
    with pytest.raises(ConfigError, match="is a directory"):
        write_spec(tmp_path, "x: 3\n", force=True)
    assert os.listdir(tmp_path) == ["a.yaml"]


def test_dash_o_prints_the_yaml(tmp_path, run_import, catalog):
    """``-o -`` prints the spec to stdout (the summary goes to stderr) and it loads."""
    src = published(tmp_path, "nvidia_smi_topo", "gb200_4gpu_nv18_grace_k8s_test_infra.txt")
    status, stdout, _ = run_import("nvidia-smi", str(src), "-o", "-", "--gpu", "gb200")
    assert status == 0
    yaml_text = stdout[stdout.index("# Topology spec") :]
    spec = parse_topology(parse_yaml(yaml_text, "<stdout>"), catalog)
    assert (spec.gpu, spec.intra.fabric, spec.intra.sockets, spec.net) == (
        "gb200",
        "nvswitch",
        2,
        None,
    )


def test_json_with_output_keeps_stdout_json(tmp_path, run_import):
    """With --json and -o FILE, stdout is only the JSON; the 'wrote' line goes to stderr."""
    src = published(tmp_path, "nvidia_smi_topo", "dual_gpu_nv2_ml_engineering.txt")
    out = tmp_path / "nv2.yaml"
    status, stdout, err = run_import("nvidia-smi", str(src), "--json", "-o", str(out))
    assert status == 0 and json.loads(stdout)["format"] == "nvidia-smi"
    assert f"wrote {out}" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "h100"], "--gpu: unknown gpu 'h100' (nearest: h100-sxm"),
        (["--net", "infiniband:400"], "--net infiniband:400: unknown network link"),
        (["--net", "nvlink4:400"], "unknown network link 'nvlink4'"),
        (["--net", "ib-ndr:fast"], "the rate must be a positive number"),
        (["--nodes", "0"], "--nodes must be at least 1"),
    ],
)
def test_bad_spec_options(tmp_path, run_import, args, message):
    """Bad --gpu, --net and --nodes values are one-line errors."""
    src = published(tmp_path, "nvidia_smi_topo", "dual_gpu_nv2_ml_engineering.txt")
    status, _, err = run_import("nvidia-smi", str(src), "-o", str(tmp_path / "o.yaml"), *args)
    assert status == 2 and message in err and err.count("fabricui: error:") == 1
    assert not (tmp_path / "o.yaml").exists()


def test_dash_o_refused_without_gpus(tmp_path, run_import):
    """ibstat output and GPU-less XML cannot become specs; ibstat suggests its --net."""
    src = published(tmp_path, "ib_rocm", "ibstat_partial_redacted_with_ibpanic_gpud_752.txt")
    status, _, err = run_import("ibstat", str(src), "-o", str(tmp_path / "o.yaml"))
    assert status == 2 and "has no GPUs" in err and "suggest --net ib-hdr:200" in err
    xml = published(tmp_path, "nccl_topo_xml", "aws_g5_48xl_topo.txt")
    status, _, err = run_import("nccl-xml", str(xml), "-o", str(tmp_path / "o.yaml"))
    assert status == 2 and "no GPUs in the input: cannot write a topology spec" in err


# --- the mapping rules on hand-made layouts ----------------------------------------------


def layout(n: int, code: str, **extra) -> NodeLayout:
    gpus = [f"GPU{i}" for i in range(n)]
    links = {(i, j): code for i in range(n) for j in range(i + 1, n)}
    return NodeLayout(source="test", gpus=gpus, gpu_links=links, **extra)


@pytest.mark.parametrize(
    ("n", "code", "gpu", "fabric", "count"),
    [
        (8, "NV12", None, "nvswitch", 12),  # 8 GPUs all alike
        (2, "NV12", None, "nvswitch", 12),  # NV12 is an NVSwitch count
        (4, "NV6", "v100-sxm2", "nvswitch", 6),  # 3 peers x 6 > 6 links: shared, a switch
        (2, "NV2", None, "mesh", 2),  # a bridge
        (4, "NV4", "h100-sxm", "mesh", 4),  # 3 x 4 <= 18: direct links fit
    ],
)
def test_nvlink_fabric_rules(catalog, n, code, gpu, fabric, count):
    """All pairs alike become an NVSwitch when they cannot be direct links, else a mesh."""
    draft = build_spec(layout(n, code), catalog, gpu=gpu)
    intra = draft.data["intra"]
    assert intra["fabric"] == fabric
    assert intra["links_per_gpu" if fabric == "nvswitch" else "links_per_pair"] == count


def test_nic_ports_per_gpu_and_ties(catalog):
    """Two PIX ports per GPU become 2 ports each (no nic_map); tied NICs are shared out."""
    base = layout(2, "PHB", nics=["a", "b", "c", "d"])
    base.nic_paths = {(0, 0): "PIX", (0, 1): "PIX", (0, 2): "SYS", (0, 3): "SYS"}
    base.nic_paths.update({(1, 0): "SYS", (1, 1): "SYS", (1, 2): "PIX", (1, 3): "PIX"})
    net = build_spec(base, catalog, net=("roce", 200.0)).data["net"]
    assert net == {"link": "roce", "gbps": 200.0, "nics_per_node": 4}
    tied = layout(2, "PHB", nics=["a", "b"])
    tied.nic_paths = {(0, 0): "NODE", (0, 1): "NODE", (1, 0): "NODE", (1, 1): "NODE"}
    draft = build_spec(tied, catalog)
    assert draft.data["net"]["nic_map"] == [0, 1]
    assert "GPU0: NIC 0 = a (NODE, tied with a/b)" in draft.comments


def test_no_nics_and_several_nodes(catalog):
    """Without NICs a cluster assumes one NIC per GPU, and says so."""
    draft = build_spec(layout(4, "NV18"), catalog, nodes=2)
    assert draft.data["net"] == {"link": "ib-ndr", "gbps": 400.0, "nics_per_node": 4}
    assert any("no NICs in the input" in w for w in draft.warnings)


def test_yaml_quotes_what_needs_quoting(catalog):
    """Descriptions with ': ' and '#' survive the round trip."""
    draft = build_spec(layout(2, "PHB"), catalog, origin="a: b #c.txt", spec_id="no")
    doc = parse_yaml(render_yaml(draft, ["gap: one # two"]), "t.yaml")
    assert doc.data["id"] == "no" and "a: b #c.txt" in doc.data["description"]


def test_a_gap_with_a_line_break_stays_a_comment(catalog):
    """A gap or a comment that holds a line break (a quoted multi-line field) is written on
    one comment line: the rest of it never becomes a YAML key."""
    draft = build_spec(layout(2, "PHB"), catalog, spec_id="one")
    draft.comments.append("first\nid: injected")
    text = render_yaml(draft, ["gap\n  nodes: 99"])
    assert "#   - gap nodes: 99" in text and "#   first id: injected" in text
    doc = parse_yaml(text, "t.yaml")
    assert doc.data["id"] == "one" and doc.data["nodes"] != 99


def test_parse_net_default_rate(catalog):
    """``--net efa`` takes the link's own rate."""
    assert parse_net("efa", catalog) == ("efa", 100.0)
    assert parse_net("ib-ndr:200", catalog) == ("ib-ndr", 200.0)


def test_build_spec_without_gpus(catalog):
    """A layout without GPUs is refused."""
    with pytest.raises(ParseError, match="no GPUs"):
        build_spec(NodeLayout(source="x", gpus=[]), catalog)


def test_samples_folder_is_where_the_issue_says():
    """The samples are read from ../shared/data/topo (or FABRICUI_TOPO_SAMPLES)."""
    if not SAMPLES.is_dir():
        pytest.fail("topology samples not found under tests/data/topo")
    assert (SAMPLES / "INDEX.md").is_file()
