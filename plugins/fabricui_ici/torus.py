"""Collectives on a direct torus, all dimensions at once (as TPU pods run them).

Every stage runs bidirectional rings: each chip sends half of its share each way to its two
neighbours along one dimension, so both links of that dimension carry traffic. To use all
of a chip's links at once, the data is split into one part per dimension, and part ``t``
reduce-scatters the dimensions in the order rotated by ``t`` (x, y, z; y, z, x; z, x, y):
at every stage each dimension works for one part. After the reduce-scatter along a
dimension of size n a part holds 1/n of its data, so later stages move less. All-reduce is
the reduce-scatter followed by the all-gather in reverse. On a 16 x 16 x 16 torus this is
three times the bandwidth of reducing x, then y, then z with the whole buffer.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fabricui.engine.algorithms import alpha_beta
from fabricui.engine.group import Group
from fabricui.engine.types import CollectiveAlgorithm, FloatArray


class TorusRings(CollectiveAlgorithm):
    """Bidirectional rings on every dimension at once, one part of the data per dimension."""

    name: ClassVar[str] = "torus"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce", "all_gather", "reduce_scatter")
    protocols: ClassVar[tuple[str, ...]] = ("ll", "simple")
    description: ClassVar[str] = "bidirectional rings on all torus dimensions at once"

    def applicable(self, group: Group, op: str) -> bool:
        """The group is every chip of a torus fabric."""
        torus = getattr(group.fabric, "torus", None)
        return torus is not None and group.n == group.fabric.n_gpus and group.n > 1

    def _stages(self, group: Group) -> tuple[float, float]:
        """(us per message byte of one pass, ring steps of one pass).

        Notes:
            Stage j of part t works on dimension ``dims[(t + j) % k]`` (k active
            dimensions) with ``left`` of the part still to reduce; each chip sends
            ``(n - 1) / n * left / k / 2`` of the buffer each way (all of it one way on a
            ring of two).
        """
        torus = group.fabric.torus
        dims = tuple(torus.dims)

        def raw() -> tuple[float, float]:
            ranks = group.ranks.astype(np.int64)
            active = [axis for axis, size in enumerate(dims) if size > 1]
            k = len(active)
            spb, steps = 0.0, 0.0
            for stage in range(k):
                src, dst, vol = [], [], []
                stage_steps = 0.0
                for part in range(k):
                    order = active[part:] + active[:part]
                    axis = order[stage]
                    size = dims[axis]
                    left = 1.0 / float(np.prod([dims[a] for a in order[:stage]]))
                    halves = 1.0 if size == 2 else 0.5  # a 2-ring has one neighbour, one link
                    share = (size - 1) / size * left / k * halves
                    for step in (1, -1) if size > 2 else (1,):
                        src.append(ranks)
                        dst.append(torus.neighbour(ranks, axis, step))
                        vol.append(np.full(ranks.shape[0], share))
                    stage_steps = max(stage_steps, float(size - 1))
                spb += group.seconds_per_byte(
                    np.concatenate(src), np.concatenate(dst), np.concatenate(vol)
                )
                steps += stage_steps
            return spb, steps

        return group.memo(("torus", dims), raw)  # type: ignore[return-value]

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Reduce-scatter and/or all-gather passes over every dimension [us]."""
        spb, steps = self._stages(group)
        passes = 2.0 if op == "all_reduce" else 1.0
        return alpha_beta(group, size_bytes, protocol, passes * steps, 0.0, passes * spb)
