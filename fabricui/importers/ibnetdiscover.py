"""Parse ``ibnetdiscover`` output: the topology file (plain or ``-g``) and the ``-p`` ports report.

The topology file is a list of node records (``Switch 41 "S-<guid>" # "MF0;LG01-01:MQM8700/U1"
... lid 1600``), each followed by one line per connected port (``[3] "S-<guid>"[1] # "..." lid 19
4xHDR``); every cable appears twice, once from each end, and is kept once. The ports report
(``-p``) has one line per port: ``SW 1719 10 0x7cfe... 4x EDR - CA 134 1 0x7cfe... ( 'ib-sw' -
'o0001 HCA-1' )``.

Real dumps are read as they come: tabs stripped to spaces, CRLF, PuTTY banners and ``ibwarn``
lines before the header, NodeDescriptions with trailing blanks, a dump pasted with every line
commented out, ``# ...`` elisions, ``-g`` chassis grouping. What cannot be read as it is gets a
warning: unnamed adapters (NodeDescription is the adapter model), switches without a usable
name (named by GUID), nodes referenced but never declared, cables listed by one end only,
self-loop cables, ends that disagree on width or speed, director chassis, duplicate records.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.fabric_graph import (
    FabricHost,
    FabricLink,
    FabricSwitch,
    HostPort,
    SwitchGraph,
    link_gbps,
    listing,
    narrow_links,
    sort_hosts,
    switch_name,
)
from fabricui.importers.paste import drop_prompts, restore_tabs, unwrap

FORMAT = "ibnetdiscover"
EXPECTED = "`ibnetdiscover` output (topology file, -g or -p)"

#: Largest input read [characters]: the biggest real dump (a 4,000-node SuperPOD) is ~3 MB.
MAX_INPUT_CHARS = 64 * 2**20
#: Most lines read.
MAX_LINES = 4_000_000
#: Longest line read: record and port lines are ~150 characters; longer ones are not
#: ibnetdiscover output (and are reported as not understood).
MAX_LINE_CHARS = 4096

_ID = r"[SHR]-[0-9A-Fa-f]{1,32}"
_HEADER = re.compile(rf'^(Switch|Ca|Rt)[ \t]+(\d{{1,5}})[ \t]+"({_ID})"(.*)$')
_PORT = re.compile(
    r"^\[(\d{1,5})\](?:\(([0-9A-Fa-f]{1,32})\))?(?:\[ext[ \t]*\d{1,5}\])?[ \t]*"
    rf'"({_ID})"\[(\d{{1,5}})\](?:\(([0-9A-Fa-f]{{1,32}})\))?(.*)$'
)
_ATTR = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|routerguid)=(\S{1,80})")
_SPEED = re.compile(r"(\d{1,2}x)(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|\?{3})[ \t]*$")
_LID = re.compile(r"\blid[ \t]+(\d{1,6})")
_CHASSIS = re.compile(r"^Chassis[ \t]+(\S{1,40})")
_COMMENTED = re.compile(r'^#+[ \t]*(?:Switch|Ca)[ \t]+\d{1,5}[ \t]+"[SH]-')
_PORTS_LINE = re.compile(
    r"^(SW|CA|RT)[ \t]+(\d{1,6})[ \t]+(\d{1,5})[ \t]+(0x[0-9A-Fa-f]{1,32})[ \t]+(\d{1,2}x)"
    r"[ \t]+(\S{1,8})(.*)$"
)
_PORTS_PEER = re.compile(
    r"^[ \t]*-[ \t]+(SW|CA|RT)[ \t]+(\d{1,6})[ \t]+(\d{1,5})[ \t]+(0x[0-9A-Fa-f]{1,32})"
    r"[ \t]*\((.*)\)[ \t]*$"
)
_ERROR_LINE = re.compile(r"^(?:ibwarn|iberror|ibpanic)\b|^src/\S+:\d+|\bFailed\b|\berror\b", re.I)
#: Director chassis boards: Voltaire line/fabric boards, Mellanox director leaf/spine blades.
_DIRECTOR = re.compile(r"\bs[LF]B-\d|/[LS]\d{1,3}/U\d|\bBlade\b|\bSpine\b[ \t]*\d|\bLine\b[ \t]*\d")
#: NodeDescriptions that name the adapter model, not the host (never set by the host).
_UNNAMED = re.compile(r"^(?:MT\d{3,}\b|Mellanox Technologies\b|$)")


def _quoted(tail: str) -> tuple[str, str | None, str]:
    """The comment of a line: (text before the first quote, the quoted text, text after it).

    The quoted text runs from the first to the last double quote after ``#`` (a
    NodeDescription may hold quotes itself); None when there is no quoted text.
    """
    hash_at = tail.find("#")
    if hash_at < 0:
        return "", None, ""
    comment = tail[hash_at + 1 :]
    first = comment.find('"')
    last = comment.rfind('"')
    if first < 0 or last == first:
        return comment, None, ""
    return comment[:first], comment[first + 1 : last], comment[last + 1 :]


@dataclass
class _Node:
    """One node record (switch, CA or router) as declared or referenced."""

    node_id: str
    kind: str
    """``Switch``, ``Ca`` or ``Rt``."""
    ports: int | None = None
    description: str | None = None
    lid: int | None = None
    guid: str | None = None
    chassis: str | None = None
    declared: bool = False
    line: int = 0


@dataclass
class _Cable:
    """A cable seen from one or both ends."""

    ends: tuple[tuple[str, int], tuple[str, int]]
    speeds: list[tuple[str | None, str | None]] = field(default_factory=list)
    sides: set[str] = field(default_factory=set)


class _Reader:
    """Accumulates nodes and cables from either format, then builds the graph."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {}
        self.cables: dict[tuple[tuple[str, int], tuple[str, int]], _Cable] = {}
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.duplicates: list[str] = []

    def node(self, node_id: str, kind: str) -> _Node:
        found = self.nodes.get(node_id)
        if found is None:
            found = self.nodes[node_id] = _Node(node_id, kind)
        return found

    def cable(
        self, a: tuple[str, int], b: tuple[str, int], width: str | None, speed: str | None
    ) -> None:
        ends = (a, b) if a <= b else (b, a)
        entry = self.cables.get(ends)
        if entry is None:
            entry = self.cables[ends] = _Cable(ends)
        entry.speeds.append((width, speed))
        entry.sides.add(a[0])


