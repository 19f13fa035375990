"""NCCL's own tuning model: tables against a real NCCL log, picks, releases and environment.

The references are rank 0's tuning tables and choice lines that NCCL 2.30.4 printed on an
8x H200 node and NCCL 2.29.2 on 2 and 6 GPUs of an 8x H100 node (tests/data/nccl_tuning/,
source URLs in the files): every latency and bandwidth the model computes must equal NCCL's
to the printed 0.1.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fabricui.engine.collectives import predict
from fabricui.engine.group import Group
from fabricui.engine.nccl.env import enabled_list, read_env
from fabricui.engine.nccl.picks import NcclSettings, choose
from fabricui.engine.nccl.releases import (
    ALGORITHMS,
    NEWEST,
    PROTOCOL_ENV_NAMES,
    RELEASES,
    release_for,
)
from fabricui.engine.nccl.search import search
from fabricui.engine.nccl.tuner import TUNED_OPS, tune
from fabricui.engine.nccl.view import NcclView
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument
from fabricui.importers.nccl_log import read_nccl_log
from fabricui.services.session import collective_algorithms
from fabricui.vocabulary import PROTOCOLS

H200_LOG = Path(__file__).parents[1] / "data" / "nccl_tuning" / "h200_8gpu_nccl_2_30_4_tuning.log"


@pytest.fixture(scope="module")
def h200(catalog):
    """One HGX H200 node's eight GPUs."""
    fabric = build_fabric(resolve_topology("hgx-h200", catalog), catalog)
    return Group(fabric, np.arange(8), library_version=(2, 30, 4))


def tuning_of(group, op, version=None, env=None, policy=True):
    settings = NcclSettings.of(version or group.library_version, env or {})
    view = NcclView.of(group, settings.release, settings.env)
    graphs = search(view, settings.release, settings.env)
    return tune(view, graphs, settings.release, settings.env, op, policy=policy)


def test_h200_table_equals_nccl_2_30_4s_own(h200):
    """Every (collective, algorithm, protocol) latency and bandwidth NCCL 2.30.4 printed for
    8x H200 is the model's, to the 0.1 NCCL prints (105 cells, zeros included)."""
    log = read_nccl_log(H200_LOG)
    assert log.version == "2.30.4" and len(log.tuning) == 105
    assert_table_is_nccls(h200, log)


def assert_table_is_nccls(group, log, skip=()):  # type: ignore[no-untyped-def]
    """The model's table for ``group`` equals the one ``log`` printed, cell by cell."""
    for op in TUNED_OPS:
        tuning = tuning_of(group, op)
        for a, algorithm in enumerate(ALGORITHMS):
            for p, protocol in enumerate(PROTOCOLS):
                if (op, algorithm, protocol) in skip:
                    continue
                lat, bw = log.tuning[(op, algorithm, protocol)]
                got = (round(tuning.lat_us[a, p], 1), round(tuning.bw_GBps[a, p], 1))
                assert got == (lat, bw), (op, algorithm, protocol)


#: 2 and 6 of an 8x H100 NVSwitch node, NCCL 2.29.2: rank 0's tuning table and the choice
#: per size (tests/data/nccl_tuning/, source URLs in the files).
H100_SUBSET_LOGS = {
    2: H200_LOG.parent / "h100_2of8_nccl_2_29_2_tuning.log",
    6: H200_LOG.parent / "h100_6of8_nccl_2_29_2_tuning.log",
}
#: NCCL's search gives a two-GPU tree more bandwidth than its NVLink port carries for the
#: twelve channels it must match the ring with (tree all-reduce bandwidth 1.4x the model's;
#: the model keeps the port's limit).
TWO_GPU_TREE = {("all_reduce", "tree", p) for p in PROTOCOLS}


