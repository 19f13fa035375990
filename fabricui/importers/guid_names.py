"""Name unnamed adapters: a GUID-to-hostname map applied to an imported switch graph.

An InfiniBand adapter whose NodeDescription is its model (``MT25408 ConnectX Mellanox
Technologies``) is named by its GUID in ``ibnetdiscover`` output, and HPC-X's ``sharp_cmd
topology`` writes port GUIDs where Slurm expects host names. Sites keep maps from GUID to
host (``map_GUID.py``'s ``H-<guid> host``, ``host: 0x<guid>``, CSV exports); ``fabricui
import ... --names FILE`` reads any of them and renames the adapters it knows. Adapters of
one host (a DGX's eight HCAs) become one host with all their ports; those the map does not
know keep their GUID names and are listed in a warning.

A line pairs one GUID with one host name, in either order, separated by blanks, commas,
semicolons, ``=`` or ``: ``; ``#`` starts a comment. GUIDs are read as ``0x`` + hex,
ibnetdiscover ids (``H-``/``S-`` + 16 hex digits), 16 bare hex digits, or four colon-
separated groups (``0002:c903:0008:0e84``), and compared as 16 hex digits. Linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabricui.importers.common import ParseError, clean_text
from fabricui.importers.fabric_graph import FabricHost, SwitchGraph, listing

#: Largest names file read [characters] (a 100,000-host map is a few MB).
MAX_INPUT_CHARS = 64 * 2**20
_GUID_FORMS = (
    re.compile(r"0[xX]([0-9A-Fa-f]{1,16})"),
    re.compile(r"[HSRhsr]-([0-9A-Fa-f]{16})"),
    re.compile(r"([0-9A-Fa-f]{16})"),
    re.compile(r"([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4})"),
)
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_SPLIT = re.compile(r"[\s,;=]+|:\s+|:$")
#: Warnings of the importers that a map answers (replaced by what is still unnamed).
_ANSWERED = ("a GUID-to-hostname map names them", "map them to hosts before placing jobs")


def guid_key(token: str) -> str | None:
    """A GUID token as 16 lowercase hex digits, or None when it is not a GUID.

    Args:
        token: ``0x2c90300048eba``, ``H-0002c90300048eba``, ``0002c90300048eba`` or
            ``0002:c903:0004:8eba``.
    """
    for form in _GUID_FORMS:
        match = form.fullmatch(token.strip())
        if match:
            return "".join(match.groups()).lower().zfill(16)
    return None


@dataclass
class NameMap:
    """GUIDs and the host each names."""

    hosts: dict[str, str] = field(default_factory=dict)
    """GUID (16 hex digits) -> host name."""
    warnings: list[str] = field(default_factory=list)
    """Lines that name nothing or contradict each other."""


def parse_names(text: str, origin: str = "<names>") -> NameMap:
    """Read a GUID-to-hostname map.

    Args:
        text: The file's text.
        origin: Its name, for messages.

    Returns:
        The map, with a warning for conflicting and unreadable lines.

    Raises:
        ParseError: Too large, or not one line pairs a GUID with a host name.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"{origin}: {len(text):,} characters is larger than any names file")
    names = NameMap()
    lone: list[str] = []
    junk: list[int] = []
    twice: list[str] = []
    for number, raw in enumerate(clean_text(text).split("\n"), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line or len(line) > 1000:
            if len(line) > 1000:
                junk.append(number)
            continue
        tokens = [t for t in _SPLIT.split(line) if t]
        guids = [g for g in (guid_key(t) for t in tokens) if g is not None]
        hosts = [t for t in tokens if guid_key(t) is None and _HOST.fullmatch(t)]
        if len(guids) == 1 and len(hosts) >= 1:
            guid, host = guids[0], hosts[0]
            known = names.hosts.setdefault(guid, host)
            if known != host:
                twice.append(f"{guid} ({known}, {host})")
        elif guids and not hosts:
            lone.append(str(number))
        else:
            junk.append(number)
    if not names.hosts:
        raise ParseError(
            f"{origin}: not a GUID-to-hostname map (no line pairs a GUID such as "
            "H-0002c90300048eba or 0x0002c90300048eba with a host name)"
        )
    if twice:
        names.warnings.append(
            f"{origin}: {len(twice)} GUID(s) are given two host names: the first is used: "
            f"{listing(twice)}"
        )
    if lone:
        names.warnings.append(
            f"{origin}: {len(lone)} line(s) hold a GUID without a host name (lines "
            f"{listing(lone)}): ignored"
        )
    if junk:
        names.warnings.append(
            f"{origin}: {len(junk)} line(s) are not 'GUID HOST' (lines "
            f"{listing([str(n) for n in junk])}): ignored"
        )
    return names


def _host_guids(host: FabricHost) -> list[str]:
    """Every GUID a host is known by: its GUID name and its ports' GUIDs."""
    keys = [guid_key(host.name)]
    keys += [guid_key(p.guid) for p in host.ports if p.guid]
    return [k for k in keys if k is not None]


def apply_names(graph: SwitchGraph, names: NameMap, origin: str = "the names file") -> None:
    """Rename the graph's adapters (and GUID-named switches) the map knows, in place.

    Hosts that end up with one name are merged into one host with all their ports; the
    importer's warning about unnamed adapters is replaced by one listing those still
    unnamed. Slurm blocks and cables follow the new names.

    Args:
        graph: An imported switch graph.
        names: The map.
        origin: The map's file name, for messages.
    """
    renamed: dict[str, str] = {}
    for host in graph.hosts:
        if host.named:
            continue
        for key in _host_guids(host):
            if key in names.hosts:
                renamed[host.name] = names.hosts[key]
                break
    merged: dict[str, FabricHost] = {}
    order: list[FabricHost] = []
    for host in graph.hosts:
        name = renamed.get(host.name, host.name)
        if name in merged:
            merged[name].ports.extend(host.ports)
            merged[name].named = merged[name].named or host.name in renamed
            continue
        host.name = name
        host.named = host.named or name in renamed.values()
        merged[name] = host
        order.append(host)
    graph.hosts = order
    switches = _rename_switches(graph, names)
    for block in graph.blocks:
        block.nodes = list(dict.fromkeys(renamed.get(n, n) for n in block.nodes))
    graph._tiers = None
    still = [h.name for h in graph.hosts if not h.named]
    graph.warnings = [w for w in graph.warnings if not any(a in w for a in _ANSWERED)]
    graph.warnings += names.warnings
    if still:
        graph.warnings.append(
            f"{len(still)} adapter(s) are not in {origin}: still named by GUID: {listing(still)}"
        )
    used = set(renamed.values())
    graph.notes.append(
        f"{origin} named {len(renamed)} adapter(s) as {len(used)} host(s)"
        + (f" and {switches} switch(es)" if switches else "")
    )


def _rename_switches(graph: SwitchGraph, names: NameMap) -> int:
    """Give GUID-named switches the map's names (cables follow); returns how many."""
    taken = {s.name for s in graph.switches} | {h.name for h in graph.hosts}
    renamed: dict[str, str] = {}
    for switch in graph.switches:
        key = guid_key(switch.name)
        new = names.hosts.get(key) if key is not None else None
        if new is None or new in taken:
            continue
        taken.add(new)
        renamed[switch.name] = new
        switch.name = new
    if renamed:
        for link in graph.links:
            link.a = renamed.get(link.a, link.a)
            link.b = renamed.get(link.b, link.b)
    return len(renamed)
