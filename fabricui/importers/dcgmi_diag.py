"""Parse ``dcgmi diag`` output: each test's verdict, and the NVLinks its messages name down.

``dcgmi diag -r 1|2|3|4`` prints a box per category (``Deployment``, ``Integration``,
``Hardware``, ``Stress``) of ``| Test | Result |`` rows; a result (``Pass``, ``Fail - All``,
``Warn - GPU 0``, ``Skip``) may be followed by ``| Warning |`` or ``| Info |`` rows whose
text DCGM wraps into fixed-width cells, splitting words (``fie`` / ``ld``). Cells are joined
back (a full-width chunk continues its word), so a message such as ``GPU 0's NvLink link 3
is currently down`` becomes a port that is down. Tests are health items (ok when they
pass or are skipped); a box cut by its poster (no closing row) is read as far as it goes.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthItem,
    HealthReport,
    PortHealth,
    health_text,
    prompt_host,
    strip_quote,
)

FORMAT = "dcgmi-diag"
EXPECTED = "`dcgmi diag` output (a | Test | Result | table)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 16 * 2**20
_CATEGORY = re.compile(r"^\+[-=]+[ \t]+([A-Za-z][A-Za-z ]{0,40}?)[ \t]+[-=]+\+")
_DETAIL_ROWS = ("warning", "info", "error")
_RESULT = re.compile(r"^(Pass|Fail|Warn|Warning|Skip|Skipped|Error)\b", re.IGNORECASE)
_LINK_DOWN = re.compile(
    r"GPU[ \t]*(\d{1,4})'s[ \t]+NvLink[ \t]+link[ \t]+(\d{1,3})[ \t]+is[ \t]+currently[ \t]+down"
)


def _cells(line: str) -> tuple[str, str] | None:
    """(name, value chunk) of a ``| name | value |`` row (the closing pipe may be cut)."""
    if not line.startswith("|"):
        return None
    parts = line[1:].split("|")
    if len(parts) < 2:
        return None
    name = parts[0].strip()
    value = parts[1]
    if value.startswith(" "):
        value = value[1:]
    return name, value.rstrip()


def parse(text: str) -> HealthReport:
    """Parse ``dcgmi diag`` output.

    Args:
        text: The output (or an excerpt of it) as pasted.

    Returns:
        One health item per test with its result and messages; GPU links the messages
        name down as ports.

    Raises:
        ParseError: Too large, or no ``| Test | Result |`` row.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any dcgmi diag run")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="dcgmi diag", host=prompt_host(lines))
    # (category, test, result, [(row kind, [chunks])])
    tests: list[list] = []
    category = ""
    width = 0
    cut = False
    for raw in lines:
        line = raw.strip()
        if not line or len(line) > MAX_LINE_CHARS:
            continue
        if line in ("...", "…"):
            cut = True
            continue
        m = _CATEGORY.match(line)
        if m:
            category = m.group(1).strip()
            continue
        cells = _cells(line)
        if cells is None:
            continue
        name, chunk = cells
        width = max(width, len(chunk))
        if name and name.lower() in _DETAIL_ROWS and tests:
            tests[-1][3].append([name, [chunk]])
        elif name and _RESULT.match(chunk.strip()):
            tests.append([category, name, chunk.strip(), []])
        elif not name and tests:
            details = tests[-1][3]
            if details:
                details[-1][1].append(chunk)
            else:
                tests[-1][2] += " " + chunk.strip()
    if not tests:
        raise wrong_format(text, EXPECTED, FORMAT)
    seen: set[tuple[str, int]] = set()
    for category_name, test, result, details in tests:
        messages = []
        for kind, chunks in details:
            joined = ""
            for chunk in chunks:
                joined += chunk if len(chunk) >= width else chunk + " "
            messages.append(f"{kind}: {' '.join(joined.split())}")
        ok = bool(re.match(r"(?i)pass|skip", result))
        device = f"{category_name}: {test}" if category_name else test
        report.health.append(HealthItem(device, result, "; ".join(messages), ok=ok))
        for message in messages:
            for gpu, link in _LINK_DOWN.findall(message):
                key = (f"GPU {int(gpu)}", int(link))
                if key not in seen:
                    seen.add(key)
                    report.ports.append(PortHealth(key[0], key[1], "down", detail=test))
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    if cut or last.startswith("|"):
        report.warnings.append("the table was cut by its poster: later rows are missing")
    return report
