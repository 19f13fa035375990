"""NCCL's tuning model, release by release, as data.

Every figure here is read from NVIDIA/nccl at the release tag named with it (the mirror of
github.com/NVIDIA/nccl): ``src/graph/tuning.cc`` (latencies, bandwidth caps, refinements,
enable rules), ``src/graph/search.cc`` (the per-channel speeds the topology search tries),
``src/graph/connect.cc`` (channel duplication), ``src/transport/nvls.cc`` (NVLS channels) and
``src/include/device.h`` (MAXCHANNELS). Each release starts from the one before it and states
only what changed, so the history reads top to bottom. The model that uses these tables is
in ``tuner.py``; nothing here is code of NCCL, only its numbers and rules in our words.

Index order (NCCL's own, ``src/include/nccl_tuner.h``): algorithms ``ALGORITHMS``, protocols
``PROTOCOLS``, hop classes ``HOPS``; architecture rows Volta (< sm80), Ampere (sm80-89),
Hopper (sm90), Blackwell (sm100+). Latencies in microseconds, bandwidths in GB/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from fabricui.errors import EngineError

#: NCCL's algorithms, in its index order.
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
#: Hop classes of the latency table: NVLink, PCIe (any other intra-node path), network.
HOPS = ("nvlink", "pci", "net")
#: The names NCCL_ALGO and NCCL_PROTO take (case-insensitive), per algorithm and protocol.
ALGORITHM_ENV_NAMES = {
    "tree": "Tree",
    "ring": "Ring",
    "collnet_direct": "CollnetDirect",
    "collnet_chain": "CollnetChain",
    "nvls": "NVLS",
    "nvls_tree": "NVLSTree",
    "pat": "PAT",
}
PROTOCOL_ENV_NAMES = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}

Table = tuple[tuple[float, float, float], ...]
"""Seven rows (``ALGORITHMS``) of three protocol values (``PROTOCOLS``)."""
ArchRows = tuple[tuple[float, float, float], ...]
"""One row per architecture (Volta, Ampere, Hopper[, Blackwell]) of (1 node, 2 nodes, 3+)."""


@dataclass(frozen=True)
class Release:
    """The tuning model of one NCCL release line (from ``since`` to the next entry)."""

    since: tuple[int, int, int]
    """First release with these tables."""
    tag: str
    """The NCCL tag the figures were read at (``v2.23.4-1``)."""
    base_us: Table
    """Fixed cost per (algorithm, protocol) [us] (tuning.cc ``baseLat`` / ``baseLatencies``)."""
    hop_us: tuple[Table, Table, Table]
    """Per-hop cost per hop class, algorithm, protocol [us] (``hwLat`` / ``hwLatencies``)."""
    ll_max_GBps: ArchRows
    """LL bandwidth ceiling: on one node the row of the GPU generation, across nodes row 0
    (Intel CPUs) or 1 (AMD or mixed CPUs) (``llMaxBws``)."""
    ring_ll128_cap_GBps: ArchRows
    """Ring LL128 bandwidth per channel (``perChMaxRingLL128Bws``)."""
    tree_ll128_cap_GBps: ArchRows
    """Tree LL128 bandwidth per channel (``perChMaxTreeLL128Bws``)."""
    tree_cap_GBps: ArchRows
    """Tree all-reduce bandwidth per channel, any protocol (``perChMaxTreeBws``)."""
    nvls_tree_cap_GBps: ArchRows | None = None
    """NVLS+tree bandwidth per channel (``perChMaxNVLSTreeBws``); None before 2.28."""
    nvls_efficiency: tuple[float, float, float, float] | None = None
    """NVLink SHARP efficiency per architecture (``nvlsEfficiency``); None before 2.28, when
    NVLS bandwidth was the graph's speed with a fixed 5/6 bus-to-algorithm ratio."""
    nvls_model: str = "2.28"
    """How NVLS and NVLS+tree bandwidth is modelled: ``2.18``, ``2.19`` (min of the graph's
    intra and inter speeds, 5/6 ratio), ``2.27`` (all-gather/reduce-scatter by local ranks)
    or ``2.28`` (``nvls_efficiency``, the ring ratio, two channels at least)."""
    ring_ll_quarter: bool = False
    """Ring LL keeps 1/4 of the bandwidth (1/3 on one node outside all-reduce and reduce)
    instead of 1/2 (2.18-2.20)."""
    ring_ll128_one_rank_per_node: float | None = None
    """Ring LL128 efficiency with fewer than two ranks per node (0.7 up to 2.22)."""
    old_inter_steps: bool = False
    """The ring's network steps counted as ``2 * nodes`` for all-reduce (``nodes`` for
    broadcast and reduce) instead of ``2 * (nodes - 1)`` (up to 2.22)."""
    one_rank_tree_net_latency: bool = False
    """With one rank per node every algorithm is charged the tree's network hop (2.23+)."""
    collnet_arity_us: float = 0.4
    """CollNet direct serialisation per local rank [us] (0.5 in 2.18)."""
    pat_efficiency: float | None = None
    """PAT bandwidth factor (0.85 in 2.23, 0.75 since 2.24); None: no PAT (before 2.23)."""
    pat_base_us: float = 8.0
    """PAT fixed cost [us]."""
    nvls_gather_scatter: bool = True
    """NVLS runs all-gather and reduce-scatter on one node (2.19+)."""
    ll128_compute_caps: tuple[int, ...] | None = None
    """Compute capabilities LL128 is on by default for; None: any from sm70 (2.27+)."""
    ll128_network_rule: str = "pxn"
    """How far the GPU-to-NIC path may reach with LL128 on: ``pxn`` (PXB, or PXN on
    Hopper+; up to 2.26), ``p2c`` (PXB, or P2C on Hopper+; 2.27.3) or ``pxn_c2c`` (PXN on
    Hopper+, counting C2C-attached NICs; 2.27.7+)."""
    ll128_mixed_hopper: bool = False
    """LL128 stays on between GPUs of different compute capabilities when all are Hopper+
    (2.30.3+)."""
    tree_correction_sizes: int = 23
    """Sizes (powers of two from 64 B) the tree's medium-size correction covers."""
    nvls_tree_correction: bool = False
    """NVLS+tree all-reduce gets the tree correction on Blackwell with x86 hosts (2.29+)."""
    blackwell_rows: bool = False
    """The tables have a Blackwell row (2.25+); before, Blackwell used Hopper's."""
    speeds_intra: tuple[tuple[float, ...], ...] = ()
    """Per-channel speeds the search tries within a node: pre-Hopper, Hopper[, Blackwell]."""
    speeds_inter: tuple[tuple[float, ...], ...] = ()
    """Per-channel speeds the search tries across nodes: pre-Hopper, Hopper[, Blackwell]."""
    search_2_19: bool = True
    """The search duplicates channels before its second pass and raises ring speeds in it
    (2.19+); 2.18 duplicated at the end and raised tree speeds only."""
    max_channels: int = 64
    """MAXCHANNELS (32 up to 2.26)."""
    nvls_channels: tuple[int, int, int] = (16, 32, 24)
    """NVLS channels on Hopper, on Blackwell across domains, on Blackwell within one domain
    (``NVLS_NCHANNELS_SM90/SM100/SM100_NVL``; 16 everywhere before 2.25)."""
    hopper_channel_doubling_all: bool = True
    """The multi-node channel doubling (ring speed above 45 GB/s, fewer than 16 channels)
    applies to Hopper and newer (2.26+), not only sm90."""
    blackwell_nvls_tree_tuning: bool = False
    """Blackwell NVLS channels across domains follow the NICs' speed and the GPUs per
    domain (``ncclNvlsTreeSm100Tuning`` in src/transport/nvls.cc, 2.30.3+)."""
    nvls_min_gpus: int = 3
    """Fewest GPUs NCCL's topology must hold (a node's ranks, or an NVLink clique's) for it
    to turn NVLink SHARP on: ``ncclNvlsInit`` (src/transport/nvls.cc) returns early for
    ``gpuCount <= 2`` up to 2.28.3 and for ``gpuCount < 2`` from 2.28.7."""
    rings_on_nvls_channels: bool = False
    """Rings and trees run on ``comm->nChannels``, which NVLS raises to its own channel
    count (src/graph/connect.cc), instead of ``comm->collChannels`` (src/enqueue.cc
    ``topoGetAlgoInfo``, 2.22+)."""
    p2p_ll_rule: str = "op"
    """Up to what a point-to-point operation runs LL (``addP2pToPlan`` in src/enqueue.cc):
    ``op``, its bytes up to NCCL_P2P_LL_THRESHOLD (to 2.21); ``peer``, up to that times
    the channels a peer may use (2.22 to 2.28); ``parts``, up to that times the channels
    its parts take (2.29+). See ``fabricui.engine.nccl.p2p``."""
    nvls_multi_node_nvlink: bool = True
    """NVLink SHARP runs on an NVLink clique of several hosts (an NVL72 rack's trays); 2.20
    turns it off there (``comm->MNNVL`` in ``ncclNvlsInit``; its ``comm->nNodes > 1`` test
    reads the node count before init.cc has counted the nodes, so separate nodes keep
    NVLS+tree)."""

    @property
    def version(self) -> str:
        """The version of the tag the tables were read at (``2.23.4``)."""
        return self.tag[1:].rsplit("-", 1)[0]


