"""NVLink SHARP (NVLS): reductions inside the NVSwitch, on Hopper and newer.

One scale-up domain (``nvls``; a DGX node or a whole NVL72 rack): every GPU pushes its data
into the switch and reads the reduced result. Measured NVLS all-reduce bus bandwidth is a
constant multiple of the GPU's NVLink port capacity from 8 to 72 GPUs (the switch's
reduction, not the port, sets the pace), so a port is charged a ring's ``2(n-1)/n`` of the
message at ``nvls_allreduce_speedup`` times its capacity (``n`` counts every rank of the
group, so across domains NVLS keeps its bus bandwidth, as measured). Its fixed cost is the
launch and the NVLS setup (NCCL's model charges 25 us); the pipeline of chunks behind it
(NCCL_NVLS_NCHANNELS channels of Simple-protocol chunks: 16 on Hopper, 32 on Blackwell)
fills in proportion to the message until it holds one chunk per channel and head, so an
8-byte NVLS call costs the setup, not the full pipeline fill of a 16 GiB one; a channel's loop
holds one chunk per head, so a 72-GPU rack (32 heads) fills four times an 8-GPU node's pipeline.

Across domains (``nvlstree``): NVLS inside each domain, and double binary trees between the
domains carried by the domain's NVLS *heads*, each head a GPU sending its share of the data
over its own NIC: one head per NIC, at most NCCL_MAX_NVLS_ARITY (32). With three or more
domains a head in the middle of a tree forwards to two children and its parent, twice the
traffic of two domains; the flows on the fabric carry that.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from fabricui.api import DEFAULT_CONSTANTS as DEFAULT
from fabricui.api import (
    CollectiveAlgorithm,
    FloatArray,
    Group,
    Tree,
    alpha_beta,
    network_pipeline_fill_us,
)

#: NVLS needs the switch's multicast/reduce engines (NVSwitch 3+) and Hopper-class GPUs.
MIN_ARCH_INDEX = 2
#: Setup of an NVLS operation (multicast object, switch round trip) [us].
NVLS_LATENCY_US = 21.0
#: Most NVLS heads (NCCL_MAX_NVLS_ARITY).
MAX_HEADS = 32
#: NVLS channels NCCL runs by default on Hopper and on Blackwell (NVLS_NCHANNELS_SM90,
#: NVLS_NCHANNELS_SM100 in src/transport/nvls.cc).
NVLS_CHANNELS = (16, 32)
#: Blackwell NVLS channels within one NVLink domain from NCCL 2.27 (NVLS_NCHANNELS_SM100_NVL).
NVLS_CHANNELS_ONE_DOMAIN = 24
#: First NCCL release that runs fewer Blackwell NVLS channels within one domain.
FEWER_CHANNELS_SINCE = (2, 27, 0)


def nvls_channels(group: Group) -> int:
    """NVLS channels NCCL runs for the group.

    ``ncclNvlsInit`` (src/transport/nvls.cc) runs 16 on Hopper and 32 on Blackwell; from
    v2.27.3 a Blackwell group within one NVLink domain runs 24 (``multiNode ?
    NVLS_NCHANNELS_SM100 : NVLS_NCHANNELS_SM100_NVL``). An unknown release is the current.
    """
    arch = min(group.arch_index, 3) - MIN_ARCH_INDEX
    version = group.library_version
    recent = version is None or version >= FEWER_CHANNELS_SINCE
    if arch == 1 and group.n_nodes == 1 and recent:
        return NVLS_CHANNELS_ONE_DOMAIN
    return NVLS_CHANNELS[arch]


def _nvls_ok(group: Group) -> bool:
    return (
        group.has_nvswitch_reduction
        and group.arch_index >= MIN_ARCH_INDEX
        and group.ppn > 1
        and len({r.shape[0] for r in group.by_node}) == 1
    )


#: NVLink SHARP's efficiency on its port traffic: the 2-, 4- and 6-GPU Hopper measurements
#: below (0.85, NCCL's own Hopper ``nvlsEfficiency`` in src/graph/tuning.cc), on Blackwell
#: too. NCCL rates Blackwell 0.74, but as a factor on its topology search's speeds, not on the
#: port: at 0.74 eight Blackwell GPUs would stay at 1.15 times the port, where 8x B200 and a
#: GB200 pair of trays reach the 1.225 the switch's reduction allows (838-847 GB/s).
NVLS_PORT_EFFICIENCY = 0.85


def nvls_allreduce_factor(group: Group) -> float:
    """NVLS all-reduce bus bandwidth over the NVLink port capacity.

    Each GPU's port carries its whole buffer up once (the switch reduces every slice as it
    reads it, ``multimem.ld_reduce``) and its reduced slice of ``1/p`` up, and takes the
    ``p`` reduced slices multicast back down: ``1 + 1/p`` of the message each way for ``p``
    GPUs in the domain, at the port's NVLS efficiency; the switch's reduction caps the bus
    bandwidth at ``nvls_allreduce_speedup`` times the port (measured from 8 to 72 GPUs).
    On 2, 4 and 6 GPUs of a Hopper box this gives 0.57, 1.02 and 1.21 times the port, as
    NCCL 2.29 measures there (207, 376 and 443 GB/s: waynehacking8/nccl-collectives-bench,
    results/scaling_attributed/report.md); the cap binds from 8.

    Notes:
        ``min(eff * (2 (n - 1) / n) / (1 + 1 / p), speedup)``, ``n`` ranks in the group.
    """
    arch = min(group.arch_index, 3) - MIN_ARCH_INDEX
    n, p = group.n, max(group.ppn, 1)
    traffic = NVLS_PORT_EFFICIENCY * (2.0 * (n - 1) / n) / (1.0 + 1.0 / p)
    return min(traffic, DEFAULT.nvls_allreduce_speedup[arch])


def _intra_spb(group: Group, op: str) -> float:
    """Microseconds per message byte of the NVLS stage (all-reduce: the group's bus factor
    at ``nvls_allreduce_factor`` times the port; others: the domain's share)."""
    arch = min(group.arch_index, 3) - MIN_ARCH_INDEX
    if op == "all_reduce":
        volume = 2.0 * (group.n - 1) / group.n
        return group.switch_port_spb(volume) / nvls_allreduce_factor(group)
    n = group.ppn
    return group.switch_port_spb((n - 1) / n) / DEFAULT.nvls_efficiency[arch]


#: GPUs of the NVLS domains the fitted pipeline fill describes (8-GPU HGX/DGX nodes).
REFERENCE_HEADS = 8


#: NCCL's NVLS chunk (NCCL_NVLS_CHUNKSIZE, 128 KiB in src/transport/nvls.cc, 2.18-2.30).
NVLS_CHUNK_BYTES = 128 * 1024


def nvls_chunk_bytes(
    size_bytes: FloatArray, channels: int, heads: int, tree: bool = False, n_nodes: int = 1
) -> FloatArray:
    """The chunk NCCL moves per NVLS step for each size [bytes].

    NCCL shrinks the NVLS chunk (128 KiB) while a message holds few chunks for its
    ``channels * heads`` concurrent operations (src/enqueue.cc, v2.18.1-1 to v2.30.7): NVLS
    drops to 64 KiB under 64 chunks per operation, to 32 KiB under 8 and to 16 KiB under 2;
    NVLS with trees between domains starts at 64 KiB from 4 nodes (128 KiB below) and drops
    to 64 KiB under 4 chunks per operation and to 32 KiB under 1.
    """
    sizes = np.asarray(size_bytes, dtype=np.float64)
    ops = float(max(1, channels) * max(1, heads))
    chunk = np.full(sizes.shape, float(NVLS_CHUNK_BYTES))
    rules: tuple[tuple[float, float], ...]  # (chunks per operation below which, smaller chunk)
    if tree:
        if n_nodes >= 4:
            chunk[:] = 65536.0
        rules = ((4.0, 65536.0), (1.0, 32768.0))
    else:
        rules = ((64.0, 65536.0), (8.0, 32768.0), (2.0, 16384.0))
    for times, smaller in rules:
        chunk = np.where((sizes < times * ops * chunk) & (chunk > smaller), smaller, chunk)
    return chunk


def nvls_fixed_us(
    group: Group,
    size_bytes: FloatArray,
    heads: int,
    tree: bool = False,
    chunk: FloatArray | None = None,
) -> FloatArray:
    """NVLS setup plus the part of the pipeline fill a message of each size fills [us].

    Each channel reduces loops of ``heads`` chunks, one per head (``loopCount =
    nvls->nHeads * chunkSize`` in src/device/all_reduce.h), through a pipeline of scatter,
    in-switch reduction and multicast, and gather; the pipeline fills in a number of loops,
    so its fill grows with the heads and with the chunk: the fill measured on 8-GPU nodes
    at NVLS's full 128 KiB chunk (``nvls_pipeline_fill_us``) times ``heads / 8`` and times
    the chunk NCCL sizes for the message over 128 KiB (``nvls_chunk_bytes``: 16 KiB to
    128 KiB). A message fills it in proportion until every channel holds one chunk per
    head. A 72-GPU rack runs 32 heads (NCCL_MAX_NVLS_ARITY), four times an 8-GPU node's
    fill. With trees between domains the pipeline runs through the network too and fills
    at the pace of the slower: over NDR both take ~130 us, over EFA or TCPXO the network's
    ``NCCL_STEPS`` steps take two to four times that (``network_pipeline_fill_us``).

    Args:
        group: The group.
        size_bytes: (n_sizes,) message sizes [bytes].
        heads: NVLS heads per domain (``nvls_domain_heads``, ``nvls_heads``).
        tree: NVLS with trees between domains (its chunk rules).
        chunk: NCCL's chunk per size, when the caller has it (``nvls_chunk_bytes``).

    Returns:
        (n_sizes,) fixed time [us].

    Notes:
        ``NVLS_LATENCY_US + fill * h / 8 * c / 128K * min(1, S / (c channels h))`` with
        NCCL's NVLS channel count and chunk ``c``; ``fill`` the domain's
        (``nvls_pipeline_fill_us``), or across domains the slower of it and the network's.
    """
    channels = nvls_channels(group)
    if chunk is None:
        chunk = nvls_chunk_bytes(size_bytes, channels, heads, tree, group.n_nodes)
    full = chunk * channels * heads
    scale = heads / REFERENCE_HEADS * chunk / NVLS_CHUNK_BYTES
    fill = DEFAULT.nvls_pipeline_fill_us
    if tree:
        fill = max(fill, network_pipeline_fill_us(group, group.tree_hop_latency_us))
    return NVLS_LATENCY_US + fill * scale * np.minimum(1.0, size_bytes / full)


#: Hand-offs across the switch in one NVLS loop (scatter, in-switch reduce, multicast,
#: gather), each a flag waited on over the domain's GPU-to-GPU path.
NVLS_LOOP_HANDOFFS = 4


def nvls_loop_sync_us(
    group: Group,
    size_bytes: FloatArray,
    heads: int,
    tree: bool = False,
    chunk: FloatArray | None = None,
) -> FloatArray:
    """Synchronisation of the NVLS loops a smaller chunk adds over the full chunk's [us].

    Each channel runs its share in loops of ``heads`` chunks (src/device/all_reduce.h) and
    every loop waits on its hand-offs across the switch (``NVLS_LOOP_HANDOFFS`` times the
    GPU-to-GPU path latency), so a message NCCL cuts into 64, 32 or 16 KiB chunks
    (``nvls_chunk_bytes``) pays for two, four or eight times the loops of 128 KiB ones. The
    NVLS bandwidth is measured at 128 KiB (8-16 GiB), so only the loops beyond those count,
    and not the first, which is the pipeline's fill (``nvls_fixed_us``). Measured on 8 GPUs
    (H100, B200 and GB200 nccl-tests and torch runs), the bus bandwidth a size adds runs 8-12%
    under the plateau where NCCL's chunk is 64 KiB and 20-36% under it where it is 32 KiB.

    Notes:
        ``h_off lat * max(0, S / (ch heads c) - 1 - S / (ch heads 128K))``.
    """
    channels = nvls_channels(group)
    if chunk is None:
        chunk = nvls_chunk_bytes(size_bytes, channels, heads, tree, group.n_nodes)
    per_loop = float(max(1, channels) * max(1, heads))
    loops = size_bytes / (per_loop * chunk)
    at_full_chunk = size_bytes / (per_loop * NVLS_CHUNK_BYTES)
    extra = np.maximum(0.0, loops - 1.0 - at_full_chunk)
    return NVLS_LOOP_HANDOFFS * group.intra_latency_us * extra


def nvls_domain_heads(group: Group) -> int:
    """NVLS heads of a group within one domain: every GPU, at most ``MAX_HEADS``.

    Without a NIC in the way NCCL's NVLS search makes every GPU a head
    (``graph->minChannels = graph->maxChannels = min(NCCL_MAX_NVLS_ARITY, ngpus)`` in
    src/graph/search.cc).
    """
    return max(1, min(group.ppn, MAX_HEADS))


class Nvls(CollectiveAlgorithm):
    """In-switch reduction within one NVLink domain."""

    name: ClassVar[str] = "nvls"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce", "all_gather", "reduce_scatter")
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    description: ClassVar[str] = "NVLink SHARP: reduce/multicast in the NVSwitch (one domain)"

    def applicable(self, group: Group, op: str) -> bool:
        """One domain of Hopper+ GPUs on a reducing NVSwitch."""
        return group.n_nodes == 1 and _nvls_ok(group)

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Switch-port bound transfer plus the launch and NVLS setup [us]."""
        spb = _intra_spb(group, op)
        time = alpha_beta(group, size_bytes, protocol, 0.0, 0.0, spb, pipelined=False)
        heads = nvls_domain_heads(group)
        chunk = nvls_chunk_bytes(size_bytes, nvls_channels(group), heads)
        return (
            time
            + nvls_fixed_us(group, size_bytes, heads, chunk=chunk)
            + nvls_loop_sync_us(group, size_bytes, heads, chunk=chunk)
        )


def nvls_heads(group: Group) -> int:
    """NVLS heads per domain: one per NIC the domain's ranks use, at most ``MAX_HEADS``.

    NCCL's NVLS search (src/graph/search.cc) makes each head a NIC and its local GPU, no GPU
    twice, at most ``min(NCCL_MAX_NVLS_ARITY, GPUs)``. Each head takes the search's speed
    from every GPU's NVSwitch link (twice from its own), and the search lowers the speed
    while more heads fit: on an NVL72 rack (72 NICs, 18 x 40 GB/s of NVLink per GPU in
    NCCL's topology, inter speeds 48, 45, 42, 40, 30, 24, 22, 20 on Blackwell in 2.26) 14
    heads fit at 48 GB/s, 29 at 24, 31 at 22 and 32 at 20, where it stops at the maximum:
    all 32, the NICs' count capped.

    Args:
        group: A group spanning several domains.

    Returns:
        The number of heads (GPUs whose NICs carry the trees between domains).
    """
    return max(1, min(group.nics_per_node, MAX_HEADS))


class NvlsTree(CollectiveAlgorithm):
    """NVLS inside each domain, double binary trees across domains (all-reduce)."""

    name: ClassVar[str] = "nvlstree"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce",)
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    description: ClassVar[str] = "NVLS within domains + trees across domains (all-reduce)"

    def applicable(self, group: Group, op: str) -> bool:
        """Two or more domains, each a reducing NVLink domain."""
        return group.n_nodes > 1 and _nvls_ok(group)

    def net_spb(self, group: Group) -> float:
        """Each head runs its own trees over the domains on 1/heads of the data."""
        return group.memo("nvlstree-net", lambda: self._raw_net_spb(group)) / (
            DEFAULT.tree_efficiency
        )

    def _raw_net_spb(self, group: Group) -> float:
        k, ppn = group.n_nodes, group.ppn
        heads = min(nvls_heads(group), ppn)
        columns = np.stack(group.by_node)  # (k, ppn)
        # Heads spread over the domain's hosts (one NIC each), each running both trees.
        heads_ranks = columns[:, (np.arange(heads) * ppn) // heads].T  # (heads, k)
        a, b = Tree.node_flows(k)
        src, dst = heads_ranks[:, a].reshape(-1), heads_ranks[:, b].reshape(-1)
        return group.seconds_per_byte(src, dst, np.full(src.shape[0], 0.5 / heads))

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """The slower of the NVLS and network stages (they pipeline) plus both latencies.

        The NVLS stage's loop hand-offs (``nvls_loop_sync_us``) slow that stage only: behind
        a slower network they are hidden."""
        heads = min(nvls_heads(group), group.ppn)
        sizes = np.asarray(size_bytes, dtype=np.float64)
        chunk = nvls_chunk_bytes(sizes, nvls_channels(group), heads, True, group.n_nodes)
        sync = nvls_loop_sync_us(group, sizes, heads, tree=True, chunk=chunk)
        intra = _intra_spb(group, op) + sync / np.maximum(sizes, 1.0)
        spb = np.maximum(intra, self.net_spb(group))
        net_steps = 2.0 * math.ceil(math.log2(group.n_nodes))
        return alpha_beta(
            group,
            sizes,
            protocol,
            0.0,
            net_steps,
            spb,
            pipelined=False,
            net_latency_us=group.tree_hop_latency_us,
        ) + nvls_fixed_us(group, sizes, heads, tree=True, chunk=chunk)
