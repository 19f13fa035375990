"""Collectives on a direct torus, one dimension at a time (as TPU pods run them).

All-reduce = reduce-scatter along x, then y, then z, then all-gather back. Each stage runs
bidirectional rings along one dimension: every chip sends half of its share each way to its
two neighbours, so both links of the dimension carry traffic. After the reduce-scatter of a
dimension of size n, each chip holds 1/n of the data, so later stages move less.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fabricui.engine.algorithms import alpha_beta
from fabricui.engine.group import Group
from fabricui.engine.types import CollectiveAlgorithm, FloatArray


def _neighbours(dims: tuple[int, int, int], ranks: np.ndarray, axis: int, step: int) -> np.ndarray:
    """Rank of each chip's neighbour ``step`` (+1 or -1) along ``axis`` (wrapping)."""
    stride = int(np.prod(dims[:axis]))
    size = dims[axis]
    coord = (ranks // stride) % size
    return ranks + (((coord + step) % size) - coord) * stride


class TorusRings(CollectiveAlgorithm):
    """Dimension-by-dimension bidirectional rings over the whole torus."""

    name: ClassVar[str] = "torus"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce", "all_gather", "reduce_scatter")
    protocols: ClassVar[tuple[str, ...]] = ("ll", "simple")
    description: ClassVar[str] = "per-dimension bidirectional rings on a direct torus"

    def applicable(self, group: Group, op: str) -> bool:
        """The group is every chip of a torus fabric."""
        torus = getattr(group.fabric, "torus", None)
        return torus is not None and group.n == group.fabric.n_gpus and group.n > 1

    def _stages(self, group: Group) -> tuple[float, float]:
        """(us per message byte of one pass, ring steps of one pass)."""
        dims = tuple(group.fabric.torus.dims)

        def raw() -> tuple[float, float]:
            ranks = group.ranks.astype(np.int64)
            spb, steps, remaining = 0.0, 0.0, 1.0
            for axis, size in enumerate(dims):
                if size < 2:
                    continue
                src = np.concatenate([ranks, ranks])
                dst = np.concatenate(
                    [_neighbours(dims, ranks, axis, 1), _neighbours(dims, ranks, axis, -1)]
                )
                halves = 1.0 if size == 2 else 0.5  # a 2-ring has one neighbour, one link
                vol = np.full(src.shape[0], halves)
                per_byte = group.seconds_per_byte(src, dst, vol)
                spb += (size - 1) / size * remaining * per_byte
                steps += size - 1
                remaining /= size
            return spb, steps

        return group.memo(("torus", dims), raw)  # type: ignore[return-value]

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Reduce-scatter and/or all-gather passes over every dimension [us]."""
        spb, steps = self._stages(group)
        passes = 2.0 if op == "all_reduce" else 1.0
        return alpha_beta(group, size_bytes, protocol, passes * steps, 0.0, passes * spb)
