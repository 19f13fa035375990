"""Parse an NVIDIA Fabric Manager log (``/var/log/fabricmanager.log``): its errors and the
NVSwitch ports they name.

Records read ``[Feb 25 2025 15:10:02] [ERROR] [tid 12727] message``; a record's payload may
continue on the following lines (``Message payload details: ...``) and blank lines separate
records. Every ``ERROR``/``FATAL``/``WARNING`` record is a health item (repeats of one
message are counted, not listed); ``detected NVSwitch [non-]fatal error CODE ... NVSwitch pci
bus id BUS physical id N port P`` also counts against that NVSwitch port, and a fatal error
puts the port down (NVIDIA's fabric manager guide: a fatal NVSwitch error needs the GPUs and
switches reset before the port carries traffic again).
"""

from __future__ import annotations

import re
from collections import Counter

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import HealthItem, HealthReport, PortHealth, health_text

FORMAT = "fabric-manager"
EXPECTED = "a Fabric Manager log ('[date] [LEVEL] [tid N] message' records)"

#: Largest input read [characters] (a busy log grows by megabytes a day).
MAX_INPUT_CHARS = 256 * 2**20
#: Distinct error messages kept as health items.
MAX_MESSAGES = 200
_RECORD = re.compile(
    r"^\[([A-Za-z]{3}[ \t]+\d{1,2}[ \t]+\d{4}[ \t]+\d{1,2}:\d{2}:\d{2})\][ \t]*"
    r"\[([A-Z]{2,8})\][ \t]*(?:\[tid[ \t]+\d{1,9}\][ \t]*)?(.{0,2000})$"
)
_SWITCH_ERROR = re.compile(
    r"NVSwitch[ \t]+(non-fatal|fatal)[ \t]+error[ \t]+(\d{1,9}).{0,200}?pci[ \t]+bus[ \t]+id[ \t]+"
    r"([0-9A-Fa-f:.]{7,20})[ \t]+physical[ \t]+id[ \t]+(\d{1,4})[ \t]+port[ \t]+(\d{1,4})",
    re.IGNORECASE,
)
_LEVELS = {"ERROR": "error", "FATAL": "fatal", "WARNING": "warning", "WARN": "warning"}


def parse(text: str) -> HealthReport:
    """Parse a Fabric Manager log.

    Args:
        text: The log (or an excerpt).

    Returns:
        Health items for errors and warnings (counted per message), NVSwitch ports with
        ``fatal errors``/``non-fatal errors`` counters.

    Raises:
        ParseError: Too large, or no ``[date] [LEVEL]`` record.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than this reader takes")
    text = health_text(clean_text(text))
    report = HealthReport(format=FORMAT, source="nv-fabricmanager log")
    records = 0
    levels: Counter[str] = Counter()
    messages: dict[tuple[str, str], list] = {}
    ports: dict[tuple[str, int], PortHealth] = {}
    first = last = None
    for raw in text.split("\n"):
        m = _RECORD.match(raw.strip())
        if m is None:
            continue
        stamp, level, message = m.group(1), m.group(2), m.group(3).strip()
        records += 1
        first = first or stamp
        last = stamp
        levels[level] += 1
        kind = _LEVELS.get(level)
        if kind is None:
            continue
        switch = _SWITCH_ERROR.search(message)
        if switch:
            severity, code, bus, physical, port_no = switch.groups()
            device = f"NVSwitch {int(physical)} ({bus})"
            key = (device, int(port_no))
            port = ports.get(key)
            if port is None:
                port = ports[key] = PortHealth(device, int(port_no))
                report.ports.append(port)
            name = f"{severity.lower()} errors"
            port.counters[name] = port.counters.get(name, 0) + 1
            port.detail = f"error {code} at {stamp}"
            if severity.lower() == "fatal":
                port.state = "down"
        # Counted per message with its numbers masked, so repeats collapse.
        shape = re.sub(r"\d+", "N", message)
        entry = messages.get((kind, shape))
        if entry is None:
            if len(messages) >= MAX_MESSAGES:
                continue
            entry = messages[(kind, shape)] = [message, stamp, 0]
        entry[2] += 1
    if not records:
        raise wrong_format(text, EXPECTED, FORMAT)
    for (kind, _), (message, stamp, count) in messages.items():
        times = f" ({count} times, last {stamp})" if count > 1 else f" ({stamp})"
        report.health.append(HealthItem("fabric manager", kind, message + times))
    report.extra["records"] = records
    report.extra["levels"] = dict(levels)
    if first:
        report.extra["period"] = f"{first} .. {last}"
    if not messages:
        report.notes.append("no error or warning records")
    return report