@pytest.mark.parametrize("gpus", sorted(H100_SUBSET_LOGS))
def test_h100_subset_tables_and_picks_are_nccl_2_29_2s(catalog, gpus, h100_box):
    """Part of an H100 node: NCCL's 105 cells (but the two-GPU tree's bandwidth), and its
    pick per size: ring/Simple on 24 channels for 2 GPUs, NVLS/Simple on 16 for 6."""
    spec = parse_topology(YamlDocument(data=h100_box, origin="test"), catalog, default_id="box")
    group = Group(build_fabric(spec, catalog), np.arange(gpus), library_version=(2, 29, 2))
    log = read_nccl_log(H100_SUBSET_LOGS[gpus])
    assert log.version == "2.29.2" and len(log.tuning) == 105
    assert_table_is_nccls(group, log, TWO_GPU_TREE if gpus == 2 else ())
    sizes = np.array([c.size_bytes for c in log.choices], dtype=float)
    choice = predict(group, "all_reduce", sizes, collective_algorithms()).choice
    assert [(c.algorithm, c.protocol, c.channels) for c in log.choices] == list(
        zip(choice.nccl.nccl_algorithm, choice.nccl.protocol, choice.nccl.channels)
    )


def test_h200_picks_and_channels_are_nccls(h200):
    """NCCL logged ring/LL on one channel at 4 B and NVLS/Simple on its 16 NVLS channels at
    4 MiB: the model picks the same."""
    log = read_nccl_log(H200_LOG)
    sizes = np.array([c.size_bytes for c in log.choices], dtype=float)
    prediction = predict(h200, "all_reduce", sizes, collective_algorithms())
    choice = prediction.choice
    for j, logged in enumerate(log.choices):
        assert choice.nccl.nccl_algorithm[j] == logged.algorithm
        assert choice.nccl.protocol[j] == logged.protocol
        assert choice.nccl.channels[j] == logged.channels


def test_channels_of_every_pair_by_hand(h200):
    """A tree/LL channel per 512 threads x 8 bytes; a ring's LL threshold times its 8 ranks;
    Simple's 64 bytes a thread; NVLS on all its channels whatever the size."""
    tuning = tuning_of(h200, "all_reduce")
    most, nvls = tuning.graphs.channels, tuning.graphs.nvls_channels
    sizes = np.array([1.0, 8192.0, 65536.0, 2.0**30])
    table = tuning.channels(sizes)
    assert table.shape == (len(ALGORITHMS), len(PROTOCOLS), 4)
    tree, ring = ALGORITHMS.index("tree"), ALGORITHMS.index("ring")
    ll, simple = PROTOCOLS.index("ll"), PROTOCOLS.index("simple")
    assert table[tree, ll].tolist() == [1, 2, min(16, most), most]
    assert table[ring, ll].tolist() == [1, 1, 2, most]  # 4096 x 8 ranks a channel
    assert table[ring, simple].tolist() == [1, 1, 2, most]  # 512 x 64 bytes a channel
    assert (table[ALGORITHMS.index("nvls")] == nvls).all()


def h100_view(nodes: int, **extra) -> NcclView:
    """NCCL's view of ``nodes`` HGX H100 servers (8 GPUs, 18 NVLinks x 20.6 GB/s, PCIe Gen5,
    one 400G NIC per GPU across nodes)."""
    return NcclView(
        n_ranks=8 * nodes, n_nodes=nodes, ppn=8, compute_capability=90, intra="nvswitch",
        gpu_nvlink_GBps=370.8, gpu_nvlink_total_GBps=370.8, pci_GBps=48.0, sockets=2,
        nic_GBps=50.0, nics=8 if nodes > 1 else 0, nic_path="PIX", cpu="intel", nvls=True,
        nvswitch=True, collnet=False, net_device_host=True, **extra,
    )  # fmt: skip


