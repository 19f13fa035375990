"""Vectorized routing: the same paths as the router, loads, and max-min fair rates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.bulk import BulkRouter, _one_way
from fabricui.engine.networks import (
    DragonflyNetwork,
    ExplicitNetwork,
    FatTreeNetwork,
    NoNetwork,
    PairwiseNetwork,
    TorusNetwork,
    network_kind,
)
from fabricui.engine.traffic import pattern_flows
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.model import NetSpec
from fabricui.model.topology import TopologySpec

TWO_LEAVES = """\
id: two-leaves
gpu: h100-sxm
nodes: 2
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, link: nvlink4}
net: {link: ib-ndr, gbps: 400, nics_per_node: 1, nic_map: [0, 0, 0, 0, 0, 0, 0, 0],
      layout: explicit}
cluster:
  switches: [L1 leaf, L2 leaf, S1 spine]
  hosts: [h1 L1, h2 L2]
  cables: [L1 S1 1 400, L2 S1 1 400]
"""


@pytest.mark.parametrize(
    "name", ["pod", "fat-tree", "quad", "shared-nic", "pcie-box", "pcie-noP2P"]
)
def test_bulk_metrics_equal_single_path_queries(mini, name):
    """Bottleneck and latency of 200 random pairs equal ``fabricui path``'s, pair by pair."""
    fabric = build_fabric(mini.topologies[name], mini)
    rng = np.random.default_rng(1)
    src = rng.integers(0, fabric.n_gpus, 200)
    dst = rng.integers(0, fabric.n_gpus, 200)
    metrics = BulkRouter(fabric).path_metrics(src, dst)
    for a, b, bw, lat in zip(src, dst, metrics.bottleneck_GBps, metrics.latency_us):
        if a == b:
            assert bw == np.inf and lat == 0
            continue
        report = api.path(fabric, str(a), str(b))
        assert bw == pytest.approx(report.bottleneck_GBps)
        assert lat == pytest.approx(report.latency_us)


def test_max_min_shared_nic_by_hand(mini):
    """Two flows through one NIC share its 50 x 0.95 GB/s; a third alone on the other NIC
    gets all of it."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    rates, _ = BulkRouter(fabric).max_min_rates([0, 1, 4], [8, 9, 12])
    np.testing.assert_allclose(rates, [23.75, 23.75, 47.5])


def test_max_min_leaves_no_resource_over_capacity(mini):
    """Random flows on an oversubscribed fat-tree: loads never exceed capacity, and every
    flow is limited by some full resource (max-min optimality)."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    bulk = BulkRouter(fabric)
    rng = np.random.default_rng(2)
    src = rng.integers(0, fabric.n_gpus, 400)
    dst = (src + rng.integers(1, fabric.n_gpus, 400)) % fabric.n_gpus
    rates, load = bulk.max_min_rates(src, dst)
    cap = bulk.resource_capacity_GBps
    assert np.all(load <= cap * (1 + 1e-9))
    flow, res = bulk.incidence(src, dst)
    full = load >= cap * (1 - 1e-6)
    assert np.all(np.bincount(flow[full[res]], minlength=src.size) > 0)


def test_loads_spread_evenly_over_spines(mini):
    """A flow leaving a leaf puts an equal share on each of the leaf's uplinks. Without rail
    optimization (no PXN) 5 nodes share a 2:1 leaf: 40 ports down, 20 up, two spines of 10
    cables each."""
    spec = mini.topologies["fat-tree"]
    spec = replace(spec, net=replace(spec.net, rail_optimized=False))
    fabric = build_fabric(spec, mini)
    bulk = BulkRouter(fabric)
    tree = fabric.tree
    assert tree.leaf_up.shape == (4, 2)
    assert fabric.link_count[tree.leaf_up].tolist() == [[10, 10]] * 4
    load = bulk.link_loads(bulk.loads([0], [fabric.n_gpus - 3], [1.0]))
    uplinks = load[tree.leaf_up[0]]
    np.testing.assert_allclose(uplinks, 1.0 / tree.leaf_up.shape[1])


def test_bad_ranks(mini):
    """Out-of-range ranks and mismatched arrays are one-line errors."""
    bulk = BulkRouter(build_fabric(mini.topologies["pod"], mini))
    with pytest.raises(EngineError, match="ranks must be within 0..31"):
        bulk.path_metrics([0], [32])
    with pytest.raises(EngineError, match="2 sources but 1 destinations"):
        bulk.path_metrics([0, 1], [2])


def _network_fabric(name, mini, catalog):
    """A small fabric of each network kind."""
    if name == "explicit":
        return build_fabric(parse_topology(parse_yaml(TWO_LEAVES, "two.yaml"), catalog), catalog)
    if name == "dragonfly":
        net = NetSpec(link="ib-ndr", layout="dragonfly", groups=3, routers_per_group=2)
        spec = TopologySpec(gpu="h100-sxm", nodes=6, gpus_per_node=1, net=net, id=name)
        return build_fabric(spec, mini)
    if name == "torus":
        net = NetSpec(link="nvlink4", layout="torus", torus=(2, 2, 2))
        spec = TopologySpec(gpu="h100-sxm", nodes=2, gpus_per_node=4, net=net, id=name)
        return build_fabric(spec, mini)
    fabric = build_fabric(mini.topologies["pcie-noP2P" if name == "none" else "fat-tree"], mini)
    return replace(fabric, tree=None) if name == "pairwise" else fabric


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("fat-tree", FatTreeNetwork),
        ("dragonfly", DragonflyNetwork),
        ("torus", TorusNetwork),
        ("explicit", ExplicitNetwork),
        ("pairwise", PairwiseNetwork),
        ("none", NoNetwork),
    ],
)
def test_each_fabric_is_routed_by_its_network_kind(mini, catalog, name, kind):
    """The first kind whose table the fabric has routes it: a network without a table is
    routed pair by pair, a single node by its domain routes alone."""
    assert network_kind(_network_fabric(name, mini, catalog)) is kind


