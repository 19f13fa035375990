"""Parse ``mlxlink`` output: one NVIDIA (Mellanox) port's link state, trained speed and width,
the tool's own recommendation, module flags and, with ``-c``, its error counters and BER.

``mlxlink -d DEV [--show_module] [-c]`` prints sections (``Operational Info``,
``Troubleshooting Info``, ``Module Info``, ``Physical Counters and BER Info``) of ``Key :
value`` rows. The port is the ``-d`` device of the command line when the paste has it (an
HCA's ``/dev/mst/mt4129_pciconf0``, a GPU's NVLink ``..._gpu7``). ``Speed`` (``IB-NDR``,
``NVLink-XDR``, ``100G``) and ``Width`` (``4x``) give the trained rate; per-lane module flags
that are set (``Rx LOS [per lane] : 1,0,1,1``) and a recommendation other than "No issue
was observed" are health items even when the link is up.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.fabric_graph import LANE_GBPS
from fabricui.importers.port_health import (
    HealthItem,
    HealthReport,
    PortHealth,
    health_text,
    number,
    prompt_host,
    state_word,
    strip_quote,
)

FORMAT = "mlxlink"
EXPECTED = "`mlxlink` output (Operational Info)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 4 * 2**20
_DEVICE = re.compile(r"mlxlink\b[^\n]{0,200}?[ \t]-d[ \t]+(\S{1,200})")
_PORT_FLAG = re.compile(r"mlxlink\b[^\n]{0,200}?[ \t]-p[ \t]+(\d{1,3})\b")
_ETH_SPEED = re.compile(r"^(\d{1,4})G\b")
#: Counter rows of ``-c`` (integers); BER rows are kept apart (they are not counts).
_BER = re.compile(r"BER", re.IGNORECASE)
_FLAG = re.compile(r"\[per lane\]", re.IGNORECASE)
#: Per-lane flags that mean a lane lost its signal or lock.
_BAD_FLAGS = re.compile(r"LOS|LOL|Fault", re.IGNORECASE)


def _rate(speed: str | None, width: str | None) -> float | None:
    """Trained data rate [Gb/s] of ``IB-NDR`` x ``4x``, ``NVLink-XDR`` x ``2x``, ``100G``."""
    if not speed:
        return None
    name = speed.split("-")[-1].strip().upper()
    lanes = re.match(r"(\d{1,2})x", (width or "").strip(), re.IGNORECASE)
    if name in LANE_GBPS and lanes:  # the speed names mlxlink prints (IB-HDR, NVLink-XDR)
        return LANE_GBPS[name] * int(lanes.group(1))
    eth = _ETH_SPEED.match(speed.strip())
    return float(eth.group(1)) if eth else None


def parse(text: str) -> HealthReport:
    """Parse one ``mlxlink`` run.

    Args:
        text: The output as pasted (with or without its command line).

    Returns:
        One port (state, rate, counters of ``-c``) and health items for the recommendation
        and every per-lane module flag that is set.

    Raises:
        ParseError: Too large, or no ``State``/``Speed`` row of an Operational Info section.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any mlxlink output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    device = _DEVICE.search(text)
    name = device.group(1) if device else "port"
    rows: dict[str, str] = {}
    order: list[str] = []
    for raw in lines:
        key, colon, value = raw.strip().partition(":")
        key, value = key.strip(), value.strip()
        too_long = len(key) > 60 or len(value) > 300
        if not colon or not key[:1].isalpha() or too_long or "@" in key:
            continue
        if key not in rows:
            order.append(key)
        rows[key] = value
    if "State" not in rows or not ({"Speed", "Physical state", "Width"} & set(rows)):
        raise wrong_format(text, EXPECTED, FORMAT)
    report = HealthReport(format=FORMAT, source="mlxlink", host=prompt_host(lines))
    state = state_word(rows.get("State"))
    physical = rows.get("Physical state")
    if state == "down" and physical:
        state = state_word(physical) if state_word(physical) != "unknown" else "down"
    number_flag = _PORT_FLAG.search(text)
    port = PortHealth(name, int(number_flag.group(1)) if number_flag else None, state)
    speed, width = rows.get("Speed"), rows.get("Width")
    port.rate_gbps = _rate(speed, width)
    port.width = width.upper() if width else None
    port.detail = f"{speed or '?'} {width or '?'}; physical state {physical or '?'}"
    if speed and speed.upper().startswith("IB"):
        port.link_layer = "InfiniBand"
    elif speed and _ETH_SPEED.match(speed):
        port.link_layer = "Ethernet"
    for key in order:
        value = rows[key]
        if _BER.search(key):
            report.extra.setdefault("ber", {})[key] = value
            continue
        if "counter" in key.lower() or "errors" in key.lower() or "since last clear" in key.lower():
            count = number(value.split()[0]) if value.split() else None
            if count is not None:
                port.counters[key] = count
    report.ports.append(port)
    recommendation = rows.get("Recommendation")
    if recommendation:
        ok = recommendation.lower().startswith("no issue")
        report.health.append(HealthItem(name, "ok" if ok else "issue", recommendation, ok=ok))
    for key in order:
        if not _FLAG.search(key) or not _BAD_FLAGS.search(key):
            continue
        lanes = [v.strip() for v in rows[key].split(",")]
        set_lanes = [str(i) for i, v in enumerate(lanes) if v == "1"]
        if set_lanes:
            flag = key.replace("[per lane]", "").strip()
            report.health.append(
                HealthItem(
                    name,
                    f"{flag} set",
                    f"{flag} on lane(s) {', '.join(set_lanes)} of {len(lanes)}",
                )
            )
    return report
