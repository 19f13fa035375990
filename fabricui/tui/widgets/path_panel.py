"""The path panel: every hop of the routed path, its bottleneck, latency and transfer time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs
from fabricui.tui.widgets.findings_panel import MARK_STYLE
from fabricui.tui.widgets.topology_map import HEALTH_MARKERS
from fabricui.units import format_bandwidth, format_bytes, format_time_us

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


def summary_lines(report: PathReport, width: int | None = None) -> list[tuple[str, str]]:
    """(label, value) lines under the hops: bottleneck, latency, transfer time, and the
    hardware at the bottleneck's two ends.

    ``width``: the columns a value has; a figure whose explanation (``(links, switches,
    NICs)``) would wrap it onto a second line is shown without it, so that the figures
    stay within a narrow panel's first screen.
    """
    from fabricui.render.path import hop_hardware

    hop = report.hops[report.bottleneck_hop]
    lines = [
        (
            "bottleneck",
            f"{format_bandwidth(report.bottleneck_GBps)} per direction, hop "
            f"{report.bottleneck_hop + 1} {hop.src} -> {hop.dst} ({hop.link})",
        ),
    ]
    lines.append(("latency", _explained(format_time_us(report.latency_us), LATENCY_NOTE, width)))
    if report.size_bytes is not None and report.transfer_us is not None:
        figure = f"{format_time_us(report.transfer_us)} for {format_bytes(report.size_bytes)}"
        lines.append(("transfer", _explained(figure, TRANSFER_NOTE, width)))
    if hop.src_model or hop.dst_model:
        lines.append(("hardware", hop_hardware(hop)))
    return lines


def key_figures(report: PathReport) -> list[tuple[str, str, str]]:
    """(label, figure, rest) of the path's answers, for the line above its hops when the
    panel's first screen cannot hold every hop and every figure: the bottleneck and its
    hop's two ends, the latency, the message's transfer time."""
    hop = report.hops[report.bottleneck_hop]
    figures = [
        ("bottleneck", format_bandwidth(report.bottleneck_GBps), f" ({hop.src} -> {hop.dst})"),
        ("latency", format_time_us(report.latency_us), ""),
    ]
    if report.size_bytes is not None and report.transfer_us is not None:
        size = format_bytes(report.size_bytes)
        figures.append((f"{size} in", format_time_us(report.transfer_us), ""))
    return figures


#: What the latency adds up, and how the transfer time is reckoned (after the figures).
LATENCY_NOTE = "(links, switches, NICs)"
TRANSFER_NOTE = "(lat+size/bw)"


def _explained(figure: str, note: str, width: int | None) -> str:
    """``figure note`` when it fits ``width`` columns (or no width is given), else the
    figure alone."""
    whole = f"{figure} {note}"
    return whole if width is None or len(whole) <= width else figure


#: The text that marks the bottleneck hop, whatever the colours (``NO_COLOR``).
BOTTLENECK_MARK = "<-"
#: The label of the ``--health`` changes the path meets, under its figures.
HEALTH_LABEL = "as it is"
#: Columns the labels under the hops take, with the gap before their values.
SUMMARY_LABEL_COLUMNS = len("bottleneck") + 1


@dataclass(frozen=True)
class HopHealth:
    """A ``--health`` change a routed path meets, as the panel says it."""

    hop: int
    """Index of the hop it is on; -1: off the path (a down cable of a NIC on the source's
    or the destination's host, an end GPU's NVLinks all down)."""
    kind: str
    """``down``, ``degraded`` or ``errors``: the row and the line carry the map's marker."""
    text: str
    """The link and what it keeps (``luna-0001.nic4 (luna-0001 mlx5_6) -> LG01-05, keeps
    25% of its bandwidth``)."""

    def line(self) -> str:
        """``~ hop 3 degraded: TEXT`` (hops numbered from 1, as the bottleneck line does),
        ``x down: TEXT`` off the path."""
        where = f" hop {self.hop + 1}" if self.hop >= 0 else ""
        return f"{HEALTH_MARKERS.get(self.kind, '?')}{where} {self.kind}: {self.text}"


