"""Build a fabric from a topology spec: one node template tiled with numpy, then the network.

Handles NVSwitch nodes, direct-mesh nodes (GH200 quad, MI300X), PCIe trees with sockets and
switches (peer-to-peer on or staged through host memory), one NIC per GPU, NICs shared by
several GPUs or several NIC ports per GPU, a single switch, and two-tier leaf/spine networks
(rail-optimized or not, with oversubscription, or leafs joined directly when ``spines: 0``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.dragonfly import Dragonfly
from fabricui.fabric.fabric import DeviceKind, Fabric, FabricTables
from fabricui.fabric.fat_tree import FatTree, effective_radix
from fabricui.fabric.network import build_network
from fabricui.fabric.torus import (
    Torus,
    build_torus,
    default_host_block,
    torus_dims,
    torus_shape,
)
from fabricui.model import GpuSpec, LinkGeneration, NicSpec, SwitchSpec, TopologySpec

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog

IntArray = npt.NDArray[np.int64]

#: Default NVSwitch model per NVLink generation.
DEFAULT_NVSWITCH = {
    "nvlink2": "nvswitch1",
    "nvlink3": "nvswitch2",
    "nvlink4": "nvswitch3",
    "nvlink5": "nvswitch4",
}
#: Default network switch per network link generation, then per family.
DEFAULT_NET_SWITCH = {
    "ib-hdr": "quantum",
    "ib-ndr": "quantum-2",
    "ib-xdr": "quantum-x800",
    "slingshot": "rosetta",
    "roce": "spectrum-4",
}
DEFAULT_SWITCH_BY_FAMILY = {
    "infiniband": "quantum-2",
    "slingshot": "rosetta",
    # AWS does not publish its EFA switches: a 51.2T merchant switch stands in.
    "efa": "generic-ethernet-51t",
}
FALLBACK_NET_SWITCH = "generic-ethernet"

#: Largest fabric the builder accepts (devices are int32 and memory is finite).
MAX_GPUS = 2_000_000


@dataclass
class _Block:
    """Devices and links under construction (local ids)."""

    kind: list[int] = field(default_factory=list)
    reduces: list[bool] = field(default_factory=list)
    index: list[int] = field(default_factory=list)
    lat_us: list[float] = field(default_factory=list)
    model: list[int] = field(default_factory=list)
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    bw: list[float] = field(default_factory=list)
    lat: list[float] = field(default_factory=list)
    gen: list[int] = field(default_factory=list)
    count: list[int] = field(default_factory=list)

    def device(
        self, kind: DeviceKind, index: int, lat_us: float, model: int, reduces: bool = False
    ) -> int:
        self.kind.append(int(kind))
        self.reduces.append(reduces)
        self.index.append(index)
        self.lat_us.append(lat_us)
        self.model.append(model)
        return len(self.kind) - 1

    def cable(self, a: int, b: int, bw_GBps: float, lat_us: float, gen: int, count: int) -> None:
        """A bidirectional bundle: two directed links of ``bw_GBps`` each."""
        for s, d in ((a, b), (b, a)):
            self.src.append(s)
            self.dst.append(d)
            self.bw.append(bw_GBps)
            self.lat.append(lat_us)
            self.gen.append(gen)
            self.count.append(count)


class _Interner:
    """Assigns small integer ids to strings (link generations, model labels)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._ids: dict[str, int] = {}

    def __call__(self, item: str) -> int:
        if item not in self._ids:
            self._ids[item] = len(self.items)
            self.items.append(item)
        return self._ids[item]


def _default_pcie_switches(spec: TopologySpec, c2c: bool = False) -> int:
    """Servers with NVLink put two GPUs (and their NICs) under each PCIe switch; a plain
    PCIe box, unless its spec says otherwise, has its GPUs on the CPU's root ports, and a
    superchip (NVLink-C2C host link) joins each GPU to its Grace directly, the NICs on the
    Grace's root ports."""
    if spec.intra.pcie_switches is not None:
        return spec.intra.pcie_switches
    if spec.intra.fabric == "pcie" or c2c:
        return 0
    return spec.gpus_per_node // 2 if spec.gpus_per_node >= 4 else 0


def _default_sockets(spec: TopologySpec) -> int:
    if spec.intra.sockets is not None:
        return max(1, spec.intra.sockets)
    return 2 if spec.gpus_per_node >= 4 and spec.intra.fabric != "pcie" else 1


def _socket_link(catalog: Catalog, spec: TopologySpec, host_link: LinkGeneration) -> str:
    """The link between a host's CPU sockets: the spec's, else the platform's (Grace CPUs
    talk over NVLink-C2C, AMD GPU servers have EPYC sockets on Infinity Fabric, other x86
    servers Intel UPI)."""
    if spec.intra.socket_link is not None:
        return spec.intra.socket_link
    if host_link.family == "nvlink-c2c":
        return host_link.id
    if catalog.gpus[spec.gpu].vendor == "amd" and "amd-if-socket" in catalog.links:
        return "amd-if-socket"
    return "upi"


@dataclass(frozen=True)
class _ScaleUp:
    """The scale-up switch of a switch fabric and how GPUs attach to it."""

    link: LinkGeneration
    """Link generation of the GPU-to-switch links."""
    per_gpu: int
    """Links from each GPU into the switch."""
    switch: SwitchSpec | None
    """The switch record (None: an NVSwitch the catalog has no record of)."""
    prefix: str
    """Device-name prefix (``nvsw``; another family's switch: ``<family>sw``)."""
    label: str
    """Short label for views (``NVSw``; else the first word of the switch's name)."""


