"""The collectives view: an operation on a group over a size range, as a table and a plot."""

from __future__ import annotations

import json
import shlex
import textwrap
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.widgets import DataTable, Static
from textual.worker import Worker, get_current_worker

from fabricui.errors import ConfigError, FabricError
from fabricui.services.requests import FIRST_GPUS, first_gpus
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.base import ViewScreen, fabric_words
from fabricui.tui.screens.measured import MeasuredModal
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.table_keys import SortedFilteredTable
from fabricui.tui.widgets.filter_bar import FilterBar, row_matches, table_bindings
from fabricui.tui.widgets.health_line import HealthLine
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.ring_stepper import RingStepper
from fabricui.tui.widgets.size_plot import SizePlot
from fabricui.tui.widgets.title_bar import TitleBar
from fabricui.units import (
    format_bytes,
    format_time_us,
    parse_message_size,
    parse_size_sweep,
)
from fabricui.vocabulary import GROUPS, OPS, pick_label

if TYPE_CHECKING:
    from fabricui.engine.collectives import Prediction
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nccl_tests import ResultRun
    from fabricui.services.loaded import LoadedFabric

#: Size range the view starts with (nccl-tests' ``-b 8 -e 16G -f 2``).
DEFAULT_RANGE = "8:16G"
#: What each group means, for the picker.
GROUP_TEXT = {
    "all": "every GPU of the fabric",
    "host": "the GPUs of host 0",
    "node": "the GPUs of host 0",
    "domain": "the GPUs of scale-up domain 0",
    "per-node": "GPU 0 of every host (one GPU per host)",
}


def group_text(group: str, hosts_per_domain: int = 1) -> str:
    """What a group is, in words (``gpus:N``: the first N GPUs); the scale-up domain is
    said as what it is on this fabric (one host's GPUs, or a rack of several hosts)."""
    n = first_gpus(group)
    if n is not None:
        return f"the first {n} GPUs (ranks 0..{n - 1})"
    if group == "domain":
        extent = (
            f"{hosts_per_domain} hosts on one scale-up fabric, as a rack"
            if hosts_per_domain > 1
            else "here one host: the GPUs of node"
        )
        return f"{GROUP_TEXT[group]} ({extent})"
    return GROUP_TEXT[group]


def group_label(group: str, gpus: int) -> str:
    """The group as the controls line shows it: ``all, 32 GPUs``, ``first 16 GPUs``."""
    return f"first {gpus} GPUs" if first_gpus(group) is not None else f"{group}, {gpu_count(gpus)}"


def gpu_count(gpus: int, aligned: bool = False) -> str:
    """``8 GPUs``, ``1 GPU`` (``aligned``: ``1 GPU `` keeps its digit under the others' in
    a right-aligned column)."""
    return f"{gpus} GPU" + ("s" if gpus != 1 else " " * aligned)


def check_range(text: str) -> str | None:
    """Error line for a bad size range (``A:B`` or a single size), else None."""
    try:
        parse_range(text)
    except FabricError as exc:
        return exc.message
    return None


def parse_range(text: str) -> list[int]:
    """``8:16G`` -> sizes doubling from 8 to 16 GiB; ``1G`` -> one size.

    Raises:
        ConfigError: Malformed sizes or an empty range.
    """
    sizes = parse_size_sweep(text) if ":" in text else [parse_message_size(text, "size")]
    if not sizes or sizes[0] < 1:
        raise ConfigError(f"invalid size range {text!r}: use A:B such as 8:16G, or one size")
    if len(sizes) > 64:
        raise ConfigError(f"{len(sizes)} sizes in {text!r}: at most 64")
    return sizes


def check_nccl(text: str) -> str | None:
    """Error line for bad NCCL settings (``2.21 NCCL_ALGO=ring``), else None."""
    from fabricui.services.collective import parse_nccl_settings

    try:
        parse_nccl_settings(text)
    except FabricError as exc:
        return exc.message
    return None


def check_measured(
    value: str,
    catalog: Catalog | None = None,
    op: str | None = None,
    read: dict[str, ResultRun] | None = None,
) -> str | None:
    """Error line for a measured output (path or paste) that cannot be read, or a
    measurements entry naming hardware ``catalog`` does not hold, else None. The run of
    ``op`` is preferred (``measured_run``); ``read`` keeps the run read, by ``value``: the
    view shows it without reading the file or the paste again."""
    from fabricui.services.collective import measured_run

    try:
        run = measured_run(value, op, catalog=catalog)
        if read is not None:
            read[value] = run
    except FabricError as exc:
        return exc.message
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    return None