def test_a_network_kind_can_be_chosen(mini):
    """Routing the fat-tree pair by pair (``network=``) finds the routes its table gives."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, fabric.n_gpus, size=(2, 60))
    tabled = BulkRouter(fabric).paths(src, dst)
    pairwise = BulkRouter(fabric, network=PairwiseNetwork).paths(src, dst)
    for row, other in zip(tabled, pairwise):
        np.testing.assert_array_equal(row[row >= 0], other[other >= 0])


def test_no_network_between_nodes_is_one_line(mini):
    """A flow between two nodes of a fabric without a network is refused by name."""
    fabric = build_fabric(mini.topologies["fat-tree"], mini)
    bulk = BulkRouter(fabric, network=NoNetwork)
    with pytest.raises(EngineError, match="no network between nodes"):
        bulk.paths([0], [fabric.n_gpus - 1])


def _fill_every_mode(bulk, src, dst):
    """Max-min rates as the filling of every mode and of the UGAL split, the best kept in
    that order (what ``max_min_rates`` decides, computed in full)."""
    best = None
    for mode in (False, True, bulk.ugal_split(src, dst)):
        rates, load = bulk._max_min(src, dst, mode)
        total = float(np.where(np.isfinite(rates), rates, 0.0).sum())
        if best is None or total > float(np.where(np.isfinite(best[0]), best[0], 0.0).sum()) * (
            1 + 1e-9
        ):
            best = (rates, load)
    return best


@pytest.mark.parametrize("largest", [1 << 16, 10])
@pytest.mark.parametrize("pattern", ["all_to_all", "ring", "spread"])
def test_max_min_rates_skips_a_one_way_split_bit_for_bit(
    mini, catalog, monkeypatch, largest, pattern
):
    """On a dragonfly, a UGAL split that sends every flow one way is not filled again (it
    fills as that mode): the rates and loads are those of filling it too, bit for bit,
    below and past ``_UGAL_MAX_FLOWS`` (where the split is always one way)."""
    monkeypatch.setattr(BulkRouter, "_UGAL_MAX_FLOWS", largest)
    fabric = _network_fabric("dragonfly", mini, catalog)
    ranks = np.arange(fabric.n_gpus)
    if pattern == "spread":
        src, dst = ranks, (ranks + 2) % ranks.size
    else:
        src, dst = pattern_flows(pattern, ranks)
    bulk = BulkRouter(fabric)
    fillings = []
    fill = bulk._max_min
    bulk._max_min = lambda *args: fillings.append(1) or fill(*args)
    rates, load = bulk.max_min_rates(src, dst)
    del bulk._max_min
    assert len(fillings) == (2 if _one_way(bulk.ugal_split(src, dst)) else 3)
    want_rates, want_load = _fill_every_mode(bulk, src, dst)
    assert rates.tobytes() == want_rates.tobytes() and load.tobytes() == want_load.tobytes()


def test_one_way():
    """A split is one way when every flow is all minimal or every flow all Valiant."""
    assert _one_way(np.zeros(3)) and _one_way(np.ones(3)) and _one_way(np.zeros(0))
    assert not _one_way(np.array([0.0, 1.0])) and not _one_way(np.array([0.5, 0.5]))


def test_dragonfly_mates_into_table_is_the_local_links(mini, catalog):
    """The table of links into each router from its group mates holds, per router, the
    local link of every mate into it (-1 from itself)."""
    fabric = _network_fabric("dragonfly", mini, catalog)
    network = BulkRouter(fabric)._network
    table = fabric.dragonfly
    per = table.routers_per_group
    for router in range(table.routers):
        mates = (router // per) * per + np.arange(per)
        assert network._mates_into(np.array([router]))[0].tolist() == [
            int(table.local[m, router % per]) for m in mates
        ]


@pytest.mark.parametrize("seed", range(3))
def test_adaptive_loads_read_the_splits_incidences_bit_for_bit(catalog, monkeypatch, seed):
    """Loads under adaptive routing read the incidences the UGAL split built for every flow
    instead of routing the flows again: each mode is routed once for the whole pattern
    (and once more for the flows of a mode only some take), and the loads are those of
    the split given explicitly, bit for bit."""
    fabric = build_fabric(resolve_topology("dragonfly-cluster", catalog), catalog)
    rng = np.random.default_rng(seed)
    group = rng.choice(fabric.n_gpus, 48, replace=False)
    src, dst = pattern_flows("all_to_all", group)
    volume = rng.random(src.size)
    bulk = BulkRouter(fabric)
    split = bulk.ugal_split(src, dst, volume)
    routed = []
    route = BulkRouter._routed_incidence
    monkeypatch.setattr(
        BulkRouter, "_routed_incidence", lambda *args: routed.append(1) or route(*args)
    )
    load = bulk.loads(src, dst, volume)
    partial = sum(0 < int((part > 0).sum()) < src.size for part in (1.0 - split, split))
    assert len(routed) == 2 + partial
    monkeypatch.undo()
    assert load.tobytes() == bulk.loads(src, dst, volume, split).tobytes()
