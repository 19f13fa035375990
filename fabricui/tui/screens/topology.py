"""The topology view: the fabric map with a GPU cursor, source and destination, and the path."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import var
from textual.widgets import Static
from textual.worker import Worker, get_current_worker

from fabricui.errors import ConfigError, FabricError
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.base import ViewScreen, fabric_words
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.widgets.findings_panel import FindingsPanel, kept_text
from fabricui.tui.widgets.jobs_line import JobsLine
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.path_panel import HopHealth, PathPanel, PathSide
from fabricui.tui.widgets.title_bar import TitleBar
from fabricui.tui.widgets.topology_map import HEALTH_MARKERS, TopologyMap, worst_mark
from fabricui.units import (
    MAX_MESSAGE_BYTES,
    format_bytes,
    parse_message_size,
    parse_size,
    size_argument,
)

if TYPE_CHECKING:
    from fabricui.engine.evaluate import PathReport
    from fabricui.fabric.health import HealthOverlay
    from fabricui.importers.nccl_log import NcclLog
    from fabricui.services.doctor import Finding
    from fabricui.services.jobs import JobPlacement
    from fabricui.services.loaded import LoadedFabric
    from fabricui.services.traffic import Heat

#: Message size the path panel starts with [bytes] (1 GiB, as the README's example).
DEFAULT_SIZE = 2**30
#: Largest and smallest sizes ``+`` and ``-`` reach, and ``m`` takes [bytes] (as
#: ``path --message-size``: a size typed is the size priced).
MAX_SIZE, MIN_SIZE = MAX_MESSAGE_BYTES, 1

_SIZE = Binding.Group("size", compact=True)
#: The line above the map: keys as "key action"; ``<7>=`` is how the map marks the
#: bottleneck's two ends, not a key.
LEGEND = ("arrows move", "s/d src/dst", "/ find", "<7>=bottleneck", "z zoom", "h heat", "? keys")
#: The legend's first words while the path panel has the focus (the map's arrows then
#: scroll the panel: the map is not frozen).
PANEL_FOCUSED = "path panel has the focus"
#: What the map's health markers mean (shown with ``--health``).
HEALTH_LEGEND = "x down ~ degraded ! errors"
#: Where the overview (one glyph per GPU, no NICs drawn) puts a host's NIC marks.
NIC_COLUMN_LEGEND = "(NICs: right of a host's GPUs)"


def health_heat(fabric: Any, marks: dict[int, str]) -> Any:
    """(n_devices,) heat of the health marks: errors yellow, degraded red, down reversed."""
    import numpy as np

    level = {"errors": 0.6, "degraded": 0.9, "down": 1.0}
    heat = np.zeros(fabric.n_devices)
    for dev, mark in marks.items():
        if 0 <= dev < heat.shape[0]:
            heat[dev] = level.get(mark, 0.0)
    return heat


def path_health(report: PathReport, overlay: HealthOverlay | None) -> tuple[HopHealth, ...]:
    """The ``--health`` changes a routed path meets: a link it crosses (both ends a hop's),
    the scale-up hop of a GPU at its end whose NVLinks changed, and, said as off the path,
    a down cable of a NIC on its source's or destination's host (a GPU whose own NIC lost
    its cable goes out by another one) and an end GPU with no NVLink left (over PCIe)."""
    if overlay is None or not report.hops:
        return ()
    fabric = overlay.fabric
    hops = [frozenset((hop.src_device, hop.dst_device)) for hop in report.hops]
    src, dst = report.hops[0].src_device, report.hops[-1].dst_device
    ends = {src, dst}
    host_of = {int(fabric.dev_node[d]): d for d in (dst, src) if 0 <= d < fabric.n_devices}
    scale_up = fabric.spec.intra.link
    found: list[HopHealth] = []
    for change in overlay.changes:
        a, b = change.devices
        text = f"{change.label}, {kept_text(change)}"
        if b < 0:  # a GPU's scale-up links as a whole
            on = [
                i
                for i, (pair, hop) in enumerate(zip(hops, report.hops))
                if a in pair and a in ends and hop.link == scale_up
            ]
            end = a if a in ends and change.kind == "down" else None
            where = "over PCIe, not over its NVLinks"
        else:
            on = [i for i, pair in enumerate(hops) if pair == {a, b}]
            end = _end_on_host(fabric, (a, b), host_of) if change.kind == "down" else None
            where = "not on the path"
        if on:
            found.append(HopHealth(on[0], change.kind, text))
        elif end is not None:
            whose = "source" if end == src else "destination"
            found.append(HopHealth(-1, change.kind, f"{text} (on the {whose}'s host: {where})"))
    return tuple(sorted(found, key=lambda h: (h.hop < 0, h.hop)))


def _end_on_host(fabric: Any, devices: tuple[int, int], host_of: dict[int, int]) -> int | None:
    """The path's end (its GPU device) on whose host one of ``devices`` is, else None (a
    switch is on no host)."""
    for d in devices:
        if 0 <= d < fabric.n_devices and int(fabric.dev_node[d]) in host_of:
            return host_of[int(fabric.dev_node[d])]
    return None


def check_size(text: str) -> str | None:
    """Error line for a size that is not a message size (1 byte to 1 PiB, as ``path
    --message-size`` takes: ``2P`` is refused, not priced as 1 PiB unsaid), else None."""
    try:
        parse_message_size(text, "size")
    except FabricError as exc:
        return exc.message
    return None


def check_log_path(text: str) -> str | None:
    """Error line for a path that is not a readable regular file, else None (a ``stat``
    only: the log is read in a worker, never while the prompt is open)."""
    if not text:
        return "give the path of the log file"
    try:
        info = os.stat(Path(text).expanduser())
    except FileNotFoundError:
        return f"{text}: no such file"
    except OSError as exc:
        return f"{text}: cannot read ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return f"{text}: not a regular file"
    return None


class TopologyScreen(ViewScreen):
    """Nodes, switches and NICs with a GPU cursor; ``s``/``d`` route a path shown at the side.

    Different-node paths light up the NIC and leaf/spine legs on the map; the side panel
    lists every hop, the bottleneck, the latency and the transfer time of the message size.
    """

    VIEW = "topology"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "s",
            "mark_source",
            "Source",
            id="path.source",
            tooltip="Route from the GPU under the cursor",
        ),
        Binding(
            "d",
            "mark_destination",
            "Dest",
            id="path.destination",
            tooltip="Route to the GPU under the cursor",
        ),
        Binding(
            "plus,equals_sign",
            "size(2)",
            "Size x2",
            id="path.size_up",
            tooltip="Double the message size",
            key_display="+",
            group=_SIZE,
        ),
        Binding(
            "minus",
            "size(0.5)",
            "Size /2",
            id="path.size_down",
            tooltip="Halve the message size",
            key_display="-",
            group=_SIZE,
        ),
        Binding(
            "g",
            "goto",
            "Go to",
            id="map.goto",
            tooltip="Move the cursor to a GPU id (n3.g7 or a rank)",
        ),
        Binding(
            "slash",
            "search",
            "Find",
            id="map.search",
            tooltip="Find a host or GPU by name (or part of one) and jump there",
            key_display="/",
        ),
        Binding(
            "z",
            "zoom",
            "Zoom",
            id="map.zoom",
            tooltip="Zoom into the node under the cursor, or back out",
        ),
        Binding(
            "o",
            "open_log",
            "NCCL log",
            id="path.open_log",
            tooltip="Read an NCCL_DEBUG=INFO log and show the doctor's findings beside the map",
        ),
        Binding(
            "m",
            "ask_size",
            "Size",
            id="path.size",
            tooltip="Type a message size (64K, 1G, 1GB)",
        ),
        Binding(
            "x", "swap", "Swap", show=False, id="path.swap", tooltip="Swap source and destination"
        ),
        Binding(
            "n",
            "next_marked",
            "Next marked",
            show=False,
            id="map.next_marked",
            tooltip="Cursor to the next host --health marks (a GPU or a NIC of it)",
        ),
        Binding(
            "h",
            "heat",
            "Heat",
            id="map.heat",
            tooltip=(
                "Colour devices by link load: all-to-all, then ring traffic, then (with "
                "--health) the health marks, then off"
            ),
        ),
        Binding(
            "escape",
            "zoom_out",
            "Zoom out",
            show=False,
            id="map.zoom_out",
            tooltip="Show every node (not zoomed: go back, as Backspace)",
        ),
        Binding(
            "pagedown",
            "scroll_side(1)",
            "Panel",
            id="path.page_down",
            tooltip="Scroll the path panel down a page (pageup: up)",
            key_display="PgDn",
            priority=True,
        ),
        Binding(
            "pageup",
            "scroll_side(-1)",
            "Panel up",
            show=False,
            id="path.page_up",
            tooltip="Scroll the path panel up a page",
            key_display="PgUp",
            priority=True,
        ),
    ]
    """Path and map keys (the map adds the cursor keys)."""

    DEFAULT_CSS = """
    TopologyScreen #topology-body { height: 1fr; }
    TopologyScreen TopologyMap { width: 1fr; height: 1fr; }
    TopologyScreen #path-side { width: 46; height: 1fr; border-left: vkey $primary-darken-2; }
    TopologyScreen #path-side:focus { border-left: heavy $accent; }
    TopologyScreen.-wide #path-side { width: 60; }
    TopologyScreen #map-legend { height: auto; max-height: 2; color: $text-muted; padding: 0 1; }
    TopologyScreen #map-legend.-reason { max-height: 4; }
    TopologyScreen #map-cursor { display: none; height: 1; padding: 0 1; }
    """

    src: var[int | None] = var(None, init=False)
    """Source rank (None: not chosen)."""
    dst: var[int | None] = var(None, init=False)
    """Destination rank (None: not chosen)."""
    size_bytes: var[int] = var(DEFAULT_SIZE, init=False)
    """Message size for the transfer time [bytes], kept within MIN_SIZE..MAX_SIZE."""

    class PathComputed(Message):
        """A routed path is ready (posted by the routing worker)."""

        def __init__(self, report: PathReport) -> None:
            self.report = report
            """The engine's report."""
            super().__init__()

    class HeatReady(Message):
        """Link loads of a traffic pattern are ready (posted by the heat worker)."""

        def __init__(self, data: LoadedFabric, heat: Heat) -> None:
            self.data = data
            """Fabric it was computed on."""
            self.heat = heat
            """Per-device utilisation and the busiest link."""
            super().__init__()

    class LogRead(Message):
        """An NCCL log was read and diagnosed (posted by the reading worker)."""

        def __init__(
            self,
            name: str,
            log: NcclLog,
            found: list[Finding],
            findings: list[Finding],
            against: str,
            again: bool,
        ) -> None:
            self.name = name
            """The file name the user typed."""
            self.log = log
            """The parsed log."""
            self.found = found
            """The doctor's findings on the log alone (whatever the fabric)."""
            self.findings = findings
            """Those and the ones against the fabric on screen."""
            self.against = against
            """The fabric the log was checked against (its label), or "" (none)."""
            self.again = again
            """Checked again on a new fabric, not read anew."""
            super().__init__()

    def __init__(self) -> None:
        super().__init__()
        self.report: PathReport | None = None
        self.job_hosts: list[str] | None = None
        """The job's hosts (``--hosts``) on this fabric, in order: an NCCL log's hosts map
        to them when the topology does not name its own."""
        """The path shown (the engine's report, unchanged)."""
        self.heat_pattern: str | None = None
        """The traffic pattern whose link loads colour the map, or None."""
        self._route_pending = False
        self._shown: tuple[str, str | None, str | None] | None = None
        self._jobs_at: dict[int, str] = {}
        """Rank -> the running job(s) on it (``--jobs`` ids, ``--hosts`` for the job that
        option places): the map underlines those GPUs, the cursor line names the job."""
        self._job_options: dict[str, str] = {}
        """The ``--hosts`` and ``--jobs`` the fabric shown was drawn with: a saved view,
        a report and a copied command draw the same underlines again."""

    def compose(self) -> ComposeResult:
        """Title bar, legend, the map and the path panel, key bar."""
        yield TitleBar()
        yield Static(f" {glyphs().dot} ".join(LEGEND), id="map-legend")
        yield Static("", id="map-cursor", markup=False)
        yield JobsLine(id="map-jobs")
        with Horizontal(id="topology-body"):
            yield TopologyMap(id="map")
            with PathSide(id="path-side"):
                yield PathPanel(id="path")
                yield FindingsPanel(id="findings")
        yield KeyBar()

    def on_resize(self) -> None:
        """Give the path panel a full table on wide terminals."""
        self.set_class(self.size.width >= 140, "-wide")

    @property
    def map(self) -> TopologyMap:
        """The map widget."""
        return self.query_one(TopologyMap)

    @property
    def panel(self) -> PathPanel:
        """The path panel."""
        return self.query_one(PathPanel)

    def validate_size_bytes(self, size_bytes: int) -> int:
        """Keep the message size within MIN_SIZE..MAX_SIZE."""
        return max(MIN_SIZE, min(MAX_SIZE, int(size_bytes)))

    def watch_src(self) -> None:
        """A new source: route again."""
        self._request_route()

    def watch_dst(self) -> None:
        """A new destination: route again."""
        self._request_route()

    def watch_size_bytes(self, size_bytes: int) -> None:
        """A new message size: route again (and remember it for the next session)."""
        self._request_route()
        self.fabric_app.remember(message_size=size_bytes)

    def _request_route(self) -> None:
        """Route once after the current handler, however many choices it changed."""
        if not self._route_pending:
            self._route_pending = True
            self.call_next(self._route_now)

    def _route_now(self) -> None:
        self._route_pending = False
        self.route()

    def data_changed(self, data: LoadedFabric) -> None:
        """New fabric: reset the endpoints (or take the command line's) and route."""
        self.size_bytes = self.fabric_app.take_initial_size() or self.size_bytes
        src, dst = data.default_pair()
        self._job_options = {}
        job = self._place_job(data)
        self.job_hosts = list(job.hosts) if job is not None else None
        if job is not None and len(job.ranks) > 1:
            src, dst = int(job.ranks[0]), int(job.ranks[-1])
        wanted = self.fabric_app.take_initial_pair() or self._kept_pair(data)
        if wanted is not None:
            try:
                src = data.parse_gpu(wanted[0]) if wanted[0] else src
                dst = data.parse_gpu(wanted[1]) if wanted[1] else dst
            except Exception as exc:  # EngineError: bad id on the command line
                self.app.notify(str(getattr(exc, "message", exc)), severity="error", title="GPU id")
        self.map.show_fabric(data.fabric, cursor=src)
        self._jobs_at = {int(r): "--hosts" for r in job.ranks} if job is not None else {}
        running, note = self._running_jobs(data)
        for job_id, _hosts, ranks in running:
            for rank in ranks:
                held = self._jobs_at.get(rank)
                self._jobs_at[rank] = job_id if held in (None, "--hosts") else f"{held},{job_id}"
        self.map.set_job(frozenset(self._jobs_at))
        self._jobs_line(job, running, note)
        overlay = self._overlay = self._health(data)
        cut = tuple(c.devices for c in overlay.changes if c.factor <= 0.0) if overlay else ()
        self.map.set_health(self._marks(overlay), cut)
        self.query_one(FindingsPanel).show_health(
            overlay, "n: the cursor to the next marked host" if self.marked_hosts() else ""
        )
        self._cursor_line()  # with the cursor host's NIC marks
        if self.heat_pattern is not None:
            self.heat_pattern = None
        self._legend()
        self.map.focus()
        self.src, self.dst = src, dst
        self._request_route()
        if self._log is not None:  # findings of the old fabric would mislead: check again
            name, log, found = self._log
            self.query_one(FindingsPanel).show_message(f"checking {name} against {data.label}...")
            self._read_log(name, (log, found))

    def _place_job(self, data: LoadedFabric) -> JobPlacement | None:
        """The job ``--hosts`` (or ``$SLURM_JOB_NODELIST`` on an imported cluster) names,
        placed on this fabric and said in a notification; None without one."""
        from fabricui.services.jobs import job_of

        hosts = self.fabric_app.take_option("hosts")
        try:
            job = job_of(data.fabric, hosts)
        except FabricError as exc:
            self.app.notify(exc.message, title="job", severity="error")
            return None
        if job is not None:
            self.app.notify(job.summary(), title="job")
            if hosts:
                self._job_options["hosts"] = hosts
        return job

    def _health(self, data: LoadedFabric) -> HealthOverlay | None:
        """The health overlay that made the fabric (None: the fabric as designed), said once
        in a notification."""
        from fabricui.services.health import overlay_of

        overlay = overlay_of(data.fabric)
        if overlay is None:
            return None
        text = overlay.summary().removeprefix("health: ")
        shown = "; ".join(c.label for c in overlay.changes[:3])
        self.app.notify(f"{text}: {shown}" if shown else text, title="fabric as it is")
        for line in overlay.unmatched[:3]:
            self.app.notify(line, title="health", severity="warning")
        return overlay

    @staticmethod
    def _marks(overlay: HealthOverlay | None) -> dict[int, str]:
        """Device -> worst mark of the changes that name it: the devices at the ends of
        each changed link (a NIC and its switch, two switches) and a GPU whose NVLinks
        changed. The map, the health heat and the findings panel's list then show the same
        conditions: not a GPU's NVSwitch or mesh peers (their links to other GPUs are
        fine), nor a cable a generated network priced up (said under "not applied")."""
        if overlay is None:
            return {}
        marks: dict[int, str] = {}
        for change in overlay.changes:
            for dev in change.devices:
                mark = worst_mark((marks.get(dev), change.kind))
                if dev >= 0 and mark is not None:
                    marks[dev] = mark
        return marks

    def _running_jobs(
        self, data: LoadedFabric
    ) -> tuple[list[tuple[str, list[str], list[int]]], str]:
        """(job id, its hosts on the fabric, their GPUs) of the running jobs ``--jobs``
        lists (squeue, scontrol show job), said in a notification; empty without it. With
        what the jobs line says in their place when the file has none here ("")."""
        from fabricui.services.place import (
            jobs_hosts_off_fabric,
            no_running_job_said,
            running_job_ranks,
        )

        path = self.fabric_app.take_option("jobs")
        if not path:
            return [], ""
        try:
            jobs = running_job_ranks(data.fabric, path)
        except FabricError as exc:
            self.app.notify(exc.message, title="jobs", severity="error")
            return [], ""
        self._job_options["jobs"] = path
        from fabricui.services.jobs import hostlist

        if not jobs:  # another cluster's listing, or nothing running: said, not "0 jobs: "
            note = no_running_job_said(data.fabric, path)
            self.app.notify(f"{note}: nothing is underlined", title="jobs", severity="warning")
            return [], note
        text = "; ".join(f"{j} {hostlist(hosts)} ({len(r)} GPUs)" for j, hosts, r in jobs[:4])
        self.app.notify(f"{len(jobs)} running job(s) on this fabric: {text}", title="jobs")
        off = jobs_hosts_off_fabric(data.fabric, path)
        if off:  # as place says it: part of a job outside this fabric is not underlined
            self.app.notify(
                f"--jobs {path}: {len(off)} host(s) of its running jobs are not on "
                f"{data.label} and are not underlined: {hostlist(off)}",
                title="jobs",
                severity="warning",
            )
        return [(job_id, hosts, [int(r) for r in ranks]) for job_id, hosts, ranks in jobs], ""

    def _jobs_line(
        self,
        job: JobPlacement | None,
        running: list[tuple[str, list[str], list[int]]],
        note: str,
    ) -> None:
        """The line above the map naming the jobs whose GPUs it underlines, with their
        hosts (``JobsLine``: one line, ending in how many jobs it leaves out), or saying
        that ``--jobs`` has none here (``note``: the start-up notification fades)."""
        from fabricui.services.jobs import hostlist

        lead = [f"--hosts {hostlist(job.hosts)}"] if job is not None else []
        jobs = [f"job {job_id} {hostlist(hosts)}" for job_id, hosts, _ in running]
        self.query_one(JobsLine).show(lead, jobs, note)

    def _kept_pair(self, data: LoadedFabric) -> tuple[str | None, str | None] | None:
        """The endpoints shown on the previous fabric of the same topology (a what-if or a
        node count change keeps the user's choice when those GPUs still exist)."""
        shown = self._shown
        if shown is None or shown[0] != data.spec.id:
            return None

        pair = (shown[1], shown[2])
        try:
            for name in pair:
                if name is not None:
                    data.parse_gpu(name)
        except FabricError:
            return None  # fewer nodes now: back to the default pair
        return pair

    def restore_state(self, state: dict[str, str]) -> None:
        """The endpoints and the message size shown before (going back)."""
        data = self.data
        if data is None:
            return

        try:
            src = data.parse_gpu(state["src"]) if state.get("src") else None
            dst = data.parse_gpu(state["dst"]) if state.get("dst") else None
        except FabricError:
            return
        self.src, self.dst = src, dst
        if state.get("message_size"):
            self.size_bytes = int(state["message_size"])
        if src is not None:
            self.map.cursor = src

    def view_state(self) -> dict[str, str]:
        """The endpoints, the message size, and the ``--hosts`` and ``--jobs`` whose GPUs
        the map underlines."""
        data = self.data
        state = {"message_size": str(self.size_bytes), **self._job_options}
        if data is not None:
            if self.src is not None:
                state["src"] = data.fabric.gpu_name(self.src)
            if self.dst is not None:
                state["dst"] = data.fabric.gpu_name(self.dst)
        return state

    def copy_items(self) -> list[tuple[str, str]]:
        """The path as text, the ``fabricui path`` command and its JSON."""
        report, data = self.report, self.data
        if report is None or data is None:
            return []
        from fabricui.render.path import render_path

        words = ["fabricui", "path", *fabric_words(data), "--src", report.src, "--dst", report.dst]
        words += ["--message-size", size_argument(self.size_bytes)]
        return [
            ("path as text", render_path(report, data.fabric)),
            ("command: fabricui path ...", " ".join(shlex.quote(w) for w in words)),
            ("path as JSON", json.dumps(report.to_json(), indent=2, allow_nan=False)),
        ]

    def status_text(self) -> str:
        """Zoom state for the sub-title."""
        if self.data is not None and self.map.zoom is not None:
            return f"zoomed on n{self.map.zoom}"
        return ""

    # --- routing ---------------------------------------------------------------------------

    def route(self) -> None:
        """Route src -> dst in a worker, or say what is missing."""
        data = self.data
        if data is None:
            return
        fabric = data.fabric
        self._shown = (
            data.spec.id,
            None if self.src is None else fabric.gpu_name(self.src),
            None if self.dst is None else fabric.gpu_name(self.dst),
        )
        if self.src is None:
            self.panel.show_message("press s on a GPU to choose the source")
        elif self.dst is None:
            self.panel.show_message(
                "press d on another GPU (or click it) to route",
                src_name=fabric.gpu_name(self.src),
            )
        else:
            self._route(data, self.src, self.dst, self.size_bytes)
            return
        self.report = None
        self.map.set_marks(self.src, self.dst)

    @work(thread=True, exclusive=True, group="path", exit_on_error=False, description="route")
    def _route(self, data: LoadedFabric, src: int, dst: int, size_bytes: int) -> None:
        report = data.path(src, dst, size_bytes)
        if not get_current_worker().is_cancelled:
            self.post_message(self.PathComputed(report))

    @on(PathComputed)
    def path_computed(self, message: PathComputed) -> None:
        """Show the path on the map and in the panel."""
        data = self.data
        report = message.report
        if data is None or report.topology != data.fabric.spec.id:
            return
        self.report = report
        devices = frozenset(d for hop in report.hops for d in (hop.src_device, hop.dst_device))
        narrow = report.hops[report.bottleneck_hop]
        bottleneck = frozenset((narrow.src_device, narrow.dst_device))
        self.map.set_marks(self.src, self.dst, devices, bottleneck)
        placement = data.placement(report.src_rank, report.dst_rank)
        self.panel.show_report(report, placement, path_health(report, self._overlay))
        route = (data.label, report.src, report.dst)
        if route != self._route_shown:  # a new path starts at its "src -> dst" line
            self._route_shown = route
            self.query_one("#path-side", VerticalScroll).scroll_home(animate=False)

    _overlay: HealthOverlay | None = None
    """What ``--health`` changed in the fabric shown (None: the fabric as built)."""

    _route_shown: tuple[str, str, str] | None = None
    """(fabric, source, destination) of the path shown: the panel scrolls back to its top
    when they change, not when only the message size does."""

    # --- actions ---------------------------------------------------------------------------

    def action_mark_source(self) -> None:
        """The GPU under the cursor becomes the source."""
        if self.data is None:
            return
        self.fabric_app.remember_visit()
        self.src = self.map.cursor
        if self.dst == self.src:
            self.dst = None

    def action_mark_destination(self) -> None:
        """The GPU under the cursor becomes the destination."""
        if self.data is None:
            return
        rank = self.map.cursor
        if rank == self.src:
            self.app.notify("source and destination are the same GPU", severity="warning")
            return
        self.fabric_app.remember_visit()
        self.dst = rank

    def action_swap(self) -> None:
        """Swap source and destination."""
        if self.src is not None and self.dst is not None:
            self.fabric_app.remember_visit()
            self.src, self.dst = self.dst, self.src

    @on(TopologyMap.CursorMoved)
    def cursor_moved(self) -> None:
        """Name the GPU under the cursor on an overview map; ``[``/``]`` while zoomed zoom
        on another node, which the title says."""
        self._cursor_line()
        if self.map.zoom != self._zoom_titled:
            self._zoom_titled = self.map.zoom
            self.fabric_app.update_titles()

    _zoom_titled: int | None = None
    """The zoomed node the title names (None: every node)."""

    def _cursor_line(self) -> None:
        """On an overview map (one glyph per GPU, all alike) the line above it names the
        GPU under the cursor, its host and its rank; node boxes number their GPUs
        themselves, so the line is hidden there."""
        data, line = self.data, self.query_one("#map-cursor", Static)
        line.display = data is not None and self.map.overview
        if data is None or not line.display:
            return
        fabric, rank = data.fabric, self.map.cursor
        node = rank // fabric.gpus_per_node
        name = fabric.gpu_name(rank)
        host = name.rpartition(".")[0] or fabric.node_label(node)
        dot = glyphs().dot
        # The overview draws one mark for a host's NICs: which NICs, as its box numbers them.
        nics = " ".join(f"{HEALTH_MARKERS[m]}{i}" for i, m in self.map.nic_marks(node))
        parts = [f"cursor {name}", f"host {host}", f"rank {rank}"]
        parts += [f"NIC {nics}"] * bool(nics)
        job = self._jobs_at.get(rank)
        parts += [f"job {job}"] * bool(job)  # what the underline means
        parts.append("s/d mark it")
        # One line: the hint (the legend says it too), then the host (the GPU's name holds
        # it) give way before the marks and the job.
        room = self.size.width - 2
        for spare in ("s/d mark it", f"host {host}"):
            if len(f" {dot} ".join(parts)) <= room:
                break
            parts.remove(spare)
        line.update(f" {dot} ".join(parts))

    @on(TopologyMap.GpuClicked)
    def gpu_clicked(self, message: TopologyMap.GpuClicked) -> None:
        """First click picks the source, the next one the destination."""
        self.fabric_app.remember_visit()
        if self.src is None or self.dst is not None:
            self.src, self.dst = message.rank, None
        elif message.rank != self.src:
            self.dst = message.rank

    def action_size(self, factor: float) -> None:
        """Double or halve the message size; at either end, say so (once for a held key)."""
        size = int(self.size_bytes * factor)
        if MIN_SIZE <= size <= MAX_SIZE:
            self.size_bytes = size
            return
        end = "largest" if size > MAX_SIZE else "smallest"
        self.say_once(f"{format_bytes(self.size_bytes)} is the {end} message size")

    def action_ask_size(self) -> None:
        """Ask for a message size."""

        def done(value: str | None) -> None:
            if value:
                self.size_bytes = parse_size(value)

        # Exactly the current size (``1G``, ``1000000``): a rounded ``977K`` would change it.
        current = size_argument(self.size_bytes)
        self.app.push_screen(
            PromptModal(
                "Message size", current, "8, 64K, 1G (binary), 1GB (decimal), 1GiB", check_size
            ),
            done,
        )

    def action_heat(self) -> None:
        """Cycle the map's heat: all-to-all link loads, ring link loads, the health marks
        (with ``--health``), off."""
        data = self.data
        if data is None:
            return
        order: tuple[str | None, ...] = (None, "all_to_all", "ring")
        if self.map.health:
            order += ("health",)
        self.heat_pattern = order[(order.index(self.heat_pattern) + 1) % len(order)]
        if self.heat_pattern is None:
            self.map.set_heat(None)
            self._legend()
            return
        if self.heat_pattern == "health":
            self.map.set_heat(health_heat(data.fabric, self.map.health))
            self._legend(
                "heat: health (yellow: counters over their threshold, red: degraded, reversed: "
                "down; from --health) [h]"
            )
            return
        self._legend(f"heat: {self.heat_pattern} traffic, computing...")
        self._heat(data, self.heat_pattern)

    @work(thread=True, exclusive=True, group="heat", exit_on_error=False, description="heat")
    def _heat(self, data: LoadedFabric, pattern: str) -> None:
        from fabricui.services.traffic import heat

        with data.lock:
            result = heat(data.fabric, pattern)
        if not get_current_worker().is_cancelled:
            self.post_message(self.HeatReady(data, result))

    @on(HeatReady)
    def heat_ready(self, message: HeatReady) -> None:
        """Colour the map and say what the colours mean."""
        if message.data is not self.data or self.heat_pattern != message.heat.pattern:
            return
        self.map.set_heat(message.heat.utilization)
        meaning = (
            f"heat: {message.heat.pattern} (green . < 50% < yellow : < 80% < red *; # full) [h]"
        )
        busiest = message.heat.busiest
        one_line = len(meaning) + len(busiest) + 3 <= self.size.width
        self._legend(f"{meaning}; {busiest}" if one_line else f"{meaning}\n{busiest}")

    def action_scroll_side(self, pages: int) -> None:
        """Scroll the path panel (and the findings under it) a page down or up."""
        side = self.query_one("#path-side", VerticalScroll)
        if pages > 0:
            at_end, where = side.scroll_y >= side.max_scroll_y, "is at its end"
        else:
            at_end, where = side.scroll_y <= 0, "is at its top"
        if at_end:  # said: a key that changes nothing reads as a key that is broken
            where = "shows all it has" if side.max_scroll_y <= 0 else where
            self.say_once(f"the path panel {where}: nothing to scroll")
            return
        if pages > 0:
            side.scroll_page_down(animate=False)
        else:
            side.scroll_page_up(animate=False)

    def _legend(self, text: str | None = None, reason: bool = False) -> None:
        """The line above the map: the keys (and the health markers when ``--health`` marks
        devices), or what the heat colours mean; while the path panel has the focus, that
        it has (the arrows scroll it, not the map's cursor). ``reason``: the text says why
        a heat was not computed, and takes up to four lines rather than be cut at two (at
        80 columns the memory refusal is three)."""
        if text is None:
            health = HEALTH_LEGEND + f" {NIC_COLUMN_LEGEND}" * self.map.nic_column
            keys = (health, *LEGEND) if self.map.health else LEGEND
            text = f" {glyphs().dot} ".join(keys)
        self._legend_text, self._legend_reason = text, reason
        legend = self.query_one("#map-legend", Static)
        if self._side_focused():
            dot = glyphs().dot
            text = f"{PANEL_FOCUSED} {dot} arrows and PgUp/PgDn scroll it {dot} tab: the map"
            reason = False
        legend.set_class(reason, "-reason")
        legend.update(Content(text))  # "[h]" is not markup

    _legend_text = ""
    """The map's legend, shown again when the map has the focus back."""
    _legend_reason = False
    """Whether that legend says why a heat was not computed (it may take more lines)."""

    def _side_focused(self) -> bool:
        """Whether the path panel (or something in it) has the focus."""
        focused = self.focused
        side = self.query_one("#path-side", VerticalScroll)
        return focused is not None and (focused is side or side in focused.ancestors)

    def on_descendant_focus(self) -> None:
        """Tab moved the focus: the legend and the panel's border say where it is."""
        self._show_focus()

    def on_descendant_blur(self) -> None:
        """The focus left a widget: say where it is now."""
        self._show_focus()

    def _show_focus(self) -> None:
        self._legend(self._legend_text or None, self._legend_reason)

    def action_open_log(self) -> None:
        """Ask for an NCCL_DEBUG log; read and diagnose it in a worker (a slow disk or a
        large log never blocks the screen), also against the fabric on screen (its rings,
        trees, NICs and channels, as ``doctor --topology``); show the findings under the path
        panel."""

        def done(value: str | None) -> None:
            if value:
                self.query_one(FindingsPanel).show_message(f"reading {value}...")
                self._read_log(value)

        self.app.push_screen(
            PromptModal("NCCL_DEBUG=INFO log", "", "path to the log file", check_log_path), done
        )

    @work(thread=True, exclusive=True, group="log", exit_on_error=False, description="NCCL log")
    def _read_log(self, name: str, read: tuple[NcclLog, list[Finding]] | None = None) -> None:
        """Read and diagnose the log ``name`` (or take ``read``, the log and its findings
        on its own, to check it again on a new fabric) and check it against the fabric on
        screen."""
        from fabricui.services.doctor import diagnose, read_log

        if read is None:
            log = read_log(Path(name).expanduser())
            found = diagnose(log)
        else:
            log, found = read
        findings = list(found)
        data, against = self.data, ""
        if data is not None:  # and against the fabric on screen, as `doctor --topology`
            from fabricui.services.doctor_fabric import compare

            try:
                findings += compare(log, data.fabric, self.job_hosts).findings
                against = data.label
            except FabricError as exc:
                self.app.call_from_thread(
                    self.app.notify, exc.message, title="log vs fabric", severity="warning"
                )
        if not get_current_worker().is_cancelled:
            self.post_message(self.LogRead(name, log, found, findings, against, read is not None))

    def worker_failed(self, worker: Worker[object]) -> None:
        """A log that could not be read leaves no "reading..." line behind, nor a refused
        heat computation a "computing..." one."""
        if worker.group == "log":
            self.query_one(FindingsPanel).show_message("no log shown (see the error above)")
        elif worker.group == "heat" and not worker.is_cancelled and self.heat_pattern:
            # The reason stays on screen: the error's notification fades.
            error = worker.error
            why = getattr(error, "message", None) or str(error) or "see the error"
            self.map.set_heat(None)
            self._legend(f"heat: {self.heat_pattern} not computed (h: next): {why}", reason=True)

    @on(LogRead)
    def log_read(self, message: LogRead) -> None:
        """Show the findings, with the fabric they were checked against, and say how many
        problems there are."""
        self._log = (message.name, message.log, message.found)
        panel = self.query_one(FindingsPanel)
        panel.show_log(message.name, message.log, message.findings, message.against)
        if not message.again:
            # The findings sit under the path panel: bring them into view, whatever the
            # height (a new fabric shows its path from the top instead).
            self.call_after_refresh(panel.scroll_visible, top=True, animate=False)
        worst = [f for f in message.findings if f.severity in ("error", "warning")]
        name = message.name
        checked = f", checked against {message.against}" if message.again else ""
        self.notify(
            (f"{len(worst)} problem(s) in {name}" if worst else f"{name}: healthy") + checked,
            severity="warning" if worst else "information",
        )

    _log: tuple[str, NcclLog, list[Finding]] | None = None
    """The NCCL log shown: its name, the parsed log and its findings on its own (a new
    fabric checks it again)."""

    def action_goto(self) -> None:
        """Ask for a GPU id and move the cursor there."""
        data = self.data
        if data is None:
            return
        first, last = data.fabric.gpu_name(0), data.fabric.gpu_name(data.fabric.n_gpus - 1)
        self._ask_gpu("Go to GPU", f"a GPU id ({first} .. {last}) or a rank", data.parse_gpu)

    def action_search(self) -> None:
        """Ask for a host, switch or GPU by name (or part of one) and move the cursor there
        (for a switch or NIC: the first GPU nearest it)."""
        data = self.data
        if data is None:
            return
        last = data.fabric.nodes - 1
        example = data.fabric.node_label(last)
        host = f"a host ({example}), part of its name, " if example != f"n{last}" else ""

        def find(text: str) -> int:
            """The GPU a search names; a word nothing holds is said as such (the GPU-id
            parser's "invalid GPU id" would read as a malformed id)."""
            try:
                return data.find_gpu(text)
            except FabricError as exc:
                if not exc.message.startswith("invalid GPU id"):
                    raise
                raise ConfigError(
                    f"nothing named {text.strip()!r}: no host, node (n0-n{last}), switch or "
                    "NIC holds it, nor is it a GPU id (n0.g3) or a rank"
                ) from None

        self._ask_gpu(
            "Find a host, switch or GPU",
            f"{host}a node (n{last}), a switch or NIC by name, or a GPU id",
            find,
        )

    def _ask_gpu(self, title: str, hint: str, resolve: Callable[[str], int]) -> None:
        """Prompt until ``resolve`` names a GPU, then put the cursor on it (zooming to its
        node when zoomed on another)."""
        data = self.data
        if data is None:
            return

        def check(text: str) -> str | None:
            try:
                resolve(text)
            except FabricError as exc:
                return exc.message
            return None

        def done(value: str | None) -> None:
            if value:
                self.jump_to(resolve(value))

        self.app.push_screen(PromptModal(title, "", hint, check), done)

    def jump_to(self, rank: int) -> None:
        """Move the cursor to ``rank`` (zoomed on its node when zoomed on another)."""
        if self.data is None:
            return
        node = rank // self.data.fabric.gpus_per_node
        if self.map.zoom is not None and self.map.zoom != node:
            self.map.set_zoom(node)
        self.map.cursor = rank

    def marked_hosts(self) -> list[int]:
        """Nodes with a GPU or a NIC ``--health`` marks, in order (the overview has 458
        hosts on Selene: a marked one is found with ``n``, not by scrolling)."""
        data = self.data
        if data is None:
            return []
        fabric = data.fabric
        kinds = (0, 4)  # GPU, NIC (``DeviceKind``; as the map's ``ROW_KINDS``)
        return sorted(
            {
                int(fabric.dev_node[d])
                for d in self.map.health
                if 0 <= d < fabric.n_devices and int(fabric.dev_kind[d]) in kinds
            }
        )

    def action_next_marked(self) -> None:
        """Put the cursor on the next host ``--health`` marks after the cursor's (round the
        fabric): on its marked GPU, else its first GPU; say so when none is marked."""
        data, nodes = self.data, self.marked_hosts()
        if data is None:
            return
        if not nodes:
            self.app.notify("no host is marked: --health marks none of its GPUs or NICs")
            return
        fabric = data.fabric
        per = fabric.gpus_per_node
        here = self.map.cursor // per
        node = next((n for n in nodes if n > here), nodes[0])
        gpus = [node * per + g for g in range(per)]
        marked = [r for r in gpus if int(fabric.gpu_dev[r]) in self.map.health]
        self.jump_to(marked[0] if marked else gpus[0])

    def action_zoom(self) -> None:
        """Zoom into the cursor's node, or back out."""
        if self.data is None:
            return
        if self.map.zoom is None:
            self.map.set_zoom(self.map.cursor // self.data.fabric.gpus_per_node)
        else:
            self.map.set_zoom(None)
        self._cursor_line()
        self._zoom_legend()
        self.fabric_app.update_titles()

    def action_zoom_out(self) -> None:
        """Show every node again; when every node is shown, go back (as Backspace)."""
        if self.map.zoom is not None:
            self.map.set_zoom(None)
            self._cursor_line()
            self._zoom_legend()
            self.fabric_app.update_titles()
        else:
            self.fabric_app.action_back()

    def _zoom_legend(self) -> None:
        """Zoomed, a host's box numbers its NICs; on the overview the legend says where
        their marks are (a heat's legend stays)."""
        if self.heat_pattern is None and self.map.health:
            self._legend()
