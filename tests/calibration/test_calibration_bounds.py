"""A fitted link figure that ends on its bound is flagged: the runs are then outside what
the model explains, in the engine's result, the text report, --json and the overlay."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fabricui.engine.calibration import (
    BOUND_TOLERANCE,
    PARAMETERS,
    CalibrationCase,
    bound_side,
    fit_links,
    split_alternate,
)
from fabricui.engine.evaluate import algorithms_for_env
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.importers.nccl_tests import read_results

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"
NETWORK_FIRST = ["ib-ndr", "nvlink4", "pcie5", "upi"]
#: How much slower than the fixture the slow run is: more than 1 % efficiency explains.
SLOWER = 60.0


def _slow(text: str, factor: float) -> str:
    """An nccl-tests output whose times are ``factor`` times the fixture's."""
    out = []
    for line in text.splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit():
            tokens[5] = tokens[9] = f"{float(tokens[5]) * factor:.1f}"
            line = "  ".join(tokens)
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("name", "value", "side"),
    [
        ("efficiency", 0.01, "lower"),
        ("efficiency", 0.01 + 0.5 * BOUND_TOLERANCE * 0.99, "lower"),
        ("efficiency", 0.0101, None),
        ("efficiency", 0.94, None),
        ("efficiency", 1.0, "upper"),
        ("lat_us", 0.0, "lower"),
        ("lat_us", 0.05, None),
        ("lat_us", 100.0, "upper"),
        ("lat_us", math.nan, None),
    ],
)
def test_bound_side(name, value, side):
    """On a bound within a tiny share of the span, else None (NaN included)."""
    assert bound_side(name, value) == side


def test_bound_side_of_an_unknown_parameter():
    """An unknown parameter is an EngineError naming the known ones."""
    with pytest.raises(EngineError, match="efficiency, lat_us"):
        bound_side("bw_GBps", 1.0)


@pytest.fixture(scope="module")
def fabric(catalog):  # type: ignore[no-untyped-def]
    """Two DGX H100 nodes as the database describes them."""
    return build_fabric(resolve_topology("dgx-h100", catalog, 2), catalog)


def _case(fabric, factor: float) -> CalibrationCase:  # type: ignore[no-untyped-def]
    (run,) = read_results(RING)
    rows = sorted(run.rows, key=lambda r: r.size_bytes)
    return CalibrationCase(
        label="slow",
        fabric=fabric,
        op="all_reduce",
        size_bytes=np.array([r.size_bytes for r in rows], dtype=float),
        time_us=np.array([r.time_us * factor for r in rows], dtype=float),
        fit=split_alternate(len(rows)),
        algorithms=tuple(algorithms_for_env(run.env)),
        algo="ring",
    )


def test_a_fit_pushed_past_a_bound_ends_on_it_and_says_so(fabric):
    """Runs slower than 1 % of the network's line rate explains: the network's efficiency
    ends exactly on its lower bound (the bound itself is tried), and ``at_bounds`` names it,
    with the latency the rows then push to its ceiling; the figures of an ordinary fit are
    not flagged."""
    result = fit_links([_case(fabric, SLOWER)], generations=NETWORK_FIRST)
    assert result.after["ib-ndr"]["efficiency"] == pytest.approx(PARAMETERS["efficiency"][0])
    assert result.after["ib-ndr"]["lat_us"] == pytest.approx(PARAMETERS["lat_us"][1])
    assert result.at_bounds["ib-ndr"] == {"efficiency": "lower", "lat_us": "upper"}
    ordinary = fit_links([_case(fabric, 1.0)], generations=NETWORK_FIRST)
    assert ("ib-ndr", "efficiency") in ordinary.fitted and ordinary.at_bounds == {}


def test_the_report_flags_the_figure_on_its_line_and_in_json(run_calibrate, tmp_path):
    """The text report's line of the generation says which figure sits on which bound and
    not to trust it; --json has ``at_bound`` per generation (empty where none) and a
    warning on stderr; the overlay's header says it too."""
    slow = tmp_path / "all_reduce_perf.txt"
    slow.write_text(_slow(RING.read_text(), SLOWER))
    out_path = tmp_path / "calibrated.yaml"
    status, out, err = run_calibrate(str(slow), "-t", "dgx-h100", "-o", str(out_path))
    assert status == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("  ib-ndr ")]
    assert (
        "(efficiency at its lower bound 0.01, lat_us at its upper bound 100: the runs are " in line
    )
    assert "outside what the model explains" in line
    assert "do not trust these figures" in line  # as stderr and the overlay say it
    assert "efficiency at its lower bound" not in err  # the report says it where it belongs
    assert "# ib-ndr: efficiency at its lower bound 0.01" in out_path.read_text()
    status, out, err = run_calibrate(str(slow), "-t", "dgx-h100", "--json")
    links = json.loads(out)["links"]
    assert links["ib-ndr"]["at_bound"] == {
        "efficiency": {"side": "lower", "bound": 0.01},
        "lat_us": {"side": "upper", "bound": 100.0},
    }
    assert links["upi"]["at_bound"] == {}
    assert "warning: ib-ndr: efficiency at its lower bound 0.01" in err
