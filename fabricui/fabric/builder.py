"""Build a fabric from a topology spec: one domain block tiled with numpy, then the network.

The block of one host, or of one scale-up domain of several hosts, comes from
``host_block`` (a torus domain's from ``torus_wiring``); the builder tiles it over the
domains, numbers the ranks and adds the network above the NICs: a single switch, a leaf/spine
or three-tier fat-tree (rail-optimized or not, with oversubscription, or leafs joined directly
when ``spines: 0``), a dragonfly (``network``), or a torus of chips (``torus``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.dragonfly import Dragonfly
from fabricui.fabric.fabric import DeviceKind, Fabric, FabricTables
from fabricui.fabric.fat_tree import FatTree, effective_radix
from fabricui.fabric.host_block import (
    Block,
    Build,
    Host,
    Interner,
    ScaleUp,
    build_host,
    domain_block,
    pick_nic,
    pick_switch,
    scaleup_of,
)
from fabricui.fabric.network import build_network, check_network
from fabricui.fabric.torus import (
    Torus,
    build_torus,
    default_host_block,
    torus_dims,
)
from fabricui.fabric.torus_wiring import (
    check_torus_limits,
    domain_torus_block,
    torus_axis_links,
    torus_max_dims,
    torus_wraps,
)
from fabricui.model import TopologySpec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fabricui.hwdb.catalog import Catalog
    from fabricui.model.records import LinkGeneration, NicSpec, SwitchSpec

IntArray = npt.NDArray[np.int64]

#: Largest fabric the builder accepts (devices are int32 and memory is finite).
MAX_GPUS = 2_000_000


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


def _tile_domains(block: Block, tiling: _Tiling) -> FabricTables:
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


def _rank_devices(spec: TopologySpec, host: Host, tiling: _Tiling) -> _Ranks:
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


class _TorusShape(NamedTuple):
    """A torus network's shape as the chips make it, before any ring is wired."""

    link: LinkGeneration
    axis_links: tuple[LinkGeneration, ...]
    max_dims: int
    chips_block: tuple[int, int, int]
    dims: tuple[int, int, int]


def _torus_shape(b: Build) -> _TorusShape:
    """The spec's torus network shaped, so every refusal of ``_torus_network`` made.

    Raises:
        EngineError: A torus the chips cannot make (``torus_dims``,
            ``check_torus_limits``).
    """
    spec, catalog, net = b.spec, b.catalog, b.spec.net
    assert net is not None
    link = catalog.links[net.link]
    axis_links = torus_axis_links(spec, catalog)
    max_dims = torus_max_dims(link, bool(net.axis_links))
    chips_block = _torus_host_block(net.host_block, spec.gpus_per_node, max_dims)
    dims = torus_dims(net, spec.nodes * spec.gpus_per_node, chips_block, max_dims)
    check_torus_limits(spec, catalog, dims, axis_links, link)
    return _TorusShape(link, axis_links, max_dims, chips_block, dims)


def _torus_network(b: Build, gpu_dev: IntArray, tiling: _Tiling) -> _NetworkPart:
    """Every chip-to-chip link of a torus network (also inside a node); no devices.

    Raises:
        EngineError: A torus the chips cannot make (``_torus_shape``).
    """
    net = b.spec.net
    assert net is not None
    g = b.spec.gpus_per_node
    link, axis_links, max_dims, chips_block, dims = _torus_shape(b)
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


