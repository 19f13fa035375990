"""NCCL's proxy thread over a libfabric plugin: the host time each channel's network
operation adds to a latency-bound call.

One proxy thread per GPU process progresses the network operations of every channel of a
call, one after another (NVIDIA/nccl ``src/proxy.cc``: ``progressOps`` walks the active
operations; ``src/transport/net.cc``: each channel's send and receive call the plugin's
``isend``, ``irecv`` and ``test``). Where aws-ofi-nccl drives the NICs (EFA, Slingshot)
every such call goes through the plugin and libfabric (request bookkeeping, the provider's
send or write, a completion-queue read), and a step of an LL call on ``nc`` channels waits
for ``nc`` of them in turn. NCCL's own InfiniBand and RoCE transport posts its work
requests directly and its per-operation cost is within the network step already priced.
What one operation costs: ``ModelConstants.ofi_channel_op_us``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.constants import DEFAULT, ModelConstants
from fabricui.engine.nccl.tuner import ll_channels
from fabricui.engine.nccl.view import OFI_FAMILIES
from fabricui.engine.types import FloatArray

if TYPE_CHECKING:
    from fabricui.engine.group import Group


def channel_ops_us(
    group: Group,
    size_bytes: FloatArray,
    network_steps: float,
    chunks: int,
    constants: ModelConstants = DEFAULT,
) -> FloatArray:
    """(n_sizes,) time the proxy's turns over the channels add to an LL call [us].

    Args:
        group: The group.
        size_bytes: (n_sizes,) message sizes [bytes].
        network_steps: Network steps one after another on the call's slowest path.
        chunks: The ranks for a ring (its LL threshold scales with them), 1 for a tree.
        constants: Model constants (``ofi_channel_op_us``).

    Notes:
        ``(nc - 1) * network_steps * ofi_channel_op_us`` with ``nc`` the channels NCCL runs
        the size on (``ll_channels``), where the group crosses nodes over an aws-ofi-nccl
        network; else 0.
    """
    size = np.asarray(size_bytes, dtype=np.float64)
    if group.n_nodes < 2 or group.fabric.net_family not in OFI_FAMILIES:
        return np.zeros(size.shape)
    channels = ll_channels(size, group.nccl_channels, chunks)
    return (channels - 1.0) * max(0.0, network_steps) * constants.ofi_channel_op_us
