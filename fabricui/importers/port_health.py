"""What every state and counter importer returns: ports with their state, trained rate and
counters, and health items that are not ports (a power supply, an NVLink fabric
registration, a diagnostic's verdict).

``fabricui import FORMAT FILE --json`` prints ``{"format", "ports": [{"device", "port",
"state", "rate_gbps", "degraded", "counters": {name: int}}], "health": [{"device", "status",
"detail"}], "warnings"}`` for every one of them, so scripts read one shape whichever tool
printed the state. ``state`` is one word of ``STATES``; counters keep the names the tool
prints (``SymbolErrorCounter``, ``rx_discards_phy``, ``Replay Errors``).

Also the input clean-up these tools' pastes need beyond ``common.clean_text``: non-breaking
spaces from mail clients, mail quote marks, and the host a shell prompt names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: Longest line a state reader looks at: these tools print short lines; a longer one is
#: not their output, and skipping it keeps every line regex linear on hostile input.
MAX_LINE_CHARS = 4096

#: Port states, lower-case, as the JSON reports them.
STATES = ("up", "down", "polling", "disabled", "inactive", "init", "armed", "unknown")

#: Tool wordings -> ``STATES`` (keys lower-case, without the numeric prefix ibstatus prints).
_STATE_WORDS = {
    "active": "up",
    "up": "up",
    "linkup": "up",
    "link_up": "up",
    "port_active": "up",
    "port_active_defer": "up",
    "u": "up",
    "down": "down",
    "port_down": "down",
    "d": "down",
    "polling": "polling",
    "disabled": "disabled",
    "x": "disabled",
    "inactive": "inactive",
    "<inactive>": "inactive",
    "init": "init",
    "initialize": "init",
    "initializing": "init",
    "port_init": "init",
    "armed": "armed",
    "port_armed": "armed",
}

#: A shell prompt that names its host: ``[root@node75 ~]#``, ``vyl@csegpu1:~$``,
#: ``root@dl380ag11:~#``, ``adev0: sinfo`` (Slurm's docs).
_PROMPT_HOST = re.compile(
    r"^[ \t>]*(?:\[[\w.-]{1,64}@([\w.-]{1,253})[ \t][^\]\n]{0,200}\][#$]"
    r"|[\w.-]{1,64}@([\w.-]{1,253}):[^\n$#]{0,200}[#$])"
)
_SLURM_PROMPT = re.compile(r"^([\w.-]{1,253}):[ \t]+(?:sinfo|squeue|scontrol|sacct)\b")


def state_word(text: str | None) -> str:
    """A tool's port state (``Active``, ``PORT_DOWN (1)``, ``4: ACTIVE``, ``U``) as one of
    ``STATES``; ``unknown`` when it is none of them."""
    if not text:
        return "unknown"
    word = text.strip()
    if ":" in word and word.split(":", 1)[0].strip().isdigit():  # ibstatus "4: ACTIVE"
        word = word.split(":", 1)[1]
    word = word.split("(")[0].strip().lower()
    return _STATE_WORDS.get(word, _STATE_WORDS.get(word.split()[0] if word else "", "unknown"))


def health_text(text: str) -> str:
    """The input with non-breaking spaces made spaces (mail clients turn tabs into them)."""
    return text.replace("\xa0", " ").replace("\u202f", " ")


def strip_quote(line: str) -> str:
    """A line without a mail quote prefix (``> ``, ``>> ``)."""
    stripped = line.lstrip()
    if stripped.startswith(">"):
        return stripped.lstrip(">").lstrip(" ")
    return line


def prompt_host(lines: list[str], limit: int = 200) -> str | None:
    """The host a shell prompt in the first ``limit`` lines names, if any."""
    for line in lines[:limit]:
        m = _PROMPT_HOST.match(line)
        if m:
            return m.group(1) or m.group(2)
        m = _SLURM_PROMPT.match(line)
        if m:
            return m.group(1)
    return None


@dataclass
class PortHealth:
    """One port as a tool saw it."""

    device: str
    """What the port belongs to: an adapter (``mlx5_0``), a GPU (``GPU 3``), a switch
    (its name or GUID), an interface (``eth0``)."""
    port: int | str | None
    """Port or link number (``1``), or the tool's label when it is not a number."""
    state: str = "unknown"
    """One of ``STATES``."""
    rate_gbps: float | None = None
    """Trained data rate [Gb/s], when the tool prints it."""
    degraded: bool = False
    """Runs below its width or speed (a ``Could be 4X`` hint, 1X of 4X, a lower rate than
    its peers)."""
    counters: dict[str, int] = field(default_factory=dict)
    """Counters by the tool's own names."""
    peer: str | None = None
    """What the other end is, when the tool says (``LG01-01 port 3``, ``00000000:D5:00.0
    link 6``)."""
    peer_port: int | None = None
    """The other end's port number, when known."""
    width: str | None = None
    """Trained lanes (``4X``), when printed."""
    could_be: str | None = None
    """What the port could train at (``4X``, ``53.125 Gbps``), when the tool hints."""
    link_layer: str | None = None
    """``InfiniBand`` or ``Ethernet``, when printed."""
    detail: str | None = None
    """Anything else worth a line (physical state, a module flag)."""

    def to_json(self) -> dict[str, Any]:
        """The documented keys, then the optional ones that are known."""
        data: dict[str, Any] = {
            "device": self.device,
            "port": self.port,
            "state": self.state,
            "rate_gbps": self.rate_gbps,
            "degraded": self.degraded,
            "counters": dict(self.counters),
        }
        for key in ("peer", "peer_port", "width", "could_be", "link_layer", "detail"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    def label(self) -> str:
        """``mlx5_0 port 1``, ``GPU 3 link 7``."""
        if self.port is None:
            return self.device
        word = "link" if self.device.upper().startswith(("GPU", "NVSWITCH")) else "port"
        return f"{self.device} {word} {self.port}"


@dataclass
class HealthItem:
    """A health verdict that is not one port's: a power supply, a fabric registration, a
    diagnostic test, an error a log recorded."""

    device: str
    """What it is about (``PSU1``, ``GPU 0``, ``NVSwitch 3``, ``Discovery``)."""
    status: str
    """The verdict as printed (``ERROR``, ``Insufficient Resources``, ``Fail``)."""
    detail: str = ""
    """What the tool says about it, one line."""
    ok: bool = False
    """True when the verdict is healthy (kept so a summary can count them)."""

    def to_json(self) -> dict[str, Any]:
        """``device``, ``status``, ``detail``."""
        return {"device": self.device, "status": self.status, "detail": self.detail}


@dataclass
class HealthReport:
    """Ports and health items from one state or counter output."""

    format: str
    """Importer name."""
    source: str
    """The tool (and variant) read (``perfquery -x``, ``nvidia-smi nvlink -s``)."""
    ports: list[PortHealth] = field(default_factory=list)
    """Ports in the input's order."""
    health: list[HealthItem] = field(default_factory=list)
    """Health items in the input's order."""
    host: str | None = None
    """The host the output came from, when the output names it (a prompt)."""
    warnings: list[str] = field(default_factory=list)
    """Gaps (an excerpt cut by its poster, lines not understood)."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Format-specific facts kept in the JSON (a fabric summary's counts, GID tables)."""

    def to_json(self) -> dict[str, Any]:
        """``format``, ``source``, ``host``, ``ports``, ``health``, the format's own keys,
        ``warnings``."""
        data: dict[str, Any] = {
            "format": self.format,
            "source": self.source,
            "host": self.host,
            "ports": [p.to_json() for p in self.ports],
            "health": [h.to_json() for h in self.health],
        }
        data.update(self.extra)
        data["warnings"] = list(self.warnings)
        return data

    def summary(self) -> str:
        """A count line, then one line per port that is not up or is degraded or counts
        errors, and one per health item that is not ok (the healthy ones are counted)."""
        ports = self.ports
        up = sum(1 for p in ports if p.state == "up" and not p.degraded)
        head = f"{self.source}"
        if self.host:
            head += f" on {self.host}"
        head += f": {len(ports)} port(s)"
        if any(p.state != "unknown" for p in ports):
            head += f", {up} up at full rate"
        if self.health:
            bad = sum(1 for h in self.health if not h.ok)
            head += f"; {len(self.health)} health item(s), {bad} not ok"
        lines = [head]
        shown = 0
        for port in ports:
            errors = {
                k: v for k, v in port.counters.items() if v and not TRAFFIC_COUNTERS.search(k)
            }
            if port.state in ("up", "unknown") and not port.degraded and not errors:
                continue
            if shown >= _MAX_SHOWN:
                shown += 1
                continue
            shown += 1
            parts = [f"  {port.label()}: {port.state}"]
            if port.rate_gbps is not None:
                parts.append(f"{port.rate_gbps:g} Gb/s")
            if port.degraded:
                parts.append("DEGRADED" + (f" (could be {port.could_be})" if port.could_be else ""))
            if port.peer:
                parts.append(f"-> {port.peer}")
            if errors:
                parts.append(" ".join(f"{k}={v}" for k, v in list(errors.items())[:6]))
            lines.append(", ".join(parts))
        if shown > _MAX_SHOWN:
            lines.append(f"  ... and {shown - _MAX_SHOWN} more port(s) (--json lists all)")
        for item in self.health:
            if item.ok:
                continue
            detail = f": {item.detail}" if item.detail else ""
            lines.append(f"  {item.device}: {item.status}{detail}")
        for key, value in self.extra.items():
            if isinstance(value, (str, int, float)):
                lines.append(f"  {key.replace('_', ' ')}: {value}")
        return "\n".join(lines)


#: Most port lines a summary prints.
_MAX_SHOWN = 40
#: Counters that grow in normal traffic: a port whose only non-zero counters are these is
#: not worth a summary line.
TRAFFIC_COUNTERS = re.compile(
    r"(?i)data|pkts|packets|bytes|select|^portselect|^countersel|throughput|raw (?:tx|rx)|"
    r"^(?:rx|tx)_(?:vport_|prio\d_)?(?:unicast|multicast|broadcast)|^(?:rx|tx)\d*_(?:bytes|packets)"
)


#: Widest counter any of these tools prints [bits] (PMA extended counters, ethtool's u64).
MAX_COUNTER_BITS = 64


def number(text: str, bits: int = MAX_COUNTER_BITS) -> int | None:
    """An integer counter value (``12``, ``0x1f``, ``1,234``); None for anything else,
    a negative or fractional value, or one wider than ``bits`` (at most 64).

    Args:
        text: The value as printed.
        bits: The counter's width [bits].
    """
    text = text.strip().replace(",", "")
    if re.fullmatch(r"\d{1,20}", text):
        value = int(text)
    elif re.fullmatch(r"0x[0-9A-Fa-f]{1,16}", text):
        value = int(text, 16)
    else:
        return None
    return value if value < 2 ** min(bits, MAX_COUNTER_BITS) else None