def row_marks(report: PathReport, health: tuple[HopHealth, ...] = ()) -> list[str]:
    """The text at the end of each hop's row: the map's marker of a changed link
    (``~``), then ``<-`` on the bottleneck, so neither needs colour."""
    marks = []
    for i in range(len(report.hops)):
        kinds = [h.kind for h in health if h.hop == i]
        marker = next((HEALTH_MARKERS[k] for k in HEALTH_MARKERS if k in kinds), "")
        marks.append(marker + (BOTTLENECK_MARK if i == report.bottleneck_hop else ""))
    return marks


def table_width(report: PathReport, mark_width: int = len(BOTTLENECK_MARK)) -> int:
    """Columns the hop table needs (#, from, to, link, GB/s, us, the mark): wider than the
    panel, the hops are drawn as a chain instead."""
    rows = hop_rows(report)
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    return sum(widths) + mark_width + 6 * 2


def fit_name(label: str, width: int, arrow: str = "-> ") -> str:
    """``label`` cut to ``width`` columns from the left (``-> …0560.nic7``): the end of a
    device name says what it is."""
    if len(label) <= width:
        return label
    cut = glyphs().ellipsis
    body = label[len(arrow) :] if label.startswith(arrow) else label
    keep = max(1, width - len(arrow) - len(cut))
    return f"{arrow if label.startswith(arrow) else ''}{cut}{body[-keep:]}"


def link_kind(label: str) -> str:
    """A hop's link without its routes (``ib-ndr x2`` of ``ib-ndr x2, 16 routes``): the
    part a cut link column keeps whole."""
    return label.split(",", 1)[0]


def fit_link(label: str, width: int) -> str:
    """``label`` in ``width`` columns: whole, else its generation and link count with an
    ellipsis for the routes (``ib-ndr x2,…``), else cut at the end (the set's ellipsis,
    so ``--ascii`` stays ASCII)."""
    if len(label) <= width:
        return label
    cut = glyphs().ellipsis
    kind = link_kind(label)
    if kind != label and len(kind) + 1 + len(cut) <= width:
        return f"{kind},{cut}"
    if kind != label and len(kind) + len(cut) <= width:  # ASCII's "..." is three columns
        return f"{kind}{cut}"
    return label[: max(0, width - len(cut))] + cut


def cut_link_notes(links: list[str], width: int) -> list[str]:
    """The links a ``width``-column link column cuts, each whole on a line of its own with
    the hops it is on (``hops 6, 7: ib-ndr x2, 16 routes``, numbered from 1): a narrow
    panel keeps each hop's route and link count on screen."""
    cut: dict[str, list[str]] = {}
    for number, link in enumerate(links, 1):
        if len(link) > width:
            cut.setdefault(link, []).append(str(number))
    return [f"hop{'s' * (len(hops) > 1)} {', '.join(hops)}: {link}" for link, hops in cut.items()]


def chain_label(name: str, previous: str) -> str:
    """``-> .nic7`` for a device of the same host as the one before it (``luna-0001.g7``
    then ``luna-0001.nic7``), else ``-> NAME``: the chain stays narrow with long host
    names."""
    host, sep, rest = name.rpartition(".")
    if sep and host and previous.rpartition(".")[0] == host:
        return f"-> .{rest}"
    return f"-> {name}"


