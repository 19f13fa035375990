"""``nvidia-smi topo -m``: every published sample parses, partially with stated gaps, or is
rejected with a reason; synthetic variants cover the layouts no sample has."""

from __future__ import annotations

from typing import Any

import pytest
from _topo_samples import listing, sample_text

from fabricui.importers import nvidia_smi
from fabricui.importers.common import ParseError

FOLDER = "nvidia_smi_topo"
JSON_KEYS = {"format", "gpus", "nics", "links", "cpu_affinity", "numa"}


def gpus(n: int) -> list[str]:
    return [f"GPU{i}" for i in range(n)]


def nics(n: int, prefix: str = "NIC") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


#: file -> what its parse must give: gpus, nics, some links (None = unknown), affinity,
#: numa, and one substring per expected warning (no other warning may appear).
EXPECT: dict[str, dict[str, Any]] = {
    "a100_2gpu_nv12_8nic_empty_affinity_vllm_19607.txt": dict(
        gpus=2,
        nics=nics(8),
        links={("GPU0", "GPU1"): "NV12", ("GPU0", "NIC6"): "PXB", ("GPU1", "NIC0"): "SYS"},
        cpu={},
        numa={},
        warnings=["NIC legend missing", "CPU affinity empty for GPU0, GPU1", "NUMA affinity empty"],
    ),
    "a100_8gpu_nv12_compacted_ml_engineering.txt": dict(
        gpus=8,
        nics=[],
        links={("GPU0", "GPU7"): "NV12", ("GPU3", "GPU4"): "NV12"},
        cpu={"GPU0": "0-23", "GPU4": "24-47"},
        numa={"GPU0": 0, "GPU7": 1},
        warnings=[],
    ),
    "a100_sxm4_80gb_8gpu_nv12_4nic_distserve.txt": dict(
        gpus=8,
        nics=nics(4, "mlx5_"),
        links={("GPU0", "GPU1"): "NV12", ("GPU0", "mlx5_0"): "SYS", ("GPU7", "mlx5_3"): "SYS"},
        cpu={"GPU0": "0-63,128-191", "GPU4": "64-127,192-254"},
        numa={"GPU3": 0, "GPU4": 1},
        warnings=[],
    ),
    "azure_nv12_2x_m60_soc_header_unindented_rossumai.txt": dict(
        gpus=2,
        nics=[],
        links={("GPU0", "GPU1"): "SYS"},  # printed as the old SOC
        cpu={"GPU0": "0-11", "GPU1": "0-11"},
        numa={},
        warnings=[],
    ),
    "b200_8gpu_nv18_13nic_collapsed_header_vllm_31594.txt": dict(
        gpus=8,
        nics=nics(13),
        links={
            ("GPU0", "GPU7"): "NV18",
            ("GPU0", "NIC11"): "PIX",  # from the glued NIC11NIC12 header
            ("GPU0", "NIC12"): "NODE",  # the narrowed last column
            ("GPU1", "NIC10"): "PIX",
            ("GPU3", "NIC8"): "PIX",
            ("GPU4", "GPU5"): None,
            ("GPU4", "NIC0"): None,
        },
        cpu={"GPU0": "0-15", "GPU3": "0-15"},
        numa={"GPU0": 0},
        warnings=[
            "NIC legend missing",
            "truncated: rows for GPU4..GPU7 missing (6 GPU pairs unknown)",
            "GPU-NIC paths unknown: GPU4..GPU7 to NIC0..NIC12",
            "truncated: rows for NIC0..NIC12 missing",
        ],
    ),
    "consumer_2gpu_node_terminal_wrapped_legend_club3090_1125.txt": dict(
        gpus=2,
        nics=[],
        links={("GPU0", "GPU1"): "NODE"},
        cpu={"GPU0": "0-15"},
        numa={"GPU1": 0},
        warnings=[],
        notes=["topo -p2p"],
    ),
    "dgx2_16gpu_nv6_10mlx5_nccl_tests_78.txt": dict(
        gpus=16,
        nics=nics(10, "mlx5_"),
        links={
            ("GPU0", "GPU15"): "NV6",
            ("GPU3", "GPU10"): "NV6",
            ("GPU0", "mlx5_0"): "PIX",
            ("GPU2", "mlx5_1"): "PIX",
            ("GPU0", "mlx5_4"): "SYS",
            ("GPU4", "GPU5"): None,
        },
        cpu={"GPU0": "0-23,48-71"},
        numa={},
        warnings=[
            "truncated: rows for GPU4..GPU15 missing (66 GPU pairs unknown)",
            "GPU-NIC paths unknown: GPU4..GPU15 to mlx5_0..mlx5_9",
            "truncated: rows for mlx5_0..mlx5_9 missing",
        ],
    ),
    "dgx_a100_no_nvlink_visible_numa_range_ucx_py_749.txt": dict(
        gpus=8,
        nics=nics(12, "mlx5_"),
        links={
            ("GPU0", "GPU1"): "PXB",
            ("GPU0", "GPU2"): "SYS",
            ("GPU0", "mlx5_0"): "PXB",
            ("GPU7", "mlx5_9"): "PXB",
        },
        cpu={"GPU0": "112-127,240-255"},
        numa={"GPU0": "6-7", "GPU7": "6-7"},
        warnings=["rows for mlx5_1..mlx5_11 missing (only NIC-to-NIC", "NUMA affinity is a range"],
    ),
    "dual_gpu_nv2_ml_engineering.txt": dict(
        gpus=2, nics=[], links={("GPU0", "GPU1"): "NV2"}, cpu={"GPU1": "0-23"}, numa={}, warnings=[]
    ),
    "dual_gpu_phb_ml_engineering.txt": dict(
        gpus=2, nics=[], links={("GPU0", "GPU1"): "PHB"}, cpu={"GPU0": "0-11"}, numa={}, warnings=[]
    ),
    "gb200_4gpu_nv18_grace_k8s_test_infra.txt": dict(
        gpus=4,
        nics=[],
        links={("GPU0", "GPU3"): "NV18"},
        cpu={"GPU0": "0-71", "GPU2": "72-143"},
        numa={"GPU1": 0, "GPU2": 1},
        warnings=[],
    ),
    "gtx1070x6_1080_7gpu_pcie_switch_rossumai.txt": dict(
        gpus=7,
        nics=[],
        links={("GPU0", "GPU2"): "PIX", ("GPU2", "GPU3"): "PHB", ("GPU3", "GPU6"): "PIX"},
        cpu={"GPU6": "0-19"},
        numa={},
        warnings=[],
    ),
    "h100_4gpu_nv6_4nic_vm_nccl_1617.txt": dict(
        gpus=4,
        nics=nics(4),
        links={("GPU0", "GPU3"): "NV6", ("GPU0", "NIC0"): "PIX", ("GPU1", "NIC0"): "SYS"},
        cpu={"GPU0": "6,14,22,30", "GPU3": "5,13,21,29"},
        numa={"GPU0": 3, "GPU1": 1, "GPU2": 7, "GPU3": 5},
        warnings=["NIC legend missing"],
    ),
    "h100_8gpu_nv18_compacted_ml_engineering.txt": dict(
        gpus=8,
        nics=[],
        links={("GPU0", "GPU7"): "NV18"},
        cpu={"GPU3": "0-51", "GPU4": "52-103"},
        numa={"GPU4": 1},
        warnings=[],
    ),
    "h100_8gpu_nv18_ht_affinity_ml_engineering.txt": dict(
        gpus=8,
        nics=[],
        links={("GPU1", "GPU6"): "NV18"},
        cpu={"GPU0": "0-51,104-155", "GPU7": "52-103,156-207"},
        numa={"GPU0": 0, "GPU7": 1},
        warnings=[],
    ),
    "h100_8gpu_nv18_misaligned_nic_cols_bytedance_flux_14.txt": dict(
        gpus=8,
        nics=nics(12),
        links={
            ("GPU5", "GPU0"): "NV18",
            ("GPU5", "NIC9"): "PXB",
            ("GPU7", "NIC11"): "PXB",  # the narrowed last column
            ("GPU0", "NIC0"): "PXB",  # only in the NIC0 row
            ("GPU1", "NIC3"): "PXB",
            ("GPU0", "GPU1"): None,
            ("GPU0", "NIC4"): None,
        },
        cpu={"GPU5": "56-111,168-223"},
        numa={"GPU6": 1},
        warnings=[
            "header line missing (an excerpt): columns inferred as GPU0..GPU7 and NIC0..NIC11",
            "NIC legend missing",
            "truncated: rows for GPU0..GPU4 missing (10 GPU pairs unknown)",
            "GPU-NIC paths unknown: GPU0..GPU4 to NIC4..NIC11",
            "truncated: rows for NIC4..NIC11 missing",
        ],
    ),
    "h100_8gpu_p2p_r_matrix_ml_engineering.txt": dict(reject="`nvidia-smi topo -p2p` matrix"),
    "h100_pcie_1gpu_1nic_sglang_check_env.txt": dict(
        gpus=1,
        nics=["mlx5_0"],
        links={("GPU0", "mlx5_0"): "PHB"},
        cpu={"GPU0": "0-251"},
        numa={"GPU0": 0},
        warnings=[],
    ),
    "h200_8gpu_nv18_9nic_hand_reformatted_blog.txt": dict(
        gpus=8,
        nics=["mlx5_0", *nics(10, "mlx5_")[3:], "mlx5_bond_0"],
        links={
            ("GPU0", "GPU7"): "NV18",
            ("GPU0", "mlx5_0"): "PIX",
            ("GPU1", "mlx5_3"): "PIX",
            ("GPU0", "mlx5_bond_0"): "NODE",
            ("GPU4", "mlx5_bond_0"): "SYS",
        },
        cpu={"GPU0": "0,2-47,96-143", "GPU4": "48-95,144-191"},
        numa={"GPU0": 0, "GPU4": 1},
        warnings=[],
    ),
    "hgx_h100_8gpu_nv18_10nic_tabs_nccl_1264.txt": dict(
        gpus=8,
        nics=nics(10),
        links={("GPU0", "GPU7"): "NV18", ("GPU0", "NIC0"): "PIX", ("GPU3", "NIC5"): "PIX"},
        cpu={"GPU0": "0-55,112-167", "GPU7": "56-111,168-223"},
        numa={"GPU0": 0, "GPU7": 1},
        warnings=["NIC legend missing", "rows for NIC3..NIC9 missing (only NIC-to-NIC"],
    ),
    "rtx5090_2gpu_phb_plus_p2p_rw_gns_club3090_1229.txt": dict(
        gpus=2,
        nics=[],
        links={("GPU0", "GPU1"): "PHB"},
        cpu={"GPU0": "0-63"},
        numa={"GPU0": 0},
        warnings=[],
        notes=["topo -p2p"],
    ),
    "rtx6000ada_2gpu_phb_threadripper_wrx90_stelline.txt": dict(
        gpus=2,
        nics=["mlx5_0", "mlx5_1"],
        links={("GPU0", "GPU1"): "PHB", ("GPU0", "mlx5_0"): "NODE", ("GPU1", "mlx5_1"): "NODE"},
        cpu={"GPU0": "0-23"},
        numa={"GPU1": 0},
        warnings=[],
    ),
    "v100_sxm2_8gpu_hybrid_cube_mesh_nv1_nv2_dlperf.txt": dict(
        gpus=8,
        nics=["mlx5_0"],
        links={
            ("GPU0", "GPU1"): "NV1",
            ("GPU0", "GPU3"): "NV2",
            ("GPU0", "GPU5"): "SYS",
            ("GPU2", "mlx5_0"): "PIX",
            ("GPU0", "mlx5_0"): "NODE",
        },
        cpu={"GPU0": "0-11,24-35", "GPU4": "12-23,36-47"},
        numa={},
        warnings=[],
    ),
    "v100_sxm2_8gpu_nv1_nv2_header_two_tabs_dlperf_deepspeed.txt": dict(
        gpus=8,
        nics=["mlx5_0"],
        links={("GPU1", "GPU5"): "NV2", ("GPU6", "GPU7"): "NV2", ("GPU3", "mlx5_0"): "PIX"},
        cpu={"GPU7": "12-23,36-47"},
        numa={},
        warnings=[],
    ),
}


