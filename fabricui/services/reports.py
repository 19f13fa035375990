"""A view's report: the figures a view shows, as tables, with how to reproduce them and the
hardware-database sources behind them. Built from the service layer, never from the screen,
so a report is whole at any terminal size and fails loudly when a figure cannot be made."""

from __future__ import annotations

import dataclasses
import datetime
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fabricui import __version__
from fabricui.errors import ConfigError
from fabricui.fabric.health import MARKS
from fabricui.plugins import get_host
from fabricui.services.compare import ComparedFigure, path_figures, tier_figures
from fabricui.services.health import overlay_of, report_of
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.loaded import LoadedFabric
from fabricui.services.plan import STEP_PARTS, verdict_text
from fabricui.services.requests import LaunchRequest, check_group
from fabricui.units import format_bytes, format_time_us, parse_size, parse_size_sweep, size_argument
from fabricui.vocabulary import DEFAULT_TOPOLOGY, OPS, VIEW_TITLES, op_name, pick_label

if TYPE_CHECKING:
    from fabricui.fabric.health import HealthChange
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost

#: Size range the collectives view shows when none is given (as the explorer does).
DEFAULT_SIZES = "8:16G"


@dataclass(frozen=True)
class Table:
    """One table of a report."""

    caption: str
    """What the table shows."""
    header: tuple[str, ...]
    """Column names."""
    rows: tuple[tuple[str, ...], ...]
    """Cells as text."""
    right: frozenset[int] = frozenset()
    """Columns of numbers (right-aligned)."""


@dataclass(frozen=True)
class Report:
    """What a report says, ready to render as Markdown (``render.markdown``)."""

    title: str
    """``Topology · dgx-h100-pod``."""
    command: str
    """The command that reproduces it."""
    version: str
    """fabricui's version."""
    created: str
    """When it was made (UTC, ISO 8601)."""
    summary: tuple[tuple[str, str], ...]
    """The topology in a few facts: (label, value)."""
    tables: tuple[Table, ...]
    """The figures."""
    notes: tuple[str, ...] = ()
    """Lines under the tables (bottleneck, latency ...)."""
    sources: tuple[tuple[str, str], ...] = ()
    """(hwdb record, source URL) of the figures used."""
    image: str | None = None
    """File name of the SVG beside the report, if one is written."""
    extra: dict[str, Any] = field(default_factory=dict)
    """View-specific data for JSON (``path`` report ...)."""
    as_it_is: AsItIs | None = None
    """What ``--health`` applied to the fabric priced (None: the fabric as built, or
    health files that change and warn of nothing)."""


@dataclass(frozen=True)
class AsItIs:
    """A report's section on the fabric as it is (``--health``): what was applied, what
    was not and why, and what it changes in the report's figures."""

    summary: str
    """What the overlay changed and the files it read, one paragraph."""
    tables: tuple[Table, ...]
    """The conditions applied (worst first), and the report's figures as built and as it
    is where the view has both (the path, the pyramid)."""
    lines: tuple[str, ...] = ()
    """What was not applied and why, then the warnings, then the notes on the files: the
    first few, then how many more."""


def reproduce_command(launch: LaunchRequest, view: str) -> str:
    """The ``fabricui snapshot`` command that prints the same view's report (sizes as
    typed: ``--message-size 1G``)."""
    words = ["fabricui", "snapshot", view]
    topo = launch.topology_or_default
    if topo.topology != DEFAULT_TOPOLOGY:
        words += ["-t", topo.topology]
    if topo.nodes is not None:
        words += ["--nodes", str(topo.nodes)]
    if topo.what_if is not None:
        if topo.what_if.nic_gbps is not None:
            words += ["--nic-gbps", f"{topo.what_if.nic_gbps:g}"]
        if topo.what_if.scaleup_links is not None:
            words += ["--scale-up-links", str(topo.what_if.scaleup_links)]
    for path in topo.health:  # the fabric as it is, not as built
        words += ["--health", path]
    if view == "topology":
        words += [
            w
            for flag, value in (("--src", launch.src), ("--dst", launch.dst))
            if value
            for w in (flag, value)
        ]
        if launch.message_size is not None:
            words += ["--message-size", size_argument(launch.message_size)]
    for key, value in launch.options:
        if key == "search":
            words += ["--search"]
        elif key == "nccl":
            from fabricui.services.collective import nccl_words

            words += nccl_words(value)
        elif key == "measured":
            if "\n" not in value.strip():  # a pasted output has no file to name
                words += ["--measured", value]
        else:
            words += [_OPTION_FLAGS.get(key, f"--{key}"), value]
    return " ".join(shlex.quote(w) for w in words)


