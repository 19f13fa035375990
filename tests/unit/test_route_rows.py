"""``BulkRouter.route_rows``: many routes built at once, the per-pair router's link for link
(same ids, same order, same -1 padding) on every kind of network, health overlays
included; a pair it cannot route raises the per-pair router's error."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_bulk import _network_fabric
from test_explicit_fabric import MINI, load

from fabricui.engine.bulk import BulkRouter
from fabricui.engine.group import Group
from fabricui.engine.routing import Router
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.fabric.fabric import Fabric
from fabricui.fabric.health import GpuLinkCondition, LinkCondition, apply_health
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

#: Pairs checked per fabric at most: every pair below it, a random sample above.
MAX_PAIRS = 1100


def _pairs(fabric: Fabric, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every (source, destination) pair of the fabric, self pairs included, or a random
    ``MAX_PAIRS`` of them."""
    n = fabric.n_gpus
    if n * n <= MAX_PAIRS:
        src, dst = np.divmod(np.arange(n * n), n)
        return src, dst
    src, dst = np.random.default_rng(seed).integers(0, n, size=(2, MAX_PAIRS))
    return src, dst


def _one_by_one(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``Router.route`` of each pair, padded with -1 to the longest (one column at least)."""
    router = Router(fabric)
    routes = [router.route(int(a), int(b)) for a, b in zip(src, dst)]
    rows = np.full((len(routes), max([1, *(r.shape[0] for r in routes)])), -1, dtype=np.int64)
    for i, route in enumerate(routes):
        rows[i, : route.shape[0]] = route
    return rows


def _assert_rows_are_routes(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> None:
    """The bulk router's rows (on a router of its own, no cache shared with the reference)
    equal the per-pair routes, padding and width included."""
    rows = BulkRouter(fabric, Router(fabric)).route_rows(src, dst)
    expected = _one_by_one(fabric, src, dst)
    assert rows.dtype == expected.dtype and rows.shape == expected.shape
    np.testing.assert_array_equal(rows, expected)


def _mini_fabric(name: str, mini) -> Fabric:
    """The mini database's reference fabrics and variants of them."""
    if name == "fat-tree, one rail":  # no PXN
        spec = mini.topologies["fat-tree"]
        return build_fabric(replace(spec, net=replace(spec.net, rail_optimized=False)), mini)
    if name == "pcie staged, 2 nodes":  # PCIe without peer-to-peer: through the host
        spec = mini.topologies["pcie-box"]
        return build_fabric(replace(spec, nodes=2, intra=replace(spec.intra, p2p=False)), mini)
    return build_fabric(mini.topologies[name], mini)


@pytest.mark.parametrize(
    "name",
    [
        "fat-tree",  # rail-optimized, PXN
        "fat-tree, one rail",
        "pod",  # two leafs joined directly
        "shared-nic",
        "quad",
        "pcie-noP2P",  # one node, staged
        "pcie staged, 2 nodes",
    ],
)
def test_route_rows_are_the_routers_on_fat_trees_and_pcie(mini, name):
    """Rail-optimized (PXN) and plain fat-trees, leafs joined directly, NICs shared by
    GPUs, a GH200-like mesh, and PCIe staged through the host, in one node and across
    two."""
    fabric = _mini_fabric(name, mini)
    if name.startswith("pcie staged"):
        assert Router(fabric)._staged and fabric.nodes == 2
    _assert_rows_are_routes(fabric, *_pairs(fabric))


@pytest.mark.parametrize("name", ["dragonfly", "torus", "explicit", "pairwise", "none"])
def test_route_rows_are_the_routers_on_every_network_kind(mini, catalog, name):
    """A dragonfly, a torus, an explicit switch graph, a network routed pair by pair and
    none at all (``test_bulk``'s fabric of each kind): every pair."""
    fabric = _network_fabric(name, mini, catalog)
    _assert_rows_are_routes(fabric, *_pairs(fabric))


@pytest.mark.parametrize(("topology", "nodes"), [("tpu7x-4x4x4", None), ("trn2-cluster", 2)])
def test_route_rows_are_the_routers_on_tori(catalog, topology, nodes):
    """A TPU torus of 64 hosts, and Trainium domains (a torus each) on a fat-tree."""
    fabric = load_fabric(TopologyRequest(topology, nodes), catalog)
    _assert_rows_are_routes(fabric, *_pairs(fabric))


def test_route_rows_are_the_routers_on_an_imported_cluster(catalog):
    """An imported cluster's own graph (uneven cables, a host at 200 G, a host with one of
    its two NICs uncabled): every pair."""
    fabric = build_fabric(load(MINI, catalog), catalog)
    _assert_rows_are_routes(fabric, *_pairs(fabric))


def _health(catalog, name: str) -> Fabric:
    """Reference fabrics under a health overlay."""
    if name == "dragonfly, a NIC cable down":  # n2.g0 moves to n2.nic1
        fabric = load_fabric(TopologyRequest("dragonfly-cluster", 4), catalog)
        down = LinkCondition("n2 mlx5_0", 1, "router1", 1, state="down", source="t")
        return apply_health(fabric, [down], [], catalog).fabric
    if name == "fat-tree, a NIC cable down":  # rebuilt as its graph, n2.g0 on n2.nic1
        fabric = load_fabric(TopologyRequest("h100-ib-cluster", 4), catalog)
        down = LinkCondition("n2 mlx5_0", 1, "leaf0", None, state="down", source="t")
        return apply_health(fabric, [down], [], catalog).fabric
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 4), catalog)
    # n1's NVLinks all down (its GPUs meet through PCIe), and every one of n2.g5's.
    gpus = [GpuLinkCondition("n1", gpu, 18, 18) for gpu in range(8)]
    return apply_health(fabric, [], [*gpus, GpuLinkCondition("n2", 5, 18, 18)]).fabric