@pytest.mark.parametrize("name", listing(FOLDER))
def test_sample(name: str):
    """Each sample gives its GPUs, NICs, link kinds, affinity and exactly its stated gaps."""
    assert name in EXPECT, f"new sample {name}: add its expectation to EXPECT"
    expect = EXPECT[name]
    text = sample_text(FOLDER, name)
    if "reject" in expect:
        with pytest.raises(ParseError) as exc:
            nvidia_smi.parse(text)
        assert expect["reject"] in str(exc.value) and "\n" not in str(exc.value)
        return
    result = nvidia_smi.parse(text)
    assert result.gpus == gpus(expect["gpus"])
    assert result.nics == expect["nics"]
    for (a, b), kind in expect["links"].items():
        assert result.link(a, b) == kind, (a, b)
    for gpu, cpus in expect["cpu"].items():
        assert result.cpu_affinity[gpu] == cpus
    if not expect["cpu"]:
        assert result.cpu_affinity == {}
    assert {k: result.numa[k] for k in expect["numa"]} == expect["numa"]
    if not expect["numa"]:
        assert result.numa == {}
    assert len(result.warnings) == len(expect["warnings"]), result.warnings
    for wanted, got in zip(expect["warnings"], result.warnings):
        assert wanted in got
    for wanted in expect.get("notes", []):
        assert any(wanted in note for note in result.notes), result.notes
    assert all("\n" not in w for w in result.warnings)