def test_single_node_h100_search_matches_nccl():
    """Hand: an 8x H100 node (18 NVLinks x 20.6 GB/s = 370.8) fits 6 ring channels at
    60 GB/s, doubled to 12 at 30; NVLS seats all 8 GPUs as heads at 40 GB/s ((8 + 1) x 40 <=
    370.8) with the fan-out raised to 60; NCCL then runs 24 collective channels."""
    view = h100_view(nodes=1)
    graphs = search(view, NEWEST, read_env({}))
    assert (graphs.ring.channels, graphs.ring.bw_intra_GBps) == (12, 30.0)
    assert (graphs.nvls.channels, graphs.nvls.bw_intra_GBps, graphs.nvls.bw_inter_GBps) == (
        8,
        40.0,
        60.0,
    )
    assert graphs.channels == 24 and graphs.nvls_channels == 16


def test_two_h100_nodes_search_one_nic_per_channel():
    """Hand: 8 NICs of 50 GB/s behind PCIe Gen5 (48): 8 ring channels at 48 GB/s (8 x 48 =
    384 >= 370.8, the search's target), not doubled (Hopper, below 50 GB/s, more than 4);
    NCCL duplicates them to 16 runtime channels."""
    view = h100_view(nodes=2)
    graphs = search(view, NEWEST, read_env({}))
    assert (graphs.ring.channels, graphs.ring.bw_inter_GBps) == (8, 48.0)
    assert (graphs.nvls.channels, graphs.nvls.bw_intra_GBps, graphs.nvls.bw_inter_GBps) == (
        8,
        40.0,
        48.0,
    )
    assert graphs.channels == 16


def test_a_nic_behind_slower_pcie_carries_what_its_link_does():
    """Hand: one L40S per node (PCIe Gen4, 24 GB/s) and a 400G port (50 GB/s): each channel
    takes 24 GB/s from the GPU-to-NIC path's PCIe links, so one fits (1 x 24 >= the GPU's
    24, the search's target), not 50 // 24 = 2; below 25 GB/s it is not doubled. NCCL's
    Simple then overtakes LL by 1 MiB (2 x 1 MiB / 24 > 1 MiB / 24 + the latency gap), as
    the measured run switches there (nccl-tests over NET/Socket, 2.27)."""
    view = replace(
        h100_view(nodes=2), n_ranks=2, ppn=1, compute_capability=89, intra="none",
        gpu_nvlink_GBps=0.0, gpu_nvlink_total_GBps=0.0, pci_GBps=24.0, sockets=1, nics=1,
        nic_path="PHB", nvls=False, nvswitch=False,
    )  # fmt: skip
    env = read_env({"NCCL_ALGO": "ring"})
    graphs = search(view, NEWEST, env)
    assert (graphs.ring.channels, graphs.ring.bw_inter_GBps) == (1, 24.0)
    times = tune(view, graphs, NEWEST, env, "all_reduce").times_us(np.array([2.0**19, 2.0**20]))
    ring = times[ALGORITHMS.index("ring")]
    ll, simple = PROTOCOLS.index("ll"), PROTOCOLS.index("simple")
    assert ring[ll, 0] < ring[simple, 0] and ring[simple, 1] < ring[ll, 1]


def test_channel_bounds_from_the_environment(h200):
    """NCCL_MAX_NCHANNELS clamps the runtime channels, NCCL_MIN_NCHANNELS raises them; where
    NVLS runs, rings and trees run on at least its channels from 2.22 (connect.cc raises
    ``comm->nChannels`` to them and enqueue.cc starts from ``comm->nChannels``, where 2.21
    started from ``comm->collChannels``)."""
    release = NEWEST
    for env, expected in (
        ({}, 24),
        ({"NCCL_MAX_NCHANNELS": "4", "NCCL_NVLS_ENABLE": "0"}, 4),
        ({"NCCL_MAX_NCHANNELS": "4"}, 16),
        ({"NCCL_MIN_NCHANNELS": "32"}, 32),
    ):
        settings = read_env(env)
        view = NcclView.of(h200, release, settings)
        assert search(view, release, settings).channels == expected


