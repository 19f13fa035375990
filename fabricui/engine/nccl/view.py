"""The communicator as NCCL sees it: the handful of topology facts its tuner reads.

NCCL does not tune on the fabric itself but on what its topology detection reports: the
GPUs' compute capability, per-link NVLink bandwidths in its own units (count times a per-link
figure per generation, src/graph/topo.h), PCIe widths and rates, the NICs' port speeds, the
path type from a GPU to its NIC, and the CPU vendor. ``NcclView.of`` derives those facts
from a ``Group`` so the tuner (``tuner.py``) and the search (``search.py``) never touch the
fabric arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.engine.nccl.env import NcclEnv, socket_setting
from fabricui.engine.nccl.releases import Release

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric

#: Compute capability of NVIDIA GPUs (major*10 + minor), from NVIDIA's "CUDA GPUs - Compute
#: Capability" table (developer.nvidia.com/cuda-gpus): sm86 for GA10x parts (A10, RTX 30xx),
#: sm89 for Ada, sm103 for Blackwell Ultra (B300/GB300), sm120 for RTX 50xx.
COMPUTE_CAPABILITY = {
    "v100-sxm2": 70,
    "t4": 75,
    "rtx-2080ti": 75,
    "a10": 86,
    "l4": 89,
    "l40s": 89,
    "rtx-4090": 89,
    "b300": 103,
    "gb300": 103,
    "rtx-5090": 120,
}
#: By architecture, for GPUs not named above.
ARCH_COMPUTE_CAPABILITY = {
    "volta": 70,
    "turing": 75,
    "ampere": 80,
    "ada": 89,
    "hopper": 90,
    "blackwell": 100,
    "rubin": 100,
}


def compute_capability(gpu) -> int:
    """NCCL's compute capability of a GPU record (major*10 + minor; by architecture where
    the part is not named, 80 when neither is known)."""
    return COMPUTE_CAPABILITY.get(gpu.id, ARCH_COMPUTE_CAPABILITY.get(gpu.arch, 80))


#: NCCL's NVLink bandwidth per link by compute capability [GB/s] (``ncclTopoNVLinkBw`` in
#: src/graph/topo.h, v2.30.7-1: SM60 18, SM70 20, SM80 20, SM86 12, SM90 20.6, SM100 40.1).
def nvlink_link_GBps(compute_capability: int) -> float:
    """NCCL's per-link NVLink bandwidth for a GPU generation [GB/s]."""
    if compute_capability >= 100:
        return 40.1
    if compute_capability >= 90:
        return 20.6
    if compute_capability == 86:
        return 12.0
    if compute_capability >= 70:
        return 20.0
    return 18.0


#: NCCL's PCIe bandwidth per x16 link generation [GB/s]: lanes x per-lane rate / 80 with
#: 60/120/240/480 (x100 Mb/s) for 8/16/32/64 GT/s (src/graph/xml.cc ``kvDictPciGen``,
#: src/graph/topo.cc): Gen3 12, Gen4 24, Gen5 48, Gen6 96.
PCI_GBPS = {"pcie3": 12.0, "pcie4": 24.0, "pcie5": 48.0, "pcie6": 96.0}
#: NCCL's bandwidth between two CPU sockets [GB/s] (topo.h: Intel Sapphire Rapids 22, AMD 16,
#: ARM 6), for PCIe GPUs whose traffic crosses sockets.
SOCKET_GBPS = {"intel": 22.0, "amd": 16.0, "arm": 6.0}
#: Path types in NCCL's order (src/include/graph.h, v2.30.7-1); lower is closer.
PATH_ORDER = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")


def path_rank(path: str) -> int:
    """Position of a path type in NCCL's order (``PIX`` < ``PHB``)."""
    return PATH_ORDER.index(path)


