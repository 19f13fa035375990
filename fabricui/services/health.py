"""The fabric as it is: read health files (``--health FILE``), list their findings, and apply
them to a fabric as an overlay (``fabric.health``) that every later stage prices.

A health file is any state or counter output ``fabricui import`` reads (its format is
recognised): ``iblinkinfo``/``ibnetdiscover`` of the fabric now, ``ibstat``, ``rdma link``,
``mlxlink``, ``nvidia-smi nvlink -s``, ``dcgmi nvlink``, ``dcgmi diag``, counters
(``perfquery``, ``ibqueryerrors``, ``ethtool -S``) ... Outputs of one host (``ibstat``,
``nvidia-smi nvlink``) say which host through the ``probe.json`` of the ``fabricui probe``
folder they are in, the file's name (``luna-0001.txt``) or the shell prompt they were pasted
with; Slurm node and job listings are not health (``place`` and the map read them).

A switch port that is down has no peer in ``iblinkinfo``: it is placed on its cable by
another graph file given with it that lists the cable at that port (``ibnetdiscover``),
else it is not applied, and its finding says so.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError, FabricError, exception_line
from fabricui.fabric.health import (
    NO_PEER,
    GpuLinkCondition,
    LinkCondition,
    apply_health,
    health_of,
)
from fabricui.importers.common import UNRECOGNISED, ParseError, clean_text, detect
from fabricui.importers.fabric_graph import SwitchGraph
from fabricui.importers.host_listing import HostPart, split_hosts
from fabricui.importers.hostlist import compress, natural_key
from fabricui.importers.port_health import HealthItem, HealthReport, PortHealth
from fabricui.importers.reading import read_output
from fabricui.plugins import get_host
from fabricui.services.health_absent import AbsentNics, absent_nics
from fabricui.services.health_findings import (
    SOURCES,
    STATE_CODES,
    HealthFinding,
    counter_findings,
    health_item_finding,
    not_applied,
    port_findings,
)
from fabricui.services.importer_plugin import importers_missing
from fabricui.services.probe_folder import host_of_output, outputs_in

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric
    from fabricui.fabric.health import HealthOverlay
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost

#: Most health files one request reads.
MAX_HEALTH_FILES = 256
#: File name endings dropped to get a host name (``luna-0001.ibstat.txt`` -> ``luna-0001``).
_SUFFIXES = re.compile(r"(\.(?:txt|log|out|ibstat|nvlink|smi|health))+$")
#: Formats that are not health (node and job state).
SLURM_FORMATS = ("sinfo", "scontrol-node", "squeue", "scontrol-job", "sacct")
#: How the graph importers name an adapter that has no host name (by its LID).
_LID_NAME = re.compile(r"lid\d{1,6}(?:@run\d{1,4})?")
#: Formats whose result is a cluster's switch graph.
_GRAPH_FORMATS = ("iblinkinfo", "ibnetdiscover")
#: Where one host's outputs begin, by the importer that reads them: a file holding
#: ``ibstat`` then ``nvidia-smi nvlink -s`` (pasted together) is read as its parts.
_SECTION_STARTS = (
    ("ibstat", r"(?m)^[ \t]*(?:CA '[^'\n]{1,64}'[ \t]*$|hca_id:|Infiniband device '[^'\n]{1,64}')"),
    (
        "nvlink",
        r"(?m)^[ \t]*GPU \d{1,4}: [^\n]{0,200}\(UUID:|"
        r"^[ \t]*\+-{2,80}\+[ \t]*\n[ \t]*\|[ \t]*NvLink Link Status",
    ),
)
#: The shell prompt and command a section was pasted with (kept with it).
_PROMPT = re.compile(
    r"[^\n]{0,80}[$#>][ \t]*(?:sudo[ \t]+)?(?:ibstat|ibstatus|ibv_devinfo|nvidia-smi|dcgmi)\b"
    r"[^\n]{0,200}|[ \t]*(?:ibstat|nvidia-smi|dcgmi)\b[^\n]{0,200}"
)


@dataclass(frozen=True)
class HealthInput:
    """One health file, read."""

    path: str
    """The file as given."""
    format: str
    """The importer that read it."""
    result: Any
    """The importer's result."""
    lines: tuple[int, int] | None = None
    """First and last line (1-based) of the part of the file read, when the file holds
    several outputs pasted together; None: the whole file."""
    probe_host: str | None = None
    """The host the ``probe.json`` beside the file names, when ``fabricui probe`` wrote it
    (its name, ``ibstat.txt``, says no host)."""
    listed_host: str | None = None
    """The host a ``pdsh``/``clush``/``dshbak`` listing names for this part of the file."""

    @property
    def name(self) -> str:
        """The file name, for messages; with the host a listing names for this part
        (``ibstat.txt (luna-0001)``)."""
        name = Path(self.path).name
        return f"{name} ({self.listed_host})" if self.listed_host else name

    @property
    def named_host(self) -> str | None:
        """The host a listing names for this part, else the one the probe that wrote the
        file names; None when neither says."""
        return self.listed_host or self.probe_host

    @property
    def host_hint(self) -> str:
        """The host the listing or the probe names, else the one the file's name suggests
        (``luna-0001.txt`` -> ``luna-0001``)."""
        return self.named_host or _SUFFIXES.sub("", Path(self.path).name)


