"""Max-min fair rates (progressive filling) and UGAL's split, on incidences built by hand."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.fair_share import max_min_rates_GBps
from fabricui.engine.graph_routes import Incidence
from fabricui.engine.ugal import ugal_equilibrium


def incidence(flows, resources, weights=None, n_flows=None):
    flow = np.asarray(flows, dtype=np.int64)
    return Incidence(
        n_flows=int(flow.max()) + 1 if n_flows is None else n_flows,
        flow=flow,
        res=np.asarray(resources, dtype=np.int64),
        weight=None if weights is None else np.asarray(weights, dtype=np.float64),
    )


def test_two_flows_share_a_link_the_third_takes_what_is_left():
    """Flows 0 and 1 cross link 0 (10 GB/s), flows 1 and 2 link 1 (8 GB/s): link 1 fills
    first at 4 each, then flow 0 takes link 0's other 6."""
    rates = max_min_rates_GBps(incidence([0, 1, 1, 2], [0, 0, 1, 1]), np.array([10.0, 8.0]))
    np.testing.assert_allclose(rates, [6.0, 4.0, 4.0])


def test_weights_count_bytes_per_byte_of_flow():
    """A flow putting 2 bytes on the link per byte it moves gets half the link."""
    rates = max_min_rates_GBps(incidence([0], [0], [2.0]), np.array([10.0]))
    np.testing.assert_allclose(rates, [5.0])


def test_a_flow_without_resources_is_unbounded():
    """A GPU sending to itself loads nothing: its rate is inf, the others are unchanged."""
    rates = max_min_rates_GBps(incidence([1], [0], n_flows=2), np.array([3.0]))
    assert rates[0] == np.inf and rates[1] == 3.0


def test_group_members_share_the_group_spread():
    """Two flows of one group (a leaf pair's spread over links 0 and 1, half each) and a
    third flow alone on link 1 (6 GB/s): link 1 carries 0.5 + 0.5 + 1 per unit rate, so
    every flow freezes at 3 when it fills."""
    inc = Incidence(
        n_flows=3,
        flow=np.array([2]),
        res=np.array([1]),
        weight=None,
        group=np.array([0, 0, -1]),
        group_ptr=np.array([0, 2]),
        group_res=np.array([0, 1]),
        group_weight=np.array([0.5, 0.5]),
    )
    rates = max_min_rates_GBps(inc, np.array([100.0, 6.0]))
    np.testing.assert_allclose(rates, [3.0, 3.0, 3.0])


def test_ugal_splits_two_flows_off_a_shared_link():
    """Two flows share their minimal link (1 GB/s) and each has a Valiant link of its own
    (1 GB/s): the best split sends 2/3 of each flow's bytes the Valiant way, where the
    shared link carries 2 x 1/3 and each Valiant link 2/3 (busiest 2/3, against 2 for all
    minimal and 1 for all Valiant)."""
    minimal = incidence([0, 1], [0, 0])
    valiant = incidence([0, 1], [1, 2])
    capacity = np.ones(3)

    def busiest(load):
        return float(np.max(load / capacity))

    split = ugal_equilibrium(minimal, valiant, np.ones(2), capacity, busiest)
    np.testing.assert_allclose(split, [2 / 3, 2 / 3])


def _filled_through_masks(inc, capacity):
    """Progressive filling reading every entry through a mask of the active flows each
    round: the reference the filling's shrinking entries must equal bit for bit."""
    flow, res, weight = inc.flow, inc.res, inc.weight
    rate = np.zeros(inc.n_flows)
    remaining = capacity.astype(np.float64).copy()
    active = np.bincount(flow, minlength=inc.n_flows) > 0
    rate[~active] = np.inf
    while active.any():
        live = active[flow]
        counts = np.bincount(
            res[live], weights=None if weight is None else weight[live], minlength=capacity.size
        ).astype(np.float64)
        used = counts > 0
        share = np.full(capacity.size, np.inf)
        share[used] = remaining[used] / counts[used]
        step = share[used].min()
        rate[active] += step
        remaining -= step * counts
        full = used & (share <= step * (1 + 1e-9))
        frozen = np.zeros(inc.n_flows, dtype=bool)
        frozen[flow[live & full[res]]] = True
        active &= ~frozen
    return rate


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_rounds_read_what_is_left_bit_for_bit(seed, weighted):
    """Hundreds of flows over random resources (many rounds, entries marked then copied
    out as flows freeze): the rates equal a filling that masks every entry each round."""
    rng = np.random.default_rng(seed)
    n_flows, n_res = 400, 300
    per_flow = rng.integers(0, 6, n_flows)
    flows = np.repeat(np.arange(n_flows), per_flow)
    resources = rng.integers(0, n_res, flows.size)
    weights = rng.uniform(0.1, 2.0, flows.size) if weighted else None
    inc = incidence(flows, resources, weights, n_flows=n_flows)
    capacity = rng.uniform(1.0, 50.0, n_res)
    rates = max_min_rates_GBps(inc, capacity)
    assert np.unique(rates).size > 50  # many rounds
    assert rates.tobytes() == _filled_through_masks(inc, capacity).tobytes()
