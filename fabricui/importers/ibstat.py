"""Parse InfiniBand/RDMA device listings: ``ibstat``, ``ibstatus``, ``ibv_devinfo [-v]`` and
``ibdev2netdev``.

All of them give the HCAs (``mlx5_0`` ...) and their ports; ``ibstat``, ``ibstatus`` and
``ibv_devinfo`` add port state and link layer, ``ibstat``, ``ibstatus`` (``40 Gb/sec (4X
QDR)``) and ``ibv_devinfo -v`` the rate. The JSON also carries every port in the shape all
state importers share (``ports``: state, rate, degraded; ``health``: error lines). Tab-indented or
tab-expanded output, values redacted as ``...``, error lines mixed into the output
(``ibpanic: ...``), colon-grouped GUIDs and ``ibdev2netdev | column -t`` with comments are read;
several listings pasted together are merged by HCA name.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.common import ParseError, clean_text, span, wrong_format
from fabricui.importers.fabric_graph import LANE_GBPS
from fabricui.importers.port_health import (
    HealthItem,
    PortHealth,
    health_text,
    prompt_host,
    state_word,
)

FORMAT = "ibstat"
EXPECTED = "`ibstat`, `ibv_devinfo` or `ibdev2netdev` output"

_CA = re.compile(r"^\s*CA\s+'([^']+)'\s*$")
_HCA_ID = re.compile(r"^\s*hca_id:\s*(\S+)\s*$")
_PORT = re.compile(r"^\s*Port\s+(\d{1,6})\s*:\s*$")
_DEV_PORT = re.compile(r"^\s*port:\s*(\d{1,6})\s*$")
_IBSTATUS = re.compile(r"^\s*Infiniband device '([^']+)' port (\d{1,6}) status:\s*$")
#: ``(4X QDR)`` after an ibstatus rate: the trained width.
_IBSTATUS_WIDTH = re.compile(r"\((\d{1,2})X\b")
#: The key of a ``Key: value`` line (the line is split at its first colon in code: a lazy
#: key or value before ``\s*`` takes quadratic time on a long run of blanks).
_KEY = re.compile(r"[A-Za-z][\w ]*")
_NETDEV = re.compile(
    r"^\s*(\S+)\s+port\s+(\d{1,6})\s*==>\s*(\S+)\s*(?:\((\w+)\)\s*)?(?:#\s*(.*))?$"
)
#: A rate or speed: digits with at most one decimal point (``float`` reads it, finite).
_NUMBER = r"\d{1,6}(?:\.\d{1,6})?"
#: A whole ``Rate`` value: ibstat's ``100``, ibstatus's ``40 Gb/sec (4X QDR)``.
_RATE = re.compile(rf"({_NUMBER})(?:[ \t]*Gb(?:/sec|/s|ps)(?:[ \t]*\([^()\n]{{0,20}}\))?)?")
#: Highest port rate read [Gb/s]: 12X XDR is 2,400; a larger value is no port's rate.
MAX_RATE_GBPS = 10_000.0
_ERROR = re.compile(
    r"^\s*(?:ibpanic|ibwarn|iberror)\b|\bfailed\b|No such (?:file|device)|\bcannot\b|"
    r"^\s*(?:error|warning)\b",
    re.IGNORECASE,
)
_STATES = {
    "PORT_ACTIVE": "Active",
    "PORT_DOWN": "Down",
    "PORT_INIT": "Initializing",
    "PORT_ARMED": "Armed",
    "PORT_ACTIVE_DEFER": "Active",
}
_IBSTATUS_STATES = {
    "ACTIVE": "Active",
    "DOWN": "Down",
    "INIT": "Initializing",
    "ARMED": "Armed",
}
_WIDTH = {"1X": 1, "2X": 2, "4X": 4, "8X": 8, "12X": 12}
#: The catalog's InfiniBand link per lane rate [Gb/s].
_LANE_LINKS = {LANE_GBPS["HDR"]: "ib-hdr", LANE_GBPS["NDR"]: "ib-ndr", LANE_GBPS["XDR"]: "ib-xdr"}


def _natural(name: str) -> list[Any]:
    """Sort key: ``mlx5_10`` after ``mlx5_9`` (digit runs compare by value, any length)."""
    parts = re.split(r"(\d+)", name)
    return [(len(p.lstrip("0")), p.lstrip("0")) if i % 2 else p for i, p in enumerate(parts)]


def _key_value(line: str) -> tuple[str, str] | None:
    """(key, value) of a ``Key: value`` line, or None when it is none."""
    key, colon, value = line.partition(":")
    key = key.strip()
    if not colon or not _KEY.fullmatch(key):
        return None
    return key, value.strip()


def _small_int(text: str | None) -> int | None:
    """``text`` as an int when it is 1 to 9 decimal digits, else None."""
    return int(text) if text is not None and re.fullmatch(r"\d{1,9}", text) else None


def _value(text: str, redacted: set[str], key: str) -> str | None:
    text = text.strip()
    if text in ("...", "…"):
        redacted.add(key)
        return None
    return text or None


def _guid(text: str | None) -> str | None:
    """``248a:0703:00f6:3370`` -> ``0x248a070300f63370``; ``0x...`` stays."""
    if text is None:
        return None
    if re.fullmatch(r"[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}", text):
        return "0x" + text.replace(":", "").lower()
    return text


@dataclass
class IbPort:
    """One port of an HCA."""

    port: int
    """Port number (1-based)."""
    state: str | None = None
    """``Active``, ``Down``, ``Initializing``, ``Armed`` (ibstat wording)."""
    physical_state: str | None = None
    """``LinkUp``, ``Polling``, ``Disabled`` (ibstat only)."""
    rate_gbps: float | None = None
    """Port rate [Gb/s] (ibstat ``Rate``, or ibv_devinfo -v width x speed)."""
    link_layer: str | None = None
    """``InfiniBand`` or ``Ethernet`` (RoCE)."""
    lid: int | None = None
    """Base LID (0 on Ethernet)."""
    sm_lid: int | None = None
    """Subnet manager LID."""
    netdev: str | None = None
    """Network interface (ibdev2netdev)."""
    netdev_up: bool | None = None
    """ibdev2netdev's (Up)/(Down): the IP interface, not the IB port."""
    comment: str | None = None
    """A comment the user appended to the line."""
    width: int | None = None
    """Trained lanes, when the listing prints them (ibstatus, ibv_devinfo -v)."""

    def to_json(self) -> dict[str, Any]:
        """All fields as a dict."""
        return dict(self.__dict__)


