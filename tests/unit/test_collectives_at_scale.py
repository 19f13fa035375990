"""Collectives at scale: NCCL's release-dependent defaults and the physics of large groups.

Each case is computed by hand from the rule it checks (NCCL source lines are named in the
functions' docstrings), on fabrics built from small hardware blocks of the real catalog.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import network_pipeline_fill_us, step_latency_us
from fabricui.engine.collectives import (
    network_protocols,
    nic_path,
    parse_library_version,
    predict,
)
from fabricui.engine.constants import DEFAULT
from fabricui.engine.group import Group
from fabricui.engine.nccl.env import read_env
from fabricui.engine.nccl.releases import release_for
from fabricui.engine.nccl.tuner import _ll128_default
from fabricui.engine.nccl.view import NcclView
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument
from fabricui.services.session import collective_algorithms


def fabric_of(catalog, hardware: dict):
    """A fabric from a compact ``hardware`` block (the measurement files' form)."""
    spec = parse_topology(YamlDocument(data=hardware, origin="test"), catalog, default_id="t")
    return build_fabric(spec, catalog)


#: Two quad-GH200 nodes as on Alps: each GPU joins its Grace over NVLink-C2C and its NIC
#: hangs off the Grace's PCIe.
GH200_2 = {
    "gpu": "gh200",
    "nodes": 2,
    "gpus_per_node": 4,
    "intra": {
        "fabric": "mesh",
        "link": "nvlink4",
        "links_per_pair": 6,
        "sockets": 4,
        "host_link": "nvlink-c2c",
    },
    "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 4},
}
#: Two 8x H100 servers: each NIC shares a PCIe switch with two GPUs.
H100_2 = {
    "gpu": "h100-sxm",
    "nodes": 2,
    "gpus_per_node": 8,
    "intra": {"fabric": "nvswitch", "link": "nvlink4"},
    "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 8},
}
#: Two PCIe boxes without switches: GPUs and NIC on the CPU's root ports.
PCIE_2 = {
    "gpu": "l40s",
    "nodes": 2,
    "gpus_per_node": 2,
    "intra": {"fabric": "pcie", "link": "pcie4"},
    "net": {"link": "roce", "gbps": 100, "nics_per_node": 1},
}


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.23.4-1 (uenv nccl-tests/nccl-2.23.4-1-aws-1.13.0:v0)", (2, 23, 4)),
        ("2.29.2+cuda13.1 (printed)", (2, 29, 2)),
        ("not printed (README example since June 2023)", None),
        (None, None),
        ("", None),
    ],
)
def test_library_version_is_the_first_release_number(text, version):
    """Version strings of the measurement files name their release first or not at all."""
    assert parse_library_version(text) == version


def test_nic_paths_follow_where_the_nic_hangs(catalog):
    """A Grace's NIC is reached over C2C (NCCL's P2C), an HGX NIC through a PCIe switch
    (PXB), a switchless PCIe box's NIC through the CPU's root complex (PHB)."""
    assert nic_path(Group(fabric_of(catalog, GH200_2), np.arange(8))) == "c2c"
    assert nic_path(Group(fabric_of(catalog, H100_2), np.arange(16))) == "pci"
    assert nic_path(Group(fabric_of(catalog, PCIE_2), np.arange(4))) == "host"


def ll128_by_default(group: Group) -> bool:
    """Whether NCCL's tuner turns LL128 on for ``group`` (its release, no environment)."""
    release = release_for(group.library_version)
    env = read_env({})
    return _ll128_default(release, NcclView.of(group, release, env), env)


def test_ll128_through_a_grace_needs_nccl_2_27(catalog):
    """NCCL 2.23-2.26 disable LL128 on a PHB path, which a Grace's NIC is before 2.27 made
    it P2C; from 2.27 (and for an unknown release, taken as current) LL128 stays. The
    engine still prices LL128 there (forcing it is possible, with a caution): only NCCL's
    own pick leaves it off."""
    fabric = fabric_of(catalog, GH200_2)
    old = Group(fabric, np.arange(8), library_version=(2, 23, 4))
    new = Group(fabric, np.arange(8), library_version=(2, 27, 3))
    current = Group(fabric, np.arange(8))
    assert not ll128_by_default(old)
    assert ll128_by_default(new) and ll128_by_default(current)
    assert network_protocols(old, ("ll", "ll128", "simple")) == ("ll", "ll128", "simple")
    # Within one node the network path does not matter.
    inside = Group(fabric, np.arange(4), library_version=(2, 23, 4))
    assert ll128_by_default(inside)


