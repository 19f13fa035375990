"""A fat-tree's node counts checked without cabling it (``fat_tree.check_fat_tree``, what
``builder.check_tiled`` runs): the same counts refused, with the same lines, as the build,
and the advice of a refusal found without building one fat-tree (it took up to a second)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.fabric import builder, most_nodes, network
from fabricui.fabric.fat_tree import build_fat_tree, check_fat_tree
from fabricui.model import NetSpec, TopologySpec
from fabricui.services.session import load_catalog
from tests.unit._network_checks import built, refusal


@pytest.fixture(scope="module")
def catalog():
    """The built-in database with the built-in plugins' records."""
    return load_catalog()


def _variant(catalog, topology: str, **net: object) -> TopologySpec:
    spec = catalog.topologies[topology]
    assert spec.net is not None
    return dataclasses.replace(spec, net=dataclasses.replace(spec.net, **net))


@pytest.mark.parametrize(
    ("topology", "net", "largest"),
    [
        ("h100-ib-cluster", {}, 8192),  # three tiers of 64-port switches: 64 pods
        ("dgx-h100-pod", {}, 8192),  # two leafs joined directly (spines: 0)
        ("gb200-nvl72-cluster", {}, 16380),  # multiples of 18 trays
        ("gb300-nvl72-xdr-cluster", {}, 186624),  # 800G Quantum-X800
        ("aws-p5en-cluster", {}, 16384),  # 16 NICs a node
        ("spectrum-x-b200-cluster", {}, 16384),
        ("trn2-ultraserver", {}, 16384),  # a torus inside each domain of 4 hosts
        ("h100-ib-cluster", {"layout": "single"}, None),
        ("h100-ib-cluster", {"layout": "three-tier"}, None),
        ("h100-ib-cluster", {"leafs": 16}, None),
        ("h100-ib-cluster", {"spines": 0}, None),
        ("h100-ib-cluster", {"spines": 4}, None),
        ("h100-ib-cluster", {"layout": "three-tier", "spines": 8}, None),
        ("h100-ib-cluster", {"rail_optimized": False, "oversubscription": 3.0}, None),
        ("h100-ib-cluster", {"spine_oversubscription": 2.0}, None),
    ],
    ids=[
        "h100-ib",
        "dgx-pod",
        "gb200",
        "gb300-xdr",
        "p5en",
        "spectrum-x",
        "trn2-ultra",
        "single",
        "three-tier",
        "leafs",
        "spines-0",
        "spines",
        "three-tier-spines",
        "not-rail",
        "spine-oversubscribed",
    ],
)
def test_the_check_refuses_what_the_build_refuses(catalog, topology, net, largest):
    """Below, at and past the largest count: the check and the build agree, line for
    line."""
    spec = _variant(catalog, topology, **net)
    hosts = spec.hosts_per_domain
    top = most_nodes(spec, catalog, 10**6)
    assert top is not None and (largest is None or top == largest)
    counts = sorted({hosts * k for k in (1, 2, 3, 5, 17, 64)} | {top, top + hosts})
    for nodes in counts:
        sized = spec.with_nodes(nodes)
        checked = refusal(lambda s: builder.check_tiled(s, catalog), sized)
        assert checked == refusal(lambda s: built(catalog, s), sized), nodes
        assert (checked is None) == (nodes <= top), (nodes, checked)


def _net(**fields: object) -> NetSpec:
    return dataclasses.replace(NetSpec(link="ib-ndr"), **fields)


#: Networks of small switches: between them they meet every refusal the builder makes but
#: ``check_bundles`` (which needs millions of switches), at node counts 1 to 89.
_SMALL_NETS = (
    _net(),
    _net(layout="single"),
    _net(layout="leaf-spine"),
    _net(layout="three-tier"),
    _net(layout="bogus"),
    _net(leafs=3),
    _net(leafs=5, rail_optimized=False),
    _net(spines=0),
    _net(spines=2),
    _net(spines=7),
    _net(layout="three-tier", spines=3),
    _net(layout="three-tier", spines=9),
    _net(rail_optimized=False),
    _net(oversubscription=2.5, spine_oversubscription=3.0),
)

#: A phrase of each refusal line the builder makes (but ``check_bundles``'s).
_REFUSALS = (
    "unknown network layout",
    "net.layout single:",
    "net.leafs:",
    "a NIC's",
    "a node's",
    "joined directly need",
    "spines need at least one uplink",
    "ports cannot take",
    "spines per pod need",
    "a three-tier fat-tree of this radix holds",
)


def test_every_refusal_of_the_builder_is_the_checks():
    """Small switches, node counts one by one: every count the builder refuses (its
    layout, its leafs, leafs joined directly, spines, pods and cores), the check refuses
    with the same line, and no other."""
    seen: set[str] = set()
    for nics, ports, radix, cable_ports in ((2, 1, 8, 1), (4, 2, 12, 2), (1, 5, 8, 1)):
        for net in _SMALL_NETS:
            for nodes in range(1, 90):
                nic_devs = np.arange(nodes * nics, dtype=np.int64).reshape(nodes, nics)
                args = (net, nodes, nic_devs, 50.0 * ports, ports, 50.0, radix, 10**6)
                built = refusal(build_fat_tree, *args, 1, cable_ports)
                checked = refusal(check_fat_tree, net, nodes, nics, ports, radix, cable_ports)
                assert checked == built, (net, nodes, radix)
                seen.update(r for r in _REFUSALS if built is not None and r in built)
    assert seen == set(_REFUSALS), set(_REFUSALS) - seen


def test_the_largest_count_is_found_without_cabling_a_fat_tree(catalog, monkeypatch):
    """``most_nodes`` (the advice of a --nodes refusal) builds no fat-tree to find it."""

    def cabled(*args: object, **kwargs: object) -> None:
        raise AssertionError("a fat-tree was cabled")

    monkeypatch.setattr(network, "build_fat_tree", cabled)
    for topology, largest in (
        ("h100-ib-cluster", 8192),
        ("dgx-h100-pod", 8192),
        ("gb200-nvl72-cluster", 16380),
        ("trn2-ultraserver", 16384),
    ):
        assert most_nodes(catalog.topologies[topology], catalog, 10**6) == largest
