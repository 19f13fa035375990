"""Collective model: nccl-tests conventions and hand-computed bandwidth terms.

The bandwidth term is isolated by differencing two large sizes: t(2S) - t(S) = S * spb, so
these cases pin what the fabric determines (flows, loads, capacities) independently of the
library's latency constants. Mini database: NVLink4 25 GB/s x18 eff 0.8, NDR 50 GB/s eff
0.95, PCIe5 64 GB/s eff 0.8.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricui.engine.algorithms import Ring, Tree, core_algorithms, network_pipeline_fill_us
from fabricui.engine.collectives import algbw_GBps, bus_factor, ideal_time_us, predict
from fabricui.engine.constants import DEFAULT
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.group import Group
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.model import NetSpec
from fabricui.services.session import collective_algorithms

S = 2.0**32  # large enough that latency is negligible next to the differences we take


def bandwidth_GBps(fabric, op, ranks, algo, nranks_factor=1.0):
    """Per-rank 'bus' bandwidth implied by the slope of time against size."""
    pred = evaluate_collective(fabric, op, [S, 2 * S], ranks=ranks, algo=algo)
    slope_us_per_byte = (pred.time_us[1] - pred.time_us[0]) / S
    return nranks_factor / (slope_us_per_byte * 1e3)


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        ("all_reduce", 8, 1.75),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("all_to_all", 2, 0.5),
        ("broadcast", 8, 1.0),
        ("reduce", 8, 1.0),
        ("send_recv", 8, 1.0),
        ("all_reduce", 1, 0.0),
    ],
)
def test_bus_factor_is_nccl_tests(op, n, factor):
    """busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for gathers/scatters/all-to-all, 1."""
    assert bus_factor(op, n) == pytest.approx(factor)


def test_ideal_ring_all_reduce_seed_example():
    """1 GB over 8 ranks at 100 GB/s: 2(N-1)/N * M / BW = 17.5 ms."""
    assert ideal_time_us("all_reduce", 1e9, 8, 100.0) == pytest.approx(17_500.0)
    np.testing.assert_allclose(ideal_time_us("all_gather", [0, 8e9], 8, 100.0), [0.0, 70_000.0])


def test_algbw_handles_zero_time():
    """algbw = S / t in GB/s, 0 where t is 0 (no division warning)."""
    np.testing.assert_allclose(algbw_GBps([1e9, 5], [1e6, 0]), [1.0, 0.0])


def test_ring_on_nvswitch_node(mini):
    """8 GPUs on NVSwitch: each GPU link carries 2(n-1)/n of the data -> busbw = 450 * 0.8."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    busbw = bandwidth_GBps(fabric, "all_reduce", np.arange(8), "ring", bus_factor("all_reduce", 8))
    assert busbw == pytest.approx(450 * 0.8, rel=1e-6)


def test_ring_across_two_nodes_spreads_over_eight_nics(mini):
    """16 ranks, 8 channels each crossing on its own NIC: net 8 x 50 x 0.95 = 380. Each
    channel enters a node at GPU c and leaves from GPU c - 1 for the next node's GPU c, on
    rail c: PXN hands it over NVLink to the local GPU c first (NCCL uses one NIC per channel
    both ways). Every GPU then sends one channel's share over NVLink per channel (its ring
    edge, or the PXN hop): 8/8 of the volume on 18 x 25 x 0.8 = 360 GB/s, which bounds it."""
    spec = mini.topologies["pod"].with_nodes(2)
    fabric = build_fabric(spec, mini)
    busbw = bandwidth_GBps(
        fabric, "all_reduce", np.arange(16), "ring", bus_factor("all_reduce", 16)
    )
    assert busbw == pytest.approx(min(8 * 50 * 0.95, 360), rel=1e-6)


