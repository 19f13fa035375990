"""The path panel: every hop of the routed path, its bottleneck, latency and transfer time."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

if TYPE_CHECKING:
    from fabricui.engine.evaluate import PathReport

#: Below this many columns the hops are shown as a chain (one device per line).
WIDE_COLUMNS = 50


def hop_rows(report: PathReport) -> list[tuple[str, str, str, str, str, str]]:
    """(#, from, to, link, GB/s, us) of each hop, formatted as ``fabricui path`` prints them."""
    rows = []
    for i, hop in enumerate(report.hops):
        rows.append(
            (
                str(i + 1),
                hop.src,
                hop.dst,
                hop.label,
                f"{hop.transfer_GBps:.1f}",
                f"{hop.lat_us:.3f}",
            )
        )
    return rows


def summary_lines(report: PathReport) -> list[tuple[str, str]]:
    """(label, value) lines under the hops: bottleneck, latency, size, transfer time, and
    the hardware at the bottleneck's two ends."""
    from fabricui.render.path import hop_hardware
    from fabricui.units import format_bandwidth, format_bytes, format_time_us

    hop = report.hops[report.bottleneck_hop]
    lines = [
        (
            "bottleneck",
            f"{format_bandwidth(report.bottleneck_GBps)} per direction, hop "
            f"{report.bottleneck_hop + 1} {hop.src} -> {hop.dst} ({hop.link})",
        ),
    ]
    lines.append(("latency", f"{format_time_us(report.latency_us)} (links + switches + NICs)"))
    if report.size_bytes is not None and report.transfer_us is not None:
        lines.append(("size", format_bytes(report.size_bytes)))
        lines.append(("transfer", f"{format_time_us(report.transfer_us)} (latency + size / bw)"))
    if hop.src_model or hop.dst_model:
        lines.append(("hardware", f"at the bottleneck: {hop_hardware(hop)}"))
    return lines


class PathPanel(Widget):
    """Hops of the routed path with generation, GB/s and us, then the path's figures.

    Wide panels show a table (#, from, to, link, GB/s, us); narrow ones a chain of
    devices with each hop's figures, so that 80-column terminals keep every number.
    """

    DEFAULT_CSS = """
    PathPanel {
        height: auto;
        padding: 0 1;
    }
    PathPanel > .path-panel--bottleneck { color: red; text-style: bold; }
    PathPanel > .path-panel--label { color: $text-muted; }
    PathPanel > .path-panel--title { color: $primary; text-style: bold; }
    PathPanel > .path-panel--src { color: lime; text-style: bold; }
    PathPanel > .path-panel--dst { color: magenta; text-style: bold; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "path-panel--bottleneck",
        "path-panel--label",
        "path-panel--title",
        "path-panel--src",
        "path-panel--dst",
    }
    """Styles of the bottleneck row, labels, title and the endpoints."""

    report: reactive[PathReport | None] = reactive(None, layout=True)
    """The path shown, or None."""
    message: reactive[str] = reactive("loading the fabric...", layout=True)
    """What is shown when there is no path."""
    src_name: reactive[str | None] = reactive(None, layout=True)
    """Source GPU name when only the source is chosen."""

    placement: reactive[str] = reactive("")
    """How the two GPUs sit (``same node``, ``same domain d0``, ``different nodes``)."""

    def show_report(self, report: PathReport, placement: str = "") -> None:
        """Show a routed path (``placement``: how its ends sit, from the fabric)."""
        self.placement = placement
        self.report = report

    def show_message(self, message: str, src_name: str | None = None) -> None:
        """Show a hint or an error instead of a path."""
        self.report = None
        self.message = message
        self.src_name = src_name

    def _style(self, name: str):  # type: ignore[no-untyped-def]
        return self.get_component_rich_style(f"path-panel--{name}", partial=True)

    def render(self) -> RenderableType:
        """The panel's content for its current width."""
        report = self.report
        if report is None:
            text = Text()
            if self.src_name:
                text.append("source ", self._style("label"))
                text.append(self.src_name + "\n", self._style("src"))
            text.append(self.message)
            return text
        same = report.src.split(".")[0] == report.dst.split(".")[0]
        n = len(report.hops)
        title = Text()
        title.append(report.src, self._style("src"))
        title.append(" -> ")
        title.append(report.dst, self._style("dst"))
        where = self.placement or ("same node" if same else "different nodes")
        title.append(f"\n{where}, {n} hop{'s' * (n != 1)}")
        hops = (
            self._hops_wide(report) if self.size.width >= WIDE_COLUMNS else self._hops_chain(report)
        )
        summary = Table.grid(padding=(0, 1))
        summary.add_column(style=self._style("label"), no_wrap=True)
        summary.add_column()
        for label, value in summary_lines(report):
            style = self._style("bottleneck") if label == "bottleneck" else None
            summary.add_row(label, Text(value, style=style or ""))
        return Group(title, Text(""), hops, Text(""), summary)

    def _hops_wide(self, report: PathReport) -> Table:
        table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
        for name, justify in (
            ("#", "right"),
            ("from", "left"),
            ("to", "left"),
            ("link", "left"),
            ("GB/s", "right"),
            ("us", "right"),
        ):
            table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        for i, row in enumerate(hop_rows(report)):
            style = self._style("bottleneck") if i == report.bottleneck_hop else None
            table.add_row(*row, style=style)
        return table

    def _hops_chain(self, report: PathReport) -> Table:
        table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
        for name, justify in (("", "left"), ("via", "left"), ("GB/s", "right"), ("us", "right")):
            table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        table.add_row(report.src, "", "", "")
        for i, (_, _, dst, link, bw, lat) in enumerate(hop_rows(report)):
            style = self._style("bottleneck") if i == report.bottleneck_hop else None
            table.add_row(f"-> {dst}", link, bw, lat, style=style)
        return table
