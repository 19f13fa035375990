"""One host's devices and links, and a scale-up domain's: the block the builder tiles.

A host holds its GPUs, CPU sockets, PCIe switches, scale-up switch or mesh links and NICs
(devices in that order, ids local to the block); a domain of several hosts repeats the
host block and adds the switch they share. Handles NVSwitch nodes, direct-mesh nodes (GH200
quad, MI300X), PCIe trees with sockets and switches (peer-to-peer on or staged through host
memory), one NIC per GPU, and NICs shared by several GPUs or several NIC ports per GPU. The
records a spec leaves out (NIC, switches) are picked here from the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from fabricui.errors import EngineError
from fabricui.fabric.fabric import DeviceKind
from fabricui.model import GpuSpec, LinkGeneration, NicSpec, SwitchSpec, TopologySpec

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog


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


@dataclass
class Block:
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


class Interner:
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
class ScaleUp:
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


def scaleup_of(spec: TopologySpec, catalog: Catalog) -> ScaleUp | None:
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
        return ScaleUp(link, per_gpu, switch, "nvsw", "NVSw")
    family = re.sub(r"[^a-z0-9]", "", switch.family.lower()) or "scaleup"
    label = (switch.name.split() or [family])[0][:LABEL_CHARS]
    return ScaleUp(link, per_gpu, switch, f"{family}sw", label)


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


def pick_nic(catalog: Catalog, spec: TopologySpec) -> NicSpec | None:
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


def pick_switch(catalog: Catalog, spec_switch: str | None, link: LinkGeneration) -> SwitchSpec:
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
class Build:
    """What every step of one build reads: the spec, the catalog, and the interners that
    number link generations and device labels in first-use order (so the order the steps
    run in is part of the fabric they build)."""

    spec: TopologySpec
    catalog: Catalog
    gens: Interner
    models: Interner

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


class Host(NamedTuple):
    """One host's block and where its GPUs' NIC and CPU traffic goes (local ids)."""

    block: Block
    gpu_nic: list[int]
    """NIC device of each GPU (-1 without NICs)."""
    gpu_cpu: list[int]
    """CPU socket device of each GPU."""
    nic_ports: float
    """NIC ports each NIC device stands for (more ports than GPUs: a GPU's share)."""


def _add_sockets(block: Block, b: Build, host_link: LinkGeneration) -> list[int]:
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
    block: Block, b: Build, host_link: LinkGeneration, cpus: list[int]
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
    block: Block, b: Build, host_link: LinkGeneration, devices: _HostDevices
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


def _add_scaleup_switch(block: Block, b: Build, scaleup: ScaleUp, gpus: list[int]) -> None:
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


def _add_mesh(block: Block, b: Build, gpus: list[int]) -> None:
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
    block: Block, b: Build, devices: _HostDevices, nic_spec: NicSpec | None
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


def build_host(b: Build, nic_spec: NicSpec | None, scaleup: ScaleUp | None) -> Host:
    """One host's devices and links (local ids), plus per-GPU NIC and CPU local ids.

    With one host per domain the host also holds its scale-up switch (or mesh links); a
    switch shared by several hosts belongs to the domain block instead (``domain_block``).
    Devices come in this order: GPUs, CPU sockets, PCIe switches, scale-up switch, NICs.
    """
    block = Block()
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
    return Host(block, gpu_nic, gpu_cpu, nic_ports)


def host_copies(host: Block, hosts: int) -> Block:
    """``hosts`` copies of the host block, device ids shifted per copy (local ids)."""
    dh = len(host.kind)
    block = Block()
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


def domain_block(host: Block, b: Build, scaleup: ScaleUp | None) -> Block:
    """The domain block: ``hosts_per_domain`` copies of the host block, then the switch the
    hosts share and every GPU's links into it (local ids)."""
    hosts = b.spec.hosts_per_domain
    if hosts == 1:
        return host
    dh = len(host.kind)
    block = host_copies(host, hosts)
    assert scaleup is not None  # only switch fabrics span hosts (checked with the spec)
    gpu_local = [i for i, k in enumerate(host.kind) if k == DeviceKind.GPU]
    _add_scaleup_switch(block, b, scaleup, [h * dh + i for h in range(hosts) for i in gpu_local])
    return block
