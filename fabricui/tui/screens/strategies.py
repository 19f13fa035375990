"""The strategies view: which parallelism survives this fabric, a layout's step, a layout search."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import Worker, get_current_worker

from fabricui.errors import EngineError, FabricError
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.plan import STEP_PARTS, exposed_thresholds, verdict_text
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.table_keys import SortedFilteredTable
from fabricui.tui.widgets.bar_chart import Bar, BarChart
from fabricui.tui.widgets.filter_bar import FilterBar, row_matches, table_bindings
from fabricui.tui.widgets.health_line import HealthLine
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.rendered_once import RenderedOnce
from fabricui.tui.widgets.title_bar import TitleBar
from fabricui.units import format_time_us
from fabricui.vocabulary import DEFAULT_MODEL, DP_STRATEGIES

if TYPE_CHECKING:
    from textual.app import App

    from fabricui.engine.training.step import PlanReport
    from fabricui.engine.training.table import DecisionTable
    from fabricui.services.loaded import LoadedFabric
    from fabricui.tui.explorer import Explorer

#: Bar tone of each verdict of the decision table.
VERDICT_TONE = {"yes": "good", "marginal": "warn", "no": "bad", "-": "muted", "n/a": "muted"}


def check_layout_text(text: str) -> str | None:
    """Error line for a malformed layout, else None."""
    try:
        parse_layout(text, LayoutChoice())
    except FabricError as exc:
        return exc.message
    return None


def planned_layout(app: Explorer) -> tuple[str, LayoutChoice]:
    """The model the strategies view plans a layout typed elsewhere (``:layout``) for, and
    the layout its words change, as ``l`` changes the one shown: the view's own, or, while
    the view has not drawn the fabric loaded, what it takes once shown (the model and the
    layout given at start, else its model and the default layout's degrees). While the view
    still computes its default layout, its degrees too (the command line then runs the
    layout its check built on them, whenever the default comes).

    Raises:
        FabricError: A layout given at start that is not one.
    """
    try:
        stack = cast("App[None]", app).get_screen_stack(StrategiesScreen.VIEW)
    except KeyError:  # never shown nor built ahead
        stack = []
    screen = next((s for s in stack if isinstance(s, StrategiesScreen)), None)
    if screen is not None and screen.data is not None and screen.data is app.data:
        return screen.model_id, screen.choice or LayoutChoice()
    model_id = app.peek_option("model") or (screen.model_id if screen else DEFAULT_MODEL)
    layout = app.peek_option("layout")
    return model_id, parse_layout(layout, LayoutChoice()) if layout else LayoutChoice()


def decision_bars(table: DecisionTable) -> list[Bar]:
    """Two bars per strategy (group in one node, group across nodes): comm per step, its
    share of compute and the verdict with the exposed share it rests on (``yes (0%)``, as
    the table below says it)."""
    rows: list[tuple[str, float | None, str, str]] = []
    for row in table.rows:
        if not row.applies:
            rows.append((f"{row.name}: does not apply (dense model)", None, "", ""))
            continue
        for where, comm, verdict, exposed in (
            ("intra", row.comm_us_intra, row.intra_verdict, row.exposed_us_intra),
            ("inter", row.comm_us_inter, row.inter_verdict, row.exposed_us_inter),
        ):
            label = f"{row.name} {where}"
            if comm is None:
                rows.append((f"{label}: -  (needs 2+ nodes)", None, "", ""))
                continue
            rows.append((label, comm, verdict, verdict_text(verdict, exposed, table.step_us)))
    said = max((len(text) for *_, text in rows), default=0)
    bars = []
    for label, comm, verdict, text in rows:
        if comm is None:
            bars.append(Bar(label, None))
            continue
        share = comm / table.step_us if table.step_us else 0.0
        figures = f"{format_time_us(comm):>9} {share:>5.0%} {text:<{said}}"
        bars.append(Bar(label, comm, figures, VERDICT_TONE.get(verdict, "normal")))
    return bars


def _comm_cell(comm_us: float | None, step_us: float) -> str:
    if comm_us is None:
        return "-"
    return f"{_time(comm_us)} ({comm_us / step_us:.0%})" if step_us else _time(comm_us)


def _verdict_cell(
    verdict: str, exposed_us: float | None, step_us: float, tones: dict[str, str]
) -> Text:
    """``yes (4%)``: the verdict and the share of compute it rests on, the part of the
    communication not hidden behind compute (73% of communication may hide all but 4%)."""
    return Text(verdict_text(verdict, exposed_us, step_us), style=tones.get(verdict, ""))


def _time(time_us: float) -> str:
    return "0" if time_us == 0 else format_time_us(time_us)


def describe_layout(plan: PlanReport) -> str:
    """``tp 8 x pp 1 x dp 4 (ep 1), 1 micro-batch of 1, global batch 4 x 8192 tokens``."""
    from fabricui.services.reports import layout_line

    return layout_line(plan.layout)


def dp_flavour(plan: PlanReport) -> str:
    """The plan's data-parallel strategy (``zero2``), or ``""``."""
    return next((s for s in plan.strategies if s in DP_STRATEGIES), "")


#: Columns of the layout-search table: (key, header, width, sort key of a plan).
SEARCH_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("rank", "#", 2),
    ("tp", "tp", 2),
    ("cp", "cp", 2),
    ("pp", "pp", 2),
    ("vpp", "vpp", 3),
    ("dp", "dp", 3),
    ("ep", "ep", 2),
    ("etp", "etp", 3),  # expert TP; "-" where it is the TP
    ("mb", "#mb", 3),  # how many micro-batches; plan's and the report's mbN is their size
    ("flavour", "DP", 5),
    ("recompute", "recompute", 9),
    ("step", "step", 8),
    ("mfu", "MFU", 3),
    ("memory", "GB", 3),
)
#: Terminal width from which the view has two columns (each then fits the search table).
WIDE_COLUMNS = 150
#: Column names the controls line says when sorted (the table's order).
SORT_NAMES = tuple(header if header != "#" else "rank" for _key, header, _w in SEARCH_COLUMNS)