def test_every_expectation_has_a_sample():
    """A renamed or removed sample is noticed (when the samples are there)."""
    names = set(listing(FOLDER))
    if not names:
        pytest.fail("topology samples not found under tests/data/topo")
    assert set(EXPECT) <= names


@pytest.mark.parametrize("name", [n for n in listing(FOLDER) if "reject" not in EXPECT.get(n, {})])
def test_json_shape(name: str):
    """``--json`` has exactly format, gpus, nics, links, cpu_affinity, numa; links a/b/kind."""
    data = nvidia_smi.parse(sample_text(FOLDER, name)).to_json()
    assert set(data) == JSON_KEYS and data["format"] == "nvidia-smi"
    assert all(set(link) == {"a", "b", "kind"} for link in data["links"])
    names = set(data["gpus"]) | set(data["nics"])
    assert all(link["a"] in data["gpus"] and link["b"] in names for link in data["links"])
    assert all(link["kind"] != "SOC" and link["kind"] != "X" for link in data["links"])
    assert all(isinstance(v, str) for v in data["cpu_affinity"].values())


def test_complete_matrix_lists_every_gpu_gpu_and_gpu_nic_pair():
    """A whole matrix yields g(g-1)/2 GPU pairs and g x n GPU-NIC pairs, NICs by device name."""
    data = nvidia_smi.parse(
        sample_text(FOLDER, "a100_sxm4_80gb_8gpu_nv12_4nic_distserve.txt")
    ).to_json()
    assert len(data["links"]) == 8 * 7 // 2 + 8 * 4
    assert data["links"][0] == {"a": "GPU0", "b": "GPU1", "kind": "NV12"}
    assert {"a": "GPU0", "b": "mlx5_0", "kind": "SYS"} in data["links"]