def _split_ca(desc: str) -> tuple[str, str]:
    """``luna-0001 mlx5_0`` -> (``luna-0001``, ``mlx5_0``); ``atlas35`` -> (``atlas35``, "")."""
    host, _, hca = desc.strip().partition(" ")
    return host, " ".join(hca.split())


def _name_pair(text: str) -> tuple[str, str] | None:
    """``'o0001 HCA-1' - 'ib-sw'`` -> ("o0001 HCA-1", "ib-sw"); None when not that shape."""
    body = text.strip()
    if len(body) < 2 or body[0] != "'" or body[-1] != "'":
        return None
    middle = re.search(r"'[ \t]*-[ \t]*'", body[1:-1])
    if middle is None:
        return None
    inner = body[1:-1]
    return inner[: middle.start()], inner[middle.end() :]


def _uncommented(line: str) -> str:
    """A commented-out dump line without its ``#`` when it is a record, port or attribute
    line (other comments stay comments)."""
    body = line.strip().lstrip("#").strip()
    if _ATTR.match(body) or _HEADER.match(body) or _PORT.match(body):
        return body
    return line


def _read_topology(lines: list[str], reader: _Reader) -> tuple[int, list[str]]:
    """Read topology-file records. Returns (records read, lines not understood)."""
    current: _Node | None = None
    pending: dict[str, str] = {}
    chassis: str | None = None
    unknown: list[str] = []
    records = 0
    elided = 0
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if len(line) > MAX_LINE_CHARS:
            unknown.append(f"line {number}: {line[:60]}")
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            if body in ("...", "…"):
                elided += 1
            elif body.startswith("Topology file: generated on"):
                reader.notes.append(body.removeprefix("Topology file: ").strip())
            continue
        attr = _ATTR.match(line)
        if attr:
            pending[attr.group(1)] = attr.group(2)
            current = None
            continue
        header = _HEADER.match(line)
        if header:
            kind, ports, node_id, tail = header.groups()
            node = reader.node(node_id, kind)
            if node.declared:
                reader.duplicates.append(node_id)
            node.declared, node.kind, node.ports, node.line = True, kind, int(ports), number
            _, desc, after = _quoted(tail)
            if desc is not None:
                node.description = desc
            lid = _LID.search(after)
            if lid:
                node.lid = int(lid.group(1))
            guid = pending.get("switchguid") or pending.get("caguid") or pending.get("routerguid")
            node.guid = guid.split("(")[0] if guid else None
            node.chassis = chassis
            pending = {}
            current = node
            records += 1
            continue
        port = _PORT.match(line)
        if port and current is not None:
            local, _, peer_id, peer_port, _, tail = port.groups()
            before, desc, after = _quoted(tail)
            peer = reader.node(peer_id, {"S": "Switch", "H": "Ca", "R": "Rt"}[peer_id[0]])
            # The peer's description is after the quote on the switch side and inside the
            # quotes on the adapter side; its LID follows it on both.
            if desc is not None and peer.description is None:
                peer.description = desc
            lid = _LID.search(after)
            if lid and peer.lid is None:
                peer.lid = int(lid.group(1))
            speed = _SPEED.search(after if desc is not None else before)
            width, name = (speed.group(1), speed.group(2)) if speed else (None, None)
            reader.cable((current.node_id, int(local)), (peer_id, int(peer_port)), width, name)
            continue
        if line == "Non-Chassis Nodes":
            chassis = None
            reader.notes.append("ibnetdiscover -g (grouped) output")
            continue
        chassis_header = _CHASSIS.match(line)
        if chassis_header:
            chassis = chassis_header.group(1)
            continue
        unknown.append(f"line {number}: {line[:60]}")
    if elided:
        reader.warnings.append(
            f"the dump elides lines with '# ...' ({elided} places): switches, adapters and "
            "cables are missing"
        )
    return records, unknown


