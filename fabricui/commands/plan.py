"""``fabricui plan``: price a parallel layout on a fabric, or rank every layout (``--search``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fabricui.commands.strategies import add_common_args, load_context, load_strategies
from fabricui.errors import ConfigError
from fabricui.render.output import print_json

if TYPE_CHECKING:
    from fabricui.engine.strategies import PlanReport
    from fabricui.engine.types import Layout, Strategy
    from fabricui.fabric.fabric import Fabric
    from fabricui.model import ModelShape

#: Data-parallel flavours ``--dp-strategy`` accepts.
DP_STRATEGIES = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
#: Strategies that split the model, never a ``--dp-strategy``.
MODEL_PARALLEL = ("tp", "tp-sp", "pp", "ep")
#: Rows ``--search`` prints.
SEARCH_TOP = 10
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
        "plan", help="price a TP/PP/DP/EP layout on a fabric: per-operation comm and step time"
    )
    add_common_args(parser)
    degrees = (
        ("--tp", "tensor-parallel degree (default: 1)"),
        ("--pp", "pipeline stages (default: 1)"),
        ("--dp", "data-parallel replicas (default: the GPUs left over)"),
        ("--ep", "expert-parallel degree, within DP (default: 1)"),
        ("--microbatches", "micro-batches per step (default: 4 x pp with pipelines, else 1)"),
        ("--global-batch", "sequences per step (default: dp x microbatches; --search: GPUs)"),
        ("--seq", "tokens per sequence (default: the model's)"),
    )
    for flag, text in degrees:
        parser.add_argument(flag, type=int, default=None, help=text)
    parser.add_argument(
        "--dp-strategy",
        default="ddp",
        metavar="NAME",
        help=f"how the data-parallel dimension communicates: {', '.join(DP_STRATEGIES)}, or a "
        "data-parallel strategy a plugin registers (default: ddp)",
    )
    parser.add_argument(
        "--strategy",
        action="append",
        default=[],
        dest="extra_strategies",
        metavar="NAME",
        help="also price this registered strategy, e.g. one from a plugin (repeatable; "
        "see fabricui plugins)",
    )
    parser.add_argument(
        "--sp", action="store_true", help="sequence parallel with TP (all-gather + reduce-scatter)"
    )
    parser.add_argument(
        "--search",
        action="store_true",
        help=f"rank every valid layout by step time (top {SEARCH_TOP}); ignores the degrees",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the plan (or the search ranking) as text or JSON; returns the exit status (0).

    Args:
        args: Parsed arguments (see ``add_parser``; missing optional ones take defaults).

    Raises:
        FabricError: Unknown ids, or a layout the model or fabric cannot run.
    """
    from fabricui.engine import strategies as engine
    from fabricui.services.session import pricer

    _catalog, fabric, model = load_context(args)
    chosen = chosen_strategies(
        _get(args, "dp_strategy", "ddp"),
        bool(_get(args, "sp", False)),
        _get(args, "extra_strategies", ()),
    )
    mfu = _get(args, "mfu", engine.DEFAULT_MFU)
    if _get(args, "search", False):
        seq = _get(args, "seq", model.seq_len)
        batch = _get(args, "global_batch", fabric.n_gpus)
        plans = engine.search_layouts(
            fabric, model, chosen, batch, seq, SEARCH_TOP, mfu, evaluate=pricer(fabric)
        )
        _print(args, _search_json(fabric, model, plans), lambda: render_search(plans))
        return 0
    layout = layout_from_args(args, fabric, model)
    report = engine.plan(fabric, model, layout, chosen, mfu, evaluate=pricer(fabric))
    _print(args, report.to_json(), lambda: render_plan(report, fabric))
    return 0


def _get(args: argparse.Namespace, name: str, default: Any) -> Any:
    value = getattr(args, name, None)
    return default if value is None else value


def _print(args: argparse.Namespace, data: dict[str, Any], text: Any) -> None:
    if getattr(args, "json", False):
        print_json(data)
    else:
        print(text())


def chosen_strategies(
    dp_strategy: str, sequence_parallel: bool, extra: Sequence[str] = ()
) -> list[Strategy]:
    """The strategies a plan uses: one DP flavour, TP (or TP+SP), PP, EP, then ``extra``.

    Args:
        dp_strategy: A built-in DP flavour (``DP_STRATEGIES``) or any registered strategy
            other than TP, PP and EP (a plugin's DP flavour, e.g. compressed DDP).
        sequence_parallel: Use TP with sequence parallelism.
        extra: Further registered strategies to price (``--strategy``), each once.

    Raises:
        ConfigError: An unknown or unregistered strategy.
    """
    available = load_strategies()
    if dp_strategy not in DP_STRATEGIES and (
        dp_strategy in MODEL_PARALLEL or dp_strategy not in available
    ):
        raise ConfigError(
            f"--dp-strategy must be one of {', '.join(DP_STRATEGIES)} or a data-parallel "
            f"strategy a plugin registers (got {dp_strategy!r}; see fabricui plugins)"
        )
    names = [dp_strategy, "tp-sp" if sequence_parallel else "tp", "pp", "ep"]
    names += [n for n in dict.fromkeys(extra) if n not in names]
    missing = [n for n in names if n not in available]
    if missing:
        raise ConfigError(f"strategies not available: {', '.join(missing)} (see fabricui plugins)")
    return [available[n] for n in names]


