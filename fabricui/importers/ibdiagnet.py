"""Parse ``ibdiagnet`` run summaries: the fabric's counts and each check stage's verdict.

An ``ibdiagnet`` run ends with a ``Fabric Summary`` (``Total Nodes : 15``, ``IB Switches :
3`` ...) and a stage table (``-I- Stage  Warnings  Errors  Comment``, one ``-I- Discovery  3
0`` row per stage); the console also carries ``-I-``/``-W-``/``-E-`` lines (``-E- ... link
width 1x``, ``-I- SHARP check trees finished successfully``). Stages are health items (ok
when they have neither warnings nor errors), ``-E-`` and ``-W-`` lines too; the summary's
counts are kept as numbers.
"""

from __future__ import annotations

import re

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthItem,
    HealthReport,
    health_text,
    prompt_host,
    strip_quote,
)

FORMAT = "ibdiagnet"
EXPECTED = "an `ibdiagnet` summary (Fabric Summary or stage table)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
#: Most ``-E-``/``-W-`` lines kept as health items (a broken fabric prints thousands).
MAX_MESSAGES = 500
_COUNT = re.compile(r"^([A-Za-z][A-Za-z0-9 ./()-]{1,60}?)[ \t]*:[ \t]*(\d{1,12})[ \t]*$")
_STAGE_HEAD = re.compile(r"^-I-[ \t]+Stage[ \t]+Warnings[ \t]+Errors\b", re.IGNORECASE)
_STAGE = re.compile(r"^-I-[ \t]+([A-Za-z][\w /-]{0,60}?)[ \t]+(\d{1,9})[ \t]+(\d{1,9})[ \t]*(.*)$")
_MESSAGE = re.compile(r"^-([EWI])-[ \t]+(.{1,400})$")
_AR = re.compile(r"Adaptive Routing is enabled on (\d{1,9}) switch", re.IGNORECASE)


def _key(label: str) -> str:
    """``IB Channel Adapters`` -> ``ib_channel_adapters``."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def parse(text: str) -> HealthReport:
    """Parse an ``ibdiagnet`` summary.

    Args:
        text: The console output (or its end) as pasted.

    Returns:
        Stages and ``-E-``/``-W-`` lines as health items, the summary's counts as numbers.

    Raises:
        ParseError: Too large, or neither a Fabric Summary nor a stage table.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any ibdiagnet run")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="ibdiagnet", host=prompt_host(lines))
    counts: dict[str, int] = {}
    in_summary = in_stages = False
    messages = dropped = 0
    for raw in lines:
        line = raw.strip()
        if not line or len(line) > MAX_LINE_CHARS:
            continue
        if line.lower() == "fabric summary":
            in_summary, in_stages = True, False
            continue
        if _STAGE_HEAD.match(line):
            in_stages, in_summary = True, False
            continue
        if in_stages:
            m = _STAGE.match(line)
            if m:
                stage, warn, err, comment = m.groups()
                w, e = int(warn), int(err)
                status = f"{w} warning(s), {e} error(s)"
                report.health.append(
                    HealthItem(stage.strip(), status, comment.strip(), ok=not (w or e))
                )
                continue
        m = _AR.search(line)
        if m:
            counts["adaptive_routing_switches"] = int(m.group(1))
            continue
        if in_summary and not line.startswith("-"):
            m = _COUNT.match(line)
            if m:
                counts[_key(m.group(1))] = int(m.group(2))
                continue
        m = _MESSAGE.match(line)
        if m:
            level, message = m.groups()
            if level == "I":
                if re.search(r"finished successfully", message, re.IGNORECASE):
                    report.health.append(HealthItem("ibdiagnet", "ok", message.strip(), ok=True))
                continue
            if messages >= MAX_MESSAGES:
                dropped += 1
                continue
            messages += 1
            status = "error" if level == "E" else "warning"
            report.health.append(HealthItem("ibdiagnet", status, message.strip()))
            continue
        if line.startswith("---") and counts:
            in_summary = False  # the rule after the summary's counts ends it
    if not counts and not report.health:
        raise wrong_format(text, EXPECTED, FORMAT)
    if counts:
        report.extra["fabric_summary"] = counts
    if dropped:
        report.warnings.append(f"{dropped} more -E-/-W- line(s) not kept")
    return report