def _read_ports_report(lines: list[str], reader: _Reader) -> tuple[int, list[str]]:
    """Read ``ibnetdiscover -p`` lines. Returns (lines read, lines not understood)."""
    unknown: list[str] = []
    read = 0
    unknown_speed = 0
    kinds = {"SW": "Switch", "CA": "Ca", "RT": "Rt"}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _PORTS_LINE.match(line) if len(line) <= MAX_LINE_CHARS else None
        if m is None:
            unknown.append(f"line {number}: {line[:60]}")
            continue
        kind, lid, port, guid, width, speed, rest = m.groups()
        read += 1
        node_id = f"{kind[0] if kind != 'CA' else 'H'}-{guid[2:].lower().zfill(16)}"
        node = reader.node(node_id, kinds[kind])
        node.declared, node.guid, node.lid = True, guid.lower(), int(lid)
        if speed == "???":
            unknown_speed += 1
        speed_name = speed if speed != "???" else None
        peer = _PORTS_PEER.match(rest)
        if peer is None:
            # An unconnected port: only this node's description follows.
            desc = rest.strip().strip("'").strip()
            if desc and node.description is None:
                node.description = desc
            continue
        p_kind, p_lid, p_port, p_guid, names = peer.groups()
        peer_id = f"{p_kind[0] if p_kind != 'CA' else 'H'}-{p_guid[2:].lower().zfill(16)}"
        other = reader.node(peer_id, kinds[p_kind])
        other.guid, other.lid = p_guid.lower(), int(p_lid)
        pair = _name_pair(names)
        if pair:
            if node.description is None:
                node.description = pair[0]
            if other.description is None:
                other.description = pair[1]
        reader.cable((node_id, int(port)), (peer_id, int(p_port)), width, speed_name)
    if unknown_speed:
        reader.warnings.append(
            f"{unknown_speed} port(s) report speed '???' (not negotiated or unknown to the tool)"
        )
    return read, unknown


