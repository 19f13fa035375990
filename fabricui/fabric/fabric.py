"""The fabric: numpy tables of devices and directed links, laid out node block by node block.

Layout contract (builders keep it, the router relies on it): node ``n`` owns devices
``[n * node_devices, (n + 1) * node_devices)`` and links ``[n * node_links, (n + 1) *
node_links)``, every node block identical up to that offset; network devices (leaf, spine,
core switches, dragonfly routers) and their links follow the node blocks. A torus has no
network devices: its chip-to-chip links (all of them, also between chips of one node) form
the network block.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fabricui.model import GpuSpec, LinkGeneration
from fabricui.model.topology import TopologySpec

if TYPE_CHECKING:
    from fabricui.fabric.network import Dragonfly, FatTree, Torus

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]


class DeviceKind(IntEnum):
    """What a device is; the value is stored in ``Fabric.dev_kind``."""

    GPU = 0
    CPU = 1
    PCIE_SWITCH = 2
    NVSWITCH = 3
    NIC = 4
    LEAF = 5
    SPINE = 6
    CORE = 7
    ROUTER = 8


#: Short name prefix of each kind, used in device names (``n0.nvsw0``, ``leaf1``).
KIND_PREFIX = {
    DeviceKind.GPU: "g",
    DeviceKind.CPU: "cpu",
    DeviceKind.PCIE_SWITCH: "pcie",
    DeviceKind.NVSWITCH: "nvsw",
    DeviceKind.NIC: "nic",
    DeviceKind.LEAF: "leaf",
    DeviceKind.SPINE: "spine",
    DeviceKind.CORE: "core",
    DeviceKind.ROUTER: "router",
}

#: Network switch kinds (above the NICs).
NETWORK_SWITCHES = (DeviceKind.LEAF, DeviceKind.SPINE, DeviceKind.CORE, DeviceKind.ROUTER)


@dataclass(frozen=True)
class Fabric:
    """Devices and directed links of a built topology.

    Every physical cable bundle appears as two directed links (one per direction); a
    bundle of parallel cables is one link whose bandwidth is their sum (``link_count``).
    """

    spec: TopologySpec
    """The spec this fabric was built from."""
    dev_kind: npt.NDArray[np.int8]
    """(n_devices,) ``DeviceKind`` value."""
    dev_node: IntArray
    """(n_devices,) node index, -1 for network switches."""
    dev_index: IntArray
    """(n_devices,) index among devices of the same kind in the same node (or network)."""
    dev_lat_us: FloatArray
    """(n_devices,) latency added when traffic passes through the device [us]."""
    dev_model: tuple[str, ...]
    """Hardware labels referenced by ``dev_model_id`` (see ``model_of``)."""
    dev_model_id: npt.NDArray[np.int16]
    """(n_devices,) index into ``dev_model``."""
    link_src: IntArray
    """(n_links,) source device."""
    link_dst: IntArray
    """(n_links,) destination device."""
    link_bw_GBps: FloatArray
    """(n_links,) bandwidth per direction [GB/s]."""
    link_lat_us: FloatArray
    """(n_links,) latency of the link [us]."""
    link_eff: FloatArray
    """(n_links,) achievable fraction of ``link_bw_GBps`` for bulk transfers (hwdb figure)."""
    link_gen: npt.NDArray[np.int16]
    """(n_links,) index into ``generations``."""
    link_count: npt.NDArray[np.int16]
    """(n_links,) parallel links (NVLinks, ports, cables) aggregated in this one."""
    generations: tuple[str, ...]
    """Link generation ids referenced by ``link_gen``."""
    gpu_dev: IntArray
    """(n_gpus,) device id of each global rank."""
    gpu_nic: IntArray
    """(n_gpus,) NIC device each rank uses for the network, -1 without a network."""
    gpu_cpu: IntArray
    """(n_gpus,) CPU socket device of each rank (host-memory staging)."""
    dev_reduces: npt.NDArray[np.bool_]
    """(n_devices,) True for switches that reduce in the network (NVLS, SHARP)."""
    gpu: GpuSpec
    """The GPU model of every rank."""
    node_devices: int
    """Devices per node block."""
    node_links: int
    """Links per node block."""
    tree: FatTree | None = None
    """The fat-tree's regular structure with absolute link ids (None without one)."""
    dragonfly: Dragonfly | None = None
    """The dragonfly's groups, gateways and link tables, absolute ids (None without one)."""
    torus: Torus | None = None
    """The torus's shape and per-chip link table, absolute ids (None without one)."""
    net_protocols: tuple[str, ...] = ()
    """NCCL protocols the NICs' transport carries across nodes (empty: all)."""
    generation_records: tuple[LinkGeneration, ...] = ()
    """The hwdb record of each of ``generations`` (same order), for what the engine reads
    per generation (tier, protocols a link carries); empty when a builder gives none."""
    switch_names: tuple[str, ...] = ()
    """Real names of the network devices (in device order after the node blocks) of an
    imported cluster; empty: names are derived (``leaf3``)."""

    @property
    def n_devices(self) -> int:
        """Number of devices."""
        return int(self.dev_kind.shape[0])

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return int(self.link_src.shape[0])

    @property
    def n_gpus(self) -> int:
        """Number of GPUs (global ranks)."""
        return int(self.gpu_dev.shape[0])

    @property
    def nodes(self) -> int:
        """Number of nodes."""
        return self.spec.nodes

    @property
    def gpus_per_node(self) -> int:
        """GPUs per node."""
        return self.spec.gpus_per_node

    def device_name(self, dev: int) -> str:
        """Stable name of a device: ``n3.g7``, ``n0.nvsw0``, ``n2.nic5``, ``leaf1``,
        ``router12``, or an imported cluster's real switch name (``LG01-01``)."""
        node = int(self.dev_node[dev])
        if node < 0 and self.switch_names:
            return self.switch_names[dev - self.nodes * self.node_devices]
        kind = DeviceKind(int(self.dev_kind[dev]))
        prefix = KIND_PREFIX[kind]
        index = int(self.dev_index[dev])
        return f"n{node}.{prefix}{index}" if node >= 0 else f"{prefix}{index}"

    def model_of(self, dev: int) -> str:
        """Hardware label of a device (``H100 SXM5``, ``Quantum-2 QM9700``)."""
        return self.dev_model[int(self.dev_model_id[dev])]

    def gpu_name(self, rank: int) -> str:
        """``n<node>.g<gpu>`` of a global rank."""
        return f"n{rank // self.gpus_per_node}.g{rank % self.gpus_per_node}"

    def devices_of_kind(self, kind: DeviceKind) -> IntArray:
        """Device ids of one kind, in id order."""
        return np.flatnonzero(self.dev_kind == kind).astype(np.int32)
