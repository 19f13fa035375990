"""Turn an imported switch graph plus one node's spec into a topology spec of the whole cluster.

The node spec says what one host is (GPUs, NVSwitch or PCIe, NICs): a reference topology
(``dgx-a100``) or a file from ``fabricui import nvidia-smi ... -o`` / ``fabricui probe``. The
switch graph says everything above the NICs. The result is a spec with ``net.layout:
explicit`` and a ``cluster`` section that fabricui builds exactly: the real switch names, one
line per cable bundle with its real cable count and rate, each host's NIC ports on their real
switches (in rail order), tiers from the cabling. Oversubscription is not a parameter: the
cables are the capacity, and the measured leaf ratios are written as a comment.

Choices the input cannot settle are made openly and listed as warnings (also written into
the file): which hosts are compute nodes (the most common port count and its name family;
``hosts=`` picks them instead), the NIC ports per node when the node spec disagrees with the
cabling, the link generation for speeds the catalog lacks (QDR, EDR), rates a Slurm file does
not have. Slurm blocks whose node spec is an NVLink tray (GB200) become NVLink domains: one
fabric node per block, its trays sharing one NVSwitch domain. With a map of each tray's
NVLink domain (``nvlink_domains``, from ``nvidia-smi -q``) the hosts stay nodes and the
domains become ``intra.hosts_per_domain`` blocks of the real fabric: the trays of a domain
in consecutive nodes, a partial rack's missing trays as empty slots.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError
from fabricui.importers.cluster_domains import blocks_spec, domain_slots, host_blocks
from fabricui.importers.cluster_draft import (
    ClusterDraft,
    intra_dict,
    render_cluster_yaml,
    token,
    yaml_text,
)
from fabricui.importers.common import ParseError
from fabricui.importers.fabric_graph import SwitchGraph, listing, tier_name
from fabricui.importers.hostlist import compress, natural_key

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nvlink_domains import DomainMap
    from fabricui.model import TopologySpec

    _Row = list[tuple[str, float | None] | None]

__all__ = ["ClusterDraft", "build_cluster_spec", "render_cluster_yaml"]

#: InfiniBand link generation for a measured port rate [Gb/s] (the catalog has HDR and up;
#: older speeds get HDR's latency and efficiency with their own measured rate).
_IB_LINKS = ((200.0, "ib-hdr"), (400.0, "ib-ndr"), (800.0, "ib-xdr"))


def _family(name: str, named: bool) -> str:
    return name.rstrip("0123456789") if named else "(adapters without host name)"


def _ib_link(gbps: float) -> str:
    for limit, link in _IB_LINKS:
        if gbps <= limit:
            return link
    return _IB_LINKS[-1][1]


@dataclass
class _Ports:
    """The compute hosts and each one's cabled ports."""

    hosts: list[str]
    ports: dict[str, list[tuple[str, str, float | None]]]
    """host -> [(port label, switch, rate Gb/s)] in rail order."""
    per_host: int


def _host_ports(graph: SwitchGraph) -> dict[str, list[tuple[str, str, float | None]]]:
    """Every host's cabled ports: (label, switch, rate), in adapter then port order."""
    owner = graph.port_owner()
    hca_of = {(p.name, p.port): p.hca for h in graph.hosts for p in h.ports}
    out: dict[str, list[tuple[str, str, float | None]]] = {h.name: [] for h in graph.hosts}
    for port_name, port_no, switch, link in graph.host_links():
        hca = hca_of.get((port_name, port_no), "") or port_name
        label = f"{hca}:{port_no}" if port_no is not None else hca
        out[owner[port_name]].append((label, switch, link.gbps))
    for ports in out.values():
        ports.sort(key=lambda p: natural_key(p[0]))
    return out


