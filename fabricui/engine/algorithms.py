"""Core collective algorithms: ring, tree, and direct point-to-point.

Each algorithm states its flows per message byte; the group prices them on the fabric. The
latency term counts the algorithm's steps, each costing a protocol overhead plus the routed
path's latency (network steps add a network overhead).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from fabricui.engine.constants import DEFAULT, ModelConstants
from fabricui.engine.cxi import (
    idc_saving_us,
    ll_receive_bytes,
    receive_copy_us,
    software_matching,
    tree_receive_copies,
)
from fabricui.engine.group import Group
from fabricui.engine.nccl.picks import library_of
from fabricui.engine.nccl.tuner import MAX_THREADS, THREAD_THRESHOLD, trimmed_channels
from fabricui.engine.net_socket import sends_wait_for_receives
from fabricui.engine.ofi_proxy import channel_ops_us
from fabricui.engine.ring_overlap import cycle_steps, network_share
from fabricui.engine.types import CollectiveAlgorithm, FloatArray
from fabricui.fabric.fabric import IntArray
from fabricui.vocabulary import PROTOCOLS


def protocol_bandwidth_scale(
    group: Group,
    protocol: str,
    busbw_GBps: float | FloatArray,
    constants: ModelConstants = DEFAULT,
) -> float | FloatArray:
    """Multiplier (<= 1) on bandwidth for a protocol: wire efficiency and the LL ceiling.

    Args:
        group: The group.
        protocol: ``ll``, ``ll128`` or ``simple``.
        busbw_GBps: Bus bandwidth at full efficiency, one value or one per size [GB/s]
            (0: no ceiling).
        constants: Model constants.

    Returns:
        The multiplier: one value, or one per size where ``busbw_GBps`` has one per size.
    """
    efficiency = constants.protocol_efficiency[protocol]
    if protocol != "ll":
        return efficiency
    cap = (
        constants.ll_cap_GBps[group.arch_index]
        if group.n_nodes == 1
        else constants.ll_cap_multinode_GBps
    )
    busbw = np.asarray(busbw_GBps, dtype=np.float64)
    ceiling = np.divide(cap, busbw, out=np.full(busbw.shape, efficiency), where=busbw > 0)
    return np.minimum(efficiency, ceiling)[()]


#: Operations whose flows stage through host memory in both directions at once.
BIDIRECTIONAL = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


def staging_penalty(group: Group, op: str, constants: ModelConstants = DEFAULT) -> float:
    """1, or the host-memory staging efficiency when peer-to-peer is off on PCIe and both
    directions stage at once."""
    intra = group.fabric.spec.intra
    if intra.fabric == "pcie" and not intra.p2p and group.ppn > 1 and op in BIDIRECTIONAL:
        return constants.pcie_no_p2p_efficiency
    return 1.0


def tree_size_efficiency(
    sizes: FloatArray, protocol: str, constants: ModelConstants = DEFAULT
) -> FloatArray:
    """(n_sizes,) fraction of a tree's bandwidth reached at each size (medium sizes stall).

    NCCL corrects trees below 512 MiB only (table indices 0-22; its last entry serves
    NVLS+tree): from 512 MiB a tree runs at its full bandwidth.
    """
    table = np.asarray(constants.tree_size_efficiency[protocol])
    index = np.floor(np.log2(np.maximum(sizes, 64.0) / 64.0)).astype(np.int64)
    return np.where(
        index >= TREE_CORRECTED_SIZES, 1.0, table[np.clip(index, 0, table.shape[0] - 1)]
    )


#: Sizes (log2 of size / 64 B) that NCCL's tree correction covers: 64 B .. 256 MiB.
TREE_CORRECTED_SIZES = 23


#: Slots of a connection's buffer (``NCCL_STEPS`` in src/include/device.h, every release).
NCCL_STEPS = 8


def network_pipeline_fill_us(
    group: Group, net_latency_us: float | None = None, constants: ModelConstants = DEFAULT
) -> float:
    """The whole fill of a Simple pipeline across the group's network, ``NCCL_STEPS`` Simple
    network steps (``network_fill_us``) [us]; 0 over NET/Socket, whose sends do not wait for
    posted receives (``fabricui.engine.net_socket``)."""
    if not sends_wait_for_receives(group):
        return 0.0
    return NCCL_STEPS * step_latency_us(group, "simple", True, constants, net_latency_us)


def network_fill_us(
    sizes: FloatArray, channels: int, step_us: float, constants: ModelConstants = DEFAULT
) -> FloatArray:
    """(n_sizes,) time Simple spends filling its pipeline across the network [us].

    Across a network every Simple chunk is a proxy-posted RDMA write followed by its flag,
    and a connection reaches its rate once all ``NCCL_STEPS`` slots of its buffer are in
    flight: the pipeline fills over that many network steps, each ``step_us``. On two NDR
    nodes that is 8 x 16.5 us = 132 us; over EFA (33 us a step) and GPUDirect-TCPXO (67 us)
    the measured runs take 350-500 and 900 us more than their bandwidth before they reach
    it. A message smaller than one chunk on each of NCCL's channels fills the pipeline with
    smaller chunks and pays in proportion. Within a node GPUs signal each other directly,
    and the fill is part of the step costs. Over NCCL's NET/Socket transport a send goes
    into the TCP stream without waiting for a posted receive: no fill
    (``fabricui.engine.net_socket``; ``alpha_beta`` leaves it out).

    Args:
        sizes: (n_sizes,) message sizes [bytes].
        channels: Channels NCCL runs (``Group.nccl_channels``).
        step_us: One Simple step across the network (``step_latency_us``) [us].
        constants: Model constants.

    Notes:
        ``NCCL_STEPS * step_us * min(1, S / (chunk_bytes * channels))``.
    """
    full = constants.chunk_bytes["simple"] * max(1, channels)
    size = np.asarray(sizes, dtype=np.float64)
    return NCCL_STEPS * step_us * np.minimum(1.0, size / full)


def step_latency_us(
    group: Group,
    protocol: str,
    crosses_network: bool,
    constants: ModelConstants = DEFAULT,
    net_latency_us: float | None = None,
) -> float:
    """Cost of one algorithm step [us]: protocol overhead plus routed path latency (and, for
    a Simple step across the network, the receive's flush: ``Group.gdr_flush_us``).

    Args:
        group: The group.
        protocol: ``ll``, ``ll128`` or ``simple``.
        crosses_network: The step goes from one node to another.
        constants: Model constants.
        net_latency_us: Routed latency of a network step (default: between the first two
            nodes, ``Group.net_latency_us``).
    """
    if crosses_network:
        lat = group.net_latency_us if net_latency_us is None else net_latency_us
        flush = group.gdr_flush_us if protocol == "simple" else 0.0
        return constants.net_step_us[protocol] + lat + flush
    return constants.step_us[protocol] + group.intra_latency_us


def alpha_beta(
    group: Group,
    sizes: FloatArray,
    protocol: str,
    intra_steps: float,
    net_steps: float,
    spb,
    constants: ModelConstants = DEFAULT,
    fill_bytes: FloatArray | float = 0.0,
    pipelined: bool = True,
    net_latency_us: float | None = None,
) -> FloatArray:
    """``launch + base + steps + (S + fill) * spb / efficiency`` for every size [us].

    Args:
        group: The group.
        sizes: (n_sizes,) message sizes [bytes].
        protocol: ``ll``, ``ll128`` or ``simple``.
        intra_steps: Steps within a node.
        net_steps: Steps crossing the network.
        spb: Microseconds per message byte at full (Simple) efficiency (one value or one
            per size; LL's ceiling applies size by size).
        constants: Model constants.
        fill_bytes: Bytes' worth of time a pipeline spends filling (per size or one value).
        pipelined: False for algorithms that are not a pipeline of protocol steps (NVLS
            reduces in the switch): no protocol setup and no pipeline fill, only the launch
            and the steps.
        net_latency_us: Routed latency of one network step (default: between the first two
            nodes); a tree passes the mean hop of its slowest root-to-leaf path
            (``Group.tree_hop_latency_us``).
    """
    busbw: float | FloatArray = 0.0
    if protocol == "ll":  # only LL's ceiling reads the bus bandwidth
        per_byte = np.asarray(spb, dtype=np.float64) * 1e3
        busbw = np.divide(1.0, per_byte, out=np.zeros(per_byte.shape), where=per_byte > 0)
    scale = protocol_bandwidth_scale(group, protocol, busbw, constants)
    net_step_us = step_latency_us(group, protocol, True, constants, net_latency_us)
    fill: FloatArray | float = 0.0
    if protocol == "simple" and pipelined and net_steps > 0 and sends_wait_for_receives(group):
        fill = network_fill_us(sizes, group.nccl_channels, net_step_us, constants)
    alpha = (
        fill
        + constants.launch_us
        + (constants.base_us[protocol] if pipelined else 0.0)
        + intra_steps * step_latency_us(group, protocol, False, constants)
        + net_steps * net_step_us
    )
    return alpha + (sizes + fill_bytes) * spb / scale


def _ring_flows(group: Group, channels: int, volume: float, closed: bool = True):
    """Ring flows: every ring edge carries ``volume`` times its share; an open chain
    (broadcast, reduce) drops the edge back into the root."""
    src, dst, share = group.ring_edges(channels)
    if not closed:
        root = group.ranks[0]
        keep = dst != root
        src, dst, share = src[keep], dst[keep], share[keep]
    return src, dst, share * volume


def channels_for(group: Group, constants: ModelConstants = DEFAULT) -> int:
    """Parallel rings/trees across nodes: one per NIC a node uses (spreading NIC traffic), up
    to the most NCCL's search builds (``max_search_channels``; an NVL72 rack's 72 NICs
    carry 32 rings); 1 within a node."""
    if group.n_nodes < 2:
        return 1
    return max(1, min(group.nics_per_node, constants.max_search_channels))


class Ring(CollectiveAlgorithm):
    """Node-major ring, one per channel; bandwidth-optimal for large messages."""

    name: ClassVar[str] = "ring"
    ops: ClassVar[tuple[str, ...]] = (
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
    )
    protocols: ClassVar[tuple[str, ...]] = PROTOCOLS
    description: ClassVar[str] = "ring over all ranks (node-major, one per channel)"

    def applicable(self, group: Group, op: str) -> bool:
        """Any group of two or more ranks (one rank: nothing to move)."""
        return True

    def spb(self, group: Group, op: str) -> float:
        """Microseconds per message byte of the ring's busiest link."""
        n = group.n
        if n == 1:
            return 0.0
        if op == "all_reduce":
            volume, closed = 2.0 * (n - 1) / n, True
        elif op in ("all_gather", "reduce_scatter"):
            volume, closed = (n - 1) / n, True
        else:  # broadcast / reduce: a pipelined chain from (or to) the root
            volume, closed = 1.0, False

        def raw() -> float:
            src, dst, vol = _ring_flows(group, channels_for(group), volume, closed)
            return group.seconds_per_byte(src, dst, vol)

        return group.memo(("ring", op), raw) / staging_penalty(group, op)

    def steps(self, group: Group, op: str) -> tuple[float, float]:
        """(intra-node steps, network steps) on the critical path."""
        n, k = group.n, group.n_nodes
        if op == "all_reduce":
            total, net = 2 * (n - 1), 2 * (k - 1)
        elif op in ("all_gather", "reduce_scatter"):
            total, net = n - 1, k - 1
        else:
            total, net = n - 1, k - 1
        return float(total - net), float(net)

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """alpha-beta time of the ring for every size [us]."""
        if protocol == "ll128" and group.intra_class != "nvlink":
            return np.full(size_bytes.shape, np.inf)
        intra, net = self.steps(group, op)
        time = alpha_beta(group, size_bytes, protocol, intra, net, self.spb(group, op))
        if protocol == "ll" and op == "all_reduce" and library_of(group) == "nccl":
            # back to back, a small message's empty parts overlap (NCCL's kernels)
            cycle = cycle_steps(size_bytes, group.n, group.library_version)
            net_cycle = network_share(cycle, group.n, group.n_nodes, net)
            time = time - (
                (intra - (cycle - net_cycle)) * step_latency_us(group, protocol, False)
                + (net - net_cycle) * step_latency_us(group, protocol, True)
            )
        if protocol != "ll" or net == 0:
            return time
        message = ll_receive_bytes(size_bytes, group.nccl_channels, group.n)
        time = time - idc_saving_us(group, message, net)
        time = time + channel_ops_us(group, size_bytes, net, group.n)
        cxi = software_matching(group)
        if cxi is not None:  # each network step receives one message through the host
            time = time + receive_copy_us(cxi, message, net)
        return time


@lru_cache(maxsize=32)
def _double_tree_flows(k: int) -> tuple[IntArray, IntArray]:
    """(source, destination) node indices of the flows of two heap-ordered binary trees
    over ``k`` nodes, the second mirrored (node ``i`` as ``k - 1 - i``), each carrying half
    the data: per tree and per (child, parent) edge, the reduce up then the broadcast down.

    Cached per node count (every channel and every group of ``k`` nodes shares them), so
    read-only.
    """
    child = np.arange(1, k, dtype=np.int64)
    parent = (child - 1) // 2
    below = np.concatenate([child, k - 1 - child])  # the first tree's edges, then the mirror's
    above = np.concatenate([parent, k - 1 - parent])
    src = np.stack([below, above], axis=1).reshape(-1)  # up, then down, per edge
    dst = np.stack([above, below], axis=1).reshape(-1)
    src.setflags(write=False)
    dst.setflags(write=False)
    return src, dst


def _chain_flows(starts: IntArray, n: int) -> tuple[IntArray, IntArray, npt.NDArray[np.bool_]]:
    """Positions of the chains' flows in a node-major order of ``n`` ranks whose nodes
    begin at ``starts``: each node's chain reduces toward its first rank and broadcasts
    back, node after node, the reduce's hops then the broadcast's.

    Returns:
        (source positions, destination positions, True on a reduce hop), each
        (2 (n - nodes),).
    """
    inner = np.ones(n, dtype=bool)
    inner[starts] = False
    child = np.flatnonzero(inner)  # a rank that is not its node's first
    node = np.cumsum(~inner)[child] - 1
    up = np.repeat([True, False], child.shape[0])
    at = np.argsort(np.concatenate([2 * node, 2 * node + 1]), kind="stable")
    hop = np.concatenate([child, child])[at]
    up = up[at]
    return np.where(up, hop, hop - 1), np.where(up, hop - 1, hop), up


#: The last release whose Simple trees shrink their chunks with the tree's depth (NCCL's
#: computeColl, src/enqueue.cc v2.18.1-1 to v2.19.4-1; from v2.20.3-1 a Simple tree keeps
#: whole steps).
SIMPLE_TREE_SHRINK_UNTIL = (2, 19, 99)


def tree_chunk_bytes(
    size_bytes: FloatArray,
    protocol: str,
    channels: int,
    n_nodes: int,
    ppn: float,
    version: tuple[int, int, int] | None = None,
    constants: ModelConstants = DEFAULT,
) -> FloatArray:
    """Bytes a tree's channel forwards per pipeline step, as NCCL sizes its chunks [bytes].

    NCCL halves a tree's chunk while the message holds too few chunks per channel for the
    tree to pipeline (src/enqueue.cc, every release from v2.18.1-1): LL128 halves from its
    step (``chunk_bytes``) down to 128 KiB while ``S / (channels chunk)`` is under
    ``64 s / ppn``, then down to 32 KiB under ``16 s / ppn``, with
    ``s = 1 + floor(log2 nodes) + ppn / 10``; Simple, up to 2.19, halves down to 128, 64
    and 32 KiB while it is under 8, 4 and 1 times the tree's depth
    (``ppn - 1 + floor(log2 nodes)``). LL and newer Simple keep whole steps.

    Args:
        size_bytes: (n_sizes,) message sizes [bytes].
        protocol: ``ll``, ``ll128`` or ``simple``.
        channels: Channels NCCL runs.
        n_nodes: Nodes of the group.
        ppn: Ranks per node.
        version: NCCL release (None: the newest).
        constants: Model constants.

    Returns:
        (n_sizes,) chunk per channel [bytes].
    """
    sizes = np.asarray(size_bytes, dtype=np.float64)
    chunk = np.full(sizes.shape, float(constants.chunk_bytes[protocol]))
    log_nodes = max(0, int(n_nodes).bit_length() - 1)
    rules: tuple[tuple[float, float], ...]
    if protocol == "ll128":
        steps = 1.0 + log_nodes + 0.1 * ppn
        rules = ((64.0 * steps / ppn, 131072.0), (16.0 * steps / ppn, 32768.0))
    elif protocol == "simple" and version is not None and version <= SIMPLE_TREE_SHRINK_UNTIL:
        depth = ppn - 1 + log_nodes
        rules = ((8.0 * depth, 131072.0), (4.0 * depth, 65536.0), (1.0 * depth, 32768.0))
    else:
        return chunk
    for below, floor in rules:
        for _ in range(8):  # a chunk halves at most a few times per rule
            shrink = (np.floor(sizes / (channels * chunk)) < below) & (chunk > floor)
            if not shrink.any():
                break
            chunk = np.where(shrink, chunk / 2.0, chunk)
    return chunk


def tree_fill_bytes(
    size_bytes: FloatArray,
    protocol: str,
    net_steps: float,
    channels: int,
    constants: ModelConstants = DEFAULT,
    intra_steps: float = 0.0,
    chunk_bytes: FloatArray | None = None,
) -> FloatArray:
    """Bytes' worth of time a deep or long tree spends filling its pipeline [bytes].

    Store and forward: a chunk crosses a hop before the next hop can start on it, so every
    such hop beyond those of the trees the constants describe adds one chunk per channel.
    Network hops forward whole steps in every protocol; the first level's (one up, one down)
    fill is part of the fitted medium-size tree efficiency (two-node runs), so only deeper
    trees (more than two nodes) pay for theirs. Within a node LL and LL128 flag every 8 or
    128 bytes and forward as data arrives, but Simple flags whole steps, so a chain longer
    than ``tree_reference_gpus`` (an NVL72 rack is one 72-GPU chain) pays for every extra
    hop on Simple.

    Args:
        size_bytes: (n_sizes,) message sizes [bytes].
        protocol: ``ll``, ``ll128`` or ``simple``.
        net_steps: Network steps of the tree (up and down).
        channels: Parallel trees, each filling its own pipeline.
        constants: Model constants.
        intra_steps: Steps along the chain within a node (up and down).
        chunk_bytes: (n_sizes,) chunk per channel NCCL forwards (``tree_chunk_bytes``;
            default: a whole step of the protocol, ``constants.chunk_bytes``).

    Returns:
        (n_sizes,) fill [bytes at the tree's rate].

    Notes:
        ``(max(0, net - 2) + [Simple] max(0, intra - 2 (G - 1))) * min(S, chunk * channels)``
        with G = ``tree_reference_gpus``.
    """
    extra_steps = max(0.0, net_steps - 2.0)
    if protocol == "simple":
        extra_steps += max(0.0, intra_steps - 2.0 * (constants.tree_reference_gpus - 1))
    chunk = constants.chunk_bytes[protocol] if chunk_bytes is None else chunk_bytes
    return extra_steps * np.minimum(size_bytes, chunk * channels)


def tree_ll128_ceiling_spb(
    tree_channels: int,
    cap_GBps: float,
    constants: ModelConstants = DEFAULT,
) -> float:
    """Fewest microseconds per message byte an LL128 tree reaches, at full (Simple) efficiency,
    when each of NCCL's tree channels moves at most ``cap_GBps`` of bus bandwidth [us per byte].

    One channel of a tree is one thread block per GPU: on LL128 it polls and forwards 128-byte
    lines, and NCCL measures how much bus bandwidth one such channel carries, per GPU
    generation and for 1, 2 and 3+ nodes (src/graph/tuning.cc ``perChMaxTreeLL128Bws``:
    Blackwell 55.6, 31.67 and 20.0 GB/s from v2.28.3-1 to v2.30.7-1; before, twice
    Hopper's figures, not a measurement). NCCL caps its tree at ``nChannels`` times it after
    LL128's wire efficiency (120/128), and its tree bus bandwidth is twice the algorithm
    bandwidth (``busBw * 0.5``), so the time per byte is at least
    ``efficiency * 2 / (channels * cap)``; ``alpha_beta`` divides by the efficiency again.
    A tree across two racks of 16 GB200 trays (16 channels) thus runs at most 507 GB/s of
    bus bandwidth; OCI's run of them (oracle-quickstart/oci-hpc-oke, NCCL 2.29.2) adds
    516 GB/s between 256 and 512 MiB.

    Args:
        tree_channels: Channels of NCCL's tree graph (``Group.nccl_tree_channels``).
        cap_GBps: NCCL's per-channel LL128 tree bandwidth for the GPU generation and node
            count [GB/s].
        constants: Model constants (LL128's wire efficiency).

    Returns:
        The floor on the tree's time per byte [us per byte]; 0 without a cap.

    Notes:
        ``protocol_efficiency["ll128"] * 2 / (channels * cap_GBps * 1e3)``.
    """
    if tree_channels <= 0 or cap_GBps <= 0:
        return 0.0
    return constants.protocol_efficiency["ll128"] * 2.0 / (tree_channels * cap_GBps * 1e3)


def tree_ll128_cap_GBps(group: Group) -> float:
    """NCCL's per-channel LL128 tree bandwidth for ``group`` [GB/s] (the newest release's
    ``perChMaxTreeLL128Bws`` row of the GPU generation, column 1, 2 or 3+ nodes); 0 for GPUs
    that do not run NCCL."""
    if group.fabric.gpu.vendor != "nvidia":
        return 0.0
    from fabricui.engine.nccl.releases import NEWEST

    rows = NEWEST.tree_ll128_cap_GBps
    return rows[min(group.arch_index, len(rows) - 1)][min(group.n_nodes, 3) - 1]


def tree_runs_one_tree(
    group: Group, size_bytes: FloatArray, protocol: str
) -> npt.NDArray[np.bool_]:
    """(n_sizes,) True where NCCL runs a tree all-reduce on no more channels than its search
    built, all of them on the first of its two trees.

    NCCL drops channels until each thread has its threshold of bytes (src/enqueue.cc) and
    puts the search's channels on one tree, their copies on the mirrored one
    (src/graph/connect.cc ``connectTrees``; ``comm->nChannels`` is then the smaller of the
    ring and tree searches' channels, src/init.cc). Later channels copy the first ones in
    turn: those NCCL_MAX_NCHANNELS keeps, then NVLS's extra channels copy those
    (``copyChannels``), so channels ``0 .. k - 1`` span both trees only when more than the
    search's count of them are run and kept.
    """
    search = group.nccl_search
    first = min(search.ring.channels, search.tree.channels)
    per_channel = MAX_THREADS[protocol] * THREAD_THRESHOLD[protocol]
    return trimmed_channels(size_bytes, per_channel, search.own_channels) <= first


class Tree(CollectiveAlgorithm):
    """All-reduce as a chain inside each node and double binary trees across nodes."""

    name: ClassVar[str] = "tree"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce",)
    protocols: ClassVar[tuple[str, ...]] = PROTOCOLS
    description: ClassVar[str] = "double binary tree across nodes, chain within a node"

    def applicable(self, group: Group, op: str) -> bool:
        """Needs two or more ranks."""
        return group.n > 1

    def spb(self, group: Group, one_tree: bool = False) -> float:
        """Microseconds per message byte: reduce up and broadcast down, both pipelined.

        ``one_tree``: every byte on the first of the two trees (``tree_runs_one_tree``),
        whose inner nodes receive from two children each.

        Notes:
            ``max(spb_all, spb_chain / tree_efficiency) / staging``: the fan-in/fan-out
            stalls slow the GPUs of the chains; a tree whose busiest link is a NIC or the
            network runs at that link's rate.
        """
        every, chain, _, single = self._figures(group)
        raw = max(single if one_tree else every, chain / DEFAULT.tree_efficiency)
        return raw / staging_penalty(group, "all_reduce")

    def chain_pass_spb(self, group: Group) -> float:
        """Microseconds per message byte of one pass along the chains (the reduce up alone),
        with the chain's stalls and staging.

        A chunk filling a chain crosses each hop alone: on an NVSwitch each GPU's one port
        carries the up and the down pass in steady state, so one pass runs at twice the
        chains' steady rate; on a mesh each pass has its own links and the rate is the same.
        """
        one_pass = self._figures(group)[2]
        return one_pass / DEFAULT.tree_efficiency / staging_penalty(group, "all_reduce")

    @staticmethod
    def node_flows(nodes: int) -> tuple[IntArray, IntArray]:
        """(source, destination) node indices of the flows of the double binary tree across
        ``nodes`` nodes, each of its two trees carrying half the data: per tree and per
        (child, parent) edge, the reduce up then the broadcast down (read-only arrays)."""
        return _double_tree_flows(nodes)

    def _figures(self, group: Group) -> tuple[float, float, float, float]:
        """The four figures of ``_raw_spbs``, routed once per group."""
        return group.memo("tree-figures", lambda: self._raw_spbs(group))

    def _raw_spbs(self, group: Group) -> tuple[float, float, float, float]:
        """Busiest link's time per message byte of all the tree's flows, of its chains alone,
        of one pass along the chains (reduce up only), and of all the flows with the first
        tree carrying every byte (``spb(one_tree=True)``) [us per byte].

        The chains stay within their domains (no network link, so no dragonfly routing
        choice): their loads add to the loads of the trees across nodes.
        """
        channels = channels_for(group)
        orders = np.stack(group.ring_orders(channels))  # (channels, n)
        starts = np.cumsum([0] + [r.shape[0] for r in group.by_node[:-1]])
        # Chain: reduce toward the node's first rank, broadcast back (1/channels each).
        src, dst, up = _chain_flows(starts, group.n)
        chain = (orders[:, src].reshape(-1), orders[:, dst].reshape(-1))
        chain_up = (orders[:, src[up]].reshape(-1), orders[:, dst[up]].reshape(-1))
        # Across nodes: two mirrored trees over the nodes' first ranks, half the data each.
        leaders = orders[:, starts]  # (channels, nodes)
        tree_src, tree_dst = _double_tree_flows(starts.shape[0])
        across = (leaders[:, tree_src].reshape(-1), leaders[:, tree_dst].reshape(-1))
        first = tree_src.shape[0] // 2  # the first tree's flows come first
        across_one = (
            leaders[:, tree_src[:first]].reshape(-1),
            leaders[:, tree_dst[:first]].reshape(-1),
        )
        bulk = group.bulk
        capacity = bulk.resource_capacity_GBps * 1e3
        load = [
            bulk.loads(a, b, np.full(a.shape[0], share / channels))
            if a.shape[0]
            else np.zeros(capacity.shape[0])
            for (a, b), share in ((chain, 1.0), (across, 0.5), (chain_up, 1.0), (across_one, 1.0))
        ]

        def busiest(total: FloatArray) -> float:
            used = total > 0
            return float(np.max(total[used] / capacity[used])) if used.any() else 0.0

        return (
            busiest(load[0] + load[1]),
            busiest(load[0]),
            busiest(load[2]),
            busiest(load[0] + load[3]),
        )

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """alpha-beta time of the tree for every size [us]."""
        if protocol == "ll128" and group.intra_class != "nvlink":
            return np.full(size_bytes.shape, np.inf)
        intra = 2.0 * (group.ppn - 1)
        net = 2.0 * math.ceil(math.log2(group.n_nodes)) if group.n_nodes > 1 else 0.0
        steady = np.full(size_bytes.shape, self.spb(group))
        if group.n_nodes > 1:  # one binary tree while the message runs on few channels
            on_one = tree_runs_one_tree(group, size_bytes, protocol)
            steady = np.where(on_one, self.spb(group, one_tree=True), steady)
        if protocol == "ll128":  # one channel's LL128 kernel carries no more than NCCL measured
            floor = tree_ll128_ceiling_spb(group.nccl_tree_channels, tree_ll128_cap_GBps(group))
            steady = np.maximum(steady, floor)
        spb = steady / tree_size_efficiency(size_bytes, protocol)
        if protocol == "ll":
            # alpha_beta divides by LL's wire efficiency; a tree's LL is slower still.
            spb = spb * DEFAULT.protocol_efficiency["ll"] / DEFAULT.tree_ll_efficiency
        channels = channels_for(group)
        chunk = tree_chunk_bytes(
            size_bytes,
            protocol,
            group.nccl_channels,
            group.n_nodes,
            group.n / max(1, group.n_nodes),
            group.library_version,
        )
        fill = tree_fill_bytes(size_bytes, protocol, net, channels, chunk_bytes=chunk)
        chain_fill = tree_fill_bytes(
            size_bytes, protocol, 0.0, channels, intra_steps=intra, chunk_bytes=chunk
        )
        if chain_fill.any():  # its chunks cross the chain's hops at one pass's rate
            one_pass = self.chain_pass_spb(group) / tree_size_efficiency(size_bytes, protocol)
            fill = fill + chain_fill * one_pass / spb
        time = alpha_beta(
            group,
            size_bytes,
            protocol,
            intra,
            net,
            spb,
            fill_bytes=fill,
            net_latency_us=group.tree_hop_latency_us,
        )
        if protocol != "ll" or net == 0:
            return time
        message = ll_receive_bytes(size_bytes, group.nccl_channels, 1)
        time = time - idc_saving_us(group, message, net)
        time = time + channel_ops_us(group, size_bytes, net, 1)
        cxi = software_matching(group)
        if cxi is not None:  # receives in a row up and down the trees, through the host
            copies = tree_receive_copies(group.n_nodes)
            time = time + receive_copy_us(cxi, message, copies)
        return time


class Direct(CollectiveAlgorithm):
    """Point-to-point: send/recv to the next rank, or all-to-all between every pair."""

    name: ClassVar[str] = "p2p"
    ops: ClassVar[tuple[str, ...]] = ("send_recv", "all_to_all")
    protocols: ClassVar[tuple[str, ...]] = ("ll", "simple")
    description: ClassVar[str] = "direct point-to-point transfers (send/recv, all-to-all)"

    def applicable(self, group: Group, op: str) -> bool:
        """Needs two or more ranks."""
        return group.n > 1

    def spb(self, group: Group, op: str) -> float:
        """Microseconds per message byte of the busiest link.

        Fewer channels per peer cost ``p2p_efficiency``, except when the copies through host
        memory (no PCIe peer-to-peer) are the bottleneck: channels do not change those.
        """
        raw = group.memo(("p2p", op), lambda: self._raw_spb(group, op))
        staging = staging_penalty(group, op)
        return raw / (staging if staging < 1.0 else DEFAULT.p2p_efficiency)

    def _raw_spb(self, group: Group, op: str) -> float:
        ranks = group.ranks
        n = group.n
        if op == "send_recv":
            src, dst, vol = ranks, np.roll(ranks, -1), np.ones(n)
        else:
            a, b = np.meshgrid(ranks, ranks, indexing="ij")
            off = a != b
            src, dst = a[off], b[off]
            vol = np.full(src.shape[0], 1.0 / n)
        return group.seconds_per_byte(src, dst, vol)

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """alpha-beta time for every size [us]: one step (all peers at once)."""
        crosses = group.n_nodes > 1
        intra, net = (0.0, 1.0) if crosses else (1.0, 0.0)
        # Each peer is a separate send and receive (one process posting for every GPU of its
        # node posts them all: ``issue_floor_us``).
        extra = DEFAULT.p2p_peer_us * (group.n - 1) if op == "all_to_all" else 0.0
        return alpha_beta(group, size_bytes, protocol, intra, net, self.spb(group, op)) + extra


#: Bandwidth PAT reaches beside a ring's (NCCL's own model rates its bus bandwidth at
#: 0.75 of the graph's, src/graph/tuning.cc v2.24.3-1 onwards; 0.85 in 2.23).
PAT_EFFICIENCY = 0.75


class Pat(CollectiveAlgorithm):
    """Parallel aggregated trees (NCCL's PAT): all-gather and reduce-scatter in log2(n)
    steps, one GPU per node.

    Step ``k`` exchanges with the rank ``2^k`` away and moves ``2^k / n`` of the buffer (the
    data aggregated so far), so every rank still moves ``(n - 1) / n`` of it, but the steps
    number ``log2(n)`` instead of ``n - 1`` and later steps cross higher network tiers.
    """

    name: ClassVar[str] = "pat"
    ops: ClassVar[tuple[str, ...]] = ("all_gather", "reduce_scatter")
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    description: ClassVar[str] = (
        "parallel aggregated trees (all-gather, reduce-scatter; 1 GPU/node)"
    )

    def applicable(self, group: Group, op: str) -> bool:
        """One rank per node, two ranks or more (NCCL implements PAT only there)."""
        return group.n > 1 and group.ppn == 1

    def spb(self, group: Group) -> float:
        """Microseconds per message byte: the steps one after another, each at the pace of
        its busiest link."""

        def raw() -> float:
            ranks = group.ranks
            n = group.n
            total, distance = 0.0, 1
            while distance < n:
                volume = min(distance, n - distance) / n
                src, dst = ranks, np.roll(ranks, -distance)
                total += group.seconds_per_byte(src, dst, np.full(n, volume))
                distance *= 2
            return total

        return group.memo("pat", raw) / PAT_EFFICIENCY

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """alpha-beta time of PAT for every size [us]: ``log2(n)`` network steps."""
        steps = float(math.ceil(math.log2(group.n)))
        return alpha_beta(group, size_bytes, protocol, 0.0, steps, self.spb(group))


@lru_cache(maxsize=1)
def core_algorithms() -> tuple[CollectiveAlgorithm, ...]:
    """The algorithms every fabric has (plugins add NVLS, SHARP ...)."""
    return (Ring(), Tree(), Direct(), Pat())