def _table(*rows: tuple[float, float, float]) -> Table:
    """Seven algorithm rows, padding a missing PAT row with zeros (before 2.23)."""
    padded = list(rows) + [(0.0, 0.0, 0.0)] * (len(ALGORITHMS) - len(rows))
    return tuple(padded)


_VOLTA_AMPERE_SPEEDS_INTRA = (
    *(40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0),
    *(4.0, 3.0),
)
_VOLTA_AMPERE_SPEEDS_INTER = (
    *(48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0),
    *(6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
)
_TAIL = (12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)

#: NCCL 2.18.1 (tag v2.18.1-1): the first release of this model's range.
V2_18_1 = Release(
    since=(2, 18, 1),
    tag="v2.18.1-1",
    base_us=_table(
        (6.8, 14.0, 0.0),
        (6.6, 14.0, 8.4),
        (6.8, 14.0, 0.0),
        (6.8, 14.0, 0.0),
        (0.0, 0.0, 23.0),
        (0.0, 0.0, 23.0),
    ),  # fmt: skip
    hop_us=(
        _table((0.6, 1.25, 28), (0.6, 1.9, 3.4), (0, 0, 8.0), (0, 0, 4.75), (0, 0, 0), (0, 0, 0)),
        _table((1.0, 1.9, 28), (1.0, 2.5, 5.7), (0, 0, 8.0), (0, 0, 8.0), (0, 0, 0), (0, 0, 0)),
        _table((5.0, 8.5, 28), (2.7, 4.0, 14.0), (0, 0, 10.7), (0, 0, 14), (0, 0, 18), (0, 0, 19)),
    ),
    ll_max_GBps=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0)),
    ring_ll128_cap_GBps=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3),
    tree_ll128_cap_GBps=((20.0,) * 3, (20.0,) * 3, (36.7,) * 3),
    tree_cap_GBps=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 33.0)),
    nvls_model="2.18",
    ring_ll_quarter=True,
    ring_ll128_one_rank_per_node=0.7,
    old_inter_steps=True,
    collnet_arity_us=0.5,
    nvls_gather_scatter=False,
    ll128_compute_caps=(70, 80, 90),
    speeds_intra=(_VOLTA_AMPERE_SPEEDS_INTRA, (60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0)),
    speeds_inter=(
        _VOLTA_AMPERE_SPEEDS_INTER,
        (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, *_TAIL),
    ),
    search_2_19=False,
    max_channels=32,
    nvls_channels=(16, 16, 16),
    hopper_channel_doubling_all=False,
)