def _scaleup(spec: TopologySpec, catalog: Catalog) -> _ScaleUp | None:
    """The scale-up switch a switch fabric uses (None for mesh, PCIe or single GPUs).

    Raises:
        EngineError: ``fabric: switch`` without a switch record for its link.
    """
    intra = spec.intra
    if intra.fabric not in ("nvswitch", "switch"):
        return None
    gpu = catalog.gpus[spec.gpu]
    link = catalog.links[intra.link or (gpu.scaleup_link or "")]
    per_gpu = (
        intra.links_per_gpu
        or (gpu.scaleup_links if gpu.scaleup_link == link.id else 0)
        or link.links_per_gpu
        or 1
    )
    check_gpu_ports(spec, catalog, link, per_gpu, "intra.links_per_gpu")
    sw_id = intra.switch
    if sw_id is None and link.id in DEFAULT_NVSWITCH:
        sw_id = DEFAULT_NVSWITCH[link.id]
    if sw_id is None:
        same = [s for s in catalog.switches.values() if s.family == link.family]
        sw_id = same[0].id if len(same) == 1 else None
    switch = catalog.switches.get(sw_id) if sw_id else None
    if switch is None and intra.fabric == "switch":
        raise EngineError(f"{spec.id}: intra.switch: no switch record for {link.id}")
    if switch is None or switch.family == "nvswitch":
        return _ScaleUp(link, per_gpu, switch, "nvsw", "NVSw")
    family = re.sub(r"[^a-z0-9]", "", switch.family.lower()) or "scaleup"
    label = (switch.name.split() or [family])[0][:LABEL_CHARS]
    return _ScaleUp(link, per_gpu, switch, f"{family}sw", label)


def check_gpu_ports(
    spec: TopologySpec, catalog: Catalog, link: LinkGeneration, needed: int, key: str
) -> None:
    """Refuse more scale-up links per GPU than the GPU has ports of that link (a GB300 has
    18 NVLink 5 ports: ``--scale-up-links 36`` asks for twice what exists).

    Raises:
        EngineError: One line naming the GPU's port count and its record's source.
    """
    gpu = catalog.gpus[spec.gpu]
    ports = gpu.scaleup_links
    if gpu.scaleup_link != link.id or ports < 1 or needed <= ports:
        return
    source = gpu.sources.get("scaleup_links", gpu.source)
    raise EngineError(
        f"{spec.id}: {key} (--scale-up-links): {needed} {link.id} links per GPU, but a "
        f"{gpu.id} has {ports} ({source})"
    )


#: Longest row label a switch record gives the map (``UALink``).
LABEL_CHARS = 8


def _pick_nic(catalog: Catalog, spec: TopologySpec) -> NicSpec | None:
    """The spec's NIC, else the catalog NIC speaking its link: one made for its GPU first
    (cloud adapters come with particular instance types), then one of the port rate.
    None without NICs (one node, a torus) or when the catalog has none for the link."""
    net = spec.net
    if net is None or net.layout == "torus":
        return None
    if net.nic is not None:
        return catalog.nics[net.nic]
    candidates = [n for n in catalog.nics.values() if n.link == net.link]
    if not candidates:
        return None
    gbps = net.gbps or catalog.links[net.link].bw_GBps * 8
    candidates = [n for n in candidates if not n.gpus or spec.gpu in n.gpus] or candidates
    candidates.sort(key=lambda n: (not n.gpus, n.rate_Gbps != gbps))
    return candidates[0]


def _pick_switch(catalog: Catalog, spec_switch: str | None, link: LinkGeneration) -> SwitchSpec:
    for candidate in (
        spec_switch,
        DEFAULT_NET_SWITCH.get(link.id),
        DEFAULT_SWITCH_BY_FAMILY.get(link.family),
        FALLBACK_NET_SWITCH,
    ):
        if candidate and candidate in catalog.switches:
            switch: SwitchSpec = catalog.switches[candidate]
            return switch
    raise EngineError(f"no network switch model in the hardware database for {link.id}")


def _pick_pcie_switch(catalog: Catalog, pcie_link: str) -> SwitchSpec | None:
    """The PCIe switch of the GPUs' generation (``pcie5`` -> ``pcie-gen5-switch``)."""
    pcie = [s for s in catalog.switches.values() if s.family == "pcie"]
    same_gen = [s for s in pcie if f"gen{pcie_link[-1]}" in s.id]
    return (same_gen or pcie)[0] if pcie else None


#: CPU of a superchip (NVLink-C2C host link) by GPU architecture, for device labels.
SUPERCHIP_CPUS = {"rubin": "Vera CPU"}


def nic_attachment(spec: TopologySpec, nic_spec: NicSpec | None, has_switches: bool) -> str:
    """Where a host's NICs plug in (``NIC_ATTACH``): the spec's ``net.nic_attach``, else
    the GPU for adapters on the accelerator's die (the NIC record's ``attach: gpu``), else
    the GPUs' PCIe switch when the host has switches, else the CPU's root ports.

    Raises:
        EngineError: ``pcie-switch`` on a host without PCIe switches.
    """
    net = spec.net
    attach = net.nic_attach if net is not None else None
    if attach is None:
        if nic_spec is not None and nic_spec.attach == "gpu":
            return "gpu"
        return "pcie-switch" if has_switches else "cpu"
    if attach == "pcie-switch" and not has_switches:
        raise EngineError(
            f"{spec.id}: net.nic_attach pcie-switch: the host has no PCIe switches "
            "(set intra.pcie_switches)"
        )
    return attach