@dataclass
class HealthReportSet:
    """Every health file of a request: findings and the conditions the overlay applies."""

    inputs: list[HealthInput]
    """The files, read."""
    findings: list[HealthFinding] = field(default_factory=list)
    """What they show that is worth acting on, most severe first."""
    notes: list[str] = field(default_factory=list)
    """Files or records that say nothing about links."""
    warnings: list[str] = field(default_factory=list)
    """Parts of files that were not read (one line each, naming the file and line)."""
    finding_ports: dict[LinkCondition | GpuLinkCondition, list[tuple[str, str]]] = field(
        default_factory=dict
    )
    """The ports each condition was made of, as findings name them ((file name, port)): a
    condition not applied says so on their findings."""
    warnings_printed: bool = False
    """A command's own report printed ``warnings`` (the doctor's): the command line's
    ``--health`` lines on stderr leave them out, so each is said once."""

    def file_names(self, most: int | None = None) -> str:
        """Each file with its format; a listing of many hosts' outputs once, with how many
        hosts and which (``all.txt (1000 hosts n[0-999]: ibstat)``), not a name per host;
        ``most``: the first that many, then how many more (``and 250 more files``)."""
        listed: dict[str, tuple[list[str], list[str]]] = {}
        entries: list[str] = []  # a name, or the path of a listing (in ``listed``)
        for item in self.inputs:
            if not item.listed_host:
                entries.append(f"{item.name} ({item.format})")
                continue
            if item.path not in listed:
                listed[item.path] = ([], [])
                entries.append(item.path)
            listed[item.path][0].append(item.listed_host)
            listed[item.path][1].append(item.format)
        more = len(entries) - most if most is not None and len(entries) > most else 0
        named = [_listing_name(e, *listed[e]) if e in listed else e for e in entries]
        return ", ".join(named[: len(named) - more]) + (f" and {more} more files" if more else "")

    def to_json(self) -> dict[str, Any]:
        """``files`` (a listing's part with its ``host``), ``findings``, ``warnings`` and
        ``notes``."""
        files = []
        for i in self.inputs:
            entry: dict[str, Any] = {"path": i.path, "format": i.format}
            if i.lines is not None:
                entry["lines"] = list(i.lines)
            if i.listed_host:
                entry["host"] = i.listed_host
            files.append(entry)
        return {
            "files": files,
            "findings": [f.to_json() for f in self.findings],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }


def _listing_name(path: str, hosts: list[str], formats: list[str]) -> str:
    """A listing's name with its hosts and formats (one host as its parts are named)."""
    name = Path(path).name
    kinds = ", ".join(dict.fromkeys(formats))
    names = list(dict.fromkeys(hosts))
    if len(names) == 1:
        return f"{name} ({names[0]}) ({kinds})"
    return f"{name} ({len(names)} hosts {compress(names)}: {kinds})"


def read_health(
    paths: tuple[str, ...] | list[str], host: PluginHost | None = None
) -> HealthReportSet:
    """Read every health file (format recognised) and list its findings.

    Raises:
        ConfigError: Too many files.
        ParseError: A file is missing, unreadable, not recognised, or its importer refuses it
            (the message names the file).
    """
    paths = distinct_files(paths)
    if len(paths) > MAX_HEALTH_FILES:
        raise ConfigError(f"--health: {len(paths)} files, at most {MAX_HEALTH_FILES}")
    table = (host or get_host()).importers()
    inputs: list[HealthInput] = []
    warnings: list[str] = []
    for path in paths:
        _refuse_probe_folder(path)
        text, origin = read_output(path)
        probe_host = host_of_output(path) if path != "-" else None
        # Outputs read already, by their text: a listing's hosts that printed the same
        # output (``dshbak -c``'s ``n[0-9999]``) are read once.
        memo: dict[str, tuple[str, Any]] = {}
        listing = _host_parts(text, origin, table, host, memo)
        if listing is None:
            read = _read_text(text, origin, path, table, host, probe_host=probe_host)
            inputs += read[0]
            warnings += read[1]
            continue
        # One command's output from many hosts (pdsh, clush, dshbak): each host's part is
        # read as that host's own output; a part no importer reads (the host could not be
        # reached) is said, and the other hosts' are read.
        for part in listing:
            where = f"{origin} ({part.host})"
            try:
                read = _read_text(
                    part.text,
                    where,
                    path,
                    table,
                    host,
                    listed=part,
                    probe_host=probe_host,
                    memo=memo,
                )
            except ParseError as exc:
                warnings.append(_part_not_read(where, part, exc))
                continue
            inputs += read[0]
            warnings += read[1]
    report = HealthReportSet(inputs, warnings=warnings)
    for item in inputs:
        report.findings.extend(findings_of(item.result, item.format, item.name))
    order = {"error": 0, "warning": 1, "info": 2}
    report.findings.sort(key=lambda f: order.get(f.severity, 3))
    _say_peerless(report)
    return report