def _choose_hosts(
    graph: SwitchGraph,
    chosen: list[str] | None,
    node_nics: int | None,
    warnings: list[str],
    comments: list[str],
) -> _Ports:
    """The hosts that become nodes and their ports (see the module docstring)."""
    ports = _host_ports(graph)
    named = {h.name: h.named for h in graph.hosts}
    if chosen is not None:
        missing = [h for h in chosen if h not in ports]
        if missing:
            from fabricui.hwdb.catalog import unknown_id_message

            raise ConfigError("--hosts: " + unknown_id_message("host", missing[0], ports))
        hosts = list(dict.fromkeys(chosen))
    elif not graph.cables_known:
        hosts = [h for h, p in ports.items() if p]  # every Slurm node is a compute node
    else:
        cabled = {h: p for h, p in ports.items() if p}
        if not cabled:
            raise ParseError("no host has a cable to a switch: nothing to place GPUs on")
        counts = Counter(len(p) for p in cabled.values())
        modal = max(counts, key=lambda n: (counts[n], n))
        families = Counter(_family(h, named[h]) for h, p in cabled.items() if len(p) == modal)
        main = families.most_common(1)[0][0]
        hosts = [h for h, p in cabled.items() if len(p) == modal or _family(h, named[h]) == main]
        left = sorted(set(cabled) - set(hosts), key=natural_key)
        if left:
            warnings.append(
                f"{len(left)} host(s) left out as not compute nodes (another port count and "
                f"name family than the {len(hosts)} nodes; pass --hosts to choose): "
                f"{compress(left)}"
            )
        unconnected = [h for h, p in ports.items() if not p]
        if unconnected:
            comments.append(f"hosts without a cable to a switch: {compress(unconnected)}")
    hosts.sort(key=natural_key)
    counts = Counter(len(ports[h]) for h in hosts)
    per_host = max(counts, key=lambda n: (counts[n], n)) if counts else 0
    if not graph.cables_known:
        per_host = node_nics or 1
    return _Ports(hosts, {h: ports[h] for h in hosts}, per_host)


def _rails(chosen: _Ports, warnings: list[str]) -> dict[str, list[tuple[str, float | None] | None]]:
    """Each host's ports placed in rail order: (switch, rate) or None for a missing port."""
    per = chosen.per_host
    labels = sorted({p[0] for h in chosen.hosts for p in chosen.ports[h]}, key=natural_key)
    by_label = len(labels) == per
    out: dict[str, list[tuple[str, float | None] | None]] = {}
    short: list[str] = []
    extra: list[str] = []
    for host in chosen.hosts:
        ports = chosen.ports[host]
        if by_label:
            slot = {label: (switch, gbps) for label, switch, gbps in ports}
            row: list[tuple[str, float | None] | None] = [slot.get(label) for label in labels]
        else:
            row = [(switch, gbps) for _, switch, gbps in ports[:per]]
            row += [None] * (per - len(row))
            if len(ports) > per:
                extra.append(host)
        missing = [labels[i] if by_label else f"port {i}" for i, p in enumerate(row) if p is None]
        if missing:
            short.append(f"{host} ({', '.join(m.split(':')[0] for m in missing)})")
        out[host] = row
    if short:
        warnings.append(
            f"{len(short)} host(s) have fewer than {per} cabled NIC ports (a missing cable or a "
            f"port down): the missing ports stay uncabled and their GPUs use the nearest port "
            f"of the same host: {listing(short)}"
        )
    if extra:
        warnings.append(
            f"{len(extra)} host(s) have more than {per} cabled ports: only the first {per} "
            f"(adapter order) are in the spec: {listing(extra)}"
        )
    if (
        per > 1
        and not by_label
        and len({tuple(p[0] for p in chosen.ports[h]) for h in chosen.hosts}) > 1
    ):
        warnings.append(
            "hosts name their adapters differently: NIC k is each host's k-th cabled port in "
            "adapter order"
        )
    return out