def test_ll128_never_crosses_a_host_bridge(catalog):
    """A NIC on the CPU's root complex (PHB) disables LL128 in every release; one behind a
    PCIe switch keeps it in every release."""
    host = Group(fabric_of(catalog, PCIE_2), np.arange(4), library_version=(2, 30, 7))
    assert not ll128_by_default(host)
    hgx = Group(fabric_of(catalog, H100_2), np.arange(16), library_version=(2, 18, 3))
    assert ll128_by_default(hgx)


#: Two GB200 NVL72 racks: 18 trays of 4 GPUs per NVLink domain, 4 NICs per tray.
GB200_2RACK = {
    "gpu": "gb200",
    "nodes": 36,
    "gpus_per_node": 4,
    "intra": {
        "fabric": "nvswitch",
        "link": "nvlink5",
        "hosts_per_domain": 18,
        "sockets": 2,
        "host_link": "nvlink-c2c",
    },
    "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 4},
}


def test_rings_across_racks_use_at_most_nccls_32_search_channels(catalog):
    """A rack holds 72 NICs but NCCL's ring search builds at most MAXCHANNELS/2 = 32
    channels; an 8-GPU server's 8 NICs each carry one."""
    from fabricui.engine.algorithms import channels_for
    from fabricui.engine.constants import DEFAULT

    racks = Group(fabric_of(catalog, GB200_2RACK), np.arange(144))
    assert racks.nics_per_node == 72
    assert channels_for(racks) == DEFAULT.max_search_channels == 32
    assert channels_for(Group(fabric_of(catalog, H100_2), np.arange(16))) == 8
    assert channels_for(Group(fabric_of(catalog, H100_2), np.arange(8))) == 1


def test_a_long_chain_pays_simple_fill_per_hop_beyond_an_8_gpu_node():
    """20 racks of 72 GPUs: the chain has 2 x 71 = 142 steps, 128 beyond an 8-GPU node's 14,
    and the network 2 x ceil(log2 20) = 10 steps, 8 beyond the first level. Simple pays
    (128 + 8) chunks of 512 KiB per channel; LL forwards within the node as data arrives
    and pays only the 8 network steps, in its 16 KiB chunks."""
    from fabricui.engine.algorithms import tree_fill_bytes

    big, small = np.array([2.0**34]), np.array([1024.0])
    simple = tree_fill_bytes(big, "simple", 10.0, 32, intra_steps=142.0)
    assert simple[0] == (128 + 8) * 512 * 1024 * 32
    assert tree_fill_bytes(small, "simple", 10.0, 32, intra_steps=142.0)[0] == 136 * 1024.0
    assert tree_fill_bytes(big, "ll", 10.0, 32, intra_steps=142.0)[0] == 8 * 16 * 1024 * 32
    # An 8-GPU node's chain (14 steps) on two nodes (2 network steps) adds nothing.
    assert tree_fill_bytes(big, "simple", 2.0, 8, intra_steps=14.0)[0] == 0.0


def test_tree_stalls_slow_the_chain_not_the_nics(catalog):
    """Within one node a tree is its chain: the GPUs' fan-in stalls cost tree_efficiency.
    Across the GB200 partitions of NCCL issue #1801 (one 4-GPU tray per rack, IB between)
    the NICs bound the tree, which then runs at their rate: the tree's time per byte is that
    of all its flows, with no stall factor."""
    from fabricui.engine.algorithms import Tree
    from fabricui.engine.constants import DEFAULT

    tree = Tree()
    node = Group(fabric_of(catalog, H100_2), np.arange(8))
    every, chain, _, _ = tree._raw_spbs(node)
    assert every == chain  # one node: the tree is its chain
    assert tree.spb(node) == pytest.approx(chain / DEFAULT.tree_efficiency, rel=1e-12)
    parts = Group(fabric_of(catalog, dict(GB200_NVL4_2, nodes=3)), np.arange(12))
    every, chain, _, _ = tree._raw_spbs(parts)
    assert chain / DEFAULT.tree_efficiency < every  # the NICs are the bottleneck
    assert tree.spb(parts) == pytest.approx(every, rel=1e-12)


