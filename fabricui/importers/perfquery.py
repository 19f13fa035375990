"""Parse ``perfquery`` output: an InfiniBand port's PMA counters.

``perfquery [-x] [-E] [-D] [-a] LID PORT`` prints one record per port: a ``# Port counters:
Lid 1719 port 1 (CapMask: ...)`` header (``Port extended counters`` with ``-x``,
``PortRcvErrorDetails`` with ``-E``, ``PortXmitDiscardDetails`` with ``-D``, ``port ALL``
with ``-a``), then ``Name:.......value`` lines. Several records pasted together are read
one by one; a record whose header was cut off starts at its ``PortSelect`` line. Counter
names stay as printed; ``PortSelect`` and ``CounterSelect`` are not counters. A value that
is no whole number, or is wider than its counter (the PortCounters widths of a plain record,
64 bits at most), is warned about by line and left out.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_COUNTER_BITS,
    MAX_LINE_CHARS,
    HealthReport,
    PortHealth,
    health_text,
    number,
    prompt_host,
    strip_quote,
)

FORMAT = "perfquery"
EXPECTED = "`perfquery` output"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
_HEADER = re.compile(
    r"^#[ \t]*(.{1,60}?)[ \t]+counters:[ \t]+Lid[ \t]+(\d{1,6})[ \t]+port[ \t]+(\d{1,5}|ALL)\b"
    r"(?:.{0,200}?CapMask:[ \t]*(0x[0-9A-Fa-f]{1,8}))?",
    re.IGNORECASE,
)
#: ``Name:.....value`` (the name is a PMA field name, the dots pad it).
_FIELD = re.compile(r"^[ \t]*([A-Za-z][A-Za-z0-9]{1,60}):\.*[ \t]*(\S{1,40})[ \t]*$")
#: Fields that select what is counted; not counters.
_NOT_COUNTERS = ("PortSelect", "CounterSelect", "CounterSelect2")
#: Most unreadable counter values warned about one by one (the rest are counted).
_MAX_WARNED = 20
#: Widths [bits] of the counters of a plain ``# Port counters`` record (IBA PortCounters);
#: extended (``-x``) and other records count in 64 bits.
_PORT_COUNTER_BITS = {
    "SymbolErrorCounter": 16,
    "LinkErrorRecoveryCounter": 8,
    "LinkDownedCounter": 8,
    "PortRcvErrors": 16,
    "PortRcvRemotePhysicalErrors": 16,
    "PortRcvSwitchRelayErrors": 16,
    "PortXmitDiscards": 16,
    "PortXmitConstraintErrors": 8,
    "PortRcvConstraintErrors": 8,
    "LocalLinkIntegrityErrors": 4,
    "ExcessiveBufferOverrunErrors": 4,
    "VL15Dropped": 16,
    "PortXmitData": 32,
    "PortRcvData": 32,
    "PortXmitPkts": 32,
    "PortRcvPkts": 32,
    "PortXmitWait": 32,
}


def parse(text: str) -> HealthReport:
    """Parse one or several ``perfquery`` records.

    Args:
        text: The output as pasted.

    Returns:
        A port per record, its counters as printed; the LID as device (``lid 1719``).

    Raises:
        ParseError: Too large, or no perfquery counter line.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any perfquery output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="perfquery", host=prompt_host(lines))
    kinds: list[str] = []
    current: PortHealth | None = None
    widths: dict[str, int] = {}
    skipped = unreadable = 0
    for line_no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line.strip() or len(line) > MAX_LINE_CHARS:
            continue
        m = _HEADER.match(line.strip())
        if m:
            kind, lid, port = m.group(1).strip(), m.group(2), m.group(3)
            current = PortHealth(f"lid {lid}", int(port) if port.isdigit() else "ALL")
            report.ports.append(current)
            widths = _PORT_COUNTER_BITS if kind.lower() == "port" else {}
            if kind not in kinds:
                kinds.append(kind)
            continue
        m = _FIELD.match(line)
        if m is None:
            if not line.lstrip().startswith("#"):
                skipped += 1
            continue
        name, value = m.group(1), m.group(2)
        if name == "PortSelect":
            port_no = int(value) if value.isdigit() else value
            if current is None or (current.counters and current.port != port_no):
                # A record whose header was cut off (or a second one without a header).
                current = PortHealth("lid ?", port_no)
                report.ports.append(current)
            elif current.port is None:
                current.port = port_no
            continue
        if current is None or name in _NOT_COUNTERS:
            continue
        bits = widths.get(name, MAX_COUNTER_BITS)
        count = number(value, bits)
        if count is None:
            unreadable += 1
            if unreadable <= _MAX_WARNED:
                report.warnings.append(
                    f"line {line_no}: {name} {value[:40]!r} is not a {bits}-bit counter value "
                    f"(0 to {2**bits - 1:,}): left out of {current.label()}"
                )
            continue
        current.counters[name] = count
    if not any(p.counters for p in report.ports):
        raise wrong_format(text, EXPECTED, FORMAT)
    if kinds:
        variant = {
            "port": "perfquery",
            "port extended": "perfquery -x",
            "portrcverrordetails": "perfquery -E",
            "portxmitdiscarddetails": "perfquery -D",
        }
        report.source = " + ".join(variant.get(k.lower(), f"perfquery ({k})") for k in kinds)
    if any(p.device == "lid ?" for p in report.ports):
        report.warnings.append("a record without its '# ... counters: Lid L port P' header")
    if unreadable > _MAX_WARNED:
        report.warnings.append(
            f"{unreadable - _MAX_WARNED} more counter value(s) not readable and left out"
        )
    if skipped:
        report.warnings.append(f"{skipped} line(s) not understood and skipped")
    return report
