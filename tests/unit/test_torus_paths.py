"""``Torus.paths`` routes each dimension of every flow at once (``ring_steps``,
``ring_moves``): link for link the routes of a hop-by-hop walk, kept here as the
reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricui.fabric import torus as torus_module
from fabricui.fabric.torus import Torus, build_torus, ring_moves, ring_steps


def reference_paths(table: Torus, src, dst):
    """The dimension-order routes walked one hop at a time (the former ``Torus.paths``)."""
    a = np.asarray(src, dtype=np.int64).reshape(-1)
    b = np.asarray(dst, dtype=np.int64).reshape(-1)
    out = np.full((a.shape[0], table.width), -1, dtype=np.int64)
    cur = table.pos[a].copy()
    goal = table.pos[b]
    x_size, y_size, _ = table.dims
    col = 0
    for d, size in enumerate(table.dims):
        if size > 1:
            ahead = (goal[:, d] - cur[:, d]) % size
            plus = ahead <= size // 2 if table.wrap[d] else goal[:, d] >= cur[:, d]
            steps = np.where(plus, ahead, size - ahead)
            direction = np.where(plus, 0, 1)
            step = np.where(plus, 1, -1)
            for k in range(table.hops_along(d)):
                idx = np.flatnonzero(steps > k)
                if not idx.size:
                    break
                here = table.rank_at[cur[idx, 0] + x_size * (cur[idx, 1] + y_size * cur[idx, 2])]
                out[idx, col + k] = table.out[here, d, direction[idx]]
                cur[idx, d] = (cur[idx, d] + step[idx]) % size
            col += table.hops_along(d)
    return out


def make_torus(dims, wrap=(True, True, True), chips_per_host=1, block=(1, 1, 1)) -> Torus:
    chips = dims[0] * dims[1] * dims[2]
    gpus = np.arange(chips, dtype=np.int64)
    return build_torus(dims, gpus, 1.0, chips_per_host, block, wrap).tree


def same_routes(table: Torus, a, b) -> None:
    got = table.paths(a, b)
    want = reference_paths(table, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    dims=st.tuples(*[st.integers(1, 7)] * 3),
    wrap=st.tuples(*[st.booleans()] * 3),
    flows=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_routes_equal_the_hop_by_hop_walk(dims, wrap, flows, seed):
    """Random pairs on rings, lines, and rings of 1 and 2 chips (fewer flows than a ring's
    positions and more): the same links in the same columns as the hop-by-hop walk."""
    table = make_torus(dims, wrap)
    chips = dims[0] * dims[1] * dims[2]
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, chips, flows), rng.integers(0, chips, flows)
    same_routes(table, a, b)


@pytest.mark.parametrize("wrap", [True, False])
def test_a_long_ring_and_few_flows(wrap):
    """A ring of 41 chips: a few flows (each routed on its own) and many (through the
    ring's table of moves) give the walk's routes."""
    table = make_torus((3, 41, 2), (True, wrap, True))
    rng = np.random.default_rng(2)
    for flows in (1, 5, 81, 500):
        same_routes(table, rng.integers(0, 246, flows), rng.integers(0, 246, flows))


@pytest.mark.parametrize(
    ("dims", "chips_per_host", "block"),
    [((16, 16, 16), 4, (2, 2, 1)), ((16, 16, 1), 8, (2, 4, 1)), ((4, 4, 2), 4, (2, 2, 1))],
)
def test_host_blocks_route_as_the_walk(dims, chips_per_host, block):
    """TPU hosts' chip blocks (ranks not in coordinate order): every pair of a small torus,
    random pairs of the 4,096-chip one."""
    table = make_torus(dims, chips_per_host=chips_per_host, block=block)
    chips = dims[0] * dims[1] * dims[2]
    if chips <= 64:
        a, b = np.divmod(np.arange(chips * chips), chips)
    else:
        rng = np.random.default_rng(1)
        a, b = rng.integers(0, chips, 5000), rng.integers(0, chips, 5000)
    same_routes(table, a, b)


def test_blocks_of_flows_join_seamlessly(monkeypatch):
    """Flows routed a few at a time (a block smaller than the request) give the same rows."""
    table = make_torus((5, 4, 3), wrap=(True, False, True))
    a, b = np.divmod(np.arange(60 * 60), 60)
    want = reference_paths(table, a, b)
    monkeypatch.setattr(torus_module, "_PATH_BLOCK_ENTRIES", 40)
    np.testing.assert_array_equal(table.paths(a, b), want)


def test_scalar_and_empty_requests():
    """One pair as scalars gives one row; no pairs gives (0, width)."""
    table = make_torus((4, 4, 2))
    np.testing.assert_array_equal(table.paths(0, 31), reference_paths(table, 0, 31))
    empty = table.paths([], [])
    assert empty.shape == (0, table.width) and empty.dtype == np.int64


def test_ring_steps_take_the_shorter_way_positive_on_a_tie():
    """On a ring of 8: 0 -> 3 three hops up, 0 -> 5 three hops down, 0 -> 4 (a tie) four
    up, 2 -> 2 none."""
    steps, direction = ring_steps([0, 0, 0, 2], [3, 5, 4, 2], 8)
    np.testing.assert_array_equal(steps, [3, 3, 4, 0])
    np.testing.assert_array_equal(direction, [0, 1, 0, 0])


def test_ring_moves_wrap_around_a_ring():
    """On a ring of 8 from 1: up 0, 1, 2, 3 chips; down 0, -1, then round to 7 (+6), 6."""
    moves = ring_moves([1, 1], [0, 1], 8)
    np.testing.assert_array_equal(moves, [[0, 1, 2, 3], [0, -1, 6, 5]])


def test_a_line_never_wraps():
    """On a line of 5: 4 -> 0 four hops down, 0 -> 4 four hops up, each a chip further."""
    steps, direction = ring_steps([4, 0], [0, 4], 5, wrap=False)
    np.testing.assert_array_equal(steps, [4, 4])
    np.testing.assert_array_equal(direction, [1, 0])
    moves = ring_moves([4, 0], direction, 5, wrap=False)
    np.testing.assert_array_equal(moves, [[0, -1, -2, -3], [0, 1, 2, 3]])


def test_small_rings_and_no_flows():
    """A ring of 2 takes one hop the positive way either way; a single chip none; no
    flows, no rows."""
    steps, direction = ring_steps([0, 1, 1], [1, 0, 1], 2)
    np.testing.assert_array_equal(steps, [1, 1, 0])
    np.testing.assert_array_equal(direction, [0, 0, 0])
    assert ring_moves([0, 1], [0, 0], 2).shape == (2, 1)
    assert ring_moves([0], [0], 1).shape == (1, 0)
    steps, direction = ring_steps([], [], 6)
    assert steps.shape == direction.shape == (0,)
    assert ring_moves([], [], 6).shape == (0, 3)
    assert ring_moves([], [], 6, wrap=False).shape == (0, 5)