def _host_parts(
    text: str,
    origin: str,
    table: dict[str, Any],
    host: PluginHost | None,
    memo: dict[str, tuple[str, Any]],
) -> list[HostPart] | None:
    """Each host's part of a ``pdsh``/``clush``/``dshbak`` listing some part of which an
    importer reads (kept in ``memo``, not read again); None for one host's output (or a
    file no importer reads either way, which the caller says as it is).

    Raises:
        ParseError: A header names more hosts than a listing may hold.
    """
    try:
        parts = split_hosts(clean_text(text))
    except FabricError as exc:
        raise ParseError(f"--health {origin}: {exc.message}") from None
    if not parts:
        return None
    for part in parts:  # a listing when some host's part is an output an importer reads
        try:
            _read_one(part.text, origin, table, host, memo)
        except ParseError:
            continue
        return parts
    return None


def _part_not_read(where: str, part: HostPart, exc: ParseError) -> str:
    """One line for a host's part of a listing that no importer reads: its lines and what
    it says (``ssh: connect to host luna-0005 port 22: Connection refused``)."""
    why = exc.message.removeprefix(f"--health {where}: ")
    first = next((line.strip() for line in part.text.split("\n") if line.strip()), "")
    if why.startswith(UNRECOGNISED):
        why = f"{UNRECOGNISED}: {first[:120]!r}" if first else "no output"
    lines = (
        f"line {part.first_line}"
        if part.first_line == part.last_line
        else f"lines {part.first_line}-{part.last_line}"
    )
    return f"{where}, {lines}: not read ({why})"


def _read_text(
    text: str,
    origin: str,
    path: str,
    table: dict[str, Any],
    host: PluginHost | None,
    *,
    listed: HostPart | None = None,
    probe_host: str | None = None,
    memo: dict[str, tuple[str, Any]] | None = None,
) -> tuple[list[HealthInput], list[str]]:
    """The inputs one output holds (several when tools' outputs were pasted into it, each
    read by its own importer) and what was not read of it (``memo``: outputs read already,
    by their text).

    Raises:
        ParseError: Not recognised, or its importer refuses it.
    """
    fmt, result = _read_one(text, origin, table, host, memo)
    named = listed.host if listed is not None else None
    span = (listed.first_line, listed.last_line) if listed is not None else None
    parts = _sections(clean_text(text)) if fmt in dict(_SECTION_STARTS) else []
    if len(parts) < 2:
        item = HealthInput(path, fmt, result, span, probe_host, named)
        return [item], _importer_warnings(origin, result)
    inputs: list[HealthInput] = []
    warnings: list[str] = []
    for first, last, part in parts:
        # A host's part of a listing keeps that part's span (a prefixed listing interleaves
        # its hosts' lines); else the part's own lines of the file.
        said = origin if span else f"{origin} (lines {first}-{last})"
        try:
            part_fmt, part_result = _read_one(part, origin, table, host, memo)
        except ParseError as exc:
            why = exc.message.removeprefix(f"--health {origin}: ")
            if why.startswith(UNRECOGNISED):
                why = f"{UNRECOGNISED} (give it as a file of its own, or leave it out)"
            where = f"{origin}: a part" if span else f"{origin}: lines {first}-{last}"
            warnings.append(f"{where} not read: {why}")
            continue
        item = HealthInput(path, part_fmt, part_result, span or (first, last), probe_host, named)
        inputs.append(item)
        warnings += _importer_warnings(said, part_result)
    return inputs, warnings


def _refuse_probe_folder(path: str) -> None:
    """Refuse a ``fabricui probe`` folder in one line naming the outputs in it to give.

    Raises:
        ParseError: ``path`` is a probe's folder (it holds a ``probe.json``, or has the
            folder name probe gives by default).
    """
    if path == "-" or not os.path.isdir(path):
        return
    outputs = outputs_in(path)
    if outputs is None:
        return
    health = [n for n in outputs if n in ("ibstat.txt", "nvidia-smi-q.txt", "ibnetdiscover.txt")]
    given = " ".join(f"--health {os.path.join(path, n)}" for n in health)
    hint = (
        f"give its outputs as files: {given}"
        if health
        else "it holds no ibstat, nvidia-smi -q or ibnetdiscover output"
    )
    raise ParseError(f"--health {path}: a folder fabricui probe wrote, not a file; {hint}")