def test_nccl_trees_are_ncclGetDtree():
    """The double binary tree of src/graph/trees.cc's illustration on 13 nodes: tree 0
    rooted at 0 (0 -> 8 -> 4, 12; 4 -> 2, 6; 12 -> 10; ...), tree 1 the same shifted by one
    node (an odd count); on 8 nodes tree 1 mirrors tree 0 (root 7)."""
    from fabricui.engine.group import nccl_tree_parent

    def parents(nodes, tree):
        return [nccl_tree_parent(i, nodes, tree) for i in range(nodes)]

    assert parents(13, 0) == [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8]
    assert parents(13, 1) == [9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11]
    assert parents(8, 0) == [-1, 2, 4, 2, 0, 6, 4, 6]
    assert parents(8, 1) == [1, 3, 1, 7, 5, 3, 5, -1]
    assert parents(2, 0) == [-1, 0] and parents(2, 1) == [1, -1]


#: Four one-GPU nodes, two per leaf, with a 1 us switch: 3.1 us to the other node of the
#: leaf, 5.4 us across the spine.
LEAF_PAIRS = {
    "gpu": "h100-sxm",
    "nodes": 4,
    "gpus_per_node": 1,
    "intra": None,
    "net": {
        "link": "ib-ndr",
        "gbps": 400,
        "nics_per_node": 1,
        "layout": "leaf-spine",
        "leafs": 2,
        "switch_lat_us": 1.0,
    },
}


def test_tree_hops_cost_the_latency_of_the_nodes_they_join(catalog):
    """NCCL's trees on 4 nodes are 1 -> 2 -> 0 <- 3 -> 2 and 0 -> 1 -> 3 <- 2 -> 1: both
    deepest paths cross the spine twice (2 x 5.4 us), where nodes 0 and 1 share a leaf
    (3.1 us). A tree's 2 x 2 network steps each pay the mean hop of that path, 5.4 us: a
    tree all-reduce of 8 B takes 4 x (5.4 - 3.1) = 9.2 us more than at the first two
    nodes' latency; a ring's steps keep it."""
    from fabricui.engine.algorithms import Tree

    fabric = fabric_of(catalog, LEAF_PAIRS)
    group = Group(fabric, np.arange(4))
    assert group.net_latency_us == pytest.approx(3.1)
    assert group.tree_latency_us == pytest.approx(2 * 5.4)
    assert group.tree_hop_latency_us == pytest.approx(5.4)
    sizes = np.array([8.0])
    tree = Tree().time_us(group, "all_reduce", sizes, "ll")
    at_first_pair = Group(fabric, np.arange(4))
    at_first_pair.tree_hop_latency_us = at_first_pair.net_latency_us  # as if every hop
    flat = Tree().time_us(at_first_pair, "all_reduce", sizes, "ll")
    np.testing.assert_allclose(tree - flat, 4 * (5.4 - 3.1))
    # Two nodes: the hop is the one link between them.
    two = Group(fabric_of(catalog, LEAF_PAIRS), np.array([0, 2]))
    assert two.tree_hop_latency_us == two.net_latency_us == pytest.approx(5.4)


def test_a_chain_fills_at_the_rate_of_one_pass(catalog):
    """A chunk filling a chain crosses each hop alone. On an NVSwitch each GPU's port
    carries the reduce up and the broadcast down in steady state, so one pass runs at twice
    the chain's rate; on GH200's mesh each pass has its own links. Two NVL72 racks (NCCL
    2.26): the 2 x 71-hop chain fills 128 hops beyond an 8-GPU node's 14, one 512 KiB Simple
    chunk on each of 32 channels per hop, at one pass's rate (the network's 2 steps add no
    fill)."""
    from fabricui.engine.algorithms import Tree, alpha_beta
    from fabricui.engine.constants import DEFAULT

    tree = Tree()
    box = Group(fabric_of(catalog, H100_2), np.arange(8))
    _, chain, one_pass, _ = tree._raw_spbs(box)
    assert one_pass == pytest.approx(chain / 2, rel=1e-12)
    quad = Group(fabric_of(catalog, GH200_2), np.arange(4))
    _, chain, one_pass, _ = tree._raw_spbs(quad)
    assert one_pass == pytest.approx(chain, rel=1e-12)

    racks = Group(fabric_of(catalog, GB200_2RACK), np.arange(144), library_version=(2, 26, 2))
    size = np.array([2.0**34])
    assert tree.chain_pass_spb(racks) == pytest.approx(
        tree._raw_spbs(racks)[2] / DEFAULT.tree_efficiency, rel=1e-12
    )
    spb = tree.spb(racks)
    unfilled = alpha_beta(
        racks, size, "simple", 142.0, 2.0, spb, net_latency_us=racks.tree_hop_latency_us
    )
    fill = 128 * 512 * 1024 * 32 * tree.chain_pass_spb(racks)
    np.testing.assert_allclose(tree.time_us(racks, "all_reduce", size, "simple") - unfilled, fill)