def advice_lines(text: str, width: int) -> list[str]:
    """``text`` wrapped at spaces into at most two lines of ``width``; text beyond them is
    cut, and the second line ends in an ellipsis that says so."""
    lines = textwrap.wrap(text, width, break_on_hyphens=False) or [""]
    if len(lines) <= 2:
        return lines
    cut = glyphs().ellipsis
    return [lines[0], lines[1][: width - len(cut)] + cut]


#: Column names as the controls line says them (the table's order).
SORT_NAMES = ("size", "time", "algbw", "busbw", "NCCL's pick", "channels", "best", "gain")
#: The measured columns, added while a measured run is shown: key, label, width, and the
#: width on a narrow screen.
MEASURED_COLUMNS = (("meas", "measured", 10, 8), ("err", "error", 7, 6))
#: Columns a narrow screen leaves out while a measured run is shown, so the measured time
#: and the error fit: the line under the table names the cursor size's best pick.
NARROW_MEASURED_LEAVES_OUT = ("best", "gain")
#: The table's columns: key, label and width; then label and width on a narrow screen
#: (None: left out there, as algbw is: busbw and the size carry it).
COLUMNS: tuple[tuple[str, str, int, str | None, int], ...] = (
    ("size", "size", 9, "size", 7),
    ("time", "time", 9, "time", 8),
    ("algbw", "algbw GB/s", 10, None, 0),
    ("busbw", "busbw GB/s", 10, "busbw", 7),
    ("algo", "NCCL's pick", 15, "NCCL's pick", 15),
    ("ch", "ch", 3, "ch", 3),
    ("best", "best pick", 15, "best pick", 15),
    ("gain", "gain", 6, "gain", 6),
)
#: Narrowest screen that shows every column at its full width [columns]: the widths, a
#: cell padding each side and the scrollbar.
WIDE_TABLE_COLUMNS = sum(width + 2 for *_, width, _, _ in COLUMNS) + 2


