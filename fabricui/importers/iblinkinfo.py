"""Parse ``iblinkinfo`` output: every switch port (and, in newer versions, every adapter port).

Old versions print ``Switch 0x<guid> <name>:`` blocks, newer ones ``Switch: 0x<guid> <name>:``
and ``CA: <name>:`` blocks; each port line reads ``<lid> <port>[  ] ==( 4X 25.78125 Gbps
Active/  LinkUp)==> <peer lid> <peer port>[  ] "<peer name>" ( )``. Ports that are down
(``==( ... Down/ Polling)==>``) have no peer and are counted, not linked; one trained but not
active (``Initialize``, ``Armed``) keeps the peer it prints. A cable listed from both ends is
kept once (ends are told apart by LID and port).

Several runs pasted together (``iblinkinfo -P 1`` then ``-P 2``: one per rail, each its own
subnet whose LIDs may repeat) are read as separate subnets joined by host name. Output copied
from a web page (HTML-escaped: ``&nbsp;``, ``&quot;``, ``==&gt;``, ``<br>``) is decoded first,
with a note. Lane rates are signalling rates (``14.0625`` = FDR, ``53.125`` = HDR); the link's
``gbps`` is the nominal data rate (4X HDR = 200). Switches are named as the ``ibnetdiscover``
importer names them (``MF0;LG01-05:MQM8700/U1`` -> ``LG01-05``), so the two agree.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.fabric_graph import (
    LANE_GBPS,
    SIGNAL_SPEEDS,
    FabricHost,
    FabricLink,
    FabricSwitch,
    HostPort,
    SwitchGraph,
    listing,
    narrow_links,
    node_name,
    sort_hosts,
    switch_name,
)
from fabricui.importers.port_health import PortHealth, state_word

if TYPE_CHECKING:
    #: A cable by its two ends, (run, LID, port) each, the lower end first.
    _CableKey = tuple[tuple[int, int, int], tuple[int, int, int]]
    #: A port that is no plain cable: (owner, the port, its peer's (run, LID) for a hint);
    #: the owner is ``("switch", guid, run)`` or ``("ca", description)``.
    _PortRecord = tuple[tuple[Any, ...], PortHealth, tuple[int, int] | None]

FORMAT = "iblinkinfo"
EXPECTED = "`iblinkinfo` output"

#: Largest input read [characters] (a 4,000-switch fabric prints ~20 MB).
MAX_INPUT_CHARS = 64 * 2**20

_SWITCH = re.compile(r"^Switch:?[ \t]+(0x[0-9A-Fa-f]{1,32})(?:[ \t]+(.*))?$")
_CA = re.compile(r"^CA:[ \t]+(.*)$")
_PORT = re.compile(
    r"^(?:0x[0-9A-Fa-f]{1,32}[ \t]+)?(?:\"[^\"\n]{0,200}\"[ \t]+)?"
    r"(\d{1,6})[ \t]+(\d{1,5})\[[^\]\n]{0,8}\][ \t]*==\([ \t]*"
    r"(?:(\d{1,2})X[ \t]+(\d{1,4}(?:\.\d{1,6})?)[ \t]+Gbps(?:[ \t]*\(FDR10\))?[ \t]+)?"
    r"([A-Za-z]{1,12})/[ \t]*([A-Za-z]{1,12})[ \t]*\)(?:[ \t]*\(HOQ:[^)\n]{0,40}\))?==>[ \t]*(.*)$"
)
_PEER = re.compile(r"^(\d{1,6})[ \t]+(\d{1,5})\[[^\]\n]{0,8}\][ \t]*\"")
_RUN = re.compile(r"\biblinkinfo\b")
#: ``Could be 4X`` / ``Could be 53.125 Gbps`` hints after a link's peer.
_COULD_BE = re.compile(r"Could be[ \t]+(\d{1,2}X|[\d.]{1,12}[ \t]+Gbps|FDR10)")
_UNNAMED = re.compile(r"^(?:MT\d{3,}\b|Mellanox Technologies\b|$)")
#: Longest line read: a port line is ~120 characters; longer ones are not iblinkinfo.
MAX_LINE_CHARS = 4096
#: Most ports that are not links (or are degraded) kept (a fabric has ~100,000 ports).
MAX_PORT_RECORDS = 1_000_000


def _named_ports(
    records: list[_PortRecord],
    switches: dict[tuple[int, str], FabricSwitch],
    name_of_lid: dict[tuple[int, int], str],
    runs: int,
) -> list[PortHealth]:
    """The recorded ports with their owner's final name (a switch named by GUID when its
    description is no usable name), and peers that are switches named the same way."""
    out = []
    for owner, port, peer in records:
        if owner[0] == "switch":
            switch = switches.get((owner[2], owner[1]))
            port.device = switch.name if switch else owner[1]
        else:
            port.device = owner[1]
        if peer is not None and peer in name_of_lid:
            port.peer = name_of_lid[peer]
        elif port.peer:
            port.peer = node_name(port.peer)
        out.append(port)
    return out


def _label(text: str) -> str:
    """A block header's name: ``IBM HSSM:`` -> ``IBM HSSM``."""
    text = text.strip()
    return text[:-1].rstrip() if text.endswith(":") else text


