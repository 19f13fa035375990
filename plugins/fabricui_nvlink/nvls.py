"""NVLink SHARP (NVLS): reductions inside the NVSwitch, on Hopper and newer.

Single node (``nvls``): every GPU pushes its data into the switch once and reads the reduced
result once, so each GPU's NVSwitch port carries about one message each way instead of the
ring's 2(n-1)/n. Across nodes (``nvlstree``): NVLS inside each node, and each GPU carries
its 1/ppn share across nodes on double binary trees over its own NIC.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from fabricui.engine.algorithms import alpha_beta
from fabricui.engine.constants import DEFAULT
from fabricui.engine.group import Group
from fabricui.engine.types import CollectiveAlgorithm, FloatArray

#: NVLS needs the switch's multicast/reduce engines (NVSwitch 3+) and Hopper-class GPUs.
MIN_ARCH_INDEX = 2
#: Setup of an NVLS operation (multicast object, switch round trip) [us].
NVLS_LATENCY_US = 21.0


def _nvls_ok(group: Group) -> bool:
    return (
        group.has_nvswitch_reduction
        and group.arch_index >= MIN_ARCH_INDEX
        and group.ppn > 1
        and len({r.shape[0] for r in group.by_node}) == 1
    )


def _intra_spb(group: Group, op: str) -> float:
    n = group.ppn
    volume = 1.0 if op == "all_reduce" else (n - 1) / n
    efficiency = DEFAULT.nvls_efficiency[min(group.arch_index, 3) - MIN_ARCH_INDEX]
    return group.switch_port_spb(volume) / efficiency


class Nvls(CollectiveAlgorithm):
    """In-switch reduction within one NVLink domain."""

    name: ClassVar[str] = "nvls"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce", "all_gather", "reduce_scatter")
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    description: ClassVar[str] = "NVLink SHARP: reduce/multicast in the NVSwitch (one node)"

    def applicable(self, group: Group, op: str) -> bool:
        """One node of Hopper+ GPUs on a reducing NVSwitch."""
        return group.n_nodes == 1 and _nvls_ok(group)

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Switch-port bound transfer plus the NVLS setup [us]."""
        spb = _intra_spb(group, op)
        return alpha_beta(group, size_bytes, protocol, 0.0, 0.0, spb) + NVLS_LATENCY_US


class NvlsTree(CollectiveAlgorithm):
    """NVLS inside each node, double binary trees across nodes (all-reduce)."""

    name: ClassVar[str] = "nvlstree"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce",)
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    description: ClassVar[str] = "NVLS within nodes + trees across nodes (all-reduce)"

    def applicable(self, group: Group, op: str) -> bool:
        """Two or more nodes, each a reducing NVLink domain."""
        return group.n_nodes > 1 and _nvls_ok(group)

    def net_spb(self, group: Group) -> float:
        """Each local GPU index runs its own trees over nodes on 1/ppn of the data."""
        return group.memo("nvlstree-net", lambda: self._raw_net_spb(group)) / (
            DEFAULT.tree_efficiency
        )

    def _raw_net_spb(self, group: Group) -> float:
        k, ppn = group.n_nodes, group.ppn
        src, dst, vol = [], [], []
        columns = np.stack(group.by_node)  # (k, ppn)
        for j in range(ppn):
            ranks = columns[:, j]
            for mirror in (False, True):
                for child in range(1, k):
                    parent = (child - 1) // 2
                    a, b = (k - 1 - child, k - 1 - parent) if mirror else (child, parent)
                    src += [ranks[a], ranks[b]]
                    dst += [ranks[b], ranks[a]]
                    vol += [0.5 / ppn, 0.5 / ppn]
        return group.seconds_per_byte(np.array(src), np.array(dst), np.array(vol))

    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """The slower of the NVLS and network stages (they pipeline) plus both latencies."""
        spb = max(_intra_spb(group, op), self.net_spb(group))
        net_steps = 2.0 * math.ceil(math.log2(group.n_nodes))
        return alpha_beta(group, size_bytes, protocol, 0.0, net_steps, spb) + NVLS_LATENCY_US
