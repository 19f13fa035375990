"""Parse Slurm's view of the network: ``topology.conf`` (tree and block plugins), ``scontrol show
topology`` and ``topology.yaml``.

``topology.conf`` and ``scontrol show topology`` are ``Key=Value`` lines: ``SwitchName=s0
Nodes=tux[0-3] Switches=... LinkSpeed=...`` (tree), ``BlockName=b1 Nodes=...`` and
``BlockSizes=4,16`` (block); keys are case-insensitive and ``#`` starts a comment. Newer
``scontrol show topology`` repeats a subtree's nodes on every switch above it (``root ...
Nodes=<all>``); nodes are attached to the lowest switch that lists them. ``topology.yaml``
(Slurm 25.05+) is read without a YAML library: its ``tree`` and ``block`` topologies become
switches and blocks, ``flat``/``ring``/``torus3d`` ones are named in a note.

Slurm knows which switch is whose parent, not how many cables join them or how fast they are:
links carry no width, speed or rate, and the graph says so (``cables_known``). Node lists are
Slurm hostlists (``hostlist.expand``). What Slurm would reject or misread gets a warning:
unknown keys (typos), switches named as children but never defined, switches listed as each
other's children (no root), several roots, nodes under two switches or in two blocks, node
names that are adapter GUIDs, blocks of unequal size, a file commented out entirely. A key
repeated on one ``topology.conf`` line (``Nodes=a[1-2] Nodes=b[1-2]``) or in one
``topology.yaml`` mapping is refused, as in every other YAML input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabricui.errors import format_path
from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.fabric_graph import (
    FabricBlock,
    FabricHost,
    FabricLink,
    FabricSwitch,
    HostPort,
    SwitchGraph,
    listing,
)
from fabricui.importers.hostlist import MAX_HOSTS, compress, expand, natural_key

FORMAT = "slurm-topology"
EXPECTED = "Slurm `topology.conf`, `scontrol show topology` or `topology.yaml`"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
#: Most node names all lists of a file may expand to together.
MAX_TOTAL_NODES = 4 * MAX_HOSTS
#: Keys Slurm reads on a topology line (lower case).
_KEYS = frozenset(
    {
        "switchname",
        "switches",
        "nodes",
        "linkspeed",
        "level",
        "blockname",
        "blocksizes",
        "blockindex",
        "blocksize",
    }
)
_RECORD = re.compile(r"^(SwitchName|BlockName|BlockSizes)=", re.IGNORECASE)
_COMMENTED = re.compile(r"^#+[ \t]*(?:SwitchName|BlockName)=", re.IGNORECASE)
_GUID_NAME = re.compile(r"^(?:0x[0-9A-Fa-f]{8,16}|H-[0-9A-Fa-f]{8,16})$")
_AZSLURM = re.compile(r"(?m)^[ \t]*Block Name[ \t]*\|[ \t]*Size[ \t]*\|")


@dataclass
class _Switch:
    name: str
    line: int
    nodes: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    level: int | None = None
    link_speed: str | None = None


@dataclass
class _Parsed:
    """Switches, blocks and remarks from any of the three syntaxes."""

    switches: dict[str, _Switch] = field(default_factory=dict)
    blocks: dict[str, FabricBlock] = field(default_factory=dict)
    block_sizes: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    expanded: int = 0

    def names(self, text: str, line: int) -> list[str]:
        """A hostlist expanded, within the file's total budget."""
        try:
            names = expand(text)
        except ParseError as exc:
            raise ParseError(f"line {line}: {exc.message}") from None
        self.expanded += len(names)
        if self.expanded > MAX_TOTAL_NODES:
            raise ParseError(f"the node lists expand to more than {MAX_TOTAL_NODES:,} names")
        return names

    def switch(self, name: str, line: int) -> _Switch:
        found = self.switches.get(name)
        if found is not None:
            self.duplicates.append(f"{name} (lines {found.line} and {line})")
            return found
        found = self.switches[name] = _Switch(name, line)
        return found


