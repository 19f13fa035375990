"""The engine's vectorized flow builders against plain per-node loops.

Each reference below states its pattern the obvious way, one node (or edge) at a time, in
the order the engine lists the flows; the engine builds the same flows with array
operations. Link loads add up in flow order, so the figures must match exactly, not
approximately.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import Tree, channels_for
from fabricui.engine.group import Group, balanced_entries
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology


def reference_tree_spbs(group: Group) -> tuple[float, float, float, float]:
    """``Tree._raw_spbs`` one node and one tree edge at a time: per channel, each node's
    chain (reduce toward its first rank, then broadcast back), then the two mirrored
    heap-ordered binary trees over the nodes' first ranks (per edge: up, then down); the
    first tree alone carries all the data in the last figure."""
    channels = channels_for(group)
    chain_src, chain_dst, up_src, up_dst, tree_src, tree_dst = [], [], [], [], [], []
    one_src, one_dst = [], []
    sizes = [ranks.shape[0] for ranks in group.by_node]
    for order in group.ring_orders(channels):
        nodes = np.split(order, np.cumsum(sizes)[:-1])
        for local in nodes:
            for i in range(1, local.shape[0]):
                chain_src.append(local[i])
                chain_dst.append(local[i - 1])
                up_src.append(local[i])
                up_dst.append(local[i - 1])
            for i in range(1, local.shape[0]):
                chain_src.append(local[i - 1])
                chain_dst.append(local[i])
        k = len(nodes)
        for mirror in (False, True):
            for child in range(1, k):
                parent = (child - 1) // 2
                if mirror:
                    child, parent = k - 1 - child, k - 1 - parent
                tree_src += [nodes[child][0], nodes[parent][0]]
                tree_dst += [nodes[parent][0], nodes[child][0]]
                if not mirror:
                    one_src += [nodes[child][0], nodes[parent][0]]
                    one_dst += [nodes[parent][0], nodes[child][0]]
    bulk = group.bulk
    capacity = bulk.resource_capacity_GBps * 1e3

    def load(src: list, dst: list, share: float) -> np.ndarray:
        if not src:
            return np.zeros(capacity.shape[0])
        return bulk.loads(np.array(src), np.array(dst), np.full(len(src), share / channels))

    chain = load(chain_src, chain_dst, 1.0)
    across = load(tree_src, tree_dst, 0.5)
    up = load(up_src, up_dst, 1.0)
    one = load(one_src, one_dst, 1.0)

    def busiest(total: np.ndarray) -> float:
        used = total > 0
        return float(np.max(total[used] / capacity[used])) if used.any() else 0.0

    return busiest(chain + across), busiest(chain), busiest(up), busiest(chain + one)


def fabric(catalog, name: str, nodes: int):
    return build_fabric(resolve_topology(name, catalog, nodes), catalog)


@pytest.fixture(scope="module")
def h100(catalog):
    """16 H100 nodes of eight GPUs on a rail-optimized InfiniBand fat-tree."""
    return fabric(catalog, "h100-ib-cluster", 16)


#: Ranks of five H100 nodes holding 8, 3, 1, 5 and 2 of the group's GPUs.
UNEVEN = [*range(8), 8, 9, 10, 16, 24, 25, 26, 27, 28, 33, 35]


@pytest.mark.parametrize(
    "ranks",
    [
        range(8),  # one node: the chain alone
        range(16),
        range(24),
        range(40),
        range(128),
        UNEVEN,
        [0, 8, 16, 24, 32],  # one rank per node: the trees alone
        [3, 11, 12, 19],
        [*range(3), *range(8, 11), *range(16, 19), *range(24, 27)],  # 3 channels: 1/3 shares
    ],
    ids=[
        "1-node",
        "2-nodes",
        "3-nodes",
        "5-nodes",
        "16-nodes",
        "uneven",
        "single-rank",
        "mixed",
        "3-channels",
    ],
)
def test_tree_flows_on_a_fat_tree(h100, ranks):
    group = Group(h100, list(ranks))
    assert Tree()._raw_spbs(group) == reference_tree_spbs(group)


def test_tree_flows_in_nvl72_domains(catalog):
    """Two GB200 NVL72 racks (each one 72-GPU node to NCCL), whole and unevenly split."""
    racks = fabric(catalog, "gb200-nvl72-cluster", 36)
    for ranks in (range(144), [*range(0, 72, 3), *range(72, 80)]):
        group = Group(racks, list(ranks))
        assert Tree()._raw_spbs(group) == reference_tree_spbs(group)


def test_tree_flows_on_a_dragonfly(catalog):
    """Slingshot's dragonfly: the trees' flows split between routes as adaptive routing does."""
    dragonfly = fabric(catalog, "dragonfly-cluster", 64)
    for ranks in (range(0, 512, 2), [*range(8), *range(96, 101), 300, *range(504, 512)]):
        group = Group(dragonfly, list(ranks))
        assert Tree()._raw_spbs(group) == reference_tree_spbs(group)


def reference_nvls_tree_net_spb(group: Group) -> float:
    """``NvlsTree._raw_net_spb`` one head and one tree edge at a time: each head (spread
    over a domain's hosts) runs both binary trees over the domains on 1/heads of the data."""
    from fabricui_nvlink.nvls import nvls_heads

    k, ppn = group.n_nodes, group.ppn
    heads = min(nvls_heads(group), ppn)
    src, dst = [], []
    for j in (np.arange(heads) * ppn) // heads:
        ranks = [local[j] for local in group.by_node]
        for mirror in (False, True):
            for child in range(1, k):
                parent = (child - 1) // 2
                if mirror:
                    child, parent = k - 1 - child, k - 1 - parent
                src += [ranks[child], ranks[parent]]
                dst += [ranks[parent], ranks[child]]
    return group.seconds_per_byte(np.array(src), np.array(dst), np.full(len(src), 0.5 / heads))


@pytest.mark.parametrize(("nodes", "ppn"), [(2, 8), (5, 8), (16, 8), (6, 3)])
def test_nvls_tree_flows(h100, nodes, ppn):
    from fabricui_nvlink.nvls import NvlsTree

    ranks = [8 * node + gpu for node in range(nodes) for gpu in range(ppn)]
    group = Group(h100, ranks)
    assert NvlsTree().applicable(group, "all_reduce")
    assert NvlsTree()._raw_net_spb(group) == reference_nvls_tree_net_spb(group)


def test_nvls_tree_flows_across_nvl72_racks(catalog):
    from fabricui_nvlink.nvls import NvlsTree

    group = Group(fabric(catalog, "gb200-nvl72-cluster", 54), range(216))  # three racks
    assert NvlsTree()._raw_net_spb(group) == reference_nvls_tree_net_spb(group)


@pytest.mark.parametrize("nodes", [*range(1, 34), 255, 256, 1000])
def test_nccl_tree_parents_are_nccl_tree_parent(nodes):
    from fabricui.engine.group import nccl_tree_parent, nccl_tree_parents

    for tree in (0, 1):
        expected = [nccl_tree_parent(node, nodes, tree) for node in range(nodes)]
        assert nccl_tree_parents(nodes, tree).tolist() == expected


def reference_tree_latency_us(group: Group) -> float:
    """``Group.tree_latency_us`` one node at a time: each node's routed path up to the
    root, hop by hop, along both trees; the slowest."""
    from fabricui.engine.group import nccl_tree_parent

    k = group.n_nodes
    first = [int(ranks[0]) for ranks in group.by_node]
    slowest = 0.0
    for tree in (0, 1):
        for node in range(k):
            total, at = 0.0, node
            hops = []
            while nccl_tree_parent(at, k, tree) >= 0:
                parent = nccl_tree_parent(at, k, tree)
                hops.append(group.path_latency_us(first[at], first[parent]))
                at = parent
            for hop in reversed(hops):  # summed from the root down
                total = hop + total
            slowest = max(slowest, total)
    return slowest


def test_tree_latency(h100, catalog):
    for ranks in (range(16), range(24), range(40), range(128), UNEVEN, [0, 8, 16, 24, 32]):
        group = Group(h100, list(ranks))
        assert group.tree_latency_us == reference_tree_latency_us(group)
    dragonfly = Group(fabric(catalog, "dragonfly-cluster", 64), range(0, 512, 8))
    assert dragonfly.tree_latency_us == reference_tree_latency_us(dragonfly)
    racks = Group(fabric(catalog, "gb200-nvl72-cluster", 54), range(216))
    assert racks.tree_latency_us == reference_tree_latency_us(racks)


def reference_ring_orders(group: Group, channels: int) -> list[np.ndarray]:
    """``Group.ring_orders`` one node at a time: channel c enters each node at its
    ``(c p) // channels``-th rank (across alike nodes, where ``balanced_entries`` puts it)
    and, on a direct mesh, walks it with the channel's stride."""
    mesh = group.fabric.spec.intra.fabric == "mesh"

    def stride_of(p: int, c: int) -> int:
        strides = [s for s in range(1, p) if np.gcd(s, p) == 1] or [1]
        return strides[c % len(strides)] if mesh else 1

    sizes = {local.shape[0] for local in group.by_node}
    entries = None  # alike nodes across the network: entries spread over the NICs
    if len(sizes) == 1 and group.n_nodes > 1:
        p = sizes.pop()
        entries = balanced_entries(
            group.fabric.gpu_nic[group.by_node[0]],
            [(c * p) // channels for c in range(channels)],
            [stride_of(p, c) for c in range(channels)],
        )
    orders = []
    for c in range(channels):
        parts = []
        for local in group.by_node:
            p = local.shape[0]
            entry = entries[c] if entries is not None else (c * p) // channels
            parts.append(local[(entry + stride_of(p, c) * np.arange(p)) % p])
        orders.append(np.concatenate(parts))
    return orders


def reference_mesh_edges(group: Group) -> tuple[np.ndarray, np.ndarray]:
    """The intra-node edges of ``Group.ring_edges`` on a mesh, one node and step at a time."""
    src, dst = [], []
    for local in group.by_node:
        for step in range(1, local.shape[0]):
            src.append(local)
            dst.append(np.roll(local, -step))
    return np.concatenate(src), np.concatenate(dst)


@pytest.fixture(scope="module")
def mesh(catalog):
    """Four MI300X nodes: eight GPUs on a direct xGMI mesh each."""
    return fabric(catalog, "mi300x-node", 4)


@pytest.mark.parametrize("channels", [1, 3, 8, 16])
def test_ring_orders(h100, mesh, channels):
    mixed = [*range(3), *range(8, 13), 16, *range(24, 32)]  # 3, 5, 1 and 8 ranks a node
    for fabric_, ranks in ((h100, UNEVEN), (h100, range(24)), (mesh, mixed), (mesh, range(32))):
        group = Group(fabric_, list(ranks))
        new, old = group.ring_orders(channels), reference_ring_orders(group, channels)
        assert [order.tolist() for order in new] == [order.tolist() for order in old]


def test_mesh_ring_edges(mesh):
    for ranks in ([*range(3), *range(8, 13), 16, *range(24, 32)], range(32), range(5)):
        group = Group(mesh, list(ranks))
        src, dst, share = group.ring_edges(4)
        intra_src, intra_dst = reference_mesh_edges(group)
        intra = intra_src.shape[0]
        assert src[:intra].tolist() == intra_src.tolist()
        assert dst[:intra].tolist() == intra_dst.tolist()
        inner = 1 / (group.ppn - 1) if group.n_nodes == 1 else 1 / group.ppn
        assert (share[:intra] == inner).all()
