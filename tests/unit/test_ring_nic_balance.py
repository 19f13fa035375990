"""Rings across nodes whose GPUs share NICs: every NIC carries as many channels in as out,
as NCCL's search leaves them (each channel's network bandwidth is counted on the NIC it
enters by and on the one it leaves by, per direction)."""

from __future__ import annotations

import numpy as np

from fabricui.engine.collectives import predict
from fabricui.engine.group import Group, balanced_entries
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument
from fabricui.services.session import collective_algorithms

#: Kestrel's GPU nodes: 4 H100 on an HGX board (NVLink between every pair), two 200 Gb/s
#: Slingshot NICs, each shared by two GPUs.
HGX4_TWO_NICS = {
    "gpu": "h100-sxm",
    "nodes": 4,
    "gpus_per_node": 4,
    "intra": {"fabric": "mesh", "link": "nvlink4", "links_per_pair": 6, "sockets": 2},
    "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 2},
}


def test_mesh_strides_no_longer_leave_every_channel_by_one_nic():
    """Two channels with strides 1 and 3 on GPUs (0, 1) behind NIC 8 and (2, 3) behind NIC
    9: by default both leave by GPU 3 (entries 0 and 2, exits 0 - 1 and 2 - 3 = 3 mod 4).
    Entering the second at GPU 3 makes it leave by GPU 0: each NIC one channel in, one out."""
    nic_of = np.array([8, 8, 9, 9])
    assert balanced_entries(nic_of, [0, 2], [1, 3]) == [0, 3]


def test_one_nic_per_gpu_on_a_mesh_spreads_the_exits():
    """Eight GPUs each with its NIC, four channels of strides 1, 3, 5 and 7 entering at 0,
    2, 4 and 6 all leave by GPU 7 (e - d = -1); entering at 0, 3, 6 and 1 they leave by 7,
    0, 1 and 2, each NIC carrying at most one channel either way."""
    assert balanced_entries(np.arange(8), [0, 2, 4, 6], [1, 3, 5, 7]) == [0, 3, 6, 1]


def test_even_defaults_are_kept():
    """Entries already even, or no NICs: the default entries stand."""
    assert balanced_entries(np.arange(8), [0, 2, 4, 6], [1, 1, 1, 1]) == [0, 2, 4, 6]
    assert balanced_entries(np.array([0, 0, 1, 1]), [0, 2], [1, 1]) == [0, 2]
    assert balanced_entries(np.array([-1, -1]), [0, 1], [1, 1]) == [0, 1]


def test_a_ring_uses_both_nics_of_a_node(catalog):
    """Hand-computed: a ring's busbw across nodes is bounded by each node's two NICs,
    2 x 25 GB/s x 0.9 = 45 GB/s (one NIC's 22.5 when every channel left by the same NIC);
    at 4 GiB the latency terms are under 1% of the time."""
    spec = parse_topology(YamlDocument(data=HGX4_TWO_NICS, origin="test"), catalog, "k")
    group = Group(
        build_fabric(spec, catalog),
        np.arange(16),
        library_version=(2, 21, 5),
        nccl_env={"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"},
    )
    busbw = predict(group, "all_reduce", [2.0**32], collective_algorithms()).busbw_GBps[0]
    bound = 2 * 200 / 8 * catalog.links["slingshot"].efficiency
    assert bound * 0.98 < busbw <= bound
