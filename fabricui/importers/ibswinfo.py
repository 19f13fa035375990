"""Parse ``ibswinfo`` output: an unmanaged InfiniBand switch's identity, power supplies, fans
and temperature, read through vendor MADs (stanford-rc's ``ibswinfo.sh``).

The output is a ``key | value`` table between ``===``/``---`` rules; power-supply fields are
indented under their ``PSUn status`` row (``DC power | ERROR``, ``fan status | ERROR``).
Every status row is a health item (ok when ``OK``); the switch is named by its product name
and GUID.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthItem,
    HealthReport,
    health_text,
    strip_quote,
)

FORMAT = "ibswinfo"
EXPECTED = "`ibswinfo` output (a 'key | value' switch table)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 4 * 2**20
_PSU = re.compile(r"^(PSU\d{1,2})[ \t]+status$", re.IGNORECASE)
_STATUS = re.compile(r"status|power$|^fan$", re.IGNORECASE)


def parse(text: str) -> HealthReport:
    """Parse ``ibswinfo`` output.

    Args:
        text: The output as pasted.

    Returns:
        Health items for every status (PSUs, their DC power and fans, the fan tray), and
        the switch's identity and readings as numbers.

    Raises:
        ParseError: Too large, or no ``key | value`` rows.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any ibswinfo output")
    text = health_text(clean_text(text))
    rows: list[tuple[bool, str, str]] = []
    for raw in text.split("\n"):
        line = strip_quote(raw).rstrip()
        key, bar, value = line.partition("|")
        if not bar or len(line) > MAX_LINE_CHARS or not key.strip() or len(key.strip()) > 60:
            continue
        rows.append((key[:1] in (" ", "\t"), key.strip(), value.strip()[:200]))
    identity = {k.lower(): v for nested, k, v in rows if not nested}
    if not rows or not ({"guid", "part number", "product name", "ports"} & set(identity)):
        raise wrong_format(text, EXPECTED, FORMAT)
    name = identity.get("product name") or identity.get("part number") or "switch"
    guid = identity.get("guid")
    device = f"{name} ({guid})" if guid else name
    report = HealthReport(format=FORMAT, source="ibswinfo", host=None)
    readings: dict[str, object] = {}
    psu = None
    for nested, key, value in rows:
        m = _PSU.match(key)
        if m:
            psu = m.group(1).upper()
            report.health.append(HealthItem(f"{device} {psu}", value or "?", "", ok=_ok(value)))
            continue
        if not nested:
            psu = None
        if nested and psu is not None:
            if _STATUS.search(key):
                report.health.append(
                    HealthItem(f"{device} {psu} {key}", value or "?", "", ok=_ok(value))
                )
            elif key.lower().startswith("power"):
                readings[f"{psu.lower()}_power_w"] = _num(value)
            continue
        low = key.lower()
        if low == "fan status":
            report.health.append(HealthItem(f"{device} fans", value or "?", "", ok=_ok(value)))
        elif low.startswith(("temperature", "max temp")) or low.startswith("fan#"):
            readings[re.sub(r"[^a-z0-9]+", "_", low).strip("_")] = _num(value)
    report.extra["switch"] = {
        k.replace(" ", "_"): v
        for k, v in identity.items()
        if k
        in ("part number", "serial number", "product name", "ports", "guid", "firmware version")
    }
    report.extra["readings"] = readings
    missing = [f"{item.device.split(' ')[-1]}" for item in report.health if item.status == "?"]
    if missing:
        report.warnings.append(f"no value for {', '.join(missing)}")
    return report


def _ok(value: str) -> bool:
    return value.strip().upper() in ("OK", "GOOD", "PRESENT")


def _num(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value
