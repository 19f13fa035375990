"""A torus of chips wired directly (TPU ICI), with its hosts' blocks of chips.

A torus wires chips directly (TPU ICI): ring links along each of up to three dimensions,
dimension-order routing (x, then y, then z), the shorter way around each ring (ties go the
positive way). Hosts occupy blocks of the torus (a TPU v5p host's 4 chips are a 2 x 2 x 1
block), so a host's chips are neighbours. Its ``Torus`` table holds each chip's position
and outgoing link per dimension and direction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.cabling import IntArray, NetworkBlock, shift_ids
from fabricui.model import NetSpec


@dataclass(frozen=True)
class Torus:
    """Chips in a torus of up to three rings; link ids local to the network block until
    ``shifted``.

    Hosts hold blocks of ``block`` chips: host ``h`` sits at block ``(h % HX, (h // HX) %
    HY, h // (HX * HY))`` of the host grid ``(X / bx, Y / by, Z / bz)`` and its chip ``c``
    at ``(c % bx, (c // bx) % by, c // (bx * by))`` inside the block; ``pos`` holds every
    chip's coordinates.
    """

    dims: tuple[int, int, int]
    """Ring sizes (X, Y, Z); 1 for an absent dimension."""
    out: IntArray
    """(chips, 3, 2) link chip -> its +1 (``[..., 0]``) and -1 (``[..., 1]``) neighbour
    along each dimension; both the same link when the ring has two chips, -1 when one."""
    pos: IntArray
    """(chips, 3) coordinates of every chip (global rank)."""
    rank_at: IntArray
    """(X * Y * Z,) chip at ``x + X * (y + Y * z)``."""
    block: tuple[int, int, int] = (1, 1, 1)
    """Chips of one host along each dimension."""
    wrap: tuple[bool, bool, bool] = (True, True, True)
    """Whether each dimension's ring wraps around (False: a line, as a TPU slice smaller
    than a whole cube is a mesh)."""

    def hops_along(self, axis: int) -> int:
        """Most hops a route takes along ``axis``: half the ring, or the whole line."""
        size = self.dims[axis]
        return size // 2 if self.wrap[axis] else size - 1

    @property
    def width(self) -> int:
        """Most hops of any route: ``X//2 + Y//2 + Z//2`` on rings, ``size - 1`` along a
        line (at least 1)."""
        return max(1, sum(self.hops_along(d) for d in range(3)))

    def neighbour(self, ranks: npt.ArrayLike, axis: int, step: int) -> IntArray:
        """Rank of each chip's neighbour ``step`` chips along ``axis`` (wrapping)."""
        r = np.asarray(ranks, dtype=np.int64)
        p = self.pos[r].copy()
        p[:, axis] = (p[:, axis] + step) % self.dims[axis]
        x, y, z = self.dims
        return self.rank_at[p[:, 0] + x * (p[:, 1] + y * p[:, 2])]

    def paths(self, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
        """(n, width) links of the dimension-order route of each chip pair, -1 padded.

        Along each dimension (x, y, z in turn) the route takes the shorter way around the
        ring, the positive way on a tie (along a line without wrap-around, the only way);
        column block ``d`` holds dimension ``d``'s hops. Each dimension's hops are found
        for many flows at once (``ring_steps``, ``ring_moves``), a block of flows at a time
        so that the temporaries stay small next to the result.
        """
        a = np.asarray(src, dtype=np.int64).reshape(-1)
        b = np.asarray(dst, dtype=np.int64).reshape(-1)
        n = a.shape[0]
        width = self.width
        out = np.full((n, width), -1, dtype=np.int64)
        # Flat-position shifts (``ring_moves`` times the dimension's stride) of every
        # (coordinate, direction) of a dimension, once, when the flows outnumber them (else
        # each flow's own: a long ring and few flows).
        shifts: list[IntArray | None] = []
        for d, size in enumerate(self.dims):
            keys = np.arange(2 * size, dtype=np.int64)
            if size > 1 and n >= keys.size:
                moves = ring_moves(keys // 2, keys % 2, size, self.wrap[d])
                shifts.append(self._strides[d] * moves)
            else:
                shifts.append(None)
        # Link out of (rank, d, direction) at 6 * rank + 2 * d + direction.
        links = np.ascontiguousarray(self.out).reshape(-1)
        rows = max(1, _PATH_BLOCK_ENTRIES // width)
        for lo in range(0, n, rows):
            hi = min(lo + rows, n)
            # np.take: row gathers several times faster than fancy indexing, same rows.
            start = np.take(self.pos, a[lo:hi], axis=0)
            goal = np.take(self.pos, b[lo:hi], axis=0)
            self._fill_paths(start, goal, links, shifts, out[lo:hi])
        return out

    def _fill_paths(
        self,
        start: IntArray,
        goal: IntArray,
        links: IntArray,
        shifts: list[IntArray | None],
        out: IntArray,
    ) -> None:
        """Write the routes from ``start`` to ``goal`` ((m, 3) coordinates) into ``out``
        ((m, width), -1 filled); ``links``: ``self.out`` flat; ``shifts[d]``: the flat
        shifts of every (coordinate, direction) of dimension ``d`` at row ``2 * coordinate
        + direction``, or None."""
        x_size, y_size, _ = self.dims
        strides = self._strides
        # Flat position (x + X * (y + Y * z)) of the chip the route enters a dimension
        # from: the dimensions already routed at the goal's coordinate, the rest at the
        # source's.
        flat = start[:, 0] + x_size * (start[:, 1] + y_size * start[:, 2])
        col = 0
        for d, size in enumerate(self.dims):
            if size > 1:
                here, there = start[:, d], goal[:, d]
                steps, direction = ring_steps(here, there, size, self.wrap[d])
                table = shifts[d]
                if table is None:
                    shift = strides[d] * ring_moves(here, direction, size, self.wrap[d])
                else:
                    shift = np.take(table, 2 * here + direction, axis=0)
                hops = shift.shape[1]
                chip = self.rank_at[flat[:, None] + shift]
                hop_links = links[6 * chip + (2 * d + direction)[:, None]]
                taken = np.arange(hops) < steps[:, None]
                np.copyto(out[:, col : col + hops], hop_links, where=taken)
                flat = flat + strides[d] * (there - here)
                col += hops

    @property
    def _strides(self) -> tuple[int, int, int]:
        """Flat-position step of one chip along each dimension (``rank_at``'s layout)."""
        return 1, self.dims[0], self.dims[0] * self.dims[1]

    def shifted(self, offset: int) -> Torus:
        """The same structure with link ids made absolute."""
        return replace(self, out=shift_ids(self.out, offset))


#: Entries of the (flows, width) result ``Torus.paths`` fills at once: its temporaries
#: stay a few hundred KiB (faster in cache than whole arrays, and small next to the result).
_PATH_BLOCK_ENTRIES = 1 << 16


def ring_steps(
    here: npt.ArrayLike, there: npt.ArrayLike, size: int, wrap: bool = True
) -> tuple[IntArray, IntArray]:
    """Hops and direction of each flow along one dimension of a torus.

    The route goes the shorter way around a ring of ``size`` chips, the positive way on a
    tie; along a line (``wrap`` False) the only way.

    Args:
        here: (n,) coordinate the flows start from along the dimension.
        there: (n,) coordinate they go to.
        size: Chips along the dimension (at least 1).
        wrap: Whether the dimension is a ring (True) or a line.

    Returns:
        ``steps`` (n,): hops taken; ``direction`` (n,): 0 the positive way, 1 the negative
        way (the last axis of ``Torus.out``).
    """
    start = np.asarray(here, dtype=np.int64).reshape(-1)
    goal = np.asarray(there, dtype=np.int64).reshape(-1)
    ahead = (goal - start) % size
    plus = ahead <= size // 2 if wrap else goal >= start
    return np.where(plus, ahead, size - ahead), np.where(plus, 0, 1)


def ring_moves(
    here: npt.ArrayLike, direction: npt.ArrayLike, size: int, wrap: bool = True
) -> IntArray:
    """How far along one dimension each hop of a route leaves from, relative to its start.

    Args:
        here: (n,) coordinate the flows start from along the dimension.
        direction: (n,) 0 the positive way, 1 the negative way (``ring_steps``).
        size: Chips along the dimension (at least 1).
        wrap: Whether the dimension is a ring (True) or a line.

    Returns:
        (n, most hops: ``size // 2`` on a ring, ``size - 1`` along a line) coordinate hop
        ``k`` leaves from minus ``here`` (a route takes its first ``steps`` hops).
    """
    start = np.asarray(here, dtype=np.int64).reshape(-1, 1)
    sign = 1 - 2 * np.asarray(direction, dtype=np.int64).reshape(-1, 1)
    k = np.arange(size // 2 if wrap else max(0, size - 1), dtype=np.int64)
    return (start + sign * k) % size - start


def default_host_block(chips_per_host: int, max_dims: int = 3) -> tuple[int, int, int]:
    """Chips of one host as a torus block: 4 -> 2 x 2 x 1 (TPU v4/v5p hosts), 8 -> 2 x 2 x 2
    (2 x 4 x 1 on a 2D torus: a TPU v6e host), 2 -> 2 x 1 x 1; other counts a line along x."""
    if chips_per_host == 8 and max_dims < 3:
        return (2, 4, 1)
    return {1: (1, 1, 1), 2: (2, 1, 1), 4: (2, 2, 1), 8: (2, 2, 2)}.get(
        chips_per_host, (chips_per_host, 1, 1)
    )


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in ascending order (none below 1), found up to its square
    root: a slice of 800,000 chips is shaped in a millisecond, not in a second."""
    if n < 1:
        return []
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def torus_shape(
    chips: int, block: tuple[int, int, int] = (1, 1, 1), max_dims: int = 3
) -> tuple[int, int, int]:
    """The most cube-like (X, Y, Z) with ``X * Y * Z == chips`` whose sides are multiples
    of the host block's (smallest ``X + Y + Z``, hence smallest diameter) and with at most
    ``max_dims`` sides above 1 (a chip with 4 ports makes a 2D torus); without such a
    shape, the most cube-like of any."""
    best: tuple[int, int, int] | None = None
    for x in _divisors(chips):
        rest = chips // x
        for y in _divisors(rest):
            shape = (x, y, rest // y)
            fits = all(s % b == 0 for s, b in zip(shape, block))
            fits = fits and sum(s > 1 for s in shape) <= max_dims
            if fits and (best is None or (sum(shape), shape) < (sum(best), best)):
                best = shape
    if best is None:
        if block != (1, 1, 1):
            return torus_shape(chips, max_dims=max_dims)
        return (1, 1, chips)
    return best


def torus_dims(
    net: NetSpec, chips: int, block: tuple[int, int, int] = (1, 1, 1), max_dims: int = 3
) -> tuple[int, int, int]:
    """(X, Y, Z) of a torus: the spec's (padded with 1s) or the derived shape (at most
    ``max_dims`` dimensions).

    Raises:
        EngineError: The spec's shape does not hold exactly ``chips`` chips.
    """
    if net.torus is None:
        shape = torus_shape(chips, block, max_dims)
        # A 2D shape lies in x and y (2 x 4 hosts of a TPU v6e), not in y and z.
        if max_dims == 2 and shape[0] == 1:
            shape = (shape[1], shape[2], 1)
        return shape
    dims = [int(d) for d in net.torus] + [1] * (3 - len(net.torus))
    product = dims[0] * dims[1] * dims[2]
    if len(net.torus) > 3 or product != chips:
        stated = "x".join(str(d) for d in net.torus)
        raise EngineError(f"torus {stated} holds {product} chips, the topology has {chips}")
    return dims[0], dims[1], dims[2]


def torus_positions(
    dims: tuple[int, int, int], chips_per_host: int, block: tuple[int, int, int]
) -> npt.NDArray[np.int64]:
    """(chips, 3) coordinates of every chip: hosts tile the torus in blocks (``Torus``).

    A block that does not tile the torus (or hold a host's chips) falls back to a line of
    consecutive chips along x.
    """
    chips = dims[0] * dims[1] * dims[2]
    rank = np.arange(chips, dtype=np.int64)
    bx, by, bz = block
    fits = bx * by * bz == chips_per_host and all(d % b == 0 for d, b in zip(dims, block))
    if not fits:
        x, y = dims[0], dims[1]
        return np.stack([rank % x, (rank // x) % y, rank // (x * y)], axis=1)
    hx, hy = dims[0] // bx, dims[1] // by
    host, chip = rank // chips_per_host, rank % chips_per_host
    return np.stack(
        [
            (host % hx) * bx + chip % bx,
            ((host // hx) % hy) * by + (chip // bx) % by,
            (host // (hx * hy)) * bz + chip // (bx * by),
        ],
        axis=1,
    )


def build_torus(
    dims: tuple[int, int, int],
    gpu_devs: IntArray,
    link_bw_GBps: float | tuple[float, float, float],
    chips_per_host: int = 1,
    block: tuple[int, int, int] = (1, 1, 1),
    wrap: tuple[bool, bool, bool] = (True, True, True),
) -> NetworkBlock[Torus]:
    """The chip-to-chip links of a torus (no devices).

    Along every dimension of size >= 3 each chip has a bundle to its +1 neighbour (with
    wrap-around), so two links in and two out; without wrap-around the last chip of each
    line has none; a dimension of size 2 has one bundle per chip pair; size 1 none. Link
    order: per dimension, the +1 direction of every bundle, then the reverse direction.
    ``link_bw_GBps`` is one rate for every link or one per dimension; ``NetworkBlock.axis``
    holds each link's dimension.
    """
    axis_bw = (
        tuple(float(b) for b in link_bw_GBps)
        if isinstance(link_bw_GBps, tuple)
        else (float(link_bw_GBps),) * 3
    )
    chips = int(gpu_devs.shape[0])
    pos = torus_positions(dims, chips_per_host, block)
    x_size, y_size, _ = dims
    flat = pos[:, 0] + x_size * (pos[:, 1] + y_size * pos[:, 2])
    rank_at = np.empty(chips, dtype=np.int64)
    rank_at[flat] = np.arange(chips, dtype=np.int64)
    out = np.full((chips, 3, 2), -1, dtype=np.int64)
    src: list[IntArray] = []
    dst: list[IntArray] = []
    axis: list[IntArray] = []
    next_link = 0
    rank = np.arange(chips, dtype=np.int64)
    for d, size in enumerate(dims):
        if size > 1:
            coord = pos[:, d]
            ahead_pos = pos.copy()
            ahead_pos[:, d] = (coord + 1) % size
            ahead = rank_at[ahead_pos[:, 0] + x_size * (ahead_pos[:, 1] + y_size * ahead_pos[:, 2])]
            if size == 2:
                lower = rank[coord == 0]
            elif wrap[d]:
                lower = rank
            else:
                lower = rank[coord < size - 1]  # a line: the last chip links no further
            upper = ahead[lower]
            m = lower.shape[0]
            ids = next_link + np.arange(m, dtype=np.int64)
            src += [lower, upper]
            dst += [upper, lower]
            axis.append(np.full(2 * m, d, dtype=np.int64))
            if size == 2:
                out[lower, d, :] = ids[:, None]
                out[upper, d, :] = (ids + m)[:, None]
            else:
                out[lower, d, 0] = ids
                out[upper, d, 1] = ids + m
            next_link += 2 * m
    chip_src = np.concatenate(src) if src else np.zeros(0, dtype=np.int64)
    chip_dst = np.concatenate(dst) if dst else np.zeros(0, dtype=np.int64)
    link_axis = np.concatenate(axis) if axis else np.zeros(0, dtype=np.int64)
    shape = "x".join(str(d) for d in dims)
    rings = [d for d in range(3) if dims[d] > 2]
    if rings and not all(wrap[d] for d in rings):
        shape += " (no wrap-around: a mesh)"
    return NetworkBlock(
        kind=[],
        index=[],
        src=gpu_devs[chip_src].astype(np.int64),
        dst=gpu_devs[chip_dst].astype(np.int64),
        bw_GBps=np.asarray(axis_bw, dtype=np.float64)[link_axis],
        count=np.ones(next_link, dtype=np.int64),
        tree=Torus(dims=dims, out=out, pos=pos, rank_at=rank_at, block=block, wrap=wrap),
        plan=(("torus", shape), ("host block", "x".join(map(str, block)))),
        axis=link_axis,
    )