def test_nvls_channels_follow_ctas_not_the_ring_bounds(h200):
    """NVLS runs NCCL_NVLS_NCHANNELS (16 by default on Hopper) between NCCL_MIN_CTAS and
    NCCL_MAX_CTAS; NCCL_MIN/MAX_NCHANNELS bound only rings and trees (src/graph/connect.cc),
    which then run on at least the NVLS channels; the CTA bounds bound both (src/init.cc,
    src/transport/nvls.cc)."""
    release = NEWEST
    for env, rings, nvls in (
        ({}, 24, 16),
        ({"NCCL_MAX_NCHANNELS": "4"}, 16, 16),
        ({"NCCL_MIN_NCHANNELS": "32"}, 32, 16),
        ({"NCCL_NVLS_NCHANNELS": "8"}, 24, 8),
        ({"NCCL_MAX_CTAS": "4"}, 4, 4),
        ({"NCCL_MIN_CTAS": "20"}, 24, 20),
        ({"NCCL_MIN_CTAS": "0", "NCCL_MAX_CTAS": "-1"}, 24, 16),
    ):
        settings = read_env(env)
        graphs = search(NcclView.of(h200, release, settings), release, settings)
        assert (graphs.channels, graphs.nvls_channels) == (rings, nvls), env


@pytest.mark.parametrize(
    ("version", "tag"),
    [
        ("2.18", "v2.18.3-1"),
        ("2.18.1", "v2.18.1-1"),
        ("2.21", "v2.21.5-1"),
        ("2.23.4-1 (uenv)", "v2.23.4-1"),
        ("2.27.3", "v2.27.3-1"),
        ("2.27", "v2.27.7-1"),
        ("2.28.8", "v2.28.7-1"),
        ("2.29.2+cuda13.1", "v2.29.2-1"),
        (None, "v2.30.7-1"),
        ((2, 40, 0), "v2.30.7-1"),
    ],
)
def test_release_lines(version, tag):
    """A version names the newest release line at or before it; a bare ``2.21`` that line's
    newest patch; none the newest release read."""
    assert release_for(version).tag == tag


@pytest.mark.parametrize(
    ("version", "gpus", "nvls"),
    [("2.26.2", 2, False), ("2.28.3", 2, False), ("2.28.7", 2, True), ("2.26.2", 3, True)],
)
def test_nvls_needs_three_gpus_before_2_28_7(catalog, h100_box, version, gpus, nvls):
    """``ncclNvlsInit`` leaves NVLink SHARP off for ``gpuCount <= 2`` up to 2.28.3 and for
    ``gpuCount < 2`` from 2.28.7: on two GPUs of an H100 box an older NCCL has no NVLS to
    pick, nor to force, so neither pick is NVLS."""
    from fabricui.engine.nccl.picks import nccl_graphs

    fabric = build_fabric(parse_topology(YamlDocument(data=h100_box, origin="x"), catalog), catalog)
    group = Group(fabric, np.arange(gpus), library_version=release_for(version).since)
    settings = NcclSettings.of(version, {"NCCL_NVLS_ENABLE": "1"})
    view, graphs = nccl_graphs(group, settings)
    assert view.nvls is nvls
    assert (graphs.nvls.channels > 0) is nvls
    if not nvls:
        result = predict(group, "all_reduce", [2.0**30], collective_algorithms())
        assert "nvls" not in (result.choice.nccl.algorithm[0], result.choice.best.algorithm[0])


def test_forcing_an_algorithm_nccl_does_not_run_here_fails_as_nccl_algo_does(catalog, h100_box):
    """``--algo nvls`` on two GPUs of an H100 box: NCCL 2.26 has no NVLS there, so the
    forced run fails in one line naming what NCCL does run; 2.29 runs it."""
    fabric = build_fabric(parse_topology(YamlDocument(data=h100_box, origin="x"), catalog), catalog)
    algorithms = collective_algorithms()
    old = Group(fabric, np.arange(2), library_version=(2, 26, 2))
    with pytest.raises(EngineError, match=r"NCCL 2.26.2 does not run nvls .* it runs ring, tree$"):
        predict(old, "all_reduce", [2.0**30], algorithms, algo="nvls")
    new = Group(fabric, np.arange(2), library_version=(2, 29, 2))
    assert predict(new, "all_reduce", [2.0**30], algorithms, algo="nvls").algorithm == (
        "nvls/simple",
    )