def test_shared_nic_halves_cross_node_bandwidth(mini):
    """Two NICs for eight GPUs: the ring's node crossing is limited to 2 x 50 x 0.95."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    busbw = bandwidth_GBps(
        fabric, "all_reduce", np.arange(16), "ring", bus_factor("all_reduce", 16)
    )
    assert busbw == pytest.approx(2 * 50 * 0.95, rel=1e-6)


def test_tree_moves_half_the_ring_volume_between_two_nodes(mini):
    """Between two nodes a tree sends each byte once per direction, a ring 2(n-1)/n times;
    from 512 MiB a tree has no size correction (NCCL corrects 64 B..256 MiB only), and here
    both are bound by the shared NIC, where the tree's fan-in stalls (a GPU-side cost) do not
    show: the ratio is exactly 2 x 15/16."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    group = Group(fabric, np.arange(16))
    algorithms = collective_algorithms()

    def slope(algo):
        pred = predict(
            group, "all_reduce", [S, 2 * S], algorithms, algo=algo, protocols=("simple",)
        )
        return (pred.time_us[1] - pred.time_us[0]) / S

    assert slope("ring") / slope("tree") == pytest.approx(2 * 15 / 16, rel=1e-6)


def test_tree_size_correction_stops_at_512_mib():
    """NCCL's table covers log2(S / 64 B) = 0..22: 256 MiB is index 22 (Simple 0.9), 512 MiB
    and beyond run uncorrected."""
    from fabricui.engine.algorithms import tree_size_efficiency

    sizes = np.array([64.0, 2.0**20, 2.0**28, 2.0**29, 2.0**34])
    table = DEFAULT.tree_size_efficiency["simple"]
    got = tree_size_efficiency(sizes, "simple").tolist()
    assert got == [table[0], table[14], table[22], 1.0, 1.0]


