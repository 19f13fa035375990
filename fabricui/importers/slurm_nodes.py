"""Parse Slurm's node state: ``sinfo`` (default, ``-N``, ``-N -l``, any ``-o`` with a NODELIST
and a STATE column) and ``scontrol show node``.

``sinfo`` prints a header (``PARTITION AVAIL TIMELIMIT NODES STATE NODELIST``) and rows whose
NODELIST is a hostlist (``adev[1-2]``), expanded here; a node listed under several
partitions is one node with several partitions. ``REASON`` (``-l``/``-R``) is the rest of
the row and may be cut at its column width. ``scontrol show node`` prints ``NodeName=...``
records of ``Key=Value`` words; ``Reason=`` runs to the end of its line.

States follow ``sinfo``'s long names (``idle``, ``allocated``, ``mixed``, ``down``, ``drained``,
``draining``, ``completing``, ``fail``, ``failing``, ``maint``, ``reserved``, ``future``,
``planned``, ``unknown`` ...); everything else the state says is a flag: sinfo's suffixes
(``*`` not_responding, ``~`` powered_down, ``#`` powering_up, ``!`` power_down_pending,
``%`` powering_down, ``$`` maint, ``@`` reboot_requested, ``^`` reboot_issued, ``-``
planned) and scontrol's ``+`` parts (``IDLE+DRAIN`` is ``drained`` with flag ``drain``), as
the sinfo and scontrol manual pages list them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.hostlist import MAX_HOSTS, compress, expand
from fabricui.importers.port_health import health_text, prompt_host, strip_quote

FORMAT = "sinfo"
EXPECTED = "`sinfo` or `scontrol show node` output"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
#: sinfo's short state names -> long names.
_SHORT = {
    "alloc": "allocated",
    "mix": "mixed",
    "comp": "completing",
    "drng": "draining",
    "drain": "drained",
    "failg": "failing",
    "futr": "future",
    "resv": "reserved",
    "unk": "unknown",
    "npc": "perfctrs",
    "plnd": "planned",
    "pow_dn": "power_down",
    "pow_up": "powering_up",
    "boot": "rebooting",
}
#: sinfo's state suffixes -> flags.
_SUFFIX = {
    "*": "not_responding",
    "~": "powered_down",
    "#": "powering_up",
    "!": "power_down_pending",
    "%": "powering_down",
    "$": "maint",
    "@": "reboot_requested",
    "^": "reboot_issued",
    "-": "planned",
}
#: Base states of ``scontrol`` (the first word of ``State=``).
_BASES = (
    "idle",
    "allocated",
    "mixed",
    "down",
    "error",
    "future",
    "unknown",
    "completing",
)
#: Flags that make a node unusable for a new job.
UNAVAILABLE_FLAGS = frozenset(
    {
        "drain",
        "not_responding",
        "fail",
        "maint",
        "reboot_requested",
        "reboot_issued",
        "powered_down",
        "powering_down",
        "power_down_pending",
        "powering_up",
        "reserved",
        "planned",
        "invalid_reg",
    }
)
_NODE_RECORD = re.compile(r"^NodeName=(\S{1,253})")
_STATE_WORD = re.compile(r"(?:^|[ \t])State=(\S{1,200})")
_REASON = re.compile(r"^[ \t]*Reason=(.{0,500})$")
_STATE_TEXT = re.compile(r"[a-zA-Z_+]{2,40}[*~#!%$@^-]{0,3}")
#: Width sinfo's long format gives REASON (``%20E``).
_REASON_WIDTH = 20
_PARTITIONS = re.compile(r"(?:^|[ \t])Partitions=(\S{0,2000})")


def node_state(text: str) -> tuple[str, list[str]]:
    """(long state name, flags) of a sinfo state (``drain*``) or an scontrol one
    (``IDLE+DRAIN``, ``DOWN+RESERVED+NOT_RESPONDING``)."""
    word = text.strip().lower()
    flags: list[str] = []
    while word and word[-1] in _SUFFIX:
        flags.insert(0, _SUFFIX[word[-1]])
        word = word[:-1]
    word = word.rstrip("+")
    parts = [p for p in word.split("+") if p]
    if not parts:
        return "unknown", flags
    base = _SHORT.get(parts[0], parts[0])
    for extra in parts[1:]:
        name = extra  # scontrol's flag words (DRAIN, RESERVED, NOT_RESPONDING ...)
        if name not in flags:
            flags.append(name)
    busy = base in ("allocated", "mixed") or "completing" in flags
    if "drain" in flags:
        base = "draining" if busy else "drained"
    elif "fail" in flags:
        base = "failing" if busy else "fail"
    elif base == "idle" and "completing" in flags:
        base = "completing"
    elif base == "idle" and "reserved" in flags:
        base = "reserved"
    elif base == "idle" and "maint" in flags:
        base = "maint"
    if base == "drained" and "drain" not in flags:
        flags.append("drain")
    if base == "draining" and "drain" not in flags:
        flags.append("drain")
    if base == "reserved" and "reserved" not in flags:
        flags.append("reserved")
    return base, flags


@dataclass
class SlurmNode:
    """One node as Slurm reports it."""

    name: str
    """Node name."""
    state: str
    """Long state name (see the module docstring)."""
    flags: list[str] = field(default_factory=list)
    """Modifiers (``drain``, ``not_responding``, ``reserved`` ...)."""
    reason: str | None = None
    """Why it is down or drained, as the admin wrote it (may be cut by sinfo's width)."""
    partitions: list[str] = field(default_factory=list)
    """Partitions listing it (``*`` of the default partition dropped)."""

    @property
    def free(self) -> bool:
        """Idle and nothing keeps a job off it (drain, not responding, maintenance ...)."""
        return self.state == "idle" and not (set(self.flags) & UNAVAILABLE_FLAGS)

    def to_json(self) -> dict[str, Any]:
        """``name``, ``state``, ``flags``, ``reason``, ``partitions``."""
        return {
            "name": self.name,
            "state": self.state,
            "flags": list(self.flags),
            "reason": self.reason,
            "partitions": list(self.partitions),
        }


@dataclass
class SlurmNodes:
    """Nodes from ``sinfo`` or ``scontrol show node``."""

    source: str
    """``sinfo``, ``sinfo -N -l``, ``scontrol show node`` ..."""
    nodes: list[SlurmNode]
    """Nodes in the input's order."""
    host: str | None = None
    """Where it ran, when a prompt names it."""
    warnings: list[str] = field(default_factory=list)
    """Gaps."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    format: str = FORMAT
    """Importer name (``sinfo`` or ``scontrol-node``)."""

    def free(self) -> list[str]:
        """Names of the nodes a new job could get."""
        return [n.name for n in self.nodes if n.free]

    def to_json(self) -> dict[str, Any]:
        """``format``, ``source``, ``nodes``, ``warnings``."""
        return {
            "format": self.format,
            "source": self.source,
            "nodes": [n.to_json() for n in self.nodes],
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """Counts per state, then the nodes that are not usable with their reasons."""
        counts: dict[str, list[str]] = {}
        for node in self.nodes:
            label = node.state + ("*" if "not_responding" in node.flags else "")
            counts.setdefault(label, []).append(node.name)
        lines = [f"{self.source}: {len(self.nodes)} node(s), {len(self.free())} free"]
        for label, names in sorted(counts.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"  {label:<12} {len(names):>6}  {compress(names)}")
        reasons: dict[str, list[str]] = {}
        for node in self.nodes:
            if node.reason and node.reason.lower() != "none":
                reasons.setdefault(node.reason, []).append(node.name)
        for reason, names in list(reasons.items())[:10]:
            lines.append(f"  reason: {reason} ({compress(names)})")
        return "\n".join(lines)


def parse(text: str) -> SlurmNodes:
    """Parse ``sinfo`` or ``scontrol show node`` output.

    Args:
        text: The output as pasted (prompts, a date line and trailers around it are read).

    Returns:
        The nodes, each once.

    Raises:
        ParseError: Too large, no header with NODELIST and STATE and no NodeName record, or
            hostlists standing for more than ``hostlist.MAX_HOSTS`` names.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any sinfo output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line).rstrip() for line in text.split("\n")]
    host = prompt_host(lines)
    if any(_NODE_RECORD.match(line.strip()) for line in lines):
        result = _scontrol(lines)
    else:
        result = _sinfo(lines, text)
    result.host = host
    return result