# --- layouts no saved sample has ---------------------------------------------------------

MARKDOWN = """Our node:

|      | GPU0 | GPU1 | NIC0 | CPU Affinity | NUMA Affinity | GPU NUMA ID |
|------|------|------|------|--------------|---------------|-------------|
| GPU0 | X    | NV4  | PIX  | 0-31         | 0             | N/A         |
| GPU1 | NV4  | X    | PHB  |              | 0             | N/A         |
| NIC0 | PIX  | PHB  | X    |              |               |             |

NIC Legend:

  NIC0: mlx5_2
"""


def test_markdown_table():
    """A markdown table keeps its empty cells: GPU1's CPU affinity is empty, not shifted."""
    result = nvidia_smi.parse(MARKDOWN)
    assert result.gpus == ["GPU0", "GPU1"] and result.nics == ["mlx5_2"]
    assert result.link("GPU0", "GPU1") == "NV4" and result.link("GPU1", "mlx5_2") == "PHB"
    assert result.cpu_affinity == {"GPU0": "0-31"}
    assert result.numa == {"GPU0": 0, "GPU1": 0}
    assert result.warnings == ["CPU affinity empty for GPU1 (a container or VM view?)"]


def test_raw_tabs_crlf_and_ansi_underline():
    """A raw TTY capture: CRLF line ends and an ANSI-underlined header are read as text."""
    text = (
        "\x1b[4m\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\r\n"
        "GPU0\t X \tPXB\t0-7\t0\t\tN/A\r\n"
        "GPU1\tPXB\t X \t0-7\t0\t\tN/A\r\n"
    )
    result = nvidia_smi.parse(text)
    assert result.link("GPU0", "GPU1") == "PXB"
    assert result.cpu_affinity == {"GPU0": "0-7", "GPU1": "0-7"}


