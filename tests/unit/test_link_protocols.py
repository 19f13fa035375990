"""Link records declare the NCCL protocols they carry, and the collective engine honours it.

A vendor's scale-up link in a mesh: without ``protocols`` it is priced with LL, LL128 and
Simple like NVLink; with ``protocols: [ll, simple]`` LL128 is never chosen, and ``--algo``
with LL128 only is refused. The restriction applies to links between the group's GPUs only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fabricui.engine.evaluate import evaluate_collective
from fabricui.errors import EngineError, HwdbError
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
from fabricui.hwdb.resolve import resolve_topology

SIZES = np.array([2.0**k for k in range(3, 31)])

LINK = """links:
- id: foolink-2
  name: FooLink 2.0
  family: foolink
  tier: scale-up
  bw_GBps: 200.0
  links_per_gpu: 8
  lat_us: 0.3
  efficiency: 0.8
  source: https://example.com/foolink-2.pdf
{protocols}"""

TOPOLOGY = """gpu: h100-sxm
nodes: 1
gpus_per_node: 8
intra: {fabric: mesh, link: foolink-2, links_per_pair: 1}
net: null
"""


def mesh(tmp_path: Path, protocols: str = ""):
    """The FooLink mesh fabric, with the given ``protocols:`` line in the link record."""
    hwdb, spec = tmp_path / "hwdb", tmp_path / "foo.yaml"
    hwdb.mkdir()
    (hwdb / "links.yaml").write_text(LINK.format(protocols=protocols))
    spec.write_text(TOPOLOGY)
    catalog = load_catalog([*shipped_hwdb_dirs(), hwdb])
    return build_fabric(resolve_topology(str(spec), catalog), catalog)


def protocols_chosen(fabric) -> set[str]:
    prediction = evaluate_collective(fabric, "all_reduce", SIZES)
    return {label.split("/")[1] for label in prediction.algorithm}


def test_a_vendor_scale_up_link_keeps_ll128_unless_it_says_otherwise(tmp_path: Path):
    """A scale-up link of any family is priced like NVLink: LL128 wins mid-size messages."""
    assert "ll128" in protocols_chosen(mesh(tmp_path))


def test_declared_protocols_switch_ll128_off(tmp_path: Path):
    """``protocols: [ll, simple]`` takes LL128 out of auto, and an LL128-only ask fails."""
    fabric = mesh(tmp_path, "  protocols: [ll, simple]\n")
    assert protocols_chosen(fabric) <= {"ll", "simple"}
    assert fabric.generation_records[fabric.generations.index("foolink-2")].protocols == (
        "ll",
        "simple",
    )
    only = evaluate_collective(fabric, "all_reduce", SIZES, algo="ring")
    assert all(not label.endswith("ll128") for label in only.algorithm)


def test_simple_only_link_leaves_simple(tmp_path: Path):
    """A link that carries Simple only: every size uses Simple."""
    assert protocols_chosen(mesh(tmp_path, "  protocols: [simple]\n")) == {"simple"}


def test_unknown_protocol_is_a_one_line_error(tmp_path: Path):
    """A protocol name NCCL does not have is refused with the file and key."""
    with pytest.raises(HwdbError, match=r"links\.yaml:\d+: links\.foolink-2\.protocols"):
        mesh(tmp_path, "  protocols: [ll129]\n")


def test_host_links_declare_no_ll128(catalog):
    """PCIe, the CPU socket link and NVLink-C2C carry LL and Simple only (NCCL: LL128 over
    NVLink paths only); NVLink and xGMI generations restrict nothing."""
    for link_id in ("pcie3", "pcie4", "pcie5", "pcie6", "upi", "nvlink-c2c"):
        assert catalog.links[link_id].protocols == ("ll", "simple"), link_id
    for link_id in ("nvlink4", "nvlink5", "xgmi3"):
        assert catalog.links[link_id].protocols == (), link_id


def test_a_nic_host_link_does_not_restrict_the_network(catalog):
    """Across nodes the GPU's PCIe path to its NIC is not a GPU-to-GPU link: LL128 stays."""
    spec = resolve_topology("dgx-h100-pod", catalog)
    fabric = build_fabric(spec, catalog)
    prediction = evaluate_collective(fabric, "all_reduce", SIZES, algo="ring")
    assert any(label.endswith("ll128") for label in prediction.algorithm)


def test_no_protocol_left_is_an_engine_error(tmp_path: Path):
    """A link carrying Simple only, with an algorithm forced that has no Simple: refused."""
    from fabricui.engine.algorithms import core_algorithms
    from fabricui.engine.collectives import predict
    from fabricui.engine.group import Group

    fabric = mesh(tmp_path, "  protocols: [simple]\n")
    group = Group(fabric, np.arange(fabric.n_gpus))
    with pytest.raises(EngineError, match="no protocol"):
        predict(group, "all_reduce", SIZES, core_algorithms(), protocols=("ll", "ll128"))