def _peer(rest: str) -> tuple[int, int, str] | None:
    """(LID, port, description) of a port line's peer part, or None (port down)."""
    m = _PEER.match(rest)
    if m is None:
        return None
    close = rest.rfind('"')
    if close < m.end():
        return None
    return int(m.group(1)), int(m.group(2)), rest[m.end() : close]


def _decode_html(text: str) -> tuple[str, bool]:
    """Text copied from an HTML page's source, decoded; (text, whether it was HTML)."""
    if not re.search(r"&(?:nbsp|quot|gt|lt|amp);|<br\s*/?>", text, re.IGNORECASE):
        return text, False
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.IGNORECASE)
    text = re.sub(r"</?(?:p|pre|div|span|tt|code)\b[^>\n]{0,200}>", "", text, flags=re.IGNORECASE)
    return html.unescape(text).replace("\xa0", " "), True


@dataclass
class _End:
    """One end of a cable: subnet run, LID, port."""

    run: int
    lid: int
    port: int


def _speed(width: str | None, lane: str | None) -> tuple[str | None, str | None, float | None]:
    """(``4x``, ``QDR``, 40.0) from ``4`` and ``10.0``; an unknown lane rate keeps its number."""
    if not width or not lane:
        return None, None, None
    rate = float(lane)
    name = SIGNAL_SPEEDS.get(rate)
    lanes = int(width)
    gbps = lanes * LANE_GBPS[name] if name else lanes * rate
    return f"{lanes}x", name, gbps


@dataclass
class _Scan:
    """What reading the lines collects, before names are settled (keys carry the run:
    each run of iblinkinfo is its own subnet, whose LIDs may repeat)."""

    switches: dict[tuple[int, str], FabricSwitch] = field(default_factory=dict)
    """(run, GUID) -> switch."""
    switch_of_lid: dict[tuple[int, int], str] = field(default_factory=dict)
    """(run, LID) -> switch GUID."""
    desc_of_lid: dict[tuple[int, int], str] = field(default_factory=dict)
    """(run, LID) -> adapter description."""
    cables: dict[_CableKey, FabricLink] = field(default_factory=dict)
    """Every cable once, ends still unnamed."""
    ends: dict[_CableKey, tuple[_End, _End]] = field(default_factory=dict)
    """Each cable's two ends, in key order."""
    speeds_of: dict[_CableKey, set[str]] = field(default_factory=dict)
    """The rate each end reports (two: a mismatch)."""
    open_ports: list[_PortRecord] = field(default_factory=list)
    """Ports down or without a peer, and ports with a ``Could be`` hint."""
    run: int = 0
    """The run (subnet) being read, from 0."""
    current: tuple[str, str] | None = None
    """The block being read: ``("switch", guid)`` or ``("ca", name)``."""
    down: int = 0
    """Ports down or without a peer."""
    unknown: list[str] = field(default_factory=list)
    """``line N: text`` of lines not understood."""
    lines_read: int = 0
    """Port lines read."""


