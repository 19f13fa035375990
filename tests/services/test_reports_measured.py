"""The collectives report with a measured run (``snapshot collectives --measured FILE``)
says what the run ran on as ``calibrate`` says it: another part of the topology's
architecture on its node as an assumption, another node as a caution with the reason."""

from __future__ import annotations

from pathlib import Path

import yaml

from fabricui.render.markdown import render_markdown
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest

#: Rows of an 8-GPU all_reduce: size [bytes], time [us], algbw, busbw [GB/s].
ROWS = [[1048576, 28.56, 36.71, 64.24], [16777216, 124.0, 135.33, 236.82]]


def measurements(tmp_path: Path, gpu: str, intra: dict[str, str]) -> str:
    """A measurements YAML of one all_reduce entry on an 8-GPU node of ``gpu``."""
    hardware = {"gpu": gpu, "nodes": 1, "gpus_per_node": 8, "intra": intra, "net": None}
    entry = {"id": "box", "quality": "reference", "hardware": hardware, "op": "all_reduce"}
    entry |= {"nranks": 8, "env": None, "rows": ROWS}
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump([entry], sort_keys=False))
    return str(path)


def report(catalog, topology: str, measured: str):
    launch = LaunchRequest(
        topology=TopologyRequest(topology), view="collectives", options=(("measured", measured),)
    )
    return build_report(launch, catalog)


def test_a_sibling_part_on_the_same_node_is_said_as_assumed(catalog, tmp_path):
    """An A100 40 GB entry on a DGX A100's NVSwitch: one ``Assumed:`` line after the
    measured line, no caution; the JSON data has it too."""
    path = measurements(tmp_path, "a100-sxm4-40gb", {"fabric": "nvswitch", "link": "nvlink3"})
    built = report(catalog, "dgx-a100", path)
    said = (
        "Assumed: ran on a100-sxm4-40gb, priced as dgx-a100's a100-sxm4-80gb (the same "
        "ampere architecture, and the same 8-GPU nodes on nvswitch/nvlink3)."
    )
    assert built.notes[0].startswith("Measured: ") and built.notes[1] == said
    assert "compare other" not in render_markdown(built)
    assert built.extra["measured_hardware"]["assumed"] == said[len("Assumed: ") : -1]
    assert built.extra["measured_hardware"]["caution"] is None


def test_a_sibling_part_on_another_node_is_a_caution(catalog, tmp_path):
    """An A100 40 GB PCIe box against a DGX A100: the caution names both nodes, and
    nothing is said as assumed."""
    path = measurements(tmp_path, "a100-sxm4-40gb", {"fabric": "pcie", "link": "pcie4"})
    built = report(catalog, "dgx-a100", path)
    assert built.notes[1] == (
        "The measured run ran on a100-sxm4-40gb in 8-GPU nodes on pcie/pcie4, not "
        "dgx-a100's 8-GPU nodes on nvswitch/nvlink3: its errors compare other links."
    )
    assert not any("a100-sxm4-40gb, priced as" in note for note in built.notes)
    data = built.extra["measured_hardware"]
    assert data["why"] == "intra" and data["ran_on"].startswith("a100-sxm4-40gb in 8-GPU")


def test_an_entry_of_another_architecture_is_a_caution(catalog, tmp_path):
    """An A100 entry against dgx-h100 (a measurements entry names no rank-line GPU): the
    report's words for another architecture."""
    path = measurements(tmp_path, "a100-sxm4-80gb", {"fabric": "nvswitch", "link": "nvlink3"})
    notes = report(catalog, "dgx-h100", path).notes
    assert (
        "The measured run's GPUs are a100-sxm4-80gb, not dgx-h100's h100-sxm: its errors "
        "compare other hardware."
    ) in notes


def test_the_topologys_own_hardware_says_nothing(catalog, tmp_path):
    """An H100 entry on dgx-h100: neither line."""
    path = measurements(tmp_path, "h100-sxm", {"fabric": "nvswitch", "link": "nvlink4"})
    built = report(catalog, "dgx-h100", path)
    assert not any(n.startswith("Assumed: ran on") or "compare other" in n for n in built.notes)
    assert built.extra["measured_hardware"] == {
        "assumed": None,
        "caution": None,
        "why": None,
        "ran_on": None,
    }