@pytest.mark.parametrize(("version", "nvls"), [("2.20.3", False), ("2.21.5", True)])
def test_nccl_2_20_has_no_nvls_on_a_multi_node_nvlink_clique(catalog, version, nvls):
    """2.20 turns NVLink SHARP off on a multi-node NVLink clique (``comm->MNNVL``): two
    trays of an NVL72 rack get none; separate nodes keep it (its ``nNodes > 1`` test runs
    before the nodes are counted)."""
    rack = build_fabric(resolve_topology("gb200-nvl72", catalog), catalog)
    two_trays = Group(rack, np.arange(8), library_version=release_for(version).since)
    assert NcclView.of(two_trays, release_for(version), read_env({})).nvls is nvls
    pod = build_fabric(resolve_topology("dgx-h100-pod", catalog), catalog)
    two_nodes = Group(pod, np.arange(16))
    assert NcclView.of(two_nodes, release_for(version), read_env({})).nvls


def test_releases_are_ordered_and_old_versions_refused():
    """Release lines are in order; NCCL before 2.18 or a non-version is one clear error."""
    assert [r.since for r in RELEASES] == sorted(r.since for r in RELEASES)
    with pytest.raises(EngineError, match="predates"):
        release_for("2.17.1")
    with pytest.raises(EngineError, match="not an NCCL version"):
        release_for("latest")


def test_tree_latency_history(h200):
    """Tree/Simple all-reduce on one H200 node: NCCL 2.21 charged 28 us per NVLink hop and
    no base (2 x 7 x 28 = 392), 2.23 on 8.4 + 2 x 7 x 4 = 64.4."""
    a, p = ALGORITHMS.index("tree"), PROTOCOLS.index("simple")
    assert tuning_of(h200, "all_reduce", "2.21").lat_us[a, p] == pytest.approx(392.0)
    assert tuning_of(h200, "all_reduce", "2.23").lat_us[a, p] == pytest.approx(64.4)


def test_nccl_lists_as_nccl_reads_them():
    """``^`` excludes, names are case-insensitive, 2.24+ takes ``collective:`` prefixes and
    refuses unknown names; 2.23 ignores them."""
    protos = PROTOCOL_ENV_NAMES
    new, old = release_for("2.24"), release_for("2.23")
    assert enabled_list("^LL128", "all_reduce", protos, new, "NCCL_PROTO") == {
        "ll": 1,
        "ll128": 0,
        "simple": 1,
    }
    assert enabled_list("simple", "all_reduce", protos, old, "NCCL_PROTO") == {
        "ll": 0,
        "ll128": 0,
        "simple": 1,
    }
    scoped = "LL,Simple;allreduce:^LL"
    assert enabled_list(scoped, "all_reduce", protos, new, "NCCL_PROTO")["ll"] == 0
    assert enabled_list(scoped, "all_gather", protos, new, "NCCL_PROTO")["ll"] == 1
    assert enabled_list("magic,simple", "all_reduce", protos, old, "NCCL_PROTO")["simple"] == 1
    with pytest.raises(EngineError, match="unknown name 'magic'"):
        enabled_list("magic", "all_reduce", protos, new, "NCCL_PROTO")
    with pytest.raises(EngineError, match="collective prefix"):
        enabled_list("ll;simple", "all_reduce", protos, new, "NCCL_PROTO")
    assert enabled_list(None, "all_reduce", protos, new, "NCCL_PROTO") is None
    with pytest.raises(EngineError, match="not an integer"):
        read_env({"NCCL_MAX_NCHANNELS": "many"})


