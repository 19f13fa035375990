"""The network builders' shared pieces: a block's link ids made absolute, and the dispatch
between the fat-tree and the dragonfly builders."""

from __future__ import annotations

import numpy as np

from fabricui.fabric.cabling import shift_ids
from fabricui.fabric.dragonfly import Dragonfly
from fabricui.fabric.fat_tree import FatTree
from fabricui.fabric.network import build_network
from fabricui.model import NetSpec


def _nics(nodes: int, per_node: int, first: int = 0) -> np.ndarray:
    return (first + np.arange(nodes * per_node, dtype=np.int64)).reshape(nodes, per_node)


def test_shift_ids_keeps_the_gaps():
    ids = np.array([[0, -1, 5], [-1, 2, -1]], dtype=np.int64)
    np.testing.assert_array_equal(shift_ids(ids, 100), [[100, -1, 105], [-1, 102, -1]])


def test_fat_tree_shifted_moves_every_link_table_and_nothing_else():
    net = NetSpec(link="ib-ndr", gbps=400, nics_per_node=2, layout="leaf-spine")
    block = build_network(net, 8, _nics(8, 2), 50.0, 1, 50.0, 8, base=100)
    tree = block.tree
    assert isinstance(tree, FatTree)
    moved = tree.shifted(1000)
    for name in ("nic_link", "leaf_up", "leaf_down", "spine_up", "spine_down", "direct"):
        before, after = getattr(tree, name), getattr(moved, name)
        np.testing.assert_array_equal(after, np.where(before >= 0, before + 1000, before))
    np.testing.assert_array_equal(moved.leaf_of_nic, tree.leaf_of_nic)
    np.testing.assert_array_equal(moved.pod_of_leaf, tree.pod_of_leaf)


def test_build_network_picks_the_builder_by_layout():
    nics = _nics(8, 1)
    fat = build_network(
        NetSpec(link="ib-ndr", gbps=400, nics_per_node=1), 8, nics, 50.0, 1, 50.0, 64, 8
    )
    fly = build_network(
        NetSpec(link="slingshot", gbps=200, nics_per_node=1, layout="dragonfly"),
        8,
        nics,
        25.0,
        1,
        25.0,
        64,
        8,
    )
    assert isinstance(fat.tree, FatTree)
    assert isinstance(fly.tree, Dragonfly)
    # Every NIC has its cable to a switch of the block, both ways.
    for block in (fat, fly):
        for nic in nics.reshape(-1):
            assert (block.src == nic).sum() == 1 and (block.dst == nic).sum() == 1