@dataclass(frozen=True)
class NcclView:
    """What NCCL's topology detection reports about a communicator."""

    n_ranks: int
    """Ranks in the communicator."""
    n_nodes: int
    """NCCL's nodes: NVLink domains (hosts sharing an NVLink switch count as one, MNNVL)."""
    ppn: int
    """Ranks on the busiest node."""
    compute_capability: int
    """Lowest compute capability of the GPUs (``minCompCap``)."""
    intra: str
    """``nvswitch``, ``mesh`` (direct NVLinks), ``pcie`` or ``none`` (one GPU per node)."""
    gpu_nvlink_GBps: float
    """NVLink bandwidth a GPU has in NCCL's units: to its NVSwitch, or to one peer on a mesh."""
    gpu_nvlink_total_GBps: float
    """Every NVLink of a GPU together (NCCL's ``totalBw``)."""
    pci_GBps: float
    """A GPU's (and its NIC's) PCIe link in NCCL's units."""
    sockets: int
    """CPU sockets the node's GPUs hang off (PCIe rings crossing sockets use the socket link)."""
    nic_GBps: float
    """One NIC's port speed (``speed / 8000``)."""
    nics: int
    """NICs the busiest node's ranks use."""
    nic_path: str
    """Path type from a GPU to its NIC (``PIX``, ``P2C``, ``PHB``)."""
    cpu: str
    """``intel``, ``amd`` or ``arm`` (NCCL's LL ceiling row and network overhead)."""
    nvls: bool
    """NVLink SHARP available (NVSwitch with multicast, Hopper or newer, not turned off)."""
    nvswitch: bool
    """The node has an NVSwitch (CollNet direct needs one)."""
    collnet: bool
    """CollNet (SHARP) available and asked for (``NCCL_COLLNET_ENABLE=1``)."""
    net_device_host: bool
    """The network plugin moves data through host-visible buffers (False for GPUDirect-TCPX's
    unpack device): PAT needs it."""
    mixed_gpus: bool = False
    """GPUs of different compute capabilities (LL128 is off unless all are Hopper+)."""
    net_latency_us: float = 0.0
    """Latency the network plugin reports for the NICs (NCCL's ``graph->latencyInter``,
    from ``ncclNetProperties_t.latency``) [us]; 0 on one node."""

    @property
    def arch_index(self) -> int:
        """0 Volta, 1 Ampere (and Ada), 2 Hopper, 3 Blackwell (NCCL's ``compCapIndex``)."""
        cc = self.compute_capability
        return 3 if cc >= 100 else 2 if cc >= 90 else 1 if cc >= 80 else 0

    @property
    def intra_path(self) -> str:
        """NCCL's path type between two GPUs of a node: ``NVL`` over NVLink, ``LOC`` with one
        GPU, else a PCIe path (``PXB`` within a socket, ``SYS`` across)."""
        if self.ppn <= 1:
            return "LOC"
        if self.intra in ("nvswitch", "mesh"):
            return "NVL"
        return "SYS" if self.sockets > 1 else "PXB"

    @classmethod
    def of(cls, group, release: Release, env: NcclEnv) -> NcclView:
        """NCCL's view of ``group`` under ``release`` and ``env``."""
        fabric = group.fabric
        spec = fabric.spec
        gpu = fabric.gpu
        cc = compute_capability(gpu)
        intra_kind = spec.intra.fabric if group.ppn > 1 else "none"
        if intra_kind not in ("nvswitch", "mesh", "pcie"):
            intra_kind = "pcie" if group.ppn > 1 else "none"
        per_link = nvlink_link_GBps(cc)
        links = gpu.scaleup_links or 0
        if spec.intra.links_per_gpu:
            links = spec.intra.links_per_gpu
        per_pair = spec.intra.links_per_pair
        share = group.scaleup_active_share if group.ppn > 1 else 1.0
        if share < 1.0:  # NCCL sees a GPU's active NVLinks only; without any, PCIe
            links, per_pair = round(links * share), round(per_pair * share)
            left = links if intra_kind == "nvswitch" else per_pair
            if intra_kind in ("nvswitch", "mesh") and left == 0:
                intra_kind = "pcie"
        total = links * per_link
        pair = total if intra_kind == "nvswitch" else per_pair * per_link
        if intra_kind == "pcie" or links == 0:
            total = pair = 0.0
        pci = PCI_GBPS.get(gpu.pcie, 24.0)
        net = spec.net
        nic_GBps = (net.gbps or 0.0) / 8.0 if net is not None and net.gbps else 0.0
        if net is not None and net.nic_map is None and net.nics_per_node > spec.gpus_per_node:
            # The fabric gives each GPU one NIC device carrying its share of the ports.
            nic_GBps *= net.nics_per_node / spec.gpus_per_node
        host_link = spec.intra.host_link or ""
        cpu = "arm" if host_link == "nvlink-c2c" else "intel"
        path = {"pci": "PIX", "c2c": "P2C", "host": "PHB"}[
            group.nic_path if group.n_nodes > 1 else "pci"
        ]
        if path == "P2C" and release.since < (2, 27, 0):
            path = "PHB"  # before 2.27 NCCL had no P2C path: a Grace's NIC was behind a host
        nvls = bool(
            group.has_nvswitch_reduction
            and cc >= 90
            and (env.nvls is None or env.nvls)
            and len({r.shape[0] for r in group.by_node}) == 1
            and group.ppn >= release.nvls_min_gpus
            and (release.nvls_multi_node_nvlink or group.ranks_per_host >= group.ppn)
        )
        sharp = bool(net is not None and getattr(net, "sharp", False))
        nics = group.nics_per_node if group.n_nodes > 1 else 0
        if nics > group.ppn >= 1 and nics % group.ppn == 0:
            # NCCL sees one NIC per GPU where a GPU has several ports: it merges the ports of
            # a multi-port card into one device (NCCL_IB_MERGE_NICS, src/transport/net_ib.cc)
            # and aws-ofi-nccl groups a GPU's EFA devices into one multi-rail device.
            fused = nics // group.ppn
            nics, nic_GBps = group.ppn, nic_GBps * fused
        return cls(
            n_ranks=group.n,
            n_nodes=group.n_nodes,
            ppn=group.ppn,
            compute_capability=cc,
            intra=intra_kind,
            gpu_nvlink_GBps=pair,
            gpu_nvlink_total_GBps=total,
            pci_GBps=pci,
            sockets=max(1, spec.intra.sockets or 1),
            nic_GBps=nic_GBps,
            nics=nics,
            nic_path=path,
            cpu=cpu,
            nvls=nvls,
            nvswitch=intra_kind == "nvswitch",
            # NCCL's sockets bring no CollNet: SHARP needs its plugin's.
            collnet=sharp
            and env.collnet
            and group.n_nodes > 1
            and socket_setting(env, fabric.net_family) is None,
            net_device_host=not (net is not None and net.link == "tcpxo"),
            net_latency_us=_plugin_latency_us(fabric, env) if group.n_nodes > 1 else 0.0,
        )


#: Network families whose NICs NCCL drives through the aws-ofi-nccl plugin (libfabric).
OFI_FAMILIES = ("efa", "slingshot")


def _plugin_latency_us(fabric: Fabric, env: NcclEnv) -> float:
    """The latency the network plugin reports to NCCL [us]: the NIC record's
    (``nccl_latency_us``), or ``OFI_NCCL_NET_LATENCY`` where aws-ofi-nccl drives the NICs."""
    if env.ofi_net_latency_us is not None and fabric.net_family in OFI_FAMILIES:
        return env.ofi_net_latency_us
    return float(fabric.net_nccl_latency_us)