def _say_peerless(report: HealthReportSet) -> None:
    """Switch ports that are down, and that no graph file given places on a cable (no peer
    is printed for them), say on their findings that ``--health`` does not apply them."""
    cabled = _cabled_ports(report)
    peerless: set[tuple[str, str]] = set()
    for item in report.inputs:
        graph = item.result
        if item.format not in _GRAPH_FORMATS or not isinstance(graph, SwitchGraph):
            continue
        switches = graph.switch_names()
        for port in graph.ports:
            if port.peer or port.device not in switches or (port.device, port.port) in cabled:
                continue
            peerless.add((item.name, port.label()))
    if peerless:
        report.findings = [
            not_applied(f, NO_PEER) if (f.origin, f.where) in peerless else f
            for f in report.findings
        ]


def _cabled_ports(report: HealthReportSet) -> dict[tuple[str, int], tuple[str, int, str]]:
    """(device, port) -> (peer, peer port, ``switch`` or ``host``) of every cable the graph
    files (``iblinkinfo``, ``ibnetdiscover``) list, from both ends: what places a port
    another file prints without a peer (a port that is down)."""
    out: dict[tuple[str, int], tuple[str, int, str]] = {}
    for item in report.inputs:
        graph = item.result
        if item.format not in _GRAPH_FORMATS or not isinstance(graph, SwitchGraph):
            continue
        kinds = _graph_kinds(graph)
        for link in graph.links:
            if link.a_port is None or link.b_port is None or link.a == link.b:
                continue
            for here, at, there, to in (
                (link.a, link.a_port, link.b, link.b_port),
                (link.b, link.b_port, link.a, link.a_port),
            ):
                out.setdefault((here, at), (there, to, kinds.get(there, "")))
    return out


def _graph_kinds(graph: SwitchGraph) -> dict[str, str]:
    """``switch`` or ``host`` of the names a graph file says are one: its switches, and its
    host ports named by adapter (``luna-0001 mlx5_6``) or LID (``lid5128``, no host name);
    a switch it only prints as a peer is taken for a host port, so other names are told
    from the fabric."""
    kinds = {
        name: "host" for name in graph.port_owner() if " " in name or _LID_NAME.fullmatch(name)
    }
    kinds.update(dict.fromkeys(graph.switch_names(), "switch"))
    return kinds


def _importer_warnings(origin: str, result: Any) -> list[str]:
    """What the importer said it could not read (``Rate '1,000' is not a rate``), named by
    the file it is in: what ``fabricui import`` prints, said under ``--health`` too."""
    said = getattr(result, "warnings", None)
    if not isinstance(said, (list, tuple)):
        return []
    return [f"{origin}: {line}" for line in said if isinstance(line, str)]


def _read_one(
    text: str,
    origin: str,
    table: dict[str, Any],
    host: PluginHost | None,
    memo: dict[str, tuple[str, Any]] | None = None,
) -> tuple[str, Any]:
    """(format, importer result) of one output (kept in ``memo`` by its text, when given:
    read once for every host that printed it).

    Raises:
        ParseError: Not recognised, or its importer refuses it (the message names
            ``origin``).
    """
    if memo is not None and text in memo:
        return memo[text]
    try:
        fmt = detect(clean_text(text))
        result = table[fmt](text)
    except FabricError as exc:
        raise ParseError(f"--health {origin}: {exc.message}") from None
    except KeyError:
        missing = importers_missing(host)
        why = f" ({missing})" if missing else ""
        raise ParseError(f"--health {origin}: no importer for this output{why}") from None
    except Exception as exc:  # a plugin importer's bug
        raise ParseError(f"--health {origin}: the importer failed: {exception_line(exc)}") from None
    repeated = getattr(result, "repeated", None)
    if fmt == "ibstat" and isinstance(repeated, dict) and repeated:
        # Several hosts' ibstat joined without their names: whose port is whose is lost.
        name, times = min(repeated.items(), key=lambda kv: natural_key(kv[0]))
        raise ParseError(
            f"--health {origin}: CA '{name}' is listed {times} times, as several hosts' "
            "outputs joined without their names are (pdsh -N, or files put together); give "
            "each host's with its name (pdsh without -N, or a file per host)"
        )
    if memo is not None:
        memo[text] = (fmt, result)
    return fmt, result


def _sections(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of each one-host output in ``text``, in file order: a
    part starts where another tool's output begins (``CA 'mlx5_0'`` after ``GPU 0: ...``
    lines), with the prompt line it was pasted under; one part when only one tool's."""
    starts: list[tuple[int, str]] = []
    for family, pattern in _SECTION_STARTS:
        starts += [(m.start(), family) for m in re.finditer(pattern, text)]
    starts.sort()
    cuts: list[int] = []
    current = None
    for offset, family in starts:
        if family != current:
            if current is not None:
                cuts.append(_with_prompt(text, offset))
            current = family
    if not cuts:
        return []
    bounds = [0, *cuts, len(text)]
    out = []
    for begin, end in zip(bounds, bounds[1:]):
        part = text[begin:end]
        if not part.strip():
            continue
        first = text.count("\n", 0, begin) + 1
        last = first + part.rstrip("\n").count("\n")
        out.append((first, last, part))
    return out


