"""``DomainRoutes.template_rows`` builds the routes of a domain's local pairs at once
(``Router.local_routes``): the per-pair ``Router.local_route``'s rows link for link (same
ids, same order, same -1 padding) on every kind of scale-up fabric of the reference
topologies, and the per-pair error where a pair has no route."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.networks.domain import DomainRoutes
from fabricui.engine.route_rows import pad_rows
from fabricui.engine.routing import Router
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

#: One reference topology or more per scale-up fabric: NVSwitch (a GPU's PCIe switch on
#: the way to its NIC on dgx-b300, hosts in one NVLink domain on gb200-nvl72), xGMI and
#: NVLink meshes, PCIe staged through host memory, a torus per domain, TPU hosts.
REFERENCES = [
    "dgx-h100",
    "dgx-b300",
    "gb200-nvl72",
    "mi300x-node",
    "gh200-quad",
    "gaudi3-node",
    "pcie-rtx4090x2",
    "pcie-rtx4090x8",
    "trn2-cluster",
    "trn2-ultraserver",
    "tpu-v6e-256",
    "tpu7x-4x4x4",
]


def _every_local_pair(fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    g = fabric.gpus_per_domain
    a, b = np.divmod(np.arange(g * g, dtype=np.int64), g)
    return a, b


def _loop_rows(fabric: Fabric, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    router = Router(fabric)
    return pad_rows([router.local_route(int(x), int(y), None).tolist() for x, y in zip(a, b)])


@pytest.mark.parametrize("name", REFERENCES)
def test_local_routes_are_the_loops_rows(name: str) -> None:
    fabric = load_fabric(TopologyRequest(name))
    a, b = _every_local_pair(fabric)
    expected = _loop_rows(fabric, a, b)
    rows = Router(fabric).local_routes(a, b)
    assert rows is not None
    assert rows.dtype == expected.dtype and rows.shape == expected.shape
    np.testing.assert_array_equal(rows, expected)
    # Through the domain table, asked in pieces and out of order (merged with rows kept).
    domain = DomainRoutes(fabric, Router(fabric))
    keys = a * fabric.gpus_per_domain + b
    order = np.random.default_rng(0).permutation(keys.shape[0])
    half = order[: order.shape[0] // 2]
    got = domain.template_rows(keys[half])
    np.testing.assert_array_equal(got[:, : expected.shape[1]], expected[half])
    assert (got[:, expected.shape[1] :] == -1).all()
    got = domain.template_rows(keys[order])
    assert got.shape == expected[order].shape
    np.testing.assert_array_equal(got, expected[order])


def test_local_routes_of_no_pair() -> None:
    fabric = load_fabric(TopologyRequest("dgx-h100"))
    empty = np.zeros(0, dtype=np.int64)
    rows = Router(fabric).local_routes(empty, empty)
    assert rows is not None and rows.shape == (0, 1)


def test_a_pair_without_route_raises_the_per_pair_error() -> None:
    """No switch forwards (a template where the NVSwitches pass nothing on): the bulk
    answer is None and the domain table raises the per-pair router's error."""
    fabric = load_fabric(TopologyRequest("dgx-h100"))
    router = Router(fabric)
    router._node_transit = np.zeros_like(router._node_transit)
    assert router.local_routes(np.array([0]), np.array([1])) is None
    with pytest.raises(EngineError) as bulk:
        DomainRoutes(fabric, router).template_rows(np.array([1], dtype=np.int64))
    with pytest.raises(EngineError) as single:
        router.local_route(0, 1, None)
    assert str(bulk.value) == str(single.value)


def test_template_routes_break_ties_as_the_per_pair_pick() -> None:
    """Where a device is reached by several best links (every device of a torus domain
    forwarding), every route takes the same one as ``template_route``."""
    fabric = load_fabric(TopologyRequest("trn2-cluster"))
    routers = [Router(fabric), Router(fabric)]
    for router in routers:
        router._node_transit = np.ones_like(router._node_transit)
    chips = fabric.gpu_dev[: fabric.gpus_per_domain].astype(np.int64)
    a, b = (x.reshape(-1) for x in np.meshgrid(chips, chips, indexing="ij"))
    expected = pad_rows([routers[0].template_route(int(x), int(y)).tolist() for x, y in zip(a, b)])
    graph, tree = routers[0]._node_graph, routers[0]._node_trees[int(chips[0])]
    assert (np.bincount(graph.dst[tree]) > 1).any()  # ties to break
    np.testing.assert_array_equal(routers[1].template_routes(a, b), expected)
