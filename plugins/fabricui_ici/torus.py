"""Collectives on a direct torus, all dimensions at once (as TPU pods run them): a network
torus (TPU slices), or the torus of one scale-up domain (a Trn2 instance or UltraServer).

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

from typing import Any, ClassVar

import numpy as np

from fabricui.api import CollectiveAlgorithm, FloatArray, Group, alpha_beta


class TorusRings(CollectiveAlgorithm):
    """Bidirectional rings on every dimension at once, one part of the data per dimension."""

    name: ClassVar[str] = "torus"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce", "all_gather", "reduce_scatter")
    protocols: ClassVar[tuple[str, ...]] = ("ll", "simple")
    description: ClassVar[str] = "bidirectional rings on all torus dimensions at once"

    def applicable(self, group: Group, op: str) -> bool:
        """The group is a whole torus: every chip of the fabric, or a sub-torus made of
        whole rings (a Trn2 instance's 4x4 torus inside its UltraServer's 4x4x4)."""
        return group.n > 1 and bool(_ring_axes(group))

    def _stages(self, group: Group) -> tuple[float, float]:
        """(us per message byte of one pass, ring steps of one pass): the faster of the
        part orders ``_part_orders`` offers.

        Notes:
            Stage j of part t works on dimension ``orders[t][j]`` with ``left`` of the part
            still to reduce; each chip sends ``(n - 1) / n * left / parts / 2`` of the
            buffer each way (all of it one way on a ring of two).
        """
        torus, offset = _group_torus(group)
        assert torus is not None
        dims = tuple(torus.dims)
        axes = _ring_axes(group)

        def plan(orders: list[list[int]]) -> tuple[float, float]:
            ranks = group.ranks.astype(np.int64)
            local = ranks - offset
            parts = len(orders)
            spb, steps = 0.0, 0.0
            for stage in range(len(orders[0])):
                src, dst, vol = [], [], []
                stage_steps = 0.0
                for order in orders:
                    axis = order[stage]
                    size = dims[axis]
                    left = 1.0 / float(np.prod([dims[a] for a in order[:stage]]))
                    halves = 1.0 if size == 2 else 0.5  # a 2-ring has one neighbour, one link
                    share = (size - 1) / size * left / parts * halves
                    for step in (1, -1) if size > 2 else (1,):
                        src.append(ranks)
                        dst.append(torus.neighbour(local, axis, step) + offset)
                        vol.append(np.full(ranks.shape[0], share))
                    stage_steps = max(stage_steps, float(size - 1))
                spb += group.seconds_per_byte(
                    np.concatenate(src), np.concatenate(dst), np.concatenate(vol)
                )
                steps += stage_steps
            return spb, steps

        def raw() -> tuple[float, float]:
            return min(
                (plan(orders) for orders in _part_orders(group, list(axes))),
                key=lambda r: r[0],
            )

        return group.memo(("torus", dims, axes), raw)

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Reduce-scatter and/or all-gather passes over every dimension [us]."""
        spb, steps = self._stages(group)
        passes = 2.0 if op == "all_reduce" else 1.0
        return alpha_beta(group, size_bytes, protocol, passes * steps, 0.0, passes * spb)


def _ring_axes(group: Group) -> tuple[int, ...]:
    """Torus dimensions (of size > 1) along which the group holds whole rings, when the
    group is exactly such a sub-torus (whole rings along these, one coordinate along the
    others); empty otherwise."""
    torus, offset = _group_torus(group)
    if torus is None:
        return ()
    pos = torus.pos[group.ranks.astype(np.int64) - offset]
    axes = []
    size = 1
    for axis, ring in enumerate(torus.dims):
        coords = np.unique(pos[:, axis])
        if coords.shape[0] == ring and ring > 1:
            axes.append(axis)
            size *= ring
        elif coords.shape[0] != 1:
            return ()
    return tuple(axes) if size == group.n else ()


def _part_orders(group: Group, axes: list[int]) -> list[list[list[int]]]:
    """Candidate plans: each a list of parts, each part the order its dimensions are
    reduced in. Always one part per dimension, orders rotated (every dimension busy at
    every stage); where dimensions differ in link rate (a Trn2 UltraServer's rings across
    instances run at half its in-instance torus), also one part per fastest dimension,
    rotated among those, the slower dimensions last, on data already reduced by the fast
    ones (the instance's torus first, then the ring across instances)."""
    rotated = [axes[t:] + axes[:t] for t in range(len(axes))]
    torus, _ = _group_torus(group)
    assert torus is not None
    rate = {}
    for axis in axes:
        links = torus.out[:, axis, :]
        links = links[links >= 0]
        rate[axis] = float(group.fabric.link_bw_GBps[links].min()) if links.size else 0.0
    fastest = max(rate.values()) if rate else 0.0
    fast = [a for a in axes if rate[a] >= fastest * (1 - 1e-9)]
    if len(fast) == len(axes):
        return [rotated]
    slow = sorted((a for a in axes if a not in fast), key=lambda a: -rate[a])
    return [rotated, [fast[t:] + fast[:t] + slow for t in range(len(fast))]]


def _group_torus(group: Group) -> tuple[Any, int]:
    """(torus, first rank) the group's chips lie in: the fabric's torus (first rank 0), or
    the torus of the one scale-up domain holding every rank (a Trn2 UltraServer); (None,
    0) otherwise."""
    fabric = group.fabric
    if getattr(fabric, "torus", None) is not None:
        return fabric.torus, 0
    domain_torus = getattr(fabric, "domain_torus", None)
    if domain_torus is None:
        return None, 0
    domains = group.ranks // fabric.gpus_per_domain
    if (domains != domains[0]).any():
        return None, 0
    return domain_torus, int(domains[0]) * fabric.gpus_per_domain
