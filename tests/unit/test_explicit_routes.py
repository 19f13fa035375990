"""Bulk routing on an imported cluster's switch graph: the router's exact route per flow,
loads spread over every route it could pick, and the same figures as the generated
fat-tree whose cabling the cluster copies."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from test_explicit_fabric import MINI, big_cluster

from fabricui.engine import graph_routes, routing
from fabricui.engine.bulk import BulkRouter
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.fair_share import max_min_rates_GBps
from fabricui.engine.graph_routes import Incidence
from fabricui.engine.routing import Router
from fabricui.engine.switch_routes import SwitchRoutes, ranges, switch_routes
from fabricui.engine.traffic import pattern_flows, simulate_traffic
from fabricui.errors import EngineError
from fabricui.fabric import DeviceKind, build_fabric
from fabricui.fabric.explicit import cluster_of
from fabricui.hwdb.resolve import resolve_topology
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.model.topology import IntraSpec, NetSpec, TopologySpec
from fabricui.services.session import collective_algorithms

UNEVEN = """\
id: uneven
gpu: h100-sxm
nodes: 2
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, link: nvlink4, sockets: 2, pcie_switches: 4}
net: {link: ib-ndr, gbps: 400, nics_per_node: 1, nic_map: [0, 0, 0, 0, 0, 0, 0, 0],
      layout: explicit}
cluster:
  switches: [L1 leaf, L2 leaf, S1 spine, S2 spine]
  hosts: [h1 L1, h2 L2]
  cables:
    - L1 S1 2 400
    - L1 S2 1 400
    - L2 S1 1 400
    - L2 S2 1 400
"""


def load(text: str, catalog):
    return build_fabric(parse_topology(parse_yaml(text, "cluster.yaml"), catalog), catalog)


def neutral_name(fabric, dev: int) -> str:
    """A device's name with its host called ``n<node>`` (a fat-tree and its explicit copy
    name hosts differently)."""
    name = fabric.device_name(dev)
    node = int(fabric.dev_node[dev])
    label = fabric.node_label(node) if node >= 0 else ""
    return f"n{node}{name[len(label) :]}" if label and name.startswith(f"{label}.") else name


def named_loads(fabric, load) -> dict[tuple[str, str], float]:
    """Non-zero loads on switch-to-switch links by (from, to) name."""
    out = {}
    for k in np.flatnonzero(load[: fabric.n_links] > 1e-12):
        a, b = int(fabric.link_src[k]), int(fabric.link_dst[k])
        if fabric.dev_node[a] < 0 and fabric.dev_node[b] < 0:
            out[(fabric.device_name(a), fabric.device_name(b))] = float(load[k])
    return out


def by_name(fabric, load) -> dict[tuple[str, str], float]:
    """Loads of every loaded link by (from, to) device names (link ids differ between a
    fat-tree and its explicit copy)."""
    out: dict[tuple[str, str], float] = {}
    for k in np.flatnonzero(load > 1e-12):
        key = (
            neutral_name(fabric, int(fabric.link_src[k])),
            neutral_name(fabric, int(fabric.link_dst[k])),
        )
        out[key] = out.get(key, 0.0) + float(load[k])
    return out


def generated(catalog, topology: str, nodes: int, **net):
    spec = resolve_topology(topology, catalog, nodes)
    if net:
        spec = replace(spec, net=replace(spec.net, **net))
    return build_fabric(spec, catalog)


def test_spread_follows_bandwidth_at_each_switch(catalog):
    """L1 reaches L2 through S1 (2 cables up, 1 down) and S2 (1 and 1): both routes are
    50 GB/s wide, so both are the router's; L1 splits 2:1 by its uplinks' bandwidth."""
    fabric = load(UNEVEN, catalog)
    bulk = BulkRouter(fabric)
    load_ = bulk.loads([0], [8], 1.0)
    assert named_loads(fabric, load_) == pytest.approx(
        {("L1", "S1"): 2 / 3, ("L1", "S2"): 1 / 3, ("S1", "L2"): 2 / 3, ("S2", "L2"): 1 / 3}
    )
    route = Router.for_fabric(fabric).route(0, 8)
    assert np.array_equal(bulk.paths([0], [8])[0][: route.shape[0]], route)


def test_max_min_on_a_shared_leaf_pair_by_hand(catalog):
    """Eight flows h1 -> h2 share one 400G NIC port each way: 50 x eff GB/s between them."""
    fabric = load(UNEVEN, catalog)
    bulk = BulkRouter(fabric)
    rates, load_ = bulk.max_min_rates(np.arange(8), np.arange(8, 16))
    nic = np.flatnonzero(
        (fabric.dev_kind[fabric.link_src] == DeviceKind.NIC)
        & (fabric.dev_node[fabric.link_dst] < 0)
    )[0]
    cap = bulk.capacity_GBps[nic]
    np.testing.assert_allclose(rates, cap / 8)
    assert load_[nic] == pytest.approx(cap)


@pytest.mark.parametrize(
    ("topology", "nodes", "net"),
    [
        ("h100-ib-cluster", 16, {}),
        ("h100-ib-cluster", 64, {"layout": "three-tier"}),
        ("h100-ib-cluster", 48, {"oversubscription": 3.0}),
        ("dgx-a100", 40, {"rail_optimized": False, "oversubscription": 1.5}),
        ("gb200-nvl72-cluster", 36, {}),
    ],
)
def test_explicit_copy_prices_as_the_fat_tree(catalog, topology, nodes, net):
    """A cluster whose cables are a generated fat-tree's gives the same all-reduce, the
    same max-min rates and the same link loads: spreading over the router's routes is what
    the fat-tree's aggregates (a leaf's or a pod's uplinks) do."""
    tree = generated(catalog, topology, nodes, **net)
    explicit = build_fabric(cluster_of(tree), catalog)
    assert explicit.tree is None and explicit.n_links == tree.n_links
    algorithms = collective_algorithms()
    for op in ("all_reduce", "all_gather"):
        a = evaluate_collective(tree, op, [2**20, 2**30], algorithms=algorithms)
        b = evaluate_collective(explicit, op, [2**20, 2**30], algorithms=algorithms)
        np.testing.assert_allclose(b.time_us, a.time_us, rtol=1e-9)
        assert b.algorithm == a.algorithm
    ranks = np.arange(min(tree.n_gpus, 192))
    for src, dst in (
        pattern_flows("all_to_all", ranks),
        pattern_flows("random-pairs", np.arange(tree.n_gpus), seed=3),
    ):
        want = simulate_traffic(tree, src, dst)
        got = simulate_traffic(explicit, src, dst)
        np.testing.assert_allclose(got.rate_GBps, want.rate_GBps, rtol=1e-9)
        loads_got = by_name(explicit, got.link_load_GBps)
        loads_want = by_name(tree, want.link_load_GBps)
        assert loads_got.keys() == loads_want.keys()
        for key, value in loads_want.items():
            assert loads_got[key] == pytest.approx(value, rel=1e-7, abs=1e-9), key


