"""A dragonfly's node counts checked without cabling it (``dragonfly.check_dragonfly``, what
``builder.check_tiled`` runs): the same counts refused, with the same lines, as the build,
and the advice of a refusal found without building one dragonfly (it took seconds)."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.fabric import builder, most_nodes, network
from fabricui.model import TopologySpec
from fabricui.services.session import load_catalog
from tests.unit._network_checks import built, refusal


@pytest.fixture(scope="module")
def catalog():
    """The built-in database with the built-in plugins' records (the Slingshot routers)."""
    return load_catalog()


def _variant(catalog, **net: int) -> TopologySpec:
    spec = catalog.topologies["dragonfly-cluster"]
    assert spec.net is not None
    return dataclasses.replace(spec, net=dataclasses.replace(spec.net, **net))


@pytest.mark.parametrize(
    ("net", "largest"),
    [
        ({}, 32832),  # more groups than a group's global ports reach
        ({"routers_per_group": 8}, 2064),
        ({"global_links": 3}, 11648),  # global ports the routers lack
        ({"groups": 16}, None),  # too many switch-to-switch bundles (not built: 16 M)
    ],
    ids=["balanced", "routers", "global-links", "groups"],
)
def test_the_check_refuses_what_the_build_refuses(catalog, net, largest):
    """Below, at and past the largest count: the check and the build agree, line for
    line."""
    spec = _variant(catalog, **net)
    top = most_nodes(spec, catalog, 10**6)
    assert top is not None and (largest is None or top == largest)
    counts = [2, 3, 1000, top + 1] if largest is None else [2, 3, 1000, top, top + 1]
    for nodes in counts:
        sized = spec.with_nodes(nodes)
        checked = refusal(lambda s: builder.check_tiled(s, catalog), sized)
        assert checked == refusal(lambda s: built(catalog, s), sized), nodes
        assert (checked is None) == (nodes <= top), (nodes, checked)


def test_the_largest_count_is_found_without_cabling_a_dragonfly(catalog, monkeypatch):
    """``most_nodes`` (the advice of a --nodes refusal) builds no dragonfly to find it."""

    def cabled(*args: object, **kwargs: object) -> None:
        raise AssertionError("a dragonfly was cabled")

    monkeypatch.setattr(network, "build_dragonfly", cabled)
    for topology, largest in (("dragonfly-cluster", 32832), ("gh200-quad", 65664)):
        assert most_nodes(catalog.topologies[topology], catalog, 10**6) == largest
