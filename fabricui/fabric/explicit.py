"""Build a real cluster's fabric: every switch and cable as the spec's ``cluster`` lists them.

A spec with ``net.layout: explicit`` (written by ``fabricui import ibnetdiscover ... -o``)
names its switches, the switch each host NIC port is cabled to, and every switch-to-switch
bundle with its cable count and rate. Nothing is generated: no leaf or spine count, no
oversubscription ratio; the capacity of each tier is whatever the cables add up to.

The nodes follow the fabric's layout contract like every other builder's: one node is built
by ``build_fabric`` (the same spec as a single node, so NVSwitch, PCIe, NICs and their
wiring are the built-in builder's), tiled over the nodes, and the switches and cables follow
the node blocks. Switches keep their real names (``Fabric.switch_names``) and their tier as
device kind (leaf, spine, core). The fabric has no regular ``FatTree`` table: routes come
from ``Router``'s widest-shortest search over the real graph, in bulk per (leaf, leaf) pair
(``engine.switch_routes``). With ``intra.hosts_per_domain`` the blocks are NVLink domains of
several hosts (a GB200 rack's trays), built by the same builder as one domain.

A NIC port without a cable (a host line's ``-``) stays in the node, uncabled; the GPUs that
would use it use the nearest cabled port of the same host instead, as NCCL does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.builder import build_tiled, link_efficiency
from fabricui.fabric.fabric import DeviceKind, Fabric, FabricTables
from fabricui.fabric.host_block import (
    DEFAULT_NET_SWITCH,
    DEFAULT_SWITCH_BY_FAMILY,
    FALLBACK_NET_SWITCH,
    pick_nic,
)
from fabricui.model.cluster import ClusterCable, ClusterHost, ClusterSpec, ClusterSwitch

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import LinkGeneration, NetSpec, SwitchSpec, TopologySpec

#: Device kind of each cluster tier.
TIER_KINDS = {"leaf": DeviceKind.LEAF, "spine": DeviceKind.SPINE, "core": DeviceKind.CORE}


def _tile(values: npt.NDArray, nodes: int, step: int = 0) -> npt.NDArray:
    """``values`` repeated for every node, shifted by ``step`` per node (ids) or not."""
    if not step:
        return np.tile(values, nodes)
    shifts = (np.arange(nodes, dtype=np.int64) * step)[:, None]
    return (values.astype(np.int64)[None, :] + shifts).reshape(-1)


def _switch_model(spec: TopologySpec, catalog: Catalog, link: LinkGeneration) -> SwitchSpec:
    """The spec's switch model, else the default one for the network link."""
    assert spec.net is not None
    for candidate in (
        spec.net.switch,
        DEFAULT_NET_SWITCH.get(link.id),
        DEFAULT_SWITCH_BY_FAMILY.get(link.family),
        FALLBACK_NET_SWITCH,
    ):
        if candidate and candidate in catalog.switches:
            found: SwitchSpec = catalog.switches[candidate]
            return found
    raise EngineError(f"no network switch model in the hardware database for {link.id}")


def _reroute_uncabled(
    gpu_nic: npt.NDArray[np.int64],
    cluster: ClusterSpec,
    block_gpu_nic: npt.NDArray[np.int64],
    nic_local: npt.NDArray[np.int64],
    hosts_per_block: int,
    dn: int,
) -> None:
    """Point GPUs whose NIC port has no cable at the nearest cabled port of the same host
    (in place), as NCCL does when a port is down; a host without any cabled port keeps its
    NICs (routes to it fail, naming the uncabled NIC).

    Args:
        gpu_nic: (n_gpus,) NIC device of every GPU, changed in place.
        cluster: The cluster (hosts in block order).
        block_gpu_nic: (gpus_per_block,) NIC device (block-local) of each GPU of a block.
        nic_local: (nics_per_block,) block-local NIC devices, host by host.
        hosts_per_block: Hosts in one device block.
        dn: Devices per block.
    """
    nics_per_host = nic_local.shape[0] // hosts_per_block
    per_block = block_gpu_nic.shape[0]
    position = {int(dev): j for j, dev in enumerate(nic_local)}
    for h, host in enumerate(cluster.hosts):
        if all(p is not None for p in host.ports):
            continue
        cabled = [k for k, p in enumerate(host.ports) if p is not None]
        if not cabled:
            continue
        block, slot = divmod(h, hosts_per_block)
        for q in range(per_block):
            j = position.get(int(block_gpu_nic[q]))
            if j is None or j // nics_per_host != slot:
                continue
            k = j - slot * nics_per_host
            if host.ports[k] is None:
                best = min((abs(c - k), c) for c in cabled)[1]  # nearest cabled port
                local = int(nic_local[slot * nics_per_host + best])
                gpu_nic[block * per_block + q] = block * dn + local


