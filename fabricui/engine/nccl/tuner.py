"""NCCL's own cost model: the time it predicts for every (algorithm, protocol) and its pick.

For one collective NCCL keeps, per algorithm and protocol, a fixed cost ``lat`` [us] and an
algorithm bandwidth ``bw`` [GB/s] (src/graph/tuning.cc ``ncclTopoTuneModel``); a call of
``S`` bytes is predicted to take ``lat + S / (1000 bw)`` with a few size-dependent
corrections (``ncclTopoGetAlgoTime``), and NCCL runs the cheapest enabled pair
(src/enqueue.cc ``topoGetAlgoInfo``), then trims its channels for small messages. This module
computes those tables from NCCL's view of the communicator (``view.py``), its search
(``search.py``) and a release's constants (``releases.py``), vectorized over sizes. It says
what NCCL *chooses*; the engine's physical model says how long that choice takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.constants import DEFAULT
from fabricui.engine.nccl.env import NcclEnv, algorithms_enabled, protocols_enabled
from fabricui.engine.nccl.releases import ALGORITHMS, Release
from fabricui.engine.nccl.search import Graphs
from fabricui.engine.nccl.view import NcclView, path_rank
from fabricui.errors import EngineError
from fabricui.vocabulary import PROTOCOLS

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

A = {name: i for i, name in enumerate(ALGORITHMS)}
P = {name: i for i, name in enumerate(PROTOCOLS)}
#: Collectives NCCL's tuner chooses for (all-to-all and send/recv are point-to-point).
TUNED_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
#: Threads per channel by protocol (NCCL_LL_MAX_NTHREADS, NCCL_LL128_MAX_NTHREADS,
#: NCCL_SIMPLE_MAX_NTHREADS; NCCL_MAX_NTHREADS for NVLS and CollNet) and bytes each thread
#: must have before a channel is added (NCCL_*_THREAD_THRESHOLD, src/include/comm.h).
MAX_THREADS = {"ll": 512, "ll128": 640, "simple": 512}
NVLS_COLLNET_THREADS = 640
THREAD_THRESHOLD = {"ll": 8, "ll128": 8, "simple": 64}
COLLNET_THREAD_THRESHOLD = 512
#: NCCL's PCI_BW [GB/s]: rings slower than this in total run 256 Simple threads.
PCI_BW = 12.0
#: Ring all-reduce across nodes pays its latency this much more once each channel moves
#: 64 bytes per rank (the ring's "plateau", Ampere+ and older), src/graph/tuning.cc.
RING_PLATEAU = (1.9, 1.4)


def trimmed_channels(
    size_bytes: float | FloatArray, per_channel_bytes: float | FloatArray, channels: int
) -> FloatArray:
    """Channels NCCL runs a message on: it drops channels until each thread has its
    threshold of bytes (src/enqueue.cc ``nBytes < nc * nt * threadThreshold``), so
    ``clip(floor(S / per_channel_bytes), 1, channels)``; all ``channels`` where
    ``per_channel_bytes`` is 0 (no threshold). Broadcasts sizes against thresholds.

    Args:
        size_bytes: Message sizes [bytes].
        per_channel_bytes: ``nt * threadThreshold`` per channel [bytes].
        channels: The channels NCCL has for it.
    """
    most = float(max(1, channels))
    per_channel = np.asarray(per_channel_bytes, dtype=np.float64)
    positive = per_channel > 0
    trimmed = np.floor(np.asarray(size_bytes) / np.where(positive, per_channel, 1.0))
    return np.minimum(np.maximum(np.where(positive, trimmed, most), 1.0), most)


def ll_channels(size_bytes: FloatArray, channels: int, chunks: int = 1) -> FloatArray:
    """(n_sizes,) channels NCCL runs an LL call of each size on (``trimmed_channels`` at
    LL's threads and threshold); a ring's threshold is scaled by its ranks, ``chunks``
    (1 for a tree)."""
    per_channel = float(MAX_THREADS["ll"] * THREAD_THRESHOLD["ll"] * max(1, chunks))
    return trimmed_channels(np.asarray(size_bytes, dtype=np.float64), per_channel, channels)


@dataclass(frozen=True)
class Tuning:
    """NCCL's tables for one collective on one communicator."""

    op: str
    """The collective."""
    lat_us: FloatArray
    """(7, 3) fixed cost per algorithm and protocol [us]."""
    bw_GBps: FloatArray
    """(7, 3) algorithm bandwidth [GB/s]; 0 where NCCL will not run the pair."""
    default_off: npt.NDArray[np.bool_]
    """(7, 3) pairs NCCL can run but leaves off unless told (LL128 beyond the paths it is
    validated on): forcing them is a risk NCCL itself warns of."""
    threads: IntArray
    """(7, 3) threads per channel before trimming."""
    thresholds: IntArray
    """(7, 3) bytes per thread before another channel is added."""
    graphs: Graphs
    """The search's graphs and runtime channels."""
    view: NcclView
    """NCCL's view of the communicator."""
    release: Release
    """The release modelled."""

    def times_us(self, size_bytes: FloatArray) -> FloatArray:
        """(7, 3, n_sizes) NCCL's predicted time of every pair [us]; inf where disabled.

        Notes:
            ``lat * k + S / (1000 bw)``; tree all-reduce (and NVLS+tree on Blackwell with
            x86 hosts from 2.29) bandwidth times the medium-size correction; ring Simple
            all-reduce across nodes ``k = 1.4`` (1.9 before Ampere) once
            ``S / (channels * ranks) >= 64``, else ``k = 1``.
        """
        sizes = np.asarray(size_bytes, dtype=np.float64)
        bw = np.broadcast_to(self.bw_GBps[:, :, None], (*self.bw_GBps.shape, sizes.shape[0]))
        bw = bw.copy()
        lat = np.broadcast_to(self.lat_us[:, :, None], bw.shape).copy()
        release, view = self.release, self.view
        with np.errstate(divide="ignore"):
            index = np.where(sizes >= 64, np.floor(np.log2(np.maximum(sizes, 1) / 64.0)), -1)
        corrected = (index >= 0) & (index < release.tree_correction_sizes)
        factors = np.ones((len(PROTOCOLS), sizes.shape[0]))
        for p, proto in enumerate(PROTOCOLS):
            table = np.asarray(DEFAULT.tree_size_efficiency[proto])
            picked = table[np.clip(index, 0, table.shape[0] - 1).astype(np.int64)]
            factors[p] = np.where(corrected, picked, 1.0)
        if self.op == "all_reduce":
            bw[A["tree"]] *= factors
            if (
                release.nvls_tree_correction
                and view.compute_capability >= 100
                and view.cpu != "arm"
            ):
                bw[A["nvls_tree"]] *= factors
            if view.n_nodes > 1:
                plateau = sizes / (self.graphs.channels * view.n_ranks) >= 64
                factor = RING_PLATEAU[view.compute_capability >= 80]
                lat[A["ring"], P["simple"]] *= np.where(plateau, factor, 1.0)
        with np.errstate(divide="ignore"):
            times = np.where(bw > 0, lat + sizes / (1000.0 * np.where(bw > 0, bw, 1.0)), np.inf)
        return times

    def channels(self, size_bytes: FloatArray) -> IntArray:
        """(7, 3, n_sizes) channels NCCL runs each pair with at each size: fewer for small
        messages, until each thread has its threshold of bytes (CollNet Direct's threshold
        counts every head; NVLS runs all its channels, at most the rings' across nodes)."""
        graphs = self.graphs
        per_channel = (self.threads * self.thresholds).astype(np.float64)
        per_channel[A["collnet_direct"]] *= max(1, graphs.collnet_direct.channels)
        trimmed = trimmed_channels(size_bytes, per_channel[:, :, None], graphs.channels)
        table = trimmed.astype(np.int64)
        nvls = graphs.nvls_channels
        table[A["nvls_tree"]] = max(1, nvls)
        table[A["nvls"]] = max(1, min(nvls, graphs.channels) if self.view.n_nodes > 1 else nvls)
        return table


def _ring_ll_share(release: Release, op: str, n_nodes: int) -> float:
    if not release.ring_ll_quarter:
        return 0.5
    return 0.25 if (n_nodes > 1 or op in ("all_reduce", "reduce")) else 1.0 / 3.0


def _nsteps(op: str, n: int) -> int:
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("all_gather", "reduce_scatter"):
        return n - 1
    return n


def _considered(release: Release, view: NcclView, op: str, algorithm: str, protocol: str) -> bool:
    """Whether NCCL computes a figure for the pair at all (before enabling rules)."""
    if op in ("broadcast", "reduce"):
        return algorithm == "ring"
    if op in ("all_gather", "reduce_scatter"):
        allowed = {"ring"}
        if release.nvls_gather_scatter:
            allowed.add("nvls")
        if release.since >= (2, 20, 0):
            allowed.add("collnet_direct")
        if release.pat_efficiency is not None:
            allowed.add("pat")
        if algorithm not in allowed:
            return False
    if op == "all_reduce" and algorithm == "pat":
        return False
    return not (algorithm in ("nvls", "nvls_tree", "pat") and protocol != "simple")


def _bus_bandwidth(
    release: Release, view: NcclView, graphs: Graphs, op: str, a: str, p: str
) -> float:  # noqa: E501
    """NCCL's bus bandwidth of one pair before the enable rules [GB/s]."""
    graph = graphs.of(a)
    if graph.channels == 0:
        return 0.0
    n_nodes = view.n_nodes
    ppn = view.n_ranks / n_nodes
    arch = view.arch_index if release.blackwell_rows else min(view.arch_index, 2)
    col = min(n_nodes, 3) - 1
    ll_row = arch if n_nodes == 1 else (1 if view.cpu == "amd" else 0)
    ll_max = release.ll_max_GBps[ll_row][col]
    collnet = a in ("collnet_direct", "collnet_chain")
    bw = graph.bw_intra_GBps if n_nodes <= 2 or collnet else graph.bw_inter_GBps
    if a in ("nvls", "nvls_tree"):
        if release.nvls_model == "2.28":
            if graph.channels < 2:
                return 0.0
            eff = (release.nvls_efficiency or (0.0, 0.0, 0.0, 0.0))[min(view.arch_index, 3)]
            intra = graph.bw_intra_GBps * eff * (graph.channels - 1) / graph.channels
            intra *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
            inter = graph.bw_inter_GBps * (2 if n_nodes <= 2 and a == "nvls_tree" else 1)
            cap = math.inf
            if a == "nvls_tree" and release.nvls_tree_cap_GBps is not None:
                cap = release.nvls_tree_cap_GBps[min(view.arch_index, 3)][col]
            bw = min(intra, inter, cap)
        elif release.nvls_model in ("2.19", "2.27"):
            if a == "nvls":
                if op != "all_reduce" and release.nvls_model == "2.27":
                    bw = min(graph.bw_intra_GBps * (ppn - 1) / ppn, graph.bw_inter_GBps * 0.9)
                else:
                    bw = min(graph.bw_intra_GBps, graph.bw_inter_GBps)
            else:
                inter = graph.bw_inter_GBps if n_nodes <= 2 else graph.bw_inter_GBps / 2
                bw = min(graph.bw_intra_GBps, inter)
    channels = graph.channels
    bus = channels * bw
    if a == "ring" and p == "ll":
        bus = min(ll_max, bus * _ring_ll_share(release, op, n_nodes))
    if a == "ring" and p == "ll128":
        share = 0.92
        if release.ring_ll128_one_rank_per_node is not None and ppn < 2:
            share = release.ring_ll128_one_rank_per_node
        bus = min(bus * share, channels * release.ring_ll128_cap_GBps[arch][col])
    if a == "tree" and op == "all_reduce":
        bus = min(bus * 0.92, channels * release.tree_cap_GBps[arch][col])
    if a == "tree" and p == "ll":
        bus = min(bus / 3.8, ll_max)
    if a == "tree" and p == "ll128":
        share = 7.0 / 9.0 if n_nodes == 1 else 120.0 / 128.0
        bus = min(bus * share, channels * release.tree_ll128_cap_GBps[arch][col])
    if a == "tree" and graph.pattern == "tree":
        bus *= 0.85
    if a == "pat":
        bus *= release.pat_efficiency or 0.0
    if collnet and p != "simple":
        return 0.0
    if a == "collnet_direct":
        if op in ("all_gather", "reduce_scatter"):
            return 0.0  # needs a CollNet plugin with all-gather/reduce-scatter (not modelled)
        factor = ppn / channels
        factor -= (factor - 1) / 2
        bus /= factor
        if view.compute_capability >= 90:
            bus *= 0.85
    if a == "nvls" and op in ("all_gather", "reduce_scatter") and n_nodes > 1:
        return 0.0  # across nodes only with a CollNet plugin that gathers and scatters
    return bus


def _algorithm_ratio(release: Release, view: NcclView, op: str, a: str) -> float:
    """Bus bandwidth to algorithm bandwidth (what the time divides by)."""
    gather = op in ("all_gather", "reduce_scatter")
    if release.since >= (2, 23, 0):
        if a != "ring" and gather:
            return 1.0
    elif release.since >= (2, 20, 0) and a == "collnet_direct" and gather:
        return 1.0
    n, nodes = view.n_ranks, view.n_nodes
    if a == "ring":
        return n / _nsteps(op, n)
    if a in ("nvls", "nvls_tree"):
        if release.nvls_model == "2.28":
            return n / _nsteps(op, n)
        if release.nvls_model == "2.18" and a == "nvls_tree":
            return 0.70 * nodes / (2 * (nodes - 1)) if nodes > 1 else 5.0 / 6.0
        return 5.0 / 6.0
    return 0.5


def _net_overhead_us(view: NcclView, env: NcclEnv) -> float:
    if env.net_overhead_us is not None:
        return env.net_overhead_us
    return 2.0 if view.cpu == "amd" else 1.0


def _latency(
    release: Release, view: NcclView, graphs: Graphs, env: NcclEnv, op: str, a: str, p: str
) -> float:  # noqa: E501
    """NCCL's fixed cost of one pair [us]."""
    ia, ip = A[a], P[p]
    n, nodes = view.n_ranks, view.n_nodes
    local = n // nodes
    nvlink, pci, net = release.hop_us
    intra_table = nvlink if view.intra_path == "NVL" else pci
    hop_table = intra_table if nodes == 1 else net
    lat = release.base_us[ia][ip]
    intra = intra_table[ia][ip]
    one_per_node = n == nodes and release.one_rank_tree_net_latency
    inter = net[A["tree"]][ip] if one_per_node else net[ia][ip]
    # The latency the network plugin reports (latencyInter: 0 for NCCL's IB, RoCE and
    # socket transports; aws-ofi-nccl's per EC2 platform on EFA) joins every network step,
    # and once more on Simple for the flush of received data.
    inter += view.net_latency_us * (2.0 if p == "simple" else 1.0)
    if a == "ring":
        hop = hop_table[ia][ip]
        steps = _nsteps(op, n)
        if op in ("broadcast", "reduce"):
            same_channels = nodes == 1
            if same_channels:
                return lat + hop
            if p == "simple":
                hop = hop_table[A["tree"]][ip]
            return lat + steps * hop
        if nodes > 1:
            overhead = _net_overhead_us(view, env) * (3 if p == "simple" else 1)
            intra = max(intra, overhead)
        if release.old_inter_steps:
            inter_steps = (2 * nodes if nodes > 1 else 0) if op == "all_reduce" else nodes - 1
        else:
            inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
        return lat + (steps - inter_steps) * intra + inter_steps * inter
    log_nodes = int(math.floor(math.log2(nodes))) if nodes > 0 else 0
    if a == "tree":
        if op == "all_reduce" or release.since < (2, 23, 0):
            lat += 2 * ((local - 1) * intra + log_nodes * inter)
        return lat
    if a == "collnet_direct":
        return (
            lat + 2 * (min(1, local - 1) * intra + (local - 1) * release.collnet_arity_us) + inter
        )
    if a == "collnet_chain":
        return lat + 2 * (local - 1) * intra + inter
    if a == "nvls":
        if release.nvls_model == "2.18":
            return lat + (net[ia][ip] if nodes > 1 else 0.0)
        return intra + (inter if nodes > 1 else 0.0)
    if a == "nvls_tree":
        if release.nvls_model == "2.18":
            return lat + 2 * (nodes - 1) * net[ia][ip]
        return lat + intra + 2 * log_nodes * inter
    if a == "pat":
        base = lat if lat > 0 else release.pat_base_us
        return base + log_nodes * (inter / 3.5) + n * 2.8
    return lat


def _ll128_default(release: Release, view: NcclView, env: NcclEnv) -> bool:
    """Whether NCCL turns LL128 on by default for this communicator."""
    cc = view.compute_capability
    inter = path_rank(view.nic_path) if view.n_nodes > 1 else path_rank("PIX")
    rule = release.ll128_network_rule
    if rule == "pxn":
        ok = inter <= path_rank("PXB") or (cc >= 90 and inter <= path_rank("PXN"))
    elif rule == "p2c":
        limit = "P2C" if env.ll128_c2c else "PXN"
        ok = inter <= path_rank("PXB") or (cc >= 90 and inter <= path_rank(limit))
    elif env.ll128_c2c and cc >= 90:
        ok = inter <= path_rank("PXN")
    else:
        ok = inter <= path_rank("PXB")
    ok = ok and path_rank(view.intra_path) <= path_rank("NVB")
    if view.mixed_gpus:
        ok = ok and release.ll128_mixed_hopper and cc >= 90
    if release.ll128_compute_caps is not None:
        ok = ok and cc in release.ll128_compute_caps
    return ok and cc >= 70


def _pat_enabled(release: Release, view: NcclView, env: NcclEnv) -> bool:
    if release.pat_efficiency is None:
        return False
    if release.since >= (2, 26, 0) and view.compute_capability < 60:
        return False
    if env.pat != 2:
        return bool(env.pat)
    return view.n_nodes == view.n_ranks and view.net_device_host


def tune(
    view: NcclView, graphs: Graphs, release: Release, env: NcclEnv, op: str, policy: bool = True
) -> Tuning:
    """NCCL's tables for ``op``.

    Args:
        view: NCCL's view of the communicator.
        graphs: The search's result.
        release: The release modelled.
        env: The run's NCCL settings.
        op: A collective NCCL tunes (``TUNED_OPS``).
        policy: False to keep what NCCL could run if told (LL128 beyond its validated
            paths, CollNet and NVLS when the hardware has them) and ignore NCCL_ALGO and
            NCCL_PROTO: the candidates a user could force.

    Raises:
        EngineError: From 2.24, NCCL_ALGO/NCCL_PROTO leave nothing to run (NCCL fails).
    """
    shape = (len(ALGORITHMS), len(PROTOCOLS))
    lat = np.zeros(shape)
    bw = np.zeros(shape)
    threads = np.zeros(shape, dtype=np.int64)
    thresholds = np.zeros(shape, dtype=np.int64)
    default_off = np.zeros(shape, dtype=bool)
    if view.n_ranks <= 1:
        return Tuning(op, lat, bw, default_off, threads, thresholds, graphs, view, release)
    ring = graphs.ring
    simple_ring_threads = 256 if ring.bw_intra_GBps * ring.channels <= PCI_BW else 512
    for a in ALGORITHMS:
        for p in PROTOCOLS:
            ia, ip = A[a], P[p]
            if a in ("nvls", "nvls_tree", "collnet_direct", "collnet_chain"):
                threads[ia, ip] = NVLS_COLLNET_THREADS
            elif a == "pat":
                threads[ia, ip] = 0
            else:
                threads[ia, ip] = MAX_THREADS[p]
            if a == "ring" and p == "simple":
                threads[ia, ip] = simple_ring_threads
            thresholds[ia, ip] = THREAD_THRESHOLD[p] * (
                view.n_ranks if a == "ring" and p == "ll" else 1
            )
            if a.startswith("collnet") and p == "simple":
                thresholds[ia, ip] = COLLNET_THREAD_THRESHOLD
            if not _considered(release, view, op, a, p):
                continue
            if a == "pat" and not _pat_enabled(release, view, env):
                continue
            bus = _bus_bandwidth(release, view, graphs, op, a, p)
            bw[ia, ip] = bus * _algorithm_ratio(release, view, op, a)
            lat[ia, ip] = _latency(release, view, graphs, env, op, a, p)
    _apply_enables(bw, default_off, release, view, env, op, policy)
    return Tuning(op, lat, bw, default_off, threads, thresholds, graphs, view, release)


def _apply_enables(
    bw: FloatArray,
    default_off: npt.NDArray[np.bool_],
    release: Release,
    view: NcclView,
    env: NcclEnv,
    op: str,
    policy: bool,
) -> None:
    """Zero the pairs NCCL will not run: its default rules, the hardware, the user's lists."""
    algos = algorithms_enabled(env, op, release) if policy else None
    protos = protocols_enabled(env, op, release) if policy else None
    backup = bw[A["ring"]].copy()
    for a in ALGORITHMS:
        ia = A[a]
        off = False
        if a == "nvls_tree" and view.n_nodes == 1:
            off = True
        if not view.collnet and (a.startswith("collnet") or (a == "nvls" and view.n_nodes > 1)):
            off = True
        if a == "collnet_direct" and not view.nvswitch:
            off = True
        if a.startswith("collnet") and (op != "all_reduce" or view.ppn > 8):
            off = True
        if a in ("nvls", "nvls_tree") and (not view.nvls or (op != "all_reduce" and view.ppn > 32)):
            off = True
        if algos is not None and not algos[a]:
            off = off or not (release.since < (2, 19, 0) and a == "ring" and op != "all_reduce")
        if off:
            bw[ia] = 0.0
    ll128 = _ll128_default(release, view, env)
    for p in PROTOCOLS:
        ip = P[p]
        if protos is not None and not protos[p]:
            bw[:, ip] = 0.0
            continue
        if p == "ll128" and (protos is None or not protos.get("ll128")) and not ll128:
            if policy:
                bw[:, ip] = 0.0
            else:
                default_off[:, ip] = bw[:, ip] > 0
    if policy and not (bw > 0).any():
        if (2, 19, 0) <= release.since < (2, 24, 0) and (backup > 0).any():
            bw[A["ring"]] = backup  # 2.19-2.23 fall back to the ring when nothing is left
        elif env.sets_choice:
            raise EngineError(
                f"NCCL {release.version}: no algorithm/protocol left for {op} "
                f"(NCCL_ALGO={env.algo or '-'}, NCCL_PROTO={env.proto or '-'}); NCCL would fail"
            )
