"""NCCL's topology search, in closed form: channels and per-channel speeds per algorithm.

NCCL builds each algorithm's channels by a depth-first search over its topology graph
(src/graph/search.cc ``ncclTopoCompute``): it tries per-channel speeds from a fixed list,
fastest first, keeps as many channels as the links' remaining bandwidth allows, lowers the
speed while a slower one could still carry more in total (down to about half the best found),
duplicates fast channels, then tries to raise the speed again with that many channels. This
module follows the same passes, but counts the channels a speed allows from the links'
capacities instead of walking paths:

* within a node, a ring or chain uses each GPU's NVLink (to its NVSwitch, or one directed
  peer link of a mesh) or its PCIe link once per channel;
* across nodes, each channel also leaves through one NIC, and the GPU-to-NIC path
  (``min(NIC port, PCIe)``) bounds the speed;
* an NVLS head loads every GPU's NVSwitch link once and its own twice; across nodes each
  head owns one NIC.

Runtime channels follow src/graph/connect.cc ``ncclTopoPostset``: twice the search's ring
and tree channels, doubled again across nodes on Hopper+ when the ring runs faster than
45 GB/s per channel and fewer than 16 channels exist, then clamped by NCCL_MAX_NCHANNELS and
raised by NCCL_MIN_NCHANNELS.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from fabricui.engine.nccl.env import NcclEnv
from fabricui.engine.nccl.releases import Release
from fabricui.engine.nccl.view import SOCKET_GBPS, NcclView

#: NCCL's ``LOC_BW`` [GB/s]: a GPU talking to itself.
LOC_GBPS = 5000.0
#: NCCL_MAX_NVLS_ARITY: most NVLS heads.
MAX_NVLS_HEADS = 32
#: NCCL_MAX_DIRECT_ARITY + 1: most CollNet direct heads and local ranks.
MAX_DIRECT_HEADS = 8
#: The search keeps lowering the speed while the next one is above this share of the best.
LOWER_SPEED_SHARE = 0.49


@dataclass(frozen=True)
class Graph:
    """One algorithm's search result."""

    channels: int
    """Channels found (0: none)."""
    bw_intra_GBps: float
    """Per-channel speed within a node [GB/s]."""
    bw_inter_GBps: float
    """Per-channel speed across nodes [GB/s]."""
    pattern: str = "ring"
    """``ring``, ``balanced_tree``, ``tree``, ``nvls``, ``collnet_direct``."""


NO_GRAPH = Graph(0, 0.0, 0.0, "none")


@dataclass(frozen=True)
class Graphs:
    """Every algorithm's graph and the runtime channel counts."""

    ring: Graph
    tree: Graph
    nvls: Graph
    collnet_direct: Graph
    collnet_chain: Graph
    channels: int
    """Channels rings and trees run on: ``comm->collChannels`` up to 2.21, from 2.22
    ``comm->nChannels``, which NVLS raises to its own count (``rings_on_nvls_channels``)."""
    nvls_channels: int
    """Runtime NVLS channels (``comm->nvlsChannels``)."""
    own_channels: int
    """``comm->nChannels`` before NVLS raises it: the channels rings and trees build, which
    NVLS's extra channels copy in turn (channel ``c`` a copy of ``c mod own_channels``,
    src/graph/connect.cc ``copyChannels``)."""

    def of(self, algorithm: str) -> Graph:
        """The graph NCCL tunes ``algorithm`` with (NVLS+tree uses NVLS's, PAT the tree's)."""
        return {
            "tree": self.tree,
            "ring": self.ring,
            "collnet_direct": self.collnet_direct,
            "collnet_chain": self.collnet_chain,
            "nvls": self.nvls,
            "nvls_tree": self.nvls,
            "pat": self.tree,
        }[algorithm]


def _speeds(release: Release, view: NcclView, inter: bool) -> tuple[float, ...]:
    arrays = release.speeds_inter if inter else release.speeds_intra
    row = 0 if view.compute_capability < 90 else 1 if view.compute_capability < 100 else 2
    return arrays[min(row, len(arrays) - 1)]


def _intra_channels(view: NcclView, speed: float, multi_node: bool) -> float:
    """Ring or chain channels at ``speed`` the node's GPU links carry."""
    if view.ppn <= 1:
        return math.inf
    p = view.ppn
    if view.intra == "nvswitch":
        per_gpu = view.gpu_nvlink_GBps // speed
        # Across nodes the last GPU of each channel hands to a NIC, not to NVLink.
        return per_gpu * p / (p - 1) if multi_node else per_gpu
    if view.intra == "mesh":
        per_link = view.gpu_nvlink_GBps // speed
        return per_link * (p if multi_node else p - 1)
    bound = view.pci_GBps
    if view.sockets > 1:
        bound = min(bound, SOCKET_GBPS.get(view.cpu, 16.0))
    return bound // speed


