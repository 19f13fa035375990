"""NCCL topology XML: provider files, dumps, excerpts of dumps, and a diff (rejected)."""

from __future__ import annotations

from typing import Any

import pytest
from _topo_samples import listing, sample_text

from fabricui.importers import nccl_xml
from fabricui.importers.common import ParseError

FOLDER = "nccl_topo_xml"

#: file -> expected counts, details and exactly its stated gaps (substrings, in order).
EXPECT: dict[str, dict[str, Any]] = {
    "aws_g5_48xl_topo.txt": dict(
        cpus=2,
        gpus=0,
        nics=[],
        switches=0,
        unknown=9,
        warnings=["no GPUs in the file", "9 PCI devices have no class"],
    ),
    "aws_p5_48xl_topo_nic_only_2025.txt": dict(
        cpus=2,
        gpus=0,
        nics=[],
        switches=8,
        unknown=32,
        warnings=["no GPUs in the file", "32 PCI devices have no class"],
    ),
    "aws_p5_48xl_topo_with_gpu_nic_2026.txt": dict(
        cpus=1,
        gpus=8,
        nics=32,
        switches=8,
        unknown=0,
        nic_kind=("efa", 100.0),
        cpu_name="AMD Genoa",
        warnings=["no <nvlink> entries", "sm 90 suggests h100-sxm"],
    ),
    "azure_ncv4_topo.txt": dict(
        cpus=4,
        gpus=4,
        nics=["eth0"],
        switches=0,
        unknown=0,
        model="a100-pcie-40gb",
        nic_kind=("ethernet", 100.0),
        cpu_name="AMD Milan",
        warnings=[
            "NVLinks to the GPU itself ignored: GPU0 (12)",
            "GPU A100 PCIe 80GB (0x20b5) is not in the catalog: -o uses a100-pcie-40gb",
        ],
        notes=["familyid 175 is older NCCL's encoding of AMD family 25"],
    ),
    "azure_ndv2_topo.txt": dict(
        cpus=2,
        gpus=8,
        nics=["0101:00:00.0"],
        switches=0,
        unknown=0,
        nic_kind=("infiniband", None),
        warnings=["GPUs are bare <pci> entries", "NIC rate not in the file for 0101:00:00.0"],
    ),
    "azure_ndv4_topo.txt": dict(
        cpus=4,
        gpus=8,
        nics=8,
        switches=4,
        unknown=0,
        nic_kind=("infiniband", None),
        cpu_name="AMD Rome",
        warnings=["GPUs are bare <pci> entries", "NIC rate not in the file for"],
    ),
    "dgx1_v100_4gpu_dump_fragment_nvlink_mesh_nccl_671.txt": dict(
        cpus=1,
        gpus=2,
        nics=[],
        switches=1,
        unknown=0,
        model="v100-sxm2",
        nvlinks=[{"a": "GPU0", "b": "GPU1", "count": 1}],
        warnings=["an excerpt, not a whole file", "NVLink targets not in the file"],
    ),
    "dgx_a100_dump_fragment_dualport_nic_mixed_speed_nccl_1505.txt": dict(
        cpus=1,
        gpus=0,
        nics=["mlx5_4", "mlx5_5"],
        switches=0,
        unknown=0,
        warnings=[
            "an excerpt, not a whole file",
            "5 <nvlink> entries outside any <gpu>",
            "no GPUs in the file",
        ],
        notes=["familyid 143 is older NCCL's encoding of AMD family 23", "share a GUID"],
    ),
    "dgx_a100_dump_fragment_gpu0_nvswitch_nccl_1505.txt": dict(
        cpus=0,
        gpus=1,
        nics=["mlx5_0"],
        switches=1,
        unknown=0,
        model="a100-sxm4-40gb",
        nvswitch=12,
        nic_kind=("infiniband", 200.0),
        warnings=["an excerpt, not a whole file", "no <cpu> element"],
    ),
    "ibm_cloud_gx3d_h100_topo_dump.txt": dict(
        cpus=2,
        gpus=8,
        nics=[f"mlx5_{i}" for i in range(7, -1, -1)],
        switches=8,
        unknown=0,
        model="h100-sxm",
        nvswitch=18,
        nic_kind=("roce", 200.0),
        cpu_name="Intel Sapphire Rapids",
        warnings=[],
    ),
    "nccl_2441_topo_dump_diff_amd_familyid.txt": dict(reject="`diff` of two NCCL topology files"),
}


