"""Parse ``perfquery`` output: an InfiniBand port's PMA counters.

``perfquery [-x] [-E] [-D] [-a] LID PORT`` prints one record per port: a ``# Port counters:
Lid 1719 port 1 (CapMask: ...)`` header (``Port extended counters`` with ``-x``,
``PortRcvErrorDetails`` with ``-E``, ``PortXmitDiscardDetails`` with ``-D``, ``port ALL``
with ``-a``), then ``Name:.......value`` lines. Several records pasted together are read
one by one; a record whose header was cut off starts at its ``PortSelect`` line. Counter
names stay as printed; ``PortSelect`` and ``CounterSelect`` are not counters.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
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
    skipped = 0
    for raw in lines:
        line = raw.rstrip()
        if not line.strip() or len(line) > MAX_LINE_CHARS:
            continue
        m = _HEADER.match(line.strip())
        if m:
            kind, lid, port = m.group(1).strip(), m.group(2), m.group(3)
            current = PortHealth(f"lid {lid}", int(port) if port.isdigit() else "ALL")
            report.ports.append(current)
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
        count = number(value)
        if count is not None:
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
    if skipped:
        report.warnings.append(f"{skipped} line(s) not understood and skipped")
    return report