class CollectivesScreen(SortedFilteredTable, ViewScreen):
    """Per size: NCCL's pick (time, algbw, busbw, algorithm, channels) and the best pick
    with its gain, plus the stepper.

    ``o`` picks the operation, ``g`` the group and ``e`` the size range, ``v`` the NCCL
    release and settings; ``m`` opens or pastes a measured nccl-tests output to show it
    beside the prediction with the error per size, and a line under the controls says what
    the run ran on when it is not the topology's GPU on its node (as ``calibrate`` says
    it: assumed, or a caution). The table's cursor picks the size the
    plot highlights and the line under the table tells how to force that size's best pick.
    The ring stepper shows the chosen operation step by step: ``n``/``b``
    step, ``p`` plays, ``r`` resets.
    """

    VIEW = "collectives"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "o",
            "pick_op",
            "Operation",
            id="collectives.op",
            tooltip="Choose the collective operation",
        ),
        Binding(
            "g",
            "pick_group",
            "Group",
            id="collectives.group",
            tooltip="All GPUs, one node, or one GPU per node",
        ),
        Binding(
            "e",
            "ask_range",
            "Sizes",
            id="collectives.sizes",
            tooltip="Size range A:B (doubling) or one size",
        ),
        Binding(
            "v",
            "ask_nccl",
            "NCCL",
            id="collectives.nccl",
            tooltip="NCCL release and settings: 2.21 NCCL_ALGO=ring ...",
        ),
        Binding(
            "m",
            "ask_measured",
            "Measured",
            id="collectives.measured",
            tooltip="Open or paste an nccl-tests output: measured beside predicted",
        ),
        *table_bindings("collectives", shown=False, header_clicks=True),
        Binding(
            "n", "stepper_step(1)", "Step", id="stepper.next", tooltip="Ring stepper: next step"
        ),
        Binding(
            "b",
            "stepper_step(-1)",
            "Back",
            show=False,
            id="stepper.back",
            tooltip="Ring stepper: previous step",
        ),
        Binding(
            "p",
            "stepper_play",
            "Play",
            id="stepper.play",
            tooltip="Ring stepper: play or pause the animation",
        ),
        Binding(
            "r",
            "stepper_reset",
            "Reset",
            show=False,
            id="stepper.reset",
            tooltip="Ring stepper: back to the start",
        ),
    ]
    """Operation, group, sizes and the ring stepper."""

    DEFAULT_CSS = """
    CollectivesScreen #coll-controls {
        height: auto; max-height: 2; padding: 0 1; color: $text-muted;
    }
    CollectivesScreen #coll-measured {
        display: none; height: auto; max-height: 2; padding: 0 1; color: $text-muted;
    }
    CollectivesScreen #coll-measured.-caution { color: $warning; }
    CollectivesScreen #coll-table { height: 1fr; }
    CollectivesScreen #coll-advice { height: 1; padding: 0 1; color: $text-muted; }
    CollectivesScreen #coll-bottom { height: 9; border-top: hkey $primary-darken-2; }
    CollectivesScreen.-tall #coll-bottom { height: 14; }
    CollectivesScreen RingStepper { width: 56; }
    CollectivesScreen SizePlot { width: 1fr; }
    """

    op: var[str] = var("all_reduce", init=False)
    """Operation (nccl-tests name)."""
    group: var[str] = var("all", init=False)
    """Group id (``all``, ``node``, ``per-node``)."""
    size_range: var[str] = var(DEFAULT_RANGE, init=False)
    """Size range text (``8:16G`` or one size)."""
    nccl: var[str] = var("", init=False)
    """NCCL release and settings typed at ``v`` (``2.21 NCCL_ALGO=ring``); empty: the
    newest release modelled. The shell's NCCL_* variables apply under them."""

    class PredictionReady(Message):
        """The engine's prediction for the current choices."""

        def __init__(
            self, data: LoadedFabric, prediction: Prediction, notes: tuple[str, ...] = ()
        ) -> None:
            self.data = data
            """Fabric it was computed on."""
            self.prediction = prediction
            """Per-size results."""
            self.notes = notes
            """What the prediction assumed that a job may set otherwise (``view_notes``)."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.prediction: Prediction | None = None
        self._notes_shown: set[str] = set()
        """The engine's prediction shown."""
        self.measured: ResultRun | None = None
        """A measured nccl-tests run shown beside the prediction (``m``)."""
        self.measured_name = ""
        """Where the measured run came from (a file name, or ``pasted``)."""
        self.measured_value = ""
        """The measured run as given: its path, or the pasted output (a saved view and
        going back read it again)."""
        self._predict_pending = False
        self._layout = (False, False)
        """What the table's columns are laid out for: (narrow screen, measured run shown)."""

    def watch_op(self, op: str) -> None:
        """A new operation: the stepper shows it; predict again."""
        if self.is_mounted:
            self.query_one(RingStepper).op = op
        self._request_predict()

    def watch_group(self) -> None:
        """A new group: predict again."""
        self._request_predict()

    def watch_size_range(self) -> None:
        """A new size range: predict again."""
        self._request_predict()

    def watch_nccl(self, nccl: str) -> None:
        """New NCCL settings: predict again; a release past the newest modelled (``2.99``)
        is said, as ``collective --nccl`` says it, not priced as the newest without a word."""
        from fabricui.services.collective import newer_than_modelled

        words = nccl.split()
        warning = newer_than_modelled(words[0] if words and "=" not in words[0] else None)
        if warning:
            self.app.notify(warning, title="NCCL", severity="warning")
        self._request_predict()

    def _request_predict(self) -> None:
        """Predict once after the current handler, however many choices it changed."""
        if not self._predict_pending:
            self._predict_pending = True
            self.call_next(self._predict_now)

    def _predict_now(self) -> None:
        if not self._predict_pending:  # predicted already (``data_changed``)
            return
        self._predict_pending = False
        self.predict()

    def compose(self) -> ComposeResult:
        """Title bar, what --health changed, the controls line, what the measured run ran
        on (when that is worth saying), table, stepper and plot, key bar."""
        yield TitleBar()
        yield HealthLine()
        yield Static("", id="coll-controls", markup=False)
        yield Static("", id="coll-measured", markup=False)
        yield FilterBar(id="coll-filter")
        table: DataTable[object] = DataTable(id="coll-table", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static("", id="coll-advice", markup=False)
        with Horizontal(id="coll-bottom"):
            yield RingStepper(id="stepper")
            with Vertical():
                yield SizePlot(id="plot")
        yield KeyBar()

    def on_mount(self) -> None:
        """Columns (fixed widths: auto widths would depend on when rows arrive), then
        whatever is loaded."""
        table = self.query_one(DataTable)
        self._add_columns(table)
        table.focus()
        super().on_mount()

    def _wanted_layout(self) -> tuple[bool, bool]:
        """(narrow screen, measured run shown): what the table's columns depend on."""
        return self.size.width < WIDE_TABLE_COLUMNS, self.measured is not None

    def _add_columns(self, table: DataTable[object]) -> None:
        """The columns for the screen's width: on a narrow one (80 columns) without algbw
        and narrower size, time and busbw, so NCCL's pick, the best one and the gain show;
        with a measured run, its time and error instead of the best pick and the gain."""
        self._layout = self._wanted_layout()
        narrow, measured = self._layout
        for key, label, width, narrow_label, narrow_width in COLUMNS:
            if not narrow:
                table.add_column(label, key=key, width=width)
            elif narrow_label is not None and not (measured and key in NARROW_MEASURED_LEAVES_OUT):
                table.add_column(narrow_label, key=key, width=narrow_width)
        if measured:
            for key, label, width, narrow_width in MEASURED_COLUMNS:
                table.add_column(label, key=key, width=narrow_width if narrow else width)

    def _lay_out_again(self, table: DataTable[object]) -> bool:
        """Rebuild the columns when the width crossed the narrow one or a measured run came
        or went; True when it did."""
        if self._wanted_layout() == self._layout:
            return False
        table.clear(columns=True)
        self._add_columns(table)
        return True

    def on_resize(self) -> None:
        """Taller terminals get a taller stepper and plot; crossing the narrow width lays
        the table's columns out again."""
        self.set_class(self.size.height >= 36, "-tall")
        if not self.is_mounted:
            return
        keep = self._cursor_key()  # the columns' rebuild empties the table
        if self._lay_out_again(self.query_one(DataTable)):
            self._fill_table(keep)
            self._controls()
        if self.is_mounted:
            self._advice()  # wrapped for the new width
            self._measured_note()

    def data_changed(self, data: LoadedFabric) -> None:
        """New fabric: predict again (with the command line's choices the first time)."""
        app = self.fabric_app
        self.op = app.take_option("op") or self.op
        group = app.take_option("group")
        self.group = group or self.group
        self.size_range = app.take_option("sizes") or self.size_range
        self.nccl = app.take_option("nccl") or self.nccl
        if measured := app.take_option("measured"):
            self._read_measured(measured)
            if group is None:  # priced for the run's rank count, as when opened with m
                self._group_like_measured(data, say=False)
        if data.fabric.nodes < 2 and self.group == "per-node":
            self.group = "all"
        self._keep_group_in(data)
        # At once, not after this handler: a view built ahead draws the figures computed
        # ahead before it is shown (the choices' watchers asked for it after the handler).
        self._predict_pending = True
        self._predict_now()

    def figures_ahead(self, data: LoadedFabric) -> None:
        """The prediction for the choices given at start, else the view's own (none for a
        measured run given at start: its file is read once shown)."""
        from fabricui.services.collective import view_prediction

        app = self.fabric_app
        if app.peek_option("measured"):
            return
        group = app.peek_option("group") or self.group
        if data.fabric.nodes < 2 and group == "per-node":
            group = "all"
        sizes = parse_range(app.peek_option("sizes") or self.size_range)
        op, nccl = app.peek_option("op") or self.op, app.peek_option("nccl") or self.nccl
        view_prediction(data, op, group, sizes, nccl)

    def _keep_group_in(self, data: LoadedFabric) -> None:
        """A group the fabric cannot hold (``gpus:N`` beyond its GPUs, a malformed name
        from a saved view) becomes ``all``, said once."""
        try:
            data.group_ranks(self.group)
        except ConfigError as exc:
            self.app.notify(f"{exc.message}; showing all", title="group", severity="warning")
            self.group = "all"

    def _controls(self, busy: bool = False, note: str = "") -> None:
        data = self.data
        dot = glyphs().dot
        n = len(data.group_ranks(self.group)) if data is not None else 0
        sizes = "measured" if self.measured is not None else self.size_range
        note = "computing..." if busy else note
        text = (
            f"op {self.op} [o] {dot} group {group_label(self.group, n)} [g] {dot} sizes "
            f"{sizes} [e] {dot} {self._library()} [v]" + (f" {dot} {note}" if note else "")
        )
        if len(text) > self.size.width - 2:  # the choices without their names fit one line
            text = text.replace("op ", "", 1).replace("group ", "", 1).replace("sizes ", "", 1)
        if self.measured is not None:
            ranks = self.measured.nranks
            text += f" {dot} measured: {self.measured_name}"
            if ranks and ranks != n:
                text += f" ({ranks} ranks, not {n})"
            if self.measured.launched:
                text += f", {self.measured.launched}"
            text += " [m]"
        if self.sort_column or self.reverse:
            order = "descending" if self.reverse else "ascending"
            text += f" {dot} sorted by {SORT_NAMES[self.sort_column]}, {order} [<>I]"
        self.query_one("#coll-controls", Static).update(text)
        self._measured_note()

    def _measured_note(self) -> None:
        """The line under the controls saying what the measured run ran on, as
        ``calibrate`` says it: ``assumed:`` another part of the topology's architecture on
        its node, ``caution:`` other hardware and which (another architecture, node or
        network: its errors are not the model's). Hidden when there is nothing to say; a
        text longer than two lines ends in an ellipsis (the whole is the tooltip)."""
        from fabricui.services.collective import measured_hardware

        line = self.query_one("#coll-measured", Static)
        data, run = self.data, self.measured
        text, caution = "", False
        if data is not None and run is not None:
            match = measured_hardware(data, run)
            if match.caution:
                text, caution = f"caution: {match.caution}", True
            elif match.assumed:
                text = f"assumed: {match.assumed}"
        line.display = bool(text)
        line.set_class(caution, "-caution")
        line.update("\n".join(advice_lines(text, max(20, self.size.width - 2))) if text else "")
        line.tooltip = text or None

    def _library(self) -> str:
        """The library whose pick the table shows, with the settings typed."""
        prediction = self.prediction
        library = prediction.choice.library if prediction and prediction.choice else "NCCL"
        settings = " ".join(w for w in self.nccl.split() if "=" in w)  # as typed
        return library + (f" {settings}" if settings else "")

    def predict(self) -> None:
        """Ask the engine for the current choices (in a worker; drawn at once when computed
        already)."""
        from fabricui.services.collective import view_notes, view_prediction

        if self.data is None:
            return
        self._controls(busy=True)
        sizes = [] if self.measured is not None else parse_range(self.size_range)
        data, op, group, nccl, measured = self.data, self.op, self.group, self.nccl, self.measured
        # Drawn at once when computed already (ahead of the first frame, or before).
        prediction = data.known(lambda: view_prediction(data, op, group, sizes, nccl, measured))
        if prediction is None:
            self._predict(data, op, group, sizes, nccl, measured)
            return
        self.workers.cancel_group(self, "collective")
        notes = view_notes(data, group, nccl, op)
        self.prediction_ready(self.PredictionReady(data, prediction, notes))

    @work(
        thread=True,
        exclusive=True,
        group="collective",
        exit_on_error=False,
        description="collective",
    )
    def _predict(
        self,
        data: LoadedFabric,
        op: str,
        group: str,
        sizes: list[int],
        nccl: str,
        measured: ResultRun | None,
    ) -> None:
        from fabricui.services.collective import view_notes, view_prediction

        prediction = view_prediction(data, op, group, sizes, nccl, measured)
        notes = view_notes(data, group, nccl, op)
        if not get_current_worker().is_cancelled:
            self.post_message(self.PredictionReady(data, prediction, notes))

    def worker_failed(self, worker: Worker[object]) -> None:
        """A refused or failed prediction (the error is on screen) leaves neither
        "computing..." nor the figures of other choices behind."""
        if worker.group != "collective" or worker.is_cancelled:
            return
        self.prediction = None
        self.query_one(DataTable).clear()
        self.query_one(SizePlot).set_data([], [], "busbw GB/s")
        self._controls(note="not computed (see the error)")

    @on(PredictionReady)
    def prediction_ready(self, message: PredictionReady) -> None:
        """Fill the table and the plot."""
        if message.data is not self.data:
            return

        self.prediction = message.prediction
        self._fill_table()
        self._plot()
        self._follow_cursor()
        self._controls()
        for note in message.notes:
            if note not in self._notes_shown:  # once a session
                self._notes_shown.add(note)
                self.app.notify(note, title="assumed", timeout=10)

    def _plot(self) -> None:
        """busbw per size: NCCL's pick, and the measured run beside it when one is shown."""
        pred = self.prediction
        if pred is None:
            return
        plot = self.query_one(SizePlot)
        measured = self._measured_busbw()
        if measured is None:
            plot.set_data(list(pred.size_bytes), list(pred.busbw_GBps), "busbw GB/s")
        else:
            plot.set_data(
                list(pred.size_bytes),
                list(pred.busbw_GBps),
                "busbw GB/s: predicted | measured",
                measured,
            )

    def _measured_busbw(self) -> list[float] | None:
        """Measured busbw at each predicted size (0 where not measured), or None."""
        from fabricui.services.collective import bus_factor

        run, pred = self.measured, self.prediction
        if run is None or pred is None:
            return None
        times = {int(r.size_bytes): r.time_us for r in run.rows if r.time_us > 0}
        factor = bus_factor(pred.op, pred.nranks)
        return [
            float(s) / times[int(s)] / 1e3 * factor if int(s) in times else 0.0
            for s in pred.size_bytes
        ]

    def _cursor_key(self) -> str | None:
        """The row key (the size) under the table's cursor, or None."""
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def _fill_table(self, keep: str | None = None) -> None:
        """The prediction's rows, filtered by the filter's words and sorted by the chosen
        column (row keys are the sizes, so the plot follows the cursor whatever the order);
        the cursor stays on its size (``keep``: the one it was on before the table was
        emptied)."""
        from fabricui.services.collective import measured_errors

        pred = self.prediction
        if pred is None:
            return
        table = self.query_one(DataTable)
        keep = self._cursor_key() or keep
        self._lay_out_again(table)
        self._label_pick_column(table)
        errors = (
            measured_errors(pred.size_bytes, pred.time_us, self.measured) if self.measured else {}
        )
        choice = pred.choice
        rows = []
        for i, (size, t, alg, bus, algo) in enumerate(
            zip(pred.size_bytes, pred.time_us, pred.algbw_GBps, pred.busbw_GBps, pred.algorithm)
        ):
            channels, best, gain, gain_value = "", "", "", 0.0
            if choice is not None:
                nc = choice.nccl.channels[i]
                channels = "" if nc is None else str(nc)
                if choice.env[i]:
                    best = choice.best.labels[i]
                    gain_value = float(t) / float(choice.best.time_us[i]) - 1.0
                    gain = f"{100 * gain_value:.0f}%"
                else:
                    best = "same"
            cells = [format_bytes(size), format_time_us(float(t)), f"{alg:.2f}", f"{bus:.2f}"]
            cells += [algo, channels, best, gain]
            meas = errors.get(int(size))
            if self.measured is not None:
                error = f"{round(100 * meas[1]):+d}%" if meas else ""
                cells += [format_time_us(meas[0]), error] if meas else ["", ""]
            if row_matches(cells, self.filter_text):
                sort_keys = (
                    float(size),
                    float(t),
                    float(alg),
                    float(bus),
                    str(algo),
                    float(channels or 0),
                    best,
                    gain_value,
                )
                rows.append((sort_keys[self.sort_column], i, cells, str(int(size))))
        rows.sort(key=lambda r: (r[0], r[1]), reverse=self.reverse)
        table.clear()
        keys = [*(c[0] for c in COLUMNS), *(c[0] for c in MEASURED_COLUMNS)]
        shown = [keys.index(str(column.key.value)) for column in table.ordered_columns]
        left = (4, 6)  # NCCL's pick and the best pick; the others are figures
        for _, _, cells, key in rows:
            row = [cells[c] if c in left else Text(cells[c], justify="right") for c in shown]
            table.add_row(*row, key=key)
        if keep is not None and keep in table.rows:
            table.move_cursor(row=table.get_row_index(keep))

    def _label_pick_column(self, table: DataTable[object]) -> None:
        """Head the pick column with the library that picks (``NCCL's pick``, ``RCCL's
        pick``; ``pick`` for a vendor's library whose tuner is not modelled)."""
        pred = self.prediction
        library = pred.choice.library if pred is not None and pred.choice is not None else None
        column = table.columns.get("algo")  # type: ignore[call-overload]
        label = pick_label(library)
        if column is not None and column.label.plain != label:
            column.label = Text(label)
            table.refresh()

    def _advice_text(self, i: int) -> str:
        """How to make the library run size ``i``'s best pick, in words."""
        pred = self.prediction
        if pred is None or pred.choice is None:
            return ""
        choice = pred.choice
        size = format_bytes(pred.size_bytes[i])
        if not choice.env[i]:
            return f"{size}: {choice.library} already runs the best pick"
        setting = " ".join(f"{k}={v}" for k, v in choice.env[i].items())
        line = (
            f"{size}: best {choice.best.labels[i]} in "
            f"{format_time_us(float(choice.best.time_us[i]))}: {setting}"
        )
        return line + (f" (caution: {choice.caution[i]})" if choice.caution[i] else "")

    def _advice(self) -> None:
        """The lines under the table: how to make NCCL run the cursor size's best pick.

        The settings are only right whole (``NCCL_ALGO`` without its ``NCCL_PROTO``
        changes nothing when NCCL already runs that algorithm), so a line too long for the
        screen wraps onto a second one, and text beyond two lines ends in an ellipsis (the
        whole of it is the line's tooltip and one of ``y``'s items). The height is the most
        any size needs, so that moving the cursor does not move the table."""
        pred, table = self.prediction, self.query_one(DataTable)
        advice = self.query_one("#coll-advice", Static)
        width = max(20, self.size.width - 2)  # the line's padding
        line, rows = "", 1
        if pred is not None and table.row_count:
            texts = [self._advice_text(i) for i in range(len(pred.size_bytes))]
            rows = max(len(advice_lines(text, width)) for text in texts)
            index = self._cursor_index()
            line = texts[index] if index is not None else ""
        advice.styles.height = min(2, rows)
        advice.update("\n".join(advice_lines(line, width)))
        advice.tooltip = line or None

    def _cursor_index(self) -> int | None:
        """The prediction's index of the size under the table's cursor, or None."""
        pred, table = self.prediction, self.query_one(DataTable)
        if pred is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        sizes = [str(int(s)) for s in pred.size_bytes]
        return sizes.index(key) if key in sizes else None

    def _follow_cursor(self) -> None:
        """Highlight the cursor row's size on the plot and say how to get its best pick."""
        self._advice()
        index, pred = self._cursor_index(), self.prediction
        self.query_one(SizePlot).select(index)
        if index is not None and pred is not None:  # the stepper draws the cursor row's
            self.query_one(RingStepper).algorithm = str(pred.algorithm[index])

    @on(DataTable.RowHighlighted)
    def row_highlighted(self) -> None:
        """The plot follows the table's cursor."""
        self._follow_cursor()

    def sort_column_count(self) -> int:
        return len(SORT_NAMES)

    def header_sort_column(self, event: DataTable.HeaderSelected) -> int | None:
        """By the header's key: a narrow table leaves algbw out, and the measured columns
        are not sorted on."""
        keys = [key for key, *_ in COLUMNS]
        key = str(event.column_key.value)
        return keys.index(key) if key in keys else None

    def resorted(self) -> None:
        self._fill_table()
        self._controls()

    def refiltered(self) -> None:
        self._fill_table()

    # --- choices ---------------------------------------------------------------------------

    def action_pick_op(self) -> None:
        """Choose the operation."""

        def done(op: str | None) -> None:
            if op and op != self.op:
                self.fabric_app.remember_visit()
                self.op = op

        choices = [(op, op) for op in OPS]
        self.app.push_screen(PickerModal("Collective operation", choices, self.op), done)

    def action_pick_group(self) -> None:
        """Choose the group."""
        data = self.data
        if data is None:
            return

        def done(group: str | None) -> None:
            if group and group != self.group:
                self.fabric_app.remember_visit()
                self.group = group

        groups = [*GROUPS, *self._first_gpus_groups()]
        per = data.fabric.hosts_per_domain
        choices = [
            (g, (g, gpu_count(len(data.group_ranks(g)), aligned=True), group_text(g, per)))
            for g in groups
        ]
        self.app.push_screen(PickerModal("Group of GPUs", choices, self.group), done)

    def _first_gpus_groups(self) -> list[str]:
        """The ``gpus:N`` groups worth offering: the one shown, and the measured run's
        rank count when no named group has it."""
        data, run = self.data, self.measured
        out = [self.group] if first_gpus(self.group) is not None else []
        if data is not None and run is not None and run.nranks:
            counts = {len(data.group_ranks(g)) for g in GROUPS}
            fits = run.nranks <= len(data.group_ranks("all"))
            if run.nranks not in counts and fits and f"{FIRST_GPUS}{run.nranks}" not in out:
                out.append(f"{FIRST_GPUS}{run.nranks}")
        return out

    def action_ask_range(self) -> None:
        """Ask for the size range."""

        def done(text: str | None) -> None:
            if text and text != self.size_range:
                self.fabric_app.remember_visit()
                self.size_range = text

        self.app.push_screen(
            PromptModal(
                "Sizes",
                self.size_range,
                "A:B doubles from A to B (8:16G), or one size (1G)",
                check_range,
            ),
            done,
        )

    def action_ask_nccl(self) -> None:
        """Ask for the NCCL release and settings; what the prediction would refuse of them
        is refused in the prompt."""

        def done(text: str | None) -> None:
            if text is not None:
                self.nccl = text

        self.app.push_screen(
            PromptModal(
                "NCCL release and settings",
                self.nccl,
                "e.g. 2.21 NCCL_ALGO=ring NCCL_PROTO=^LL128 (empty: the newest release)",
                self._check_nccl,
            ),
            done,
        )

    def _check_nccl(self, text: str) -> str | None:
        """Error line for NCCL settings the prediction of the operation and group shown
        would refuse (``NCCL_ALGO=nvls`` where NVLS does not run: as ``collective --env``
        says it), else None."""
        data = self.data
        if data is None:
            return check_nccl(text)
        from fabricui.services.collective import check_view_nccl

        try:
            check_view_nccl(data, self.op, self.group, text, self.measured)
        except FabricError as exc:
            return exc.message
        return None

    def action_ask_measured(self) -> None:
        """Open or paste a measured nccl-tests output (again: drop the one shown)."""
        if self.measured is not None:
            self.measured, self.measured_name, self.measured_value = None, "", ""
            self._request_predict()
            return

        catalog = self.fabric_app.catalog  # a misspelt gpu id refused, as calibrate does
        op = self.op
        read: dict[str, ResultRun] = {}  # the run the check read (off the event loop)

        def done(value: str | None) -> None:
            if value:
                self._read_measured(value, read.get(value))
                if self.data is not None:
                    self._group_like_measured(self.data)

        def check(value: str) -> str | None:
            return check_measured(value, catalog, op, read)

        self.app.push_screen(MeasuredModal(check), done)

    def _group_like_measured(self, data: LoadedFabric, say: bool = True) -> None:
        """Compare like with like: when the measured run has another rank count than the
        group shown, show a named group with the run's count, else the run's count of first
        GPUs (``gpus:N``, as ``--gpus N``), and say so (``say``); a run larger than the
        fabric stays beside the group shown (its header says both counts)."""
        from fabricui.services.collective import group_of_ranks

        run = self.measured
        if run is None or not run.nranks:
            return
        if len(data.group_ranks(self.group)) == run.nranks:
            return
        same = group_of_ranks(data, run.nranks)
        if same is not None:
            self.group = same
            if say:
                self.app.notify(
                    f"group {group_label(same, run.nranks)}, as the measured run",
                    title="measured",
                )

    def _read_measured(self, value: str, run: ResultRun | None = None) -> None:
        """Show the measured run of ``value`` (a path or a pasted output) beside the
        prediction, switching to the run's own operation (the one on screen only for an
        output that names none); one that cannot be read is said in one line and none is
        shown. ``run``: the run of ``value`` read already (by the ``m`` dialog's check)."""
        from fabricui.services.collective import measured_run

        try:
            if run is None:
                run = measured_run(value, self.op, catalog=self.fabric_app.catalog)
        except FabricError as exc:
            self.measured, self.measured_name, self.measured_value = None, "", ""
            self.app.notify(exc.message, title="measured", severity="error")
            return
        self.measured = run
        self.measured_value = value
        pasted = "\n" in value.strip()
        self.measured_name = "pasted" if pasted else value.strip().rsplit("/", 1)[-1]
        if run.op and run.op != self.op:  # compare like with like: the run's own collective
            self.app.notify(f"operation {run.op}, as the measured run", title="measured")
            self.op = run.op
        self._request_predict()

    # --- stepper ---------------------------------------------------------------------------

    def action_stepper_step(self, step: int) -> None:
        """One step forward or back."""
        stepper = self.query_one(RingStepper)
        stepper.playing = False
        stepper.step += step

    def action_stepper_play(self) -> None:
        """Play or pause."""
        stepper = self.query_one(RingStepper)
        stepper.playing = not stepper.playing

    def action_stepper_reset(self) -> None:
        """Back to the start."""
        stepper = self.query_one(RingStepper)
        stepper.playing = False
        stepper.step = 0

    def restore_state(self, state: dict[str, str]) -> None:
        """The operation, group, sizes, NCCL settings and measured run shown before
        (going back)."""
        self.op = state.get("op", self.op)
        self.group = state.get("group", self.group)
        if self.data is not None:
            self._keep_group_in(self.data)
        self.size_range = state.get("sizes", self.size_range)
        self.nccl = state.get("nccl", "")
        measured = state.get("measured", "")
        if measured != self.measured_value:
            if measured:
                self._read_measured(measured)
            else:
                self.measured, self.measured_name, self.measured_value = None, "", ""
                self._request_predict()

    def view_state(self) -> dict[str, str]:
        """Operation, group and sizes; the NCCL settings and the measured run (its path or
        pasted output) when there are some, so a saved view and going back show them."""
        state = {"op": self.op, "group": self.group, "sizes": self.size_range}
        if self.nccl:
            state["nccl"] = self.nccl
        if self.measured is not None:
            state["measured"] = self.measured_value
        return state

    def copy_items(self) -> list[tuple[str, str]]:
        """The ``fabricui collective`` command and the prediction as JSON."""
        data, prediction = self.data, self.prediction
        if data is None or prediction is None:
            return []
        from fabricui.services.collective import nccl_words, prediction_rows

        sizes = (
            ["--sweep", self.size_range] if ":" in self.size_range else ["--size", self.size_range]
        )
        words = ["fabricui", "collective", self.op, *fabric_words(data)]
        first = first_gpus(self.group)
        words += [*sizes, *(["--gpus", str(first)] if first else ["--group", self.group])]
        words += nccl_words(self.nccl)
        if self.measured is not None and self.measured.single_process:
            words += ["--launch", "single-process"]
            if self.measured.gpus_per_thread:
                words += ["--gpus-per-thread", str(self.measured.gpus_per_thread)]
        rows = {"op": self.op, "topology": data.spec.id, "rows": list(prediction_rows(prediction))}
        items = [
            ("command: fabricui collective ...", " ".join(shlex.quote(w) for w in words)),
            ("table as JSON", json.dumps(rows, indent=2, allow_nan=False)),
        ]
        index = self._cursor_index()
        choice = prediction.choice
        if index is not None and choice is not None and choice.env[index]:
            size = format_bytes(prediction.size_bytes[index])
            setting = " ".join(f"{k}={v}" for k, v in choice.env[index].items())
            items.append((f"settings for {size}'s best pick", setting))
        return items

    def status_text(self) -> str:
        """Operation and group for the sub-title."""
        return f"{self.op} on {self.group}"