@pytest.mark.parametrize("topology", ["mini", "copy"])
def test_paths_are_the_routers_own(catalog, topology):
    """Every bulk route is ``Router.route``'s, link for link (PXN proxies, uncabled ports
    and the hash among equal routes included)."""
    if topology == "mini":
        fabric = load(MINI, catalog)
    else:
        fabric = build_fabric(
            cluster_of(generated(catalog, "h100-ib-cluster", 64, layout="three-tier")), catalog
        )
    router = Router(fabric)
    rng = np.random.default_rng(7)
    src = rng.integers(0, fabric.n_gpus, 600)
    dst = rng.integers(0, fabric.n_gpus, 600)
    paths = BulkRouter(fabric, router).paths(src, dst)
    for row, a, b in zip(paths, src, dst):
        assert np.array_equal(row[row >= 0], router.route(int(a), int(b)))


def test_batched_trees_are_the_routers(catalog):
    """The best-route trees computed for all leaves at once equal the router's, leaf by
    leaf."""
    fabric = build_fabric(
        cluster_of(generated(catalog, "h100-ib-cluster", 64, layout="three-tier")), catalog
    )
    router = Router(fabric)
    routes = switch_routes(router)
    leaves = np.flatnonzero(fabric.dev_kind == DeviceKind.LEAF)
    trees = routes.trees(routes.compact(leaves))
    for leaf, tree in zip(leaves, trees):
        assert np.array_equal(tree, router.switch_tree(int(leaf)))


