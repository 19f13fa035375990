"""``fabricui plan``: price a parallel layout on a fabric, rank every layout (``--search``),
or price a published run (``--run FILE``)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.bounds import MFU, MOE_IMBALANCE, POWER_CAP_W, Range, between, checked
from fabricui.commands.options import (
    add_hosts_option,
    catalog_request,
    completes,
    topology_request,
)
from fabricui.commands.strategies import add_common_args, model_of
from fabricui.errors import ConfigError, FabricError, PluginError
from fabricui.render.output import print_json
from fabricui.render.table import text_table
from fabricui.services import plan as service
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.plan import (
    MODEL_PARALLEL,
    SEARCH_TOP,
    STEP_PARTS,
    LayoutRequest,
    PlanRequest,
    load_strategies,
    memory_advice,
)
from fabricui.units import format_bytes, format_time_us
from fabricui.vocabulary import (
    ATTENTION_CHOICES,
    CUDA_GRAPH_MODES,
    DP_STRATEGIES,
    FP8_ATTENTION_FORMAT_OF,
    FP8_RECIPES,
    MOE_DISPATCH,
    PRECISIONS,
    RECOMPUTE_MODES,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fabricui.engine.training.recipe import Recipe
    from fabricui.engine.training.step import PlanReport
    from fabricui.engine.types import Layout
    from fabricui.fabric.fabric import Fabric
    from fabricui.services.plan import SearchResult
    from fabricui.services.plan_runs import RunResult

COLUMNS = (
    "strategy",
    "collective",
    "group",
    "ranks",
    "bytes",
    "count",
    "time",
    "exposed",
    "algo",
    "what",
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plan`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "plan",
        help="price a TP/PP/CP/DP/EP layout on a fabric: step breakdown, MFU, memory; "
        "--search ranks every layout, --run prices a published run",
    )
    add_common_args(parser)
    _add_layout_options(parser)
    _add_recipe_options(parser)
    _add_overlap_options(parser)
    parser.add_argument(
        "--search",
        action="store_true",
        help=f"rank every valid layout by step time (top {SEARCH_TOP}); ignores the degrees",
    )
    add_hosts_option(parser, "the layout runs on the job's GPUs (with --search: every layout)")
    parser.add_argument(
        "--run",
        metavar="FILE",
        help="price the run(s) of a run file: YAML entries with an id, a model and a run "
        "block (topology, degrees, batch; docs/hwdb.md, 'Run files'); ignores the model, "
        "topology and degree options",
    )
    return parser


def _add_layout_options(parser: argparse.ArgumentParser) -> None:
    """The degrees, batch and strategies of a layout."""
    degrees = (
        ("--tp", "tensor-parallel degree (default: 1)"),
        ("--pp", "pipeline stages; need not divide the layers (default: 1)"),
        ("--dp", "data-parallel replicas (default: the GPUs left over)"),
        ("--cp", "context-parallel degree, ring attention (default: 1)"),
        (
            "--ep",
            "expert-parallel degree, over the DP ranks (with --etp below --tp, over "
            "the TP and CP ranks too; default: 1)",
        ),
        (
            "--etp",
            "expert tensor-parallel degree; ep x etp must divide tp x cp x dp "
            "(default: --tp, or 1 when ep x tp does not divide it)",
        ),
        ("--vpp", "interleaved model chunks per pipeline stage (default: 1)"),
        ("--microbatches", "micro-batches per step (default: from --global-batch, else 4 x pp)"),
        ("--micro-batch", "sequences per micro-batch (default: 1)"),
        ("--global-batch", "sequences per step (default: dp x microbatches; --search: GPUs)"),
        ("--seq", "tokens per sequence (default: the model's)"),
        ("--top", f"layouts --search prints (default: {SEARCH_TOP})"),
    )
    for flag, text in degrees:
        parser.add_argument(flag, type=int, default=None, help=text)
    parser.add_argument(
        "--layout",
        metavar="WORDS",
        help="the layout in words, as the explorer's l and snapshot --layout take it: "
        "'tp8 pp2 cp2 ep4 fsdp selective' (--tp, --pp, --dp-strategy ... win over it)",
    )
    dp_strategy = parser.add_argument(
        "--dp-strategy",
        default=None,
        metavar="NAME",
        help=f"how the data-parallel dimension communicates: {', '.join(DP_STRATEGIES)}, or a "
        "data-parallel strategy a plugin registers (default: ddp; --search tries ddp, zero1, "
        "zero2 and fsdp)",
    )
    completes(dp_strategy, DP_STRATEGIES)
    parser.add_argument(
        "--strategy",
        action="append",
        default=[],
        dest="extra_strategies",
        metavar="NAME",
        help="also price this registered strategy, e.g. one from a plugin (repeatable; "
        "see fabricui plugins); if it fails, so does the command",
    )
    # Each --X/--no-X pair is exclusive: given both, the last would silently win.
    sp = parser.add_mutually_exclusive_group()
    sp.add_argument(
        "--sp",
        action="store_true",
        default=None,
        help="sequence parallel with TP: all-gather + reduce-scatter (default: on with TP on "
        "Hopper and later, as Megatron-Core and NeMo run it; off before)",
    )
    sp.add_argument(
        "--no-sp", action="store_false", dest="sp", help="TP without sequence parallelism"
    )


def _add_recipe_options(parser: argparse.ArgumentParser) -> None:
    """How the step is computed: recompute, precision, framework, kernels, power, MoE."""
    parser.add_argument(
        "--recompute",
        choices=RECOMPUTE_MODES,
        help="activation recomputation (default: none; --search tries all three)",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="GEMM precision (fp4: NVFP4 on parts with an FP4 peak)",
    )
    framework = parser.add_argument(
        "--framework",
        metavar="ID",
        help="training framework whose defaults fill in the rest (default: megatron-core; "
        "see fabricui hwdb list frameworks)",
    )
    completes(framework, "framework")
    parser.add_argument(
        "--attention",
        choices=ATTENTION_CHOICES,
        help="attention kernel: a fused kernel by name, flash (the framework's) or unfused "
        "(default: the framework's)",
    )
    parser.add_argument(
        "--fp8-recipe",
        choices=FP8_RECIPES,
        help="FP8 scaling recipe with --precision fp8 (default: the framework's)",
    )
    parser.add_argument(
        "--fp8-attention",
        action="store_true",
        default=None,
        help="attention in FP8 too with --precision fp8 (Transformer Engine's "
        "fp8_dot_product_attention; default: 16-bit attention)",
    )
    parser.add_argument(
        "--recompute-modules",
        metavar="LIST",
        help="modules selective recompute recomputes, comma-separated (core_attn, mlp, moe, "
        "moe_act, layernorm, shared_experts; Megatron-Core's recompute_modules)",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        default=None,
        help="torch.compile: each chain of pointwise ops runs as one kernel",
    )
    parser.add_argument(
        "--power-cap",
        type=float,
        default=None,
        metavar="W",
        help="GPU board power cap below its own limit [W] (compute slows with the clock)",
    )
    parser.add_argument(
        "--moe-dispatch",
        choices=MOE_DISPATCH,
        help="MoE token dispatch: a copy per routed expert, or one per node (default: the "
        "framework's)",
    )
    parser.add_argument(
        "--moe-imbalance",
        type=float,
        default=None,
        metavar="X",
        help="tokens of the busiest expert over the mean (default: 1, balanced)",
    )
    parser.add_argument(
        "--cuda-graph",
        choices=CUDA_GRAPH_MODES,
        help="CUDA graphs captured: none, partial (attention, router) or full_iteration (no "
        "MoE host wait; default: none)",
    )


def _add_overlap_options(parser: argparse.ArgumentParser) -> None:
    """``--X-overlap`` / ``--no-X-overlap`` for DP, TP and EP communication."""
    for name, what in (
        ("dp-overlap", "gradient reduction with the backward pass"),
        ("tp-overlap", "TP collectives with the GEMMs (inside a node)"),
        ("ep-overlap", "expert all-to-alls with the expert GEMMs"),
    ):
        dest = name.replace("-", "_")
        pair = parser.add_mutually_exclusive_group()
        pair.add_argument(
            f"--{name}", dest=dest, action="store_true", default=None, help=f"overlap {what}"
        )
        pair.add_argument(
            f"--no-{name}", dest=dest, action="store_false", help=f"do not overlap {what}"
        )


def run(args: argparse.Namespace) -> int:
    """Print the plan, the search ranking or the priced runs; returns the exit status (0).

    Args:
        args: Parsed arguments (see ``add_parser``; missing optional ones take defaults).

    Raises:
        FabricError: Unknown ids, a bad run file, or a layout the model or fabric cannot run.
    """
    _refuse_unread_options(args)
    if _get(args, "run", None):
        from fabricui.services.plan_runs import RunRequest, price_runs  # only for --run

        with _failed_strategies_refused({}, every=True):
            runs = price_runs(
                RunRequest(Path(args.run), catalog_request(args)), strategies=load_strategies()
            )
        shown = run_json(runs[0]) if len(runs) == 1 else {"runs": [run_json(r) for r in runs]}
        _print(args, shown, lambda: "\n\n".join(render_run(r) for r in runs))
        return 0
    request = plan_request(args)
    if request.search:
        with _failed_requests_first(request):
            result = service.search(request, strategies=load_strategies())

        def search_text() -> str:
            text = render_search(result)
            return text if result.job is None else f"{result.job.summary()}\n{text}"

        _print(args, _search_json(result), search_text)
        return 0
    with _failed_requests_first(request):
        planned = service.plan(request, strategies=load_strategies())
    n_gpus = planned.fabric.n_gpus if planned.job is None else len(planned.job.ranks)
    data = planned.report.to_json()
    data["memory_advice"] = memory_advice(planned.report, n_gpus)
    data["fabric_gpus"] = planned.fabric.n_gpus
    if planned.job is not None:
        data["job"] = planned.job.to_json()

    def text() -> str:
        rendered = render_plan(planned.report, planned.fabric, n_gpus)
        return rendered if planned.job is None else f"{planned.job.summary()}\n{rendered}"

    _print(args, data, text)
    return 0


def _failed_requests_first(request: PlanRequest) -> contextlib.AbstractContextManager[None]:
    """Price inside: a strategy the user asked for by name (``--strategy``,
    ``--dp-strategy``) whose plugin failed when it was priced is then the error, also in
    place of the error pricing ended with (the failure is its likely cause). One plan uses
    every strategy it calls, so any other that failed is an error too (its figures would be
    missing from the step); a search goes on without one that was not asked for, with a
    warning."""
    asked = {name: "--strategy" for name in request.extra_strategies}
    if request.dp_strategy:
        asked[request.dp_strategy] = "--dp-strategy"
    return _failed_strategies_refused(asked, every=not request.search)


#: Options that fix one layout (``dest``, flag): ``--search`` varies them.
ONE_LAYOUT_OPTIONS = (
    ("tp", "--tp"),
    ("pp", "--pp"),
    ("dp", "--dp"),
    ("cp", "--cp"),
    ("ep", "--ep"),
    ("etp", "--etp"),
    ("vpp", "--vpp"),
    ("microbatches", "--microbatches"),
    ("micro_batch", "--micro-batch"),
)
#: Options ``--run`` does not read (``dest``, flag): the run file states the model, the
#: topology, the layout and the settings.
RUN_FILE_STATES = (
    ("model", "--model"),
    ("model_word", "MODEL"),
    ("topology", "--topology"),
    ("nodes", "--nodes"),
    ("nic_gbps", "--nic-gbps"),
    ("scale_up_links", "--scale-up-links"),
    ("health", "--health"),
    ("mfu", "--mfu"),
    *ONE_LAYOUT_OPTIONS,
    ("global_batch", "--global-batch"),
    ("seq", "--seq"),
    ("top", "--top"),
    ("layout", "--layout"),
    ("dp_strategy", "--dp-strategy"),
    ("extra_strategies", "--strategy"),
    ("sp", "--sp/--no-sp"),
    ("recompute", "--recompute"),
    ("precision", "--precision"),
    ("framework", "--framework"),
    ("attention", "--attention"),
    ("fp8_recipe", "--fp8-recipe"),
    ("fp8_attention", "--fp8-attention"),
    ("recompute_modules", "--recompute-modules"),
    ("compile", "--compile"),
    ("power_cap", "--power-cap"),
    ("moe_dispatch", "--moe-dispatch"),
    ("moe_imbalance", "--moe-imbalance"),
    ("cuda_graph", "--cuda-graph"),
    ("dp_overlap", "--dp-overlap/--no-dp-overlap"),
    ("tp_overlap", "--tp-overlap/--no-tp-overlap"),
    ("ep_overlap", "--ep-overlap/--no-ep-overlap"),
    ("search", "--search"),
    ("hosts", "--hosts"),
)


def _given(args: argparse.Namespace, options: Sequence[tuple[str, str]]) -> list[str]:
    """The flags of ``options`` the command line gave: a value other than unset or an
    empty list (``--no-sp`` gives False; ``--search`` unset is False)."""
    unset: tuple[Any, ...] = (None, [], ())
    return [
        flag
        for dest, flag in options
        if getattr(args, dest, None) not in (*unset, *((False,) if dest == "search" else ()))
    ]


def _refuse_unread_options(args: argparse.Namespace) -> None:
    """An option the request would not read is an error, never silently dropped: with
    ``--run`` every option the file states, with ``--search`` the degrees it varies, and
    ``--top`` without ``--search``.

    Raises:
        ConfigError: Naming the option and what to do instead.
    """
    if _get(args, "run", None):
        unread = _given(args, RUN_FILE_STATES)
        if unread:
            raise ConfigError(
                f"{unread[0]} is not read with --run: the run file states the model, the "
                "topology, the layout and the settings (change them in the file)"
            )
    elif _get(args, "search", False):
        fixed = _given(args, ONE_LAYOUT_OPTIONS)
        if fixed:
            raise ConfigError(
                f"{fixed[0]} prices one layout and --search ranks every layout: give one "
                "or the other"
            )
    elif _get(args, "top", None) is not None:
        raise ConfigError("--top sets how many layouts --search ranks: give --search too")


@contextlib.contextmanager
def _failed_strategies_refused(asked: dict[str, str], every: bool) -> Iterator[None]:
    """Price inside, then refuse a strategy that failed while it was priced: those named in
    ``asked`` (name -> option), and with ``every`` any other.

    Raises:
        PluginError: Naming the option (or the strategy), its plugin and what went wrong.
    """
    try:
        yield
    except FabricError:
        _refuse_failed_strategies(asked, every)
        raise
    _refuse_failed_strategies(asked, every)


def _refuse_failed_strategies(asked: dict[str, str], every: bool) -> None:
    from fabricui.plugins import get_host

    host = get_host()
    names = [*asked, *(name for name in host.strategies() if every and name not in asked)]
    for name in names:
        why = host.call_failure("strategies", name)
        if why is not None:
            option = asked.get(name)
            said = f"{option} {name}" if option else f"strategy {name}, which the plan uses"
            raise PluginError(f"{said}: {why}")


def plan_request(args: argparse.Namespace) -> PlanRequest:
    """The service request ``args`` describe."""
    from fabricui.model import RecipeChoices

    mfu = _get(args, "mfu", None)
    if mfu is not None:
        mfu = checked(mfu, MFU, "--mfu")
    words = _get(args, "layout", None)
    if words:
        args = _with_layout_words(args, words)
    return PlanRequest(
        topology=topology_request(args),
        model=model_of(args),
        layout=layout_request(args),
        dp_strategy=_get(args, "dp_strategy", None),
        sequence_parallel=_get(args, "sp", None),
        extra_strategies=tuple(_get(args, "extra_strategies", ())),
        recipe=RecipeChoices(
            recompute=_get(args, "recompute", None),
            precision=_get(args, "precision", None),
            attention=_get(args, "attention", None),
            dp_overlap=_get(args, "dp_overlap", None),
            tp_overlap=_get(args, "tp_overlap", None),
            ep_overlap=_get(args, "ep_overlap", None),
            mfu=mfu,
            fp8_recipe=_get(args, "fp8_recipe", None),
            recompute_modules=_modules(_get(args, "recompute_modules", None)),
            passes="compiled" if _get(args, "compile", None) else None,
            moe_dispatch=_get(args, "moe_dispatch", None),
            moe_imbalance=_ranged(args, "moe_imbalance", MOE_IMBALANCE),
            cuda_graph=_get(args, "cuda_graph", None),
            power_W=_ranged(args, "power_cap", POWER_CAP_W),
            fp8_attention=_get(args, "fp8_attention", None),
        ),
        search=bool(_get(args, "search", False)),
        top=_get(args, "top", SEARCH_TOP),
        catalog=catalog_request(args),
        hosts=_get(args, "hosts", None),
        framework=_get(args, "framework", None),
    )


def _ranged(args: argparse.Namespace, name: str, bound: Range) -> float | None:
    """Option ``name`` checked against ``bound``, the message naming the flag."""
    value = _get(args, name, None)
    wrong = None if value is None else between(value, bound)
    if wrong:
        raise ConfigError(f"--{name.replace('_', '-')}: {wrong}")
    return value


def _with_layout_words(args: argparse.Namespace, words: str) -> argparse.Namespace:
    """``args`` with what ``--layout`` says where no option said it.

    Raises:
        ConfigError: A word that is not a degree, a data-parallel strategy or a recompute
            mode.
    """
    default = LayoutChoice()
    try:
        said = parse_layout(words, default)
    except ConfigError as exc:
        raise ConfigError(f"--layout: {exc.message}") from None
    fixed = [
        f"{name}{getattr(said, name)}"
        for name in ("tp", "pp", "ep", "cp")
        if getattr(said, name) != getattr(default, name)
    ]
    if fixed and _get(args, "search", False):
        raise ConfigError(
            f"--layout {fixed[0]} fixes a degree and --search ranks every layout: give "
            "one or the other (--layout fsdp selective: the strategy and the recompute)"
        )
    filled = argparse.Namespace(**vars(args))
    for name, option in (("tp", "tp"), ("pp", "pp"), ("ep", "ep"), ("cp", "cp")):
        if _get(args, option, None) is None and getattr(said, name) != getattr(default, name):
            setattr(filled, option, getattr(said, name))
    if _get(args, "dp_strategy", None) is None and said.dp_strategy != default.dp_strategy:
        filled.dp_strategy = said.dp_strategy
    if _get(args, "recompute", None) is None and said.recompute is not None:
        filled.recompute = said.recompute
    return filled


def _modules(text: str | None) -> tuple[str, ...] | None:
    """``--recompute-modules`` as a tuple (the recipe checks the names)."""
    if not text:
        return None
    return tuple(part.strip() for part in text.split(",") if part.strip())


def layout_request(args: argparse.Namespace) -> LayoutRequest:
    """The degrees and batch of ``args``."""
    return LayoutRequest(
        tp=_get(args, "tp", None),
        pp=_get(args, "pp", None),
        dp=_get(args, "dp", None),
        cp=_get(args, "cp", None),
        ep=_get(args, "ep", None),
        etp=_get(args, "etp", None),
        vpp=_get(args, "vpp", None),
        microbatches=_get(args, "microbatches", None),
        micro_batch=_get(args, "micro_batch", None),
        global_batch=_get(args, "global_batch", None),
        seq_len=_get(args, "seq", None),
    )


def _get(args: argparse.Namespace, name: str, default: Any) -> Any:
    value = getattr(args, name, None)
    return default if value is None else value


def _print(args: argparse.Namespace, data: dict[str, Any], text: Any) -> None:
    if getattr(args, "json", False):
        print_json(data)
    else:
        print(text())


# --- text ------------------------------------------------------------------------------------


def describe_layout(layout: Layout) -> str:
    """``tp 8 x cp 1 x pp 2 x dp 2 (ep 1, vpp 1), micro-batches 8 x 1, global batch 16 x 8192``."""
    etp = f"etp {layout.etp}, " if layout.etp and layout.etp != layout.tp else ""
    return (
        f"tp {layout.tp} x cp {layout.cp} x pp {layout.pp} x dp {layout.dp} (ep {layout.ep}, "
        f"{etp}vpp {layout.vpp}), micro-batches {layout.microbatches} x {layout.micro_batch:g}, "
        f"global batch {layout.global_batch} x {layout.seq_len} tokens"
    )


def render_plan(report: PlanReport, fabric: Fabric, n_gpus: int | None = None) -> str:
    """Operation table, step breakdown, throughput, memory and assumptions of one plan
    (on ``n_gpus``, the job's, when given; else the fabric's)."""
    n_gpus = fabric.n_gpus if n_gpus is None else n_gpus
    head = (
        f"{report.model} on {report.topology} ({report.layout.world} of {fabric.n_gpus} GPUs): "
        f"{describe_layout(report.layout)}"
    )
    cells = [
        (
            p.op.strategy,
            p.op.collective,
            p.op.group,
            str(p.group_size),
            format_bytes(p.op.size_bytes),
            f"{p.calls:g}",
            _time(p.time_us),
            _time(p.exposed_us),
            p.algorithm,
            p.op.note,
        )
        for p in report.operations
    ]
    lines = [head, ""]
    if report.memory is not None and not report.fits:  # said first: the step is moot
        lines[1:1] = [
            f"does not fit: {report.memory_GB:.1f} GB per GPU of {report.memory_limit_GB:.0f} GB"
            f" usable (memory below); {_advice(report, n_gpus)}"
        ]
    lines += _table(cells) if cells else ["no communication (one GPU per model replica, no DP)"]
    lines += ["", *breakdown_lines(report, fabric)]
    return "\n".join(lines)


def _advice(report: PlanReport, n_gpus: int) -> str:
    """``try: --recompute full; --micro-batch 1 ...; or --search for the layouts that fit``."""
    advice = memory_advice(report, n_gpus)
    return f"try: {'; '.join(advice)}; or --search for the layouts that fit"


def _time(time_us: float) -> str:
    return "0" if time_us == 0 else format_time_us(time_us)


def breakdown_lines(report: PlanReport, fabric: Fabric) -> list[str]:
    """The step breakdown, throughput, memory and assumptions as text lines."""
    parts = report.breakdown()
    step = report.step_us
    pp = report.layout.pp
    lines = [f"step per GPU{_stage(report.critical_stage, pp, 'slowest')}:"]
    rows = [(name, parts.pop(key, 0.0)) for key, name in STEP_PARTS]
    rows += list(parts.items())  # a plugin's own exposed categories
    for name, value in rows:  # every share is of the step, the bubble's too
        share = f"{value / step:6.1%}" if step else ""
        lines.append(f"  {name:<17} {_time(value):>10}  {share}")
    whole = f"{1:6.1%}" if step else ""
    lines.append(f"  {'step':<17} {_time(step):>10}  {whole}")
    lines.append(
        f"  exposed comm {_time(report.exposed_comm_us)} of {_time(report.comm_us)} communication; "
        f"{_bubble_words(report)}"
    )
    basis = (
        f"compute at a fixed {report.compute_mfu:.0%} of peak"
        if report.compute_mfu is not None
        else "kernel model, "
        + ", ".join(
            part
            for part in (
                report.recipe.framework,
                report.recipe.precision,
                f"{report.recipe.attention_impl or report.recipe.attention}"
                f"{_fp8_attention_words(report.recipe)} attention",
            )
            if part
        )
    )
    lines.append(
        f"throughput: {report.tflops_per_gpu:.0f} TFLOP/s per GPU, MFU {report.mfu:.1%} of "
        f"{report.peak_tflops:g} TFLOP/s ({report.flops_per_token:.3g} model FLOP/token; {basis})"
    )
    mem = report.memory
    if mem is not None:
        lines.append(
            f"memory per GPU{_stage(mem.stage, pp, 'most loaded')}: {report.memory_GB:.1f} GB of "
            f"{report.memory_limit_GB:.0f} GB usable = weights {mem.weights_bytes / 1e9:.1f} + "
            f"grads {mem.grads_bytes / 1e9:.1f} + optimizer {mem.optimizer_bytes / 1e9:.1f} + "
            f"activations {mem.activations_bytes / 1e9:.1f}"
            + (f" + logits {mem.logits_bytes / 1e9:.1f}" if mem.logits_bytes else "")
            + "".join(f" + {what} {size / 1e9:.1f}" for what, size in mem.extra)
            + ("" if report.fits else "  (does not fit)")
        )
    if report.stage_layers and len(set(report.stage_layers)) > 1:
        lines.append(f"layers per stage: {', '.join(str(n) for n in report.stage_layers)}")
    if report.assumptions:
        lines.append("assumed:")
        lines += [f"  - {text}" for text in report.assumptions]
    return lines


def _fp8_attention_words(recipe: Recipe) -> str:
    """`` mxfp8`` (the format) when attention runs in FP8, else nothing."""
    form = FP8_ATTENTION_FORMAT_OF.get(recipe.fp8_attention_recipe or "")
    return f" {form}" if form else ""


def _bubble_words(report: PlanReport) -> str:
    """The pipeline's idle share, said as what it is: the bubble over compute + recompute +
    bubble (``bubble_fraction``, not a share of the step as the rows above), beside the
    even-stage formula ``(pp-1)/(vpp m + pp-1)`` it comes to when the stages are equal."""
    lay = report.layout
    if lay.pp == 1:
        return "no pipeline bubble (pp 1)"
    idle, m = lay.pp - 1, lay.microbatches
    formula = (
        f"(pp-1)/(vpp x m+pp-1) = {idle}/{lay.vpp * m + idle}"
        if lay.vpp > 1
        else f"(pp-1)/(m+pp-1) = {idle}/{m + idle}"
    )
    even = service.even_stage_bubble_fraction(lay.pp, m, lay.vpp)
    return (
        f"pipeline bubble {report.bubble_fraction:.1%} of compute + recompute + bubble "
        f"(the pipeline's idle share; with even stages {formula} = {even:.1%})"
    )


def _stage(index: int, stages: int, which: str) -> str:
    """`` (pipeline stage 2 of 4, the slowest)`` for the 0-based ``index`` (the JSON's),
    counted from 1 as people count; empty without a pipeline."""
    return f" (pipeline stage {index + 1} of {stages}, the {which})" if stages > 1 else ""


def _table(cells: Sequence[tuple[str, ...]]) -> list[str]:
    right = [
        i
        for i, name in enumerate(COLUMNS)
        if name in ("ranks", "bytes", "count", "time", "exposed")
    ]
    return text_table([COLUMNS, *cells], right)


def render_search(result: SearchResult) -> str:
    """The ranked layouts, fastest first, each with why it wins (an ``etp`` column, the
    expert TP, when a layout's is not its TP)."""
    plans = result.plans
    names: tuple[str, ...] = (
        "#",
        "tp",
        "cp",
        "pp",
        "vpp",
        "dp",
        "ep",
        "mb",
        "dp strat",
        "recomp",
        "step",
        "exposed",
        "bubble",
        "MFU",
        "mem GB",
    )
    cells = [
        (
            str(i),
            *(str(getattr(p.layout, k)) for k in ("tp", "cp", "pp", "vpp", "dp", "ep")),
            f"{p.layout.micro_batch:g}",
            next((s for s in p.strategies if s not in MODEL_PARALLEL), "-"),
            p.recipe.recompute,
            *(_time(t) for t in (p.step_us, p.exposed_comm_us, p.bubble_us)),
            f"{p.mfu:.0%}",
            f"{p.memory_GB:.0f}",
        )
        for i, p in enumerate(plans, 1)
    ]
    if any(p.layout.expert_tp != p.layout.tp for p in plans):
        at = names.index("ep") + 1
        names = (*names[:at], "etp", *names[at:])
        cells = [(*row[:at], str(p.layout.expert_tp), *row[at:]) for row, p in zip(cells, plans)]
    gpus = f"{result.fabric.n_gpus} GPUs"
    if result.job is not None:
        gpus = f"the job's {len(result.job.ranks)} of {gpus}"
    head = (
        f"{result.model.id} on {result.fabric.spec.id} ({gpus}): "
        f"{len(plans)} fastest layouts, global batch {result.global_batch} x "
        f"{result.seq_len} tokens"
    )

    right = [i for i, name in enumerate(names) if name not in ("dp strat", "recomp")]
    rows = text_table([names, *cells], right)
    why = [f"  {i}. {'; '.join(p.reasons())}" for i, p in enumerate(plans, 1)]
    limit = plans[0].memory_limit_GB if plans else 0.0
    note = (
        f"only layouts whose estimated memory fits in {limit:.0f} GB per GPU; "
        "step = compute + recompute + exposed comm + bubble + optimizer (the shares in why: "
        "of the step)"
    )
    return "\n".join([head, "", *rows, "", "why:", *why, "", note])


def _search_json(result: SearchResult) -> dict[str, Any]:
    data = {
        "model": result.model.id,
        "topology": result.fabric.spec.id,
        "global_batch": result.global_batch,
        "seq_len": result.seq_len,
        "plans": [p.to_json() for p in result.plans],
    }
    if result.job is not None:
        data["job"] = result.job.to_json()
    return data


def run_json(result: RunResult) -> dict[str, Any]:
    """One priced run: the entry, the measured and predicted step, and the plan."""
    measured = result.entry.run.step_time_s
    return {
        "id": result.entry.id,
        "model": result.entry.model.id,
        "quality": result.entry.quality,
        "meas_s": measured,
        "pred_s": result.report.step_us * 1e-6,
        "error": result.error,
        "gpu": result.fabric.spec.gpu,
        "fabric_gpus": result.fabric.n_gpus,
        "nodes": result.fabric.nodes,
        "plan": result.report.to_json(),
    }


def render_run(result: RunResult) -> str:
    """One priced run as text: the layout, the breakdown, measured vs predicted."""
    report = result.report
    entry = result.entry
    fabric, world = result.fabric, report.layout.world
    gpus = f"{world} of {fabric.n_gpus}" if world < fabric.n_gpus else str(world)
    head = (
        f"{entry.id}: {entry.model.name} on {gpus} {fabric.spec.gpu} GPUs "
        f"({fabric.nodes} node{'s' if fabric.nodes != 1 else ''}): "
        f"{describe_layout(report.layout)}"
    )
    lines = [head, *breakdown_lines(report, result.fabric)]
    if entry.run.step_time_s is not None and result.error is not None:
        lines.append(
            f"measured {entry.run.step_time_s:g} s, predicted {report.step_us * 1e-6:.3g} s "
            f"({result.error:+.1%})"
        )
    return "\n".join(lines)
