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

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.fabric import DeviceKind, Fabric
from fabricui.model.cluster import ClusterSpec

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import LinkGeneration, SwitchSpec, TopologySpec

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
    from fabricui.fabric.builder import (
        DEFAULT_NET_SWITCH,
        DEFAULT_SWITCH_BY_FAMILY,
        FALLBACK_NET_SWITCH,
    )

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
    from fabricui.fabric.builder import build_tiled

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
    # One domain block, built by the built-in builder (its NICs kept; the network it adds
    # after the block for a domain of several hosts is cut off).
    layout = "single" if domain == 1 else "auto"
    template_net = replace(net, layout=layout, leafs=None, spines=None, oversubscription=1.0)
    template = build_tiled(replace(spec, nodes=domain, net=template_net, cluster=None), catalog)
    dn, ln = template.node_devices, template.node_links
    hosts_per_block = domain * per_node
    nic_local = np.flatnonzero(template.dev_kind[:dn] == DeviceKind.NIC)
    if nic_local.shape[0] != net.nics_per_node * domain:
        raise EngineError(
            f"{spec.id}: {net.nics_per_node} NIC ports per node on {spec.gpus_per_node} GPUs "
            "become shared NIC devices; explicit cabling needs net.nic_map to give each port "
            "its own device"
        )
    blocks = spec.nodes // domain
    link = catalog.links[net.link]
    switch = _switch_model(spec, catalog, link)
    default_gbps = net.gbps or link.bw_GBps * 8
    labels = list(template.dev_model)
    label_ids = {label: i for i, label in enumerate(labels)}

    def label(text: str) -> int:
        if text not in label_ids:
            label_ids[text] = len(labels)
            labels.append(text)
        return label_ids[text]

    generations = list(template.generations)
    if net.link not in generations:
        generations.append(net.link)
    gen = generations.index(net.link)

    # --- switches: one device each, after the domain blocks ---
    base = blocks * dn
    names = [s.name for s in cluster.switches]
    index_of = {name: i for i, name in enumerate(names)}
    kinds = np.asarray([int(TIER_KINDS[s.tier]) for s in cluster.switches], dtype=np.int8)
    sw_index = np.zeros(len(names), dtype=np.int32)
    for kind in TIER_KINDS.values():
        mask = kinds == int(kind)
        sw_index[mask] = np.arange(int(mask.sum()), dtype=np.int32)
    sw_model = np.asarray([label(s.model or switch.name) for s in cluster.switches], dtype=np.int16)

    # --- cables: each NIC port to its switch, then switch-to-switch bundles ---
    nics_per_host = nic_local.shape[0] // hosts_per_block
    src: list[int] = []
    dst: list[int] = []
    bw: list[float] = []
    count: list[int] = []
    for h, host in enumerate(cluster.hosts):
        block, slot = divmod(h, hosts_per_block)
        for k, switch_name in enumerate(host.ports):
            if switch_name is None:
                continue
            stated = host.gbps[k] if k < len(host.gbps) else None
            rate = stated if stated else default_gbps
            nic = block * dn + int(nic_local[slot * nics_per_host + k])
            sw = base + index_of[switch_name]
            src += [nic, sw]
            dst += [sw, nic]
            bw += [rate / 8.0, rate / 8.0]
            count += [1, 1]
    bundles: dict[tuple[int, int], list[float]] = {}
    for cable in cluster.cables:
        a, b = index_of[cable.a], index_of[cable.b]
        key = (a, b) if a < b else (b, a)
        entry = bundles.setdefault(key, [0.0, 0.0])
        entry[0] += cable.cables * cable.gbps / 8.0
        entry[1] += cable.cables
    for (a, b), (bw_GBps, cables) in bundles.items():
        src += [base + a, base + b]
        dst += [base + b, base + a]
        bw += [bw_GBps, bw_GBps]
        count += [int(min(cables, 32767))] * 2

    gpus_per_block = spec.gpus_per_node * domain
    offsets = np.arange(blocks, dtype=np.int64)[:, None] * dn
    block_gpu_nic = template.gpu_nic[:gpus_per_block].astype(np.int64)
    gpu_nic = np.where(block_gpu_nic[None, :] >= 0, block_gpu_nic[None, :] + offsets, -1).reshape(
        -1
    )
    _reroute_uncabled(gpu_nic, cluster, block_gpu_nic, nic_local, hosts_per_block, dn)

    n_net_links = len(src)
    block_node = template.dev_node[:dn].astype(np.int64)
    dev_node = np.where(
        block_node[None, :] >= 0,
        block_node[None, :] + (np.arange(blocks, dtype=np.int64) * domain)[:, None],
        -1,
    ).reshape(-1)
    dev_kind = np.concatenate([_tile(template.dev_kind[:dn], blocks), kinds]).astype(np.int8)
    link_gen = np.concatenate(
        [_tile(template.link_gen[:ln], blocks), np.full(n_net_links, gen)]
    ).astype(np.int16)
    efficiency = np.asarray([catalog.links[g].efficiency for g in generations])
    return Fabric(
        spec=spec,
        dev_kind=dev_kind,
        dev_node=np.concatenate([dev_node, np.full(len(names), -1)]).astype(np.int32),
        dev_index=np.concatenate([_tile(template.dev_index[:dn], blocks), sw_index]).astype(
            np.int32
        ),
        dev_lat_us=np.concatenate(
            [_tile(template.dev_lat_us[:dn], blocks), np.full(len(names), switch.lat_us)]
        ),
        dev_model=tuple(labels),
        dev_model_id=np.concatenate([_tile(template.dev_model_id[:dn], blocks), sw_model]).astype(
            np.int16
        ),
        link_src=np.concatenate(
            [_tile(template.link_src[:ln], blocks, dn), np.asarray(src, dtype=np.int64)]
        ).astype(np.int32),
        link_dst=np.concatenate(
            [_tile(template.link_dst[:ln], blocks, dn), np.asarray(dst, dtype=np.int64)]
        ).astype(np.int32),
        link_bw_GBps=np.concatenate([_tile(template.link_bw_GBps[:ln], blocks), np.asarray(bw)]),
        link_lat_us=np.concatenate(
            [_tile(template.link_lat_us[:ln], blocks), np.full(n_net_links, link.lat_us)]
        ),
        link_eff=efficiency[link_gen],
        link_gen=link_gen,
        link_count=np.concatenate(
            [_tile(template.link_count[:ln], blocks), np.asarray(count, dtype=np.int64)]
        ).astype(np.int16),
        generations=tuple(generations),
        gpu_dev=(template.gpu_dev[:gpus_per_block][None, :] + offsets).reshape(-1).astype(np.int32),
        gpu_nic=gpu_nic.astype(np.int32),
        gpu_cpu=(template.gpu_cpu[:gpus_per_block][None, :] + offsets).reshape(-1).astype(np.int32),
        dev_reduces=np.concatenate(
            [
                _tile(template.dev_reduces[:dn], blocks),
                np.full(len(names), switch.in_network_reduction),
            ]
        ).astype(np.bool_),
        gpu=template.gpu,
        node_devices=dn,
        node_links=ln,
        net_protocols=template.net_protocols,
        generation_records=tuple(catalog.links[g] for g in generations),
        switch_names=tuple(names),
        hosts_per_domain=domain,
        host_devices=template.host_devices,
        host_links=template.host_links,
        scaleup_prefix=template.scaleup_prefix,
        scaleup_label=template.scaleup_label,
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
    from fabricui.model.cluster import ClusterCable, ClusterHost, ClusterSwitch

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