def _network_plan(cluster: ClusterSpec, n_cables: int) -> tuple[tuple[str, str], ...]:
    """What the imported network holds, as (figure, value) pairs for views."""
    counts = {tier: 0 for tier in TIER_KINDS}
    for switch in cluster.switches:
        counts[switch.tier] += 1
    tiers = [tier for tier in TIER_KINDS if counts[tier]]
    return (
        ("layout", "explicit (an imported cluster's own switches and cables)"),
        ("tiers", f"{len(tiers)} ({', '.join(tiers)})"),
        ("switches", ", ".join(f"{counts[t]} {t}" for t in tiers)),
        ("switch-to-switch cables", str(n_cables)),
    )


def _checked_cluster(spec: TopologySpec) -> tuple[NetSpec, ClusterSpec]:
    """The spec's network and cluster, refused when they cannot fill the spec's nodes.

    Raises:
        EngineError: No switches, a host count that does not match the nodes, two
            groupings of hosts, or nodes that do not fill whole domains.
    """
    net, cluster = spec.net, spec.cluster
    if net is None or cluster is None or not cluster.switches:
        raise EngineError(f"{spec.id}: net.layout explicit needs a cluster section with switches")
    per_node = cluster.hosts_per_node
    if len(cluster.hosts) != spec.nodes * per_node:
        raise EngineError(
            f"{spec.id}: the cluster lists {len(cluster.hosts)} hosts for {spec.nodes} nodes of "
            f"{per_node} (its node count is fixed; --nodes cannot change it)"
        )
    domain = spec.hosts_per_domain
    if domain > 1 and per_node > 1:
        raise EngineError(
            f"{spec.id}: cluster.hosts_per_node and intra.hosts_per_domain both group hosts; "
            "give one of them"
        )
    if spec.nodes % domain:
        raise EngineError(
            f"{spec.id}: {spec.nodes} nodes do not fill whole scale-up domains of {domain} "
            "hosts (an NVLink domain's missing trays are '-' host lines)"
        )
    return net, cluster


class _Blocks(NamedTuple):
    """The device blocks of an explicit fabric: one domain built by the built-in builder,
    repeated for every domain."""

    template: Fabric
    """One domain block (its devices and links come first in the template)."""
    n_blocks: int
    """Number of blocks."""
    domain: int
    """Nodes (hosts) per block (``intra.hosts_per_domain``)."""
    hosts: int
    """Cluster hosts per block (``hosts_per_domain`` or ``cluster.hosts_per_node``)."""
    nic_local: npt.NDArray[np.int64]
    """(nics_per_block,) block-local NIC devices, host by host."""

    @property
    def devices(self) -> int:
        """Devices per block."""
        return self.template.node_devices

    @property
    def links(self) -> int:
        """Links per block."""
        return self.template.node_links

    @property
    def first_switch(self) -> int:
        """Device id of the first switch (after every block)."""
        return self.n_blocks * self.devices

    @property
    def gpus(self) -> int:
        """GPUs per block."""
        return self.template.gpus_per_node * self.domain

    def tiled(self, values: npt.NDArray, step: int = 0) -> npt.NDArray:
        """One block's ``values`` for every block, shifted by ``step`` per block (ids)."""
        return _tile(values, self.n_blocks, step)


def _domain_blocks(
    spec: TopologySpec, catalog: Catalog, net: NetSpec, cluster: ClusterSpec
) -> _Blocks:
    """One domain block, built by the built-in builder (its NICs kept; the network it adds
    after the block for a domain of several hosts is cut off).

    Raises:
        EngineError: A NIC device stands for several ports (explicit cabling needs one
            device per port).
    """
    domain = spec.hosts_per_domain
    template_net = replace(
        net,
        layout="single" if domain == 1 else "auto",
        leafs=None,
        spines=None,
        oversubscription=1.0,
    )
    template = build_tiled(replace(spec, nodes=domain, net=template_net, cluster=None), catalog)
    nic_local = np.flatnonzero(template.dev_kind[: template.node_devices] == DeviceKind.NIC)
    if nic_local.shape[0] != net.nics_per_node * domain:
        raise EngineError(
            f"{spec.id}: {net.nics_per_node} NIC ports per node on {spec.gpus_per_node} GPUs "
            "become shared NIC devices; explicit cabling needs net.nic_map to give each port "
            "its own device"
        )
    return _Blocks(
        template, spec.nodes // domain, domain, domain * cluster.hosts_per_node, nic_local
    )


