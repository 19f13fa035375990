"""SHARP: all-reduce inside Quantum-class InfiniBand switches (NCCL's CollNet).

Each node reduces locally, every GPU sends its 1/ppn share up to the leaf switch once and
receives the reduced share once: the network carries one share each way, whatever the
number of nodes. Used only when the topology enables it (``net.sharp: true``): NCCL needs
the SHARP plugin and a configured aggregation manager.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fabricui.api import (
    DEFAULT_CONSTANTS,
    NETWORK_SWITCHES,
    CollectiveAlgorithm,
    FloatArray,
    Group,
    alpha_beta,
)

#: Aggregation tree setup and switch round trip [us].
SHARP_LATENCY_US = 8.0


class Sharp(CollectiveAlgorithm):
    """In-network all-reduce on reducing leaf/spine switches."""

    name: ClassVar[str] = "sharp"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce",)
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    description: ClassVar[str] = "SHARP in-network all-reduce on Quantum IB switches"

    def applicable(self, group: Group, op: str) -> bool:
        """Several nodes, SHARP enabled in the spec, every network switch reduces."""
        fabric = group.fabric
        net = fabric.spec.net
        switches = np.isin(fabric.dev_kind, NETWORK_SWITCHES)
        return (
            group.n_nodes > 1
            and net is not None
            and getattr(net, "sharp", False)
            and bool(switches.any())
            and bool(np.all(fabric.dev_reduces[switches]))
        )

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Local reduction among the node's GPUs and one network round trip per share.

        Inside a node NCCL's CollNet reduces on the GPUs before the switch does: a chain of
        GPUs (CollNet Chain: ``directRecvReduceDirectSend`` up to the head and
        ``directRecvCopyDirectSend`` back, as a tree's chain, src/device/all_reduce.h) or
        every GPU a head gathering its share (CollNet Direct). With the
        heads rotating over the channels each GPU's port carries ``2 (n - 1) / n`` of the
        message, a ring's load; the GPUs wait for their peers' data, reduce and forward it,
        so a node-bound stage runs at the engine's ``tree_efficiency`` of that load, as a
        tree's chain does.
        """
        ppn = group.ppn
        net_spb = group.uplink_spb(1.0 / ppn)
        intra_spb = 0.0
        if ppn > 1:
            local = Group(group.fabric, group.by_node[0], group.router)
            from fabricui.api import Ring

            intra_spb = Ring().spb(local, "all_reduce") / DEFAULT_CONSTANTS.tree_efficiency
        spb = max(net_spb, intra_spb)
        return alpha_beta(group, size_bytes, protocol, 2.0 * (ppn - 1), 2.0, spb) + SHARP_LATENCY_US