def test_batched_trees_kept_within_their_bound(catalog, monkeypatch):
    """``SwitchRoutes.trees`` keeps at most ``4 * MAX_TREE_CELLS`` cells of trees: past it
    the oldest go (not all of them), a batch larger than the bound is answered whole
    without being kept beyond it, and every tree stays the router's."""
    fabric = small_fabric(catalog, "three-tier")
    router = Router(fabric)
    routes = switch_routes(router)
    leaves = routes.compact(np.flatnonzero(fabric.dev_kind == DeviceKind.LEAF))
    want = {int(leaf): tree for leaf, tree in zip(leaves, routes.trees(leaves))}
    n_pos = next(iter(want.values())).shape[0]
    monkeypatch.setattr(SwitchRoutes, "MAX_TREE_CELLS", n_pos)  # four trees kept
    bounded = switch_routes(Router(fabric))
    kept = []
    for batch in (leaves[:3], leaves[3:5], leaves, leaves[:2]):
        got = bounded.trees(batch)
        assert all(np.array_equal(g, want[int(leaf)]) for g, leaf in zip(got, batch))
        assert len(bounded._tree_cache) <= 4
        kept.append(list(bounded._tree_cache))
    assert kept[1] == leaves[1:5].tolist()  # the oldest, leaves[0], went for two new ones


def test_spreads_conserve_each_flow(catalog):
    """Every leaf pair's spread puts one byte per byte on the target leaf's incoming
    links and one on the source's outgoing ones, and only on links the router may pick."""
    fabric = build_fabric(
        cluster_of(generated(catalog, "h100-ib-cluster", 64, layout="three-tier")), catalog
    )
    router = Router(fabric)
    routes = switch_routes(router)
    leaves = np.flatnonzero(fabric.dev_kind == DeviceKind.LEAF)
    a, b = np.meshgrid(leaves, leaves, indexing="ij")
    keep = a != b
    a, b = a[keep], b[keep]
    group, ptr, links, weight = routes.spread(a, b)
    for i in range(0, a.shape[0], 37):
        g = group[i]
        mine, w = links[ptr[g] : ptr[g + 1]], weight[ptr[g] : ptr[g + 1]]
        assert w.sum() > 0 and np.all(w > 0)
        assert w[fabric.link_dst[mine] == b[i]].sum() == pytest.approx(1.0)
        assert w[fabric.link_src[mine] == a[i]].sum() == pytest.approx(1.0)
        picked = set(router.switch_graph.links[router.switch_tree(int(a[i]))].tolist())
        assert set(mine.tolist()) <= picked


def test_an_unreachable_leaf_is_one_line(catalog):
    """A leaf with no cable to the rest is an EngineError naming the devices."""
    text = UNEVEN.replace("    - L2 S1 1 400\n    - L2 S2 1 400\n", "")
    fabric = load(text, catalog)
    bulk = BulkRouter(fabric)
    for call in (lambda: bulk.paths([0], [8]), lambda: bulk.loads([0], [8], 1.0)):
        with pytest.raises(EngineError, match="no route from device") as info:
            call()
        assert "\n" not in str(info.value)


def test_incidence_expands_groups_per_flow():
    """The factored incidence and its plain triples give the same loads."""
    inc = Incidence(
        n_flows=3,
        flow=np.array([0, 1, 2]),
        res=np.array([0, 0, 1]),
        weight=None,
        group=np.array([0, -1, 0]),
        group_ptr=np.array([0, 2]),
        group_res=np.array([2, 3]),
        group_weight=np.array([0.25, 0.75]),
    )
    volume = np.array([1.0, 2.0, 4.0])
    flow, res, weight = inc.expanded()
    plain = np.bincount(res, weights=volume[flow] * weight, minlength=4)
    np.testing.assert_allclose(inc.loads(volume, 4), plain)
    np.testing.assert_allclose(plain, [3.0, 4.0, 1.25, 3.75])


def test_group_loads_in_chunks_are_one_bincount_bit_for_bit(monkeypatch):
    """Group entries summed a few at a time (groups straddling chunks, empty groups) give
    exactly the sums, and the max-min rates, of one pass over every entry."""
    rng = np.random.default_rng(3)
    sizes = np.array([0, 5, 1, 0, 7, 2, 9, 0])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    inc = Incidence(
        n_flows=12,
        flow=np.arange(12),
        res=rng.integers(0, 6, 12),
        weight=None,
        group=rng.integers(-1, sizes.size, 12),
        group_ptr=ptr,
        group_res=rng.integers(0, 6, int(ptr[-1])),
        group_weight=rng.random(int(ptr[-1])) / 7,
    )
    volume = rng.random(12) * 3
    member = inc.group >= 0
    per_group = np.bincount(inc.group[member], weights=volume[member], minlength=sizes.size)
    capacity = rng.random(6) + 0.5
    whole = np.bincount(
        inc.group_res, weights=inc.group_weight * per_group[inc.group_row], minlength=6
    )
    rates = max_min_rates_GBps(inc, capacity)
    monkeypatch.setattr(graph_routes, "GROUP_CHUNK", 3)
    chunked = np.zeros(6)
    inc.add_group_loads(per_group, chunked)
    assert np.array_equal(chunked, whole)
    assert np.array_equal(max_min_rates_GBps(inc, capacity), rates)