def test_a_simple_pipeline_fills_over_its_eight_network_steps(catalog):
    """A connection runs at its rate once its NCCL_STEPS (8) slots are in flight: the fill
    is 8 Simple network steps (NCCL's 14 us, the route's latency and the receive's flush),
    in proportion below one 512 KiB chunk per channel; EFA's slower steps fill longer."""
    from fabricui.engine.algorithms import NCCL_STEPS, network_fill_us

    ndr = Group(fabric_of(catalog, H100_2), np.arange(16))
    step = DEFAULT.net_step_us["simple"] + ndr.net_latency_us + ndr.gdr_flush_us
    assert network_pipeline_fill_us(ndr) == pytest.approx(NCCL_STEPS * step)
    full = 512 * 1024.0 * ndr.nccl_channels
    np.testing.assert_allclose(
        network_fill_us(np.array([full / 4, full, 4 * full]), ndr.nccl_channels, step),
        [2 * step, 8 * step, 8 * step],
    )
    efa = dict(H100_2, net={"link": "efa", "gbps": 100, "nics_per_node": 32})
    assert network_pipeline_fill_us(Group(fabric_of(catalog, efa), np.arange(16))) > 1.5 * (
        network_pipeline_fill_us(ndr)
    )


def test_sharp_reduces_on_the_gpus_first_at_a_chains_rate(catalog):
    """SHARP (NCCL's CollNet) reduces among a node's GPUs before the switch: each H100 port
    (18 x 25 GB/s x 0.82 = 369 GB/s) carries 2 x 7/8 of the message with the heads
    rotating, and the GPUs wait, reduce and forward as a tree's chain does, at
    tree_efficiency (0.92); the network's one share per GPU (1/8 of the message over a 400G
    port) is lighter, so 1 GiB takes 1.75 x 2^30 / (369e3 x 0.92) us beyond the fixed
    cost and the Simple pipeline's fill across the network (NCCL_STEPS network steps)."""
    from fabricui_infiniband.sharp import Sharp

    nodes = {**H100_2, "net": {**H100_2["net"], "sharp": True}}
    group = Group(fabric_of(catalog, nodes), np.arange(16))
    assert Sharp().applicable(group, "all_reduce")
    assert Group(group.fabric, np.arange(8)).switch_port_GBps == pytest.approx(369.0)
    sizes = np.array([0.0, 2.0**30])
    t = Sharp().time_us(group, "all_reduce", sizes, "simple")
    np.testing.assert_allclose(
        t[1] - t[0], 1.75 * 2**30 / (369e3 * 0.92) + network_pipeline_fill_us(group)
    )


def test_nvls_fill_grows_with_its_heads_and_its_chunk(catalog):
    """NCCL shrinks the NVLS chunk (128 KiB) for messages with few chunks per operation
    (channels x heads: 32 x 8 = 256 or 32 x 32 = 1024 on a 72-GPU rack in 2.26): 64 KiB
    under 64 chunks each, 32 KiB under 8, 16 KiB under 2. The fill is nvls_pipeline_fill_us at
    8 heads and 128 KiB, in proportion to heads and chunk, and a message fills it until
    every channel holds a chunk per head."""
    from fabricui_nvlink.nvls import (
        NVLS_LATENCY_US,
        nvls_chunk_bytes,
        nvls_domain_heads,
        nvls_fixed_us,
    )

    from fabricui.engine.constants import DEFAULT

    rack = Group(fabric_of(catalog, GB200_2RACK), np.arange(72), library_version=(2, 26, 2))
    assert nvls_domain_heads(rack) == 32
    mib = 2.0**20
    sizes = np.array([2 * mib, 16 * mib, 128 * mib, 2.0**34])
    k = 1024.0
    np.testing.assert_array_equal(nvls_chunk_bytes(sizes, 32, 8), [16 * k, 32 * k, 64 * k, 128 * k])
    np.testing.assert_array_equal(
        nvls_chunk_bytes(sizes, 32, 32), [16 * k, 16 * k, 32 * k, 128 * k]
    )
    fill = DEFAULT.nvls_pipeline_fill_us
    # 8 heads: 2 MiB fills half of 16 KiB x 256 = 4 MiB at 1/8 the chunk.
    eight = nvls_fixed_us(rack, sizes, 8) - NVLS_LATENCY_US
    np.testing.assert_allclose(eight, [fill / 16, fill / 4, fill / 2, fill])
    # 32 heads: four times the heads; 2 MiB fills 1/8 of 16 KiB x 1024 = 16 MiB.
    rack_fill = nvls_fixed_us(rack, sizes, 32) - NVLS_LATENCY_US
    np.testing.assert_allclose(rack_fill, [fill / 16, fill / 2, fill, 4 * fill])
    # Trees between domains start at 64 KiB from 4 nodes; 16 x 8 operations take 32 KiB
    # chunks below 8 MiB (one 64 KiB chunk each).
    tree = nvls_chunk_bytes(sizes, 16, 8, tree=True, n_nodes=4)
    np.testing.assert_array_equal(tree, [32 * k, 64 * k, 64 * k, 64 * k])