def _network_switch(b: Build) -> tuple[LinkGeneration, float, SwitchSpec, int, int]:
    """The network's link, its rate [Gb/s], its switch, the switch's ports at that rate
    and how many of them one switch port holds (breakout).

    Raises:
        EngineError: No switch model for the link.
    """
    catalog, net = b.catalog, b.spec.net
    assert net is not None
    link = catalog.links[net.link]
    gbps = net.gbps or link.bw_GBps * 8
    switch = pick_switch(catalog, net.switch, link)
    # The topology loader refuses a network switch without a radix and port rate.
    assert switch.radix is not None and switch.port_Gbps is not None
    radix = effective_radix(switch.radix, switch.port_Gbps, gbps)
    cable_ports = max(1, int(switch.port_Gbps // gbps)) if gbps > 0 else 1
    return link, gbps, switch, radix, cable_ports


def _check_switched_network(b: Build, host: Host) -> None:
    """Refuse the spec's switches as ``_switched_network`` would, without cabling them.

    Raises:
        EngineError: No switch model for the link, or a network the switches cannot build.
    """
    net = b.spec.net
    assert net is not None
    _, _, _, radix, cable_ports = _network_switch(b)
    nics = int(np.count_nonzero(np.asarray(host.block.kind) == DeviceKind.NIC))
    ports = max(1, round(host.nic_ports))
    check_network(net, b.spec.nodes, nics, ports, radix, cable_ports)


def _switched_network(b: Build, host: Host, tiling: _Tiling) -> _NetworkPart:
    """The switches above the NICs (``build_network``) as devices and links after the
    domain blocks, with their routing table.

    Raises:
        EngineError: No switch model for the link, or a network the switches cannot build.
    """
    spec, net = b.spec, b.spec.net
    assert net is not None
    link, gbps, switch, radix, cable_ports = _network_switch(b)
    port_bw = gbps / 8.0
    sw_lat = net.switch_lat_us if net.switch_lat_us is not None else switch.lat_us
    nic_local = np.flatnonzero(np.asarray(host.block.kind) == DeviceKind.NIC)
    network = build_network(
        net,
        spec.nodes,
        nic_local[None, :] + tiling.host_starts(spec.nodes),
        host.nic_ports * port_bw,
        max(1, round(host.nic_ports)),
        port_bw,
        radix,
        tiling.first_network_device,
        hosts_per_domain=tiling.hosts_per_domain,
        cable_ports=cable_ports,
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


def _has_switches(spec: TopologySpec) -> bool:
    """Whether the spec's network is switches above the NICs: a network but a torus, on
    more than one node (a single node keeps its NICs, so --nodes can grow it, but needs no
    switches)."""
    return spec.net is not None and spec.net.layout != "torus" and spec.nodes > 1


def _network(b: Build, host: Host, tiling: _Tiling, ranks: _Ranks) -> _NetworkPart | None:
    """The network of the spec: a torus, or switches (``_has_switches``), or none."""
    net = b.spec.net
    if net is not None and net.layout == "torus":
        return _torus_network(b, ranks.gpu_dev, tiling)
    if _has_switches(b.spec):
        return _switched_network(b, host, tiling)
    return None


def _check_network(b: Build, host: Host) -> None:
    """Refuse the spec's network as ``_network`` would, without wiring it: its refusals
    are arithmetic on its sizes (8192 nodes on a fat-tree take ~40 ms to cable, 32832 on
    a dragonfly ~0.2 s; the check ~1 ms).

    Raises:
        EngineError: ``_network`` would refuse (the same line).
    """
    net = b.spec.net
    if net is not None and net.layout == "torus":
        _torus_shape(b)
    elif _has_switches(b.spec):
        _check_switched_network(b, host)


def link_efficiency(
    catalog: Catalog, generations: Sequence[str], nic: NicSpec | None
) -> npt.NDArray[np.float64]:
    """(n_generations,) achievable fraction of each generation's rate in this fabric: the
    generation's own, except the network's where the fabric's adapter sets its own
    (``NicSpec.efficiency``: a cloud adapter's transport, not its wire, decides it)."""
    efficiency = np.array([catalog.links[g].efficiency for g in generations], dtype=np.float64)
    if nic is not None and nic.efficiency is not None and nic.link in generations:
        efficiency[list(generations).index(nic.link)] = nic.efficiency
    return efficiency


class _Domain(NamedTuple):
    """One scale-up domain of a spec, built, and how it tiles the fabric."""

    build: Build
    nic_spec: NicSpec | None
    scaleup: ScaleUp | None
    host: Host
    block: Block
    torus: Torus | None
    """The domain's own torus (``intra.fabric: torus``), else None."""
    plan: tuple[tuple[str, str], ...]
    """Plan lines of the domain's torus."""
    tiling: _Tiling


def _domain(spec: TopologySpec, catalog: Catalog) -> _Domain:
    """Check the spec's counts, then build its host and scale-up domain block.

    Raises:
        EngineError: The spec is out of range (``_check_tileable``) or its host cannot be
            built.
    """
    _check_tileable(spec)
    b = Build(spec, catalog, Interner(), Interner())
    nic_spec = pick_nic(catalog, spec)
    scaleup = scaleup_of(spec, catalog)
    host = build_host(b, nic_spec, scaleup)
    domain_torus: Torus | None = None
    domain_plan: tuple[tuple[str, str], ...] = ()
    if spec.intra.fabric == "torus":
        block, domain_torus, domain_plan = domain_torus_block(host.block, b)
    else:
        block = domain_block(host.block, b, scaleup)
    tiling = _Tiling(
        domains=spec.domains,
        hosts_per_domain=spec.hosts_per_domain,
        host_devices=len(host.block.kind),
        host_links=len(host.block.src),
        domain_devices=len(block.kind),
        domain_links=len(block.src),
    )
    return _Domain(b, nic_spec, scaleup, host, block, domain_torus, domain_plan, tiling)


def check_tiled(spec: TopologySpec, catalog: Catalog) -> None:
    """Refuse a spec exactly as ``build_tiled`` would, without tiling its domains: its
    counts, one domain and the network above the NICs (a fraction of the fabric's memory
    and time, so callers can try node counts).

    Args:
        spec: A checked topology spec whose layout is not ``explicit``.
        catalog: The hardware database the spec's ids refer to.

    Raises:
        EngineError: ``build_tiled`` would refuse the spec (the same line).
    """
    d = _domain(spec, catalog)
    _check_network(d.build, d.host)


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
    d = _domain(spec, catalog)
    b, host, tiling, scaleup, nic_spec = d.build, d.host, d.tiling, d.scaleup, d.nic_spec
    domain_torus, domain_plan = d.torus, d.plan
    # The network's refusals before the domains are tiled (most of a large fabric's time
    # and memory: 100000 nodes of 8 GPUs are 5.8 M links, ~0.3 s and a 220 MiB peak).
    _check_network(b, host)
    tables = _tile_domains(d.block, tiling)
    ranks = _rank_devices(spec, host, tiling)
    network = _network(b, host, tiling, ranks)
    if network is not None:
        tables = tables.then(network.tables)
    gens = b.gens.items
    return Fabric(
        spec=spec,
        **tables._asdict(),
        dev_model=tuple(b.models.items),
        link_eff=link_efficiency(catalog, gens, nic_spec)[tables.link_gen],
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
