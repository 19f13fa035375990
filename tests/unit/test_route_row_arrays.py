"""``fabricui.engine.route_rows``: the one home of building, joining and closing up rows of
routes, shared by the per-pair router and the bulk routers. Each helper gives, bit for bit
(values, dtype, shape), what the copies it replaced gave, empty and gap-free rows included."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.route_rows import compact_rows, join_rows, pad_rows, row_of_cells


def _left_packed_as_it_was(parts: list[np.ndarray]) -> np.ndarray:
    """The router's own joining of row parts, before it moved here."""
    joined = np.concatenate(parts, axis=1)
    order = np.argsort(joined < 0, axis=1, kind="stable")
    packed = np.take_along_axis(joined, order, axis=1)
    width = max(int((joined >= 0).sum(axis=1).max(initial=0)), 1)
    if packed.shape[1] < width:
        return np.full((joined.shape[0], width), -1, dtype=np.int64)
    return np.ascontiguousarray(packed[:, :width], dtype=np.int64)


def _route_rows_as_it_was(routes: list[np.ndarray]) -> np.ndarray:
    """``Router.route_rows``'s own padding loop, before it used ``pad_rows``."""
    width = max((r.shape[0] for r in routes), default=0)
    rows = np.full((len(routes), max(width, 1)), -1, dtype=np.int64)
    for i, links in enumerate(routes):
        rows[i, : links.shape[0]] = links
    return rows


def _same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def _random_rows(rng: np.random.Generator, n: int, width: int, dtype: type) -> np.ndarray:
    rows = rng.integers(0, 50, size=(n, width)).astype(dtype)
    rows[rng.random((n, width)) < 0.4] = -1
    return rows


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("n", [0, 1, 7])
@pytest.mark.parametrize("widths", [(), (0,), (0, 0), (3,), (1, 4), (2, 0, 5)])
def test_join_rows_is_the_routers_left_packing(dtype: type, n: int, widths: tuple[int]) -> None:
    rng = np.random.default_rng(n * 100 + len(widths))
    parts = [_random_rows(rng, n, w, dtype) for w in widths] or [np.zeros((n, 0), dtype)]
    got = join_rows(parts)
    _same(got, _left_packed_as_it_was(parts))
    assert got.flags.c_contiguous
    for part in parts:
        assert not np.shares_memory(got, part)


def test_join_rows_of_rows_without_gaps_and_of_rows_without_links() -> None:
    full = np.arange(6, dtype=np.int64).reshape(2, 3)
    _same(join_rows([full]), full)
    _same(join_rows([np.full((2, 3), -1)]), np.full((2, 1), -1, dtype=np.int64))
    _same(join_rows([np.zeros((0, 3), np.int64)]), np.full((0, 1), -1, dtype=np.int64))


def test_compact_rows_closes_gaps_in_order() -> None:
    rows = np.array([[-1, 4, -1, 2], [7, -1, -1, -1], [-1, -1, -1, -1]], dtype=np.int64)
    _same(compact_rows(rows), np.array([[4, 2], [7, -1], [-1, -1]], dtype=np.int64))
    full = np.arange(4, dtype=np.int64).reshape(2, 2)
    assert compact_rows(full) is full


@pytest.mark.parametrize("lengths", [[], [0], [3, 0, 5], [1, 1], [0, 0]])
def test_pad_rows_of_lists_and_of_arrays_is_the_routers_loop(lengths: list[int]) -> None:
    rng = np.random.default_rng(len(lengths))
    routes = [rng.integers(0, 1000, size=k).astype(np.int32) for k in lengths]
    expected = _route_rows_as_it_was(routes)
    _same(pad_rows(routes), expected)
    _same(pad_rows([r.tolist() for r in routes]), expected)


@pytest.mark.parametrize("shape", [(0, 3), (5, 0), (1, 1), (7, 4), (200, 13)])
def test_row_of_cells_is_the_row_of_nonzero(shape: tuple[int, int]) -> None:
    """The row of every kept cell, in the order ``rows[keep]`` lists them: what
    ``np.nonzero(keep)[0]`` gives (values, dtype, shape), empty masks included."""
    rng = np.random.default_rng(shape[0])
    rows = rng.integers(-1, 9, shape)
    keep = rows >= 0
    flow, col = np.nonzero(keep)
    got = row_of_cells(keep)
    assert got.dtype == flow.dtype and got.shape == flow.shape
    assert np.array_equal(got, flow) and np.array_equal(rows[keep], rows[flow, col])
