"""Routes as rows: many routes in one (n, width) array of link ids, each row a route's links
in order, then -1 padding. One place for building, joining and closing up such rows, for the
per-pair router (``routing``) and the bulk routers above it alike (``graph_routes``,
``networks``), which cannot import one another both ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

#: One route: link ids in order, as a list or a 1-d integer array.
Route = Union[Sequence[int], npt.NDArray[np.integer]]


def pad_rows(rows: Sequence[Route]) -> IntArray:
    """Lists of link ids as one (n, width) array, -1 padded (width 1 at least)."""
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), max(width, 1)), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def row_of_cells(keep: npt.NDArray[np.bool_]) -> IntArray:
    """(n_kept,) the row of every kept cell of an (n, width) mask, in the row-major order
    ``array[keep]`` lists them: ``np.nonzero(keep)[0]`` without its column array, so that
    ``(row_of_cells(keep), rows[keep])`` are the (flow, resource) entries of ``rows`` at
    a third of the memory traffic of gathering ``rows[flow, col]``."""
    counts = np.count_nonzero(keep, axis=1)
    return np.repeat(np.arange(keep.shape[0], dtype=np.int64), counts)


def compact_rows(rows: IntArray) -> IntArray:
    """Rows with their -1 gaps moved to the end (a route's links in order, then padding).

    ``rows`` itself when it has no gap (any shape, no copy); else a new array as wide as
    the most links of a row.
    """
    valid = rows >= 0
    if valid.all():
        return rows
    order = np.argsort(~valid, axis=1, kind="stable")
    out = np.take_along_axis(rows, order, axis=1)
    width = max(int(valid.sum(axis=1).max(initial=0)), 1)
    return out[:, :width]


def join_rows(parts: Sequence[npt.NDArray[np.integer]]) -> IntArray:
    """Rows of ``parts`` (each (n, w), -1 where no link) joined row by row, their links
    moved left in order: a new (n, width) array, -1 padded, width the most links of a row
    (1 at least, also without rows or columns)."""
    joined = np.concatenate(parts, axis=1)
    if joined.size == 0:
        return np.full((joined.shape[0], 1), -1, dtype=np.int64)
    return np.ascontiguousarray(compact_rows(joined), dtype=np.int64)