def test_tree_on_ll_runs_at_one_3_8th_of_its_simple_bandwidth(mini):
    """NCCL's model divides a tree's LL bandwidth by 3.8 (a ring's LL keeps half): at
    sizes in one size-efficiency bucket and under the LL ceiling, the LL slope is the
    Simple slope x 3.8 x (Simple's / LL's size efficiency)."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    group = Group(fabric, np.arange(16))
    algorithms = collective_algorithms()
    sizes = [2.0**20, 1.5 * 2.0**20]  # both log2(S / 64) = 14

    def slope(protocol):
        pred = predict(group, "all_reduce", sizes, algorithms, algo="tree", protocols=(protocol,))
        return (pred.time_us[1] - pred.time_us[0]) / (sizes[1] - sizes[0])

    eff = DEFAULT.tree_size_efficiency
    # Hand: busbw under the 45 GB/s multi-node LL ceiling on this small fabric. Below one
    # chunk per channel, Simple's pipeline fill grows with the size: take its slope out.
    fill = network_pipeline_fill_us(group, group.tree_hop_latency_us)
    fill_slope = fill / (DEFAULT.chunk_bytes["simple"] * group.nccl_channels)
    expected = 3.8 * eff["simple"][14] / eff["ll"][14]
    assert slope("ll") / (slope("simple") - fill_slope) == pytest.approx(expected, rel=1e-6)


def test_ll_ceiling_applies_size_by_size(mini):
    """LL moves at most ``ll_cap_multinode_GBps`` across nodes: a size whose links allow
    more runs at the ceiling, a slower one at LL's wire efficiency, each on its own rate.
    Hand: 1 us per MB is 1000 GB/s (ceiling 45: scale 0.045), 100 us per MB is 10 GB/s
    (under the ceiling: LL's efficiency)."""
    from fabricui.engine.algorithms import protocol_bandwidth_scale

    group = Group(build_fabric(mini.topologies["shared-nic"], mini), np.arange(16))
    assert group.n_nodes > 1
    cap = DEFAULT.ll_cap_multinode_GBps
    scale = protocol_bandwidth_scale(group, "ll", np.array([1000.0, 10.0, 0.0]))
    efficiency = DEFAULT.protocol_efficiency["ll"]
    assert scale.tolist() == pytest.approx([cap / 1000.0, efficiency, efficiency])
    assert (
        protocol_bandwidth_scale(group, "simple", 1000.0) == DEFAULT.protocol_efficiency["simple"]
    )


def oversubscribed(mini, ratio, nodes=4):
    base = mini.topologies["fat-tree"]
    net = replace(
        base.net, nics_per_node=1, rail_optimized=False, leafs=2, spines=1, oversubscription=ratio
    )
    return build_fabric(
        replace(
            base, nodes=nodes, gpus_per_node=1, net=net, intra=replace(base.intra, fabric="none")
        ),
        mini,
    )


def test_oversubscribed_spine_becomes_the_bottleneck(mini):
    """8 single-GPU nodes, 4 per leaf. Cables are whole: at 1:1 a leaf has 4 uplink cables,
    at 4:1 one. An all-to-all sends 7/8 of each rank's buffer through its NIC (47.5 GB/s
    achievable) and 16 flows of 1/8 across each leaf's uplinks: 2 buffers over 4 x 47.5 at
    1:1 (the NICs bound it), over one 47.5 cable at 4:1 (the uplink bounds it)."""
    ranks = np.arange(8)
    a, b = np.meshgrid(ranks, ranks, indexing="ij")
    off = a != b
    volume = np.full(int(off.sum()), 1.0 / 8)
    for ratio, cables, expected in ((1.0, 4, 0.875 / 47.5e3), (4.0, 1, 2.0 / 47.5e3)):
        fabric = oversubscribed(mini, ratio, nodes=8)
        tree = fabric.tree
        assert int(fabric.link_count[tree.leaf_up].sum(axis=1)[0]) == cables
        group = Group(fabric, ranks)
        assert group.seconds_per_byte(a[off], b[off], volume) == pytest.approx(expected)


def test_best_pick_is_the_fastest_per_size(mini):
    """auto's best pick is the minimum over every algorithm and protocol, size by size, and
    NCCL's pick (what ``time_us`` reports) is never faster than it."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    sizes = 2.0 ** np.arange(3, 34, 3)
    group = Group(fabric, np.arange(32))
    algorithms = collective_algorithms()
    auto = predict(group, "all_reduce", sizes, algorithms)
    for name in ("ring", "tree", "nvlstree"):
        forced = predict(group, "all_reduce", sizes, algorithms, algo=name)
        assert np.all(auto.best_time_us <= forced.time_us + 1e-9)
    assert np.all(auto.best_time_us <= auto.time_us + 1e-9)
    assert len(set(auto.algorithm)) > 1  # small sizes and large sizes differ


def test_nvls_only_where_the_switch_reduces_and_env_can_disable_it(catalog, mini):
    """NVLS runs on a Hopper NVSwitch node, never on A100; NCCL_NVLS_ENABLE=0 removes it."""
    from fabricui.hwdb.resolve import resolve_topology

    ALL = collective_algorithms()

    h100 = build_fabric(resolve_topology("dgx-h100", catalog), catalog)
    a100 = build_fabric(resolve_topology("dgx-a100", catalog), catalog)
    big = [2.0**30]
    assert (
        evaluate_collective(h100, "all_reduce", big, algorithms=ALL).algorithm[0].startswith("nvls")
    )
    assert (
        not evaluate_collective(a100, "all_reduce", big, algorithms=ALL)
        .algorithm[0]
        .startswith("nvls")
    )
    off = collective_algorithms({"NCCL_NVLS_ENABLE": "0"})
    assert not any(a.name.startswith("nvls") for a in off)
    with pytest.raises(EngineError, match="no algorithm can run"):
        evaluate_collective(a100, "all_reduce", big, algorithms=ALL, algo="nvls")


def test_inputs_scalar_array_empty_and_bad(mini):
    """Scalar and array sizes work, empty gives empty, NaN/negative/unknown op are errors."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    assert evaluate_collective(fabric, "all_reduce", 1024).time_us.shape == (1,)
    assert evaluate_collective(fabric, "all_reduce", [8, 16]).time_us.shape == (2,)
    assert evaluate_collective(fabric, "all_reduce", []).time_us.shape == (0,)
    for bad in ([float("nan")], [-1]):
        with pytest.raises(EngineError, match="finite and not negative"):
            evaluate_collective(fabric, "all_reduce", bad)
    with pytest.raises(EngineError, match="unknown collective"):
        evaluate_collective(fabric, "allreduce", [8])
    with pytest.raises(EngineError, match="unknown algorithm 'ringg'"):
        evaluate_collective(fabric, "all_reduce", [8], algo="ringg")


def test_time_grows_with_size_and_latency_floor(mini):
    """Time is positive, non-decreasing in size, and small messages cost about the latency."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    sizes = 2.0 ** np.arange(0, 35)
    t = evaluate_collective(fabric, "all_reduce", sizes).time_us
    assert np.all(t > 0) and np.all(np.diff(t) >= -1e-9)
    assert t[0] == pytest.approx(t[3], rel=0.05)


def test_one_rank_copies_its_buffer_whatever_the_op_or_nccl_algo(mini):
    """NCCL runs no algorithm on one rank: it copies the send buffer into the receive buffer
    at the GPU's memory rate (read and write). Mini H100: 3350 GB/s x 0.84 (default
    efficiency) / 2 = 1407 GB/s, so 1 GiB takes 2.1 + 1073741824 / 1407e3 = 765.24 us; 8 B
    only the launch."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    for op in ("all_reduce", "all_gather", "broadcast", "send_recv", "all_to_all"):
        for env in (None, {"NCCL_ALGO": "tree"}):
            pred = evaluate_collective(fabric, op, [8, 2**30], ranks=[0], nccl_env=env)
            assert pred.time_us == pytest.approx([2.1, 765.24], abs=0.01)
            assert pred.algorithm == ("copy/simple", "copy/simple")
            assert pred.choice is not None and pred.choice.env == ({}, {})
    with pytest.raises(EngineError, match="unknown algorithm 'ringg'"):
        evaluate_collective(fabric, "all_reduce", [8], ranks=[0], algo="ringg")