class _Switches(NamedTuple):
    """The cluster's switches as devices after the blocks, in the cluster's order."""

    names: tuple[str, ...]
    index_of: dict[str, int]
    """Position of each switch by name."""
    kind: npt.NDArray[np.int8]
    """(switches,) device kind of each (its tier)."""
    tier_index: npt.NDArray[np.int32]
    """(switches,) index among switches of its tier."""


def _cluster_switches(cluster: ClusterSpec) -> _Switches:
    """One device per cluster switch, its tier as its kind, numbered within its tier."""
    names = tuple(s.name for s in cluster.switches)
    kinds = np.asarray([int(TIER_KINDS[s.tier]) for s in cluster.switches], dtype=np.int8)
    index = np.zeros(len(names), dtype=np.int32)
    for kind in TIER_KINDS.values():
        mask = kinds == int(kind)
        index[mask] = np.arange(int(mask.sum()), dtype=np.int32)
    return _Switches(names, {name: i for i, name in enumerate(names)}, kinds, index)


def _device_labels(
    template_labels: tuple[str, ...], cluster: ClusterSpec, default_model: str
) -> tuple[tuple[str, ...], npt.NDArray[np.int16]]:
    """The template's hardware labels plus each switch's model (the cluster's, else the
    default switch's), and every switch's label id."""
    labels = list(template_labels)
    ids = {label: i for i, label in enumerate(labels)}
    model_id = []
    for switch in cluster.switches:
        text = switch.model or default_model
        if text not in ids:
            ids[text] = len(labels)
            labels.append(text)
        model_id.append(ids[text])
    return tuple(labels), np.asarray(model_id, dtype=np.int16)


@dataclass
class _NetLinks:
    """The network's directed links under construction: each cable or bundle as its two
    directions, in the order added."""

    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    bw_GBps: list[float] = field(default_factory=list)
    count: list[int] = field(default_factory=list)

    def bundle(self, a: int, b: int, bw_GBps: float, count: int) -> None:
        """A bundle ``a <-> b`` of ``count`` cables, ``bw_GBps`` per direction [GB/s]."""
        self.src += [a, b]
        self.dst += [b, a]
        self.bw_GBps += [bw_GBps, bw_GBps]
        self.count += [count, count]


def _add_nic_cables(
    links: _NetLinks,
    cluster: ClusterSpec,
    blocks: _Blocks,
    switches: _Switches,
    default_gbps: float,
) -> None:
    """Every cabled NIC port to its switch, at the host line's rate or the default."""
    base = blocks.first_switch
    nics_per_host = blocks.nic_local.shape[0] // blocks.hosts
    for h, host in enumerate(cluster.hosts):
        block, slot = divmod(h, blocks.hosts)
        for k, switch_name in enumerate(host.ports):
            if switch_name is None:
                continue
            stated = host.gbps[k] if k < len(host.gbps) else None
            rate = stated if stated else default_gbps
            nic = block * blocks.devices + int(blocks.nic_local[slot * nics_per_host + k])
            links.bundle(nic, base + switches.index_of[switch_name], rate / 8.0, 1)


def _add_switch_bundles(
    links: _NetLinks, cluster: ClusterSpec, blocks: _Blocks, switches: _Switches
) -> None:
    """One bundle per switch pair: repeated cable lines add up."""
    base = blocks.first_switch
    bundles: dict[tuple[int, int], list[float]] = {}
    for cable in cluster.cables:
        a, b = switches.index_of[cable.a], switches.index_of[cable.b]
        key = (a, b) if a < b else (b, a)
        entry = bundles.setdefault(key, [0.0, 0.0])
        entry[0] += cable.cables * cable.gbps / 8.0
        entry[1] += cable.cables
    for (a, b), (bw_GBps, cables) in bundles.items():
        links.bundle(base + a, base + b, bw_GBps, int(min(cables, 32767)))


def _gpu_nics(blocks: _Blocks, cluster: ClusterSpec) -> npt.NDArray[np.int64]:
    """(n_gpus,) NIC device of every GPU: its block's, moved off uncabled ports."""
    offsets = np.arange(blocks.n_blocks, dtype=np.int64)[:, None] * blocks.devices
    block_gpu_nic = blocks.template.gpu_nic[: blocks.gpus].astype(np.int64)
    gpu_nic = np.where(block_gpu_nic[None, :] >= 0, block_gpu_nic[None, :] + offsets, -1).reshape(
        -1
    )
    _reroute_uncabled(
        gpu_nic, cluster, block_gpu_nic, blocks.nic_local, blocks.hosts, blocks.devices
    )
    return gpu_nic