def test_nvls_loops_of_a_smaller_chunk_wait_on_the_switch(catalog, h100_box):
    """Each NVLS loop past the first waits on 4 hand-offs over the GPU-to-GPU path (0.7 us
    on an H100 box); the bandwidth holds the loops of 128 KiB chunks. 8 H100s run 16 x 8
    operations: 32 MiB in 32 KiB chunks is 8 loops against 2 (5 more: 14 us), 256 MiB in
    64 KiB chunks 32 against 16 (15 more: 42 us), 16 GiB in 128 KiB chunks none."""
    from fabricui_nvlink.nvls import nvls_loop_sync_us

    box = Group(fabric_of(catalog, h100_box), np.arange(8))
    assert box.intra_latency_us == pytest.approx(0.7)
    sizes = np.array([2.0**25, 2.0**28, 2.0**34])
    np.testing.assert_allclose(nvls_loop_sync_us(box, sizes, 8), [14.0, 42.0, 0.0])


def test_eight_blackwell_gpus_reach_the_nvls_cap(catalog, h100_box):
    """At the port efficiency measured on Hopper's 2, 4 and 6 GPUs (0.85), eight GPUs move
    1.32 times their port's worth of bus bandwidth: the switch's reduction binds, 1.30 on
    Hopper and 1.225 on Blackwell, as 8x B200 measure (838-847 GB/s)."""
    from fabricui_nvlink.nvls import nvls_allreduce_factor

    b200_box = dict(h100_box, gpu="b200", intra={"fabric": "nvswitch", "link": "nvlink5"})
    for box, cap in ((h100_box, 1.30), (b200_box, 1.225)):
        assert nvls_allreduce_factor(Group(fabric_of(catalog, box), np.arange(8))) == cap


def test_a_slower_network_hides_the_nvls_loop_hand_offs(catalog, monkeypatch):
    """NVLS with trees between four H100 nodes takes 64 KiB chunks at every size, but its
    network stage (one NDR NIC a head) is the slower one, so the NVLS stage's hand-offs do
    not add to a 1 GiB all-reduce."""
    import fabricui_nvlink.nvls as nvls

    group = Group(fabric_of(catalog, dict(H100_2, nodes=4)), np.arange(32))
    sizes = np.array([2.0**30])
    tree = nvls.NvlsTree()
    assert nvls.nvls_loop_sync_us(group, sizes, 8, tree=True)[0] > 0
    with_hand_offs = tree.time_us(group, "all_reduce", sizes, "simple")
    monkeypatch.setattr(nvls, "NVLS_LOOP_HANDOFFS", 0)
    assert tree.time_us(group, "all_reduce", sizes, "simple") == pytest.approx(with_hand_offs)


def test_blackwell_runs_24_nvls_channels_in_one_domain_from_2_27(catalog):
    """ncclNvlsInit: 16 channels on Hopper, 32 on Blackwell; from 2.27 a Blackwell group in
    one NVLink domain runs NVLS_NCHANNELS_SM100_NVL = 24, across domains still 32."""
    from fabricui_nvlink.nvls import nvls_channels

    fabric = fabric_of(catalog, GB200_2RACK)
    one_rack = np.arange(72)
    assert nvls_channels(Group(fabric, one_rack, library_version=(2, 26, 2))) == 32
    assert nvls_channels(Group(fabric, one_rack, library_version=(2, 27, 3))) == 24
    assert nvls_channels(Group(fabric, one_rack)) == 24
    assert nvls_channels(Group(fabric, np.arange(144))) == 32
    hopper = fabric_of(catalog, H100_2)
    assert nvls_channels(Group(hopper, np.arange(8))) == 16