@dataclass
class Hca:
    """One host channel adapter (RDMA device)."""

    name: str
    """Device name (``mlx5_0``)."""
    ca_type: str | None = None
    """``MT4123`` (ibstat) or vendor part id (ibv_devinfo)."""
    firmware: str | None = None
    """Firmware version."""
    node_guid: str | None = None
    """Node GUID, ``0x``-prefixed hex."""
    ports_declared: int | None = None
    """Port count the tool announced (``Number of ports``/``phys_port_cnt``)."""
    ports: list[IbPort] = field(default_factory=list)
    """Ports listed."""
    _by_number: dict[int, IbPort] = field(default_factory=dict, repr=False, compare=False)

    def port(self, number: int) -> IbPort:
        """The port ``number``, created when new (an index, not a scan: dumps list
        hundreds of thousands of ports)."""
        found = self._by_number.get(number)
        if found is None:
            found = self._by_number[number] = IbPort(number)
            self.ports.append(found)
        return found

    def to_json(self) -> dict[str, Any]:
        """Fields with ports as dicts."""
        data = {k: v for k, v in self.__dict__.items() if k not in ("ports", "_by_number")}
        data["ports"] = [p.to_json() for p in self.ports]
        return data


@dataclass
class IbDevices:
    """HCAs and ports from ibstat / ibv_devinfo / ibdev2netdev."""

    sources: list[str]
    """Which listings were found (``ibstat``, ``ibv_devinfo``, ``ibdev2netdev``)."""
    hcas: list[Hca]
    """HCAs in natural name order."""
    warnings: list[str] = field(default_factory=list)
    """Stated gaps (elided or redacted values, errors in the output, missing rates)."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    format: str = FORMAT
    """Importer name."""
    errors: list[str] = field(default_factory=list)
    """Error lines the tools printed among the output (``ibpanic: ...``)."""
    host: str | None = None
    """The host it ran on, when a prompt names it."""
    repeated: dict[str, int] = field(default_factory=dict)
    """HCA -> times one listing names it, for an HCA named more than once: several hosts'
    outputs joined without their names (``pdsh -N``), read as one host's."""

    def port_health(self) -> list[PortHealth]:
        """Every port in the shape all state importers share: state (a port that is down
        reads as its physical state, ``polling`` or ``disabled``), rate, and ``degraded``
        when it is up at a lower rate or width than the other ports of its adapter model
        and link layer (a 4X port trained at 1X), or up at rate 0."""
        best: dict[tuple[str | None, str | None], float] = {}
        for hca in self.hcas:
            for p in hca.ports:
                if p.state == "Active" and p.rate_gbps:
                    key = (hca.ca_type, p.link_layer)
                    best[key] = max(best.get(key, 0.0), p.rate_gbps)
        out = []
        for hca in self.hcas:
            for p in hca.ports:
                state = state_word(p.state)
                physical = state_word(p.physical_state)
                if state in ("down", "unknown") and physical in ("polling", "disabled"):
                    state = physical
                port = PortHealth(hca.name, p.port, state, rate_gbps=p.rate_gbps)
                port.link_layer = p.link_layer
                port.width = f"{p.width}X" if p.width else None
                port.detail = (
                    f"{p.state}/{p.physical_state}" if p.state and p.physical_state else None
                )
                top = best.get((hca.ca_type, p.link_layer))
                if state == "up" and p.rate_gbps is not None and top and p.rate_gbps < top:
                    port.degraded = True
                    port.could_be = f"{top:g} Gb/s"
                elif state == "up" and p.rate_gbps == 0:
                    port.degraded = True  # active at rate 0: moves nothing
                if (
                    state == "up"
                    and p.width is not None
                    and p.width < 4
                    and p.link_layer == "InfiniBand"
                ):
                    port.degraded = True
                    port.could_be = port.could_be or "4X"
                out.append(port)
        return out

    def _net_port(self) -> tuple[str, float, int] | None:
        """(link layer, rate [Gb/s], lanes) most common among the active ports with a rate;
        None when no port is active (a down port's rate means nothing)."""
        active = Counter(
            (p.link_layer, p.rate_gbps, p.width or 4)
            for h in self.hcas
            for p in h.ports
            if p.state == "Active" and p.rate_gbps and p.link_layer
        )
        if not active:
            return None
        (layer, rate, lanes), _ = active.most_common(1)[0]
        return layer, rate, lanes

    def suggested_net(self) -> str | None:
        """A ``--net`` value from the most common active port with a rate: the InfiniBand
        generation of its lane rate (4X when the width is not printed: 200 Gb/s is HDR);
        an older generation (QDR, FDR, EDR) is the catalog's first link, HDR, at the port's
        rate. None when no port is active."""
        found = self._net_port()
        if found is None:
            return None
        layer, rate, lanes = found
        if layer == "Ethernet":
            return f"roce:{rate:g}"
        link = _LANE_LINKS.get(rate / lanes)
        if link is None:
            link = "ib-hdr" if rate <= 200 else "ib-ndr" if rate <= 400 else "ib-xdr"
        return f"{link}:{rate:g}"

    def _net_reason(self) -> str:
        """Why the suggestion names a generation the port does not run (QDR at HDR)."""
        found = self._net_port()
        if found is None or found[0] == "Ethernet":
            return ""
        _, rate, lanes = found
        lane = rate / lanes
        if lane in _LANE_LINKS:
            return ""
        name = next((n for n, g in LANE_GBPS.items() if g == lane and n != "FDR10"), None)
        if name is None:
            return ""
        return f" ({lanes}X {name}: the catalog's links start at HDR, priced at the port's rate)"

    def to_json(self) -> dict[str, Any]:
        """format, source, hcas (with ports), suggested_net; ports and health in the shape
        of every state importer; warnings."""
        return {
            "format": self.format,
            "source": "+".join(self.sources),
            "host": self.host,
            "hcas": [h.to_json() for h in self.hcas],
            "suggested_net": self.suggested_net(),
            "ports": [p.to_json() for p in self.port_health()],
            "health": [HealthItem("ibstat", "error", line).to_json() for line in self.errors],
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """One line per port: state, rate, link layer, netdev."""
        ports = sum(len(h.ports) for h in self.hcas)
        out = [f"{' + '.join(self.sources)}: {len(self.hcas)} HCAs, {ports} ports"]
        for hca in self.hcas:
            for p in hca.ports or [IbPort(0)]:
                rate = f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate ?"
                parts = [
                    f"  {hca.name}" + (f" port {p.port}" if p.port else ""),
                    p.state or "state ?",
                    rate,
                    p.link_layer or "link layer ?",
                ]
                if p.netdev:
                    up = {True: " (up)", False: " (down)", None: ""}[p.netdev_up]
                    parts.append(f"netdev {p.netdev}{up}")
                if p.comment:
                    parts.append(f"# {p.comment}")
                out.append(", ".join(parts))
        net = self.suggested_net()
        if net:
            out.append(f"  suggested: --net {net}{self._net_reason()}")
        return "\n".join(out)


@dataclass
class _Reader:
    """The HCAs read so far, and the HCA and port whose lines follow."""

    hcas: dict[str, Hca] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    """The listings seen (``ibstat``, ``ibv_devinfo`` ...), in order."""
    redacted: set[str] = field(default_factory=set)
    """Keys whose value was redacted as ``...``."""
    errors: list[str] = field(default_factory=list)
    """Error lines the tools printed among the output."""
    hca: Hca | None = None
    """The HCA whose ``Key: value`` lines follow."""
    port: IbPort | None = None
    """The port whose ``Key: value`` lines follow (None: the HCA's own lines)."""
    width: int | None = None
    """The port's ``active_width`` lanes (ibv_devinfo -v), for its rate."""
    speed: float | None = None
    """The port's ``active_speed`` per lane [Gb/s] (ibv_devinfo -v), for its rate."""
    inferred: bool = False
    """A link layer was inferred from an interface name (ibdev2netdev)."""
    line: int = 0
    """The number of the line being read (1-based), for warnings."""
    headers: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(listing, HCA) -> times its header was read: once per output."""
    warnings: list[str] = field(default_factory=list)
    """Values that could not be read, by line."""

    def source(self, name: str) -> None:
        """Note that a listing of kind ``name`` was read."""
        if name not in self.sources:
            self.sources.append(name)

    def read(self, line: str) -> None:
        """One line: an HCA or port header of any of the listings, an ibdev2netdev line, an
        error line, or a ``Key: value`` line of the current HCA or port."""
        m = _IBSTATUS.match(line)
        if m:
            self.source("ibstatus")
            self.hca = self.hcas.setdefault(m.group(1), Hca(m.group(1)))
            self.port, self.width, self.speed = self.hca.port(int(m.group(2))), None, None
            return
        m = _CA.match(line) or _HCA_ID.match(line)
        if m:
            listing = "ibstat" if _CA.match(line) else "ibv_devinfo"
            self.source(listing)
            self.headers[(listing, m.group(1))] += 1
            self.hca = self.hcas.setdefault(m.group(1), Hca(m.group(1)))
            self.port, self.width, self.speed = None, None, None
            return
        m = _NETDEV.match(line)
        if m:
            self.netdev_line(m)
            return
        if self.hca is not None and (m := _PORT.match(line) or _DEV_PORT.match(line)):
            self.port, self.width, self.speed = self.hca.port(int(m.group(1))), None, None
            return
        if line.lstrip().startswith("#"):  # a comment or a root prompt, not the tool's
            return
        if _ERROR.search(line):
            self.errors.append(line.strip())
            return
        pair = _key_value(line)
        if pair is None or self.hca is None:
            return
        key, value = pair[0].lower(), _value(pair[1], self.redacted, pair[0])
        if self.port is None:
            _hca_field(self.hca, key, value)
        else:
            self.port_field(self.port, key, value)

    def netdev_line(self, m: re.Match[str]) -> None:
        """``mlx5_0 port 1 ==> ib0 (Up)``: the port's interface (its link layer guessed
        from the interface name when no listing gave it)."""
        self.source("ibdev2netdev")
        name, number, netdev, state, comment = m.groups()
        entry = self.hcas.setdefault(name, Hca(name)).port(int(number))
        entry.netdev = netdev
        entry.netdev_up = {"up": True, "down": False}.get((state or "").lower())
        entry.comment = comment.strip() if comment else None
        if entry.link_layer is None and re.match(r"ib", netdev):
            entry.link_layer, self.inferred = "InfiniBand", True
        elif entry.link_layer is None and re.match(r"en|eth", netdev):
            entry.link_layer, self.inferred = "Ethernet", True
        self.hca = None

    def port_field(self, port: IbPort, key: str, value: str | None) -> None:
        """A port's ``Key: value`` (the wordings of ibstat, ibstatus and ibv_devinfo); the
        rate is width x speed when only ibv_devinfo -v gives it."""
        if key == "state" and value:
            value = re.sub(r"^\d{1,2}:\s*", "", value)  # ibstatus: "4: ACTIVE"
            word = value.split()[0]
            port.state = _STATES.get(word, _IBSTATUS_STATES.get(word.upper(), value))
        elif key in ("physical state", "phys state"):
            port.physical_state = re.sub(r"^\d{1,2}:\s*", "", value) if value else value
        elif key == "rate" and value:
            self.rate(port, value)
        elif key in ("link layer", "link_layer"):
            port.link_layer = value
        elif key in ("base lid", "port_lid") and _small_int(value) is not None:
            port.lid = _small_int(value)
        elif key in ("sm lid", "sm_lid") and _small_int(value) is not None:
            port.sm_lid = _small_int(value)
        elif key == "active_width" and value:
            self.width = _WIDTH.get(value.split()[0])
            port.width = self.width
        elif key == "active_speed" and value and (r := re.match(rf"({_NUMBER})\s*Gbps", value)):
            self.speed = float(r.group(1))
        if self.width and self.speed and port.rate_gbps is None:
            port.rate_gbps = self.width * self.speed

    def rate(self, port: IbPort, value: str) -> None:
        """A port's ``Rate`` read whole (``0`` is kept: an active port that moves nothing);
        anything but a plain number of Gb/s is warned about and the rate left unknown."""
        m = _RATE.fullmatch(value)
        rate = float(m.group(1)) if m else None
        if rate is None or rate > MAX_RATE_GBPS:
            owner = f"{self.hca.name} port {port.port}" if self.hca else f"port {port.port}"
            self.warnings.append(
                f"line {self.line}: Rate {value[:40]!r} is not a rate in Gb/s: "
                f"{owner}'s rate is unknown"
            )
            return
        port.rate_gbps = rate
        lanes = _IBSTATUS_WIDTH.search(value)
        if lanes:
            port.width = int(lanes.group(1))


def _hca_field(hca: Hca, key: str, value: str | None) -> None:
    """An HCA's own ``Key: value`` (before its first port): type, firmware, GUID, ports."""
    if key in ("ca type", "vendor_part_id"):
        hca.ca_type = value
    elif key in ("firmware version", "fw_ver"):
        hca.firmware = value
    elif key in ("node guid", "node_guid"):
        hca.node_guid = _guid(value)
    elif key in ("number of ports", "phys_port_cnt") and _small_int(value):
        hca.ports_declared = _small_int(value)


