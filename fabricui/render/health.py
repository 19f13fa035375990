"""How the fabric as it is (``--health``) shows in command output: what the overlay changed,
what it could not place, and the findings of the health files."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric

#: Changes listed in the text before "... and N more".
_SHOWN = 6
#: Conditions not applied, and warnings about the files, listed before "... and N more".
_SHOWN_SAID = 12
#: Where every change and every line not shown is listed.
_ALL = "(`fabricui path --json` lists all)"


def health_lines(fabric: Fabric) -> list[str]:
    """Lines for stderr: a summary of the changes (the worst first), then every condition
    that names nothing in the fabric, every part of a file that was not read and every file
    that is no link health (unless the command's own report printed those)."""
    from fabricui.fabric.health import health_of

    overlay = health_of(fabric)
    if overlay is None:
        return []
    lines = [f"fabricui: as it is: {overlay.summary().removeprefix('health: ')}"]
    order = overlay.worst_first()
    for change in order[:_SHOWN]:
        if change.kind == "errors":
            kept = ""
        elif change.factor <= 0.0:
            kept = " is removed"
        else:
            kept = f" keeps {change.factor:.0%} of its bandwidth"
        if change.erroring and change.kind != "errors":
            kept += ", and its counters are over their threshold"
        lines.append(f"fabricui: {change.kind}: {change.label}{kept} ({change.source})")
    if len(order) > _SHOWN:
        lines.append(f"fabricui: ... and {len(order) - _SHOWN} more changes {_ALL}")
    lines += [f"fabricui: warning: {line}" for line in overlay.warnings]
    lines += _at_most(overlay.unmatched, "conditions not applied")
    from fabricui.services.health import report_of

    report = report_of(fabric)
    if report is not None and not report.warnings_printed:  # else the command's report says them
        lines += _at_most(report.warnings, "warnings about the files")
        lines += [f"fabricui: note: {note}" for note in report.notes]
    return lines


def _at_most(said: tuple[str, ...] | list[str], what: str) -> list[str]:
    """Warning lines, the first ``_SHOWN_SAID`` of them and how many more (a listing of a
    thousand hosts of another cluster, or that the shell could not reach, says a line per
    host)."""
    lines = [f"fabricui: warning: {line}" for line in said[:_SHOWN_SAID]]
    if len(said) > _SHOWN_SAID:
        lines.append(f"fabricui: warning: ... and {len(said) - _SHOWN_SAID} more {what} {_ALL}")
    return lines