#: 2, 4 and 6 GPUs of one 8-GPU NVSwitch Hopper box, all_reduce_perf 256 MB..8 GB, NCCL
#: 2.29.2: the tuner's pick per GPU count (from the NCCL_DEBUG_SUBSYS=TUNING logs) and the
#: peak bus bandwidth of the auto, NCCL_ALGO=Ring and NCCL_ALGO=NVLS arms [GB/s].
#: Source: github.com/waynehacking8/nccl-collectives-bench, results/scaling_attributed/
#: report.md at ec97f06204de7297d1b682a4c60f0924602c677d.
HOPPER_BOX_SUBSETS = {
    2: ("ring", 24, 348.0, 207.0),
    4: ("ring", 24, 365.0, 376.0),
    6: ("nvls", 16, 367.0, 443.0),
}
#: The faster arm per GPU count there (NVLS by 3% at 4 GPUs, where NCCL runs ring).
HOPPER_BOX_BEST = {2: "ring", 4: "nvls", 6: "nvls"}


@pytest.mark.parametrize("gpus", sorted(HOPPER_BOX_SUBSETS))
def test_nvls_on_part_of_a_box_as_measured(catalog, gpus, h100_box):
    """On a subset of an NVSwitch box NVLS moves ``1 + 1/p`` of the message through each
    port (p GPUs), so it loses to ring at 2 GPUs and wins from 6; NCCL's tuner picks ring at
    2 and 4 and NVLS at 6, with 24 and 16 channels, though NVLS is already the faster at 4;
    ring and NVLS peaks within 6%."""
    pick, channels, ring_bw, nvls_bw = HOPPER_BOX_SUBSETS[gpus]
    fabric = fabric_of(catalog, h100_box)
    sizes = [2.0**33]
    algorithms = collective_algorithms()
    auto = predict(
        Group(fabric, np.arange(gpus), library_version=(2, 29, 2)), "all_reduce", sizes, algorithms
    )
    assert auto.choice.nccl.algorithm[0] == pick
    assert auto.choice.nccl.channels[0] == channels
    assert auto.choice.best.algorithm[0] == HOPPER_BOX_BEST[gpus]
    for algo, measured in (("Ring", ring_bw), ("NVLS", nvls_bw)):
        group = Group(
            fabric, np.arange(gpus), library_version=(2, 29, 2), nccl_env={"NCCL_ALGO": algo}
        )
        busbw = predict(group, "all_reduce", sizes, algorithms).busbw_GBps[0]
        assert busbw == pytest.approx(measured, rel=0.06), algo


def test_tree_chunks_shrink_as_nccl_sizes_them():
    """NCCL halves a tree's LL128 chunk (560 KiB) toward 128 KiB while a message holds fewer
    than 64 s / ppn chunks per channel, then toward 32 KiB under 16 s / ppn, s = 1 + log2
    nodes + ppn / 10 (16 nodes of 8: s = 5.8, thresholds 46.4 and 11.6 on 16 channels).
    Simple trees shrink by depth only up to 2.19; LL keeps its steps."""
    from fabricui.engine.algorithms import tree_chunk_bytes

    full = 560 * 1024.0
    sizes = np.array([2.0**22, 2.0**26, 2.0**30])
    ll128 = tree_chunk_bytes(sizes, "ll128", 16, 16, 8.0)
    # 4 MiB: 0, 0, 1 chunk(s) per channel -> 71680; then 3 and 7 -> 17920 (halved from 35840).
    # 64 MiB: 7, 14, 29 -> 71680, then 58 >= 11.6. 1 GiB: 117 chunks, no shrink.
    assert ll128.tolist() == [full / 32, full / 8, full]
    # Simple up to 2.19, depth 8 (two nodes of 8): 1 MiB on 8 channels ends at 32 KiB.
    one = np.array([2.0**20])
    assert tree_chunk_bytes(one, "simple", 8, 2, 8.0, (2, 19, 3)).tolist() == [32768.0]
    assert tree_chunk_bytes(one, "simple", 8, 2, 8.0, (2, 20, 3)).tolist() == [512 * 1024.0]
    assert tree_chunk_bytes(one, "ll", 8, 2, 8.0).tolist() == [16 * 1024.0]