def parse(text: str) -> IbDevices:
    """Parse ``ibstat``, ``ibv_devinfo [-v]`` or ``ibdev2netdev`` output (or several).

    Args:
        text: The output as pasted.

    Returns:
        The HCAs, with ``warnings`` for elided, redacted or missing values and error lines.

    Raises:
        ParseError: No HCA in the text.
    """
    text = health_text(clean_text(text))
    warnings: list[str] = []
    lines = text.split("\n")
    if lines and lines[0].strip() in ("...", "…"):
        warnings.append("output starts with '...': the HCAs before it were left out")
    reader = _Reader()
    for number, raw in enumerate(lines, 1):
        reader.line = number
        line = raw.rstrip()
        if line.strip():
            reader.read(line)
    warnings += reader.warnings
    if not reader.hcas:
        raise wrong_format(text, EXPECTED, FORMAT)
    ordered = sorted(reader.hcas.values(), key=lambda h: _natural(h.name))
    repeated: dict[str, int] = {}
    for (_, name), times in reader.headers.items():
        if times > 1:
            repeated[name] = max(times, repeated.get(name, 0))
    if repeated:
        warnings.append(repeated_line(repeated))
    _warn_gaps(reader, ordered, warnings)
    if not any(h.ports for h in ordered):
        raise ParseError("HCAs listed without any port: the output is cut off")
    return IbDevices(
        sources=reader.sources,
        hcas=ordered,
        warnings=warnings,
        errors=reader.errors,
        host=prompt_host(lines),
        repeated=repeated,
    )