def _build(reader: _Reader, source: str, unknown: list[str]) -> SwitchGraph:
    """The switch graph of what the reader collected, with its warnings."""
    warnings = reader.warnings
    switches = [n for n in reader.nodes.values() if n.kind == "Switch"]
    proposed = {n.node_id: switch_name(n.description or "") for n in switches}
    display = _switch_names(switches, proposed, warnings)
    hosts, port_name, other = _adapters(reader.nodes, display, warnings)
    links, connected_ports, cable_warnings = _cables(reader, display)
    _connected_host_ports(hosts, port_name, connected_ports, warnings)
    warnings += cable_warnings
    _warn_gaps(reader, display, switches, links, unknown)
    graph_switches = []
    for node in switches:
        _, model = proposed[node.node_id]
        graph_switches.append(
            FabricSwitch(
                name=display[node.node_id],
                guid=node.guid or node.node_id,
                ports=node.ports,
                lid=node.lid,
                model=model,
                description=(node.description or "").strip(),
                chassis=node.chassis,
            )
        )
    narrow = narrow_links(links, set())
    if narrow:
        warnings.append(
            f"{len(narrow)} link(s) trained at fewer lanes than the fabric's others: "
            f"{listing([f'{p.label()} {p.width} (could be {p.could_be})' for p in narrow])}"
        )
    return SwitchGraph(
        ports=narrow,
        format=FORMAT,
        source=source,
        switches=graph_switches,
        hosts=sort_hosts(list(hosts.values())),
        links=links,
        warnings=warnings,
        notes=reader.notes,
        other_endpoints=other,
    )


def _switch_names(
    switches: list[_Node],
    proposed: dict[str, tuple[str | None, str]],
    warnings: list[str],
) -> dict[str, str]:
    """Node id -> display name of every switch: the name its description gives when that is
    usable and unique, else its GUID id (warned)."""
    name_count = Counter(name for name, _ in proposed.values() if name)
    display: dict[str, str] = {}
    by_guid: list[str] = []
    for node in switches:
        name, _ = proposed[node.node_id]
        if name and name_count[name] == 1:
            display[node.node_id] = name
        else:
            display[node.node_id] = node.node_id
            by_guid.append(f"{node.node_id} ({(node.description or '').strip()!r})")
    if by_guid:
        warnings.append(
            f"{len(by_guid)} switch(es) have no usable name (NodeDescription is a model name, "
            f"has blanks, is shared or missing): named by GUID id, {listing(by_guid)}"
        )
    return display


def _adapters(
    nodes: dict[str, _Node], display: dict[str, str], warnings: list[str]
) -> tuple[dict[str, FabricHost], dict[str, str], dict[str, str]]:
    """(hosts by name, adapter node id -> port name, other endpoints -> what they are) of
    the adapters and routers, whose display names are added to ``display``.

    An adapter belongs to the host its NodeDescription names (``luna-0001 mlx5_0``); one
    whose description is the adapter model, or shared, is a host named by its GUID id
    (warned); SHARP aggregation nodes and routers are other endpoints, not hosts.
    """
    hosts: dict[str, FabricHost] = {}
    port_name: dict[str, str] = {}
    other: dict[str, str] = {}
    unnamed: list[str] = []
    ca_names: Counter[str] = Counter(
        (n.description or "").strip() for n in nodes.values() if n.kind == "Ca"
    )
    shared: list[str] = []
    for node in nodes.values():
        if node.kind == "Rt":
            display[node.node_id] = node.node_id
            other[node.node_id] = "router"
            continue
        if node.kind != "Ca":
            continue
        desc = (node.description or "").strip()
        if "Aggregation Node" in desc:
            display[node.node_id] = f"{node.node_id} (aggregation node)"
            other[display[node.node_id]] = "aggregation node"
            continue
        if _UNNAMED.match(desc) or ca_names[desc] > 1:
            if ca_names[desc] > 1 and not _UNNAMED.match(desc):
                shared.append(desc)
            unnamed.append(node.node_id)
            display[node.node_id] = node.node_id
            host_name, hca, named = node.node_id, "", False
        else:
            display[node.node_id] = desc
            host_name, hca = _split_ca(desc)
            named = True
        port_name[node.node_id] = display[node.node_id]
        host = hosts.get(host_name)
        if host is None:
            host = hosts[host_name] = FabricHost(host_name, named=named)
        host.ports.append(HostPort(display[node.node_id], hca=hca, guid=node.guid or node.node_id))
    if unnamed:
        models = Counter((nodes[i].description or "").strip() or "(empty)" for i in unnamed)
        model = models.most_common(1)[0][0]
        warnings.append(
            f"{len(unnamed)} adapter(s) have no host name (NodeDescription {model!r}"
            + (f" and {len(models) - 1} other(s)" if len(models) > 1 else "")
            + "): each is a host named by its GUID id (a GUID-to-hostname map names them)"
        )
    if shared:
        warnings.append(
            f"adapters share a NodeDescription ({listing(sorted(set(shared)))}): each is named "
            "by its GUID id"
        )
    return hosts, port_name, other


