"""Model constants: the same for every fabric and every measurement (no per-entry knobs).

They describe the communication library's overheads (launch, per-step synchronisation,
protocol wire efficiency), not the hardware: hardware figures live in hwdb. Values start
from the structure of NCCL's own tuning model (see shared/data/nccl/nccl_model_facts.md)
and are kept few, so the model predicts machines it has not seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelConstants:
    """Overheads and efficiencies of the collective library."""

    launch_us: float = 2.1
    """Fixed cost of one collective call, kernel launch and completion [us]."""
    single_process_us_per_gpu: float = 4.2
    """Time one process takes to issue a call on each GPU it drives [us]: with every GPU of
    a node behind one thread, a call takes at least ``launch_us`` plus this per GPU
    (``issue.issue_floor_us``). Set by the single-process nccl-tests runs: eight A100s
    flat at ~35 us for every small collective, two RTX 2080 Ti at ~10 us."""
    single_process_us_per_channel: float = 0.21
    """Time that process takes for each channel beyond the first a call runs on each GPU
    [us]: NCCL's enqueue writes one work element per channel into the GPU's host-pinned
    work FIFO (src/enqueue.cc, v2.11.4-1 ``ncclEnqueueCollKernel``: a 512-byte ``ncclWork``
    per channel, cleared and filled), so a thread driving ``g`` GPUs writes ``g * nc`` of
    them per iteration. Set by the single-process all-reduce on eight A100s (SuperBench):
    from 64 KiB to 1 MiB NCCL's ring/LL goes from 2 to 24 channels and the call from 37.8
    to 74.8 us, 0.21 us a channel and GPU; its reduce-scatter gives 0.20-0.22 and its
    reduce 0.27-0.30, not fitted, and its all-gather and broadcast logs, not scored here
    (benchmarks/data/superbench_other_ops.yaml), go from 39% and 23% off in their middle
    sizes to 4% and 5%."""
    base_us: dict[str, float] = field(
        default_factory=lambda: {"ll": 2.5, "ll128": 14.0, "simple": 8.4}
    )
    """Per-call setup of each protocol [us]. LL128's and Simple's are NCCL's own
    (src/graph/tuning.cc ``baseLat``: LL128 14 us since 2.18, Simple 8.4 for ring and tree
    since 2.23): the measured runs do not pin them down, because NCCL picks LL128 and Simple
    where bandwidth dominates."""
    step_us: dict[str, float] = field(
        default_factory=lambda: {"ll": 0.34, "ll128": 1.9, "simple": 3.4}
    )
    """Synchronisation cost of one algorithm step within a node, per protocol [us]
    (added to the routed path's latency). LL128's and Simple's are NCCL's NVLink ring hops
    (``hwLat``: 1.9 and 3.4 us), for the same reason as their bases."""
    net_step_us: dict[str, float] = field(
        default_factory=lambda: {"ll": 3.0, "ll128": 8.5, "simple": 14.0}
    )
    """Cost of one step that crosses the network, per protocol, beyond the path latency [us].
    LL128's and Simple's are NCCL's network hops (``hwLat``: tree LL128 8.5 us, Simple 14);
    a Simple step also waits for its receive's flush where NCCL flushes
    (``Group.gdr_flush_us``)."""
    protocol_efficiency: dict[str, float] = field(
        default_factory=lambda: {"ll": 0.5, "ll128": 0.92, "simple": 1.0}
    )
    """Fraction of the wire carrying data: LL sends 4 data bytes per 8, LL128 120 per 128."""
    ll_cap_GBps: tuple[float, ...] = (39.0, 87.7, 141.0, 282.0)
    """Ceiling of LL bus bandwidth on one node, by architecture (Volta, Ampere, Hopper,
    Blackwell) [GB/s]: LL's flag polling cannot drive faster links."""
    ll_cap_multinode_GBps: float = 45.0
    """Ceiling of LL bus bandwidth across nodes [GB/s]."""
    tree_efficiency: float = 0.92
    """A tree whose GPUs set its pace (the chain within a node) reaches this fraction of its
    flows' bandwidth: each GPU waits for its children's data, reduces it with its own and
    forwards it (fan-in/fan-out stalls). A tree bound by its NICs runs at the NICs' rate,
    as the NIC-bound trees measured on 2 and 3 nodes do (Alps 2 x 4 GH200; GB200 NVL4/NVL8
    partitions on three racks, NCCL issue #1801)."""
    max_search_channels: int = 32
    """Most channels NCCL's ring and tree search builds (``ringGraph->maxChannels =
    MAXCHANNELS/2`` in src/init.cc): beyond this, more NICs in a scale-up domain (an NVL72
    rack has 72) carry no ring or tree."""
    tree_reference_gpus: int = 8
    """GPUs per node of the trees NCCL's medium-size correction and the fitted constants
    describe (every measured tree ran on nodes of up to 8 GPUs): a longer chain within a
    domain pays the Simple protocol's pipeline fill for each extra hop."""
    tree_ll_efficiency: float = 1.0 / 3.8
    """A tree on the LL protocol reaches this fraction of its Simple bandwidth (NCCL's own
    model divides tree LL by 3.8, where a ring's LL keeps half: every tree step polls the
    flags of several peers). Replaces LL's wire efficiency for trees. Not fitted."""
    p2p_efficiency: float = 0.85
    """Point-to-point transfers (send/recv, all-to-all) reach this fraction of the flows'
    bandwidth (fewer channels per peer than collectives)."""
    p2p_peer_us: float = 1.0
    """Setup of each peer of a point-to-point group (all-to-all issues one send and one
    receive per peer) [us]."""
    nvls_efficiency: tuple[float, float] = (0.72, 0.63)
    """NVLink SHARP all-gather and reduce-scatter reach this fraction of the NVLink capacity
    on Hopper and on Blackwell (NCCL's own model rates Blackwell's NVLS 0.74/0.85 of
    Hopper's)."""
    nvls_allreduce_speedup: tuple[float, float] = (1.30, 1.225)
    """NVLS all-reduce bus bandwidth over the NVLink port capacity, Hopper and Blackwell:
    the switch reduces, so a port carries less than a ring's 2(n-1)/n; measured NVLS
    busbw is this constant multiple of the port from 8 to 72 GPUs (8x H200 480 and 8x B200
    838 GB/s here; a 72-GPU GB200 rack's 835 GB/s, not fitted, agrees)."""
    cxi_cuda_copy_us: float = 5.2
    """A CUDA copy of one received message from a host buffer into GPU memory, beyond the
    gdrcopy it replaces, under software matching on Slingshot's CXI provider
    (``fabricui.engine.cxi``) [us]. From the A/B runs of boeschf/nccl-benchmark-on-alps-2025
    on 2 nodes (2 receives in a row per all-reduce): gdrcopy off adds 11.4, 10.7 and 9.8 us
    at 8 B, 1 KiB and 2 KiB, and raising the gdrcopy threshold to 16 MiB saves 9.8 us at
    4 KiB: 5.2 per receive. Not fitted to the scored runs; the same repository's larger
    runs check it: on 16 nodes (11 receives in a row) gdrcopy off adds 54-59 us (57
    predicted), and at 4 KiB the 256-node run steps up 122 us (23 receives: 120)."""
    cxi_idc_saving_us: float = 1.0
    """Time a network send of up to 192 B saves on Slingshot's CXI provider, which writes
    it into the NIC's command instead of having the NIC read it from memory
    (``fabricui.engine.cxi``) [us]. From the runs of boeschf/nccl-benchmark-on-alps-2025
    with the aws-ofi-nccl 1.9.2 plugin, none of them scored: from 64 B to 128 B (LL's
    message grows from 128 to 256 B with its flags) a tree all-reduce on 2 to 512 nodes
    steps up 0.7 to 1.2 us per network step, median 1.0 (2 ceil(log2 nodes) steps: +4.1
    us on 4 nodes, +10.5 on 32, +15.8 on 256)."""
    ofi_channel_op_us: float = 1.85
    """Host time NCCL's proxy thread spends on one channel's network operation in a step
    where a libfabric plugin (aws-ofi-nccl, on EFA and Slingshot) drives the NICs [us]; the
    proxy serves the channels in turn, so each channel past the first adds it to every
    network step of an LL call (``fabricui.engine.ofi_proxy``). From the 2-node p5 run of
    aws-samples/awsome-distributed-training (shared measurement file): from 8 KiB to 64 KiB
    NCCL's tree/LL goes from 2 to 16 channels and the call from 81.4 to 135.1 us, 51.7 us
    more than its bytes explain, over 14 channels and 2 network steps. Checked, not fitted,
    on Slingshot: the Alps runs of 16 to 512 nodes and Kestrel's 16."""
    socket_max_GBps: float = 8.0
    """Ceiling of NCCL's TCP socket transport per NIC [GB/s]: the host threads that move the
    data through the sockets (the proxy thread; on AWS and GCP NICs, helper threads: NVIDIA/nccl
    ``src/transport/net_socket.cc``), not the line rate, limit it on fast Ethernet."""
    socket_nic_lat_us: float = 2.0
    """Latency a NIC adds per traversal when NCCL's NET/Socket drives it through the kernel
    TCP stack, for an InfiniBand or RoCE NIC whose IB transport the NCCL environment turns
    off (``fabricui.engine.net_socket``) [us]: the generic Ethernet NIC record's
    (``generic-eth``, whose latency includes the kernel TCP stack). Not fitted."""
    chunk_bytes: dict[str, int] = field(
        default_factory=lambda: {"ll": 16 * 1024, "ll128": 560 * 1024, "simple": 512 * 1024}
    )
    """Bytes one channel moves per pipeline step, per protocol: NCCL's buffer per channel over
    its 8 steps (Simple 4 MiB, LL128 about 4.4 MiB, LL 256 KiB of which half is payload)
    [bytes]. Not fitted."""
    nvls_pipeline_fill_us: float = 129.0
    """Time NVLS spends filling and draining its pipeline of chunks on an 8-GPU domain
    before the bandwidth term applies, once per call [us]; smaller messages fill it in
    proportion. (Across a network a Simple pipeline fills over ``NCCL_STEPS`` network
    steps: ``algorithms.network_fill_us``.)"""
    pcie_no_p2p_efficiency: float = 0.3
    """Staging through host memory when both directions stage at once (all-reduce,
    all-gather, all-to-all): the copies in and out of pinned host memory contend; one-way
    staging (reduce, broadcast) keeps the PCIe rate."""
    tree_size_efficiency: dict[str, tuple[float, ...]] = field(
        default_factory=lambda: {
            "ll": (1.0,) * 4
            + (0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
            + (1.0,) * 5,
            "ll128": (1.0,) * 5
            + (0.9, 0.8, 0.8, 0.8, 0.7)
            + (0.6,) * 6
            + (0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0),
            "simple": (0.9,) * 7
            + (0.8, 0.7, 0.6, 0.6)
            + (0.5,) * 4
            + (0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9),
        }
    )
    """Trees reach only part of their bandwidth at medium sizes (pipeline fan-in stalls);
    index ``log2(size / 64 B)`` from 64 B; trees use indices 0-22 (to 256 MiB) and run
    uncorrected from 512 MiB, as NCCL does. Values from NCCL's empirical tree correction
    (shared/data/nccl/nccl_model_facts.md, section 6)."""


DEFAULT = ModelConstants()

#: Achievable fraction of HBM bandwidth assumed when a GPU record has none (A100's measured
#: 0.84): a GPU's kernels and its device-to-device copies reach about this much.
DEFAULT_HBM_EFFICIENCY = 0.84