def _scontrol(lines: list[str]) -> SlurmNodes:
    nodes: list[SlurmNode] = []
    current: SlurmNode | None = None
    for line in lines:
        stripped = line.strip()
        m = _NODE_RECORD.match(stripped)
        if m:
            current = SlurmNode(m.group(1), "unknown")
            nodes.append(current)
        if current is None:
            continue
        state = _STATE_WORD.search(line)
        if state:
            current.state, current.flags = node_state(state.group(1))
        reason = _REASON.match(line)
        if reason:
            current.reason = reason.group(1).strip() or None
        parts = _PARTITIONS.search(line)
        if parts:
            current.partitions = [p for p in parts.group(1).split(",") if p]
    missing = [n.name for n in nodes if n.state == "unknown"]
    result = SlurmNodes("scontrol show node", nodes, format="scontrol-node")
    if missing:
        result.warnings.append(f"no State= for {compress(missing)} (cut records?)")
    return result


def _sinfo(lines: list[str], text: str) -> SlurmNodes:
    header: list[str] | None = None
    last_header: list[str] | None = None
    by_name: dict[str, SlurmNode] = {}
    total = 0
    bad: list[str] = []
    long_form = False
    ended = 0
    for number, line in enumerate(lines, 1):
        tokens = line.split()
        if not tokens:
            continue
        upper = [t.upper() for t in tokens]
        if "STATE" in upper and any(t in ("NODELIST", "HOSTNAMES") for t in upper):
            header = last_header = upper
            long_form = "REASON" in header or "CPUS" in header
            continue
        if header is None:
            continue
        columns = dict(zip(header, tokens))
        if "REASON" in header:
            at = header.index("REASON")
            if at == len(header) - 1 and len(tokens) >= at:
                columns["REASON"] = " ".join(tokens[at:])
        if len(tokens) < min(len(header), header.index("STATE") + 1):
            continue
        nodelist = columns.get("NODELIST") or columns.get("HOSTNAMES")
        state_text = columns.get("STATE")
        if not nodelist or not state_text or not _STATE_TEXT.fullmatch(state_text):
            if by_name:  # the table has ended: what follows is other output
                ended = number
                header = None
            else:
                bad.append(f"line {number}")
            continue
        try:
            names = expand(nodelist, limit=MAX_HOSTS - total)
        except ParseError as exc:
            raise ParseError(f"line {number}: {exc.message}") from None
        total += len(names)
        state, flags = node_state(state_text)
        partition = (columns.get("PARTITION") or "").rstrip("*")
        reason = columns.get("REASON")
        for name in names:
            node = by_name.get(name)
            if node is None:
                node = by_name[name] = SlurmNode(name, state, list(flags))
            if partition and partition not in node.partitions:
                node.partitions.append(partition)
            if reason and node.reason is None:
                node.reason = reason
    if not by_name:
        raise wrong_format(text, EXPECTED, FORMAT)
    source = "sinfo"
    header = last_header
    if header and "PARTITION" in header and header[0] in ("NODELIST", "HOSTNAMES"):
        source = "sinfo -N -l" if long_form else "sinfo -N"
    result = SlurmNodes(source, list(by_name.values()))
    if bad:
        result.warnings.append(f"{len(bad)} row(s) not understood: {', '.join(bad[:4])}")
    if ended:
        result.notes.append(f"the node table ends at line {ended}; the lines after it are skipped")
    if any(len(n.reason or "") == _REASON_WIDTH for n in result.nodes):
        result.notes.append(
            f"REASON is cut at sinfo's column width ({_REASON_WIDTH} characters by default): "
            "`scontrol show node NAME` prints it whole"
        )
    return result