@pytest.mark.parametrize("name", listing(FOLDER))
def test_sample(name: str):
    """Each file gives its CPUs, GPUs, NICs and switches, and exactly its stated gaps."""
    assert name in EXPECT, f"new sample {name}: add its expectation to EXPECT"
    expect = EXPECT[name]
    text = sample_text(FOLDER, name)
    if "reject" in expect:
        with pytest.raises(ParseError) as exc:
            nccl_xml.parse(text)
        assert expect["reject"] in str(exc.value)
        return
    r = nccl_xml.parse(text)
    assert len(r.cpus) == expect["cpus"]
    assert len(r.gpus) == expect["gpus"]
    names = [n["name"] for n in r.nics]
    if isinstance(expect["nics"], int):
        assert len(names) == expect["nics"]
    else:
        assert names == expect["nics"]
    assert len(r.pci_switches) == expect["switches"]
    assert len(r.unknown_pci) == expect["unknown"]
    if "model" in expect:
        assert {g["model"] for g in r.gpus} == {expect["model"]}
    if "nvswitch" in expect:
        assert {g["nvlink"]["nvswitch"] for g in r.gpus} == {expect["nvswitch"]}
    if "nvlinks" in expect:
        assert r.nvlinks == expect["nvlinks"]
    if "nic_kind" in expect:
        assert {(n["kind"], n["speed_gbps"]) for n in r.nics} == {expect["nic_kind"]}
    if "cpu_name" in expect:
        assert {c["name"] for c in r.cpus} == {expect["cpu_name"]}
    assert len(r.warnings) == len(expect["warnings"]), r.warnings
    for wanted, got in zip(expect["warnings"], r.warnings):
        assert wanted in got
    for wanted in expect.get("notes", []):
        assert any(wanted in note for note in r.notes), r.notes
    data = r.to_json()
    assert data["format"] == "nccl-xml" and {"gpus", "nics", "cpus"} <= set(data)


def test_every_expectation_has_a_sample():
    """A renamed or removed sample is noticed (when the samples are there)."""
    names = set(listing(FOLDER))
    if not names:
        pytest.fail("topology samples not found under tests/data/topo")
    assert set(EXPECT) <= names


def test_ibm_dump_paths_and_numa():
    """GPU0 shares a PCIe switch with mlx5_7 (PIX) and reaches the other socket's NICs by SYS;
    CPU affinity masks become CPU lists."""
    if "ibm_cloud_gx3d_h100_topo_dump.txt" not in listing(FOLDER):
        pytest.fail("topology samples not found under tests/data/topo")
    r = nccl_xml.parse(sample_text(FOLDER, "ibm_cloud_gx3d_h100_topo_dump.txt"))
    layout = r.layout()
    assert layout.nics[0] == "mlx5_7" and layout.nic_paths[(0, 0)] == "PIX"
    assert layout.nic_paths[(0, 1)] == "PHB" and layout.nic_paths[(0, 7)] == "SYS"
    assert layout.gpu_links[(0, 7)] == "NV18" and layout.nvswitch is True
    assert layout.numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert r.cpus[1]["cpu_list"] == "80-159" and r.gpus[0]["cpu_list"] == "0-79"
    assert layout.pcie_switches == 8


def test_ndv4_bare_provider_file_locality():
    """Bare GPUs and NICs under Azure's synthetic bridges pair up PIX within each bridge."""
    if "azure_ndv4_topo.txt" not in listing(FOLDER):
        pytest.fail("topology samples not found under tests/data/topo")
    r = nccl_xml.parse(sample_text(FOLDER, "azure_ndv4_topo.txt"))
    layout = r.layout()
    assert layout.gpus[0] == "GPU0" and r.gpus[0]["busid"] == "0001:00:00.0"
    assert r.gpus[0]["numaid"] == 1 and layout.numa == [1, 1, 0, 0, 3, 3, 2, 2]
    gpu0_pix = [layout.nics[k] for (g, k), c in layout.nic_paths.items() if g == 0 and c == "PIX"]
    assert gpu0_pix == ["0101:00:00.0", "0102:00:00.0"]
    assert layout.gpu_links[(0, 1)] == "PIX" and layout.gpu_links[(0, 2)] == "SYS"


