"""Parse ``rdma link [show]`` (iproute2): every RDMA port's state and its network device.

Each line reads ``link mlx5_0/1 [subnet_prefix ... lid N sm_lid N lmc N] state ACTIVE
physical_state LINK_UP [netdev p1p1]``; ``rdma -j link`` prints the same as a JSON list of
objects (``ifname``, ``port``, ``state``, ``physical_state``, ``netdev``). An InfiniBand
port has a LID; a RoCE port has a netdev and no LID.
"""

from __future__ import annotations

import json
import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthReport,
    PortHealth,
    health_text,
    prompt_host,
    state_word,
    strip_quote,
)

FORMAT = "rdma-link"
EXPECTED = "`rdma link` output ('link DEV/PORT state ...' lines)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 16 * 2**20
_LINE = re.compile(r"^(?:\d{1,6}:[ \t]*)?link[ \t]+([\w.-]{1,64})/(\d{1,5})[ \t]+(.{0,600})$")
_PAIR = re.compile(r"([a-z_]{2,30})[ \t]+(\S{1,80})")


def _port(device: str, number: int, fields: dict[str, str]) -> PortHealth:
    state = state_word(fields.get("state"))
    physical = fields.get("physical_state", "")
    if state == "down" and state_word(physical) in ("polling", "disabled"):
        state = state_word(physical)
    port = PortHealth(device, number, state)
    port.detail = f"physical state {physical}" if physical else None
    netdev = fields.get("netdev")
    if netdev:
        port.peer = f"netdev {netdev}"
    if "lid" in fields:
        port.link_layer = "InfiniBand"
    elif netdev:
        port.link_layer = "Ethernet"
    return port


def parse(text: str) -> HealthReport:
    """Parse ``rdma link`` output (text or ``-j`` JSON).

    Args:
        text: The output as pasted.

    Returns:
        One port per ``DEV/PORT``.

    Raises:
        ParseError: Too large, or no ``link DEV/PORT`` line or JSON record.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any rdma link output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="rdma link", host=prompt_host(lines))
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            records = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON, or nested past any rdma output
            records = None
        if isinstance(records, list):
            for record in records:
                if not isinstance(record, dict) or "ifname" not in record:
                    continue
                fields = {str(k): str(v) for k, v in record.items()}
                number = record.get("port")
                report.ports.append(
                    _port(
                        str(record["ifname"]), int(number) if isinstance(number, int) else 0, fields
                    )
                )
            report.source = "rdma -j link"
    for raw in lines:
        if len(raw) > MAX_LINE_CHARS:
            continue
        m = _LINE.match(raw.strip())
        if m is None:
            continue
        fields = dict(_PAIR.findall(m.group(3)))
        report.ports.append(_port(m.group(1), int(m.group(2)), fields))
    if not report.ports:
        raise wrong_format(text, EXPECTED, FORMAT)
    return report