@pytest.mark.slow
def test_four_thousand_switches_route_in_bulk(catalog):
    """On a 4,000-switch, 8,000-GPU cluster, a 1,024-GPU all-to-all's rates and an
    all-reduce over every GPU take seconds, not the minutes of routing pair by pair (CPU
    time: a loaded CI machine stretches the wall clock, not the work)."""
    spec = TopologySpec(
        gpu="h100-sxm",
        nodes=1000,
        gpus_per_node=8,
        intra=IntraSpec(fabric="nvswitch", link="nvlink4", sockets=2, pcie_switches=4),
        net=NetSpec(link="ib-ndr", gbps=400, nics_per_node=8, layout="explicit"),
        id="big",
        cluster=big_cluster(),
        nodes_settable=False,
    )
    fabric = build_fabric(spec, catalog)
    start = time.process_time()
    prediction = evaluate_collective(
        fabric, "all_reduce", [2**30], algorithms=collective_algorithms()
    )
    reduce_s = time.process_time() - start
    src, dst = pattern_flows("all_to_all", np.arange(0, 8000, 8)[:1024])
    start = time.process_time()
    report = simulate_traffic(fabric, src, dst)
    a2a_s = time.process_time() - start
    assert prediction.busbw_GBps[0] > 0 and np.all(report.rate_GBps > 0)
    assert reduce_s < 60.0, f"all-reduce took {reduce_s:.1f} s"
    assert a2a_s < 60.0, f"all-to-all took {a2a_s:.1f} s"


#: Two groups of alike leaves cabled to each other (A to B) and to two spines: the routes
#: between A and B leaves are one cable, first hop and last hop at once.
MESH_SWITCHES = [f"A{i}" for i in range(5)] + [f"B{i}" for i in range(6)]
MESH = f"""\
id: mesh
gpu: h100-sxm
nodes: 2
gpus_per_node: 8
nodes_settable: false
intra: {{fabric: nvswitch, link: nvlink4, sockets: 2, pcie_switches: 4}}
net: {{link: ib-ndr, gbps: 400, nics_per_node: 1, nic_map: [0, 0, 0, 0, 0, 0, 0, 0],
      layout: explicit}}
cluster:
  switches: [{", ".join(f"{s} leaf" for s in MESH_SWITCHES)}, S1 spine, S2 spine]
  hosts: [h1 A0, h2 B0]
  cables:
""" + "".join(
    [f"    - A{i} B{j} 1 400\n" for i in range(5) for j in range(6)]
    + [f"    - {s} S{k} 2 400\n" for s in MESH_SWITCHES for k in (1, 2)]
)


def small_fabric(catalog, kind: str):
    """An explicit fabric whose leaves come in groups of more than three alike ones."""
    if kind == "mesh":
        return load(MESH, catalog)
    spec = TopologySpec(
        gpu="h100-sxm",
        nodes=8,
        gpus_per_node=8,
        intra=IntraSpec(fabric="nvswitch", link="nvlink4", sockets=2, pcie_switches=4),
        net=NetSpec(link="ib-ndr", gbps=400, nics_per_node=8, layout="explicit"),
        id="three-tier",
        cluster=big_cluster(pods=3, leaves_per_pod=5, spines_per_pod=4, cores_per_plane=2, hosts=8),
        nodes_settable=False,
    )
    return build_fabric(spec, catalog)


def leaf_batches(fabric) -> list[tuple[np.ndarray, np.ndarray]]:
    """Overlapping batches of leaf pairs, the last one every pair."""
    leaves = np.flatnonzero(fabric.dev_kind == DeviceKind.LEAF)
    rng = np.random.default_rng(5)
    batches = []
    for size in (7, 40, 40):
        a, b = rng.choice(leaves, size), rng.choice(leaves, size)
        batches.append((a[a != b], b[a != b]))
    a, b = np.meshgrid(leaves, leaves, indexing="ij")
    keep = a != b
    batches.append((a[keep], b[keep]))
    return batches


