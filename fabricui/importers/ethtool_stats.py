"""Parse ``ethtool -S IFACE``: a network interface's statistics (mlx5 discards, PFC pause and
error counters on RoCE ports).

The output is ``NIC statistics:`` then ``     name: value`` rows. The interface is named by
the command line when the paste keeps it (``ethtool -S ens1f0np0``), else by a pdsh-style
``host: `` prefix if there is none, else ``?``. Every numeric row is a counter under its
printed name (``rx_discards_phy``, ``rx_prio3_pause``, ``tx_pause_storm_warning_events``).
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

FORMAT = "ethtool"
EXPECTED = "`ethtool -S` output (NIC statistics: name: value rows)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 16 * 2**20
#: Most counters kept per interface (an mlx5 port prints about 1,000 with every queue).
MAX_COUNTERS = 20_000
_HEAD = re.compile(r"^NIC statistics:[ \t]*$", re.IGNORECASE)
_COMMAND = re.compile(r"ethtool[ \t]+(?:-S|--statistics)[ \t]+([\w.@:-]{1,64})")
_ROW = re.compile(r"^[ \t]*([A-Za-z0-9_.\[\]:-]{1,80}):[ \t]*(\d{1,20})[ \t]*$")


def parse(text: str) -> HealthReport:
    """Parse ``ethtool -S`` output (one or several interfaces, each after its command line).

    Args:
        text: The output as pasted.

    Returns:
        One port per interface with every counter.

    Raises:
        ParseError: Too large, or no ``NIC statistics:`` block with counter rows.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any ethtool output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="ethtool -S", host=prompt_host(lines))
    name = "?"
    current: PortHealth | None = None
    dropped = 0
    for raw in lines:
        if len(raw) > MAX_LINE_CHARS:
            continue
        command = _COMMAND.search(raw)
        if command:
            name = command.group(1)
            current = None
            continue
        if _HEAD.match(raw.strip()):
            current = PortHealth(name, None)
            report.ports.append(current)
            continue
        m = _ROW.match(raw)
        if m is None or current is None:
            continue
        value = number(m.group(2))
        if value is None:
            continue
        if len(current.counters) >= MAX_COUNTERS:
            dropped += 1
            continue
        current.counters[m.group(1)] = value
    report.ports = [p for p in report.ports if p.counters]
    if not report.ports:
        raise wrong_format(text, EXPECTED, FORMAT)
    if any(p.device == "?" for p in report.ports):
        report.warnings.append("the interface is not named (keep the `ethtool -S IFACE` line)")
    if dropped:
        report.warnings.append(
            f"{dropped} counter(s) beyond {MAX_COUNTERS:,} per interface skipped"
        )
    return report
