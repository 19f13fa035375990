"""Calibration trials (a fabric with other link efficiencies and latencies) reuse the routing
work of the fabric they vary, and predict exactly what a fresh fabric with their figures
does."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_bulk import _network_fabric

from fabricui.engine.bulk import BulkRouter
from fabricui.engine.calibration import (
    CalibrationCase,
    fit_links,
    link_params,
    split_alternate,
    with_link_params,
)
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.group import Group
from fabricui.engine.routing import RouteMemo, Router, _Graph
from fabricui.engine.switch_routes import SwitchRoutes, switch_routes
from fabricui.fabric import build_fabric
from fabricui.fabric.fabric import Fabric

SIZES = np.geomspace(1e3, 1e9, 7)


def _slower(fabric: Fabric, factor: float) -> dict[str, dict[str, float]]:
    """Every generation at ``factor`` of its efficiency, ``factor`` us more latency."""
    return {
        gen: {"efficiency": figures["efficiency"] * factor, "lat_us": figures["lat_us"] + factor}
        for gen, figures in link_params(fabric).items()
    }


def _fresh(trial: Fabric) -> Fabric:
    """The same figures on a fabric that shares nothing (as a rebuilt one)."""
    return dataclasses.replace(trial, link_eff=trial.link_eff, link_lat_us=trial.link_lat_us)


def _counting(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """Counts the calls of ``owner.name`` (one list item per call)."""
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_second_trial_routes_nothing_again(mini, monkeypatch):
    """The second trial of a 16-node fat-tree builds no route tree and no flow incidence
    (the memo answers), and its prediction equals a fresh fabric's, bit for bit."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    trees = _counting(monkeypatch, _Graph, "single_source")
    incidences = _counting(monkeypatch, BulkRouter, "_routed_incidence")
    first = with_link_params(fabric, _slower(fabric, 0.5))
    evaluate_collective(first, "all_reduce", SIZES)
    memo = Router.for_fabric(fabric).memo
    assert memo is not None and Router.for_fabric(first).memo is memo
    assert trees and incidences  # the first trial routes
    hits = memo.hits
    trees.clear()
    incidences.clear()

    second = with_link_params(fabric, _slower(fabric, 0.8))
    predicted = evaluate_collective(second, "all_reduce", SIZES).time_us
    assert not trees and not incidences and memo.hits > hits
    monkeypatch.undo()

    fresh = evaluate_collective(_fresh(second), "all_reduce", SIZES).time_us
    assert np.array_equal(predicted, fresh)
    assert Router.for_fabric(_fresh(second)).memo is None  # a fabric of its own: no memo


def test_trials_of_an_imported_cluster_share_its_switch_routes(mini, catalog, monkeypatch):
    """Every trial of an imported cluster routes on the switch-level routes the first
    trial made (they read line rates only; a trial's router is a copy made before them),
    and predicts what a fresh fabric does."""
    fabric = _network_fabric("explicit", mini, catalog)
    made = _counting(monkeypatch, SwitchRoutes, "__init__")
    trials = [with_link_params(fabric, _slower(fabric, f)) for f in (0.3, 0.6, 0.9)]
    shared = [evaluate_collective(t, "all_to_all", SIZES).time_us for t in trials]
    assert len(made) == 1
    routes = {id(switch_routes(Router.for_fabric(t))) for t in trials}
    assert routes == {id(switch_routes(Router.for_fabric(fabric)))}
    monkeypatch.undo()
    for trial, time_us in zip(trials, shared):
        assert np.array_equal(
            time_us, evaluate_collective(_fresh(trial), "all_to_all", SIZES).time_us
        )


@pytest.mark.parametrize(
    ("name", "op"),
    [
        *(
            (name, op)
            for name in ("dragonfly", "torus", "explicit", "none")
            for op in ("all_reduce", "all_to_all")
        ),
        ("pairwise", "all_reduce"),  # an all-to-all routed pair by pair takes seconds
    ],
)
def test_trials_predict_as_fresh_fabrics_on_every_network_kind(mini, catalog, name, op):
    """Trials after the first (a dragonfly's adaptive routing reads the trial's capacities)
    take their routing from the memo and predict what fresh fabrics with the same figures
    do, bit for bit."""
    fabric = _network_fabric(name, mini, catalog)
    for factor in (0.3, 0.6, 0.9):
        trial = with_link_params(fabric, _slower(fabric, factor))
        shared = evaluate_collective(trial, op, SIZES).time_us
        fresh = evaluate_collective(_fresh(trial), op, SIZES).time_us
        assert np.array_equal(shared, fresh), (name, op, factor)
    memo = Router.for_fabric(fabric).memo
    assert memo is not None and memo.hits > 0


@pytest.mark.parametrize("name", ["fat-tree", "pcie-noP2P", "quad"])
def test_path_latencies_equal_one_pair_at_a_time(mini, name):
    """The batched latencies of 300 pairs (routes of every length) equal
    ``path_latency_us`` of each pair, bit for bit."""
    fabric = build_fabric(mini.topologies[name], mini)
    group = Group(fabric, np.arange(fabric.n_gpus))
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, fabric.n_gpus, size=(2, 300))
    batched = group.path_latencies_us(src, dst)
    one_by_one = [group.path_latency_us(int(a), int(b)) for a, b in zip(src, dst)]
    assert batched.tolist() == one_by_one


def test_route_memo_is_bounded():
    """The least recently used results go first; a result larger than the bound is computed
    and not kept."""
    memo = RouteMemo(max_elements=10)
    size = len
    memo.remember("a", lambda: [1] * 4, size)
    memo.remember("b", lambda: [2] * 4, size)
    assert memo.remember("a", lambda: [], size) == [1] * 4  # kept; now the most recent
    memo.remember("c", lambda: [3] * 4, size)  # evicts "b"
    assert memo.remember("b", lambda: [0], size) == [0]
    assert memo.remember("big", lambda: [9] * 11, size) == [9] * 11
    assert memo.remember("big", lambda: [], size) == []
    assert memo.hits == 1


def test_the_memo_ends_with_the_fit(mini, catalog):
    """``fit_links`` drops the memo its trials shared once it returns."""
    fabric = _network_fabric("dragonfly", mini, catalog)
    measured = evaluate_collective(
        with_link_params(fabric, _slower(fabric, 0.5)), "all_reduce", SIZES
    )
    case = CalibrationCase(
        "t", fabric, "all_reduce", SIZES, np.asarray(measured.time_us), split_alternate(SIZES.size)
    )
    fit_links([case])
    assert Router.for_fabric(fabric).memo is None