def _net_channels(view: NcclView, speed: float) -> float:
    """Channels at ``speed`` the node's NICs carry (one NIC per channel).

    Each channel takes ``speed`` from every link of its GPU-to-NIC path (``ncclTopoFollowPath``
    in src/graph/search.cc), the NIC's PCIe link among them: a NIC behind a slower PCIe link
    than its port carries what that link does (one 24 GB/s channel for a 400 Gb/s port on
    PCIe Gen4, not two).
    """
    path = min(view.nic_GBps, view.pci_GBps) if view.pci_GBps else view.nic_GBps
    if speed > path:
        return 0
    return view.nics * (path // speed)


def _max_speed(view: NcclView, multi_node: bool) -> float:
    """NCCL's ``maxBw``: the best path from a GPU to another GPU, or to a NIC."""
    if multi_node:
        return min(view.nic_GBps, view.pci_GBps) if view.pci_GBps else view.nic_GBps
    if view.ppn <= 1:
        return LOC_GBPS
    if view.intra in ("nvswitch", "mesh"):
        return view.gpu_nvlink_GBps
    if view.sockets > 1:
        return min(view.pci_GBps, SOCKET_GBPS.get(view.cpu, 16.0))
    return view.pci_GBps


def _total_speed(view: NcclView) -> float:
    """NCCL's ``totalBw``: a GPU's NVLinks together, or its PCIe link."""
    if view.ppn <= 1 and view.n_nodes <= 1:
        return LOC_GBPS
    return max(view.pci_GBps, view.gpu_nvlink_total_GBps)


def _search(
    speeds: tuple[float, ...],
    fits: Callable[[float], float],
    min_channels: int,
    max_channels: int,
    max_speed: float,
    total_speed: float,
    start_total: float,
) -> tuple[int, float]:
    """Pass one of the search: (channels, speed) with the most total bandwidth.

    Starts at the fastest speed within ``max_speed`` whose ``min_channels`` fit
    ``start_total``, keeps a result when it carries more in total, stops when it carries
    ``total_speed`` or reaches ``max_channels``, and lowers the speed while the next one is
    above ``LOWER_SPEED_SHARE`` of the best speed found.
    """
    index = 0
    while index < len(speeds) - 1 and (
        speeds[index] > max_speed or speeds[index] * min_channels > start_total
    ):
        index += 1
    best_channels, best_speed = 0, 0.0
    while True:
        speed = speeds[index]
        channels = int(min(fits(speed), max_channels))
        if channels >= min_channels and channels * speed > best_channels * best_speed:
            best_channels, best_speed = channels, speed
        if best_channels and (
            best_channels * best_speed >= total_speed or best_channels == max_channels
        ):
            break
        if index < len(speeds) - 1 and (
            best_channels == 0 or speeds[index + 1] / best_speed > LOWER_SPEED_SHARE
        ):
            index += 1
            continue
        break
    return best_channels, best_speed


def _duplicate(channels: int, speed: float, max_channels: int, compute_capability: int):
    """NCCL's ``ncclTopoDupChannels``: fast channels are doubled at half the speed."""
    if channels == 0 or speed < 25.0:
        return channels, speed
    if compute_capability > 80 and speed < 50.0 and channels > 4:
        return channels, speed
    doubled = min(channels * 2, max_channels)
    return doubled, speed / math.ceil(doubled / channels)


def _raise(speeds: tuple[float, ...], speed: float, ok: Callable[[float], bool]) -> float:
    """Pass two: climb the speed list from ``speed`` while ``ok`` accepts the next one."""
    index = speeds.index(speed) if speed in speeds else len(speeds)
    while index > 0 and ok(speeds[index - 1]):
        index -= 1
    return speeds[index] if index < len(speeds) else speed


def ring_and_tree(view: NcclView, release: Release) -> tuple[Graph, Graph]:
    """The ring graph and the tree graph (the tree keeps the ring's channel count)."""
    multi = view.n_nodes > 1
    speeds = _speeds(release, view, multi)
    max_speed = _max_speed(view, multi)
    total = _total_speed(view)
    ring_max = release.max_channels // 2

    def fits(speed: float) -> float:
        intra = _intra_channels(view, speed, multi)
        return min(intra, _net_channels(view, speed)) if multi else intra

    channels, speed = _search(speeds, fits, 1, ring_max, max_speed, total, total)
    if channels == 0:  # NCCL falls back to one channel in PCI order at 0.1 GB/s
        fallback = Graph(1, 0.1, 0.1, "ring")
        return fallback, Graph(1, 0.1, 0.1, "tree")
    if release.search_2_19:
        channels, speed = _duplicate(channels, speed, ring_max, view.compute_capability)
        speed = _raise(speeds, speed, lambda s: fits(s) >= channels)
    else:
        channels, speed = _duplicate(channels, speed, ring_max, view.compute_capability)
    ring = Graph(channels, speed, speed, "ring")

    # Trees need exactly the ring's channels; their start ignores one device's share.
    devices = max(view.ppn, 1)
    tree_total = total * devices / (devices - 1) if devices > 1 else total
    tree_channels, tree_speed = _search(
        speeds, fits, channels, channels, max_speed, total, tree_total
    )
    if tree_channels == 0:
        tree_channels, tree_speed = channels, speed
    intra = tree_speed
    if multi:  # pass two raises the intra-node speed of trees, up to twice the network's
        intra_speeds = _speeds(release, view, True)

        def intra_ok(s: float) -> bool:
            return s < 2 * tree_speed and _intra_channels(view, s, True) >= tree_channels

        intra = _raise(intra_speeds, tree_speed, intra_ok) if intra_ok(tree_speed) else intra
    pattern = "balanced_tree"
    return ring, Graph(tree_channels, intra, tree_speed, pattern)


def nvls_graph(view: NcclView, release: Release) -> Graph:
    """The NVLS graph: heads (channels) and speeds; empty without NVLink SHARP."""
    if not view.nvls or view.gpu_nvlink_GBps <= 0:
        return NO_GRAPH
    multi = view.n_nodes > 1
    speeds = _speeds(release, view, multi)
    most = min(MAX_NVLS_HEADS, view.ppn)
    link = view.gpu_nvlink_GBps

    def heads(speed: float) -> float:
        by_links = link // speed - 1  # every head loads each GPU's link, its own twice
        if not multi:
            return most if by_links >= most else 0
        return min(by_links, most, _net_channels(view, speed), view.nics)

    total = _total_speed(view)
    start_total = total * view.ppn / (view.ppn - 1) if view.ppn > 1 else total
    channels, speed = _search(
        speeds, heads, 1 if multi else most, most, _max_speed(view, multi), total, start_total
    )
    if channels == 0:
        return NO_GRAPH
    # Pass two raises the speed of the heads' other side (the network, or the multicast
    # fan-out on one node) while it is below twice the NVLink speed.
    if multi:
        nic = min(view.nic_GBps, view.pci_GBps) if view.pci_GBps else view.nic_GBps
        inter = _climb_below(speeds, speed, lambda s: s <= nic)
    else:
        inter = _climb_below(speeds, speed, lambda s: True)
    return Graph(channels, speed, inter, "nvls")


def _climb_below(speeds: tuple[float, ...], speed: float, ok: Callable[[float], bool]) -> float:
    """NCCL's NVLS pass two: raise the inter speed one step at a time while it is below
    twice the intra speed and ``ok`` accepts the next step."""
    current = speed
    index = speeds.index(speed)
    while index > 0 and current < 2 * speed and ok(speeds[index - 1]):
        index -= 1
        current = speeds[index]
    return current


def collnet_graphs(view: NcclView, release: Release, tree: Graph) -> tuple[Graph, Graph]:
    """CollNet direct and chain graphs (empty unless CollNet is on): the chain follows the
    tree; direct uses one head per NIC, up to eight."""
    if not view.collnet:
        return NO_GRAPH, NO_GRAPH
    chain = Graph(tree.channels, tree.bw_intra_GBps, tree.bw_inter_GBps, "tree")
    speeds = _speeds(release, view, True)
    heads = max(1, min(view.ppn, MAX_DIRECT_HEADS, view.nics or 1))
    nic = min(view.nic_GBps, view.pci_GBps) if view.pci_GBps else view.nic_GBps
    inter = next((s for s in speeds if s <= nic), speeds[-1])
    intra = inter
    if view.gpu_nvlink_GBps > 0:
        intra = next(
            (s for s in speeds if s <= 2 * inter and heads * s <= view.gpu_nvlink_GBps), inter
        )
    return Graph(heads, intra, inter, "collnet_direct"), chain


def runtime_channels(
    view: NcclView, release: Release, env: NcclEnv, ring: Graph, tree: Graph, chain: Graph
) -> int:  # noqa: E501
    """``comm->nChannels``: the search's channels doubled, then NCCL's extra rules and the
    user's bounds (src/graph/connect.cc ``ncclTopoPostset``)."""
    channels = min(release.max_channels, min(ring.channels, tree.channels) * 2)
    if view.collnet and chain.bw_intra_GBps > chain.bw_inter_GBps and view.n_ranks > view.n_nodes:
        channels = min(release.max_channels, channels + channels // 2)
    hopper = (
        view.compute_capability >= 90
        if release.hopper_channel_doubling_all
        else view.compute_capability == 90
    )
    if hopper and view.n_nodes > 1 and ring.bw_intra_GBps > 45.0 and channels < 16:
        channels *= 2
    if not view.net_device_host and view.n_nodes > 1 and channels < 16:
        channels *= 2  # GPUDirect-TCPX's unpack device doubles its channels
    low, high = cta_bounds(env, release)
    if env.max_channels is not None:
        channels = min(channels, max(1, min(env.max_channels, release.max_channels)))
    channels = min(channels, high)
    if env.min_channels is not None:
        channels = max(channels, min(env.min_channels, release.max_channels))
    channels = max(channels, low)
    return max(1, channels)


def cta_bounds(env: NcclEnv, release: Release) -> tuple[int, int]:
    """``(minCTAs, maxCTAs)``: NCCL_MIN_CTAS and NCCL_MAX_CTAS, 1 and MAXCHANNELS unset,
    capped at MAXCHANNELS, the minimum lowered to the maximum (src/init.cc
    ``parseCommConfig``). They bound every kind of channel; NCCL_MIN/MAX_NCHANNELS only the
    rings' and trees'."""
    low = min(env.min_ctas or 1, release.max_channels)
    high = min(env.max_ctas or release.max_channels, release.max_channels)
    return min(low, high), high


def nvls_runtime_channels(view: NcclView, release: Release, env: NcclEnv) -> int:
    """``comm->nvlsChannels`` (src/transport/nvls.cc ``ncclNvlsInit``): the release's
    default or NCCL_NVLS_NCHANNELS, between NCCL_MIN_CTAS and NCCL_MAX_CTAS (not bounded by
    NCCL_MIN/MAX_NCHANNELS, which connect.cc applies to rings and trees only)."""
    hopper, blackwell_multi, blackwell_one = release.nvls_channels
    if view.compute_capability >= 100:
        channels = blackwell_multi if view.n_nodes > 1 else blackwell_one
        if view.n_nodes > 1 and release.blackwell_nvls_tree_tuning:
            channels = _blackwell_nvls_tree_channels(view, channels)
    else:
        channels = hopper
    if env.nvls_channels is not None:
        channels = env.nvls_channels
    low, high = cta_bounds(env, release)
    return max(low, min(high, channels))


def _blackwell_nvls_tree_channels(view: NcclView, channels: int) -> int:
    """NVLS channels of a Blackwell group across domains (2.30.3+): 32 on two domains with
    NICs of 48 GB/s or more, 24 on more domains with 48-96 GB/s NICs or with 96 GB/s NICs
    and up to 8 GPUs per domain, else 32."""
    nic = view.nic_GBps
    if view.n_nodes == 2 and nic >= 48.0:
        return 32
    if nic >= 96.0:
        return 24 if view.ppn <= 8 else 32
    if nic >= 48.0:
        return 24
    return channels


def search(view: NcclView, release: Release, env: NcclEnv) -> Graphs:
    """Every algorithm's graph and the runtime channels for ``view``."""
    ring, tree = ring_and_tree(view, release)
    nvls = nvls_graph(view, release)
    direct, chain = collnet_graphs(view, release, tree)
    own = runtime_channels(view, release, env, ring, tree, chain)
    nvls_channels = nvls_runtime_channels(view, release, env) if nvls.channels else 0
    channels = max(own, nvls_channels) if release.rings_on_nvls_channels else own
    return Graphs(
        ring=ring,
        tree=tree,
        nvls=nvls,
        collnet_direct=direct,
        collnet_chain=chain,
        channels=channels,
        nvls_channels=nvls_channels,
        own_channels=own,
    )