def layout_from_args(args: argparse.Namespace, fabric: Fabric, model: ModelShape) -> Layout:
    """The layout ``--tp/--pp/--dp/--ep/--microbatches/--global-batch/--seq`` describe.

    Raises:
        ConfigError: A degree below 1, or tp x pp that does not divide the GPUs when
            ``--dp`` is left out.
    """
    from fabricui.engine.types import Layout

    tp, pp, ep = (_positive(args, name, 1) for name in ("tp", "pp", "ep"))
    dp = _positive(args, "dp", 0) or _leftover_dp(fabric, tp, pp)
    microbatches = _positive(args, "microbatches", 4 * pp if pp > 1 else 1)
    batch = _positive(args, "global_batch", dp * microbatches)
    seq = _positive(args, "seq", model.seq_len)
    return Layout(tp, pp, dp, ep, microbatches, batch, seq)


def _positive(args: argparse.Namespace, name: str, default: int) -> int:
    value = getattr(args, name, None)
    if value is None:
        return default
    if value < 1:
        raise ConfigError(f"--{name.replace('_', '-')} must be at least 1 (got {value})")
    return int(value)


def _leftover_dp(fabric: Fabric, tp: int, pp: int) -> int:
    if tp * pp > fabric.n_gpus:
        raise ConfigError(f"layout needs {tp * pp} GPUs, {fabric.spec.id} has {fabric.n_gpus}")
    if fabric.n_gpus % (tp * pp):
        raise ConfigError(
            f"tp x pp = {tp * pp} does not divide {fabric.spec.id}'s {fabric.n_gpus} GPUs; "
            "give --dp"
        )
    return fabric.n_gpus // (tp * pp)


# --- text ------------------------------------------------------------------------------------


def describe_layout(layout: Layout) -> str:
    """``tp 8 x pp 2 x dp 2 (ep 1), 8 micro-batches, global batch 16 x 8192 tokens``."""
    return (
        f"tp {layout.tp} x pp {layout.pp} x dp {layout.dp} (ep {layout.ep}), "
        f"micro-batches {layout.microbatches}, global batch {layout.global_batch} x "
        f"{layout.seq_len} tokens"
    )


def render_plan(report: PlanReport, fabric: Fabric) -> str:
    """Operation table and step breakdown of one plan."""
    from fabricui.units import format_bytes

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
            f"{p.op.count:g}",
            _time(p.time_us),
            _time(p.exposed_us),
            p.algorithm,
            p.op.note,
        )
        for p in report.operations
    ]
    lines = [head, ""]
    lines += _table(cells) if cells else ["no communication (one GPU per model replica, no DP)"]
    lines += ["", *_breakdown(report, fabric, _time)]
    return "\n".join(lines)


def _time(time_us: float) -> str:
    from fabricui.units import format_time_us

    return "0" if time_us == 0 else format_time_us(time_us)


def _breakdown(report: PlanReport, fabric: Fabric, fmt: Any) -> list[str]:
    peak = fabric.gpu.bf16_dense_TFLOPS
    return [
        "step per GPU:",
        f"  compute         {fmt(report.compute_us):>10}  "
        f"({report.flops_per_token:.3g} FLOP/token at {report.mfu:.0%} of {peak:g} TFLOP/s)",
        f"  exposed comm    {fmt(report.exposed_comm_us):>10}  "
        f"(of {fmt(report.comm_us)} communication)",
        f"  pipeline bubble {fmt(report.bubble_us):>10}  "
        f"((p-1)/(m+p-1) = {report.bubble_fraction:.1%})",
        f"  step            {fmt(report.step_us):>10}",
        f"memory per GPU:   {report.memory_GB:.0f} GB of {report.memory_limit_GB:.0f} GB usable"
        + ("" if report.fits else "  (does not fit: raise tp/pp or shard with fsdp)"),
    ]


def _table(cells: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(c[i]) for c in [COLUMNS, *cells]) for i in range(len(COLUMNS))]
    right = {"ranks", "bytes", "count", "time", "exposed"}
    return [_line(COLUMNS, widths, right, COLUMNS)] + [
        _line(c, widths, right, COLUMNS) for c in cells
    ]


def _line(cells: Any, widths: list[int], right: set[str], names: tuple[str, ...]) -> str:
    parts = [
        f"{c:>{w}}" if name in right else f"{c:<{w}}" for c, w, name in zip(cells, widths, names)
    ]
    return "  ".join(parts).rstrip()


def render_search(plans: list[PlanReport]) -> str:
    """The ranked layouts, fastest first."""
    names = ("#", "tp", "pp", "dp", "ep", "mb", "step", "compute", "exposed", "bubble", "mem GB")
    cells = [
        (
            str(i),
            *(str(getattr(p.layout, k)) for k in ("tp", "pp", "dp", "ep", "microbatches")),
            *(_time(t) for t in (p.step_us, p.compute_us, p.exposed_comm_us, p.bubble_us)),
            f"{p.memory_GB:.0f}",
        )
        for i, p in enumerate(plans, 1)
    ]
    widths = [max(len(c[i]) for c in [names, *cells]) for i in range(len(names))]
    first = plans[0]
    head = (
        f"{first.model} on {first.topology}: {len(plans)} fastest layouts, global batch "
        f"{first.layout.global_batch} x {first.layout.seq_len} tokens"
    )
    rows = [_line(c, widths, set(names), names) for c in [names, *cells]]
    note = (
        f"only layouts whose estimated memory fits in {first.memory_limit_GB:.0f} GB per GPU "
        "(mixed-precision Adam states + activations)"
    )
    return "\n".join([head, "", *rows, "", note])


def _search_json(fabric: Fabric, model: ModelShape, plans: list[PlanReport]) -> dict[str, Any]:
    return {
        "model": model.id,
        "topology": fabric.spec.id,
        "plans": [p.to_json() for p in plans],
    }