def _key_values(line: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(key, value) pairs of a ``Key=Value ...`` line, and the tokens that are none."""
    pairs: list[tuple[str, str]] = []
    stray: list[str] = []
    for token in line.split():
        key, eq, value = token.partition("=")
        if eq and key:
            pairs.append((key, value))
        else:
            stray.append(token)
    return pairs, stray


def _check_conf_keys(pairs: list[tuple[str, str]], number: int) -> None:
    """Refuse a key Slurm reads that is given twice on one topology line (``SwitchName=s1
    Nodes=a[1-2] Nodes=b[1-2]``): Slurm keeps one value, so the other list would be lost.

    Keys are compared as Slurm does, without case; keys Slurm does not know stay a warning.

    Raises:
        ParseError: ``RECORD: duplicate key 'K' (twice on this line)`` with the line set.
    """
    seen: set[str] = set()
    for key, _ in pairs:
        folded = key.lower()
        if folded in seen:
            head, value = pairs[0]
            raise ParseError(
                f"{head}={value[:40]}: duplicate key {key!r} (twice on this line)", line=number
            )
        if folded in _KEYS:
            seen.add(folded)


def _read_conf(lines: list[str], parsed: _Parsed) -> tuple[int, list[str]]:
    """Read ``topology.conf`` / ``scontrol show topology`` lines; (records, not understood)."""
    records = 0
    unknown: list[str] = []
    typos: list[str] = []
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if not _RECORD.match(line):
            unknown.append(f"line {number}: {line[:60]}")
            continue
        pairs, stray = _key_values(line)
        _check_conf_keys(pairs, number)
        if stray:
            typos.append(f"line {number}: {' '.join(stray)[:40]}")
        records += 1
        head, value = pairs[0]
        head = head.lower()
        values: dict[str, str] = {}
        for key, v in pairs[1:]:
            if key.lower() not in _KEYS:
                typos.append(f"line {number}: {key}=")
                continue
            values[key.lower()] = v
        if head == "blocksizes":
            sizes = [v.strip() for v in value.split(",") if v.strip()]
            if all(v.isdigit() and len(v) < 9 for v in sizes):
                parsed.block_sizes = [int(v) for v in sizes]
            else:
                typos.append(f"line {number}: BlockSizes={value[:20]}")
            continue
        if not value:
            typos.append(f"line {number}: empty {pairs[0][0]}=")
            continue
        if head == "blockname":
            nodes = parsed.names(values["nodes"], number) if values.get("nodes") else []
            if value in parsed.blocks:
                parsed.duplicates.append(f"{value} (line {number})")
                parsed.blocks[value].nodes.extend(nodes)
            else:
                size = values.get("blocksize")
                stated = int(size) if size and size.isdigit() and len(size) < 9 else None
                parsed.blocks[value] = FabricBlock(value, nodes, stated)
            continue
        switch = parsed.switch(value, number)
        if values.get("nodes"):
            switch.nodes.extend(parsed.names(values["nodes"], number))
        if values.get("switches"):
            switch.children.extend(parsed.names(values["switches"], number))
        level = values.get("level")
        if level is not None and level.isdigit() and len(level) < 6:
            switch.level = int(level)
        if values.get("linkspeed"):
            switch.link_speed = values["linkspeed"]
    if typos:
        parsed.warnings.append(
            f"{len(typos)} key(s) Slurm does not know on a topology line (typo?), ignored: "
            f"{listing(typos)}"
        )
    return records, unknown


_YAML_ITEM = re.compile(r"^-[ \t]*([A-Za-z_0-9]{1,40})[ \t]*:[ \t]*(.*)$")
_YAML_KEY = re.compile(r"^([A-Za-z_0-9]{1,40})[ \t]*:[ \t]*(.*)$")


def _yaml_scalar(text: str) -> str:
    """A plain or quoted YAML scalar, unquoted; ``[a, b]`` flow lists joined by commas."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        return ",".join(part.strip().strip("'\"") for part in text[1:-1].split(","))
    return text


#: A key on a block mapping line as YAML reads it: a plain word (``nodes``, ``ib-ndr``) or a
#: quoted one, then ``:`` and a space or the line's end (``http://x`` is no key).
_YAML_ANY_KEY = re.compile(
    r"""^(?:"([^"\\]*)"|'([^']*)'|([^\s:#"'\[\]{},&*!|>%@`?-][^:#]*?|-[^\s:#][^:#]*?))"""
    r"[ \t]*:(?:[ \t]+(.*))?$"
)
#: A value that starts a literal or folded block (its lines are text, not keys).
_YAML_BLOCK_SCALAR = re.compile(r"^[|>][0-9+-]*$")


@dataclass
class _Mapping:
    """One block mapping of ``topology.yaml``, as the duplicate-key check walks the lines."""

    column: int
    """Column of its keys (-1 for the document itself)."""
    path: tuple[str | int, ...]
    """Where it is: ``(0, "tree", "switches", 1)`` is the second switch of the first topology."""
    keys: dict[str, int] = field(default_factory=dict)
    """Key -> the line it first appears on."""
    last: str | None = None
    """The latest key: a deeper mapping or list on the next lines is its value."""
    items: dict[str | None, int] = field(default_factory=dict)
    """How many list items each key's value has had so far."""

    def child(self) -> tuple[str | int, ...]:
        """The path of the latest key's value."""
        return (*self.path, self.last) if self.last is not None else self.path


def _check_yaml_keys(lines: list[str]) -> None:
    """Refuse a key repeated in one mapping of ``topology.yaml``, as every YAML input is (a
    YAML load would keep the last value; the reader would read both).

    Mappings are told apart by indentation, and each list item (``- switch: s1``) is a new
    one, so the same key in another switch, block or topology is no duplicate. Keys are
    compared as written; flow mappings (``{a: 1}``) and block scalars are not looked into.

    Raises:
        ParseError: ``PATH: duplicate key 'K' (first at line N)`` on the repeated key's line.
    """
    stack = [_Mapping(-1, ())]
    block_scalar: int | None = None  # the column of the key whose value is a | or > block
    for number, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].rstrip()
        body = line.strip()
        indent = len(line) - len(line.lstrip())
        if block_scalar is not None:
            if not body or indent > block_scalar:
                continue
            block_scalar = None
        if not body or body.startswith("#"):
            continue
        if body in ("---", "..."):
            stack = [_Mapping(-1, ())]
            continue
        while stack[-1].column > indent:
            stack.pop()
        if body[0] == "-" and body[1:2] in ("", " ", "\t"):
            parent = stack[-1]
            index = parent.items.get(parent.last, 0)
            parent.items[parent.last] = index + 1
            rest = body[1:].lstrip()
            key = _YAML_ANY_KEY.match(rest)
            if key is None:
                continue
            column = indent + len(body) - len(rest)
            stack.append(_Mapping(column, (*parent.child(), index)))
        else:
            key = _YAML_ANY_KEY.match(body)
            if key is None:
                continue
            column = indent
            if stack[-1].column < column:
                stack.append(_Mapping(column, stack[-1].child()))
        mapping = stack[-1]
        name = next(g for g in key.groups()[:3] if g is not None)
        first = mapping.keys.setdefault(name, number)
        if first != number and name != "<<":
            raise ParseError(
                f"{format_path((*mapping.path, name))}: duplicate key {name!r} "
                f"(first at line {first})",
                line=number,
            )
        mapping.last = name
        if _YAML_BLOCK_SCALAR.match((key.group(4) or "").strip()):
            block_scalar = column