def test_amd_family_encoding():
    """Old NCCL's familyid (0xF + extended << 4) maps back to the CPUID family."""
    assert nccl_xml.amd_family(175) == 25 and nccl_xml.amd_family(143) == 23
    assert nccl_xml.amd_family(25) == 25 and nccl_xml.amd_family(23) == 23


WHOLE = """<!-- provider file -->
<system version="1">
  <cpu numaid="0" affinity="0000ffff" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:01:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:02:00.0" class="0x030200" device="0x2330" link_speed="32.0 GT/s PCIe">
        <gpu dev="0" sm="90" rank="0" gdr="1">
          <nvlink target="0000:03:00.0" count="4" tclass="0x030200"/>
        </gpu>
      </pci>
      <pci busid="0000:03:00.0" class="0x030200" device="0x2330" link_speed="32.0 GT/s PCIe">
        <gpu dev="1" sm="90" rank="1" gdr="1">
          <nvlink target="0000:02:00.0" count="4" tclass="0x030200"/>
        </gpu>
      </pci>
    </pci>
  </cpu>
</system>
"""


def test_whole_file_with_direct_nvlinks():
    """A well-formed file with GPU-to-GPU NVLinks: no gaps, one bundle of 4, 16 CPUs."""
    r = nccl_xml.parse(WHOLE)
    assert r.warnings == [] and [g["name"] for g in r.gpus] == ["GPU0", "GPU1"]
    assert r.nvlinks == [{"a": "GPU0", "b": "GPU1", "count": 4}]
    assert r.cpus[0]["cpu_list"] == "0-15" and r.gpus[0]["pcie"]["gts"] == 32.0
    assert r.layout().nvswitch is False and r.layout().gpu_links == {(0, 1): "NV4"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "b">]>\n<system/>',
            "DOCTYPE/ENTITY declaration",
        ),
        (WHOLE.replace('<gpu dev="1"', '<gpu dev="1" rank=>'), "XML syntax error at line 11"),
        ("hello\n", "no NCCL topology XML found"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n", "use `fabricui import nvidia-smi"),
    ],
)
def test_broken_or_foreign_input_is_refused(text: str, message: str):
    """Declarations, a syntax error inside the file (with its line) and other formats."""
    with pytest.raises(ParseError) as exc:
        nccl_xml.parse(text)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_cut_off_last_line_is_dropped_with_a_gap():
    """A dump cut mid-tag on its last line is read up to there, and says so."""
    cut = WHOLE[: WHOLE.index('<nvlink target="0000:02')] + '<nvlink target="00'
    r = nccl_xml.parse(cut)
    assert len(r.gpus) == 2
    assert any("cut off mid-tag" in w and "an excerpt" in w for w in r.warnings)


def test_text_before_the_xml_is_skipped():
    """A shell prompt line before the XML is ignored and noted."""
    r = nccl_xml.parse("$ cat topo.xml\n" + WHOLE)
    assert len(r.gpus) == 2 and r.warnings == []
    assert r.notes == ["ignored 1 line(s) of text before the XML"]


def test_a_cluster_sized_dump_is_refused_before_pairing_gpus():
    """2,000 GPUs in one file: layout() says so at once instead of pairing every GPU."""
    import time

    gpus = "".join(
        f'<pci busid="0000:{i // 256:02x}:{i % 256:02x}.0" class="0x030200">'
        f'<gpu dev="{i}" sm="90" rank="{i}"/></pci>'
        for i in range(2000)
    )
    result = nccl_xml.parse(f'<system version="1"><cpu numaid="0">{gpus}</cpu></system>')
    started = time.perf_counter()
    with pytest.raises(ParseError, match="2000 GPUs in one topology: a node spec holds at most"):
        result.layout()
    assert time.perf_counter() - started < 1.0