def _with_prompt(text: str, offset: int) -> int:
    """``offset`` (a line start) moved back over blank lines to the prompt line the output
    was printed under, when there is one."""
    begin = text.rfind("\n", 0, offset) + 1
    at = begin
    while at > 0:
        previous = text.rfind("\n", 0, at - 1) + 1
        line = text[previous : at - 1]
        if not line.strip():
            at = previous
            continue
        return previous if _PROMPT.fullmatch(line) else begin
    return begin


def distinct_files(paths: tuple[str, ...] | list[str]) -> list[str]:
    """``paths`` with each file once, as first given: a file named twice (by any path
    that resolves to it) is one report, so its down links count once."""
    first: dict[str, str] = {}
    for path in paths:
        first.setdefault(path if path == "-" else os.path.realpath(path), path)
    return list(first.values())


def findings_of(result: Any, fmt: str, origin: str = "") -> list[HealthFinding]:
    """The findings of one importer result (state, counters and health items)."""
    out: list[HealthFinding] = []
    for port in _ports_of(result):
        where = port.label()
        detail = ", ".join(
            x
            for x in (
                port.width and f"trained {port.width}",
                port.rate_gbps is not None and f"{port.rate_gbps:g} Gb/s",
                port.could_be and f"could be {port.could_be}",
                port.detail,
            )
            if x
        )
        out += port_findings(where, port.state, port.degraded, detail, fmt, origin)
        out += counter_findings(where, port.counters, fmt, origin)
        replays = port.counters.get("Replays Since Reset")
        if fmt == "nvidia-smi-q" and replays:
            out.append(
                HealthFinding(
                    "pcie-replays",
                    "info",
                    where,
                    f"PCIe Replays Since Reset = {replays:,} ({port.detail or 'link ?'}): the "
                    "GPU's PCIe link resent packets; DCGM fails it above about 31 per minute on "
                    "Gen5 x16",
                    "read it again after a minute; a rate near the limit points at the riser, "
                    "slot or retimer",
                    SOURCES["dcgm-pcie"],
                    origin,
                )
            )
    for item in getattr(result, "health", None) or _health_items(result):
        if not getattr(item, "ok", True):
            out.append(health_item_finding(item.device, item.status, item.detail, fmt, origin))
    return out


def _ports_of(result: Any) -> list[Any]:
    """The ``PortHealth`` records of any state importer's result."""
    if isinstance(result, HealthReport):
        return list(result.ports)
    if isinstance(result, SwitchGraph):
        return list(result.ports)
    method = getattr(result, "port_health", None)
    return list(method()) if callable(method) else []


def _health_items(result: Any) -> list[Any]:
    method = getattr(result, "health_items", None)
    if callable(method):
        return list(method())
    errors = getattr(result, "errors", None)
    if errors:
        return [HealthItem("ibstat", "error", line) for line in errors]
    return []


