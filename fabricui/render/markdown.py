"""A report as Markdown worth pasting: a title, the command that reproduces it, the
version and date, the topology in a few facts, the figures as tables, the SVG beside it,
what ``--health`` applied (the fabric as it is) and the hardware-database sources of the
figures used."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from fabricui.services.reports import AsItIs, Report, Table


def _cell(text: str) -> str:
    """A table cell: pipes escaped, on one line."""
    return " ".join(text.replace("|", "\\|").split()) or " "


def markdown_table(table: Table) -> list[str]:
    """The table in GitHub-flavoured Markdown (numbers right-aligned)."""
    header = "| " + " | ".join(_cell(h) or " " for h in table.header) + " |"
    rule = (
        "|"
        + "|".join(" ---: " if c in table.right else " --- " for c in range(len(table.header)))
        + "|"
    )
    rows = ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return [f"**{_cell(table.caption)}**", "", header, rule, *rows]


def _as_it_is(section: AsItIs) -> list[str]:
    """The "As it is" section: what ``--health`` changed, its tables, then the lists of
    what was not applied and the warnings (each after its title line)."""
    lines = ["## As it is", "", section.summary, ""]
    for table in section.tables:
        lines += [*markdown_table(table), ""]
    for line in section.lines:
        if line.startswith("- "):
            lines.append(line)
        else:  # a list's title: blank lines around it (the list before it ends there)
            lines += [*([""] if lines[-1] else []), line, ""]
    return [*lines, ""] if section.lines else lines


def render_markdown(report: Report) -> str:
    """The whole report as Markdown text (ends with a newline)."""
    lines = [f"# fabricui: {report.title}", ""]
    lines += ["```sh", report.command, "```", ""]
    lines += [f"fabricui {report.version}, {report.created}", ""]
    lines += [f"- **{label}**: {value}" for label, value in report.summary]
    lines.append("")
    if report.image:
        # Percent-encoded: a space or a parenthesis in the file name would end the link.
        link = quote(report.image)
        lines += [f"![the fabric, drawn as `fabricui export` draws it]({link})", ""]
    for table in report.tables:
        lines += [*markdown_table(table), ""]
    if report.notes:
        lines += [*report.notes, ""]
    if report.as_it_is is not None:
        lines += _as_it_is(report.as_it_is)
    if report.sources:
        lines += ["## Sources", ""]
        lines += [f"- {what}: <{url}>" for what, url in report.sources]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