def search_cells(rank: int, plan: PlanReport) -> tuple[str, ...]:
    """One row of the layout search: rank, the degrees (the expert TP where it is not the
    TP, else ``-``), micro-batches, DP flavour, recompute mode, the whole step time, MFU
    and memory."""
    lay = plan.layout
    return (
        str(rank),
        str(lay.tp),
        str(lay.cp),
        str(lay.pp),
        str(lay.vpp),
        str(lay.dp),
        str(lay.ep),
        str(lay.expert_tp) if lay.expert_tp != lay.tp else "-",
        str(lay.microbatches),
        dp_flavour(plan),
        plan.recipe.recompute,
        _time(plan.step_us),
        f"{plan.mfu:.0%}",
        f"{plan.memory_GB:.0f}",
    )


def search_sort_key(rank: int, plan: PlanReport, column: int) -> tuple[object, ...]:
    """What a column sorts by (numbers as numbers), rank breaking ties."""
    lay = plan.layout
    keys: tuple[object, ...] = (
        rank,
        lay.tp,
        lay.cp,
        lay.pp,
        lay.vpp,
        lay.dp,
        lay.ep,
        lay.expert_tp,
        lay.microbatches,
        dp_flavour(plan),
        plan.recipe.recompute,
        plan.step_us,
        plan.mfu,
        plan.memory_GB,
    )
    return (keys[column], rank)


def plan_renderable(plan: PlanReport, gpu_name: str) -> Group:
    """Step breakdown (compute, recompute, exposed TP/CP/PP/DP/EP, bubble, optimizer, step),
    throughput, memory and operations."""
    lines = Table.grid(padding=(0, 1))
    lines.add_column(no_wrap=True)
    lines.add_column(justify="right", no_wrap=True)
    lines.add_column()
    parts = plan.breakdown()
    step = plan.step_us
    for key, name in STEP_PARTS:
        value = parts.get(key, 0.0)
        if key in ("compute", "bubble") or value > 0:
            lines.add_row(name, _time(value), f"{value / step:.0%}" if step else "")
    lines.add_row(Text("step", style="bold"), Text(_time(step), style="bold"), "per GPU")
    basis = (
        f"at a fixed {plan.compute_mfu:.0%} MFU"
        if plan.compute_mfu is not None
        else f"kernel model ({gpu_name})"
    )
    lines.add_row("throughput", f"{plan.tflops_per_gpu:.0f} TF/s", f"MFU {plan.mfu:.0%}, {basis}")
    memory = getattr(plan, "memory_GB", None)
    limit = getattr(plan, "memory_limit_GB", None)
    if memory and limit:
        fits = memory <= limit
        lines.add_row(
            "memory",
            f"{memory:.0f} GB",
            Text(
                f"of {limit:.0f} GB usable" + ("" if fits else ": does not fit"),
                style="" if fits else "red",
            ),
        )
    from fabricui.services.reports import operation_label

    ops = Table(box=None, padding=(0, 1), pad_edge=False)
    # On a narrow column the operation's name wraps; the figures are never cut.
    for name, justify, wraps in (
        ("operation", "left", True),
        ("group", "left", False),
        ("time", "right", False),
        ("exposed", "right", False),
        ("algo", "left", False),
    ):
        ops.add_column(name, justify=justify, no_wrap=not wraps)  # type: ignore[arg-type]
    for p in plan.operations:
        ops.add_row(
            operation_label(p.op.strategy, p.op.collective, p.op.note),
            f"{p.op.group} x{p.group_size}",
            _time(p.time_us),
            _time(p.exposed_us),
            p.algorithm,
        )
    if not plan.operations:
        return Group(lines, Text(""), Text("no communication"))
    return Group(lines, Text(""), ops)