def test_glued_cells_split():
    """``NODEPXB`` (a lost TAB) is two cells."""
    text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNODEPXB\nGPU1\tNODE\t X \tSYS\nGPU2\tPXB\tSYS\t X \n"
    result = nvidia_smi.parse(text)
    assert result.link("GPU0", "GPU1") == "NODE" and result.link("GPU0", "GPU2") == "PXB"
    assert result.warnings == []


def test_label_glued_to_the_affinity_header():
    """``NIC1CPU Affinity`` (a lost TAB) still ends the device columns."""
    text = (
        "        GPU0    NIC0    NIC1CPU Affinity    NUMA Affinity\n"
        "GPU0     X      PIX     SYS     0-7     0\n"
        "NIC0    PIX      X      SYS\n"
        "NIC1    SYS     SYS      X\n"
    )
    result = nvidia_smi.parse(text)
    assert result.nics == ["NIC0", "NIC1"] and result.cpu_affinity == {"GPU0": "0-7"}
    assert result.numa == {"GPU0": 0}


def test_one_gpu_without_nics():
    """The smallest matrix: one GPU, no NIC."""
    result = nvidia_smi.parse("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-15\t0\n")
    assert result.gpus == ["GPU0"] and result.links == [] and result.numa == {"GPU0": 0}


def test_short_row_and_asymmetry_are_stated():
    """A cut row and a disagreement between the two halves of the matrix become warnings."""
    text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPIX\tSYS\nGPU1\tPHB\t X \nGPU2\tSYS\tSYS\t X \n"
    result = nvidia_smi.parse(text)
    assert result.link("GPU0", "GPU1") == "PIX"
    assert any("missing link cells: GPU1 (2 of 3)" in w for w in result.warnings)
    assert any("not symmetric (GPU0-GPU1 PIX/PHB" in w for w in result.warnings)


def test_second_matrix_is_stated():
    """Two `topo -m` matrices (two nodes pasted) read the first and say so."""
    one = "\tGPU0\tGPU1\nGPU0\t X \tNV8\nGPU1\tNV8\t X \n"
    result = nvidia_smi.parse(one + "\n" + one.replace("NV8", "PHB"))
    assert result.link("GPU0", "GPU1") == "NV8"
    assert any("another `topo -m` matrix at line 5" in w for w in result.warnings)


def test_gpu_name_around_the_matrix_is_kept():
    """``GPU 0: NVIDIA H100 80GB HBM3`` before the matrix names the model for ``-o``."""
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\n\tGPU0\nGPU0\t X \n"
    result = nvidia_smi.parse(text)
    assert result.gpu_names == ["NVIDIA H100 80GB HBM3"]
    assert result.layout().gpu_model == "h100-sxm"


@pytest.mark.parametrize(
    ("source", "start"),
    [
        ("rtx5090_2gpu_phb_plus_p2p_rw_gns_club3090_1229.txt", " \tGPU0"),
        ("consumer_2gpu_node_terminal_wrapped_legend_club3090_1125.txt", "          GPU0 GPU1\n"),
    ],
)
def test_p2p_blocks_alone_are_rejected(source: str, start: str):
    """The ``topo -p2p`` matrices that follow two samples are rejected when pasted alone."""
    if source not in listing(FOLDER):
        pytest.fail("topology samples not found under tests/data/topo")
    text = sample_text(FOLDER, source)
    block = text[text.rindex(start) :]
    with pytest.raises(ParseError) as exc:
        nvidia_smi.parse(block)
    message = str(exc.value)
    assert "`nvidia-smi topo -p2p` matrix (P2P capability" in message
    assert "run `nvidia-smi topo -m`" in message


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("<system version='1'><cpu numaid='0'/></system>", "nccl-xml"),
        ("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n", "ibstat"),
        ("==== Weight between two GPUs ====\n       GPU0  GPU1\nGPU0   0     15\n", "rocm-smi"),
        ("| NVIDIA-SMI 550.54  Driver Version: 550.54 |\n", "status table"),
        ("hello\nworld\n", "no `nvidia-smi topo -m` output found"),
    ],
)
def test_lookalikes_are_named(text: str, names: str):
    """Other tools' output is rejected with what it looks like."""
    with pytest.raises(ParseError) as exc:
        nvidia_smi.parse(text)
    assert names in str(exc.value)