def _cables(
    reader: _Reader, display: dict[str, str]
) -> tuple[list[FabricLink], dict[str, set[int]], list[str]]:
    """(links, node id -> its cabled ports, warnings about the cables): each cable once, at
    the lower rate when its ends disagree; cables seen from one end only and self-loops
    are warned about."""
    nodes = reader.nodes
    links: list[FabricLink] = []
    one_sided: list[str] = []
    mismatched: list[str] = []
    loops: list[str] = []
    connected_ports: dict[str, set[int]] = {}
    for cable in reader.cables.values():
        (a, a_port), (b, b_port) = cable.ends
        both_declared = nodes[a].declared and nodes[b].declared
        if both_declared and a != b and len(cable.sides) < 2:
            one_sided.append(f"{display[a]}[{a_port}]-{display[b]}[{b_port}]")
        seen = {s for s in cable.speeds if s != (None, None)}
        rates = sorted(seen, key=lambda s: link_gbps(*s) or 0.0)
        width, speed = rates[0] if rates else (None, None)
        if len(seen) > 1:
            shown = "/".join(f"{w}{s}" for w, s in rates)
            mismatched.append(f"{display[a]}[{a_port}]-{display[b]}[{b_port}] ({shown})")
        if a == b:
            loops.append(f"{display[a]} ports {a_port}-{b_port}")
        gbps = link_gbps(width, speed)
        links.append(FabricLink(display[a], a_port, display[b], b_port, width, speed, gbps))
        for end, port in cable.ends:
            connected_ports.setdefault(end, set()).add(port)
    warnings = []
    if one_sided:
        warnings.append(
            f"{len(one_sided)} cable(s) are listed by one end only although both ends have a "
            f"record (edited or truncated dump?): {listing(one_sided)}"
        )
    if mismatched:
        warnings.append(
            f"{len(mismatched)} cable(s) report a different width or speed at each end; the "
            f"lower is used: {listing(mismatched)}"
        )
    if loops:
        warnings.append(
            f"{len(loops)} self-loop cable(s) join two ports of one switch (left out of any "
            f"fabric built from this): {listing(loops)}"
        )
    return links, connected_ports, warnings


def _connected_host_ports(
    hosts: dict[str, FabricHost],
    port_name: dict[str, str],
    connected_ports: dict[str, set[int]],
    warnings: list[str],
) -> None:
    """One HostPort per connected adapter port (a dual-port HCA cabled twice has two); an
    adapter without a cable is warned about."""
    id_of_name = {name: node_id for node_id, name in port_name.items()}
    for host in hosts.values():
        split: list[HostPort] = []
        for hp in host.ports:
            ports: list[int | None] = [*sorted(connected_ports.get(id_of_name[hp.name], set()))]
            for number in ports or [None]:
                split.append(HostPort(hp.name, hca=hp.hca, port=number, guid=hp.guid))
        host.ports = [p for p in split if p.port is not None]
    empty = [h.name for h in hosts.values() if not h.ports]
    if empty:
        warnings.append(
            f"{len(empty)} adapter(s) have no connected port (no cable to a switch): "
            f"{listing(empty)}"
        )


