"""Parse ``ibqueryerrors`` output: the error counters of every port in the fabric above their
thresholds.

``ibqueryerrors`` (infiniband-diags) prints, per node with errors, ``Errors for 0x<guid>
"<name>"`` (switches) or ``Errors for "<name>"`` (adapters), then one line per port: ``GUID
0x<guid> port N: [SymbolErrorCounter == 65535] [PortXmitWait == 123 (123.000)]``; with
``-r`` a ``Link info:`` line in iblinkinfo's form follows (state, width, speed, peer); the
run ends with ``## Summary: N nodes checked, M bad nodes found``. Switches (and switch
peers) are named as the ``ibnetdiscover`` and ``iblinkinfo`` importers name them
(``MF0;LG01-05:MQM8700/U1`` -> ``LG01-05``), so the ports match an imported cluster.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.fabric_graph import LANE_GBPS, SIGNAL_SPEEDS, node_name, switch_name
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthReport,
    PortHealth,
    health_text,
    prompt_host,
    state_word,
    strip_quote,
)

FORMAT = "ibqueryerrors"
EXPECTED = "`ibqueryerrors` output"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
_NODE = re.compile(r'^Errors[ \t]+for[ \t]+(?:(0x[0-9A-Fa-f]{1,16})[ \t]+)?"([^"\n]{0,200})"')
_PORT = re.compile(r"^GUID[ \t]+(0x[0-9A-Fa-f]{1,16})[ \t]+port[ \t]+(\d{1,5}|ALL):(.*)$")
_COUNTER = re.compile(r"\[[ \t]*([A-Za-z][A-Za-z0-9]{1,60})[ \t]*==[ \t]*(\d{1,20})")
_LINK = re.compile(
    r"^Link[ \t]+info:[ \t]*\d{1,6}[ \t]+\d{1,5}\[[^\]\n]{0,8}\][ \t]*==\([ \t]*"
    r"(?:(\d{1,2})X[ \t]+([\d.]{1,12})[ \t]+Gbps[^/\n]{0,40}?[ \t]+)?"
    r"([A-Za-z]{1,12})/[ \t]*([A-Za-z]{1,12})[ \t]*\)==>(.*)$"
)
_PEER = re.compile(
    r'(?:0x[0-9A-Fa-f]{1,16}[ \t]+)?\d{1,6}[ \t]+(\d{1,5})\[[^\]\n]{0,8}\][ \t]*"([^"\n]{0,200})"'
)
_COULD_BE = re.compile(r"Could be ([0-9.]{1,12} Gbps|\d{1,2}X|[A-Z]{2,5}\d{0,2})")
_SUMMARY = re.compile(
    r"^##[ \t]+Summary:[ \t]+(\d{1,9})[ \t]+nodes checked,[ \t]+(\d{1,9})[ \t]+bad"
)


def _device(guid: str | None, description: str) -> str:
    """The name of an ``Errors for`` node, as the other InfiniBand importers name it: a
    switch (printed with its GUID) by ``switch_name`` (``MF0;LG01-05:MQM8700/U1`` ->
    ``LG01-05``), by its GUID id (``S-<16 hex digits>``) when its description is no name;
    an adapter by its description (``luna-0001 mlx5_6``)."""
    if guid is None:
        return description.strip() or "?"
    name, _ = switch_name(description)
    return name or f"S-{guid[2:].lower().zfill(16)}"


def parse(text: str) -> HealthReport:
    """Parse ``ibqueryerrors`` output.

    Args:
        text: The output as pasted.

    Returns:
        One port per ``GUID ... port N:`` line, with its counters; node names as devices.

    Raises:
        ParseError: Too large, or no ``Errors for`` / ``GUID ... port`` line.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any ibqueryerrors run")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="ibqueryerrors", host=prompt_host(lines))
    device = "?"
    current: PortHealth | None = None
    for raw in lines:
        line = raw.strip()
        if not line or len(line) > MAX_LINE_CHARS:
            continue
        m = _NODE.match(line)
        if m:
            device = _device(m.group(1), m.group(2))
            current = None
            continue
        m = _PORT.match(line)
        if m:
            port = m.group(2)
            current = PortHealth(device, int(port) if port.isdigit() else "ALL")
            counters, joined, link = m.group(3).partition("Link info:")
            for name, value in _COUNTER.findall(counters):
                current.counters[name] = int(value)
            report.ports.append(current)
            if not joined:
                continue
            # A paste that lost the line break before ``-r``'s link line.
            line = f"Link info:{link}"
        m = _LINK.match(line)
        if m and current is not None:
            width, lane, state, phys, rest = m.groups()
            current.state = state_word(state)
            if current.state == "down":
                current.state = state_word(phys) if state_word(phys) != "unknown" else "down"
            current.detail = f"{state}/{phys}"
            if width and lane:
                # The nominal data rate, as iblinkinfo's importer gives it (4X EDR: 100).
                current.width = f"{width}X"
                name = SIGNAL_SPEEDS.get(float(lane))
                per_lane = LANE_GBPS[name] if name else float(lane)
                current.rate_gbps = round(int(width) * per_lane, 3)
            peer = _PEER.search(rest)
            if peer:
                current.peer, current.peer_port = node_name(peer.group(2)), int(peer.group(1))
            hint = _COULD_BE.findall(rest)
            if hint:
                current.could_be = " ".join(hint)
                current.degraded = True
            continue
        m = _SUMMARY.match(line)
        if m:
            report.extra["nodes_checked"] = int(m.group(1))
            report.extra["bad_nodes"] = int(m.group(2))
    if not report.ports and "nodes_checked" not in report.extra:
        raise wrong_format(text, EXPECTED, FORMAT)
    if not report.ports:
        report.notes.append("no port has errors beyond its threshold")
    return report
