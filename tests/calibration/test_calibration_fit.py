"""The calibration engine: link figures on a fabric, the fit, held-out rows, the overlay."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from fabricui.engine.calibration import (
    CalibrationCase,
    fit_links,
    link_params,
    relative_errors,
    split_alternate,
    with_link_params,
)
from fabricui.engine.evaluate import algorithms_for_env, evaluate_collective
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.importers.nccl_tests import read_results

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"
DEFAULT = DATA / "h100_2node_degraded_default_all_reduce_perf.txt"
MEASUREMENTS = DATA / "h100_2node_degraded_measurements.yaml"
SHARED = Path(__file__).parents[1] / "data" / "nccl" / "measurements.yaml"
NETWORK_FIRST = ["ib-ndr", "nvlink4", "pcie5", "upi"]


@pytest.fixture(scope="module")
def fabric(catalog):  # type: ignore[no-untyped-def]
    """Two DGX H100 nodes as the hardware database describes them (figures off for the
    degraded cluster of the fixtures)."""
    return build_fabric(resolve_topology("dgx-h100", catalog, 2), catalog)


@pytest.fixture(scope="module")
def ring_fit(fabric):  # type: ignore[no-untyped-def]
    """The fixture's NCCL_ALGO=RING run and its fit (shared: a fit takes a second)."""
    (run,) = read_results(RING)
    return run, fit_links([case_of(run, fabric)], generations=NETWORK_FIRST)


def case_of(run, fabric, held_out: bool = False) -> CalibrationCase:  # type: ignore[no-untyped-def]
    rows = sorted(run.rows, key=lambda r: r.size_bytes)
    n = len(rows)
    algo = run.env.get("NCCL_ALGO", "auto").lower()
    return CalibrationCase(
        label=run.source,
        fabric=fabric,
        op=run.op,
        size_bytes=np.array([r.size_bytes for r in rows], dtype=float),
        time_us=np.array([r.time_us for r in rows], dtype=float),
        fit=np.zeros(n, dtype=bool) if held_out else split_alternate(n),
        algorithms=tuple(algorithms_for_env(run.env)),
        algo=algo,
    )


# --- figures on a fabric -------------------------------------------------------------------


def test_link_params_are_the_database_figures(fabric, catalog):
    """Every generation of the fabric carries its catalog efficiency and latency."""
    params = link_params(fabric)
    assert set(params) == set(fabric.generations)
    for gen, figures in params.items():
        assert figures == {
            "efficiency": catalog.links[gen].efficiency,
            "lat_us": catalog.links[gen].lat_us,
        }


def test_with_link_params_equals_a_rebuilt_fabric(fabric, catalog):
    """Changing figures on the fabric is the same as rebuilding from a changed catalog."""
    params = {"ib-ndr": {"efficiency": 0.3, "lat_us": 2.0}, "nvlink4": {"lat_us": 0.7}}
    links = dict(catalog.links)
    for gen, values in params.items():
        links[gen] = dataclasses.replace(links[gen], **values)
    rebuilt = build_fabric(fabric.spec, dataclasses.replace(catalog, links=links))
    changed = with_link_params(fabric, params)
    np.testing.assert_allclose(changed.link_eff, rebuilt.link_eff)
    np.testing.assert_allclose(changed.link_lat_us, rebuilt.link_lat_us)
    assert with_link_params(fabric, {}) is fabric
    assert with_link_params(fabric, {"not-used": {"efficiency": 0.5}}) is fabric
    assert link_params(fabric)["ib-ndr"]["efficiency"] == catalog.links["ib-ndr"].efficiency


def test_relative_errors_inputs():
    """Scalars, arrays, empty arrays and NaN."""
    np.testing.assert_allclose(relative_errors(110.0, 100.0), 0.1)
    np.testing.assert_allclose(relative_errors([50.0, 200.0], [100.0, 100.0]), [0.5, 1.0])
    assert relative_errors([], []).shape == (0,)
    assert np.isnan(relative_errors([np.nan], [1.0])).all()


@pytest.mark.parametrize(
    ("n", "start", "expected"),
    [
        (0, 0, []),
        (1, 1, [True]),
        (5, 0, [True, False, True, False, True]),
        (4, 1, [False, True, False, True]),
    ],
)
def test_split_alternate(n: int, start: int, expected: list[bool]):
    """Every other row is fitted; a lone row is always fitted."""
    assert split_alternate(n, start).tolist() == expected


def test_case_validation(fabric):
    """Unknown op, mismatched arrays and non-positive times are refused."""
    sizes, times, fit = np.array([8.0, 16.0]), np.array([10.0, 12.0]), np.array([True, False])
    with pytest.raises(EngineError, match="unknown collective"):
        CalibrationCase("x", fabric, "all_reduce_perf", sizes, times, fit)
    with pytest.raises(EngineError, match="1-D alike"):
        CalibrationCase("x", fabric, "all_reduce", sizes, times[:1], fit)
    with pytest.raises(EngineError, match="finite and positive"):
        CalibrationCase("x", fabric, "all_reduce", sizes, np.array([10.0, 0.0]), fit)
    with pytest.raises(EngineError, match="finite and positive"):
        CalibrationCase("x", fabric, "all_reduce", sizes, np.array([10.0, np.nan]), fit)