def _read_yaml(lines: list[str], parsed: _Parsed) -> int:
    """Read ``topology.yaml``'s tree and block topologies (a fixed schema, line by line).

    Returns:
        The number of topologies found.
    """
    topologies: list[tuple[str, str, bool]] = []  # (name, kind, default)
    kind: str | None = None
    item: _Switch | FabricBlock | None = None
    name = ""
    default = False
    in_sizes = False
    for number, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].rstrip()
        body = line.strip()
        if not body or body.startswith("#") or body == "---":
            continue
        indent = len(line) - len(line.lstrip())
        m = _YAML_ITEM.match(body)
        if m and m.group(1) == "topology" and indent == 0:
            if name:
                topologies.append((name, kind or "?", default))
            name, kind, default, item, in_sizes = _yaml_scalar(m.group(2)), None, False, None, False
            continue
        if m:
            key, value = m.group(1), _yaml_scalar(m.group(2))
            in_sizes = False
            if key == "switch" and kind == "tree":
                item = parsed.switch(value, number)
            elif key == "block" and kind == "block":
                if value in parsed.blocks:
                    parsed.duplicates.append(f"{value} (line {number})")
                item = parsed.blocks.setdefault(value, FabricBlock(value))
            elif key in ("ring", "name"):
                item = None
            continue
        if body.startswith("-") and in_sizes:
            size = body[1:].strip()
            if size.isdigit() and len(size) < 9:
                parsed.block_sizes.append(int(size))
            continue
        k = _YAML_KEY.match(body)
        if k is None:
            continue
        key, value = k.group(1), _yaml_scalar(k.group(2))
        in_sizes = False
        if key in ("tree", "block", "flat", "ring", "torus3d"):
            kind = key
        elif key == "cluster_default":
            default = value.lower() == "true"
        elif key == "block_sizes":
            in_sizes = not value
            if value:
                parsed.block_sizes += [
                    int(v) for v in value.split(",") if v.strip().isdigit() and len(v.strip()) < 9
                ]
        elif key == "children" and isinstance(item, _Switch) and value:
            item.children.extend(parsed.names(value, number))
        elif key == "nodes" and isinstance(item, (_Switch, FabricBlock)) and value:
            item.nodes.extend(parsed.names(value, number))
    if name:
        topologies.append((name, kind or "?", default))
    other = [f"{n} ({k})" for n, k, _ in topologies if k not in ("tree", "block")]
    trees = [n for n, k, _ in topologies if k == "tree"]
    if other:
        parsed.notes.append(
            f"topologies not modelled by fabricui (flat, ring, torus3d): {listing(other)}"
        )
    if len(trees) > 1:
        parsed.warnings.append(
            f"{len(trees)} tree topologies ({listing(trees)}): their switches are merged"
        )
    defaults = [n for n, _, d in topologies if d]
    if defaults:
        parsed.notes.append(f"cluster default topology: {defaults[0]}")
    return len(topologies)