def test_nccl_algo_forces_the_pick_and_the_best_says_how(h200):
    """With NCCL_ALGO=Tree NCCL runs a tree at every size; the best pick is faster, and its
    environment names the algorithm and protocol scoped to all-reduce (2.24+)."""
    sizes = np.array([2.0**12, 2.0**30])
    prediction = predict(
        h200,
        "all_reduce",
        sizes,
        collective_algorithms(),
        nccl=NcclSettings.of("2.30.4", {"NCCL_ALGO": "tree"}),
    )
    assert set(prediction.choice.nccl.algorithm) == {"tree"}
    assert np.all(prediction.best_time_us <= prediction.time_us)
    big = prediction.choice.env[1]
    assert big["NCCL_ALGO"].startswith("allreduce:") and big["NCCL_PROTO"].startswith("allreduce:")


def test_nothing_left_to_run_is_an_error(h200):
    """NCCL_PROTO=LL with NCCL_ALGO=NVLS leaves nothing (NVLS is Simple only): NCCL 2.24+
    fails, and so does the model, naming the settings."""
    with pytest.raises(EngineError, match="no algorithm/protocol left"):
        tuning_of(h200, "all_reduce", "2.30.4", {"NCCL_ALGO": "NVLS", "NCCL_PROTO": "LL"})


def test_gpus_without_nccl_take_the_fastest(catalog):
    """AMD GPUs run RCCL, whose tuner is not modelled: its pick is the fastest, said so."""
    fabric = build_fabric(resolve_topology("mi300x-node", catalog), catalog)
    group = Group(fabric, np.arange(8))
    prediction = predict(group, "all_reduce", [2.0**20], collective_algorithms())
    assert prediction.choice.library.startswith("RCCL")
    assert prediction.time_us[0] == prediction.best_time_us[0]


def test_rccl_reads_nccl_algo_and_proto_and_other_libraries_say_they_do_not(run_cli):
    """RCCL keeps NCCL's environment: NCCL_ALGO=tree and NCCL_PROTO=Simple narrow its pick
    (an algorithm it does not run here is one line); a TPU's library does not read them,
    and the title says so."""
    base = ("collective", "all_reduce", "8", "1G", "-t", "mi300x-node", "--json")
    rows = {}
    for setting in (None, "NCCL_ALGO=tree", "NCCL_PROTO=Simple"):
        argv = base + (("--env", setting) if setting else ())
        status, out, err = run_cli(*argv)
        assert status == 0, err
        rows[setting] = [
            (r["nccl_pick"]["algorithm"], r["nccl_pick"]["protocol"])
            for r in json.loads(out)["rows"]
        ]
    assert rows[None] == [("ring", "ll"), ("ring", "simple")]
    assert {a for a, _ in rows["NCCL_ALGO=tree"]} == {"tree"}
    assert {p for _, p in rows["NCCL_PROTO=Simple"]} == {"simple"}
    status, out, err = run_cli(*base, "--env", "NCCL_ALGO=nvls")
    assert (status, out) == (2, "") and "RCCL runs nothing NCCL_ALGO/NCCL_PROTO allow" in err
    status, out, err = run_cli(
        "collective", "all_reduce", "1G", "-t", "tpu-v6e-256", "--env", "NCCL_ALGO=tree"
    )
    assert status == 0 and "NCCL settings do not apply" in out.splitlines()[0]


