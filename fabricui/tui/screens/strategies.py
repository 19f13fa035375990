"""The strategies view: which parallelism survives this fabric, a layout's step, a layout search."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from fabricui.services.plan import STEP_PARTS
from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.widgets.bar_chart import Bar, BarChart
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.title_bar import TitleBar

if TYPE_CHECKING:
    from fabricui.engine.training.step import PlanReport
    from fabricui.engine.training.table import DecisionTable
    from fabricui.tui.data import FabricData, LayoutChoice

#: Bar tone of each verdict of the decision table.
VERDICT_TONE = {"yes": "good", "marginal": "warn", "no": "bad", "-": "muted", "n/a": "muted"}


def check_layout_text(text: str) -> str | None:
    """Error line for a malformed layout, else None."""
    from fabricui.errors import FabricError
    from fabricui.services.loaded import LayoutChoice, parse_layout

    try:
        parse_layout(text, LayoutChoice())
    except FabricError as exc:
        return exc.message
    return None


def decision_bars(table: DecisionTable) -> list[Bar]:
    """Two bars per strategy (group in one node, group across nodes): comm per step."""
    from fabricui.units import format_time_us

    bars = []
    for row in table.rows:
        if not row.applies:
            bars.append(Bar(f"{row.name}: does not apply (dense model)", None))
            continue
        for where, comm, verdict in (
            ("intra", row.comm_us_intra, row.intra_verdict),
            ("inter", row.comm_us_inter, row.inter_verdict),
        ):
            label = f"{row.name} {where}"
            if comm is None:
                bars.append(Bar(f"{label}: -  (needs 2+ nodes)", None))
                continue
            share = comm / table.step_us if table.step_us else 0.0
            text = f"{format_time_us(comm):>9} {share:>5.0%} {verdict:<8}"
            bars.append(Bar(label, comm, text, VERDICT_TONE.get(verdict, "normal")))
    return bars


def _comm_cell(comm_us: float | None, step_us: float) -> str:
    if comm_us is None:
        return "-"
    return f"{_time(comm_us)} ({comm_us / step_us:.0%})" if step_us else _time(comm_us)


def _time(time_us: float) -> str:
    from fabricui.units import format_time_us

    return "0" if time_us == 0 else format_time_us(time_us)


def describe_layout(plan: PlanReport) -> str:
    """``tp 8 x pp 1 x dp 4 (ep 1), 1 micro-batch, batch 4 x 8192`` (``cp 2`` when set)."""
    lay = plan.layout
    cp = f" x cp {lay.cp}" if lay.cp > 1 else ""
    return (
        f"tp {lay.tp}{cp} x pp {lay.pp} x dp {lay.dp} (ep {lay.ep}), {lay.microbatches} "
        f"micro-batches, batch {lay.global_batch} x {lay.seq_len}"
    )


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
    ops = Table(box=None, padding=(0, 1), pad_edge=False)
    for name, justify in (
        ("operation", "left"),
        ("group", "left"),
        ("time", "right"),
        ("exposed", "right"),
        ("algo", "left"),
    ):
        ops.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for p in plan.operations:
        ops.add_row(
            f"{p.op.strategy} {p.op.collective}",
            f"{p.op.group} x{p.group_size}",
            _time(p.time_us),
            _time(p.exposed_us),
            p.algorithm,
        )
    if not plan.operations:
        return Group(lines, Text(""), Text("no communication"))
    return Group(lines, Text(""), ops)


class StrategiesScreen(ViewScreen):
    """Which parallelism survives this fabric, on the selected topology.

    Left: each strategy's communication per step (group inside one node, and across
    nodes) against the step's compute, and the decision table. Right: the step breakdown of
    one layout (``l`` to change it) and, after ``f``, the fastest layouts.
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
    ]
    """Model, layout and the layout search."""

    DEFAULT_CSS = """
    StrategiesScreen #strat-controls { height: 1; padding: 0 1; color: $text-muted; }
    StrategiesScreen #strat-body { height: 1fr; layout: grid; grid-size: 1; grid-rows: auto; }
    StrategiesScreen.-wide #strat-body { grid-size: 2; grid-columns: 1fr 1fr; }
    StrategiesScreen #strat-left, StrategiesScreen #strat-right { height: auto; }
    StrategiesScreen.-wide #strat-right { border-left: vkey $primary-darken-2; }
    StrategiesScreen .strat-title { color: $primary; text-style: bold; padding: 0 1; }
    StrategiesScreen .strat-text { padding: 0 0 0 1; }
    StrategiesScreen .strat-gap { margin-top: 1; }
    """

    class TableReady(Message):
        """The decision table is computed."""

        def __init__(self, data: FabricData, table: DecisionTable | None, error: str = "") -> None:
            self.data = data
            """Fabric it belongs to."""
            self.table = table
            """The table, or None with ``error``."""
            self.error = error
            """Why there is no table."""
            super().__init__()

    class PlanReady(Message):
        """A layout's plan is computed."""

        def __init__(self, data: FabricData, choice: LayoutChoice, plan: PlanReport) -> None:
            self.data = data
            """Fabric it belongs to."""
            self.choice = choice
            """The layout planned (the default one when none was chosen)."""
            self.plan = plan
            """The engine's plan."""
            super().__init__()

    class SearchReady(Message):
        """The layout search finished."""

        def __init__(self, data: FabricData, plans: list[PlanReport]) -> None:
            self.data = data
            """Fabric it belongs to."""
            self.plans = plans
            """Fastest first."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        from fabricui.tui.data import DEFAULT_MODEL

        self.model_id = DEFAULT_MODEL
        """Model id."""
        self.choice: LayoutChoice | None = None
        """Layout planned (None: the default for the fabric)."""
        self.table: DecisionTable | None = None
        """The decision table shown."""
        self.plan: PlanReport | None = None
        """The plan shown."""
        self.plans: list[PlanReport] = []
        """Search results shown."""

    def compose(self) -> ComposeResult:
        """Title bar, controls, the two columns, key bar."""
        yield TitleBar()
        yield Static("", id="strat-controls", markup=False)
        with VerticalScroll(id="strat-body"):
            with Vertical(id="strat-left"):
                yield Static(
                    "communication per step vs compute", classes="strat-title", markup=False
                )
                yield BarChart(id="strat-bars")
                yield Static("", id="strat-table", classes="strat-text strat-gap")
            with Vertical(id="strat-right"):
                yield Static("step breakdown", classes="strat-title", id="plan-title", markup=False)
                yield Static("", id="strat-plan", classes="strat-text")
                yield Static("", id="strat-search", classes="strat-text strat-gap")
        yield KeyBar()

    def on_resize(self) -> None:
        """Two columns on wide terminals, one below the other on narrow ones."""
        self.set_class(self.size.width >= 120, "-wide")

    def _controls(self, busy: str = "") -> None:
        layout = self.choice.label() if self.choice else "default"
        text = f"model {self.model_id} [m] · layout {layout} [l] · search layouts [f]"
        self.query_one("#strat-controls", Static).update(text + (f" · {busy}" if busy else ""))

    def data_changed(self, data: FabricData) -> None:
        """New fabric: table and plan again; the old search no longer applies."""
        from fabricui.services.loaded import LayoutChoice, parse_layout

        app = self.fabric_app
        self.model_id = app.take_option("model") or self.model_id
        self.choice = None
        layout = app.take_option("layout")
        if layout:
            self.choice = parse_layout(layout, LayoutChoice())
        self.plans = []
        self.query_one("#strat-search", Static).update("")
        self.refresh_all()
        if app.take_option("search"):
            self.action_search()

    def refresh_all(self) -> None:
        """Recompute the decision table and the plan."""
        data = self.data
        if data is None:
            return
        self._controls("computing...")
        self.query_one(BarChart).show_message("computing...")
        self._table(data, self.model_id)
        self._plan(data, self.model_id, self.choice)

    @work(
        thread=True,
        exclusive=True,
        group="strategies-table",
        exit_on_error=False,
        description="decision table",
    )
    def _table(self, data: FabricData, model_id: str) -> None:
        from fabricui.errors import EngineError

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
    def _plan(self, data: FabricData, model_id: str, choice: LayoutChoice | None) -> None:
        if choice is None:  # the default layout is a small search: off the UI thread
            choice = data.default_layout(model_id)
        plan = data.plan(model_id, choice)
        if not get_current_worker().is_cancelled:
            self.post_message(self.PlanReady(data, choice, plan))

    @work(
        thread=True,
        exclusive=True,
        group="strategies-search",
        exit_on_error=False,
        description="layout search",
    )
    def _search(self, data: FabricData, model_id: str, dp_strategy: str | None) -> None:
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
        from fabricui.units import format_time_us

        chart.set_bars(
            decision_bars(table),
            marker=table.step_us,
            marker_label=f"compute {format_time_us(table.step_us)}",
        )
        out.update(self._decision_renderable(table))

    def _decision_renderable(self, table: DecisionTable) -> Table:
        grid = Table(
            title=(
                f"decision table: {table.model}, each strategy alone on {table.degree} GPUs, "
                f"{table.microbatches} x {table.seq_len} tokens per GPU"
            ),
            title_justify="left",
            box=None,
            padding=(0, 1),
            pad_edge=False,
            caption=_caption(table),
            caption_justify="left",
        )
        for name in ("strategy", "intra comm", "OK intra", "inter comm", "OK inter"):
            grid.add_column(name, no_wrap=True)
        tones = {"yes": "green", "marginal": "yellow", "no": "red"}
        for row in table.rows:
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
                Text(row.intra_verdict, style=tones.get(row.intra_verdict, "")),
                _comm_cell(row.comm_us_inter, table.step_us),
                Text(row.inter_verdict, style=tones.get(row.inter_verdict, "")),
            )
        return grid

    @on(PlanReady)
    def plan_ready(self, message: PlanReady) -> None:
        """The step breakdown and the operations of the layout."""
        if message.data is not self.data:
            return
        plan = self.plan = message.plan
        self.choice = message.choice
        searching = any(w.group == "strategies-search" and w.is_running for w in self.workers)
        self._controls("searching layouts..." if searching else "")
        self.query_one("#plan-title", Static).update(f"step breakdown: {describe_layout(plan)}")
        self.query_one("#strat-plan", Static).update(
            plan_renderable(plan, self.data.fabric.gpu.name)
        )

    @on(SearchReady)
    def search_ready(self, message: SearchReady) -> None:
        """The ranked layouts."""
        if message.data is not self.data:
            return
        self._controls()
        self.plans = message.plans
        grid = Table(
            title="fastest layouts that fit in memory",
            title_justify="left",
            box=None,
            padding=(0, 1),
            pad_edge=False,
        )
        for name in ("#", "tp", "cp", "pp", "dp", "mb", "recomp", "step", "MFU", "GB", "why"):
            grid.add_column(name, justify="left" if name == "why" else "right", no_wrap=True)
        for i, p in enumerate(self.plans, 1):
            lay = p.layout
            grid.add_row(
                str(i),
                str(lay.tp),
                str(lay.cp),
                str(lay.pp),
                str(lay.dp),
                str(lay.microbatches),
                p.recipe.recompute,
                _time(p.step_us),
                f"{p.mfu:.0%}",
                f"{getattr(p, 'memory_GB', 0.0):.0f}",
                "; ".join(p.reasons()[:2]),
            )
        self.query_one("#strat-search", Static).update(grid)

    # --- actions ---------------------------------------------------------------------------

    def action_pick_model(self) -> None:
        """Choose the model."""
        data = self.data
        if data is None:
            return

        def done(model_id: str | None) -> None:
            if model_id and model_id != self.model_id:
                self.model_id = model_id
                self.choice = None
                self.plans = []
                self.query_one("#strat-search", Static).update("")
                self.refresh_all()

        choices = [
            (m.id, f"{m.id:<14} {m.params_B:>6g}B  {m.name}")
            for m in sorted(data.catalog.models.values(), key=lambda m: m.params_B)
        ]
        self.app.push_screen(PickerModal("Model", choices, self.model_id), done)

    def action_ask_layout(self) -> None:
        """Ask for TP, PP, EP and the DP flavour."""
        data = self.data
        if data is None or self.choice is None:
            return
        from fabricui.services.loaded import parse_layout
        from fabricui.tui.data import DP_STRATEGIES

        def done(text: str | None) -> None:
            if text and self.choice is not None and self.data is not None:
                self.choice = parse_layout(text, self.choice)
                self._controls("computing...")
                self._plan(self.data, self.model_id, self.choice)

        self.app.push_screen(
            PromptModal(
                "Layout (DP takes the GPUs left over)",
                self.choice.label(),
                f"tpN ppN epN cpN, one of {', '.join(DP_STRATEGIES)}, recompute mode",
                check_layout_text,
            ),
            done,
        )

    def action_search(self) -> None:
        """Rank every valid layout on all GPUs (in a worker)."""
        if self.data is None:
            return
        self._controls("searching layouts...")
        self.query_one("#strat-search", Static).update("searching layouts...")
        # Before the default layout is known: every DP flavour.
        flavour = self.choice.dp_strategy if self.choice else None
        self._search(self.data, self.model_id, flavour)

    def status_text(self) -> str:
        """Model for the sub-title."""
        return self.model_id


def _caption(table: DecisionTable) -> str:
    """Notes on rows that do not apply, strategies not loaded, and the rule of the verdicts."""
    from fabricui.engine.training.table import GOOD_EXPOSED_FRACTION, OK_EXPOSED_FRACTION

    lines = [f"{row.name}: {row.note}" for row in table.rows if not row.applies]
    if table.missing:
        lines.append(
            f"not loaded: {', '.join(table.missing)} (plugin disabled or failed to load; "
            "see the plugins view)"
        )
    lines.append(
        f"comm per step (% of compute: the whole model on one GPU, {table.compute_basis}); "
        f"OK when the part not hidden behind compute is <= {OK_EXPOSED_FRACTION:.0%} of it, "
        f"marginal above {GOOD_EXPOSED_FRACTION:.0%}"
    )
    return "\n".join(lines)