def conditions(
    report: HealthReportSet, fabric: Fabric
) -> tuple[list[LinkCondition], list[GpuLinkCondition]]:
    """The link and NVLink conditions the files state, named for ``fabric``.

    Ports that are up at full rate and count no errors are no condition; a port whose
    counters crossed a finding's threshold is marked erroring (its state's findings, down
    or degraded, do not mark it). The ports each condition is made of are kept in
    ``report.finding_ports``. A NIC device (``net.adapters``) a host's whole listing leaves
    out is said in ``report.notes`` and taken as down when the devices after it kept their
    names (``health_absent``).
    """
    links: list[LinkCondition] = []
    gpus: list[GpuLinkCondition] = []
    # A port is erroring by its counters' findings, not by its state's (a degraded port is
    # not erroring for being degraded).
    erroring = {
        (f.origin, f.where)
        for f in report.findings
        if f.severity in ("warning", "error") and f.code not in STATE_CODES
    }
    ends = _Ends(report)
    other_layer: dict[tuple[str, str], str] = {}
    for item in report.inputs:
        if item.format in SLURM_FORMATS:
            report.notes.append(
                f"{item.name}: {item.format} is node and job state, not link health: it "
                "changes nothing here (`place --free` reads free nodes, --jobs running jobs)"
            )
            continue
        ports = _ports_of(item.result)
        host = _host_of(item, fabric)
        source = f"{item.format} {item.name}"
        if item.format in ("nvlink", "dcgmi-diag"):
            gpus += _gpu_conditions(ports, host, item, erroring, source, report.finding_ports)
            continue
        one_host = item.format not in _GRAPH_FORMATS and item.format != "ibqueryerrors"
        adapters = (fabric.spec.net.adapters if fabric.spec.net is not None else None) or ()
        # A NIC device the host's whole listing leaves out: its HCA is gone (said in a note).
        absent = absent_nics(item.format, item.result, ports, adapters) if one_host else None
        kept = absent is not None and absent.kept_names
        moved = absent is not None and bool(absent.moved_layer)  # NIC names on other HCAs
        named = one_host and (kept or (not moved and _names_its_nics(ports, adapters)))
        nic_order = _named_nics(ports, adapters) if named else _nic_order(ports) if one_host else {}
        said_host = host or "the host"
        if absent is not None:
            report.notes.append(absent.note(item.name, said_host))
            if kept:
                links += _absent_conditions(item, absent, host, ends, source)
        for port in ports:
            if one_host and nic_order and (port.device, port.port) not in nic_order:
                # a storage or management adapter, or another link layer's port
                why = _not_a_nic(port, adapters) if named else _other_layer(port, ports, nic_order)
                other_layer[(item.name, port.label())] = why
                continue
            bad = (item.name, port.label()) in erroring
            # A host's port rate is judged against its cable in the fabric (the other ports
            # of the file may all be slow, or of another generation).
            rated = one_host and port.rate_gbps is not None
            if port.state == "up" and not port.degraded and not bad and not rated:
                continue
            if port.state == "unknown" and not bad:
                continue
            device, device_kind, peer, peer_port, peer_kind = ends.of(item, port, host)
            if absent is not None and not kept and not peer:
                # The names after the missing device may have moved: which NIC this port is
                # only its cable says.
                other_layer[(item.name, port.label())] = absent.unplaced(said_host)
                continue
            condition = LinkCondition(
                device=device,
                port=port.port if isinstance(port.port, int) else None,
                peer=peer,
                peer_port=peer_port,
                state=port.state if port.state in ("up", "unknown") else port.state,
                fraction=_width_fraction(port.width, port.could_be),
                rate_gbps=port.rate_gbps if port.degraded or rated else None,
                nic=None if peer else nic_order.get((port.device, port.port)),
                host_ports=None if named or peer or not one_host else len(nic_order),
                erroring=bad,
                source=source,
                device_kind=device_kind,
                peer_kind=peer_kind,
            )
            links.append(condition)
            report.finding_ports.setdefault(condition, []).append((item.name, port.label()))
    if other_layer:
        report.findings = [
            not_applied(f, other_layer[(f.origin, f.where)])
            if (f.origin, f.where) in other_layer
            else f
            for f in report.findings
        ]
    return links, gpus


def _absent_conditions(
    item: HealthInput, absent: AbsentNics, host: str | None, ends: _Ends, source: str
) -> list[LinkCondition]:
    """A down condition for each NIC device missing from a host's listing whose other
    devices kept their names (``AbsentNics.kept_names``): its HCA carries no traffic."""
    out = []
    for name, nic in zip(absent.missing, absent.nics):
        device, device_kind, peer, peer_port, peer_kind = ends.of(item, PortHealth(name, 1), host)
        out.append(
            LinkCondition(
                device=device,
                peer=peer,
                peer_port=peer_port,
                state="missing",
                nic=None if peer else nic,
                source=source,
                device_kind=device_kind,
                peer_kind=peer_kind,
            )
        )
    return out


def _names_its_nics(ports: list[Any], adapters: tuple[str, ...]) -> bool:
    """Whether a host's ports are the topology's NIC devices (``net.adapters``), so that a
    port is the NIC its device is: the host lists every one of them (besides its storage
    and management adapters), or only some of them (``ibstat mlx5_6``). Another server's
    names (``mlx5_0`` to ``mlx5_7`` where the topology's NICs include ``mlx5_11``) are not
    taken for them: its ports go in order."""
    devices = {p.device for p in ports}
    return (
        bool(adapters) and bool(devices) and (set(adapters) <= devices or devices <= set(adapters))
    )


def _named_nics(ports: list[Any], adapters: tuple[str, ...]) -> dict[tuple[str, Any], int]:
    """(device, port) -> NIC index of the ports that are the topology's NICs: each named
    device's first port (``net.adapters`` names one device per NIC; a dual-port adapter's
    second port, often uncabled and polling, is none of them)."""
    first: dict[str, Any] = {}
    for p in ports:
        if p.device in adapters and (
            p.device not in first or _port_number(p.port) < _port_number(first[p.device])
        ):
            first[p.device] = p.port
    return {(device, port): adapters.index(device) for device, port in first.items()}


def _port_number(port: Any) -> int:
    return port if isinstance(port, int) else 0


def _not_a_nic(port: Any, adapters: tuple[str, ...]) -> str:
    """Why a host's port on a device the topology does not name as a NIC (a storage or
    management adapter), or a named device's other port, is none of the fabric's."""
    if port.device in adapters:
        nic = adapters.index(port.device)
        return (
            f"{port.device} port {port.port} is not NIC {nic}'s port (net.adapters names "
            f"{port.device}: its first port is the NIC)"
        )
    shown = ", ".join(adapters[:4]) + (" ..." if len(adapters) > 4 else "")
    return f"{port.device} is none of the host's NICs in this topology (net.adapters: {shown})"