def test_choose_reports_ll128_risk_where_nccl_leaves_it_off(catalog):
    """Two GH200 quads on NCCL 2.23: LL128 to a Grace's NIC is off by default, so NCCL never
    runs it; where the engine finds LL128 fastest, the best pick says the risk."""
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import YamlDocument

    hardware = {
        "gpu": "gh200", "nodes": 2, "gpus_per_node": 4,
        "intra": {"fabric": "mesh", "link": "nvlink4", "links_per_pair": 6, "sockets": 4,
                  "host_link": "nvlink-c2c"},
        "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 4},
    }  # fmt: skip
    spec = parse_topology(YamlDocument(data=hardware, origin="t"), catalog, default_id="t")
    group = Group(build_fabric(spec, catalog), np.arange(8), library_version=(2, 23, 4))
    sizes = 2.0 ** np.arange(10, 31, 2)
    physical = {}
    for alg in collective_algorithms():
        if "all_reduce" in alg.ops and alg.applicable(group, "all_reduce"):
            for proto in alg.protocols:
                physical[(alg.name, proto)] = np.asarray(
                    alg.time_us(group, "all_reduce", sizes, proto)
                )
    choice = choose(group, "all_reduce", sizes, physical, NcclSettings.of((2, 23, 4)))
    assert "ll128" not in choice.nccl.protocol
    risky = [j for j, p in enumerate(choice.best.protocol) if p == "ll128"]
    assert risky and all("corrupt data" in choice.caution[j] for j in risky)


def test_plugin_reported_network_latency_joins_every_network_step():
    """Hand: 2 nodes of 8 H100; the plugin reports 75 us (aws-ofi-nccl on p5). NCCL adds it
    to each network step of its model and once more on Simple: a tree crosses
    2 log2(2) = 2 steps (LL +150 us, Simple +300), a ring all-reduce 2 (2 - 1) = 2 (LL
    +150, Simple +300), NVLS with trees 2 log2(2) = 2 on Simple (+300)."""
    env = read_env({})
    plain = h100_view(nodes=2)
    graphs = search(plain, NEWEST, env)
    before = tune(plain, graphs, NEWEST, env, "all_reduce").lat_us
    after = tune(h100_view(nodes=2, net_latency_us=75.0), graphs, NEWEST, env, "all_reduce")
    after = after.lat_us
    a = {name: i for i, name in enumerate(ALGORITHMS)}
    p = {name: i for i, name in enumerate(PROTOCOLS)}
    for algo, proto, extra in (
        ("tree", "ll", 150.0),
        ("tree", "simple", 300.0),
        ("ring", "ll", 150.0),
        ("ring", "simple", 300.0),
        ("nvls_tree", "simple", 300.0),
    ):
        i, j = a[algo], p[proto]
        assert after[i, j] - before[i, j] == pytest.approx(extra)


def test_ofi_net_latency_replaces_the_plugins_platform_figure(catalog):
    """aws-ofi-nccl reports 35 us on a p5en (hwdb ``nccl_latency_us``);
    ``OFI_NCCL_NET_LATENCY`` replaces it as the plugin reads it, on EFA only: NCCL's own IB
    transport reports 0 whatever the variable says."""
    efa = build_fabric(resolve_topology("aws-p5en-cluster", catalog), catalog)
    ib = build_fabric(resolve_topology("h100-ib-cluster", catalog), catalog)
    two_nodes = np.arange(16)

    def reported(fabric, env):
        settings = NcclSettings.of(None, env)
        return NcclView.of(Group(fabric, two_nodes), settings.release, settings.env)

    assert reported(efa, {}).net_latency_us == 35.0
    assert reported(efa, {"OFI_NCCL_NET_LATENCY": "20"}).net_latency_us == 20.0
    assert reported(ib, {"OFI_NCCL_NET_LATENCY": "20"}).net_latency_us == 0.0
    one_node = NcclSettings.of(None, {"OFI_NCCL_NET_LATENCY": "20"})
    assert NcclView.of(Group(efa, np.arange(8)), one_node.release, one_node.env).net_latency_us == 0


@pytest.mark.parametrize("value", ["fast", "-1", "inf"])
def test_a_bad_ofi_net_latency_is_refused_in_one_line(value):
    with pytest.raises(EngineError, match="OFI_NCCL_NET_LATENCY") as refused:
        read_env({"OFI_NCCL_NET_LATENCY": value})
    assert "\n" not in str(refused.value)