def test_an_algorithm_that_does_not_run_the_op_is_named(mini):
    """Asking for ring on send/recv names the algorithms that run it."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    with pytest.raises(EngineError, match=r"algorithm ring does not run send_recv .*p2p"):
        evaluate_collective(fabric, "send_recv", [8], algo="ring")


def test_one_process_driving_a_node_sets_a_floor_not_a_surcharge(mini):
    """One thread issuing on 8 GPUs takes launch + 8 * per-GPU issue (2.1 + 8 * 4.2 = 35.7
    us; an all-to-all also posts 7 peers per GPU: 2.1 + 8 * (4.2 + 7 * 1.0) = 91.7 us). The
    GPUs run one iteration while the thread issues the next, so a small all-reduce and a
    small reduce both take the floor, and a large one takes what one process per GPU takes."""
    from fabricui.engine.collectives import issue_floor_us

    fabric = build_fabric(mini.topologies["pod"], mini)
    one = Group(fabric, np.arange(8), single_process=True)
    each = Group(fabric, np.arange(8))
    assert issue_floor_us(one, "all_reduce") == pytest.approx(35.7)
    assert issue_floor_us(one, "all_to_all") == pytest.approx(91.7)
    assert issue_floor_us(each, "all_reduce") == 0.0
    algorithms = collective_algorithms()
    sizes = [8.0, 2.0**32]
    for op in ("all_reduce", "reduce", "all_to_all"):
        driven = predict(one, op, sizes, algorithms).time_us
        alone = predict(each, op, sizes, algorithms).time_us
        assert driven[0] == pytest.approx(issue_floor_us(one, op)) and alone[0] < driven[0]
        assert driven[1] == pytest.approx(alone[1])


def test_threads_driving_part_of_a_node_issue_side_by_side(mini):
    """nccl-tests ``-g 2`` with four processes on an 8-GPU node: each thread issues on its
    own 2 GPUs, at the same time as the others, so the floor is 2.1 + 2 * 4.2 = 10.5 us, not
    the 35.7 of one thread for all 8; a count above the node's is the whole node."""
    from fabricui.engine.collectives import issue_floor_us

    fabric = build_fabric(mini.topologies["pod"], mini)
    pairs = Group(fabric, np.arange(8), single_process=True, gpus_per_thread=2)
    assert pairs.ranks_per_thread == 2
    assert issue_floor_us(pairs, "all_reduce") == pytest.approx(10.5)
    assert issue_floor_us(pairs, "all_to_all") == pytest.approx(2.1 + 2 * (4.2 + 7 * 1.0))
    whole = Group(fabric, np.arange(8), single_process=True, gpus_per_thread=64)
    assert issue_floor_us(whole, "all_reduce") == pytest.approx(35.7)
    apart = Group(fabric, np.arange(8), gpus_per_thread=2)  # one process per GPU
    assert issue_floor_us(apart, "all_reduce") == 0.0


