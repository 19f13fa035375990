"""Vectorized routing: the same paths as the router, loads, and max-min fair rates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.bulk import BulkRouter
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric


@pytest.mark.parametrize(
    "name", ["pod", "fat-tree", "quad", "shared-nic", "pcie-box", "pcie-noP2P"]
)
def test_bulk_metrics_equal_single_path_queries(mini, name):
    """Bottleneck and latency of 200 random pairs equal ``fabricui path``'s, pair by pair."""
    fabric = build_fabric(mini.topologies[name], mini)
    rng = np.random.default_rng(1)
    src = rng.integers(0, fabric.n_gpus, 200)
    dst = rng.integers(0, fabric.n_gpus, 200)
    metrics = BulkRouter(fabric).path_metrics(src, dst)
    for a, b, bw, lat in zip(src, dst, metrics.bottleneck_GBps, metrics.latency_us):
        if a == b:
            assert bw == np.inf and lat == 0
            continue
        report = api.path(fabric, str(a), str(b))
        assert bw == pytest.approx(report.bottleneck_GBps)
        assert lat == pytest.approx(report.latency_us)


def test_max_min_shared_nic_by_hand(mini):
    """Two flows through one NIC share its 50 x 0.95 GB/s; a third alone on the other NIC
    gets all of it."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    rates, _ = BulkRouter(fabric).max_min_rates([0, 1, 4], [8, 9, 12])
    np.testing.assert_allclose(rates, [23.75, 23.75, 47.5])


def test_max_min_leaves_no_resource_over_capacity(mini):
    """Random flows on an oversubscribed fat-tree: loads never exceed capacity, and every
    flow is limited by some full resource (max-min optimality)."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    bulk = BulkRouter(fabric)
    rng = np.random.default_rng(2)
    src = rng.integers(0, fabric.n_gpus, 400)
    dst = (src + rng.integers(1, fabric.n_gpus, 400)) % fabric.n_gpus
    rates, load = bulk.max_min_rates(src, dst)
    cap = bulk.resource_capacity_GBps
    assert np.all(load <= cap * (1 + 1e-9))
    flow, res = bulk.incidence(src, dst)
    full = load >= cap * (1 - 1e-6)
    assert np.all(np.bincount(flow[full[res]], minlength=src.size) > 0)


def test_loads_spread_evenly_over_spines(mini):
    """A flow leaving a leaf puts an equal share on each of the leaf's uplinks. Without rail
    optimization (no PXN) 5 nodes share a 2:1 leaf: 40 ports down, 20 up, two spines of 10
    cables each."""
    spec = mini.topologies["fat-tree"]
    spec = replace(spec, net=replace(spec.net, rail_optimized=False))
    fabric = build_fabric(spec, mini)
    bulk = BulkRouter(fabric)
    tree = fabric.tree
    assert tree.leaf_up.shape == (4, 2)
    assert fabric.link_count[tree.leaf_up].tolist() == [[10, 10]] * 4
    load = bulk.link_loads(bulk.loads([0], [fabric.n_gpus - 3], [1.0]))
    uplinks = load[tree.leaf_up[0]]
    np.testing.assert_allclose(uplinks, 1.0 / tree.leaf_up.shape[1])


def test_bad_ranks(mini):
    """Out-of-range ranks and mismatched arrays are one-line errors."""
    bulk = BulkRouter(build_fabric(mini.topologies["pod"], mini))
    with pytest.raises(EngineError, match="ranks must be within 0..31"):
        bulk.path_metrics([0], [32])
    with pytest.raises(EngineError, match="2 sources but 1 destinations"):
        bulk.path_metrics([0, 1], [2])
