"""A health file holding two tools' outputs pasted together (``ibstat`` then
``nvidia-smi nvlink -s``, or the reverse) is read as both; a part no importer reads is
named with its lines, never dropped without a word."""

from __future__ import annotations

from pathlib import Path

import pytest
from _ibstat import ibstat_text

from fabricui.fabric.health import health_of
from fabricui.render.health import health_lines
from fabricui.services.health import read_health
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric


def _ibstat(down: int) -> str:
    """Eight NDR ports ``mlx5_0..7``, ``mlx5_<down>`` down (9 lines each)."""
    return ibstat_text(down={down})


def _nvlink(inactive_gpu: int) -> str:
    """``nvidia-smi nvlink -s`` of 8 H100s (18 links at 26.562 GB/s); every link of
    ``inactive_gpu`` inactive."""
    lines = []
    for gpu in range(8):
        lines.append(f"GPU {gpu}: NVIDIA H100 80GB HBM3 (UUID: GPU-{gpu:08d}-0000-0000-0000)")
        for link in range(18):
            rate = "<inactive>" if gpu == inactive_gpu else "26.562 GB/s"
            lines.append(f"\t Link {link}: {rate}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("ibstat_first", [True, False])
def test_both_outputs_of_a_pasted_file_are_read(catalog, tmp_path: Path, ibstat_first):
    """n0's ibstat (mlx5_3 down) and nvlink (GPU 5 without NVLinks) in one file, in either
    order: both change the fabric."""
    parts = [_ibstat(3), _nvlink(5)]
    path = tmp_path / "n0.txt"
    path.write_text("".join(parts if ibstat_first else parts[::-1]))
    report = read_health([str(path)])
    formats = [i.format for i in report.inputs]
    assert formats == (["ibstat", "nvlink"] if ibstat_first else ["nvlink", "ibstat"])
    assert report.warnings == []
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog)
    overlay = health_of(fabric)
    assert overlay is not None
    assert sorted(c.label.split(" ")[0] for c in overlay.changes) == ["n0.g5", "n0.nic3"]


def test_each_part_keeps_its_lines_and_prompt(tmp_path: Path):
    """Shell prompts stay with the output printed under them: the ibstat part is lines
    1-65 (prompt and 64 lines), the nvlink part starts at its own prompt, line 66."""
    path = tmp_path / "n0.txt"
    path.write_text("$ ibstat\n" + _ibstat(3) + "$ nvidia-smi nvlink -s\n" + _nvlink(5))
    report = read_health([str(path)])
    assert [(i.format, i.lines) for i in report.inputs] == [
        ("ibstat", (1, 65)),
        ("nvlink", (66, 66 + 8 * 19)),
    ]
    assert report.to_json()["files"][1] == {
        "path": str(path),
        "format": "nvlink",
        "lines": [66, 66 + 8 * 19],
    }


def test_a_part_no_importer_reads_is_named_with_its_lines(catalog, tmp_path: Path):
    """``nvidia-smi -L`` lines pasted after the ibstat output are no NVLink state: the
    ibstat part is read and one warning names the lines that were not."""
    listing = "".join(
        f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-{g:08d}-0000-0000-0000)\n" for g in range(8)
    )
    path = tmp_path / "n0.txt"
    path.write_text(_ibstat(3) + listing)
    report = read_health([str(path)])
    assert [i.format for i in report.inputs] == ["ibstat"]
    assert len(report.warnings) == 1
    assert report.warnings[0].startswith(f"{path}: lines 65-72 not read: ")
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog)
    assert f"fabricui: warning: {report.warnings[0]}" in health_lines(fabric)