#: Two GB200 NVL4 trays on InfiniBand (each GPU with its own 400G NIC behind its Grace).
GB200_NVL4_2 = {
    "gpu": "gb200",
    "nodes": 2,
    "gpus_per_node": 4,
    "intra": {"fabric": "nvswitch", "link": "nvlink5", "sockets": 2, "host_link": "nvlink-c2c"},
    "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 4},
}


def test_ll128_tree_ceiling_is_nccls_per_channel_figure_times_its_tree_channels():
    """16 tree channels at NCCL's 31.67 GB/s each carry 506.72 GB/s of bus bandwidth, half
    of it algorithm bandwidth, after LL128's 0.92: 0.92 * 2 / 506720 us per byte."""
    from fabricui.engine.algorithms import tree_ll128_ceiling_spb

    assert tree_ll128_ceiling_spb(16, 31.67) == pytest.approx(1.84 / 506_720.0, rel=1e-12)
    assert tree_ll128_ceiling_spb(0, 31.67) == 0.0
    assert tree_ll128_ceiling_spb(16, 0.0) == 0.0


def test_ll128_tree_across_blackwell_nodes_runs_at_nccls_per_channel_ceiling(catalog):
    """Two GB200 trays: NCCL's tree graph has 8 channels at 31.67 GB/s each (Blackwell, 2
    nodes; 55.6 on one node, 20.0 on three or more), 253.36 GB/s of bus bandwidth, so
    16 GiB take 2^34 / 126.68e3 = 135,624 us plus a few microseconds of latency; the NICs
    alone would allow more."""
    from fabricui.engine.algorithms import Tree, tree_ll128_cap_GBps, tree_ll128_ceiling_spb

    fabric = fabric_of(catalog, GB200_NVL4_2)
    group = Group(fabric, np.arange(8))
    assert group.nccl_tree_channels == 8
    assert tree_ll128_cap_GBps(group) == 31.67
    assert tree_ll128_cap_GBps(Group(fabric, np.arange(4))) == 55.6
    floor = tree_ll128_ceiling_spb(8, 31.67)
    assert Tree().spb(group) < floor  # the ceiling, not the links, sets the pace
    time = Tree().time_us(group, "all_reduce", np.array([2.0**34]), "ll128")
    assert time[0] == pytest.approx(2.0**34 / 126.68e3, rel=2e-3)
    simple = Tree().time_us(group, "all_reduce", np.array([2.0**34]), "simple")
    assert simple[0] < time[0]  # Simple trees keep their physical rate


def test_ll128_tree_ceiling_takes_the_column_of_the_node_count_and_only_nccl(catalog):
    """Three GB200 trays take NCCL's 3+-node figure (20.0 GB/s a channel); RCCL on MI300X
    has no such figure of NCCL's, so no ceiling (0)."""
    from fabricui.engine.algorithms import tree_ll128_cap_GBps

    three = dict(GB200_NVL4_2, nodes=3)
    assert tree_ll128_cap_GBps(Group(fabric_of(catalog, three), np.arange(12))) == 20.0
    amd = {
        "gpu": "mi300x",
        "nodes": 2,
        "gpus_per_node": 2,
        "intra": {"fabric": "mesh", "link": "xgmi3", "links_per_pair": 1},
        "net": {"link": "roce", "gbps": 400, "nics_per_node": 2},
    }
    assert tree_ll128_cap_GBps(Group(fabric_of(catalog, amd), np.arange(4))) == 0.0


