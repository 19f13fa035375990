"""NCCL's protocol for point-to-point operations (send/recv, all-to-all), per release.

NCCL does not tune point-to-point with its tables: ``addP2pToPlan`` (src/enqueue.cc) runs
LL while an operation is small, Simple above, and what "small" means changed:

- up to 2.21, LL while the operation's bytes are at most ``NCCL_P2P_LL_THRESHOLD``
  (16 KiB);
- 2.22 to 2.28, at most ``p2pnChannelsPerPeer`` times it (the channels a peer may use,
  ``ncclTopoComputeP2pChannels`` in src/graph/paths.cc: 32 on an NVSwitch node, 2 or 1
  across nodes);
- from 2.29, at most the channels that operation's parts take times it (parts of at
  least half the point-to-point chunk across nodes, an eighth within one).

A peer reached over the network has no LL buffer unless ``NCCL_ALLOC_P2P_NET_LL_BUFFERS=1``
(src/transport/net.cc: shared point-to-point buffers are Simple only), so operations that
cross nodes run Simple whatever their size.
"""

from __future__ import annotations

import math

import numpy as np

from fabricui.engine.nccl.env import NcclEnv
from fabricui.engine.nccl.releases import Release
from fabricui.engine.nccl.search import Graphs
from fabricui.engine.nccl.view import NcclView, nvlink_link_GBps

#: Point-to-point chunk over the network, over NVLink and over PCIe [bytes]
#: (NCCL_P2P_NET_CHUNKSIZE, NCCL_P2P_NVL_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE in src/init.cc).
NET_CHUNK = 128 * 1024
NVL_CHUNK = 512 * 1024
PCI_CHUNK = 128 * 1024


def pow2_up(value: float) -> int:
    """The least power of two at least ``value`` (1 for 1 or less)."""
    return 1 << max(0, math.ceil(math.log2(max(1, value))))


def _pow2_down(value: float) -> int:
    return 1 << max(0, math.floor(math.log2(max(1, value))))


def p2p_channels(view: NcclView, graphs: Graphs, release: Release) -> tuple[int, int]:
    """NCCL's point-to-point channels and the channels one peer may use.

    ``ncclTopoComputeP2pChannels``: the communicator's channels rounded up to a power of
    two; per peer the fewest any peer allows, also a
    power of two: a peer over NVLink ``2 * (path bandwidth / one NVLink's)``, over PCIe 2,
    over the network 2 halved while ``2 * ranks > 4 * channels`` (at least what drives the
    GPU's NICs).

    Returns:
        ``(p2pnChannels, p2pnChannelsPerPeer)``.
    """
    # comm->nChannels: the search raises it to the NVLS channels from 2.22, the releases
    # whose rules read these counts.
    channels = min(pow2_up(graphs.channels), _pow2_down(release.max_channels))
    least = channels
    if view.ppn > 1:
        if view.intra in ("nvswitch", "mesh") and view.gpu_nvlink_GBps > 0:
            links = int(view.gpu_nvlink_GBps / nvlink_link_GBps(view.compute_capability))
            least = min(least, 2 * max(1, links))
        else:
            least = min(least, 2)
    if view.n_nodes > 1:
        net = 2
        while net * view.n_ranks > channels * 4 and net > 1:
            net //= 2
        nics = math.ceil(view.pci_GBps / view.nic_GBps) if view.nic_GBps > 0 else 1
        least = min(least, max(nics, net))
    return channels, min(pow2_up(least), channels)


def p2p_protocols(
    op: str,
    view: NcclView,
    graphs: Graphs,
    release: Release,
    env: NcclEnv,
    size_bytes: np.ndarray,
) -> list[str]:
    """Protocol NCCL runs a point-to-point operation with, per size (``ll`` or ``simple``).

    Args:
        op: ``send_recv`` or ``all_to_all`` (whose size is split over its ranks).
        view: NCCL's view of the communicator.
        graphs: The search's result (the communicator's channels).
        release: The release modelled.
        env: The run's settings (``NCCL_P2P_LL_THRESHOLD``,
            ``NCCL_ALLOC_P2P_NET_LL_BUFFERS``).
        size_bytes: (n_sizes,) sizes, nccl-tests' convention.
    """
    peers = max(1, view.n_ranks) if op == "all_to_all" else 1
    per_op = np.asarray(size_bytes, dtype=np.float64) / peers
    if view.n_nodes > 1 and not env.p2p_net_ll_buffers:
        return ["simple"] * per_op.shape[0]
    threshold = float(env.p2p_ll_threshold)
    if release.p2p_ll_rule == "op":
        limit = np.full(per_op.shape, threshold)
    else:
        channels, per_peer = p2p_channels(view, graphs, release)
        if release.p2p_ll_rule == "peer":
            limit = np.full(per_op.shape, per_peer * threshold)
        else:
            limit = _part_channels(view, channels, per_peer, per_op) * threshold
    return ["ll" if ok else "simple" for ok in (per_op <= limit).tolist()]


def _part_channels(view: NcclView, channels: int, per_peer: int, per_op: np.ndarray) -> np.ndarray:
    """Channels each operation's parts take (2.29+ ``addP2pToPlan``): at most the fewest a
    peer may use (halved while every rank would not get one), one per ``chunk / 2`` across
    nodes or ``chunk / 8`` within one, doubled while a part stays above ``chunk`` (``32 *
    chunk`` within a node)."""
    least = per_peer
    while least * view.n_ranks > channels and least > 1:
        least //= 2
    if view.n_nodes > 1:
        chunk = NET_CHUNK
    else:
        chunk = NVL_CHUNK if view.intra in ("nvswitch", "mesh") else PCI_CHUNK
    smallest = chunk / 2 if view.n_nodes > 1 else chunk / 8
    largest = chunk if view.n_nodes > 1 else chunk * 32
    out = np.minimum(least, np.maximum(1.0, np.ceil(per_op / smallest)))
    part = np.maximum(smallest, np.ceil(per_op / out))
    while True:
        grow = (part > largest) & (out <= per_peer / 2)
        if not grow.any():
            return out
        out = np.where(grow, out * 2, out)
        part = np.where(grow, np.ceil(per_op / out), part)