def test_one_thread_writes_a_work_element_per_channel_and_gpu(catalog, h100_box):
    """One thread issuing on 8 GPUs writes each call's work per channel: a call NCCL runs on
    nc channels takes at least 2.1 + 8 * (4.2 + 0.21 * (nc - 1)) us (37.38 on 2 channels,
    74.34 on 24), which is the time of a mid-size all-reduce whose GPUs finish sooner; NCCL's
    pick is unchanged, and one process per GPU pays no such floor."""
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import YamlDocument

    box = {**h100_box, "gpu": "a100-sxm4-40gb", "intra": {"fabric": "nvswitch", "link": "nvlink3"}}
    spec = parse_topology(YamlDocument(data=box, origin="test"), catalog, default_id="a100")
    fabric = build_fabric(spec, catalog)
    sizes = [2.0**16, 2.0**20]
    algorithms = collective_algorithms()
    driven = predict(
        Group(fabric, np.arange(8), single_process=True), "all_reduce", sizes, algorithms
    )
    alone = predict(Group(fabric, np.arange(8)), "all_reduce", sizes, algorithms)
    assert driven.choice.nccl.channels == alone.choice.nccl.channels == (2, 24)
    assert driven.time_us.tolist() == pytest.approx([37.38, 74.34])
    assert (alone.time_us < driven.time_us).all()


def test_core_algorithms_declare_ops():
    """Every core algorithm names its operations and protocols."""
    for alg in core_algorithms():
        assert alg.ops and alg.protocols and alg.name
    assert "all_reduce" in Ring.ops and Tree.ops == ("all_reduce",)


def test_sharp_needs_it_enabled(mini):
    """SHARP only when the spec enables it on reducing switches; then it is the fastest,
    and NCCL runs it once NCCL_COLLNET_ENABLE=1 turns CollNet on (off by default)."""
    ALL = collective_algorithms()
    spec = mini.topologies["fat-tree"]
    plain = build_fabric(spec, mini)
    sharp = build_fabric(replace(spec, net=replace(spec.net, sharp=True)), mini)
    big = [2.0**32]
    with pytest.raises(EngineError):
        evaluate_collective(plain, "all_reduce", big, algorithms=ALL, algo="sharp")
    default = evaluate_collective(sharp, "all_reduce", big, algorithms=ALL)
    assert default.best_algorithm[0] == "sharp/simple"
    assert default.algorithm[0] != "sharp/simple"
    assert default.choice.env[0]["NCCL_COLLNET_ENABLE"] == "1"
    enabled = evaluate_collective(
        sharp, "all_reduce", big, algorithms=ALL, nccl_env={"NCCL_COLLNET_ENABLE": "1"}
    )
    assert enabled.algorithm[0] == "sharp/simple"
    assert isinstance(spec.net, NetSpec)


