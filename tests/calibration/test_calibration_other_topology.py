"""``--calibration FILE`` on another topology than it was fitted on (or on a fabric without
its links) still applies, with one warning line on stderr."""

from __future__ import annotations

import json

import pytest

from fabricui.cli import main
from fabricui.hwdb.overlay import overlay_mismatch
from fabricui.hwdb.tables import AppliedCalibration

OVERLAY = """topology: dgx-h100-pod
fitted_on: [all_reduce_perf.txt]
links:
  ib-ndr: {efficiency: 0.22, lat_us: 0.0}
"""


@pytest.fixture
def overlay(tmp_path):
    """An overlay fitted on dgx-h100-pod that slows its InfiniBand NDR links."""
    path = tmp_path / "cal.yaml"
    path.write_text(OVERLAY)
    return path


def _busbw(out: str) -> float:
    return float(json.loads(out)["rows"][0]["busbw_GBps"])


def test_another_topology_is_warned_in_one_line(overlay, capsys):
    """Fitted on dgx-h100-pod, used on h100-ib-cluster: the figures apply (busbw drops) and
    one line names both topologies."""
    argv = ["collective", "all_reduce", "1G", "-t", "h100-ib-cluster", "--json"]
    assert main(argv) == 0
    plain = _busbw(capsys.readouterr().out)
    assert main(["--calibration", str(overlay), *argv]) == 0
    captured = capsys.readouterr()
    assert _busbw(captured.out) < plain
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fabricui: warning: ")
    assert "fitted on dgx-h100-pod, applied to h100-ib-cluster" in lines[0]


def test_the_topology_it_was_fitted_on_is_not_warned(overlay, capsys):
    """On dgx-h100-pod itself the overlay applies silently."""
    argv = ["--calibration", str(overlay), "collective", "all_reduce", "1G", "-t", "dgx-h100-pod"]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""


def test_links_the_fabric_does_not_use_are_warned(overlay, capsys):
    """dgx-a100 has no NDR links: the line says the overlay changes nothing there."""
    argv = ["--calibration", str(overlay), "collective", "all_reduce", "1G", "-t", "dgx-a100"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "calibrates ib-ndr, which dgx-a100 does not use" in err


def test_overlay_mismatch_without_a_recorded_topology():
    """An overlay that records no topology is only checked for its links."""
    bare = AppliedCalibration("cal.yaml", None, ("ib-ndr",))
    assert overlay_mismatch(bare, "h100-ib-cluster", ["nvlink4", "ib-ndr"]) is None
    assert "does not use" in str(overlay_mismatch(bare, "dgx-a100", ["nvlink3", "ib-hdr"]))