def _other_layer(port: Any, ports: list[Any], nic_order: dict[tuple[str, Any], int]) -> str:
    """Why a host's port of another link layer than its NICs' is none of the fabric's."""
    nic = next((p for p in ports if (p.device, p.port) in nic_order), None)
    theirs = getattr(nic, "link_layer", None) or "fabric"
    mine = port.link_layer
    what = f"an {mine} port" if mine else "a port of another link layer"
    return f"{what} beside the host's {theirs} NICs, none of the fabric's"


class _Ends:
    """Who is at each end of a port, from every graph file of the request."""

    def __init__(self, report: HealthReportSet) -> None:
        self.adapters = _adapter_switches(report)
        self.cabled = _cabled_ports(report)
        self.kinds: dict[str, str] = {}
        for item in report.inputs:
            if item.format in _GRAPH_FORMATS and isinstance(item.result, SwitchGraph):
                self.kinds.update(_graph_kinds(item.result))

    def of(
        self, item: HealthInput, port: Any, host: str | None
    ) -> tuple[str, str, str | None, int | None, str]:
        """(device, its kind, peer, peer port, its kind) of a port, kinds ``switch``,
        ``host`` or empty (not known: told from the fabric and the name)."""
        if item.format == "ibqueryerrors":
            return port.device, "", port.peer, port.peer_port, ""
        if item.format not in _GRAPH_FORMATS:
            # A graph file names the switch this adapter is cabled to: that says which NIC
            # it is, where counting adapters would guess.
            if not host:
                return port.device, "adapter", None, None, ""
            peer, peer_port = self.adapters.get((host, port.device), (None, None))
            return f"{host} {port.device}", "host", peer, peer_port, "switch" if peer else ""
        kind = self.kinds.get(port.device, "")
        if port.peer:
            return port.device, kind, port.peer, port.peer_port, self.kinds.get(port.peer, "")
        # No peer printed (a port that is down): the cable another graph file lists there.
        found = self.cabled.get((port.device, port.port)) if isinstance(port.port, int) else None
        if found is None:
            return port.device, kind, None, None, ""
        return port.device, kind, *found


def _adapter_switches(
    report: HealthReportSet,
) -> dict[tuple[str | None, str], tuple[str, int | None]]:
    """(host, adapter) -> (switch, switch port) of every host cable the graph files
    (``iblinkinfo``, ``ibnetdiscover``) list: ``("luna-0001", "mlx5_6")`` ->
    ``("LG01-05", 5)``."""
    out: dict[tuple[str | None, str], tuple[str, int | None]] = {}
    for item in report.inputs:
        graph = item.result
        if item.format not in _GRAPH_FORMATS or not isinstance(graph, SwitchGraph):
            continue
        adapter = {p.name: (h.name, p.hca) for h in graph.hosts for p in h.ports if p.hca}
        for name, _, switch, link in graph.host_links():
            if name in adapter:
                switch_port = link.b_port if link.a == name else link.a_port
                out.setdefault(adapter[name], (switch, switch_port))
    return out


def _width_fraction(width: str | None, could_be: str | None) -> float | None:
    """``1X`` of ``4X`` -> 0.25; None when the hint is not a width."""
    have = re.match(r"(\d{1,2})X", width or "", re.IGNORECASE)
    want = re.search(r"(\d{1,2})X", could_be or "", re.IGNORECASE)
    if have and want and int(want.group(1)) > 0:
        return min(1.0, int(have.group(1)) / int(want.group(1)))
    return None


def _nic_order(ports: list[Any]) -> dict[tuple[str, Any], int]:
    """Each port's position among the host's ports of its most common link layer, in
    adapter order: NIC k of the fabric's host (an H100 node lists 8 InfiniBand ports and 4
    Ethernet ones; the 8 are its NICs)."""
    # A port named by its LID (perfquery's ``lid 1719``), not by its adapter, is no NIC by
    # its place: which one it is only the cabling says.
    ports = [p for p in ports if not any(c.isspace() for c in p.device)]
    layers: dict[str | None, int] = {}
    for port in ports:
        layers[port.link_layer] = layers.get(port.link_layer, 0) + 1
    if not layers:
        return {}
    main = max(layers, key=lambda layer: (layer == "InfiniBand", layers[layer]))
    chosen = sorted(
        (p for p in ports if p.link_layer == main),
        key=lambda p: (natural_key(p.device), p.port if isinstance(p.port, int) else 0),
    )
    return {(p.device, p.port): i for i, p in enumerate(chosen)}


def _host_of(item: HealthInput, fabric: Fabric) -> str | None:
    """The host a one-host output belongs to: the host a listing or the probe that wrote
    it names (its short name when only that is the fabric's), else its file name when that
    is a host of the fabric, else the host its prompt names, else the file name."""
    cluster = fabric.spec.cluster
    known = {h.name for h in cluster.hosts} if cluster is not None else set()
    hint = item.host_hint
    if item.named_host:
        short = item.named_host.split(".")[0]  # a qualified name (socket.gethostname())
        return next((h for h in (hint, short) if _fabric_host(h, known)), hint)
    if _fabric_host(hint, known):
        return hint
    prompt = getattr(item.result, "host", None)
    if isinstance(prompt, str) and prompt:
        return prompt
    return hint if known else None


