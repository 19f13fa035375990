"""The doctor's findings for an NCCL_DEBUG log, shown beside the topology's path panel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from textual.widgets import Static

if TYPE_CHECKING:
    from fabricui.importers.nccl_log import NcclLog
    from fabricui.services.doctor import Finding

#: Markup colour of each severity (brackets keep it readable under NO_COLOR).
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


class FindingsPanel(Static):
    """What ``fabricui doctor`` says about a log: network, NCCL version and findings."""

    DEFAULT_CSS = """
    FindingsPanel {
        display: none;
        height: auto;
        padding: 1 1 0 1;
    }
    """

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
        self.update("\n".join(lines))
        self.display = True

    def show_message(self, text: str) -> None:
        """A line instead of findings (``reading LOG...``)."""
        self.update(escape(text))
        self.display = True