def _uncomment(line: str) -> str:
    return re.sub(r"^[ \t]*#+[ \t]*", "", line) if _COMMENTED.match(line.strip()) else line


def _tree(parsed: _Parsed) -> tuple[list[FabricSwitch], list[FabricLink], dict[str, list[str]]]:
    """Switches, parent-child links, and the switches each node hangs from."""
    warnings = parsed.warnings
    switches = parsed.switches
    parents: dict[str, list[str]] = {}
    undefined: list[str] = []
    links: list[FabricLink] = []
    mutual: list[str] = []
    seen_pairs: set[tuple[str, str]] = set()
    for switch in switches.values():
        for child in switch.children:
            if child not in switches:
                undefined.append(f"{child} (under {switch.name})")
                continue
            if child == switch.name:
                warnings.append(f"switch {child} lists itself as its child (ignored)")
                continue
            parents.setdefault(child, []).append(switch.name)
            pair = (min(child, switch.name), max(child, switch.name))
            if pair in seen_pairs:
                mutual.append(f"{pair[0]} <-> {pair[1]}")
                continue
            seen_pairs.add(pair)
            links.append(FabricLink(switch.name, None, child, None))
    if undefined:
        warnings.append(
            f"{len(undefined)} child switch(es) have no SwitchName line of their own: "
            f"{listing(undefined)}"
        )
    if mutual:
        warnings.append(
            f"{len(mutual)} switch pair(s) list each other as children (a cycle, not a tree; "
            f"one cable each is assumed): {listing(mutual)}"
        )
    roots = [s for s in switches if s not in parents]
    cut_off = [s for s in roots if switches[s].nodes and not switches[s].children]
    if cut_off and any(s.children for s in switches.values()):
        warnings.append(
            f"{len(cut_off)} leaf switch(es) are under no other switch (their nodes reach no "
            f"other part of the fabric): {listing(cut_off)}"
        )
    if switches and not roots:
        warnings.append("no root switch: every switch is some switch's child (a cycle)")
    elif len(roots) > 1:
        warnings.append(
            f"{len(roots)} root switches (nobody's child: separate fabrics, or the top switch "
            f"is missing): {listing(roots)}"
        )
    # A node listed on several switches: newer `scontrol show topology` repeats a subtree's
    # nodes on every switch above it. Keep the lowest listing (smallest Level, else the
    # switches without child switches); what is left on two switches is a duplicate.
    node_switches: dict[str, list[str]] = {}
    for switch in switches.values():
        for node in switch.nodes:
            node_switches.setdefault(node, []).append(switch.name)
    summaries = 0
    for node, owners in node_switches.items():
        if len(owners) < 2:
            continue
        levels = [switches[o].level for o in owners]
        if all(level is not None for level in levels):
            low = min(level for level in levels if level is not None)
            keep = [o for o in owners if switches[o].level == low]
        else:
            keep = [o for o in owners if not switches[o].children] or owners
        summaries += len(owners) - len(keep)
        node_switches[node] = keep
    if summaries:
        parsed.notes.append(
            f"{summaries} node entries on upper switches repeat their subtree's nodes (as newer "
            "`scontrol show topology` prints them): each node hangs from its lowest switch"
        )
    result = [
        FabricSwitch(
            name=s.name,
            level=s.level,
            description=f"LinkSpeed={s.link_speed}" if s.link_speed else "",
        )
        for s in switches.values()
    ]
    return result, links, node_switches