def _fabric_host(name: str, known: set[str | None]) -> bool:
    """Whether ``name`` is a host of the fabric: one of its cluster's, or ``n3`` (node 3 of
    a fabric without host names)."""
    return name in known or re.fullmatch(r"n\d{1,9}", name) is not None


def _gpu_conditions(
    ports: list[Any],
    host: str | None,
    item: HealthInput,
    erroring: set[tuple[str, str]],
    source: str,
    finding_ports: dict[LinkCondition | GpuLinkCondition, list[tuple[str, str]]],
) -> list[GpuLinkCondition]:
    """One NVLink condition per GPU with links that are not up or that count errors (its
    links, as findings name them, kept in ``finding_ports``)."""
    by_gpu: dict[int, list[Any]] = {}
    for port in ports:
        m = re.match(r"GPU (\d{1,4})$", port.device)
        if m:
            by_gpu.setdefault(int(m.group(1)), []).append(port)
    out = []
    for gpu, mine in by_gpu.items():
        known = [p for p in mine if p.state != "unknown"]
        inactive = sum(1 for p in known if p.state != "up")
        bad = any((item.name, p.label()) in erroring for p in mine)
        # Every active link's rate, when printed: judged against the fabric's per NVLink.
        up = [p.rate_gbps for p in known if p.state == "up"]
        rates = tuple(float(r) for r in up if r is not None) if None not in up else ()
        if not inactive and not bad and not rates:
            continue
        listed = None if item.format == "dcgmi-diag" else len(known) or None
        condition = GpuLinkCondition(
            host, gpu, inactive, listed, erroring=bad, source=source, rates_gbps=rates
        )
        out.append(condition)
        finding_ports.setdefault(condition, []).extend((item.name, p.label()) for p in mine)
    return out


def overlay(
    fabric: Fabric,
    paths: tuple[str, ...] | list[str],
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    report: bool = True,
) -> HealthOverlay:
    """``fabric`` as the health files say it is (``report``: kept for the command line to
    say what changed).

    Raises:
        FabricError: A file cannot be read or is not a recognised output.
    """
    files = read_health(paths, host)
    links, gpus = conditions(files, fabric)
    result = apply_health(fabric, links, gpus, catalog)
    _say_not_applied(files, result)
    result.fabric.__dict__["_health_report"] = files
    if report:
        _APPLIED.append(result.fabric)
    return result


def _say_not_applied(report: HealthReportSet, result: HealthOverlay) -> None:
    """The findings of the ports whose condition changed nothing say that ``--health`` does
    not apply them, and why, instead of how the fabric is priced without them."""
    whys: dict[tuple[str, str], str] = {}
    for condition, why in result.not_applied.items():
        for key in report.finding_ports.get(condition, ()):
            whys.setdefault(key, why)
    if whys:
        report.findings = [
            not_applied(f, whys[(f.origin, f.where)]) if (f.origin, f.where) in whys else f
            for f in report.findings
        ]


def overlay_of(fabric: Fabric) -> HealthOverlay | None:
    """The health overlay that made ``fabric`` (what changed, what matched nothing, each
    device's mark), or None for the fabric as designed."""
    return health_of(fabric)


def health_json(fabric: Fabric) -> dict[str, Any] | None:
    """``{"changes", "unmatched", "warnings", "files", "findings"}`` of an overlaid fabric
    (``warnings``: the overlay's and the files'), else None."""
    found = health_of(fabric)
    if found is None:
        return None
    data = found.to_json()
    report = report_of(fabric)
    if report is not None:
        said = report.to_json()
        # The overlay's warnings (a host cut off, rates of another fabric) and the files'
        # (parts not read) are both kept.
        said["warnings"] = [*data["warnings"], *said["warnings"]]
        data.update(said)
    return data


#: Fabrics overlaid since the last ``drain_applied`` (the command line reports them once;
#: bounded, so a long-lived caller that never drains keeps only the last few).
_APPLIED: deque[Fabric] = deque(maxlen=8)


def drain_applied() -> list[Fabric]:
    """The fabrics overlaid since the last call, oldest first (each reported once)."""
    out = list(_APPLIED)
    _APPLIED.clear()
    return out


def warnings_printed() -> None:
    """Say that the command printed the files' warnings of every fabric overlaid since the
    last ``drain_applied`` in its own report: its ``--health`` lines on stderr leave them
    out (``HealthReportSet.warnings_printed``)."""
    for fabric in _APPLIED:
        report = report_of(fabric)
        if report is not None:
            report.warnings_printed = True


def report_of(fabric: Fabric) -> HealthReportSet | None:
    """The health files an overlaid fabric was made from (None for the fabric as designed)."""
    found = fabric.__dict__.get("_health_report")
    return found if isinstance(found, HealthReportSet) else None