def parse(text: str) -> SwitchGraph:
    """Parse ``iblinkinfo`` output (one or several runs).

    Args:
        text: The output as pasted (HTML-escaped text is decoded).

    Returns:
        The switch graph: switches, hosts (adapters by NodeDescription), cables.

    Raises:
        ParseError: Too large, or no ``iblinkinfo`` port line in the text.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any iblinkinfo output")
    text, was_html = _decode_html(clean_text(text))
    warnings: list[str] = []
    notes: list[str] = []
    if was_html:
        notes.append("the input was HTML-escaped (copied from a web page's source): decoded")
    scan = _scan(text)
    if not scan.lines_read:
        raise wrong_format(text, EXPECTED, FORMAT)
    runs = scan.run + 1
    _name_switches(scan.switches, runs, warnings)
    name_of_lid = {
        (r, lid): scan.switches[(r, g)].name for (r, lid), g in scan.switch_of_lid.items()
    }
    links, hosts = _cables(scan, name_of_lid, runs, warnings)
    loops = [f"{k.a} ports {k.a_port}-{k.b_port}" for k in links if k.a == k.b]
    if loops:
        warnings.append(
            f"{len(loops)} self-loop cable(s) join two ports of one switch: {listing(loops)}"
        )
    if runs > 1:
        notes.append(
            f"{runs} runs of iblinkinfo (one subnet each, e.g. -P 1 and -P 2 for two rails): "
            "hosts are joined by name across them"
        )
    if scan.down:
        notes.append(f"{scan.down} port(s) down or without a peer (not cables)")
    if scan.unknown:
        warnings.append(
            f"{len(scan.unknown)} line(s) not understood and skipped (prompt, banner, error "
            f"output?): {listing(scan.unknown)}"
        )
    ports = _named_ports(scan.open_ports, scan.switches, name_of_lid, runs)
    ports += _narrow_ports(ports, links, warnings)
    return SwitchGraph(
        ports=ports,
        format=FORMAT,
        source="iblinkinfo",
        switches=list(scan.switches.values()),
        hosts=sort_hosts(hosts),
        links=links,
        warnings=warnings,
        notes=notes,
    )


def _scan(text: str) -> _Scan:
    """Read every line: a run's command line starts a new subnet, a ``Switch``/``CA`` line a
    block, a port line belongs to its block; other lines are kept as not understood."""
    scan = _Scan()
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line:
            continue
        if len(line) > MAX_LINE_CHARS:
            scan.unknown.append(f"line {number}: {line[:60]}")
            continue
        if _RUN.search(line) and "==" not in line:
            if scan.lines_read:
                scan.run += 1
            scan.current = None
            continue
        m = _SWITCH.match(line)
        if m:
            guid, name = m.group(1).lower(), _label(m.group(2) or "")
            key = (scan.run, guid)
            if key not in scan.switches:
                scan.switches[key] = FabricSwitch(name=name, guid=guid, description=name)
            scan.current = ("switch", guid)
            continue
        m = _CA.match(line)
        if m:
            scan.current = ("ca", _label(m.group(1)))
            continue
        m = _PORT.match(line)
        if m is None or scan.current is None:
            if not line.startswith("#"):
                scan.unknown.append(f"line {number}: {line[:60]}")
            continue
        _read_port(scan, scan.current, m)
    return scan


def _read_port(scan: _Scan, current: tuple[str, str], m: re.Match[str]) -> None:
    """One port line of the current block: its switch learns its LID and port count; a port
    that is down (or up without a peer) is recorded as a port, an up one as a cable."""
    scan.lines_read += 1
    run = scan.run
    lid, port, width, lane, state, phys, rest = m.groups()
    if current[0] == "switch":
        switch = scan.switches[(run, current[1])]
        switch.lid = int(lid)
        switch.ports = max(switch.ports or 0, int(port))
        scan.switch_of_lid[(run, int(lid))] = current[1]
    else:
        scan.desc_of_lid[(run, int(lid))] = current[1]
    peer = _peer(rest.strip())
    owner = current if current[0] == "ca" else ("switch", current[1], run)
    if state.lower() != "active" or peer is None:
        scan.down += 1
        word = state_word(state)
        if word in ("down", "unknown") and state_word(phys) in ("polling", "disabled"):
            word = state_word(phys)
        entry = PortHealth("", int(port), word, detail=f"{state}/{phys}")
        if peer is None and state.lower() == "active":
            entry.detail = f"{state}/{phys}, port not available"
        hint = None
        if peer is not None:  # trained but not active (Initialize, Armed): its peer is printed
            p_lid, p_port, p_desc = peer
            entry.peer, entry.peer_port = p_desc.strip(), p_port
            scan.desc_of_lid.setdefault((run, p_lid), node_name(p_desc))
            hint = (run, p_lid)
        if len(scan.open_ports) < MAX_PORT_RECORDS:
            scan.open_ports.append((owner, entry, hint))
        return
    _add_cable(scan, owner, (run, int(lid), int(port)), peer, width, lane, rest)


def _add_cable(
    scan: _Scan,
    owner: tuple[Any, ...],
    here: tuple[int, int, int],
    peer: tuple[int, int, str],
    width: str | None,
    lane: str | None,
    rest: str,
) -> None:
    """An up port's cable, kept once when listed from both ends (at the lower rate); a
    ``Could be`` hint after the peer also records the port as degraded."""
    run = here[0]
    p_lid, p_port, p_desc = peer
    there = (run, p_lid, p_port)
    scan.desc_of_lid.setdefault((run, p_lid), node_name(p_desc))
    key = (here, there) if here <= there else (there, here)
    w, s, gbps = _speed(width, lane)
    scan.speeds_of.setdefault(key, set()).add(f"{w}{s or lane}")
    hints = _COULD_BE.findall(rest)
    if hints and len(scan.open_ports) < MAX_PORT_RECORDS:
        entry = PortHealth("", here[2], "up", rate_gbps=gbps, degraded=True)
        entry.width, entry.could_be = (f"{width}X" if width else None), " and ".join(hints)
        entry.peer, entry.peer_port = p_desc.strip(), p_port
        scan.open_ports.append((owner, entry, (run, p_lid)))
    cable = scan.cables.get(key)
    if cable is None:
        scan.cables[key] = FabricLink("", None, "", None, w, s, gbps)
        scan.ends[key] = (_End(*key[0]), _End(*key[1]))
    elif gbps is not None and (cable.gbps is None or gbps < cable.gbps):
        cable.width, cable.speed, cable.gbps = w, s, gbps


def _name_switches(
    switches: dict[tuple[int, str], FabricSwitch], runs: int, warnings: list[str]
) -> None:
    """Name each switch as ``ibnetdiscover``'s importer does (``MF0;LG01-05:MQM8700/U1`` ->
    ``LG01-05``), by its GUID when its description is no usable unique name (blanks, or
    shared), keeping the description as its model; several runs know no chassis."""
    proposed = {key: switch_name(s.description) for key, s in switches.items()}
    counts = Counter(name for name, _ in proposed.values() if name)
    by_guid: list[str] = []
    for key, switch in switches.items():
        name, switch.model = proposed[key]
        if name and counts[name] == 1:
            switch.name = name
        else:
            switch.name = f"S-{key[1][2:].zfill(16)}"
            by_guid.append(f"{switch.name} ({switch.description!r})")
        if runs > 1:
            switch.chassis = None
    if by_guid:
        warnings.append(
            f"{len(by_guid)} switch(es) have no usable name (description has blanks or is "
            f"shared): named by GUID id, {listing(by_guid)}"
        )


def _cables(
    scan: _Scan, name_of_lid: dict[tuple[int, int], str], runs: int, warnings: list[str]
) -> tuple[list[FabricLink], list[FabricHost]]:
    """The cables with named ends, and the hosts they reach: an adapter is named by its
    description's host (``node01 mlx5_0``), or by LID when the description is a model."""
    hosts: dict[str, FabricHost] = {}
    host_ports: dict[tuple[str, int], HostPort] = {}
    unnamed: list[str] = []

    def endpoint(end: _End) -> str:
        key = (end.run, end.lid)
        if key in name_of_lid:
            return name_of_lid[key]
        desc = scan.desc_of_lid.get(key, "")
        if _UNNAMED.match(desc):
            name = f"lid{end.lid}" + (f"@run{end.run + 1}" if runs > 1 else "")
            if name not in hosts:
                unnamed.append(f"{name} ({desc!r})")
            host, hca, named = name, "", False
        else:
            name = desc
            host, _, hca = desc.partition(" ")
            named = True
        entry = hosts.setdefault(host, FabricHost(host, named=named))
        if (name, end.port) not in host_ports:
            host_ports[(name, end.port)] = HostPort(name, hca=hca.strip(), port=end.port)
            entry.ports.append(host_ports[(name, end.port)])
        return name

    links: list[FabricLink] = []
    mismatched = []
    for key, link in scan.cables.items():
        a, b = scan.ends[key]
        link.a, link.a_port = endpoint(a), a.port
        link.b, link.b_port = endpoint(b), b.port
        if len(scan.speeds_of[key]) > 1:
            mismatched.append(f"{link.a}[{a.port}]-{link.b}[{b.port}]")
        links.append(link)
    if unnamed:
        warnings.append(
            f"{len(unnamed)} adapter(s) have no host name (description is the adapter model): "
            f"named by LID, {listing(unnamed)}"
        )
    if mismatched:
        warnings.append(
            f"{len(mismatched)} cable(s) report a different rate at each end; the lower is "
            f"used: {listing(mismatched)}"
        )
    return links, list(hosts.values())


def _narrow_ports(
    ports: list[PortHealth], links: list[FabricLink], warnings: list[str]
) -> list[PortHealth]:
    """Cables trained at fewer lanes than the fabric's, as degraded ports (those with a
    ``Could be`` hint are reported already); every degraded cable is warned about once (a
    cable between two switches is printed, and hinted, from both ends)."""
    hinted = {(p.device, p.port) for p in ports if p.degraded}
    hinted |= {(p.peer or "", p.peer_port) for p in ports if p.degraded}
    narrow = narrow_links(links, hinted)
    degraded = []
    said: set[tuple[str, Any]] = set()
    for p in [*ports, *narrow]:
        if p.degraded and (p.device, p.port) not in said:
            degraded.append(p)
            said |= {(p.device, p.port), (p.peer or "", p.peer_port)}
    if degraded:
        warnings.append(
            f"{len(degraded)} link(s) trained below what both ends support (iblinkinfo's "
            f"'Could be' hint): {listing([p.label() + ' ' + (p.width or '') for p in degraded])}"
        )
    return narrow
