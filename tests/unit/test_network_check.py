"""A torus shaped from the divisors of its chip count (``torus.torus_shape``): the shape
every side tried gives, found at once for any count."""

from __future__ import annotations

from fabricui.fabric.torus import torus_shape


def _every_shape(chips: int, block: tuple[int, int, int], max_dims: int):
    """``torus_shape`` by trying every side from 1 to ``chips`` (its first form)."""
    best = None
    for x in range(1, chips + 1):
        for y in range(1, chips // x + 1) if chips % x == 0 else ():
            if (chips // x) % y:
                continue
            shape = (x, y, chips // x // y)
            fits = all(s % b == 0 for s, b in zip(shape, block))
            fits = fits and sum(s > 1 for s in shape) <= max_dims
            if fits and (best is None or (sum(shape), shape) < (sum(best), best)):
                best = shape
    if best is None:
        if block != (1, 1, 1):
            return _every_shape(chips, (1, 1, 1), max_dims)
        return (1, 1, chips)
    return best


def test_a_torus_is_shaped_from_the_divisors_alone():
    """The shape from divisors up to the square root is the one every side tried gives, and
    a slice far past any pod is shaped at once (it took a second per try)."""
    for chips in range(0, 200):
        for block in ((1, 1, 1), (2, 2, 1), (2, 4, 1), (4, 1, 1), (3, 1, 1)):
            for max_dims in (1, 2, 3):
                wanted = _every_shape(chips, block, max_dims)
                assert torus_shape(chips, block, max_dims) == wanted, (chips, block)
    assert torus_shape(800_000, (2, 4, 1), 2) == (800, 1000, 1)
    assert torus_shape(2**20, (2, 2, 1), 3) == (64, 128, 128)
