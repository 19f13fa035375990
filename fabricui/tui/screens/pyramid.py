"""The bandwidth pyramid: each tier of the fabric as a log-scaled bar, and the cliffs between."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.widgets.bar_chart import Bar, BarChart
from fabricui.tui.widgets.health_line import HealthLine
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.title_bar import TitleBar
from fabricui.units import format_bandwidth, format_time_us

if TYPE_CHECKING:
    from fabricui.services.loaded import LoadedFabric, Tier


def tier_bars(tiers: list[Tier]) -> list[Bar]:
    """A bar per tier with its GB/s and latency, and a note row with each drop between tiers."""
    bars: list[Bar] = []
    for i, tier in enumerate(tiers):
        lat = format_time_us(tier.lat_us) if tier.lat_us is not None else "lat n/a"
        bars.append(Bar(tier.name, tier.bw_GBps, f"{format_bandwidth(tier.bw_GBps):>10}  {lat:>8}"))
        if i + 1 < len(tiers):
            below = tiers[i + 1]
            ratio = tier.bw_GBps / below.bw_GBps if below.bw_GBps else float("inf")
            bars.append(
                Bar(f"{glyphs().down} {ratio:.3g}x  {_short(tier.name)}:{_short(below.name)}", None)
            )
    return bars


def _short(name: str) -> str:
    return name.split(" (")[0].replace(" peer", "").replace(" / registers", "")


class PyramidScreen(ViewScreen):
    """The bandwidth cliff of the selected topology, tier by tier.

    SMEM and HBM come from the GPU's hwdb record; the peer, NIC and spine tiers are routed
    paths on this fabric (the engine's bottleneck and latency), so the ratios are the
    fabric's own.
    """

    VIEW = "pyramid"

    BINDINGS: ClassVar[list[BindingType]] = []
    """No keys of its own: the app's keys switch views and topologies."""

    DEFAULT_CSS = """
    PyramidScreen #pyramid-scroll { height: 1fr; padding: 0 1; }
    PyramidScreen #pyramid-head { color: $text-muted; margin-bottom: 1; }
    PyramidScreen #pyramid-table { margin-top: 1; }
    """

    class TiersComputed(Message):
        """The tiers of a fabric are ready."""

        def __init__(self, data: LoadedFabric, tiers: list[Tier]) -> None:
            self.data = data
            """The fabric they belong to."""
            self.tiers = tiers
            """Fastest first."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.tiers: list[Tier] = []
        """The tiers shown."""

    def compose(self) -> ComposeResult:
        """Title bar, what --health changed, the chart and the sources, key bar."""
        yield TitleBar()
        yield HealthLine()
        with VerticalScroll(id="pyramid-scroll"):
            yield Static("loading the fabric...", id="pyramid-head")
            yield BarChart(id="pyramid-chart")
            yield Static("", id="pyramid-table")
        yield KeyBar()

    def data_changed(self, data: LoadedFabric) -> None:
        """Compute the tiers of the new fabric (drawn at once when computed already)."""
        tiers = data.known(data.pyramid)
        if tiers is not None:
            self.workers.cancel_group(self, "pyramid")
            self.tiers_computed(self.TiersComputed(data, tiers))
            return
        self.query_one("#pyramid-head", Static).update(f"{data.label}: computing tiers...")
        self._compute(data)

    def figures_ahead(self, data: LoadedFabric) -> None:
        """The tiers."""
        data.pyramid()

    @work(thread=True, exclusive=True, group="pyramid", exit_on_error=False, description="tiers")
    def _compute(self, data: LoadedFabric) -> None:
        tiers = data.pyramid()
        if not get_current_worker().is_cancelled:
            self.post_message(self.TiersComputed(data, tiers))

    @on(TiersComputed)
    def tiers_computed(self, message: TiersComputed) -> None:
        """Draw the bars and the table of sources."""
        if message.data is not self.data:
            return
        self.tiers = message.tiers
        data = message.data
        gpu = data.fabric.gpu
        self.query_one("#pyramid-head", Static).update(
            f"{data.label} {glyphs().dot} {gpu.name}: per-GPU bandwidth per direction, log scale. "
            "Each step down is the cost of fetching one tier deeper."
        )
        self.query_one(BarChart).set_bars(tier_bars(self.tiers), log=True)
        lines = ["where each figure comes from:"]
        lines += [f"  {t.name}: {t.detail}" for t in self.tiers]
        self.query_one("#pyramid-table", Static).update("\n".join(lines))