def _block_ranks(blocks: _Blocks, per_gpu: npt.NDArray) -> npt.NDArray[np.int32]:
    """(n_gpus,) a per-GPU device of the template (``gpu_dev``, ``gpu_cpu``) for every
    block."""
    offsets = np.arange(blocks.n_blocks, dtype=np.int64)[:, None] * blocks.devices
    return (per_gpu[: blocks.gpus][None, :] + offsets).reshape(-1).astype(np.int32)


def _block_tables(blocks: _Blocks) -> FabricTables:
    """The template's devices and links for every block (device ids and nodes shifted per
    block)."""
    t, dn, ln = blocks.template, blocks.devices, blocks.links
    block_node = t.dev_node[:dn].astype(np.int64)
    node = np.where(
        block_node[None, :] >= 0,
        block_node[None, :] + (np.arange(blocks.n_blocks, dtype=np.int64) * blocks.domain)[:, None],
        -1,
    ).reshape(-1)
    return FabricTables(
        dev_kind=blocks.tiled(t.dev_kind[:dn]),
        dev_reduces=blocks.tiled(t.dev_reduces[:dn]),
        dev_index=blocks.tiled(t.dev_index[:dn]),
        dev_node=node.astype(np.int32),
        dev_lat_us=blocks.tiled(t.dev_lat_us[:dn]),
        dev_model_id=blocks.tiled(t.dev_model_id[:dn]),
        link_src=blocks.tiled(t.link_src[:ln], dn).astype(np.int32),
        link_dst=blocks.tiled(t.link_dst[:ln], dn).astype(np.int32),
        link_bw_GBps=blocks.tiled(t.link_bw_GBps[:ln]),
        link_lat_us=blocks.tiled(t.link_lat_us[:ln]),
        link_gen=blocks.tiled(t.link_gen[:ln]),
        link_count=blocks.tiled(t.link_count[:ln]),
    )


class _NetworkHardware(NamedTuple):
    """What every network device and link shares: the default switch's latency and
    in-network reduction, the network link's generation id and latency."""

    switch: SwitchSpec
    gen: int
    """Index of the network link generation in the fabric's generations."""
    lat_us: float
    """Latency of the network link [us]."""


def _network_tables(
    switches: _Switches,
    model_id: npt.NDArray[np.int16],
    links: _NetLinks,
    hardware: _NetworkHardware,
) -> FabricTables:
    """One device per cluster switch, then the NIC cables and switch bundles."""
    n_switches, n_links = len(switches.names), len(links.src)
    return FabricTables(
        dev_kind=switches.kind,
        dev_reduces=np.full(n_switches, hardware.switch.in_network_reduction),
        dev_index=switches.tier_index,
        dev_node=np.full(n_switches, -1, dtype=np.int32),
        dev_lat_us=np.full(n_switches, hardware.switch.lat_us),
        dev_model_id=model_id,
        link_src=np.asarray(links.src, dtype=np.int64).astype(np.int32),
        link_dst=np.asarray(links.dst, dtype=np.int64).astype(np.int32),
        link_bw_GBps=np.asarray(links.bw_GBps),
        link_lat_us=np.full(n_links, hardware.lat_us),
        link_gen=np.full(n_links, hardware.gen, dtype=np.int16),
        link_count=np.asarray(links.count, dtype=np.int64).astype(np.int16),
    )