#: 2.18.3-1: tree Simple hops 4 / 6 / 14 us, separate ring and tree LL128 caps, Hopper
#: tree cap 36 on 3+ nodes.
V2_18_3 = replace(
    V2_18_1,
    since=(2, 18, 3),
    tag="v2.18.3-1",
    hop_us=(
        _table((0.6, 1.25, 4), (0.6, 1.9, 3.4), (0, 0, 8.0), (0, 0, 4.75), (0, 0, 0), (0, 0, 0)),
        _table((1.0, 1.9, 6), (1.0, 2.5, 5.7), (0, 0, 8.0), (0, 0, 8.0), (0, 0, 0), (0, 0, 0)),
        _table((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 10.7), (0, 0, 14), (0, 0, 18), (0, 0, 19)),
    ),
    tree_ll128_cap_GBps=((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0)),
    tree_cap_GBps=((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0)),
)

#: 2.19.3-1: NVLS costs move from the base to the NVLink hop (23 us), CollNet costs
#: rebalanced, tree Simple hops back to 28 us, NVLS all-gather/reduce-scatter on one node,
#: NVLS bandwidth the smaller of the graph's speeds, the modern search flow.
V2_19 = replace(
    V2_18_3,
    since=(2, 19, 0),
    tag="v2.19.3-1",
    base_us=_table(
        (6.8, 14.0, 0.0),
        (6.6, 14.0, 8.4),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
    ),  # fmt: skip
    hop_us=(
        _table((0.6, 1.25, 28), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 23), (0, 0, 23)),
        _table((1.0, 1.9, 28), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0)),
        _table((5.0, 8.5, 28), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 14)),
    ),
    nvls_model="2.19",
    collnet_arity_us=0.4,
    nvls_gather_scatter=True,
    speeds_intra=(
        _VOLTA_AMPERE_SPEEDS_INTRA,
        (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
    ),
    speeds_inter=(
        _VOLTA_AMPERE_SPEEDS_INTER,
        (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, *_TAIL),
    ),
    search_2_19=True,
)

