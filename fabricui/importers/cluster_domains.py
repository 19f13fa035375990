"""NVLink domains in an imported cluster: trays grouped into domains (a map of each tray's
domain), or Slurm blocks taken as domains when the input has no switches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabricui.importers.cluster_draft import ClusterDraft, intra_dict, token, yaml_text
from fabricui.importers.common import ParseError
from fabricui.importers.fabric_graph import SwitchGraph, listing
from fabricui.importers.hostlist import compress, natural_key

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nvlink_domains import DomainMap
    from fabricui.model import TopologySpec


def domain_spec(
    node: TopologySpec, block_size: int, warnings: list[str]
) -> tuple[int, int, dict[str, Any], int]:
    """(GPUs per host, GPUs per domain node, intra dict, NICs per domain node) when blocks
    become NVLink domains of ``block_size`` hosts.

    The node spec is either one tray (GB200: 4 GPUs on NVLink 5 switches) or the whole
    domain (``gb200-nvl72``: 72 GPUs); a spec above 8 GPUs that ``block_size`` divides is
    taken as the domain.
    """
    g = node.gpus_per_node
    nics = node.net.nics_per_node if node.net is not None else 0
    intra = intra_dict(node.intra)
    if g > 8 and g % block_size == 0:
        return g // block_size, g, intra, nics
    if node.intra.fabric != "nvswitch":
        raise ParseError(
            f"blocks are NVLink domains, but the node spec {node.id} has no NVSwitch "
            f"(intra fabric {node.intra.fabric}): give a GB200-class --node"
        )
    for key in ("sockets", "pcie_switches"):
        if key in intra and intra[key]:
            intra[key] = intra[key] * block_size
    warnings.append(
        f"each block becomes one NVLink domain of {block_size} x {g} GPUs on "
        f"{node.intra.link or 'the GPU'}'s NVSwitch fabric (node spec {node.id} is one tray)"
    )
    return g, g * block_size, intra, nics * block_size


def domain_slots(
    node: TopologySpec,
    hosts: list[str],
    domains: DomainMap,
    warnings: list[str],
    comments: list[str],
) -> tuple[list[str | None], list[str], int]:
    """(host of each node, None for an empty slot; domain name of each node; trays per
    domain) when the hosts are grouped into NVLink domains.

    Domains follow each other in the order of their first host, trays in natural order; a
    domain with fewer trays than the largest (or than the node spec's rack) is padded with
    empty slots. Hosts in no domain are left out, since a tray without its NVLink fabric
    runs no multi-GPU job.
    """
    if node.intra.fabric not in ("nvswitch", "switch"):
        raise ParseError(
            f"NVLink domains need a node spec with a scale-up switch, but {node.id}'s intra "
            f"fabric is {node.intra.fabric}: give a GB200-class --node (e.g. gb200-nvl72)"
        )
    source = domains.source
    known = set(hosts)
    groups: dict[str, list[str]] = {}
    for host in hosts:
        domain = domains.domain_of.get(host)
        if domain is not None:
            groups.setdefault(domain, []).append(host)
    warnings.extend(domains.warnings)
    unlisted = [h for h in hosts if h not in domains.domain_of and h not in domains.left_out]
    if unlisted:
        warnings.append(
            f"{len(unlisted)} host(s) of the fabric are not in {source}: no NVLink domain, "
            f"left out: {compress(unlisted)}"
        )
    elsewhere = sorted((h for h in domains.domain_of if h not in known), key=natural_key)
    if elsewhere:
        warnings.append(
            f"{len(elsewhere)} tray(s) of {source} are no host of the fabric (no cable, or "
            f"not chosen): {listing(elsewhere)}"
        )
    if not groups:
        raise ParseError(f"no host of the fabric is in an NVLink domain of {source}")
    largest = max(len(v) for v in groups.values())
    rack = node.intra.hosts_per_domain
    size = max(largest, rack if rack > 1 else 1)
    if rack > 1 and largest > rack:
        warnings.append(
            f"a domain holds {largest} trays, more than the {rack} of {node.id}: domains of "
            f"{largest} trays"
        )
    partial = [f"{name} ({len(v)})" for name, v in groups.items() if len(v) < size]
    if partial:
        warnings.append(
            f"{len(partial)} NVLink domain(s) hold fewer than {size} trays: their empty slots "
            f"are domain positions without a host (never placed on): {listing(partial)}"
        )
    slots: list[str | None] = []
    names: list[str] = []
    for name, members in groups.items():
        members.sort(key=natural_key)
        slots += [*members, *([None] * (size - len(members)))]
        names += [name] * size
    comments.append(
        f"{len(groups)} NVLink domain(s) of up to {size} trays x {node.gpus_per_node} GPUs "
        f"({source})"
    )
    return slots, names, size


def host_blocks(graph: SwitchGraph, hosts: list[str]) -> list[str]:
    """Each host's block name (``-`` for none); empty when the graph has no blocks."""
    if not graph.blocks:
        return []
    block_of: dict[str, str] = {}
    for block in graph.blocks:
        for node in block.nodes:
            block_of.setdefault(node, block.name)
    return [yaml_text(token(block_of.get(h, "-"))) for h in hosts]


def blocks_spec(
    graph: SwitchGraph,
    node: TopologySpec,
    catalog: Catalog,
    spec_id: str,
    origin: str,
    command: str,
    net: tuple[str, float] | None,
    gpu: str | None,
) -> ClusterDraft:
    """A spec whose nodes are Slurm blocks (NVLink domains) and whose hosts are their trays."""
    warnings: list[str] = []
    comments: list[str] = []
    blocks = [b for b in graph.blocks if b.nodes]
    if not blocks:
        raise ParseError("the blocks list no nodes: nothing to build")
    size = max(len(b.nodes) for b in blocks)
    partial = [f"{b.name} ({len(b.nodes)})" for b in blocks if len(b.nodes) < size]
    if partial:
        warnings.append(
            f"{len(partial)} block(s) hold fewer than {size} nodes: their empty slots are "
            f"domain positions without a host (modelled, never placed on): {listing(partial)}"
        )
    per_host, gpus_per_node, intra, nics = domain_spec(node, size, warnings)
    nics = max(nics, size)
    if nics % size:
        nics = size * max(1, nics // size)
    seen: set[str] = set()
    host_lines: list[str] = []
    twice: list[str] = []
    for block in blocks:
        names = []
        for name in block.nodes:
            if name in seen:
                twice.append(name)
                names.append("-")
                continue
            seen.add(name)
            names.append(token(name))
        names += ["-"] * (size - len(names))
        host_lines += [yaml_text(n) if n != "-" else '"-"' for n in names]
    if twice:
        warnings.append(
            f"{len(twice)} node(s) are in two blocks: kept in the first only: {listing(twice)}"
        )
    if net is not None:
        link, gbps = net
    elif node.net is not None:
        link, gbps = node.net.link, node.net.gbps or catalog.links[node.net.link].bw_GBps * 8
    else:
        link, gbps = "ib-ndr", 400.0
    layout = node.net.layout if node.net is not None and node.net.layout != "explicit" else "auto"
    warnings.append(
        f"the network between the blocks is not in the input: a generated {layout} "
        f"{link} {gbps:g} Gb/s fabric with {nics} NIC port(s) per domain (import "
        "ibnetdiscover output for the real one)"
    )
    net_dict: dict[str, Any] = {
        "link": link,
        "gbps": gbps,
        "nics_per_node": nics,
        "layout": layout,
    }
    if node.net is not None:
        for key in ("rail_optimized", "oversubscription", "spines", "sharp", "switch", "nic"):
            value = getattr(node.net, key)
            default = getattr(type(node.net)(link=link), key)
            if value != default:
                net_dict[key] = value
        if net_dict.get("nic") and catalog.nics[net_dict["nic"]].link != link:
            del net_dict["nic"]
    comments.append(
        f"{len(blocks)} block(s) of up to {size} hosts x {per_host} GPUs = {gpus_per_node} GPUs "
        "per NVLink domain"
    )
    where = f" ({origin})" if origin else ""
    data: dict[str, Any] = {
        "id": spec_id,
        "description": (
            f"Imported cluster{where}: {len(blocks)} NVLink domains of {size} x {node.id} "
            f"({graph.source})"
        ),
        "source": command or f"fabricui import {graph.format}",
        "gpu": gpu or node.gpu,
        "nodes": len(blocks),
        "gpus_per_node": gpus_per_node,
        "nodes_settable": False,
        "intra": intra,
        "net": net_dict,
    }
    cluster = {
        "hosts_per_node": size,
        "switches": [],
        "hosts": host_lines,
        "cables": [],
        "blocks": [yaml_text(token(b.name)) for b in blocks],
    }
    return ClusterDraft(data=data, cluster=cluster, warnings=warnings, comments=comments)