def pack_pieces(pieces: list[Text], width: int, separator: str) -> Text:
    """``pieces`` joined by ``separator`` on as few lines of ``width`` columns as keep each
    piece whole (a piece wider than a line gets a line of its own)."""
    packed, line_width = Text(), 0
    for piece in pieces:
        if line_width and line_width + len(separator) + len(piece) > width:
            packed.append("\n")
            line_width = 0
        elif line_width:
            packed.append(separator)
            line_width += len(separator)
        packed.append_text(piece)
        line_width += len(piece)
    return packed


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
    health: reactive[tuple[HopHealth, ...]] = reactive((), layout=True)
    """The ``--health`` changes the path meets (empty: none, or the fabric as built)."""
    fold_rows: reactive[int | None] = reactive(None, layout=True)
    """Rows the side shows at once (None: unknown). When the hops and the figures need
    more, a line of the path's answers goes above the hops (``key_figures``)."""

    _fit_seen: tuple[PathReport, tuple[Any, ...], bool] | None = None
    """The report, the placement, health, width and rows ``_fits_once`` measured it for,
    and whether it fitted."""

    def show_report(
        self, report: PathReport, placement: str = "", health: tuple[HopHealth, ...] = ()
    ) -> None:
        """Show a routed path (``placement``: how its ends sit, from the fabric;
        ``health``: the changes it meets, marked on their hops and said under the
        path's figures)."""
        self.placement = placement
        self.health = health
        self.report = report

    def show_message(self, message: str, src_name: str | None = None) -> None:
        """Show a hint or an error instead of a path."""
        self.report = None
        self.message = message
        self.src_name = src_name

    def _style(self, name: str) -> Style:
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
        marks = row_marks(report, self.health)
        mark_width = max(len(BOTTLENECK_MARK), *(len(m) for m in marks))
        wide = (
            self.size.width >= WIDE_COLUMNS
            and table_width(report, mark_width) <= self.content_size.width
        )
        hops, notes = (
            (self._hops_wide(report, marks), []) if wide else self._hops_chain(report, marks)
        )
        cut = [Text(note, style=self._style("label")) for note in notes]
        # Why a hop is slow, after the path's figures: on a long path at 80x24 these
        # lines would push the latency, the transfer time and the hardware off screen.
        summary = self._summary(report, self.health)
        if self._fits_once(
            report, lambda: Group(title, hops, *cut, Text(""), self._summary(report))
        ):
            return Group(title, hops, *cut, Text(""), summary)
        # The hops and the figures need more rows than the side shows: the answers go
        # above the hops in a line or two, the hops and the figures' details follow.
        return Group(title, self._key_line(report), hops, *cut, Text(""), summary)

    def _summary(self, report: PathReport, health: tuple[HopHealth, ...] = ()) -> Table:
        """The figures under the hops (``summary_lines``), then the ``health`` lines."""
        summary = Table.grid(padding=(0, 1))
        summary.add_column(style=self._style("label"), no_wrap=True)
        summary.add_column()
        lines = summary_lines(report, self.content_size.width - SUMMARY_LABEL_COLUMNS)
        for label, value in lines:
            style = self._style("bottleneck") if label == "bottleneck" else None
            summary.add_row(label, Text(value, style=style or ""))
        for i, change in enumerate(health):
            summary.add_row(HEALTH_LABEL if i == 0 else "", self._health_text(change))
        return summary

    def _fits_once(self, report: PathReport, content: Callable[[], RenderableType]) -> bool:
        """``_fits`` of the content ``content`` builds, measured once per report, width and
        rows: Textual renders the panel again for its height and on every refresh, and
        measuring draws the whole content (about 25 ms for a long path)."""
        key = (
            self.placement,
            self.health,
            self.size.width,
            self.content_size.width,
            self.fold_rows,
        )
        if self._fit_seen is not None and self._fit_seen[0] is report and self._fit_seen[1] == key:
            return self._fit_seen[2]
        fits = self._fits(content())
        self._fit_seen = (report, key, fits)
        return fits

    def _fits(self, content: RenderableType) -> bool:
        """Whether ``content`` fits the rows the side shows at once (unknown: it does)."""
        if self.fold_rows is None or self.content_size.width <= 0:
            return True
        console = self.app.console
        options = console.options.update(width=self.content_size.width, height=None)
        return len(console.render_lines(content, options, pad=False)) <= self.fold_rows

    def _key_line(self, report: PathReport) -> Text:
        """``bottleneck 50 GB/s (n0.nic0 -> leaf0) · latency 3.23 us · 1 GiB in 21.48 ms``,
        broken between its figures (never inside one) to the panel's width."""
        pieces = []
        for label, figure, rest in key_figures(report):
            piece = Text()
            piece.append(f"{label} ", self._style("label"))
            piece.append(figure, self._style("bottleneck") if label == "bottleneck" else "bold")
            piece.append(rest)
            pieces.append(piece)
        return pack_pieces(pieces, self.content_size.width, glyphs().between_figures)

    def _health_text(self, change: HopHealth) -> Text:
        """A change's line, its marker and kind in the map's colour for the mark."""
        line = change.line()
        head, _, rest = line.partition(":")
        text = Text(head, style=Style.parse(MARK_STYLE.get(change.kind, "none")))
        text.append(f":{rest}")
        return text

    def _mark_style(self, i: int, report: PathReport) -> Style | None:
        """The bottleneck's style on its row; a changed hop's in its mark's colour."""
        if i == report.bottleneck_hop:
            return self._style("bottleneck")
        kinds = [h.kind for h in self.health if h.hop == i]
        kind = next((k for k in HEALTH_MARKERS if k in kinds), None)
        return Style.parse(MARK_STYLE[kind]) if kind in MARK_STYLE else None

    def _hops_wide(self, report: PathReport, marks: list[str]) -> Table:
        table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
        for name, justify in (
            ("#", "right"),
            ("from", "left"),
            ("to", "left"),
            ("link", "left"),
            ("GB/s", "right"),
            ("us", "right"),
            ("", "left"),
        ):
            table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        for i, row in enumerate(hop_rows(report)):
            table.add_row(*row, marks[i], style=self._mark_style(i, report))
        return table

    def _hops_chain(self, report: PathReport, marks: list[str]) -> tuple[Table, list[str]]:
        """The source on the header line, then one line per hop: where it goes (host-local
        devices as ``.nic7``), the link, GB/s and us; the numbers never shrink. With it, the
        links the table cuts, whole (``cut_link_notes``)."""
        rows = hop_rows(report)
        columns = []
        for name, justify, cells in (
            ("via", "left", [r[3] for r in rows]),
            ("GB/s", "right", [r[4] for r in rows]),
            ("us", "right", [r[5] for r in rows]),
        ):
            columns.append((name, justify, max(len(name), *(len(c) for c in cells))))
        labels, previous = [], report.src
        for _, _, dst, *_rest in rows:
            labels.append(chain_label(dst, previous))
            previous = dst
        name_need = max(len(report.src), *(len(label) for label in labels))
        # The mark and four gaps between the columns: two columns wide when everything
        # fits so, else one, which leaves the link's generation and count whole at 80.
        mark_width = max(len(BOTTLENECK_MARK), *(len(m) for m in marks))
        numbers = mark_width + columns[1][2] + columns[2][2]
        gap = 2 if name_need + columns[0][2] + numbers + 4 * 2 <= self.content_size.width else 1
        name_width, via_width = _shared_widths(
            self.content_size.width - numbers - 4 * gap,
            name_need,
            columns[0][2],
            max(len(link_kind(r[3])) for r in rows),
        )
        columns[0] = ("via", "left", via_width)
        padding = (0, 1) if gap == 2 else (0, 0, 0, 1)
        table = Table(box=None, padding=padding, pad_edge=False, show_edge=False)
        table.add_column(fit_name(report.src, name_width, ""), no_wrap=True, width=name_width)
        for name, justify, width in columns:
            table.add_column(name, justify=justify, no_wrap=True, width=width)  # type: ignore[arg-type]
        table.add_column("", no_wrap=True, width=mark_width)
        for i, (label, (_, _, _, link, bw, lat)) in enumerate(zip(labels, rows)):
            table.add_row(
                fit_name(label, name_width),
                fit_link(link, via_width),
                bw,
                lat,
                marks[i],
                style=self._mark_style(i, report),
            )
        return table, cut_link_notes([r[3] for r in rows], via_width)


#: Narrowest the hop names and the links get when they share too little room [columns].
MIN_NAME_COLUMNS = 8
MIN_VIA_COLUMNS = 6


def _shared_widths(room: int, name_need: int, via_need: int, via_kind: int) -> tuple[int, int]:
    """Widths of the hop-name and link columns in ``room`` columns: each its full width
    when both fit; else the links keep their generation and link count (``via_kind``
    columns, ``nvlink4 x18``; at least a third of the room) and the names the rest (a hop
    is read by where it goes), each cut with an ellipsis."""
    if name_need + via_need <= room:
        return name_need, via_need
    via = min(via_need, max(MIN_VIA_COLUMNS, via_kind, room // 3, room - name_need))
    name = max(MIN_NAME_COLUMNS, min(name_need, room - via))
    return name, max(MIN_VIA_COLUMNS, min(via_need, room - name))


class PathSide(VerticalScroll):
    """The scrolling column the path panel sits in: tells the panel how many rows it shows
    at once, so that the path's answers stay on the first screen of a short terminal."""

    def on_resize(self, event: events.Resize) -> None:
        """Give the panel the rows the column now shows."""
        rows = self.scrollable_content_region.height
        for panel in self.query(PathPanel):
            panel.fold_rows = rows