def _gpu_nic_map(spec: TopologySpec, n_nic_devices: int) -> list[int]:
    g = spec.gpus_per_node
    if spec.net is not None and spec.net.nic_map is not None:
        return list(spec.net.nic_map)
    return [(i * n_nic_devices) // g for i in range(g)]


@dataclass(frozen=True)
class _Build:
    """What every step of one build reads: the spec, the catalog, and the interners that
    number link generations and device labels in first-use order (so the order the steps
    run in is part of the fabric they build)."""

    spec: TopologySpec
    catalog: Catalog
    gens: _Interner
    models: _Interner

    @property
    def gpu(self) -> GpuSpec:
        """The spec's GPU record."""
        return self.catalog.gpus[self.spec.gpu]


@dataclass(frozen=True)
class _HostDevices:
    """Device ids (local to the host block) that a host's links plug into."""

    gpus: list[int]
    cpus: list[int]
    pcie_switches: list[int]
    gpu_cpu: list[int]
    """CPU socket of each GPU."""

    def switch_of(self, gpu: int) -> int:
        """The PCIe switch GPU ``gpu`` sits behind (only when the host has switches)."""
        return self.pcie_switches[(gpu * len(self.pcie_switches)) // len(self.gpus)]

    def host_port(self, gpu: int) -> int:
        """The device GPU ``gpu``'s host link plugs into (its PCIe switch, else its CPU
        socket)."""
        return self.switch_of(gpu) if self.pcie_switches else self.gpu_cpu[gpu]


class _Host(NamedTuple):
    """One host's block and where its GPUs' NIC and CPU traffic goes (local ids)."""

    block: _Block
    gpu_nic: list[int]
    """NIC device of each GPU (-1 without NICs)."""
    gpu_cpu: list[int]
    """CPU socket device of each GPU."""
    nic_ports: float
    """NIC ports each NIC device stands for (more ports than GPUs: a GPU's share)."""


def _add_sockets(block: _Block, b: _Build, host_link: LinkGeneration) -> list[int]:
    """The host's CPU sockets (a superchip's Grace or Vera), every pair joined by the
    socket link."""
    spec, gpu = b.spec, b.gpu
    sockets = _default_sockets(spec)
    c2c = host_link.family == "nvlink-c2c"
    cpu_model = b.models("CPU socket" if not c2c else SUPERCHIP_CPUS.get(gpu.arch, "Grace CPU"))
    cpus = [block.device(DeviceKind.CPU, i, 0.0, cpu_model) for i in range(sockets)]
    socket_link = b.catalog.links.get(_socket_link(b.catalog, spec, host_link), None)
    if socket_link is not None:
        for first in range(sockets):
            for second in range(first + 1, sockets):
                block.cable(
                    cpus[first],
                    cpus[second],
                    socket_link.bw_GBps,
                    socket_link.lat_us,
                    b.gens(socket_link.id),
                    1,
                )
    return cpus


def _add_pcie_switches(
    block: _Block, b: _Build, host_link: LinkGeneration, cpus: list[int]
) -> list[int]:
    """The host's PCIe switches, each cabled up to its CPU socket. A superchip's switch
    uplink runs at the CPU's PCIe generation (Grace: Gen5), not over NVLink-C2C."""
    spec, gpu = b.spec, b.gpu
    c2c = host_link.family == "nvlink-c2c"
    n_switches = _default_pcie_switches(spec, c2c)
    pcie_switch = _pick_pcie_switch(b.catalog, gpu.pcie)
    switch_model = b.models(pcie_switch.name if pcie_switch else "PCIe switch")
    switch_lat = pcie_switch.lat_us if pcie_switch else 0.1
    switches = [
        block.device(DeviceKind.PCIE_SWITCH, i, switch_lat, switch_model) for i in range(n_switches)
    ]
    cpu_pcie = b.catalog.links[spec.intra.cpu_pcie or gpu.pcie]
    uplink = cpu_pcie if c2c else host_link
    for s, switch in enumerate(switches):
        cpu = cpus[(s * len(cpus)) // n_switches]
        block.cable(switch, cpu, uplink.bw_GBps, uplink.lat_us, b.gens(uplink.id), 1)
    return switches


def _add_host_links(
    block: _Block, b: _Build, host_link: LinkGeneration, devices: _HostDevices
) -> None:
    """Every GPU's host link. A superchip's GPU reaches its own CPU over NVLink-C2C, one
    link per superchip whose bandwidth the Grace's GPUs share (GB200: two), and, when the
    host has PCIe switches (GB300's ConnectX-8s carry one each), its switch over its own
    PCIe lanes."""
    c2c = host_link.family == "nvlink-c2c"
    per_socket = -(-len(devices.gpus) // len(devices.cpus))
    host_bw = host_link.bw_GBps / per_socket if c2c else host_link.bw_GBps
    for i, dev in enumerate(devices.gpus):
        port = devices.gpu_cpu[i] if c2c else devices.host_port(i)
        block.cable(dev, port, host_bw, host_link.lat_us, b.gens(host_link.id), 1)
        if c2c and devices.pcie_switches:
            gpu_pcie = b.catalog.links[b.gpu.pcie]
            block.cable(
                dev,
                devices.switch_of(i),
                gpu_pcie.bw_GBps,
                gpu_pcie.lat_us,
                b.gens(gpu_pcie.id),
                1,
            )


def _add_scaleup_switch(block: _Block, b: _Build, scaleup: _ScaleUp, gpus: list[int]) -> None:
    """The scale-up switch (NVSwitch, UALink switch) and the links of ``gpus`` into it."""
    sw_spec = scaleup.switch
    switch = block.device(
        DeviceKind.NVSWITCH,
        0,
        sw_spec.lat_us if sw_spec else 0.0,
        b.models(sw_spec.name if sw_spec else "NVSwitch"),
        reduces=bool(sw_spec and sw_spec.in_network_reduction),
    )
    link, per_gpu = scaleup.link, scaleup.per_gpu
    for dev in gpus:
        block.cable(dev, switch, per_gpu * link.bw_GBps, link.lat_us, b.gens(link.id), per_gpu)


def _add_mesh(block: _Block, b: _Build, gpus: list[int]) -> None:
    """A direct mesh: every GPU pair joined by ``links_per_pair`` scale-up links."""
    intra = b.spec.intra
    link = b.catalog.links[intra.link or (b.gpu.scaleup_link or "")]
    per_pair = intra.links_per_pair
    # A pair cannot have more links than a GPU has ports. (The whole mesh may: a
    # partial mesh such as DGX-1's hybrid cube-mesh is modelled as a uniform one.)
    check_gpu_ports(b.spec, b.catalog, link, per_pair, "intra.links_per_pair")
    for first in range(len(gpus)):
        for second in range(first + 1, len(gpus)):
            block.cable(
                gpus[first],
                gpus[second],
                per_pair * link.bw_GBps,
                link.lat_us,
                b.gens(link.id),
                per_pair,
            )


def _nic_port(devices: _HostDevices, attach: str, gpu: int) -> int:
    """The device a NIC serving GPU ``gpu`` plugs into (``nic_attachment``)."""
    if attach == "gpu":
        return devices.gpus[gpu]  # the GPU's own lanes, or ports on its die (Gaudi)
    if attach == "pcie-switch":
        return devices.switch_of(gpu)
    return devices.gpu_cpu[gpu]


def _add_nics(
    block: _Block, b: _Build, devices: _HostDevices, nic_spec: NicSpec | None
) -> tuple[list[int], float]:
    """The host's NICs and their PCIe links; returns each GPU's NIC and the NIC ports a
    NIC device stands for. A torus wires the chips themselves: no NICs."""
    spec, net = b.spec, b.spec.net
    g = len(devices.gpus)
    if net is None or net.layout == "torus":
        return [-1] * g, 1.0
    n_nic, nic_ports = net.nics_per_node, 1.0
    if net.nic_map is None and n_nic > g:
        # More ports than GPUs (EFA, dual-port RoCE): each GPU drives its share of ports.
        nic_ports, n_nic = n_nic / g, g
    nic_model = b.models(
        (f"{nic_ports:g}x " if nic_ports != 1 else "") + (nic_spec.name if nic_spec else "NIC")
    )
    nic_lat = nic_spec.lat_us if nic_spec else 0.0
    nics = [block.device(DeviceKind.NIC, i, nic_lat, nic_model) for i in range(n_nic)]
    mapping = _gpu_nic_map(spec, n_nic)
    nic_pcie = b.catalog.links[nic_spec.pcie if nic_spec else b.gpu.pcie]
    attach = nic_attachment(spec, nic_spec, bool(devices.pcie_switches))
    slot = b.catalog.links[b.gpu.pcie]
    if attach == "pcie-switch" and slot.bw_GBps < nic_pcie.bw_GBps:
        # A PCIe link trains at the older generation of its two ends: a Gen5 NIC on the
        # Gen4 switch of an A100 host runs at Gen4.
        nic_pcie = slot
    ports = max(1, round(nic_ports))
    for k, nic in enumerate(nics):
        first_gpu = mapping.index(k) if k in mapping else (k * g) // n_nic
        block.cable(
            nic,
            _nic_port(devices, attach, first_gpu),
            ports * nic_pcie.bw_GBps,
            nic_pcie.lat_us,
            b.gens(nic_pcie.id),
            ports,
        )
    return [nics[m] for m in mapping], nic_ports


def _build_host(b: _Build, nic_spec: NicSpec | None, scaleup: _ScaleUp | None) -> _Host:
    """One host's devices and links (local ids), plus per-GPU NIC and CPU local ids.

    With one host per domain the host also holds its scale-up switch (or mesh links); a
    switch shared by several hosts belongs to the domain block instead (``_domain_block``).
    Devices come in this order: GPUs, CPU sockets, PCIe switches, scale-up switch, NICs.
    """
    block = _Block()
    gpu_model = b.models(b.gpu.name)
    g = b.spec.gpus_per_node
    gpus = [block.device(DeviceKind.GPU, i, 0.0, gpu_model) for i in range(g)]
    host_link = b.catalog.links[b.spec.intra.host_link or b.gpu.pcie]
    cpus = _add_sockets(block, b, host_link)
    switches = _add_pcie_switches(block, b, host_link, cpus)
    gpu_cpu = [cpus[(i * len(cpus)) // g] for i in range(g)]
    devices = _HostDevices(gpus, cpus, switches, gpu_cpu)
    _add_host_links(block, b, host_link, devices)
    if scaleup is not None and b.spec.hosts_per_domain == 1:
        _add_scaleup_switch(block, b, scaleup, gpus)
    elif b.spec.intra.fabric == "mesh":
        _add_mesh(block, b, gpus)
    gpu_nic, nic_ports = _add_nics(block, b, devices, nic_spec)
    return _Host(block, gpu_nic, gpu_cpu, nic_ports)


def _host_copies(host: _Block, hosts: int) -> _Block:
    """``hosts`` copies of the host block, device ids shifted per copy (local ids)."""
    dh = len(host.kind)
    block = _Block()
    for h in range(hosts):
        block.kind += host.kind
        block.reduces += host.reduces
        block.index += host.index
        block.lat_us += host.lat_us
        block.model += host.model
        block.src += [v + h * dh for v in host.src]
        block.dst += [v + h * dh for v in host.dst]
        block.bw += host.bw
        block.lat += host.lat
        block.gen += host.gen
        block.count += host.count
    return block


def _domain_block(host: _Block, b: _Build, scaleup: _ScaleUp | None) -> _Block:
    """The domain block: ``hosts_per_domain`` copies of the host block, then the switch the
    hosts share and every GPU's links into it (local ids)."""
    hosts = b.spec.hosts_per_domain
    if hosts == 1:
        return host
    dh = len(host.kind)
    block = _host_copies(host, hosts)
    assert scaleup is not None  # only switch fabrics span hosts (checked with the spec)
    gpu_local = [i for i, k in enumerate(host.kind) if k == DeviceKind.GPU]
    _add_scaleup_switch(block, b, scaleup, [h * dh + i for h in range(hosts) for i in gpu_local])
    return block


def _domain_torus_block(
    host: _Block, b: _Build
) -> tuple[_Block, Torus, tuple[tuple[str, str], ...]]:
    """The domain block of an ``intra.fabric: torus``: its hosts, then the chip-to-chip
    links of the torus their chips make (a Trn2 instance's 4x4, a Trn2 UltraServer's
    4x4x4), held to the link records' limits as a network torus is.

    Returns:
        The block, the torus table (chips as local ranks ``0 .. gpus_per_domain - 1``,
        link ids local to the domain block) and the plan lines.
    """
    spec, catalog, gens = b.spec, b.catalog, b.gens
    intra = spec.intra
    gpu = b.gpu
    g, hosts = spec.gpus_per_node, spec.hosts_per_domain
    chips = g * hosts
    link = catalog.links[intra.link or (gpu.scaleup_link or "")]
    named = tuple(catalog.links[a] for a in (intra.axis_links or ()))
    axis_links = named + (link,) * (3 - len(named))
    max_dims = torus_max_dims(link, bool(named))
    block_dims = (
        tuple(int(b) for b in intra.host_block) + (1,) * (3 - len(intra.host_block))
        if intra.host_block is not None
        else default_host_block(g, max_dims)
    )
    shape = intra.torus
    if shape is not None and int(np.prod(shape)) == chips:
        dims = tuple(int(d) for d in shape) + (1,) * (3 - len(shape))
    else:  # fewer hosts than a whole domain: the most cube-like torus of their blocks
        dims = torus_shape(chips, (block_dims[0], block_dims[1], block_dims[2]), max_dims)
    dims3 = (dims[0], dims[1], dims[2])
    check_torus_limits(spec, catalog, dims3, axis_links, link)
    wrap = torus_wraps(link, dims3, max_dims)
    block = _host_copies(host, hosts) if hosts > 1 else host
    gpu_local = np.flatnonzero(np.asarray(host.kind) == DeviceKind.GPU)
    chip_devs = (gpu_local[None, :] + (np.arange(hosts) * len(host.kind))[:, None]).reshape(-1)
    rates = tuple(a.bw_GBps for a in axis_links)
    torus_links = build_torus(
        dims3,
        chip_devs.astype(np.int64),
        (rates[0], rates[1], rates[2]),
        g,
        (block_dims[0], block_dims[1], block_dims[2]),
        wrap,
    )
    assert isinstance(torus_links.tree, Torus) and torus_links.axis is not None
    first = len(block.src)
    if block is host:
        block = _host_copies(host, 1)
    block.src += torus_links.src.tolist()
    block.dst += torus_links.dst.tolist()
    block.bw += torus_links.bw_GBps.tolist()
    block.lat += [axis_links[int(a)].lat_us for a in torus_links.axis]
    block.gen += [gens(axis_links[int(a)].id) for a in torus_links.axis]
    block.count += [1] * int(torus_links.src.shape[0])
    return block, torus_links.tree.shifted(first), torus_links.plan


def torus_axis_links(spec: TopologySpec, catalog: Catalog) -> tuple[LinkGeneration, ...]:
    """The link generation of each torus dimension (x, y, z): ``net.axis_links``, padded
    with ``net.link``."""
    net = spec.net
    assert net is not None
    if net.axis_links and (net.torus is None or len(net.torus) != len(net.axis_links)):
        raise EngineError(
            f"{spec.id}: net.axis_links names a link for each dimension of net.torus, which "
            f"does not hold {spec.n_gpus} chips (--nodes cannot reshape this torus)"
        )
    named = tuple(catalog.links[a] for a in (net.axis_links or ()))
    return named + (catalog.links[net.link],) * (3 - len(named))


def _ports_per_chip(link: LinkGeneration) -> int | None:
    """Ports of ``link`` one chip has (its record's ``links_per_gpu``), None: not stated."""
    return link.links_per_gpu if link.links_per_gpu else None


def torus_max_dims(link: LinkGeneration, per_axis: bool = False) -> int:
    """Most torus dimensions the chip's ports make: two ports per ring (TPU v6e's 4 ICI
    ports: a 2D torus); 3 when the record states no port count or the spec names a link
    per dimension (``per_axis``)."""
    ports = _ports_per_chip(link)
    if ports is None or per_axis:
        return 3
    return max(1, min(3, ports // 2))


def _limit_source(link: LinkGeneration, field_name: str) -> str:
    return link.sources.get(field_name, link.source)


def check_torus_limits(
    spec: TopologySpec,
    catalog: Catalog,
    dims: tuple[int, int, int],
    axis_links: tuple[LinkGeneration, ...],
    link: LinkGeneration,
) -> None:
    """Refuse a torus the chips cannot make: more chips than the largest slice, sizes
    beyond the largest slice's, or more ring ports per chip than the chip has.

    Raises:
        EngineError: One line naming the limit and its source.
    """
    gpu = catalog.gpus[spec.gpu]
    chips = dims[0] * dims[1] * dims[2]
    shape = "x".join(str(d) for d in dims if d > 1) or "1"
    pod = f"; a pod is {link.pod_chips:,} chips" if link.pod_chips else ""
    if link.torus_max_chips is not None and chips > link.torus_max_chips:
        biggest = "x".join(str(d) for d in link.torus_max) or f"{link.torus_max_chips:,} chips"
        raise EngineError(
            f"{spec.id}: {chips:,} chips exceed the largest {gpu.name} slice, {biggest} "
            f"({link.torus_max_chips:,} chips{pod}; {_limit_source(link, 'torus_max_chips')})"
        )
    needed: dict[str, int] = {}
    for d, size in enumerate(dims):
        if size > 1:
            needed[axis_links[d].id] = needed.get(axis_links[d].id, 0) + (2 if size > 2 else 1)
    for gen, count in needed.items():
        record = catalog.links[gen]
        ports = _ports_per_chip(record)
        if ports is not None and count > ports:
            raise EngineError(
                f"{spec.id}: a {shape} torus needs {count} {gen} ports per chip, a "
                f"{gpu.name} has {ports} (a {ports // 2}D torus at most; "
                f"{_limit_source(record, 'links_per_gpu')})"
            )
    if link.torus_max:
        used = sorted(d for d in dims if d > 1)
        most = sorted(link.torus_max)
        fits = len(used) <= len(most) and all(
            a <= b for a, b in zip(reversed(used), reversed(most))
        )
        if not fits:
            biggest = "x".join(str(d) for d in link.torus_max)
            raise EngineError(
                f"{spec.id}: a {shape} torus does not fit the largest {gpu.name} slice, "
                f"{biggest} ({_limit_source(link, 'torus_max')})"
            )


def torus_wraps(
    link: LinkGeneration, dims: tuple[int, int, int], max_dims: int
) -> tuple[bool, bool, bool]:
    """Which rings wrap around: all of them, unless the link's record allows wrap-around
    only in slices of whole blocks (``torus_wrap``): then all rings when the slice spans
    every torus dimension of the chip in whole blocks, none otherwise (a mesh)."""
    block = link.torus_wrap
    if block is None:
        return (True, True, True)
    active = [d for d in dims if d > 1]
    whole = len(active) >= max_dims and all(d % block == 0 for d in active)
    return (whole, whole, whole)


def _tile(values: list, nodes: int, dtype, offset_step: int = 0) -> np.ndarray:
    base = np.asarray(values, dtype=np.int64 if offset_step else dtype)
    if not offset_step:
        return np.tile(base, nodes).astype(dtype)
    shifts = (np.arange(nodes, dtype=np.int64) * offset_step)[:, None]
    return (base[None, :] + shifts).reshape(-1).astype(dtype)


def _check_tileable(spec: TopologySpec) -> None:
    """Refuse a spec the tiling cannot build: no nodes or GPUs, more than ``MAX_GPUS``, or
    nodes that do not fill whole scale-up domains.

    Raises:
        EngineError: One line naming the count and what would fit.
    """
    if spec.nodes < 1 or spec.gpus_per_node < 1:
        raise EngineError(f"{spec.id}: needs at least one node and one GPU per node")
    if spec.nodes * spec.gpus_per_node > MAX_GPUS:
        raise EngineError(f"{spec.id}: {spec.nodes * spec.gpus_per_node} GPUs exceeds {MAX_GPUS}")
    hosts = spec.hosts_per_domain
    if spec.nodes > hosts and spec.nodes % hosts:
        raise EngineError(
            f"{spec.id}: {spec.nodes} nodes do not fill whole scale-up domains of {hosts} hosts "
            f"(use a multiple of {hosts}, or fewer than {hosts} for one domain; a run file "
            f"states hosts in use per domain with run.domain_hosts)"
        )


@dataclass(frozen=True)
class _Tiling:
    """How identical domain blocks tile the fabric (``Fabric``'s layout contract)."""

    domains: int
    hosts_per_domain: int
    host_devices: int
    host_links: int
    domain_devices: int
    domain_links: int

    @property
    def first_network_device(self) -> int:
        """Id of the first device after the domain blocks."""
        return self.domains * self.domain_devices

    @property
    def first_network_link(self) -> int:
        """Id of the first link after the domain blocks."""
        return self.domains * self.domain_links

    def host_starts(self, nodes: int) -> IntArray:
        """(nodes, 1) first device of each host: host ``n`` is host ``n % hosts`` of domain
        ``n // hosts``."""
        host_ids = np.arange(nodes, dtype=np.int64)
        hosts = self.hosts_per_domain
        return ((host_ids // hosts) * self.domain_devices + (host_ids % hosts) * self.host_devices)[
            :, None
        ]


def _node_of_devices(tiling: _Tiling) -> npt.NDArray[np.int32]:
    """(domains * domain_devices,) node (host) of every device of the domain blocks: hosts
    are consecutive inside a domain block; a switch the hosts share belongs to none (-1)."""
    hosts, dh, dn = tiling.hosts_per_domain, tiling.host_devices, tiling.domain_devices
    local_host = np.full(dn, -1, dtype=np.int64)
    local_host[: hosts * dh] = np.repeat(np.arange(hosts), dh)
    if hosts == 1:
        local_host[:] = 0
    return (
        np.where(
            local_host[None, :] >= 0,
            local_host[None, :] + (np.arange(tiling.domains, dtype=np.int64) * hosts)[:, None],
            -1,
        )
        .reshape(-1)
        .astype(np.int32)
    )


def _tile_domains(block: _Block, tiling: _Tiling) -> FabricTables:
    """The domain block repeated ``domains`` times, device ids shifted per copy."""
    domains, dn = tiling.domains, tiling.domain_devices
    return FabricTables(
        dev_kind=_tile(block.kind, domains, np.int8),
        dev_reduces=_tile(block.reduces, domains, np.bool_),
        dev_index=_tile(block.index, domains, np.int32),
        dev_node=_node_of_devices(tiling),
        dev_lat_us=_tile(block.lat_us, domains, np.float64),
        dev_model_id=_tile(block.model, domains, np.int16),
        link_src=_tile(block.src, domains, np.int32, dn),
        link_dst=_tile(block.dst, domains, np.int32, dn),
        link_bw_GBps=_tile(block.bw, domains, np.float64),
        link_lat_us=_tile(block.lat, domains, np.float64),
        link_gen=_tile(block.gen, domains, np.int16),
        link_count=_tile(block.count, domains, np.int16),
    )


class _Ranks(NamedTuple):
    """Per global rank: its GPU, CPU socket and NIC device (absolute ids)."""

    gpu_dev: IntArray
    gpu_cpu: IntArray
    gpu_nic: IntArray
    """-1 without a NIC (one node without a network, a torus)."""


def _rank_devices(spec: TopologySpec, host: _Host, tiling: _Tiling) -> _Ranks:
    """Each rank's devices: its host's local ids shifted to where the host starts."""
    starts = tiling.host_starts(spec.nodes)
    gpu_local = np.flatnonzero(np.asarray(host.block.kind) == DeviceKind.GPU)
    gpu_nic = np.full(spec.nodes * spec.gpus_per_node, -1, dtype=np.int64)
    if spec.net is not None and spec.net.layout != "torus":
        gpu_nic = (np.asarray(host.gpu_nic)[None, :] + starts).reshape(-1)
    return _Ranks(
        gpu_dev=(gpu_local[None, :] + starts).reshape(-1),
        gpu_cpu=(np.asarray(host.gpu_cpu)[None, :] + starts).reshape(-1),
        gpu_nic=gpu_nic,
    )


@dataclass(frozen=True)
class _NetworkPart:
    """The network after the domain blocks: its devices and links, plan lines and the
    routing table of its kind (link ids absolute)."""

    tables: FabricTables
    plan: tuple[tuple[str, str], ...]
    tree: FatTree | None = None
    dragonfly: Dragonfly | None = None
    torus: Torus | None = None


def _torus_host_block(
    host_block: tuple[int, ...] | None, g: int, max_dims: int
) -> tuple[int, int, int]:
    """A host's chips along x, y, z: the spec's (padded with 1s), else the default for
    ``g`` chips per host."""
    if host_block is None:
        return default_host_block(g, max_dims)
    padded = [int(b) for b in host_block] + [1, 1, 1]
    return (padded[0], padded[1], padded[2])


def _torus_network(b: _Build, gpu_dev: IntArray, tiling: _Tiling) -> _NetworkPart:
    """Every chip-to-chip link of a torus network (also inside a node); no devices.

    Raises:
        EngineError: A torus the chips cannot make (``check_torus_limits``).
    """
    spec, catalog, net = b.spec, b.catalog, b.spec.net
    assert net is not None
    g = spec.gpus_per_node
    link = catalog.links[net.link]
    axis_links = torus_axis_links(spec, catalog)
    max_dims = torus_max_dims(link, bool(net.axis_links))
    chips_block = _torus_host_block(net.host_block, g, max_dims)
    dims = torus_dims(net, spec.nodes * g, chips_block, max_dims)
    check_torus_limits(spec, catalog, dims, axis_links, link)
    wrap = torus_wraps(link, dims, max_dims)
    rates = tuple(net.gbps / 8.0 if net.gbps and a.id == link.id else a.bw_GBps for a in axis_links)
    network = build_torus(dims, gpu_dev, (rates[0], rates[1], rates[2]), g, chips_block, wrap)
    assert isinstance(network.tree, Torus) and network.axis is not None
    axis_gen = np.asarray([b.gens(a.id) for a in axis_links], dtype=np.int16)
    axis_lat = np.asarray([a.lat_us for a in axis_links])
    tables = FabricTables(
        dev_kind=np.zeros(0, dtype=np.int8),
        dev_reduces=np.zeros(0, dtype=np.bool_),
        dev_index=np.zeros(0, dtype=np.int32),
        dev_node=np.zeros(0, dtype=np.int32),
        dev_lat_us=np.zeros(0),
        dev_model_id=np.zeros(0, dtype=np.int16),
        link_src=network.src.astype(np.int32),
        link_dst=network.dst.astype(np.int32),
        link_bw_GBps=network.bw_GBps,
        link_lat_us=axis_lat[network.axis],
        link_gen=axis_gen[network.axis],
        link_count=network.count.astype(np.int16),
    )
    return _NetworkPart(tables, network.plan, torus=network.tree.shifted(tiling.first_network_link))


def _switched_network(b: _Build, host: _Host, tiling: _Tiling) -> _NetworkPart:
    """The switches above the NICs (``build_network``) as devices and links after the
    domain blocks, with their routing table.

    Raises:
        EngineError: No switch model for the link, or a network the switches cannot build.
    """
    spec, catalog, net = b.spec, b.catalog, b.spec.net
    assert net is not None
    link = catalog.links[net.link]
    gbps = net.gbps or link.bw_GBps * 8
    port_bw = gbps / 8.0
    switch = _pick_switch(catalog, net.switch, link)
    # The topology loader refuses a network switch without a radix and port rate.
    assert switch.radix is not None and switch.port_Gbps is not None
    sw_lat = net.switch_lat_us if net.switch_lat_us is not None else switch.lat_us
    nic_local = np.flatnonzero(np.asarray(host.block.kind) == DeviceKind.NIC)
    network = build_network(
        net,
        spec.nodes,
        nic_local[None, :] + tiling.host_starts(spec.nodes),
        host.nic_ports * port_bw,
        max(1, round(host.nic_ports)),
        port_bw,
        effective_radix(switch.radix, switch.port_Gbps, gbps),
        tiling.first_network_device,
        hosts_per_domain=tiling.hosts_per_domain,
        cable_ports=max(1, int(switch.port_Gbps // gbps)) if gbps > 0 else 1,
    )
    n_sw, n_links = len(network.kind), network.src.shape[0]
    tables = FabricTables(
        dev_kind=np.asarray(network.kind, dtype=np.int8),
        dev_reduces=np.full(n_sw, switch.in_network_reduction),
        dev_index=np.asarray(network.index, dtype=np.int32),
        dev_node=np.full(n_sw, -1, dtype=np.int32),
        dev_lat_us=np.full(n_sw, sw_lat),
        dev_model_id=np.full(n_sw, b.models(switch.name), dtype=np.int16),
        link_src=network.src.astype(np.int32),
        link_dst=network.dst.astype(np.int32),
        link_bw_GBps=network.bw_GBps,
        link_lat_us=np.full(n_links, link.lat_us),
        link_gen=np.full(n_links, b.gens(link.id), dtype=np.int16),
        link_count=network.count.astype(np.int16),
    )
    plan = (("switch", switch.name), *network.plan)
    first_link = tiling.first_network_link
    if isinstance(network.tree, Dragonfly):
        return _NetworkPart(tables, plan, dragonfly=network.tree.shifted(first_link))
    assert isinstance(network.tree, FatTree)
    return _NetworkPart(tables, plan, tree=network.tree.shifted(first_link))


def _network(b: _Build, host: _Host, tiling: _Tiling, ranks: _Ranks) -> _NetworkPart | None:
    """The network of the spec: a torus, or switches when there is more than one node (a
    single node keeps its NICs, so --nodes can grow it, but needs no switches)."""
    net = b.spec.net
    if net is not None and net.layout == "torus":
        return _torus_network(b, ranks.gpu_dev, tiling)
    if net is not None and b.spec.nodes > 1:
        return _switched_network(b, host, tiling)
    return None


def build_tiled(spec: TopologySpec, catalog: Catalog) -> Fabric:
    """Build the fabric of a topology spec whose network a builder derives (every layout
    but ``explicit``): node blocks tiled with numpy, then the network block.

    Args:
        spec: A checked topology spec (from the catalog or a user file).
        catalog: The hardware database the spec's ids refer to.

    Returns:
        The fabric, with every scale-up domain an identical block of devices and links.

    Raises:
        EngineError: The spec is out of range (no nodes, too many GPUs, nodes that do not
            fill whole scale-up domains, a network the switches cannot build).
    """
    _check_tileable(spec)
    b = _Build(spec, catalog, _Interner(), _Interner())
    nic_spec = _pick_nic(catalog, spec)
    scaleup = _scaleup(spec, catalog)
    host = _build_host(b, nic_spec, scaleup)
    domain_torus: Torus | None = None
    domain_plan: tuple[tuple[str, str], ...] = ()
    if spec.intra.fabric == "torus":
        block, domain_torus, domain_plan = _domain_torus_block(host.block, b)
    else:
        block = _domain_block(host.block, b, scaleup)
    tiling = _Tiling(
        domains=spec.domains,
        hosts_per_domain=spec.hosts_per_domain,
        host_devices=len(host.block.kind),
        host_links=len(host.block.src),
        domain_devices=len(block.kind),
        domain_links=len(block.src),
    )
    tables = _tile_domains(block, tiling)
    ranks = _rank_devices(spec, host, tiling)
    network = _network(b, host, tiling, ranks)
    if network is not None:
        tables = tables.then(network.tables)
    gens = b.gens.items
    return Fabric(
        spec=spec,
        **tables._asdict(),
        dev_model=tuple(b.models.items),
        link_eff=np.array([catalog.links[g].efficiency for g in gens])[tables.link_gen],
        generations=tuple(gens),
        gpu_dev=ranks.gpu_dev.astype(np.int32),
        gpu_nic=ranks.gpu_nic.astype(np.int32),
        gpu_cpu=ranks.gpu_cpu.astype(np.int32),
        gpu=b.gpu,
        node_devices=tiling.domain_devices,
        node_links=tiling.domain_links,
        hosts_per_domain=tiling.hosts_per_domain,
        host_devices=tiling.host_devices,
        host_links=tiling.host_links,
        scaleup_prefix=scaleup.prefix if scaleup else "nvsw",
        scaleup_label=scaleup.label if scaleup else ("Torus" if domain_torus else "NVSw"),
        network_plan=tuple((f"domain {k}", v) for k, v in domain_plan)
        + (network.plan if network is not None else ()),
        tree=network.tree if network is not None else None,
        dragonfly=network.dragonfly if network is not None else None,
        torus=network.torus if network is not None else None,
        domain_torus=domain_torus,
        net_protocols=nic_spec.protocols if nic_spec is not None else (),
        net_nccl_latency_us=nic_spec.nccl_latency_us if nic_spec is not None else 0.0,
        generation_records=tuple(catalog.links[g] for g in gens),
    )