#: 2.20.3-1: no NVLink SHARP on a multi-node NVLink clique.
V2_20 = replace(V2_19, since=(2, 20, 0), tag="v2.20.3-1", nvls_multi_node_nvlink=False)

#: 2.21.5-1: NVLS hop 25 us, Hopper LL ceiling 141/45/35, ring LL keeps half, a
#: multi-node NVLink clique fused into one topology (src/graph/topo.cc), Hopper intra speed
#: 11 added.
V2_21 = replace(
    V2_20,
    since=(2, 21, 0),
    tag="v2.21.5-1",
    hop_us=(
        _table((0.6, 1.25, 28), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25)),
        V2_19.hop_us[1],
        V2_19.hop_us[2],
    ),
    ll_max_GBps=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0)),
    ring_ll_quarter=False,
    nvls_multi_node_nvlink=True,
    speeds_intra=(
        _VOLTA_AMPERE_SPEEDS_INTRA,
        (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    ),
)

#: 2.22.3-1: the same tables; point-to-point runs LL up to the threshold per channel of a
#: peer; rings and trees run on as many channels as NVLS where NVLS has more.
V2_22 = replace(
    V2_21, since=(2, 22, 0), tag="v2.22.3-1", p2p_ll_rule="peer", rings_on_nvls_channels=True
)

#: 2.23.4-1: PAT (all-gather/reduce-scatter, one GPU per node), tree Simple base 8.4 and
#: hops 4 / 4 / 14 us, the ring's network steps ``2 (nodes - 1)``, one rank per node
#: charged the tree's network hop, no LL128 penalty at one rank per node.
V2_23 = replace(
    V2_22,
    since=(2, 23, 0),
    tag="v2.23.4-1",
    base_us=_table(
        (6.8, 14.0, 8.4),
        (6.6, 14.0, 8.4),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
    ),  # fmt: skip
    hop_us=(
        _table((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 25), (0, 0, 25)),
        _table((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 3.7), (0, 0, 2.8), (0, 0, 0), (0, 0, 0)),
        _table((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 31), (0, 0, 30), (0, 0, 18), (0, 0, 14)),
    ),
    ring_ll128_one_rank_per_node=None,
    old_inter_steps=False,
    one_rank_tree_net_latency=True,
    pat_efficiency=0.85,
)

#: 2.24.3-1: PAT at 0.75; NCCL_ALGO/NCCL_PROTO take per-collective prefixes.
V2_24 = replace(V2_23, since=(2, 24, 0), tag="v2.24.3-1", pat_efficiency=0.75)

#: 2.25.1-1: a Blackwell row (twice Hopper's), LL128 on sm100/sm120, Blackwell speeds and
#: NVLS channels.
V2_25 = replace(
    V2_24,
    since=(2, 25, 0),
    tag="v2.25.1-1",
    ll_max_GBps=(*V2_24.ll_max_GBps, (282.0, 90.0, 70.0)),
    ring_ll128_cap_GBps=(*V2_24.ring_ll128_cap_GBps, (73.4,) * 3),
    tree_ll128_cap_GBps=(*V2_24.tree_ll128_cap_GBps, (73.4, 73.4, 58.0)),
    tree_cap_GBps=(*V2_24.tree_cap_GBps, (77.4, 82.8, 72.0)),
    blackwell_rows=True,
    ll128_compute_caps=(70, 80, 90, 100, 120),
    speeds_intra=(
        *V2_24.speeds_intra,
        (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0),
    ),
    speeds_inter=(*V2_24.speeds_inter, V2_24.speeds_inter[1]),
    nvls_channels=(16, 32, 32),
)