#: Launch options whose command-line flag is not ``--KEY``.
_OPTION_FLAGS = {"sizes": "--sweep"}


def topology_summary(data: LoadedFabric) -> tuple[tuple[str, str], ...]:
    """The topology in a few facts: GPUs, scale-up, network."""
    spec, fabric, catalog = data.spec, data.fabric, data.catalog
    gpu = catalog.gpus.get(spec.gpu)
    facts = [
        ("topology", data.label),
        (
            "GPUs",
            f"{fabric.n_gpus} = {fabric.nodes} x {fabric.gpus_per_node} "
            f"{gpu.name if gpu else spec.gpu}",
        ),
        ("scale-up", f"{spec.intra.fabric}, {spec.intra.link}"),
    ]
    if spec.net is not None:
        rate = f" {spec.net.gbps:g} Gb/s" if spec.net.gbps else ""
        facts.append(("network", f"{spec.net.link}{rate}, {spec.net.nics_per_node} NICs per node"))
    else:
        facts.append(("network", "none (one node)"))
    return tuple(facts)


#: How reports name one record of each kind.
_SINGULAR = {"links": "link", "gpus": "GPU", "nics": "NIC", "switches": "switch", "models": "model"}


def record_sources(catalog: Catalog, ids: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """(``kind id``, URL) of each record named, and its per-field sources, in order."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for kind, record_id in ids:
        record = catalog.table(kind).get(record_id)
        if record is None:
            continue
        label = f"{_SINGULAR.get(kind, kind)} {record_id}"
        pairs = [(label, getattr(record, "source", ""))]
        pairs += [
            (f"{label} {name}", url)
            for name, url in (getattr(record, "sources", None) or {}).items()
        ]
        for pair in pairs:
            if pair[1] and pair not in seen:
                seen.add(pair)
                out.append(pair)
    return tuple(out)


def _fabric_records(data: LoadedFabric, used: list[str]) -> list[tuple[str, str]]:
    """(kind, id) of the GPU and of each link generation, NIC or switch the figures used
    (``used`` holds link ids and hardware names as the path shows them)."""
    catalog = data.catalog
    ids = [("gpus", data.spec.gpu)]
    by_name = {
        getattr(record, "name", ""): (kind, record_id)
        for kind in ("nics", "switches")
        for record_id, record in catalog.table(kind).items()
    }
    for item in dict.fromkeys(used):
        if item in catalog.links:
            ids.append(("links", item))
        elif item in by_name:
            ids.append(by_name[item])
    return ids


def build_report(
    launch: LaunchRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    image: str | None = None,
    loaded: LoadedFabric | None = None,
) -> Report:
    """The report of ``launch.view`` on ``launch.topology``.

    Args:
        launch: The view, its topology and choices.
        catalog: A catalog to use (default: the built-in database with plugins).
        host: A plugin host to use (default: the process-wide one).
        image: The file name of the fabric's diagram the report links, if any.
        loaded: The topology loaded already (the explorer's, whose views computed figures
            on it): not loaded again.

    Raises:
        FabricError: A bad choice (GPU id, op, group, sizes, model, layout): the report is
            never written half-made.
    """
    view = launch.view
    if view not in VIEW_TITLES:
        raise ConfigError(f"unknown view {view!r} (one of {', '.join(VIEW_TITLES)})")
    data = loaded or LoadedFabric.load(launch.topology_or_default, catalog, host)
    builder = _BUILDERS[view]
    tables, notes, links, extra = builder(data, launch, host)
    as_it_is = as_it_is_section(data, launch, host) if view != "plugins" else None
    created = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return Report(
        title=f"{VIEW_TITLES[view]} · {data.label}",
        command=reproduce_command(launch, view),
        version=__version__,
        created=created.isoformat().replace("+00:00", "Z"),
        summary=topology_summary(data),
        tables=tuple(tables),
        notes=tuple(notes),
        sources=record_sources(data.catalog, _fabric_records(data, links)),
        image=image,
        extra=extra,
        as_it_is=as_it_is,
    )


Built = tuple[list[Table], list[str], list[str], dict[str, Any]]


def _path_pair(data: LoadedFabric, launch: LaunchRequest) -> tuple[int, int]:
    """The path's source and destination ranks: ``--src``/``--dst``, else the view's first.

    Raises:
        ConfigError: One GPU, or the same GPU twice.
        EngineError: A GPU id that is not one of the fabric's.
    """
    src, dst = data.default_pair()
    if launch.src:
        src = data.parse_gpu(launch.src)
    if launch.dst:
        dst = data.parse_gpu(launch.dst)
    if dst is None:
        raise ConfigError(f"topology {data.spec.id} has one GPU: no path to report")
    if src == dst:
        raise ConfigError(f"source and destination are the same GPU ({data.fabric.gpu_name(src)})")
    return src, dst


def _path_report(data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None) -> Built:
    src, dst = _path_pair(data, launch)
    size = launch.message_size or 2**30
    report = data.path(src, dst, size)
    rows = tuple(
        (
            str(i + 1),
            hop.src,
            hop.dst,
            hop.label,
            f"{hop.transfer_GBps:.1f}",
            f"{hop.lat_us:.3f}",
            f"{hop.src_model or '?'} -> {hop.dst_model or '?'}",
            "bottleneck" if i == report.bottleneck_hop else "",
        )
        for i, hop in enumerate(report.hops)
    )
    table = Table(
        f"{report.src} -> {report.dst}, {len(report.hops)} hops",
        ("#", "from", "to", "link", "GB/s", "lat us", "hardware", ""),
        rows,
        frozenset({0, 4, 5}),
    )
    hop = report.hops[report.bottleneck_hop]
    notes = [
        f"Bottleneck: {report.bottleneck_GBps:.1f} GB/s per direction at hop "
        f"{report.bottleneck_hop + 1}, {hop.src} -> {hop.dst} ({hop.link}).",
        f"Latency: {format_time_us(report.latency_us)} (links, switches and NICs).",
    ]
    if report.transfer_us is not None:
        notes.append(
            f"Transfer: {format_bytes(size)} in {format_time_us(report.transfer_us)} "
            "(latency + size / bottleneck)."
        )
    notes += _job_notes(data, launch)
    used = [name for h in report.hops for name in (h.link, h.src_model, h.dst_model) if name]
    return [table], notes, used, {"path": report.to_json()}


#: Jobs a report names before "and N more".
_SHOWN_JOBS = 12


def _job_notes(data: LoadedFabric, launch: LaunchRequest) -> list[str]:
    """A line naming the jobs ``--hosts`` and ``--jobs`` place on the fabric, with their
    hosts and GPUs, as the explorer's line above the map does: the report says what its
    command asked for (nothing without them)."""
    from fabricui.services.jobs import hostlist, place_job
    from fabricui.services.place import no_running_job_said, running_job_ranks

    options = dict(launch.options)
    parts = []
    if options.get("hosts"):
        job = place_job(data.fabric, options["hosts"])
        parts.append(f"--hosts {hostlist(job.hosts)} ({len(job.ranks)} GPUs)")
    if options.get("jobs"):
        jobs = running_job_ranks(data.fabric, options["jobs"])
        parts += [f"job {j} {hostlist(h)} ({len(r)} GPUs)" for j, h, r in jobs[:_SHOWN_JOBS]]
        if len(jobs) > _SHOWN_JOBS:
            parts.append(f"and {len(jobs) - _SHOWN_JOBS} more")
        if not jobs:
            parts.append(no_running_job_said(data.fabric, options["jobs"]))
    return [f"Jobs: {'; '.join(parts)}."] if parts else []


def _pyramid_report(data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None) -> Built:
    tiers = data.pyramid()
    rows = tuple(
        (
            t.name,
            f"{t.bw_GBps:,.1f}",
            "-" if t.lat_us is None else f"{t.lat_us:.3f}",
            t.detail,
        )
        for t in tiers
    )
    table = Table(
        "Bandwidth per GPU per direction, fastest tier first",
        ("tier", "GB/s", "lat us", "from"),
        rows,
        frozenset({1, 2}),
    )
    notes = [
        f"{a.name} is {a.bw_GBps / b.bw_GBps:.1f}x {b.name}."
        for a, b in zip(tiers, tiers[1:])
        if b.bw_GBps > 0
    ]
    links = [h for h in (data.spec.intra.link, data.spec.net.link if data.spec.net else None) if h]
    return [table], notes, links, {}


def _collectives_report(
    data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None
) -> Built:
    options = dict(launch.options)
    op = op_name(options.get("op", "all_reduce"))
    if op is None:
        raise ConfigError(f"unknown operation {options['op']!r} (one of {', '.join(OPS)})")
    group = options.get("group")
    text = options.get("sizes", DEFAULT_SIZES)
    sizes = parse_size_sweep(text, "--sweep") if ":" in text else [parse_size(text)]
    from fabricui.services.collective import (
        measured_errors,
        measured_group,
        measured_hardware,
        measured_run,
        view_notes,
        view_prediction,
    )

    measured = (
        measured_run(options["measured"], op, catalog=data.catalog)
        if options.get("measured")
        else None
    )
    asked = op
    if measured is not None:
        op = measured.op or op
        group = measured_group(data, group, measured, strict=False)  # the run's rank count
    group = check_group(group or "all")
    prediction = view_prediction(data, op, group, sizes, options.get("nccl", ""), measured)
    errors = (
        measured_errors(prediction.size_bytes, prediction.time_us, measured) if measured else {}
    )
    choice = prediction.choice
    rows = []
    notes: list[str] = []
    extra: dict[str, Any] = {}
    for i, (s, t, a, b, algo) in enumerate(
        zip(
            prediction.size_bytes,
            prediction.time_us,
            prediction.algbw_GBps,
            prediction.busbw_GBps,
            prediction.algorithm,
        )
    ):
        best, gain = "", ""
        if choice is not None:
            if choice.env[i]:
                best = f"{choice.best.labels[i]} in {format_time_us(float(choice.best.time_us[i]))}"
                gain = f"{100 * (float(t) / float(choice.best.time_us[i]) - 1):.0f}%"
                setting = " ".join(f"{k}={v}" for k, v in choice.env[i].items())
                caution = f" (caution: {choice.caution[i]})" if choice.caution[i] else ""
                notes.append(f"- {format_bytes(float(s))}: {setting}{caution}")
            else:
                best = "same"
        meas = errors.get(int(s))
        rows.append(
            (format_bytes(float(s)), format_time_us(float(t)), f"{a:.2f}", f"{b:.2f}", str(algo))
            + ((best, gain) if choice is not None else ())
            + (
                ((format_time_us(meas[0]), f"{round(100 * meas[1]):+d}%") if meas else ("", ""))
                if measured is not None
                else ()
            )
        )
    n = len(data.group_ranks(group))
    library = choice.library if choice is not None else "the library"
    header: tuple[str, ...] = ("size", "time", "algbw GB/s", "busbw GB/s", "algorithm")
    if choice is not None:
        header = (
            "size",
            "time",
            "algbw GB/s",
            "busbw GB/s",
            pick_label(library, release=True),
            "best pick",
            "gain",
        )
    right = {0, 1, 2, 3, 6} if choice is not None else {0, 1, 2, 3}
    if measured is not None:
        right |= {len(header), len(header) + 1}
        header = (*header, "measured", "error")
    typed = " ".join(w for w in options.get("nccl", "").split() if "=" in w)  # as typed
    table = Table(
        f"{op} on {group} ({n} GPUs), nccl-tests' definitions: what {library}"
        + (f" with {typed}" if typed else "")
        + " runs, and the fastest pick it could run",
        header,
        tuple(rows),
        frozenset(right),
    )
    if notes:
        notes = ["Settings that make NCCL run the best pick, per size:", *notes]
    notes += [f"Assumed: {n}." for n in view_notes(data, group, options.get("nccl", ""), op)]
    if measured is not None:
        given = "pasted output" if "\n" in options["measured"].strip() else options["measured"]
        ranks = f", {measured.nranks} ranks" if measured.nranks else ""
        if measured.nranks and measured.nranks != n:
            ranks += f" (not the {n} GPUs priced)"
        launched = f"; {measured.launched}, priced so" if measured.launched else ""
        notes.insert(0, f"Measured: {given}{ranks}{launched}; error = predicted / measured - 1.")
        match = measured_hardware(data, measured)  # as calibrate says it
        if match.caution:
            notes.insert(1, f"{match.caution[:1].upper()}{match.caution[1:]}.")
        if match.assumed:
            notes.insert(1, f"Assumed: {match.assumed}.")
        extra["measured_hardware"] = match.to_json()
    if op != asked:  # the run's own collective, not the one asked for
        notes.insert(0, f"The measured run is {op}, so the table is {op} (not {asked}).")
    links = list(data.fabric.generations)
    return [table], notes, links, extra


def _strategies_report(data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None) -> Built:
    """The decision table of the model (``--model``, default llama3-70b), the step breakdown
    of ``--layout`` (else of the layout the view opens on: the least that fits), and with
    ``--search`` the fastest layouts."""
    options = dict(launch.options)
    model_id = data.model(options.get("model", "llama3-70b")).id
    table = data.decision_table(model_id)
    rows = tuple(
        (
            row.name,
            _ms(row.comm_us_intra),
            verdict_text(row.intra_verdict, row.exposed_us_intra, table.step_us),
            _ms(row.comm_us_inter),
            verdict_text(row.inter_verdict, row.exposed_us_inter, table.step_us),
            row.note,
        )
        for row in table.rows
    )
    tables = [
        Table(
            f"{model_id}: communication per step against compute "
            f"({_ms(table.step_us)} ms, {table.compute_basis}), each strategy alone on "
            f"{table.degree} GPUs, {table.span}",
            (
                "strategy",
                "intra ms",
                "intra OK (exposed)",
                "inter ms",
                "inter OK (exposed)",
                "note",
            ),
            rows,
            frozenset({1, 3}),
        )
    ]
    notes = []
    if table.missing:
        notes.append(f"Not loaded: {', '.join(table.missing)} (plugin disabled or failed to load).")
    extra: dict[str, Any] = {"decision_table": table.to_json()}

    dp_strategy = None  # search every DP flavour, as `fabricui plan --search`
    if options.get("layout"):
        choice = parse_layout(options["layout"], LayoutChoice())
        dp_strategy = choice.dp_strategy
    else:  # the layout the view opens on
        choice = data.default_layout(model_id)
    plan = data.plan(model_id, choice)
    tables += _plan_tables(plan, choice.label())
    notes += [f"Assumed: {line}" for line in plan.assumptions]
    extra["plan"] = plan.to_json()
    if "search" in options:
        plans = data.search(model_id, dp_strategy)
        tables.append(_search_table(plans))
        extra["search"] = [plan.to_json() for plan in plans]
    return tables, notes, list(data.fabric.generations), extra


def layout_line(layout: Any) -> str:
    """``tp 8 x pp 2 x dp 2 (ep 1, vpp 4), 8 micro-batches of 1, global batch 16 x 8192
    tokens`` (``cp`` when above 1, the expert TP when it is not the TP): the layout and the
    batch a plan's figures are for."""
    cp = f" x cp {layout.cp}" if layout.cp > 1 else ""
    etp = f", etp {layout.etp}" if layout.etp and layout.etp != layout.tp else ""
    vpp = f", vpp {layout.vpp}" if layout.vpp > 1 else ""
    return (
        f"tp {layout.tp}{cp} x pp {layout.pp} x dp {layout.dp} (ep {layout.ep}{etp}{vpp}), "
        f"{batch_line(layout)}"
    )


def batch_line(layout: Any) -> str:
    """``8 micro-batches of 1, global batch 16 x 8192 tokens``."""
    plural = "" if layout.microbatches == 1 else "es"
    return (
        f"{layout.microbatches} micro-batch{plural} of {layout.micro_batch:g}, "
        f"global batch {layout.global_batch} x {layout.seq_len} tokens"
    )


def operation_label(strategy: str, collective: str, note: str) -> str:
    """``fsdp all_gather (forward)``: the operation, with the pass it runs in when its
    note says (FSDP gathers parameters once for the forward and once for the backward)."""
    phase = note.rsplit(",", 1)[-1].strip() if note else ""
    when = f" ({phase})" if phase in ("forward", "backward") else ""
    return f"{strategy} {collective}{when}"


def _plan_tables(plan: Any, label: str) -> list[Table]:
    """A plan's step breakdown and its priced operations."""
    step = plan.step_us
    parts = plan.breakdown()
    breakdown = [
        (name, _ms(parts.get(key, 0.0)), f"{parts.get(key, 0.0) / step:.0%}" if step else "")
        for key, name in STEP_PARTS
        if key in ("compute", "bubble") or parts.get(key, 0.0) > 0
    ]
    breakdown.append(("step", _ms(step), "100%"))
    fits = "fits" if plan.fits else "does not fit"
    caption = (
        f"layout {label}, dp {plan.layout.dp}, {batch_line(plan.layout)}: step per GPU, "
        f"{plan.tflops_per_gpu:.0f} TFLOP/s per GPU, MFU "
        f"{plan.mfu:.0%}, memory {plan.memory_GB:.0f} of {plan.memory_limit_GB:.0f} GB "
        f"usable ({fits})"
    )
    tables = [Table(caption, ("part", "ms", "share"), tuple(breakdown), frozenset({1, 2}))]
    if plan.operations:
        ops = tuple(
            (
                operation_label(p.op.strategy, p.op.collective, p.op.note),
                f"{p.op.group} x{p.group_size}",
                _ms(p.time_us),
                _ms(p.exposed_us),
                p.algorithm,
                p.op.note,
            )
            for p in plan.operations
        )
        tables.append(
            Table(
                f"layout {label}: communication per step",
                ("operation", "group", "ms", "exposed ms", "algorithm", "what"),
                ops,
                frozenset({2, 3}),
            )
        )
    return tables


def _search_table(plans: list[Any]) -> Table:
    """The fastest layouts, fastest first, with why each is fast."""
    rows = tuple(
        (
            str(rank),
            layout_words(plan),
            _ms(plan.step_us),
            f"{plan.mfu:.0%}",
            f"{plan.memory_GB:.0f}",
            "; ".join(plan.reasons()),
        )
        for rank, plan in enumerate(plans, 1)
    )
    batch = f", global batch {plans[0].layout.global_batch} x {plans[0].layout.seq_len} tokens"
    return Table(
        f"fastest layouts (only those whose memory fits{batch if plans else ''})",
        ("#", "layout", "step ms", "MFU", "GB", "why"),
        rows,
        frozenset({0, 2, 3, 4}),
    )


def layout_words(plan: Any) -> str:
    """``tp8 cp2 pp4 v2 ep8 etp1 dp16 mb1 zero1 selective`` (degrees above 1 and an expert TP
    other than tp; dp, the micro-batch size and the DP flavour always; the recompute mode
    when there is one)."""
    layout = plan.layout
    words = [
        f"{axis}{getattr(layout, axis)}" for axis in ("tp", "cp", "pp") if getattr(layout, axis) > 1
    ]
    words += [f"v{layout.vpp}"] if layout.vpp > 1 else []
    words += [f"ep{layout.ep}"] if layout.ep > 1 else []
    words += [f"etp{layout.expert_tp}"] if layout.ep > 1 and layout.expert_tp != layout.tp else []
    words += [f"dp{layout.dp}", f"mb{layout.micro_batch:g}"]
    words += [s for s in plan.strategies if s in ("ddp", "zero1", "zero2", "fsdp", "hsdp")][:1]
    if plan.recipe.recompute not in ("", "none", None):
        words.append(plan.recipe.recompute)
    return " ".join(words)


def _ms(value_us: float | None) -> str:
    return "-" if value_us is None else f"{value_us / 1e3:,.1f}"


def _plugins_report(data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None) -> Built:
    rows = tuple(
        (
            row["name"],
            row["version"] or "",
            row["source"],
            row["status"],
            "; ".join(f"{kind}: {', '.join(keys)}" for kind, keys in row["contributes"].items()),
        )
        for row in (host or get_host()).describe()
    )
    table = Table("Loaded plugins", ("plugin", "version", "source", "status", "contributes"), rows)
    return [table], [], [], {}


#: Conditions applied, and lines not applied or warned of, listed before "and N more".
_SHOWN_CHANGES = 12
_SHOWN_LINES = 5


def as_it_is_section(
    data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None = None
) -> AsItIs | None:
    """The "As it is" section of a report on an overlaid fabric: the conditions applied
    (link, condition, bandwidth kept, where read), what was not applied and why, the
    warnings, and for the path and the pyramid their figures as built beside as it is
    (``services.compare``, as the explorer's ``c`` compares them). None on the fabric as
    built. Files that change nothing and warn of nothing get one line saying so (the title
    says "as it is": the reader learns which files were read and that they were clean).
    The notes on the files (a Slurm listing is no link health) follow, in the words
    ``--health`` says them on stderr and in ``--json`` (``health.notes``)."""
    overlay = overlay_of(data.fabric)
    if overlay is None:
        return None
    files = report_of(data.fabric)
    warnings = [*overlay.warnings, *(files.warnings if files is not None else [])]
    said = files.notes if files is not None else []
    notes = _at_most(f"Notes ({len(said)}):", said, "notes")
    read = f"Health files: {files.file_names(_SHOWN_LINES)}. " if files is not None else ""
    if not overlay.changes and not overlay.unmatched and not warnings:
        clean = f"{read}They mark nothing on this fabric: the figures above are as built."
        return AsItIs(clean, (), tuple(notes))
    summary = (
        f"{read}The figures above are the fabric as they say it is: "
        f"{overlay.summary().removeprefix('health: ')}; without --health they are as built."
    )
    tables = []
    lines: list[str] = []
    if overlay.changes:
        tables.append(_changes_table(overlay.changes))
        figures = _as_built_figures(data, launch, host)
        if isinstance(figures, Table):
            tables.append(figures)
        elif figures:
            lines.append(figures)
    lines += _at_most(
        f"Not applied ({len(overlay.unmatched)}):", overlay.unmatched, "conditions not applied"
    )
    lines += _at_most(f"Warnings ({len(warnings)}):", warnings, "warnings")
    lines += notes
    return AsItIs(summary, tuple(tables), tuple(lines))


def _changes_table(changes: tuple[HealthChange, ...]) -> Table:
    """The conditions applied, worst first, the first ``_SHOWN_CHANGES`` of them."""
    order = sorted(changes, key=lambda c: -MARKS.index(c.kind))
    rows = tuple(
        (c.label, c.condition, f"{c.factor:.0%}", c.source) for c in order[:_SHOWN_CHANGES]
    )
    more = len(order) - _SHOWN_CHANGES
    shown = (
        f", the {_SHOWN_CHANGES} worst shown (`fabricui path --json` lists all)" if more > 0 else ""
    )
    return Table(
        f"Conditions applied ({len(order)}{shown})",
        ("link", "condition", "bandwidth kept", "read in"),
        rows,
        frozenset({2}),
    )


def _as_built_figures(
    data: LoadedFabric, launch: LaunchRequest, host: PluginHost | None
) -> Table | str:
    """The view's figures as built and as it is: the path's (topology view) or the
    pyramid's tiers that changed (pyramid view); when none changed, a line saying so;
    empty for the other views."""
    view = launch.view
    if view not in ("topology", "pyramid"):
        return ""
    request = dataclasses.replace(data.request, health=())
    built = LoadedFabric.load(request, data.catalog, host)
    if view == "topology":
        src, dst = (data.fabric.gpu_name(r) for r in _path_pair(data, launch))
        figures = [
            dataclasses.replace(f, name=f.name.removeprefix(f"path {src} -> {dst}: "))
            for f in path_figures(built, data, src, dst)
        ]
        caption = f"The path {src} -> {dst} as built and as it is"
        same = f"The path {src} -> {dst} is as built: it crosses no link that changed."
    else:
        figures = [f for f in tier_figures(built, data) if f.better is not None]
        # A tier with no route left (every node but one cut off the network) changed too.
        left = {tier.name for tier in data.pyramid()}
        gone = [
            ComparedFigure(f"tier {tier.name}", "GB/s", tier.bw_GBps, None)
            for tier in built.pyramid()
            if tier.name not in left
        ]
        figures += gone
        caption = "Pyramid tiers that changed, as built and as it is" + (
            " (-: no route left)" if gone else ""
        )
        same = "Every pyramid tier is as built."
    if not any(f.better is not None or (f.a is None) != (f.b is None) for f in figures):
        return same
    rows = tuple(
        (
            f.name,
            _figure_value(f.a, f.unit),
            _figure_value(f.b, f.unit),
            "-" if f.ratio is None else f"x{f.ratio:.3g}",
        )
        for f in figures
    )
    return Table(caption, ("figure", "as built", "as it is", "change"), rows, frozenset({1, 2, 3}))


def _figure_value(value: float | None, unit: str) -> str:
    """A compared figure as the explorer's compare shows it (``12.5 GB/s``, ``2.53 us``)."""
    if value is None:
        return "-"
    return format_time_us(value) if unit == "us" else f"{value:,.1f} {unit}"


def _at_most(title: str, said: tuple[str, ...] | list[str], what: str) -> list[str]:
    """``title`` and the first ``_SHOWN_LINES`` lines as a list, then how many more (a
    listing of a thousand hosts of another cluster says a line per host); nothing when
    there are none."""
    if not said:
        return []
    lines = [title, *(f"- {line}" for line in said[:_SHOWN_LINES])]
    if len(said) > _SHOWN_LINES:
        lines.append(
            f"- ... and {len(said) - _SHOWN_LINES} more {what} (`fabricui path --json` lists all)"
        )
    return lines


_BUILDERS: dict[str, Any] = {
    "topology": _path_report,
    "pyramid": _pyramid_report,
    "collectives": _collectives_report,
    "strategies": _strategies_report,
    "plugins": _plugins_report,
}