def _net_dict(
    node: TopologySpec,
    catalog: Catalog,
    link: str,
    gbps: float,
    nics: int,
    g: int,
    warnings: list[str],
) -> dict[str, Any]:
    net: dict[str, Any] = {"link": link, "gbps": gbps, "nics_per_node": nics, "layout": "explicit"}
    spec_net = node.net
    if spec_net is not None:
        if (
            spec_net.nic_map is not None
            and len(spec_net.nic_map) == g
            and nics == (spec_net.nics_per_node)
        ):
            net["nic_map"] = list(spec_net.nic_map)
        if spec_net.nic and catalog.nics[spec_net.nic].link == link:
            net["nic"] = spec_net.nic
        if spec_net.switch and spec_net.link == link:
            net["switch"] = spec_net.switch
        if spec_net.sharp:
            net["sharp"] = True
    if "nic_map" not in net and nics > g:
        # One NIC device per cabled port: spread the GPUs, the extra ports carry no GPU.
        net["nic_map"] = [(i * nics) // g for i in range(g)]
        warnings.append(
            f"{nics} NIC ports per node for {g} GPUs: GPU i uses port i*{nics}/{g}, the other "
            "ports carry no GPU traffic"
        )
    return net


def build_cluster_spec(
    graph: SwitchGraph,
    node: TopologySpec,
    catalog: Catalog,
    *,
    spec_id: str = "cluster",
    origin: str = "",
    command: str = "",
    hosts: list[str] | None = None,
    net: tuple[str, float] | None = None,
    gpu: str | None = None,
    domains: DomainMap | None = None,
) -> ClusterDraft:
    """Map a switch graph and a node spec to a cluster topology spec.

    Args:
        graph: The imported switch graph (ibnetdiscover, iblinkinfo, Slurm topology).
        node: What one host is (its ``nodes`` count is ignored).
        catalog: The hardware database (link, NIC and switch ids).
        spec_id: The spec's ``id``.
        origin: Input file name, for the description.
        command: The command line that made it, for ``source``.
        hosts: The hosts to make nodes of (default: chosen from the graph).
        net: (link id, Gb/s) overriding the network link and the rate of cables whose
            rate the input lacks.
        gpu: Catalog GPU id overriding the node spec's.
        domains: Each tray's NVLink domain: the hosts are grouped into scale-up domains
            of the node spec's switch fabric (``intra.hosts_per_domain``).

    Returns:
        The draft with its warnings and comments.

    Raises:
        ParseError: Nothing to build (no hosts, no cabled host, no host in a domain), or
            domains with a node spec without a scale-up switch.
        ConfigError: ``hosts`` names a host the graph lacks.
    """
    warnings: list[str] = []
    comments: list[str] = []
    if node.nodes > 1:
        comments.append(f"node spec {node.id} is a {node.nodes}-node topology: one node is used")
    blocks_as_domains = bool(graph.blocks) and not graph.switches
    if blocks_as_domains and domains is not None:
        raise ParseError(
            "--domains groups the hosts of a switch graph; Slurm blocks are NVLink domains "
            "already (import ibnetdiscover output with --domains for the real fabric)"
        )
    if blocks_as_domains:
        return blocks_spec(graph, node, catalog, spec_id, origin, command, net, gpu)
    chosen = _chosen_nodes(graph, node, hosts, warnings, comments)
    per = chosen.per_host
    rows = _port_rows(graph, chosen, warnings)
    link, gbps = _network_link(graph, node, catalog, rows, net, per, warnings)
    tiers = graph.tiers()
    names = {s.name: token(s.name) for s in graph.switches}
    reach = _reachable_switches(graph, names, rows, warnings)
    switch_lines = _switch_lines(graph, reach, tiers, names)
    bundles = _cable_bundles(graph, tiers, rows, reach, names, gbps, warnings)
    cable_lines = [yaml_text(f"{a} {b} {n} {r:g}") for (a, b, r), n in bundles.items()]
    slots: list[str | None] = list(chosen.hosts)
    intra = intra_dict(node.intra)
    domain_names: list[str] = []
    if domains is not None:
        slots, domain_names, size = domain_slots(node, chosen.hosts, domains, warnings, comments)
        intra["hosts_per_domain"] = size
    host_lines = _host_lines(slots, rows, names, gbps)
    comments += _fabric_facts(graph, tiers, rows, reach, bundles, gbps)
    blocks = (
        [yaml_text(token(name)) for name in domain_names]
        if domain_names
        else host_blocks(graph, chosen.hosts)
    )
    g = node.gpus_per_node
    where = f" ({origin})" if origin else ""
    data: dict[str, Any] = {
        "id": spec_id,
        "description": (
            f"Imported cluster{where}: {sum(h is not None for h in slots)} x {node.id} nodes "
            f"on {len(switch_lines)} switches ({graph.source})"
        ),
        "source": command or f"fabricui import {graph.format}",
        "gpu": gpu or node.gpu,
        "nodes": len(slots),
        "gpus_per_node": g,
        "nodes_settable": False,
        "intra": intra,
        "net": _net_dict(node, catalog, link, gbps, per, g, warnings),
    }
    adapters = _adapter_names(chosen) if graph.cables_known else None
    if adapters is not None:
        data["net"]["adapters"] = adapters
    cluster: dict[str, Any] = {
        "hosts_per_node": 1,
        "switches": switch_lines,
        "hosts": host_lines,
        "cables": cable_lines,
    }
    if blocks:
        cluster["blocks"] = blocks
    return ClusterDraft(data=data, cluster=cluster, warnings=warnings, comments=comments)


def _adapter_names(chosen: _Ports) -> list[str] | None:
    """The device of each NIC in rail order (``net.adapters``) when every host names its
    cabled ports alike, each its device's first port (``mlx5_0:1`` ... ``mlx5_9:1``, as
    ``--health`` takes a named device's NIC port); None when they differ, a device carries
    two NIC ports or its cabled port is another (``mlx5_6:2``)."""
    labels = sorted({p[0] for h in chosen.hosts for p in chosen.ports[h]}, key=natural_key)
    names = [label.split(":")[0] for label in labels]
    if len(labels) != chosen.per_host or len(set(names)) != len(names):
        return None
    if any(label.partition(":")[2] not in ("", "1") for label in labels):
        return None
    if any(" " in name or not name for name in names):  # no device name: the port's owner
        return None
    return names


def _chosen_nodes(
    graph: SwitchGraph,
    node: TopologySpec,
    hosts: list[str] | None,
    warnings: list[str],
    comments: list[str],
) -> _Ports:
    """The hosts that become nodes, with their cabled ports; a node spec whose NIC count
    differs from the cabling is warned about (the cabling wins)."""
    if not graph.switches:
        raise ParseError("the input has no switches: nothing to build a cluster network from")
    node_nics = node.net.nics_per_node if node.net is not None else None
    chosen = _choose_hosts(graph, hosts, node_nics, warnings, comments)
    if not chosen.hosts:
        raise ParseError("no host to make a node of (no host is cabled to a switch)")
    per = chosen.per_host
    if node_nics is not None and per != node_nics and graph.cables_known:
        warnings.append(
            f"node spec {node.id} has {node_nics} NIC(s) per node, the fabric cables {per} "
            f"port(s) per host: the spec uses {per}"
        )
    return chosen


def _port_rows(graph: SwitchGraph, chosen: _Ports, warnings: list[str]) -> dict[str, _Row]:
    """Each node's NIC ports in rail order.

    Without cable details (a Slurm file) every port of a node is taken to sit on the one
    leaf the file names for it, at a rate the input does not give.
    """
    if graph.cables_known:
        return _rails(chosen, warnings)
    per = chosen.per_host
    rows: dict[str, _Row] = {}
    for h in chosen.hosts:
        rows[h] = [(chosen.ports[h][0][1], None)] * per if chosen.ports[h] else [None] * per
    return rows


def _network_link(
    graph: SwitchGraph,
    node: TopologySpec,
    catalog: Catalog,
    rows: dict[str, _Row],
    net: tuple[str, float] | None,
    per: int,
    warnings: list[str],
) -> tuple[str, float]:
    """(link id, Gb/s) of the network: ``--net``, else the most common cabled InfiniBand
    rate, else the node spec's, else NDR; a disagreement between them is warned about, and
    so is the cabling assumed when the input names no cables (``per`` ports a node)."""
    rates = Counter(
        gbps for row in rows.values() for port in row if port is not None and (gbps := port[1])
    )
    measured = max(rates, key=lambda r: (rates[r], r)) if rates else None
    if net is not None:
        link, gbps = net
        if measured is not None and measured != gbps:
            warnings.append(f"--net rate {gbps:g} Gb/s differs from the cabled {measured:g} Gb/s")
    elif measured is not None and graph.format in ("ibnetdiscover", "iblinkinfo"):
        link, gbps = _ib_link(measured), measured
        if node.net is not None and node.net.link != link:
            warnings.append(
                f"the hosts are cabled at {measured:g} Gb/s InfiniBand, the node spec says "
                f"{node.net.link}: the spec uses {link}"
            )
        if measured < 200:
            warnings.append(
                f"no catalog link generation for {measured:g} Gb/s InfiniBand: {link}'s "
                "latency and efficiency with the measured rates"
            )
    elif node.net is not None:
        link = node.net.link
        gbps = node.net.gbps or catalog.links[link].bw_GBps * 8
    else:
        link, gbps = "ib-ndr", 400.0
        warnings.append("network link not in the input or the node spec: assumed ib-ndr 400")
    if not graph.cables_known:
        warnings.append(
            f"{graph.source} names each switch's parent, not its cables: all {per} NIC port(s) "
            f"of a node are assumed on its leaf at {gbps:g} Gb/s, and every uplink bundle "
            "non-blocking (a switch's capacity below it split evenly over its parents); "
            "import ibnetdiscover output for the real cabling"
        )
    return link, gbps


def _reachable_switches(
    graph: SwitchGraph, names: dict[str, str], rows: dict[str, _Row], warnings: list[str]
) -> set[str]:
    """The switches joined to the nodes' switches (breadth-first over switch-to-switch
    cables); the others belong to another part of the fabric and are left out, warned."""
    adjacency: dict[str, set[str]] = {s: set() for s in names}
    for k in graph.switch_links():
        adjacency[k.a].add(k.b)
        adjacency[k.b].add(k.a)
    used_switches = {p[0] for row in rows.values() for p in row if p is not None}
    reach = set(used_switches)
    frontier = list(used_switches)
    while frontier:
        nxt = []
        for s in frontier:
            for other in adjacency[s]:
                if other not in reach:
                    reach.add(other)
                    nxt.append(other)
        frontier = nxt
    dropped = [s.name for s in graph.switches if s.name not in reach]
    if dropped:
        warnings.append(
            f"{len(dropped)} switch(es) have no path to the nodes' switches: left out: "
            f"{listing(dropped)}"
        )
    return reach


def _switch_lines(
    graph: SwitchGraph, reach: set[str], tiers: dict[str, int], names: dict[str, str]
) -> list[str]:
    """One ``NAME TIER [MODEL]`` line per kept switch, leaves first (a model name too long
    to be one is left out)."""
    lines = []
    ordered = sorted(
        (s for s in graph.switches if s.name in reach),
        key=lambda s: (max(tiers.get(s.name, 0), 0), natural_key(s.name)),
    )
    for s in ordered:
        tier = tier_name(max(tiers.get(s.name, 0), 0))
        model = s.model if s.model and len(s.model) <= 60 else ""
        lines.append(yaml_text(f"{names[s.name]} {tier} {model}".strip()))
    return lines


def _cable_bundles(
    graph: SwitchGraph,
    tiers: dict[str, int],
    rows: dict[str, _Row],
    reach: set[str],
    names: dict[str, str],
    gbps: float,
    warnings: list[str],
) -> Counter[tuple[str, str, float]]:
    """Switch-to-switch cables counted per (switch, switch, rate) bundle: the real cables,
    a cable without a rate at the network's; assumed ones when the input has no cables."""
    if not graph.cables_known:
        return _assumed_bundles(graph, tiers, rows, reach, names, gbps)
    bundles: Counter[tuple[str, str, float]] = Counter()
    unknown_rate = 0
    for k in graph.switch_links():
        if k.a not in reach or k.b not in reach:
            continue
        a, b = sorted((names[k.a], names[k.b]))
        rate = k.gbps
        if rate is None:
            unknown_rate += 1
            rate = gbps
        bundles[(a, b, rate)] += 1
    if unknown_rate:
        warnings.append(
            f"{unknown_rate} switch-to-switch cable(s) have no rate in the input: {gbps:g} Gb/s "
            "assumed"
        )
    return bundles


def _host_lines(
    slots: list[str | None], rows: dict[str, _Row], names: dict[str, str], gbps: float
) -> list[str]:
    """One ``HOST SWITCH...`` line per node: the switch of each NIC port (``-``: no cable,
    ``SWITCH@GBPS``: a rate other than the network's); ``"-"`` for an empty slot."""
    lines = []
    for host in slots:
        if host is None:
            lines.append('"-"')
            continue
        tokens = [token(host)]
        for port in rows[host]:
            if port is None:
                tokens.append("-")
            elif port[1] is not None and port[1] != gbps:
                tokens.append(f"{names[port[0]]}@{port[1]:g}")
            else:
                tokens.append(names[port[0]])
        lines.append(yaml_text(" ".join(tokens)))
    return lines


def _fabric_facts(
    graph: SwitchGraph,
    tiers: dict[str, int],
    rows: dict[str, _Row],
    reach: set[str],
    bundles: Counter[tuple[str, str, float]],
    gbps: float,
) -> list[str]:
    """What was measured, kept as comments: host cables at another rate, switches per
    tier and cables, the leaves' oversubscription."""
    facts = []
    per_rate = Counter(p[1] for row in rows.values() for p in row if p is not None and p[1])
    slower = sum(n for r, n in per_rate.items() if r != gbps)
    if slower:
        facts.append(
            f"{slower} host cable(s) run at another rate than {gbps:g} Gb/s (written SWITCH@GBPS)"
        )
    counts = Counter(tier_name(max(tiers.get(s, 0), 0)) for s in reach)
    facts.append(
        "switches: "
        + ", ".join(f"{counts[t]} {t}" for t in ("leaf", "spine", "core") if counts.get(t))
        + f" (tiers inferred from the cabling); {sum(bundles.values())} switch-to-switch "
        f"cables in {len(bundles)} bundles"
    )
    ratio = graph.oversubscription()
    if ratio:
        facts.append(
            f"measured leaf oversubscription (host : uplink capacity): median "
            f"{ratio['median']:g}:1, min {ratio['min']:g}, max {ratio['max']:g}"
        )
    return facts


def _assumed_bundles(
    graph: SwitchGraph,
    tiers: dict[str, int],
    rows: dict[str, list[tuple[str, float | None] | None]],
    reach: set[str],
    names: dict[str, str],
    gbps: float,
) -> Counter[tuple[str, str, float]]:
    """Non-blocking uplink bundles for a graph without cable details (Slurm): bottom up, a
    switch's capacity below it (hosts' ports, children's bundles) is split evenly over the
    switches a tier above it; switches of one tier cabled together get one cable."""
    down: defaultdict[str, float] = defaultdict(float)
    for row in rows.values():
        for port in row:
            if port is not None:
                down[port[0]] += gbps
    parents: dict[str, set[str]] = {}
    peers: set[tuple[str, str]] = set()
    for k in graph.switch_links():
        if k.a not in reach or k.b not in reach:
            continue
        ta, tb = tiers.get(k.a, 0), tiers.get(k.b, 0)
        if ta == tb:
            peers.add((min(k.a, k.b), max(k.a, k.b)))
        elif ta < tb:
            parents.setdefault(k.a, set()).add(k.b)
        else:
            parents.setdefault(k.b, set()).add(k.a)
    bundles: Counter[tuple[str, str, float]] = Counter()
    for switch in sorted(reach, key=lambda s: (tiers.get(s, 0), natural_key(s))):
        above = sorted(parents.get(switch, ()), key=natural_key)
        for parent in above:
            cables = max(1, -(-int(down[switch]) // int(gbps * len(above))))
            a, b = sorted((names[switch], names[parent]))
            bundles[(a, b, gbps)] += cables
            down[parent] += cables * gbps
    for a, b in peers:
        x, y = sorted((names[a], names[b]))
        bundles[(x, y, gbps)] += 1
    return bundles