def _warn_gaps(
    reader: _Reader,
    display: dict[str, str],
    switches: list[_Node],
    links: list[FabricLink],
    unknown: list[str],
) -> None:
    """Warn about what the dump leaves out or muddles: nodes without a record, records
    twice, cables without a rate, director chassis boards, lines not understood."""
    warnings = reader.warnings
    referenced = [n for n in reader.nodes.values() if not n.declared]
    if referenced:
        shown = [f"{display[n.node_id]} ({(n.description or '').strip()!r})" for n in referenced]
        warnings.append(
            f"{len(referenced)} node(s) are referenced by port lines but have no record of "
            f"their own (an excerpt?): {listing(shown)}"
        )
    if reader.duplicates:
        warnings.append(
            f"{len(reader.duplicates)} record(s) appear twice (merged): "
            f"{listing(sorted(set(reader.duplicates)))}"
        )
    no_speed = sum(1 for k in links if k.gbps is None)
    if no_speed and links:
        warnings.append(f"{no_speed} of {len(links)} cable(s) have no width/speed in the input")
    directors = [
        display[n.node_id] for n in switches if n.chassis or _DIRECTOR.search(n.description or "")
    ]
    if directors:
        warnings.append(
            f"{len(directors)} switch chip(s) belong to director chassis (line/fabric boards): "
            "each chip is a switch here and the chassis's internal wiring counts as cables: "
            f"{listing(directors)}"
        )
    if unknown:
        warnings.append(
            f"{len(unknown)} line(s) not understood and skipped (banner, error output, "
            f"another command?): {listing(unknown)}"
        )


#: A record line whose tab after the kind was lost (``Switch36 "S-..."``).
_GLUED_HEADER = re.compile(r'^([ \t]*(?:#+[ \t]*)?(?:Switch|Ca|Rt))(\d{1,5}[ \t]*"[SHR]-)')
#: How every line of a dump begins: what a wrapped line's rest never does.
_LINE_START = re.compile(
    r"^\s*(?:$|#|\[\d|(?:Switch|Ca|Rt)\s*\d|(?:vendid|devid|sysimgguid|switchguid|caguid|"
    r"routerguid)=|Chassis\b|Non-Chassis\b|(?:SW|CA|RT)\s+\d|-\s+(?:SW|CA|RT)\b)"
)


#: A record, port or attribute line (not a comment).
_DATA_START = re.compile(r"^\s*(?:\[\d|(?:Switch|Ca|Rt)\s*\d|\w+guid=|(?:SW|CA|RT)\s+\d)")


def _repaired(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines with shell prompts inside the dump dropped, terminal-wrapped lines joined
    and the tab after ``Switch``/``Ca`` put back; and a warning for each repair."""
    prompts = drop_prompts(lines, lambda line: _DATA_START.match(line) is not None)
    wrapped = unwrap(prompts.lines, lambda line: _LINE_START.match(line) is not None)
    tabs = restore_tabs(wrapped.lines, _GLUED_HEADER, "'Switch36' for 'Switch<TAB>36'")
    return tabs.lines, [*prompts.warnings, *wrapped.warnings, *tabs.warnings]


def parse(text: str) -> SwitchGraph:
    """Parse ``ibnetdiscover`` output (topology file, ``-g`` or ``-p``).

    Args:
        text: The output as pasted.

    Returns:
        The switch graph with a warning for everything that could not be read as it is.

    Raises:
        ParseError: Too large, or no ibnetdiscover record or port line in the text.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any fabric dump")
    text = clean_text(text)
    lines = text.split("\n")
    if len(lines) > MAX_LINES:
        raise ParseError(f"{len(lines):,} lines: more than {MAX_LINES:,}, not one fabric dump")
    lines, repairs = _repaired(lines)
    reader = _Reader()
    records, unknown = _read_topology(lines, reader)
    source = "ibnetdiscover"
    if not records and any(_COMMENTED.match(line.strip()) for line in lines):
        reader = _Reader()
        records, unknown = _read_topology([_uncommented(line) for line in lines], reader)
        reader.warnings.insert(
            0,
            "every line of the dump is commented out with '#' (pasted from a source file?): "
            "read with the '#' removed",
        )
    if not records:
        ports_reader = _Reader()
        read, ports_unknown = _read_ports_report(lines, ports_reader)
        if read:
            reader, unknown, source = ports_reader, ports_unknown, "ibnetdiscover -p"
    if not reader.nodes:
        raise wrong_format(text, EXPECTED, FORMAT)
    reader.warnings[:0] = repairs
    errors = [u for u in unknown if _ERROR_LINE.search(u.split(": ", 1)[1])]
    if errors:
        reader.warnings.append(f"error output mixed into the dump: {listing(errors)}")
        unknown = [u for u in unknown if u not in errors]
    return _build(reader, source, unknown)