def test_deep_tree_pays_its_pipeline_fill_per_extra_level():
    """512 nodes: 18 network steps, 16 beyond the first level; 1 MiB over 4 channels in LL
    chunks of 16 KiB adds 16 * 16 KiB * 4 = 1 MiB of fill. Two nodes add nothing."""
    from fabricui.engine.algorithms import tree_fill_bytes

    sizes = np.array([2.0**20, 64.0])
    assert tree_fill_bytes(sizes, "ll", 18.0, 4).tolist() == [2.0**20, 16 * 64.0]
    # Simple chunks are 512 KiB: a 1 GiB message fills with 16 * 512 KiB * 4 = 32 MiB.
    assert tree_fill_bytes(np.array([2.0**30]), "simple", 18.0, 4)[0] == 32 * 2**20
    assert tree_fill_bytes(sizes, "ll", 2.0, 4).tolist() == [0.0, 0.0]


def test_host_staged_all_to_all_is_limited_by_staging_not_channels(mini):
    """Without PCIe P2P the copies through host memory bound an all-to-all as they bound an
    all-gather (the same staging efficiency); with P2P, point-to-point pays its channel
    efficiency instead."""
    from fabricui.engine.algorithms import Direct

    staged = Group(build_fabric(mini.topologies["pcie-noP2P"], mini), np.arange(2))
    direct = Direct()
    raw = direct._raw_spb(staged, "all_to_all")
    assert direct.spb(staged, "all_to_all") == pytest.approx(raw / DEFAULT.pcie_no_p2p_efficiency)
    p2p = Group(build_fabric(mini.topologies["pcie-box"], mini), np.arange(2))
    raw = direct._raw_spb(p2p, "all_to_all")
    assert direct.spb(p2p, "all_to_all") == pytest.approx(raw / DEFAULT.p2p_efficiency)


def _two_node(catalog, gpu: str, link: str = "efa", nic: str | None = None):
    from fabricui.model import IntraSpec, TopologySpec

    spec = TopologySpec(
        id="t",
        gpu=gpu,
        nodes=2,
        gpus_per_node=8,
        intra=IntraSpec(fabric="nvswitch", link="nvlink3" if "a100" in gpu else "nvlink4"),
        net=NetSpec(link=link, gbps=100, nics_per_node=4, nic=nic),
    )
    return build_fabric(spec, catalog)


def test_first_generation_efa_carries_only_simple_across_nodes(catalog):
    """An `efa` network on A100 nodes is p4d's first-generation EFA: aws-ofi-nccl forces the
    Simple protocol there, so even 8 B crosses nodes with Simple; H100 nodes (p5) keep LL."""
    p4d = _two_node(catalog, "a100-sxm4-80gb")
    assert p4d.net_protocols == ("simple",)
    cross = evaluate_collective(p4d, "all_reduce", [8.0, 2.0**30])
    assert all(a.endswith("/simple") for a in cross.algorithm)
    inside = evaluate_collective(p4d, "all_reduce", [8.0], ranks=np.arange(8))
    assert not inside.algorithm[0].endswith("/simple")  # within a node NVLink carries LL
    p5 = _two_node(catalog, "h100-sxm")
    assert p5.net_protocols == ()
    assert evaluate_collective(p5, "all_reduce", [8.0]).algorithm[0].endswith("/ll")
    # naming the NIC overrides the pairing
    assert _two_node(catalog, "a100-sxm4-80gb", nic="efa-v2").net_protocols == ()
    # asking only for protocols the NICs cannot carry is an error, not a silent LL price
    with pytest.raises(EngineError, match="no protocol"):
        predict(
            Group(p4d, np.arange(16)), "all_reduce", [8.0], core_algorithms(), protocols=("ll",)
        )