def repeated_line(repeated: dict[str, int]) -> str:
    """What an HCA named more than once by one listing means: several hosts' outputs
    joined without their names, read as one host's (each port as last listed)."""
    name, times = next(iter(sorted(repeated.items(), key=lambda kv: _natural(kv[0]))))
    more = f" (and {len(repeated) - 1} more HCAs)" if len(repeated) > 1 else ""
    return (
        f"CA '{name}' is listed {times} times{more}: several hosts' outputs joined without "
        "their names (pdsh -N, or files put together) are read as one host's, each port as "
        "last listed"
    )


def _warn_gaps(reader: _Reader, ordered: list[Hca], warnings: list[str]) -> None:
    """Warn about what the listings leave out: redacted values, error lines, ports
    announced but not listed, state and rate ibdev2netdev and ibv_devinfo lack, link
    layers inferred or missing."""
    sources = reader.sources
    if reader.redacted:
        warnings.append(f"values redacted as '...': {', '.join(sorted(reader.redacted))}")
    for line in reader.errors:
        missing = re.search(r"device '([^']+)'", line)
        extra = f" ({missing.group(1)} is missing from the list)" if missing else ""
        warnings.append(f"error in the output: {line}{extra}")
    for h in ordered:
        if h.ports_declared and len(h.ports) < h.ports_declared:
            warnings.append(
                f"{h.name}: {h.ports_declared} ports announced, {len(h.ports)} listed (truncated?)"
            )
    if "ibdev2netdev" in sources and len(sources) == 1:
        warnings.append(
            "ibdev2netdev shows no port state or rate ((Up)/(Down) is the network interface's "
            "state); run `ibstat` for them"
        )
    if reader.inferred:
        warnings.append(
            "link layer inferred from interface names (ib* = InfiniBand/IPoIB, en*/eth* = "
            "Ethernet), not reported by the tool"
        )
    if "ibv_devinfo" in sources:
        no_rate = [h.name for h in ordered if h.ports and all(p.rate_gbps is None for p in h.ports)]
        if no_rate:
            warnings.append(
                f"no port rate for {span(no_rate)} (ibv_devinfo prints it only with -v)"
            )
    no_layer = [
        f"{h.name}/{p.port}" for h in ordered for p in h.ports if p.link_layer is None and p.state
    ]
    if no_layer:
        warnings.append(f"link layer missing for {', '.join(no_layer)} (truncated?)")
