"""``--health`` counts a link once: a file given twice is one report, and overlapping
reports of the same GPU's NVLinks are one change (the worst of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui import api
from fabricui.fabric.health import GpuLinkCondition, apply_health
from fabricui.services.health import distinct_files
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

NVLINK = Path(__file__).parents[1] / "data" / "health" / "nvlink"
#: ``dcgmi nvlink -s`` of an H100 host with every NVLink up.
ALL_UP = NVLINK / "dcgmi_nvlink_s_h100_8gpu_all_up.txt"


@pytest.fixture
def gpu0_down(tmp_path: Path) -> Path:
    """``dcgmi nvlink -s`` of an H100 host whose GPU 0 has every NVLink down."""
    lines = ALL_UP.read_text().splitlines()
    at = lines.index("    gpuId 0:")
    lines[at + 1] = "        " + " ".join("D" * 18)
    path = tmp_path / "h.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_same_file_twice_counts_its_links_once(run_cli, gpu0_down, monkeypatch):
    """``--health h.txt --health ./h.txt``: 1 down, one line for it."""
    monkeypatch.chdir(gpu0_down.parent)
    argv = ["path", "0", "1", "-t", "dgx-h100", "--health", str(gpu0_down), "--health", "./h.txt"]
    status, _, err = run_cli(*argv)
    assert status == 0, err
    assert "as it is: 1 down" in err
    assert err.count("n0.g0 NVLinks (0 of 18 active) is removed") == 1


def test_a_copy_of_the_report_counts_its_links_once(run_cli, gpu0_down, tmp_path):
    """Two files stating the same GPU's NVLinks down are one change, not two."""
    copy = tmp_path / "h2.txt"
    copy.write_text(gpu0_down.read_text())
    argv = ["path", "0", "1", "-t", "dgx-h100", "--health", str(gpu0_down), "--health", str(copy)]
    status, _, err = run_cli(*argv)
    assert status == 0, err
    assert "as it is: 1 down" in err


def test_overlapping_gpu_reports_keep_the_worst(catalog):
    """2 and then 4 of 18 NVLinks inactive on GPU 3: one change with 14 of 18 kept (not
    16/18 x 14/18)."""
    fabric = load_fabric(TopologyRequest("dgx-h100"), catalog)
    reports = [GpuLinkCondition(None, 3, 2, 18), GpuLinkCondition(None, 3, 4, 18)]
    overlay = apply_health(fabric, [], reports)
    assert len(overlay.changes) == 1
    path = api.path(overlay.fabric, "n0.g3", "n0.g5", None)
    assert path.bottleneck_GBps == pytest.approx(450.0 * 14 / 18)


def test_distinct_files_keeps_the_first_spelling(tmp_path, monkeypatch):
    """Paths that resolve to one file are one; standard input and other files stay."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("x")
    given = [str(tmp_path / "a.txt"), "a.txt", "./a.txt", "-", "-", "b.txt"]
    assert distinct_files(given) == [str(tmp_path / "a.txt"), "-", "b.txt"]
