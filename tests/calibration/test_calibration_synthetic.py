"""The fit finds again the link figures an nccl-tests output was written with (the model's
own times with raised or lowered efficiency and latency), moves each figure the way the runs
ask, and says per figure what it made of it: fitted (moved), kept, or not constrained by
these runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _model_outputs import all_reduce_output, hosts_in_blocks, model_times_us

from fabricui.commands import calibrate as calibrate_command
from fabricui.engine.calibration import robust_loss
from fabricui.services.calibrate import CalibrateRequest, calibrate

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"

#: name: (nodes, link figures the output is written with, smallest size 2**k, NCCL_ALGO,
#: factor on the model's times).
SCENARIOS: dict[str, tuple[int, dict[str, dict[str, float]], int, str, float]] = {
    # NVLink faster than the database says (0.82 -> 0.9) with a slower hop (0.3 -> 0.6 us).
    "nvlink_raised": (1, {"nvlink4": {"efficiency": 0.9, "lat_us": 0.6}}, 3, "auto", 1.0),
    # NVLink slower (0.6) and 1.5 us a hop, sizes from 8 MiB only: efficiency and latency
    # trade against each other there.
    "nvlink_lowered": (1, {"nvlink4": {"efficiency": 0.6, "lat_us": 1.5}}, 23, "auto", 1.0),
    # The network slower (0.94 -> 0.6) with a 3 us hop, on two nodes, NCCL_ALGO=RING.
    "network_lowered": (2, {"ib-ndr": {"efficiency": 0.6, "lat_us": 3.0}}, 3, "ring", 1.0),
    # Sizes from 1 GiB only: no row depends on latency enough to tell it.
    "large_rows_only": (1, {"nvlink4": {"efficiency": 0.7}}, 30, "auto", 1.0),
    # 25 % faster than NVLink at its full line rate: faster than the model can be.
    "beyond_line_rate": (1, {"nvlink4": {"efficiency": 1.0}}, 3, "auto", 0.8),
}


def _fit(folder: Path, name: str) -> dict[str, Any]:
    nodes, figures, smallest, algo, factor = SCENARIOS[name]
    sizes = 2.0 ** np.arange(smallest, 34)
    times = model_times_us("dgx-h100", nodes, figures, sizes, algo) * factor
    placement = hosts_in_blocks([f"node{n}" for n in range(nodes)], 8)
    path = folder / f"{name}_all_reduce_perf.txt"
    path.write_text(all_reduce_output(sizes, times, placement, algo))
    return calibrate(CalibrateRequest(topology="dgx-h100", results=(path,))).report


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """The --json report of every scenario (fitted once for the module)."""
    folder = tmp_path_factory.mktemp("synthetic")
    return {name: _fit(folder, name) for name in SCENARIOS}


def _figures(report: dict[str, Any], gen: str) -> tuple[float, float]:
    link = report["links"][gen]
    return link["efficiency"]["after"], link["lat_us"]["after"]


@pytest.mark.parametrize("name", ["nvlink_raised", "nvlink_lowered", "network_lowered"])
def test_the_figures_an_output_was_written_with_are_found_again(reports, name):
    """Efficiency raised or lowered, latency changed: both come back within 1 % and 0.05 us,
    both fitted, nothing on a bound, the fitted rows then within 1 %."""
    _nodes, figures, *_ = SCENARIOS[name]
    ((gen, truth),) = figures.items()
    report = reports[name]
    efficiency, lat_us = _figures(report, gen)
    assert efficiency == pytest.approx(truth["efficiency"], rel=0.01)
    assert lat_us == pytest.approx(truth["lat_us"], abs=0.05)
    link = report["links"][gen]
    assert link["status"] == {"efficiency": "fitted", "lat_us": "fitted"}
    assert link["fitted"] == ["efficiency", "lat_us"] and link["at_bound"] == {}
    assert report["errors"]["fit"]["after"] < 0.01


def test_what_the_runs_do_not_ask_to_move_stays_and_says_why(reports):
    """The two-node ring run slowed by its network: NVLink, which the run crosses, is kept
    at its database figures (no overlay entry); UPI, which it never crosses, is not
    constrained; PCIe latency is not a figure calibrate fits. The text report says each."""
    report = reports["network_lowered"]
    links = report["links"]
    assert links["nvlink4"]["status"] == {"efficiency": "kept", "lat_us": "kept"}
    assert links["nvlink4"]["fitted"] == [] and "nvlink4" not in report["overlay"]
    assert links["upi"]["status"]["efficiency"] == "unconstrained"
    assert links["pcie5"]["status"]["lat_us"] == "excluded"
    assert set(report["overlay"]) == {"ib-ndr"}
    text = calibrate_command.render(report)
    (nvlink,) = [line for line in text.splitlines() if line.startswith("  nvlink4 ")]
    assert nvlink.endswith("(kept: no other value fits clearly better)")
    (upi,) = [line for line in text.splitlines() if line.startswith("  upi ")]
    assert "(efficiency not constrained by these runs; lat_us not fitted: " in upi
    (network,) = [line for line in text.splitlines() if line.startswith("  ib-ndr ")]
    assert network.endswith(f"lat_us 0.150 -> {_figures(report, 'ib-ndr')[1]:.3f}")


def test_latency_is_not_constrained_by_large_rows_alone(reports):
    """Sizes of 1 GiB and more: the efficiency is fitted, the latency is left as it is
    and said not constrained by these runs (not 'fitted')."""
    link = reports["large_rows_only"]["links"]["nvlink4"]
    assert link["status"] == {"efficiency": "fitted", "lat_us": "unconstrained"}
    assert link["efficiency"]["after"] == pytest.approx(0.7, rel=0.01)
    assert link["lat_us"]["after"] == link["lat_us"]["before"]
    assert link["fitted"] == ["efficiency"]


def test_runs_faster_than_the_line_rate_end_on_the_upper_bound(reports):
    """Faster than NVLink at 100 % explains: the efficiency is raised (never lowered) onto
    its upper bound and flagged there, on its line of the text report too."""
    report = reports["beyond_line_rate"]
    link = report["links"]["nvlink4"]
    assert link["efficiency"]["after"] == 1.0
    assert link["at_bound"]["efficiency"] == {"side": "upper", "bound": 1.0}
    assert link["lat_us"]["after"] <= link["lat_us"]["before"]
    (line,) = [
        line
        for line in calibrate_command.render(report).splitlines()
        if line.startswith("  nvlink4 ")
    ]
    assert "(efficiency at its upper bound 1" in line and "do not trust this figure" in line


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_fitted_figures_moved_and_the_others_did_not(reports, name):
    """'fitted' names exactly the figures whose value changed; every other status leaves
    the database figure as it was."""
    for gen, link in reports[name]["links"].items():
        for figure, status in link["status"].items():
            moved = link[figure]["after"] != link[figure]["before"]
            assert moved == (status == "fitted"), (gen, figure, status)
            assert (figure in link["fitted"]) == (status == "fitted")


def test_a_faster_run_lowers_no_efficiency(tmp_path):
    """The degraded ring fixture at a quarter of its times (its mid sizes faster than the
    network's line rate): no efficiency is lowered to make up for them; the latency the fit
    takes to its floor is flagged there."""
    text = []
    for line in RING.read_text().splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit():
            tokens[5] = tokens[9] = f"{float(tokens[5]) / 4:.2f}"
            line = "  ".join(tokens)
        text.append(line)
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text("\n".join(text) + "\n")
    report = calibrate(CalibrateRequest(topology="dgx-h100", results=(path,))).report
    for gen, link in report["links"].items():
        assert link["efficiency"]["after"] >= link["efficiency"]["before"], gen
        for figure in link["fitted"]:
            if figure == "lat_us" and link["lat_us"]["after"] == 0.0:
                assert link["at_bound"]["lat_us"]["side"] == "lower"


def test_robust_loss_inputs():
    """Quadratic near 0, linear far out, symmetric; scalars, arrays, empty and NaN."""
    small, large = robust_loss([1e-3, -1e-3]), robust_loss([2.0, -2.0])
    assert small[0] == small[1] and small[0] == pytest.approx(1e-6 / (2 * 0.02), rel=1e-2)
    assert large[0] == large[1] and large[0] == pytest.approx(2.0 - 0.02, abs=1e-3)
    assert robust_loss(0.0) == 0.0
    assert robust_loss([]).shape == (0,)
    assert math.isnan(float(robust_loss([np.nan])[0]))