def test_fit_needs_cases_and_fitted_rows(fabric):
    """No case, or only held-out rows, is an error."""
    with pytest.raises(EngineError, match="at least one measured run"):
        fit_links([])
    case = CalibrationCase(
        "x", fabric, "all_reduce", np.array([8.0]), np.array([30.0]), np.array([False])
    )
    with pytest.raises(EngineError, match="at least one fitted row"):
        fit_links([case])


# --- the fit -------------------------------------------------------------------------------


def test_degraded_cluster_held_out_rows_improve(ring_fit):
    """nccl-tests output of a cluster 4x slower than its hwdb figures: the network's
    efficiency is fitted down, and the held-out sizes improve, not only the fitted ones."""
    _run, result = ring_fit
    errors = result.errors
    assert errors["fit"]["before"] > 0.5 and errors["held_out"]["before"] > 0.5
    assert errors["fit"]["after"] < 0.05
    assert errors["held_out"]["after"] < 0.5 * errors["held_out"]["before"]
    assert set(result.changed) == {"ib-ndr"}
    assert 0.15 < result.after["ib-ndr"]["efficiency"] < 0.3
    assert result.after["nvlink4"] == result.before["nvlink4"]


def test_held_out_run_of_another_algorithm_improves(fabric):
    """Fitted on the NCCL_ALGO=RING run, the default-algorithm run of the same cluster
    (measurements-format entries) is predicted better too."""
    ring, default = (
        read_results(MEASUREMENTS, entries=[f"nccltests290_h100_2node_ib_ndr_allreduce_{x}"])[0]
        for x in ("ring", "default")
    )
    result = fit_links(
        [case_of(ring, fabric), case_of(default, fabric, held_out=True)],
        generations=NETWORK_FIRST,
    )
    measured = [r.time_us for r in sorted(default.rows, key=lambda r: r.size_bytes)]
    before = relative_errors(result.predicted_before[1], measured)
    after = relative_errors(result.predicted_after[1], measured)
    assert np.median(after) < 0.5 * np.median(before)
    assert result.errors["held_out"]["after"] < result.errors["held_out"]["before"]


def test_shared_measurement_entry_fits(fabric):
    """The shared measurements file itself (an entry picked by id) calibrates the same."""
    (run,) = read_results(SHARED, entries=["nccltests290_h100_2node_ib_ndr_allreduce_ring"])
    result = fit_links([case_of(run, fabric)], generations=NETWORK_FIRST)
    assert result.errors["held_out"]["after"] < result.errors["held_out"]["before"]


def test_cluster_the_database_fits_is_left_alone(fabric):
    """A reference entry the model already predicts well changes no figure (fitting its
    noise would make held-out rows worse)."""
    (run,) = read_results(SHARED, entries=["nccltests309_h100_xe9680_2node_ib_ndr_allreduce"])
    result = fit_links([case_of(run, fabric)], generations=NETWORK_FIRST)
    assert result.errors["held_out"]["after"] <= result.errors["held_out"]["before"] + 1e-9


def test_insensitive_generations_are_not_fitted(fabric):
    """A single-node run does not move the network's figures."""
    sizes = np.array([2.0**20, 2.0**24, 2.0**28, 2.0**30])
    ranks = np.arange(8)
    measured = evaluate_collective(fabric, "all_reduce", sizes, ranks=ranks).time_us * 1.6
    case = CalibrationCase(
        "one node", fabric, "all_reduce", sizes, measured, split_alternate(4), ranks=ranks
    )
    result = fit_links([case], generations=NETWORK_FIRST)
    assert all(gen != "ib-ndr" for gen, _ in result.fitted)
    assert "ib-ndr" not in result.changed


def test_calibrated_catalog_predicts_the_cluster(tmp_path, ring_fit):
    """The overlay written from a fit, loaded through the session, predicts the large
    ring rows of the degraded cluster within a few percent."""
    from fabricui.hwdb.overlay import (
        CalibrationOverlay,
        LinkCalibration,
        overlay_yaml,
        write_overlay,
    )
    from fabricui.services.session import load_catalog_with_plugins

    run, result = ring_fit
    overlay = CalibrationOverlay(
        links={g: LinkCalibration(**v) for g, v in result.changed.items()}, topology="dgx-h100"
    )
    path = tmp_path / "cal.yaml"
    write_overlay(path, overlay_yaml(overlay))
    catalog = load_catalog_with_plugins(calibration=path)
    calibrated = build_fabric(resolve_topology("dgx-h100", catalog, 2), catalog)
    large = [r for r in run.rows if r.size_bytes >= 2**30]
    prediction = evaluate_collective(
        calibrated, "all_reduce", [r.size_bytes for r in large], algo="ring"
    )
    errors = relative_errors(prediction.time_us, [r.time_us for r in large])
    assert np.max(errors) < 0.05
