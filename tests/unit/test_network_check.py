"""The network's refusals made before anything is wired (``builder._check_network``): a
torus checked by its shape alone (shaped from the divisors of its chip count), and
``build_tiled`` refusing a network before it tiles the domains (most of a large fabric's
time) instead of after."""

from __future__ import annotations

import pytest

from fabricui.errors import EngineError
from fabricui.fabric import build_fabric, builder, most_nodes
from fabricui.fabric.torus import torus_shape
from fabricui.services.session import load_catalog
from tests.unit._network_checks import built, refusal


@pytest.fixture(scope="module")
def catalog():
    """The built-in database with the built-in plugins' records."""
    return load_catalog()


@pytest.mark.parametrize("topology", ["tpu-v5p-torus", "tpu-v6e-256", "tpu7x-4x4x4"])
def test_a_torus_check_refuses_what_its_wiring_refuses(catalog, topology):
    """Shapes the chips make and shapes they cannot, around the largest: the check and the
    wiring agree, line for line."""
    spec = catalog.topologies[topology]
    top = most_nodes(spec, catalog, 10**6)
    assert top is not None
    for nodes in sorted({1, 2, 3, 5, 7, 12, 16, 30, 64, top, top + 1, 2 * top}):
        sized = spec.with_nodes(nodes)
        checked = refusal(lambda s: builder.check_tiled(s, catalog), sized)
        assert checked == refusal(lambda s: built(catalog, s), sized), nodes
    assert refusal(lambda s: builder.check_tiled(s, catalog), spec.with_nodes(top)) is None


@pytest.mark.parametrize(
    ("topology", "nodes"),
    [
        ("h100-ib-cluster", 100_000),  # more pods than a core switch joins
        ("h100-ib-cluster", 16),  # fits (no refusal)
        ("dragonfly-cluster", 100_000),
        ("tpu-v6e-256", 100_000),  # more chips than a slice
        ("dgx-h100-pod", 300),  # two leafs joined directly cannot hold them
    ],
)
def test_the_build_refuses_a_network_before_tiling_the_domains(
    catalog, monkeypatch, topology, nodes
):
    """A network the switches or chips cannot make is refused with ``check_tiled``'s line
    before a domain is tiled."""
    spec = catalog.topologies[topology].with_nodes(nodes)
    checked = refusal(lambda s: builder.check_tiled(s, catalog), spec)

    def tiled(*args: object) -> None:
        raise AssertionError("the domains were tiled")

    monkeypatch.setattr(builder, "_tile_domains", tiled)
    if checked is None:
        with pytest.raises(AssertionError, match="tiled"):
            build_fabric(spec, catalog)
        return
    with pytest.raises(EngineError) as refused:
        build_fabric(spec, catalog)
    assert refused.value.message == checked


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
