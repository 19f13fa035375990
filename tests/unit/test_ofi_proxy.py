"""NCCL's proxy thread over aws-ofi-nccl: each channel past the first adds one plugin
operation to every network step of an LL call, on EFA and Slingshot only."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.constants import DEFAULT
from fabricui.engine.group import Group
from fabricui.engine.ofi_proxy import channel_ops_us
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument


def two_nodes(catalog, link: str, gbps: int, nics: int) -> Group:
    hardware = {
        "gpu": "h100-sxm",
        "nodes": 2,
        "gpus_per_node": 8,
        "intra": {"fabric": "nvswitch", "link": "nvlink4"},
        "net": {"link": link, "gbps": gbps, "nics_per_node": nics},
    }
    spec = parse_topology(YamlDocument(data=hardware, origin="test"), catalog, "t")
    return Group(build_fabric(spec, catalog), np.arange(16), library_version=(2, 20, 3))


def test_tree_channels_add_plugin_operations_on_efa(catalog):
    """Hand-computed on two p5 instances (tree: 1 chunk, 2 network steps): LL runs
    ``floor(S / (512 * 8))`` channels, so 4 KiB runs 1 (nothing added) and 64 KiB 16:
    15 channels x 2 steps x 1.85 us = 55.5 us."""
    group = two_nodes(catalog, "efa", 100, 32)
    assert group.nccl_channels >= 16
    added = channel_ops_us(group, np.array([4096.0, 65536.0]), 2.0, 1)
    assert added.tolist() == pytest.approx([0.0, 15 * 2 * DEFAULT.ofi_channel_op_us])


def test_a_ring_scales_its_threshold_by_its_ranks(catalog):
    """A ring's LL threshold is per rank: 64 KiB over 16 ranks is one channel's worth."""
    group = two_nodes(catalog, "efa", 100, 32)
    assert channel_ops_us(group, np.array([65536.0]), 2.0, 16).tolist() == [0.0]


def test_nccl_own_transport_adds_nothing(catalog):
    """On InfiniBand NCCL's own transport posts its work requests: no plugin turns."""
    group = two_nodes(catalog, "ib-ndr", 400, 8)
    assert channel_ops_us(group, np.array([65536.0]), 2.0, 1).tolist() == [0.0]
