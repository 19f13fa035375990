"""``fabricui calibrate``: tables before/after, the overlay it writes, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.commands import calibrate as calibrate_command
from fabricui.hwdb.overlay import read_overlay

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"
DEFAULT = DATA / "h100_2node_degraded_default_all_reduce_perf.txt"
MEASUREMENTS = DATA / "h100_2node_degraded_measurements.yaml"


def test_calibrate_writes_overlay_and_reports(run_calibrate, tmp_path):
    """Text report with per-row before/after for fitted and held-out rows; the overlay
    holds only the changed generation and reads back."""
    out_path = tmp_path / "calibrated.yaml"
    status, out, err = run_calibrate(
        str(RING), "-t", "dgx-h100", "--held-out", str(DEFAULT), "-o", str(out_path)
    )
    assert status == 0, err
    assert "held-out" in out and "fit" in out
    assert "ib-ndr" in out and f"wrote {out_path}" in out
    overlay = read_overlay(out_path)
    assert set(overlay.links) == {"ib-ndr"}
    assert overlay.topology == "dgx-h100"
    assert overlay.fitted_on == (str(RING),)
    assert out_path.read_text().startswith("# fabricui calibration overlay")
    assert "warning" not in err


def test_calibrate_json(run_calibrate):
    """--json: links before/after, errors of fitted and held-out rows, rows per run."""
    status, out, _ = run_calibrate(
        str(MEASUREMENTS),
        "-t",
        "dgx-h100",
        "--entry",
        "nccltests290_h100_2node_ib_ndr_allreduce_ring",
        "--json",
    )
    assert status == 0
    data = json.loads(out)
    assert data["topology"] == "dgx-h100" and data["output"] is None
    assert set(data["overlay"]) == {"ib-ndr"}
    errors = data["errors"]
    assert errors["held_out"]["after"] < errors["held_out"]["before"]
    (run,) = data["runs"]
    assert (run["op"], run["nranks"], run["nodes"], run["algo"]) == ("all_reduce", 16, 2, "ring")
    assert {row["set"] for row in run["rows"]} == {"fit", "held_out"}
    assert set(run["rows"][0]) == {"size_bytes", "measured_us", "before_us", "after_us", "set"}
    ib = data["links"]["ib-ndr"]
    assert ib["efficiency"]["after"] < ib["efficiency"]["before"]


def test_never_overwrites_without_force(run_calibrate, tmp_path):
    """An existing output is refused before any work, and replaced with --force."""
    out_path = tmp_path / "calibrated.yaml"
    out_path.write_text("keep me\n")
    status, out, err = run_calibrate(str(RING), "-t", "dgx-h100", "-o", str(out_path))
    assert status == 2 and out == "" and "already exists" in err and "--force" in err
    assert out_path.read_text() == "keep me\n"
    status, _, err = run_calibrate(str(RING), "-t", "dgx-h100", "-o", str(out_path), "--force")
    assert status == 0, err
    assert "ib-ndr" in read_overlay(out_path).links


def test_calibration_overlay_applies_to_later_runs(run_calibrate, tmp_path):
    """A second calibration on top of the first starts from the calibrated figures."""
    out_path = tmp_path / "calibrated.yaml"
    status, _, err = run_calibrate(str(RING), "-t", "dgx-h100", "-o", str(out_path))
    assert status == 0, err
    status, out, _ = run_calibrate(
        f"--calibration={out_path}", str(RING), "-t", "dgx-h100", "--json"
    )
    data = json.loads(out)
    assert data["errors"]["fit"]["before"] < 0.05  # already calibrated
    assert data["links"]["ib-ndr"]["efficiency"]["before"] < 0.3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.txt", "-t", "dgx-h100"], "no such file"),
        ([str(RING), "-t", "no-such-topology"], "unknown topology"),
        ([str(RING), "-t", "dgx-h100", "--nodes", "1"], "do not fit 1 nodes"),
        ([str(RING), "-t", "dgx-h100", "--algo", "fastest"], "unknown algorithm"),
        ([str(MEASUREMENTS), "-t", "dgx-h100", "--entry", "nope"], "unknown entry"),
    ],
)
def test_bad_input_is_one_line(run_calibrate, args, message):
    """User errors exit 2 with one line on stderr."""
    status, out, err = run_calibrate(*args)
    assert status == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_op_must_be_known(run_calibrate, tmp_path):
    """A table whose op nothing names asks for --op; with --op it calibrates."""
    table = tmp_path / "results.txt"
    table.write_text(
        "\n".join(
            line for line in RING.read_text().splitlines() if "Collective test starting" not in line
        )
    )
    status, _, err = run_calibrate(str(table), "-t", "dgx-h100")
    assert status == 2 and "give --op" in err
    status, _, err = run_calibrate(str(table), "-t", "dgx-h100", "--op", "all_reduce")
    assert status == 0, err


def test_nothing_changed_writes_nothing(run_calibrate, tmp_path):
    """When the database already fits, no overlay is written and the report says so."""
    table = tmp_path / "results.txt"
    status, out, _ = run_calibrate(str(RING), "-t", "dgx-h100", "--json")
    rows = json.loads(out)["runs"][0]["rows"]
    # Measured times equal to the model's own predictions: nothing to fit.
    lines = [
        "# Collective test starting: all_reduce_perf",
        "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
    ]
    for row in rows:
        t = row["before_us"]  # busbw/algbw 1.875 = 2 (n - 1) / n: the run's 16 ranks
        lines.append(f"{row['size_bytes']} 1 float sum -1 {t:.2f} 1.00 1.875 0 {t:.2f} 1 1.875 0")
    table.write_text("\n".join(lines) + "\n")
    out_path = tmp_path / "calibrated.yaml"
    status, out, err = run_calibrate(
        str(table), "-t", "dgx-h100", "--nodes", "2", "--algo", "ring", "-o", str(out_path)
    )
    assert status == 0, err
    assert "nothing written" in out and not out_path.exists()
    assert "already fits" in out


def test_unchanged_figures_far_off_say_so(run_calibrate):
    """A report whose figures stayed put while the rows are far off is not called a fit."""
    status, out, _ = run_calibrate(str(RING), "-t", "dgx-h100", "--json")
    report = json.loads(out)
    report["overlay"] = {}
    report["errors"]["fit"]["after"] = 0.5
    text = calibrate_command.render(report)
    assert "already fits" not in text
    assert "predictions are off by 50.0%: the runs may not be of this topology" in text
    report["errors"]["fit"]["after"] = 0.02
    assert "the database already fits these runs" in calibrate_command.render(report)


def test_a_huge_cluster_log_is_refused_in_one_line(run_calibrate, tmp_path, monkeypatch):
    """A log of more hosts than the memory budget fits is one line, before any fabric is
    built, with the budget that would do (fewer nodes cannot hold the log's ranks)."""
    monkeypatch.setenv("FABRICUI_MAX_MEMORY", "130M")
    lines = RING.read_text().splitlines()
    ranks = [
        f"#  Rank {8 * n + d:5d} Group  0 Pid 1 on node{n} device {d} [0x18] NVIDIA H100"
        for n in range(1024)
        for d in range(8)
    ]
    body = [line for line in lines if not line.startswith("#  Rank")]
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text("\n".join(body[:10] + ranks + body[10:]) + "\n")
    status, _, err = run_calibrate(str(log), "-t", "dgx-h100")
    assert status == 2
    assert err.count("\n") == 1 and "8,192 GPUs" in err and "give --max-memory" in err