def build_explicit(spec: TopologySpec, catalog: Catalog) -> Fabric:
    """Build the fabric of a spec whose network is the explicit graph of ``spec.cluster``.

    The device blocks are scale-up domains: with ``intra.hosts_per_domain`` (an NVL72
    rack's trays) each block holds that many nodes, each a host; with the older
    ``cluster.hosts_per_node`` each node is a domain whose hosts share its GPUs.

    Args:
        spec: A checked spec with ``net.layout: explicit`` and a ``cluster`` section.
        catalog: The hardware database its ids refer to.

    Returns:
        The fabric: identical domain blocks, then one device per cluster switch (real
        names), one bundle per NIC port cable and per switch-to-switch bundle.

    Raises:
        EngineError: The cluster does not fit the spec (host or NIC counts, nodes that do
            not fill whole domains), or a NIC device stands for several ports (explicit
            cabling needs one device per port).
    """
    net, cluster = _checked_cluster(spec)
    blocks = _domain_blocks(spec, catalog, net, cluster)
    t = blocks.template
    link = catalog.links[net.link]
    switch = _switch_model(spec, catalog, link)
    labels, switch_model_id = _device_labels(t.dev_model, cluster, switch.name)
    generations = list(t.generations)
    if net.link not in generations:
        generations.append(net.link)
    switches = _cluster_switches(cluster)
    net_links = _NetLinks()
    _add_nic_cables(net_links, cluster, blocks, switches, net.gbps or link.bw_GBps * 8)
    _add_switch_bundles(net_links, cluster, blocks, switches)
    hardware = _NetworkHardware(switch, generations.index(net.link), link.lat_us)
    tables = _block_tables(blocks).then(
        _network_tables(switches, switch_model_id, net_links, hardware)
    )
    efficiency = link_efficiency(catalog, generations, pick_nic(catalog, spec))
    return Fabric(
        spec=spec,
        **tables._asdict(),
        dev_model=labels,
        link_eff=efficiency[tables.link_gen],
        generations=tuple(generations),
        gpu_dev=_block_ranks(blocks, t.gpu_dev),
        gpu_nic=_gpu_nics(blocks, cluster).astype(np.int32),
        gpu_cpu=_block_ranks(blocks, t.gpu_cpu),
        gpu=t.gpu,
        node_devices=blocks.devices,
        node_links=blocks.links,
        net_protocols=t.net_protocols,
        net_nccl_latency_us=t.net_nccl_latency_us,
        generation_records=tuple(catalog.links[g] for g in generations),
        switch_names=switches.names,
        hosts_per_domain=blocks.domain,
        host_devices=t.host_devices,
        host_links=t.host_links,
        scaleup_prefix=t.scaleup_prefix,
        scaleup_label=t.scaleup_label,
        network_plan=_network_plan(cluster, sum(c.cables for c in cluster.cables)),
    )


def cluster_of(fabric: Fabric) -> TopologySpec:
    """The explicit spec of a built fabric: its network's switches, cables and every host's
    NIC cables written out as a ``cluster`` section (``net.layout: explicit``).

    An imported cluster whose cabling is a generated fat-tree's builds the same devices and
    links as that fat-tree, so tests and benchmarks compare the explicit graph's routing
    with the fat-tree's tables on one fabric.

    Args:
        fabric: A fabric with leaf (and spine, core) switches.

    Returns:
        The spec; switches are named as the fabric names them (``leaf3``, ``spine0``).

    Raises:
        EngineError: The fabric has no leaf switches (a torus, a dragonfly, one node).
    """
    net = fabric.spec.net
    kinds = fabric.dev_kind
    switches = [
        (int(d), tier)
        for tier, kind in TIER_KINDS.items()
        for d in np.flatnonzero(kinds == int(kind))
    ]
    if net is None or not any(tier == "leaf" for _, tier in switches):
        raise EngineError(f"{fabric.spec.id}: no leaf switches to write as a cluster")
    name = {dev: fabric.device_name(dev) for dev, _ in switches}
    src, dst = fabric.link_src.astype(np.int64), fabric.link_dst.astype(np.int64)
    is_switch = np.zeros(fabric.n_devices, dtype=bool)
    is_switch[list(name)] = True
    cabled = np.flatnonzero((kinds[src] == DeviceKind.NIC) & is_switch[dst])
    port = {int(src[k]): name[int(dst[k])] for k in cabled}
    rate = {int(src[k]): float(fabric.link_bw_GBps[k]) * 8.0 for k in cabled}
    nics = np.flatnonzero(kinds == DeviceKind.NIC)
    hosts = []
    for node in range(fabric.nodes):
        mine = [int(d) for d in nics[fabric.dev_node[nics] == node]]
        hosts.append(
            ClusterHost(
                f"host{node:05d}",
                tuple(port.get(d) for d in mine),
                tuple(rate.get(d) for d in mine),
            )
        )
    bundles = np.flatnonzero(is_switch[src] & is_switch[dst] & (src < dst))
    cables = [
        ClusterCable(
            name[int(src[k])],
            name[int(dst[k])],
            int(fabric.link_count[k]),
            float(fabric.link_bw_GBps[k]) * 8.0 / int(fabric.link_count[k]),
        )
        for k in bundles
    ]
    cluster = ClusterSpec(
        switches=tuple(ClusterSwitch(name[dev], tier) for dev, tier in switches),
        cables=tuple(cables),
        hosts=tuple(hosts),
    )
    return replace(
        fabric.spec,
        net=replace(net, layout="explicit", leafs=None, spines=None),
        cluster=cluster,
        nodes_settable=False,
    )
