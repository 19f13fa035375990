"""DeepEP's normal kernels across nodes: the flex dispatcher's dispatch and combine on
DeepEP's own RDMA path, not on NCCL's all-to-all.

Megatron-Core's flex dispatcher calls DeepEP's ``Buffer.dispatch`` and ``Buffer.combine``
(NVIDIA/Megatron-LM 19c61ebd ``megatron/core/transformer/moe/fused_a2a.py``), the normal
kernels of ``csrc/kernels/internode.cu`` (deepseek-ai/DeepEP 3b1045d; ``legacy/`` at
dd758ca). Their dispatch runs ``num_sms / 2`` channels; each channel's RDMA sender writes
each of its tokens once per destination node whose eight NVLink ranks hold one of its
experts (the own node's copy goes to its receive buffer, no RDMA), and the coordinator
puts them to every node on the channel's own queue pair (``nvshmemi_ibgda_put_nbi_thread``
with ``channel_id`` as the QP; ``num_rc_per_pe >= num_channels``), to the same NVLink
rank of that node, which forwards them over NVLink. Combine runs the same path back.
HybridEP, the flex dispatcher's other backend (priced as ``deepep``), does the same on an
RDMA path of its own: one copy of a token per remote NVLink domain (``rdma_token_buffer``
of ``max_tokens_per_rank x (num_nodes - 1) x hidden``, deepseek-ai/DeepEP hybrid-ep
94a9f8f ``docs/Hybrid-EP_Implementation.md``), put by the GPU through DOCA GPUNetIO
(``csrc/hybrid_ep/buffer/internode_doca.cu``).

The ``ep`` strategy counts those bytes (``dispatch_copies``: a copy per destination
node). The rate is DeepEP's own: NCCL's all-to-all gives each peer few channels
(``ModelConstants.p2p_efficiency``) and posts a send and a receive per peer
(``p2p_peer_us``); DeepEP's channels all reach every node, so a call moves its bytes at
the busiest link's own rate, after the launch, one network step and the fill of a
chunked pipeline (``alpha_beta``'s Simple terms: DeepEP's RDMA sends are chunked too,
``num_max_rdma_chunked_send_tokens``). DeepEP's README (3b1045d) measures its normal
kernels at 58 and 51 GB/s per H800 with a 400 Gb/s CX7 at EP 32 and 64, counting a token
once per destination node, its own included; the tests check the priced rate against
those figures, none of which is read here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Callable

import numpy as np

from fabricui.engine.algorithms import alpha_beta
from fabricui.engine.group import NO_GPUDIRECT_FAMILIES, Group
from fabricui.engine.training.pricing import PricedOp

#: Algorithm name the operation table shows for a call priced here.
ALGORITHM = "deepep/rdma"


def raw_spb(group: Group) -> float:
    """Microseconds per message byte of the busiest link when each rank spreads its bytes
    evenly over the group's other ranks (the copies per node the ``ep`` strategy counts,
    the share that stays in the node over NVLink)."""

    def compute() -> float:
        a, b = np.meshgrid(group.ranks, group.ranks, indexing="ij")
        off = a != b
        volume = np.full(int(off.sum()), 1.0 / group.n)
        return float(group.seconds_per_byte(a[off], b[off], volume))

    return float(group.memo(("deepep", "spb"), compute))


def on_rdma_path(group: Group) -> bool:
    """The group spans nodes over a network with GPUDirect RDMA, where DeepEP's normal
    kernels move the flex dispatcher's calls; within one node (NVLink only), or over
    sockets (no RDMA for DeepEP to use), they are NCCL's all-to-all."""
    return group.n_nodes > 1 and group.fabric.net_family not in NO_GPUDIRECT_FAMILIES


def call_us(group: Group, size_bytes: float) -> float:
    """One dispatch or combine of ``size_bytes`` per rank (nccl-tests' all-to-all size) on
    a group that spans nodes [us]: the launch, one network step and the pipeline's fill,
    then the bytes at the busiest link's rate."""
    sizes = np.asarray([float(size_bytes)])
    return float(alpha_beta(group, sizes, "simple", 0.0, 1.0, raw_spb(group))[0])


def on_rdma(
    priced: Sequence[PricedOp], group_of: Callable[[tuple[int, ...]], Group]
) -> list[PricedOp]:
    """The EP dispatch and combine calls of the flex dispatcher repriced on DeepEP's RDMA
    path where their group spans nodes over a network with GPUDirect RDMA; within one
    node (NVLink only), or over sockets (no RDMA for DeepEP to use), they keep NCCL's
    price.

    Args:
        priced: Priced operations (``price_calls``).
        group_of: The engine group on a tuple of ranks (``Pricer.group``).
    """
    out = []
    for p in priced:
        if p.op.group == "ep" and p.op.collective == "all_to_all" and p.call_us > 0:
            group = group_of(p.ranks)
            if on_rdma_path(group):
                p = dataclasses.replace(
                    p, call_us=call_us(group, p.op.size_bytes), algorithm=ALGORITHM
                )
        out.append(p)
    return out