@pytest.mark.parametrize(
    ("gpu", "net", "flush_us"),
    [
        # Ampere over EFA v1 (8 us per adapter traversal): the read goes out and back.
        ("a100-sxm4-80gb", {"link": "efa", "gbps": 100, "nics_per_node": 4}, 16.0),
        # Ampere over HDR InfiniBand (ConnectX-6, 0.3 us per traversal).
        ("a100-sxm4-80gb", {"link": "ib-hdr", "gbps": 200, "nics_per_node": 8}, 0.6),
        # Hopper: the NIC's writes are visible without a flush.
        ("h100-sxm", {"link": "ib-ndr", "gbps": 400, "nics_per_node": 8}, 0.0),
        # NET/Socket receives into host memory, not by GPUDirect.
        ("a100-sxm4-80gb", {"link": "tcp", "gbps": 100, "nics_per_node": 1}, 0.0),
    ],
)
def test_simple_receives_across_the_network_flush_before_hopper(catalog, gpu, net, flush_us):
    """NCCL flushes each Simple GPUDirect receive on Ampere and older
    (``ncclTopoNeedFlush``): a Simple network step costs the flush more, LL none."""
    hardware = {
        "gpu": gpu,
        "nodes": 2,
        "gpus_per_node": 8,
        "intra": {"fabric": "nvswitch", "link": "nvlink4" if gpu == "h100-sxm" else "nvlink3"},
        "net": net,
    }
    group = Group(fabric_of(catalog, hardware), np.arange(16))
    assert group.gdr_flush_us == pytest.approx(flush_us)
    simple = step_latency_us(group, "simple", True)
    ll = step_latency_us(group, "ll", True)
    path = group.net_latency_us
    assert simple == pytest.approx(DEFAULT.net_step_us["simple"] + path + flush_us)
    assert ll == pytest.approx(DEFAULT.net_step_us["ll"] + path)
    one_node = Group(fabric_of(catalog, {**hardware, "nodes": 1, "net": None}), np.arange(8))
    assert one_node.gdr_flush_us == 0.0


def test_few_channels_run_one_binary_tree(catalog, monkeypatch):
    """NCCL puts its search's channels on the first tree and their copies on the mirror
    (connectTrees), so a message on no more channels than the search built crosses the nodes
    on one tree. Four one-GPU nodes: the first tree's root receives from nodes 1 and 2 (2 S
    into its NIC); with both trees each carries S / 2 and node 0 also receives the mirror's
    broadcast from node 2 (1.5 S): the single tree's time per byte is 4/3 of the pair's."""
    from fabricui.engine.algorithms import Tree, tree_runs_one_tree

    hardware = dict(H100_2, nodes=4, gpus_per_node=1, net=dict(H100_2["net"], nics_per_node=1))
    group = Group(fabric_of(catalog, hardware), np.arange(4))
    tree = Tree()
    every, _, _, single = tree._raw_spbs(group)
    assert single == pytest.approx(every * 4.0 / 3.0, rel=1e-12)
    search = group.nccl_search
    first = min(search.ring.channels, search.tree.channels)
    assert (first, group.nccl_channels) == (2, 4)
    # LL adds a channel per 512 threads x 8 bytes: 2 channels up to 12 KiB, 3 from 12 KiB.
    sizes = np.array([4096.0, 8192.0, 12287.0, 12288.0, 1 << 20])
    assert tree_runs_one_tree(group, sizes, "ll").tolist() == [True, True, True, False, False]
    one = tree.time_us(group, "all_reduce", sizes, "ll")
    monkeypatch.setattr(
        "fabricui.engine.algorithms.tree_runs_one_tree",
        lambda group, sizes, protocol: np.zeros(np.shape(sizes), dtype=bool),
    )
    both = tree.time_us(group, "all_reduce", sizes, "ll")
    # The bytes' part of the time grows by a third where one tree carries them, else equal.
    assert (one[:3] > both[:3]).all()
    assert one[3:] == pytest.approx(both[3:], rel=1e-12)
    fixed = tree.time_us(group, "all_reduce", np.zeros(1), "ll")[0]
    assert (one[:3] - fixed) == pytest.approx((both[:3] - fixed) * 4.0 / 3.0, rel=1e-9)
    # NCCL_MAX_NCHANNELS=2 keeps the first tree's channels alone: one tree at every size.
    capped = Group(group.fabric, np.arange(4), nccl_env={"NCCL_MAX_NCHANNELS": "2"})
    assert tree_runs_one_tree(capped, sizes, "simple").all()


def test_nvls_copies_of_the_kept_channels_stay_on_one_tree(catalog):
    """From 2.22 NVLS raises the rings' and trees' channels to its own 16 by copying the
    channels kept (copyChannels): under NCCL_MAX_NCHANNELS=2 all 16 copy the first tree's
    two, so even 1 GiB runs on one tree, where without the bound it runs on both."""
    from fabricui.engine.algorithms import tree_runs_one_tree

    fabric = fabric_of(catalog, dict(H100_2, nodes=4))
    big = np.array([2.0**30])
    capped = Group(fabric, np.arange(32), nccl_env={"NCCL_MAX_NCHANNELS": "2"})
    assert (capped.nccl_channels, capped.nccl_search.own_channels) == (16, 2)
    assert tree_runs_one_tree(capped, big, "simple").all()
    free = Group(fabric, np.arange(32))
    assert not tree_runs_one_tree(free, big, "simple").any()