def parse(text: str) -> SwitchGraph:
    """Parse ``topology.conf``, ``scontrol show topology`` or ``topology.yaml``.

    Args:
        text: The file or command output as pasted.

    Returns:
        Switches and parent-child links (no cable details), Slurm nodes, blocks.

    Raises:
        ParseError: Too large, a node list that expands past the limit, a key repeated on
            one ``topology.conf`` line or in one mapping of ``topology.yaml`` (``line`` set),
            azslurm's elided table, or nothing Slurm-like in the text.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any topology file")
    text = clean_text(text)
    lines = text.split("\n")
    if re.search(r"(?m)^-[ \t]*topology[ \t]*:", text):
        _check_yaml_keys(lines)
        parsed = _Parsed()
        found = _read_yaml(lines, parsed)
        source = "topology.yaml"
        unknown: list[str] = []
        if not found:
            raise wrong_format(text, EXPECTED, FORMAT)
    else:
        parsed, source, unknown = _read_conf_file(text, lines)
    switches, links, node_switches = _tree(parsed)
    block_of: dict[str, list[str]] = {}
    for block in parsed.blocks.values():
        for node in block.nodes:
            block_of.setdefault(node, []).append(block.name)
    _warn_listed_twice(parsed, node_switches, block_of)
    all_nodes = list(node_switches) + [n for n in block_of if n not in node_switches]
    _warn_unplaced(parsed, all_nodes, unknown)
    hosts = []
    for node in sorted(all_nodes, key=natural_key):
        hosts.append(FabricHost(node, [HostPort(node)], named=not _GUID_NAME.match(node)))
    for node, owners in node_switches.items():
        for owner in owners:
            links.append(FabricLink(owner, None, node, None))
    return SwitchGraph(
        format=FORMAT,
        source=source,
        switches=switches,
        hosts=hosts,
        links=links,
        blocks=list(parsed.blocks.values()),
        warnings=parsed.warnings,
        notes=parsed.notes,
        host_key="nodes",
        cables_known=False,
    )


def _read_conf_file(text: str, lines: list[str]) -> tuple[_Parsed, str, list[str]]:
    """(what was read, the source's name, lines not understood) of ``topology.conf`` or
    ``scontrol show topology``; a file commented out entirely is read uncommented.

    Raises:
        ParseError: A key repeated on one line; no topology line (azslurm's table, whose
            lists are elided, is named).
    """
    parsed = _Parsed()
    records, unknown = _read_conf(lines, parsed)
    commented = [i for i, line in enumerate(lines, 1) if _COMMENTED.match(line.strip())]
    if not records and commented:
        parsed = _Parsed()
        records, unknown = _read_conf([_uncomment(line) for line in lines], parsed)
        parsed.warnings.insert(
            0,
            f"every topology line is commented out with '#' ({len(commented)} lines, "
            "pasted from another file?): read with the '#' removed",
        )
    elif commented:
        parsed.warnings.append(
            f"{len(commented)} commented-out topology line(s) ignored (lines "
            f"{listing([str(i) for i in commented])})"
        )
    if not records:
        if _AZSLURM.search(text):
            raise ParseError(
                "this is `azslurm show_topology --format table` output, whose node lists "
                "are cut short with '...': import the topology.conf it writes instead"
            )
        raise wrong_format(text, EXPECTED, FORMAT)
    has_level = any(s.level is not None for s in parsed.switches.values())
    kind = "block" if parsed.blocks and not parsed.switches else "tree"
    source = "scontrol show topology" if has_level else f"topology.conf ({kind})"
    if parsed.blocks and parsed.switches:
        source = "topology.conf (tree and block)"
    return parsed, source, unknown


def _warn_listed_twice(
    parsed: _Parsed, node_switches: dict[str, list[str]], block_of: dict[str, list[str]]
) -> None:
    """Warn about names defined twice, nodes under two switches or in two blocks, and
    blocks of unequal size; note the block sizes Slurm schedules."""
    warnings = parsed.warnings
    if parsed.duplicates:
        warnings.append(
            f"{len(parsed.duplicates)} name(s) defined twice (lists merged): "
            f"{listing(parsed.duplicates)}"
        )
    twice = [f"{n} ({', '.join(s)})" for n, s in node_switches.items() if len(s) > 1]
    if twice:
        warnings.append(
            f"{len(twice)} node(s) are listed under more than one switch: {listing(twice)}"
        )
    in_two = [f"{n} ({', '.join(b)})" for n, b in block_of.items() if len(b) > 1]
    if in_two:
        warnings.append(f"{len(in_two)} node(s) are in more than one block: {listing(in_two)}")
    sizes = sorted({len(b.nodes) for b in parsed.blocks.values()})
    if len(sizes) > 1:
        warnings.append(
            f"blocks hold different node counts ({', '.join(map(str, sizes))}): partly "
            "populated racks, or nodes missing from the file"
        )
    if parsed.block_sizes:
        parsed.notes.append(f"BlockSizes={','.join(map(str, parsed.block_sizes))}")


def _warn_unplaced(parsed: _Parsed, all_nodes: list[str], unknown: list[str]) -> None:
    """Warn about what cannot be placed as it is: the nodes of Slurm's ``unknown`` switch,
    node names that are adapter GUIDs, empty switches, lines not understood."""
    warnings = parsed.warnings
    if "unknown" in parsed.switches:
        orphans = parsed.switches["unknown"].nodes
        warnings.append(
            f"switch 'unknown' holds {len(orphans)} node(s) Slurm could not place in the "
            f"fabric: {compress(orphans)}"
        )
    guids = [n for n in all_nodes if _GUID_NAME.match(n)]
    if guids:
        warnings.append(
            f"{len(guids)} node name(s) are adapter GUIDs, not host names "
            f"(e.g. {guids[0]}): map them to hosts before placing jobs"
        )
    empty = [s.name for s in parsed.switches.values() if not s.nodes and not s.children]
    if empty:
        warnings.append(
            f"{len(empty)} switch(es) have neither nodes nor switches: {listing(empty)}"
        )
    if unknown:
        warnings.append(
            f"{len(unknown)} line(s) not understood and skipped (not Key=Value topology "
            f"lines): {listing(unknown)}"
        )