@pytest.mark.parametrize(
    "name", ["dragonfly, a NIC cable down", "fat-tree, a NIC cable down", "NVLinks down"]
)
def test_route_rows_are_the_routers_under_a_health_overlay(catalog, name):
    """GPUs a down NIC cable moved to another NIC of their host (on a dragonfly, and on a
    fat-tree rebuilt as its graph), and domains with NVLinks down: every pair."""
    fabric = _health(catalog, name)
    if "NIC" in name:
        g = fabric.gpus_per_domain
        assert fabric.device_name(int(fabric.gpu_nic[2 * g])) == "n2.nic1"
    else:
        assert Router(fabric).irregular_domains == frozenset({1, 2})
    _assert_rows_are_routes(fabric, *_pairs(fabric))


def _assert_same_error(fabric: Fabric, src: list[int], dst: list[int]) -> None:
    """``route_rows`` raises what the per-pair router raises for the first bad pair."""
    with pytest.raises(EngineError) as expected:
        _one_by_one(fabric, np.asarray(src), np.asarray(dst))
    with pytest.raises(EngineError) as got:
        BulkRouter(fabric, Router(fabric)).route_rows(src, dst)
    assert str(got.value) == str(expected.value)


def test_route_rows_refuse_as_the_router(mini, catalog):
    """A rank out of range, a host cut off from the network (every NIC cable down) and a
    pair between nodes without a network: the per-pair router's one-line error."""
    fabric = _mini_fabric("fat-tree", mini)
    _assert_same_error(fabric, [0, 3], [1, fabric.n_gpus])
    _assert_same_error(fabric, [-1], [0])
    base = load_fabric(TopologyRequest("dragonfly-cluster", 4), catalog)
    down = [
        LinkCondition(f"n2 mlx5_{i}", 1, "router1", 1 + i, state="down", source="t")
        for i in range(8)
    ]
    cut = apply_health(base, down, [], catalog).fabric
    _assert_same_error(cut, [0, 8, 1], [1, 17, 16])
    spec = mini.topologies["pcie-noP2P"]
    apart = build_fabric(replace(spec, nodes=2), mini)  # two nodes, no network
    assert spec.net is None and apart.domains == 2
    _assert_same_error(apart, [0, 0], [1, 3])


def test_route_rows_of_no_pairs_and_of_one_gpu_to_itself(mini):
    """No pairs: an empty (0, 1) array; a GPU to itself: one -1 column."""
    fabric = _mini_fabric("fat-tree", mini)
    bulk = BulkRouter(fabric, Router(fabric))
    assert bulk.route_rows([], []).shape == (0, 1)
    np.testing.assert_array_equal(bulk.route_rows([5, 9], [5, 9]), [[-1], [-1]])


def test_path_latencies_under_a_health_overlay_are_one_pair_at_a_time(catalog):
    """A group's batched latencies, routed at once, equal ``path_latency_us`` of each pair
    bit for bit where GPUs moved to another NIC."""
    fabric = _health(catalog, "fat-tree, a NIC cable down")
    group = Group(fabric, np.arange(fabric.n_gpus))
    src, dst = _pairs(fabric, seed=1)
    batched = group.path_latencies_us(src, dst)
    assert batched.tolist() == [group.path_latency_us(int(a), int(b)) for a, b in zip(src, dst)]