@pytest.mark.parametrize("kind", ["three-tier", "mesh"])
def test_spreads_do_not_depend_on_what_is_kept(catalog, kind):
    """A leaf pair's spread is its own routes, computed directly (every switch its own
    representative), and the same arrays whether the spreads are kept, dropped at once
    or copied a few entries at a time."""
    fabric = small_fabric(catalog, kind)
    router = Router(fabric)
    kept = SwitchRoutes(router)
    bare = SwitchRoutes(router)
    bare.MAX_SPREAD_ENTRIES = 0
    bare.EXPAND_ENTRIES = 5
    direct = SwitchRoutes(router)  # every switch alike only to itself
    count = direct._group.shape[0]
    direct._group = np.arange(count)
    direct._reps = np.full((count, 3), -1)
    direct._reps[:, 0] = np.arange(count)
    assert np.bincount(kept._group).max() > 3  # leaves that are no representative
    for a, b in leaf_batches(fabric):
        want = kept.spread(a, b)
        got = bare.spread(a, b)
        assert bare.kept_entries == 0
        for x, y in zip(want, got):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        group, ptr, links, weight = want
        d_group, d_ptr, d_links, d_weight = direct.spread(a, b)
        for i in range(a.shape[0]):
            mine = slice(ptr[group[i]], ptr[group[i] + 1])
            theirs = slice(d_ptr[d_group[i]], d_ptr[d_group[i] + 1])
            order, d_order = np.argsort(links[mine]), np.argsort(d_links[theirs])
            assert np.array_equal(links[mine][order], d_links[theirs][d_order])
            np.testing.assert_allclose(weight[mine][order], d_weight[theirs][d_order], rtol=1e-12)


def test_kept_spreads_never_pass_their_bound(catalog, monkeypatch):
    """However many pairs are asked for, the spreads kept between calls stay within
    ``MAX_SPREAD_ENTRIES``: a call that would pass it keeps only the spreads it used, or
    none when those alone pass it; every answer stays the same."""
    fabric = small_fabric(catalog, "three-tier")
    router = Router(fabric)
    batches = leaf_batches(fabric)
    unbounded = SwitchRoutes(router)
    wants = [unbounded.spread(a, b) for a, b in batches]
    used = []
    for a, b in batches:
        routes = SwitchRoutes(router)
        routes.spread(a, b)
        used.append(routes.kept_entries)
    cap = max(used[:-1])
    assert used[-1] > cap and unbounded.kept_entries > cap
    monkeypatch.setattr(SwitchRoutes, "MAX_SPREAD_ENTRIES", cap)
    routes = SwitchRoutes(router)
    kept = []
    for _ in range(2):
        for (a, b), want in zip(batches, wants):
            got = routes.spread(a, b)
            kept.append(routes.kept_entries)
            assert routes.kept_entries <= cap
            for x, y in zip(want, got):
                assert np.array_equal(x, y)
    # Kept, replaced by the next call's, replaced again, dropped; then the same again.
    assert kept == [*used[:3], 0] * 2


@pytest.mark.parametrize("trees", [0, 2])
def test_kept_switch_trees_never_pass_their_bound(catalog, monkeypatch, trees):
    """The router keeps switch trees within ``_MAX_TREE_CELLS`` cells (one per switch
    link and source leaf), at least the one in use: past it the oldest go and are searched
    again, and every route and tree stays the same."""
    fabric = small_fabric(catalog, "three-tier")
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, fabric.n_gpus, size=(2, 300))
    leaves = np.flatnonzero(fabric.dev_kind == DeviceKind.LEAF)
    unbounded = Router(fabric)
    want = unbounded.route_rows(src, dst)
    want_trees = [unbounded.switch_tree(int(leaf)) for leaf in leaves]
    assert len(unbounded._switch_trees) == leaves.shape[0] > trees + 1
    cells = unbounded.switch_graph.links.shape[0]
    monkeypatch.setattr(routing, "_MAX_TREE_CELLS", trees * cells + cells // 2)
    router = Router(fabric)
    searched = []
    search = router.switch_graph.single_source
    monkeypatch.setattr(
        router.switch_graph, "single_source", lambda s, t: searched.append(s) or search(s, t)
    )
    for _ in range(2):
        np.testing.assert_array_equal(router.route_rows(src, dst), want)
        assert len(router._switch_trees) == max(trees, 1)
        for leaf, tree in zip(leaves, want_trees):
            assert np.array_equal(router.switch_tree(int(leaf)), tree)
    assert len(searched) > len(set(searched))  # evicted, searched again


def test_ranges_concatenates_aranges():
    """``ranges`` is every ``arange(start, start + count)`` in turn, empty blocks skipped."""
    starts = np.array([5, 0, 9, 2, 7], dtype=np.int64)
    counts = np.array([2, 0, 3, 1, 0], dtype=np.int64)
    assert ranges(starts, counts).tolist() == [5, 6, 9, 10, 11, 2]
    assert ranges(starts[:0], counts[:0]).shape == (0,)
    assert ranges(starts, np.zeros(5, dtype=np.int64)).dtype == np.int64
