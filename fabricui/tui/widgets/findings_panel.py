"""Findings beside the topology's path panel: what ``--health`` changed in the fabric (each
change with the map's marker), and the doctor's findings for an NCCL_DEBUG log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from textual.widgets import Static

from fabricui.tui.widgets.topology_map import HEALTH_MARKERS

if TYPE_CHECKING:
    from fabricui.fabric.health import HealthChange, HealthOverlay
    from fabricui.importers.nccl_log import NcclLog
    from fabricui.services.doctor import Finding

#: Markup colour of each severity (brackets keep it readable under NO_COLOR).
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
#: Markup colour of each ``--health`` mark, as the map colours it (its marker says it in
#: text).
MARK_STYLE = {"down": "bold red", "degraded": "bold yellow", "errors": "yellow"}
#: Changes listed before "... and N more" (the panel scrolls, the list can be long).
MAX_CHANGES = 40


class FindingsPanel(Static):
    """What ``--health`` changed (the devices the map marks), and what ``fabricui doctor``
    says about a log: network, NCCL version and findings."""

    DEFAULT_CSS = """
    FindingsPanel {
        display: none;
        height: auto;
        padding: 1 1 0 1;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self._health: list[str] = []
        """Markup lines of the fabric as it is (empty: no ``--health``)."""
        self._log: list[str] = []
        """Markup lines of the NCCL log (empty: none read)."""

    def show_health(self, overlay: HealthOverlay | None, hint: str = "") -> None:
        """List what a health overlay changed, worst first, each change with the marker the
        map draws at its devices, then what it could not place and its warnings (None: the
        fabric as designed, nothing listed); ``hint``, a key that finds them, under the
        title."""
        self._health = [] if overlay is None else health_markup(overlay)
        if self._health and hint:
            self._health.insert(1, f"[dim]{escape(hint)}[/dim]")
        self._show()

    def show_log(
        self, source: str, log: NcclLog, findings: list[Finding], against: str = ""
    ) -> None:
        """Render the findings of a parsed log (``read_nccl_log`` + ``diagnose``), checked
        against the fabric labelled ``against`` ("": against none)."""
        lines = [
            f"[b]NCCL log[/b] {escape(source)}",
            f"NCCL {escape(log.version or 'version not printed')}, network "
            f"{escape(log.network or 'not printed')}",
            f"checked against {escape(against)}" if against else "not checked against a fabric",
        ]
        if not findings:
            lines.append("[green]no findings: the log looks healthy[/green]")
        for finding in findings:
            style = SEVERITY_STYLE.get(finding.severity, "")
            lines.append(
                f"[{style}]\\[{finding.severity}] {escape(finding.code)}[/{style}]: "
                f"{escape(finding.message)}"
            )
            lines.append(f"  fix: {escape(finding.fix)}")
        self._log = lines
        self._show()

    def show_message(self, text: str) -> None:
        """A line instead of the log's findings (``reading LOG...``)."""
        self._log = [escape(text)]
        self._show()

    def _show(self) -> None:
        """Both parts, the health first (it is what the map shows); hidden when empty."""
        parts = [part for part in (self._health, self._log) if part]
        self.update("\n\n".join("\n".join(part) for part in parts))
        self.display = bool(parts)


def health_markup(overlay: HealthOverlay) -> list[str]:
    """Markup lines of a health overlay: a title with its summary, the changes worst first
    (``~ degraded n3.nic2 (n3 mlx5_2) -> leaf2: keeps 25% of its bandwidth``), then the
    conditions not applied (each line says why) and the warnings, which the map cannot
    show."""
    lines = [
        f"[b]Fabric as it is[/b] (--health): {escape(overlay.summary().removeprefix('health: '))}",
    ]
    worst_first = list(HEALTH_MARKERS)
    order = sorted(
        overlay.changes,
        key=lambda c: worst_first.index(c.kind) if c.kind in worst_first else len(worst_first),
    )
    lines += [_change_markup(change) for change in order[:MAX_CHANGES]]
    if len(order) > MAX_CHANGES:
        lines.append(
            f"... and {len(order) - MAX_CHANGES} more (`fabricui path ... --json` lists them all)"
        )
    if overlay.unmatched:
        lines.append(f"[yellow]not applied[/yellow] ({len(overlay.unmatched)}):")
        lines += [f"  {escape(line)}" for line in overlay.unmatched]
    lines += [f"[yellow]warning[/yellow]: {escape(line)}" for line in overlay.warnings]
    return lines


def kept_text(change: HealthChange) -> str:
    """What a changed link keeps: ``keeps 25% of its bandwidth``, ``carries nothing``, or
    ``counters over their threshold`` (a link only marked; said after what a slowed link
    keeps when it counts errors too)."""
    if change.kind == "errors":
        return "counters over their threshold"
    kept = (
        "carries nothing" if change.factor <= 0.0 else f"keeps {change.factor:.0%} of its bandwidth"
    )
    return kept + (", counters over their threshold" if change.erroring else "")


def _change_markup(change: HealthChange) -> str:
    """One change: the map's marker and the kind in the mark's colour, the link, what it
    keeps, and where it was read."""
    marker = HEALTH_MARKERS.get(change.kind, "?")
    style = MARK_STYLE.get(change.kind, "")
    kept = kept_text(change)
    head = f"{marker} {change.kind}"
    head = f"[{style}]{escape(head)}[/{style}]" if style else escape(head)
    return f"{head} {escape(change.label)}: {kept} ({escape(change.source)})"
