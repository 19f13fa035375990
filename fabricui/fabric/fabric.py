"""The fabric: numpy tables of devices and directed links, laid out node block by node block.

Layout contract (builders keep it, the router relies on it): the fabric is tiled by
*scale-up domain* (the GPUs one switch fabric joins: a DGX node, or the 18 hosts of a GB200
NVL72 rack). Domain ``d`` owns devices ``[d * node_devices, (d + 1) * node_devices)`` and
links ``[d * node_links, (d + 1) * node_links)``, every domain block identical up to that
offset. Inside a domain block come its hosts, each an identical block of ``host_devices``
devices and ``host_links`` links (host ``h`` of domain ``d`` is node ``d * hosts_per_domain
+ h``), then the domain's own devices (its scale-up switch when it spans hosts) and their
links. With one host per domain (every single-server topology) domain and node are the same.
Network devices (leaf, spine, core switches, dragonfly routers) and their links follow the
domain blocks. A torus has no network devices: its chip-to-chip links (all of them, also
between chips of one node) form the network block.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from fabricui.fabric.kinds import KIND_PREFIX as KIND_PREFIX
from fabricui.fabric.kinds import NETWORK_SWITCHES as NETWORK_SWITCHES
from fabricui.fabric.kinds import DeviceKind as DeviceKind
from fabricui.model import GpuSpec, LinkGeneration
from fabricui.model.topology import TopologySpec

if TYPE_CHECKING:
    from fabricui.fabric.dragonfly import Dragonfly
    from fabricui.fabric.fat_tree import FatTree
    from fabricui.fabric.torus import Torus

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]


class FabricTables(NamedTuple):
    """Device and link arrays of a fabric or of a part of it (absolute ids), named as
    ``Fabric`` names them: builders make one per part (domain blocks, network), join them
    with ``then`` and pass the result to ``Fabric`` as keyword arguments."""

    dev_kind: npt.NDArray[np.int8]
    dev_reduces: npt.NDArray[np.bool_]
    dev_index: IntArray
    dev_node: IntArray
    dev_lat_us: FloatArray
    dev_model_id: npt.NDArray[np.int16]
    link_src: IntArray
    link_dst: IntArray
    link_bw_GBps: FloatArray
    link_lat_us: FloatArray
    link_gen: npt.NDArray[np.int16]
    link_count: npt.NDArray[np.int16]

    def then(self, other: FabricTables) -> FabricTables:
        """These devices and links followed by ``other``'s."""
        return FabricTables._make(
            np.concatenate([mine, theirs]) for mine, theirs in zip(self, other)
        )


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
    domain_torus: Torus | None = None
    """The torus the chips of each scale-up domain make (``intra.fabric: torus``): chips
    as ranks within the domain, link ids within the domain block (domain ``d``'s links are
    these plus ``d * node_links``); None without one."""
    net_protocols: tuple[str, ...] = ()
    """NCCL protocols the NICs' transport carries across nodes (empty: all)."""
    net_nccl_latency_us: float = 0.0
    """Latency the NICs' network plugin reports to NCCL (hwdb ``nccl_latency_us``), which
    NCCL's tuner adds to each network step [us]."""
    generation_records: tuple[LinkGeneration, ...] = ()
    """The hwdb record of each of ``generations`` (same order), for what the engine reads
    per generation (tier, protocols a link carries); empty when a builder gives none."""
    switch_names: tuple[str, ...] = ()
    """Real names of the network devices (in device order after the node blocks) of an
    imported cluster; empty: names are derived (``leaf3``)."""
    hosts_per_domain: int = 1
    """Hosts (nodes) in each scale-up domain block."""
    host_devices: int = 0
    """Devices per host block inside a domain block (0: the whole domain block)."""
    host_links: int = 0
    """Links per host block inside a domain block (0: the whole domain block)."""
    scaleup_prefix: str = "nvsw"
    """Device-name prefix of the scale-up switch, from its record (``nvsw``, ``ualinksw``)."""
    scaleup_label: str = "NVSw"
    """Short label of the scale-up switch for the map's rows (``NVSw``, ``UALink``)."""
    network_plan: tuple[tuple[str, str], ...] = ()
    """What the network builder chose, as (figure, value) pairs for views (tiers, switch
    counts, built oversubscription)."""

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
        """GPUs per node (host)."""
        return self.spec.gpus_per_node

    @property
    def domains(self) -> int:
        """Scale-up domain blocks (equal to ``nodes`` with one host per domain)."""
        return -(-self.nodes // self.hosts_per_domain)

    @property
    def gpus_per_domain(self) -> int:
        """GPUs in each scale-up domain block."""
        return self.gpus_per_node * self.hosts_per_domain

    @property
    def net_family(self) -> str | None:
        """Family of the network's link generation (``infiniband``, ``efa``, ``slingshot``
        ...; its hwdb record), the link id when no record came with it; None without a
        network. The family says which transport and plugin NCCL drives the NICs with."""
        net = self.spec.net
        if net is None:
            return None
        if net.link in self.generations and self.generation_records:
            return self.generation_records[self.generations.index(net.link)].family
        return net.link

    def prefix_of(self, kind: DeviceKind) -> str:
        """Device-name prefix of a kind; the scale-up switch is named by its record."""
        return self.scaleup_prefix if kind == DeviceKind.NVSWITCH else KIND_PREFIX[kind]

    @cached_property
    def host_names(self) -> tuple[str | None, ...]:
        """The name of every host of an imported cluster (``cluster.hosts``, host order:
        node by node), None for an empty slot; empty when the spec names no hosts."""
        cluster = self.spec.cluster
        if cluster is None or len(cluster.hosts) != self.nodes * cluster.hosts_per_node:
            return ()
        return tuple(cluster.host_names())

    @cached_property
    def host_layout(self) -> tuple[tuple[str | None, ...], int]:
        """(name of every host in host order, hosts per node): an imported cluster's
        (``luna-0016``, None for an empty slot), else the generated fabric's own, one host
        a node named as its GPUs are (``n3`` for ``n3.g0``)."""
        cluster = self.spec.cluster
        if cluster is not None and cluster.hosts:
            return tuple(cluster.host_names()), cluster.hosts_per_node
        return tuple(f"n{node}" for node in range(self.nodes)), 1

    def node_label(self, node: int) -> str:
        """What a node is called: its host's name on an imported cluster with one host per
        node (``luna-0016``), else ``n<node>``."""
        names = self.host_names
        if names and len(names) == self.nodes:
            name = names[node]
            if name:
                return name
        return f"n{node}"

    def device_name(self, dev: int) -> str:
        """Display name of a device, the one source every view and command uses:
        ``n3.g7``, ``n0.nvsw0``, ``n2.nic5``, ``leaf1``, ``router12``; a switch shared by
        the hosts of a domain is ``d<domain>.nvsw0``; an imported cluster's switches and
        hosts keep their real names (``LG01-01``, ``luna-0016.nic3``)."""
        node = int(self.dev_node[dev])
        if node < 0 and self.switch_names and dev >= self.domains * self.node_devices:
            return self.switch_names[dev - self.domains * self.node_devices]
        kind = DeviceKind(int(self.dev_kind[dev]))
        prefix = self.prefix_of(kind)
        index = int(self.dev_index[dev])
        if kind == DeviceKind.GPU and node >= 0:
            return self.gpu_name(node * self.gpus_per_node + index)
        if node >= 0:
            return f"{self.node_label(node)}.{prefix}{index}"
        if dev < self.domains * self.node_devices:
            return f"d{dev // self.node_devices}.{prefix}{index}"
        return f"{prefix}{index}"

    def host_device_ids(self, node: int) -> IntArray:
        """Device ids of one host's own block (its GPUs, CPUs, PCIe switches, NICs)."""
        per_host = self.host_devices or self.node_devices
        domain, host = divmod(node, self.hosts_per_domain)
        start = domain * self.node_devices + host * per_host
        return np.arange(start, start + per_host, dtype=np.int32)

    def domain_device_ids(self, domain: int) -> IntArray:
        """Device ids a domain block holds beyond its hosts' (its shared scale-up switch)."""
        start = domain * self.node_devices + self.hosts_per_domain * (
            self.host_devices or self.node_devices
        )
        return np.arange(start, (domain + 1) * self.node_devices, dtype=np.int32)

    def model_of(self, dev: int) -> str:
        """Hardware label of a device (``H100 SXM5``, ``Quantum-2 QM9700``)."""
        return self.dev_model[int(self.dev_model_id[dev])]

    def gpu_name(self, rank: int) -> str:
        """``n<node>.g<gpu>`` of a global rank, or ``<host>.g<k>`` on an imported cluster
        (GPU ``k`` of that host: ``luna-0016.g7``)."""
        node, gpu = divmod(int(rank), self.gpus_per_node)
        names = self.host_names
        if names:
            per_node = len(names) // self.nodes
            per_host = self.gpus_per_node // per_node
            host, k = divmod(gpu, per_host)
            name = names[node * per_node + host]
            if name:
                return f"{name}.g{k}"
        return f"n{node}.g{gpu}"

    def devices_of_kind(self, kind: DeviceKind) -> IntArray:
        """Device ids of one kind, in id order."""
        return np.flatnonzero(self.dev_kind == kind).astype(np.int32)