class StrategiesScreen(SortedFilteredTable, ViewScreen):
    """Which parallelism survives this fabric, on the selected topology.

    Three computations, each titled with what it is: the decision table (each strategy
    alone on a node's worth of GPUs, against the whole model's compute on one GPU), the
    chosen layout's step (``l`` to change it) and, after ``f``, the layout search (every
    layout on all GPUs at one global batch, fastest first; enter shows a row's step).
    ``/`` filters the rows of both tables, ``>`` (or a click on a header) sorts the search.
    """

    VIEW = "strategies"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "pick_model", "Model", id="strategies.model", tooltip="Choose the model"),
        Binding(
            "l",
            "ask_layout",
            "Layout",
            id="strategies.layout",
            tooltip="TP, PP, EP degrees and DP flavour",
        ),
        Binding(
            "f",
            "search",
            "Search",
            id="strategies.search",
            tooltip="Rank every layout by step time",
        ),
        Binding(
            "pagedown",
            "scroll_body(1)",
            "Scroll",
            id="strategies.page_down",
            tooltip="Scroll the view down a page (pageup: up)",
            key_display="PgDn",
            priority=True,
        ),
        Binding(
            "pageup",
            "scroll_body(-1)",
            "Scroll up",
            show=False,
            id="strategies.page_up",
            tooltip="Scroll the view up a page",
            key_display="PgUp",
            priority=True,
        ),
        *table_bindings("strategies", shown=True, header_clicks=True),
    ]
    """Model, layout, the layout search, its filter and sort, and scrolling."""

    DEFAULT_CSS = """
    StrategiesScreen #strat-controls { height: 1; padding: 0 1; color: $text-muted; }
    StrategiesScreen #strat-body { height: 1fr; layout: grid; grid-size: 1; grid-rows: auto; }
    StrategiesScreen.-wide #strat-body { grid-size: 2; grid-columns: 1fr 1fr; }
    StrategiesScreen #strat-left, StrategiesScreen #strat-right { height: auto; }
    StrategiesScreen #strat-right { margin-top: 1; }
    StrategiesScreen.-wide #strat-right { border-left: vkey $primary-darken-2; margin-top: 0; }
    StrategiesScreen .strat-title { color: $primary; text-style: bold; padding: 0 1; }
    StrategiesScreen .strat-text { padding: 0 0 0 1; }
    StrategiesScreen .strat-gap { margin-top: 1; }
    StrategiesScreen #strat-search { height: auto; max-height: 14; margin-left: 1; }
    StrategiesScreen #strat-search.-empty { display: none; }
    """

    class TableReady(Message):
        """The decision table is computed."""

        def __init__(
            self, data: LoadedFabric, table: DecisionTable | None, error: str = ""
        ) -> None:
            self.data = data
            """Fabric it belongs to."""
            self.table = table
            """The table, or None with ``error``."""
            self.error = error
            """Why there is no table."""
            super().__init__()

    class PlanReady(Message):
        """A layout's plan is computed."""

        def __init__(self, data: LoadedFabric, choice: LayoutChoice, plan: PlanReport) -> None:
            self.data = data
            """Fabric it belongs to."""
            self.choice = choice
            """The layout planned (the default one when none was chosen)."""
            self.plan = plan
            """The engine's plan."""
            super().__init__()

    class SearchReady(Message):
        """The layout search finished."""

        def __init__(self, data: LoadedFabric, plans: list[PlanReport]) -> None:
            self.data = data
            """Fabric it belongs to."""
            self.plans = plans
            """Fastest first."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()

        self.model_id = DEFAULT_MODEL
        """Model id."""
        self.choice: LayoutChoice | None = None
        """Layout planned (None: the default for the fabric)."""
        self.table: DecisionTable | None = None
        """The decision table shown."""
        self.plan: PlanReport | None = None
        """The plan shown."""
        self.plans: list[PlanReport] = []
        """Search results, fastest first (the table may show them filtered or sorted)."""
        self.layout_typed = False
        """The layout was typed (``l``, ``--layout``): the search keeps its DP flavour."""
        self._priced: LayoutChoice | None = None
        """The layout of the plan shown (what the controls name again if a new one fails)."""

    def compose(self) -> ComposeResult:
        """Title bar, what --health changed, controls, filter, the two columns, key bar."""
        yield TitleBar()
        yield HealthLine()
        yield Static("", id="strat-controls", markup=False)
        yield FilterBar(id="strat-filter")
        with VerticalScroll(id="strat-body"):
            with Vertical(id="strat-left"):
                yield Static("decision table", classes="strat-title", id="table-title")
                yield BarChart(id="strat-bars")
                yield Static("", id="strat-table", classes="strat-text strat-gap")
            with Vertical(id="strat-right"):
                yield Static("chosen layout", classes="strat-title", id="plan-title")
                yield Static("", id="strat-plan", classes="strat-text")
                yield Static("", id="search-title", classes="strat-title strat-gap")
                search: DataTable[str] = DataTable(
                    id="strat-search", cursor_type="row", zebra_stripes=True, classes="-empty"
                )
                yield search
                yield Static("", id="strat-why", classes="strat-text")
        yield KeyBar()

    def on_mount(self) -> None:
        """The search table's columns (fixed widths, so a step time is never cut)."""
        table = self.query_one("#strat-search", DataTable)
        for key, header, width in SEARCH_COLUMNS:
            table.add_column(header, key=key, width=width)
        self.query_one("#strat-body").focus()
        super().on_mount()

    def on_resize(self) -> None:
        """Two columns where each holds the layout search's table (150 columns and more),
        one below the other on narrower terminals."""
        self.set_class(self.size.width >= WIDE_COLUMNS, "-wide")

    def _controls(self, busy: str = "") -> None:
        dot = glyphs().dot
        layout = self.choice.label() if self.choice else "default"
        text = f"model {self.model_id} [m] {dot} layout {layout} [l] {dot} search [f]"
        if self.sort_column or self.reverse:
            order = "down" if self.reverse else "up"
            text += f" {dot} by {SORT_NAMES[self.sort_column]} {order} [<>I]"
        self.query_one("#strat-controls", Static).update(text + (f" {dot} {busy}" if busy else ""))

    def data_changed(self, data: LoadedFabric) -> None:
        """New fabric: table and plan again; the old search no longer applies."""
        app = self.fabric_app
        self.model_id = app.take_option("model") or self.model_id
        self.choice = None
        layout = app.take_option("layout")
        self.layout_typed = bool(layout)
        if layout:
            self.choice = parse_layout(layout, LayoutChoice())
        self._clear_search()
        self.refresh_all()
        if app.take_option("search"):
            self.action_search()

    def figures_ahead(self, data: LoadedFabric) -> None:
        """The decision table and the plan of the layout given at start, else of the
        default layout (its search first), for the model given at start or the view's."""
        app = self.fabric_app
        model_id = app.peek_option("model") or self.model_id
        layout = app.peek_option("layout")
        data.decision_table(model_id)
        choice = parse_layout(layout, LayoutChoice()) if layout else data.default_layout(model_id)
        data.plan(model_id, choice)

    def refresh_all(self) -> None:
        """Recompute the decision table and the plan (the header names the model)."""
        data = self.data
        if data is None:
            return
        if self.is_current:
            self.fabric_app.update_titles()
        self._controls("computing...")
        self.query_one(BarChart).show_message("computing...")
        model_id, choice = self.model_id, self.choice
        # Drawn at once what was computed already (ahead of the first frame, or before).
        table = data.known(lambda: data.decision_table(model_id))
        if table is None:
            self._table(data, model_id)
        else:
            self.workers.cancel_group(self, "strategies-table")
            self.table_ready(self.TableReady(data, table))
        planned = data.known(lambda: _planned(data, model_id, choice))
        if planned is None:
            self._plan(data, model_id, choice)
        else:
            self.workers.cancel_group(self, "strategies-plan")
            self.plan_ready(self.PlanReady(data, *planned))

    @work(
        thread=True,
        exclusive=True,
        group="strategies-table",
        exit_on_error=False,
        description="decision table",
    )
    def _table(self, data: LoadedFabric, model_id: str) -> None:
        try:
            table: DecisionTable | None = data.decision_table(model_id)
            error = ""
        except EngineError as exc:  # e.g. one GPU per node: nothing to compare
            table, error = None, exc.message
        if not get_current_worker().is_cancelled:
            self.post_message(self.TableReady(data, table, error))

    @work(
        thread=True,
        exclusive=True,
        group="strategies-plan",
        exit_on_error=False,
        description="plan",
    )
    def _plan(self, data: LoadedFabric, model_id: str, choice: LayoutChoice | None) -> None:
        # the default layout is a small search: off the UI thread
        planned = _planned(data, model_id, choice)
        if not get_current_worker().is_cancelled:
            self.post_message(self.PlanReady(data, *planned))

    @work(
        thread=True,
        exclusive=True,
        group="strategies-search",
        exit_on_error=False,
        description="layout search",
    )
    def _search(self, data: LoadedFabric, model_id: str, dp_strategy: str | None) -> None:
        plans = data.search(model_id, dp_strategy)
        if not get_current_worker().is_cancelled:
            self.post_message(self.SearchReady(data, plans))

    @on(TableReady)
    def table_ready(self, message: TableReady) -> None:
        """Bars and the decision table."""
        if message.data is not self.data:
            return
        self._controls()
        table = self.table = message.table
        chart = self.query_one(BarChart)
        out = self.query_one("#strat-table", Static)
        if table is None:
            chart.show_message(message.error)
            out.update("")
            return

        self.query_one("#table-title", Static).update(
            f"decision table: {table.groups}, {table.microbatches} x {table.seq_len} tokens per GPU"
        )
        chart.set_bars(
            decision_bars(table),
            marker=table.step_us,
            marker_label=f"compute {format_time_us(table.step_us)}: the whole model on one GPU",
        )
        out.update(RenderedOnce(self._decision_renderable(table)))

    def _decision_renderable(self, table: DecisionTable) -> Table:
        grid = Table(
            box=None,
            padding=(0, 1),
            pad_edge=False,
            caption=_caption(table),
            caption_justify="left",
        )
        for name in ("strategy", "intra comm", "OK (exposed)", "inter comm", "OK (exposed)"):
            grid.add_column(name, no_wrap=True)
        tones = {"yes": "green", "marginal": "yellow", "no": "red"}
        for row in table.rows:
            if not row_matches((row.name, row.intra_verdict, row.inter_verdict), self.filter_text):
                continue
            if not row.applies:
                grid.add_row(
                    row.name,
                    Text("-", style="dim"),
                    Text("n/a", style="dim"),
                    Text("-", style="dim"),
                    Text("n/a", style="dim"),
                )
                continue
            grid.add_row(
                row.name,
                _comm_cell(row.comm_us_intra, table.step_us),
                _verdict_cell(row.intra_verdict, row.exposed_us_intra, row.step_us, tones),
                _comm_cell(row.comm_us_inter, table.step_us),
                _verdict_cell(row.inter_verdict, row.exposed_us_inter, row.step_us, tones),
            )
        return grid

    def worker_failed(self, worker: Worker[object]) -> None:
        """A layout that cannot be priced (``tp1024`` on 256 GPUs; the app said why): the
        controls name the layout of the plan shown again, and no longer say computing."""
        if worker.group == "strategies-plan":
            self.choice = self._priced
        self._controls()

    @on(PlanReady)
    def plan_ready(self, message: PlanReady) -> None:
        """The step breakdown and the operations of the layout."""
        if message.data is not self.data:
            return
        self.choice = self._priced = message.choice
        searching = any(w.group == "strategies-search" and w.is_running for w in self.workers)
        self._controls("searching layouts..." if searching else "")
        self.show_plan(message.plan)

    def show_plan(self, plan: PlanReport, rank: int | None = None) -> None:
        """Show a plan's step breakdown under a title naming its layout and batch."""
        self.plan = plan
        what = f"search row {rank}" if rank is not None else "chosen layout"
        self.query_one("#plan-title", Static).update(f"{what}: {describe_layout(plan)}")
        self.query_one("#strat-plan", Static).update(
            RenderedOnce(plan_renderable(plan, self.data.fabric.gpu.name if self.data else ""))
        )

    @on(SearchReady)
    def search_ready(self, message: SearchReady) -> None:
        """The ranked layouts: the table takes the keys and comes into view."""
        if message.data is not self.data:
            return
        self._controls()
        self.plans = message.plans
        self._fill_search()
        self.query_one("#strat-search", DataTable).focus(scroll_visible=False)
        self.call_after_refresh(self._bring_to_top, "#search-title")

    def _bring_to_top(self, selector: str, relayout: bool = True) -> None:
        """Scroll the view so that ``selector``'s widget is at the top (once the layout
        that showed it has run: a refresh later)."""
        if relayout:
            self.set_timer(0.1, lambda: self._bring_to_top(selector, False))
            return
        body = self.query_one("#strat-body", VerticalScroll)
        body.scroll_to_widget(self.query_one(selector), top=True, animate=False)

    def _clear_search(self) -> None:
        self.plans = []
        self._fill_search()

    def _fill_search(self) -> None:
        """The search's rows, filtered by the filter's words and sorted by the chosen
        column; the why of each row shown under the table."""
        table = self.query_one("#strat-search", DataTable)
        title = self.query_one("#search-title", Static)
        why = self.query_one("#strat-why", Static)
        table.clear()
        if not self.plans:
            table.add_class("-empty")
            title.update("")
            why.update("")
            return
        table.remove_class("-empty")
        first = self.plans[0].layout
        flavours = {dp_flavour(p) for p in self.plans}
        only = f", {flavours.pop()} only" if self.layout_typed and len(flavours) == 1 else ""
        title.update(
            f"layout search: the {len(self.plans)} fastest that fit in memory, every layout on "
            f"all {first.world} GPUs at global batch {first.global_batch} x {first.seq_len} "
            f"tokens{only} (enter: its step)"
        )
        from fabricui.services.reports import layout_words

        rows = []
        for rank, plan in enumerate(self.plans, 1):
            cells = search_cells(rank, plan)
            reasons = "; ".join(plan.reasons())
            if row_matches((*cells, layout_words(plan), reasons), self.filter_text):
                rows.append((search_sort_key(rank, plan, self.sort_column), cells, reasons))
        rows.sort(key=lambda r: r[0], reverse=self.reverse)
        for _key, cells, _reasons in rows:
            table.add_row(*(Text(c, justify="right") for c in cells), key=cells[0])
        reasons_grid = Table.grid(padding=(0, 1))
        reasons_grid.add_column(justify="right", no_wrap=True)
        reasons_grid.add_column(style="dim")
        for _key, cells, reasons in rows:
            reasons_grid.add_row(f"{cells[0]}.", reasons)
        why.update(RenderedOnce(reasons_grid))

    @on(DataTable.RowSelected, "#strat-search")
    def search_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a layout: its step breakdown, as the search priced it."""
        rank = int(str(event.row_key.value))
        plan = self.plans[rank - 1]

        self.choice = LayoutChoice(
            tp=plan.layout.tp,
            pp=plan.layout.pp,
            ep=plan.layout.ep,
            dp_strategy=dp_flavour(plan) or "ddp",
            cp=plan.layout.cp,
            recompute=plan.recipe.recompute,
            etp=plan.layout.etp or None,
        )
        self._controls()
        self.show_plan(plan, rank)
        self.call_after_refresh(self._bring_to_top, "#plan-title")

    def sort_column_count(self) -> int:
        return len(SEARCH_COLUMNS)

    def can_sort(self) -> bool:
        if not self.plans:
            self.app.notify("press f to search layouts first; > then sorts them", timeout=4)
        return bool(self.plans)

    def resorted(self) -> None:
        self._fill_search()
        self._controls()

    def refiltered(self) -> None:
        """Filter both tables again."""
        self._fill_search()
        if self.table is not None:
            decision = RenderedOnce(self._decision_renderable(self.table))
            self.query_one("#strat-table", Static).update(decision)

    # --- actions ---------------------------------------------------------------------------

    def action_scroll_body(self, pages: int) -> None:
        """Scroll the view a page down or up, whatever has the keys."""
        body = self.query_one("#strat-body", VerticalScroll)
        if pages > 0:
            body.scroll_page_down(animate=False)
        else:
            body.scroll_page_up(animate=False)

    def action_pick_model(self) -> None:
        """Choose the model."""
        data = self.data
        if data is None:
            return

        def done(model_id: str | None) -> None:
            if model_id and model_id != self.model_id:
                self.fabric_app.remember_visit()
                self.model_id = model_id
                self.choice = None
                self.layout_typed = False
                self._clear_search()
                self.refresh_all()

        models = sorted(data.catalog.models.values(), key=lambda m: m.params_B)
        width = max(len(m.id) for m in models)
        choices = [(m.id, f"{m.id:<{width}} {m.params_B:>6g}B  {m.name}") for m in models]
        self.app.push_screen(PickerModal("Model", choices, self.model_id), done)

    def action_ask_layout(self) -> None:
        """Ask for TP, PP, EP and the DP flavour."""
        data = self.data
        if data is None or self.choice is None:
            return

        def done(text: str | None) -> None:
            if text and self.choice is not None and self.data is not None:
                self.fabric_app.remember_visit()
                self.choice = parse_layout(text, self.choice)
                self.layout_typed = True
                self._controls("computing...")
                self._plan(self.data, self.model_id, self.choice)

        self.app.push_screen(
            PromptModal(
                "Layout (DP takes the GPUs left over)",
                self.choice.label(),
                f"tpN ppN epN cpN etpN, one of {', '.join(DP_STRATEGIES)}, recompute mode",
                self._check_layout,
            ),
            done,
        )

    def _check_layout(self, text: str) -> str | None:
        """Error line for a layout the plan would refuse (a word that is not one, ``tp64``
        on 32 GPUs, ``ep8`` on a dense model: as ``fabricui plan`` says it), else None."""
        data, current = self.data, self.choice
        if data is None or current is None:
            return check_layout_text(text)
        try:
            data.check_layout(self.model_id, parse_layout(text, current))
        except FabricError as exc:
            return exc.message
        return None

    def action_search(self) -> None:
        """Rank every valid layout on all GPUs (in a worker)."""
        if self.data is None:
            return
        self._controls("searching layouts...")
        self._clear_search()
        self.query_one("#search-title", Static).update("searching layouts...")
        # Every DP flavour, unless the user typed a layout with one.
        flavour = self.choice.dp_strategy if self.choice and self.layout_typed else None
        self._search(self.data, self.model_id, flavour)

    def status_text(self) -> str:
        """Model for the sub-title."""
        return self.model_id

    def restore_state(self, state: dict[str, str]) -> None:
        """The model and the layout shown before (going back); the search is kept when
        the model is the same."""
        model = state.get("model", self.model_id)
        layout = state.get("layout")
        try:
            choice = parse_layout(layout, LayoutChoice()) if layout else None
        except FabricError:
            return
        if model != self.model_id:
            self.model_id = model
            self._clear_search()
        self.choice, self.layout_typed = choice, choice is not None
        self.refresh_all()

    def view_state(self) -> dict[str, str]:
        """Model, the layout typed (else the view's default) and whether layouts were
        searched: what a report or a copied command needs to show the same."""
        state = {"model": self.model_id}
        if self.layout_typed and self.choice is not None:
            state["layout"] = self.choice.label()
        if self.plans:
            state["search"] = "yes"
        return state


def _planned(
    data: LoadedFabric, model_id: str, choice: LayoutChoice | None
) -> tuple[LayoutChoice, PlanReport]:
    """The layout planned (``choice``, else the fabric's default one) and its plan."""
    if choice is None:
        choice = data.default_layout(model_id)
    return choice, data.plan(model_id, choice)


def _caption(table: DecisionTable) -> str:
    """Notes on rows that do not apply, strategies not loaded, and the rule of the verdicts."""
    good, ok = exposed_thresholds()
    lines = [f"{row.name}: {row.note}" for row in table.rows if not row.applies]
    if table.missing:
        lines.append(
            f"not loaded: {', '.join(table.missing)} (plugin disabled or failed to load; "
            "see the plugins view)"
        )
    lines.append(
        f"comm per step (% of compute: the whole model on one GPU, {table.compute_basis}); "
        f"OK when the part not hidden behind compute (exposed, in brackets) is <= "
        f"{ok:.0%} of it, marginal above {good:.0%}"
    )
    return "\n".join(lines)