#: 2.26.2-1: channel doubling across nodes for every Hopper+ GPU.
V2_26 = replace(V2_25, since=(2, 26, 0), tag="v2.26.2-1", hopper_channel_doubling_all=True)

#: 2.27.3-1: 64 channels, LL128 on any sm70+, LL128 to NICs behind a Grace (P2C), NVLS
#: all-gather/reduce-scatter by local ranks, 24 NVLS channels within one Blackwell domain.
V2_27_3 = replace(
    V2_26,
    since=(2, 27, 3),
    tag="v2.27.3-1",
    nvls_model="2.27",
    ll128_compute_caps=None,
    ll128_network_rule="p2c",
    speeds_intra=(
        *V2_26.speeds_intra[:2],
        (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
    ),
    speeds_inter=(
        *V2_26.speeds_inter[:2],
        (47.9, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, *_TAIL),
    ),
    max_channels=64,
    nvls_channels=(16, 32, 24),
)

#: 2.27.7-1: LL128 up to PXN on Hopper+, counting NICs behind a Grace.
V2_27_7 = replace(V2_27_3, since=(2, 27, 7), tag="v2.27.7-1", ll128_network_rule="pxn_c2c")

#: 2.28.3-1: tuner constants a plugin can override, NVLink SHARP efficiency, PAT base and
#: hops in the tables, Blackwell caps of its own, Blackwell inter speed 96.
V2_28_3 = replace(
    V2_27_7,
    since=(2, 28, 3),
    tag="v2.28.3-1",
    base_us=_table(
        (6.8, 14.0, 8.4),
        (6.6, 14.0, 8.4),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (8.0, 8.0, 8.0),
    ),  # fmt: skip
    hop_us=(
        _table(
            (0.6, 1.25, 4.0),
            (0.6, 1.9, 3.4),
            (0, 0, 3.7),
            (0, 0, 2.8),
            (0, 0, 25),
            (0, 0, 25),
            (0, 0, 4.0),
        ),
        _table(
            (1.0, 1.9, 4.0),
            (1.0, 2.5, 5.7),
            (0, 0, 3.7),
            (0, 0, 2.8),
            (0, 0, 0),
            (0, 0, 0),
            (0, 0, 4.0),
        ),
        _table(
            (5.0, 8.5, 14),
            (2.7, 4.0, 14.0),
            (0, 0, 31),
            (0, 0, 30),
            (0, 0, 18),
            (0, 0, 14),
            (0, 0, 14),
        ),
    ),  # fmt: skip
    tree_ll128_cap_GBps=(*V2_27_7.tree_ll128_cap_GBps[:3], (55.6, 31.67, 20.0)),
    tree_cap_GBps=(*V2_27_7.tree_cap_GBps[:3], (70.0, 42.8, 24.0)),
    nvls_tree_cap_GBps=(
        (26.5, 18.5, 10.0),
        (24.0, 23.6, 17.8),
        (0.0, 57.7, 45.5),
        (0.0, 96.0, 43.1),
    ),  # fmt: skip
    nvls_efficiency=(0.0, 0.0, 0.85, 0.74),
    nvls_model="2.28",
    speeds_inter=(
        *V2_27_7.speeds_inter[:2],
        (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, *_TAIL),
    ),
)

#: 2.28.7-1: NVLink SHARP from two GPUs (``gpuCount < 2`` turns it off, not ``<= 2``).
V2_28_7 = replace(V2_28_3, since=(2, 28, 7), tag="v2.28.7-1", nvls_min_gpus=2)

#: 2.28.9-1: NVLS+tree network hop 20.9 us, Blackwell ring LL128 34.6 on two nodes.
V2_28_9 = replace(
    V2_28_7,
    since=(2, 28, 9),
    tag="v2.28.9-1",
    hop_us=(
        V2_28_3.hop_us[0],
        V2_28_3.hop_us[1],
        _table(
            (5.0, 8.5, 14),
            (2.7, 4.0, 14.0),
            (0, 0, 31),
            (0, 0, 30),
            (0, 0, 18),
            (0, 0, 20.9),
            (0, 0, 14),
        ),  # fmt: skip
    ),
    ring_ll128_cap_GBps=(*V2_28_3.ring_ll128_cap_GBps[:3], (73.4, 34.6, 73.4)),
    nvls_tree_cap_GBps=(*V2_28_3.nvls_tree_cap_GBps[:3], (0.0, 96.0, 43.8)),  # type: ignore[index]
)

#: 2.29.2-1: point-to-point LL up to the threshold per channel its parts take, Blackwell
#: ring LL128 34.5, tree correction to 512 MiB, NVLS+tree corrected on
#: Blackwell with x86 hosts, Blackwell intra speed 45.
V2_29_2 = replace(
    V2_28_9,
    since=(2, 29, 2),
    tag="v2.29.2-1",
    p2p_ll_rule="parts",
    ring_ll128_cap_GBps=(*V2_28_9.ring_ll128_cap_GBps[:3], (34.5, 34.6, 34.5)),
    tree_correction_sizes=24,
    nvls_tree_correction=True,
    speeds_intra=(
        *V2_28_9.speeds_intra[:2],
        (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
    ),
)

#: 2.29.7-1: Blackwell ring LL128 40, Blackwell inter speed 80.
V2_29_7 = replace(
    V2_29_2,
    since=(2, 29, 7),
    tag="v2.29.7-1",
    ring_ll128_cap_GBps=(*V2_29_2.ring_ll128_cap_GBps[:3], (40.0, 40.0, 40.0)),
    speeds_inter=(
        *V2_29_2.speeds_inter[:2],
        (96.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, *_TAIL),
    ),
)

#: 2.30.3-1 (the same tables in v2.30.7-1, the newest release read): Blackwell NVLS+tree
#: cap 80 on 3+ domains, LL128 between mixed Hopper+ GPUs, Blackwell inter speed 86.
V2_30 = replace(
    V2_29_7,
    since=(2, 30, 3),
    tag="v2.30.7-1",
    nvls_tree_cap_GBps=(*V2_29_7.nvls_tree_cap_GBps[:3], (0.0, 96.0, 80.0)),  # type: ignore[index]
    ll128_mixed_hopper=True,
    blackwell_nvls_tree_tuning=True,
    speeds_inter=(
        *V2_29_7.speeds_inter[:2],
        (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, *_TAIL),
    ),
)

#: Every release line, oldest first.
RELEASES: tuple[Release, ...] = (
    V2_18_1,
    V2_18_3,
    V2_19,
    V2_20,
    V2_21,
    V2_22,
    V2_23,
    V2_24,
    V2_25,
    V2_26,
    V2_27_3,
    V2_27_7,
    V2_28_3,
    V2_28_7,
    V2_28_9,
    V2_29_2,
    V2_29_7,
    V2_30,
)
#: The newest release modelled (the default).
NEWEST = RELEASES[-1]
#: The newest release read, as users name it.
NEWEST_VERSION = "2.30.7"


def parse_version(text: object) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` from ``2.21``, ``2.23.4-1``, ``2.29.2+cuda13.1``, or None.

    A bare ``major.minor`` means that line's newest patch (``2.21`` -> ``(2, 21, 99)``).
    """
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch) if patch is not None else 99


def release_for(version: tuple[int, int, int] | str | None) -> Release:
    """The tuning model NCCL ``version`` runs (None: the newest).

    Raises:
        EngineError: A version before 2.18 (the oldest modelled) or one that is not a
            version at all.
    """
    if version is None:
        return NEWEST
    parsed = parse_version(version) if isinstance(version, str) else version
    if parsed is None:
        raise EngineError(f"not an NCCL version: {version!r} (e.g. 2.21 or 2.23.4)")
    if parsed < RELEASES[0].since[:2] + (0,):
        oldest = ".".join(str(v) for v in RELEASES[0].since[:2])
        raise EngineError(
            f"NCCL {'.'.join(str(v) for v in parsed[:2])} predates the tuning model "
            f"modelled here ({oldest} to {NEWEST_VERSION})"
        )
    chosen = RELEASES[0]
    for release in RELEASES:
        if release.since <= parsed:
            chosen = release
    return chosen
