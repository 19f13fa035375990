"""``fabricui strategies``: the decision table (each strategy's communication intra vs inter)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError
from fabricui.render.output import print_json
from fabricui.vocabulary import DEFAULT_TOPOLOGY as DEFAULT_TOPOLOGY

if TYPE_CHECKING:
    from fabricui.engine.strategies import DecisionTable
    from fabricui.engine.types import Strategy
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import ModelShape

DEFAULT_MODEL = "llama3-70b"


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--topology``, ``--nodes``, ``--mfu`` and ``--json`` (plan and strategies).

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument(
        "--model", "-m", default=DEFAULT_MODEL, help=f"model id (default: {DEFAULT_MODEL})"
    )
    parser.add_argument(
        "--topology",
        "-t",
        default=DEFAULT_TOPOLOGY,
        help=f"built-in topology id or a YAML file path (default: {DEFAULT_TOPOLOGY})",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")
    parser.add_argument(
        "--mfu",
        type=float,
        default=0.4,
        help="fraction of the GPU's dense BF16 peak that compute achieves (default: 0.4)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``strategies`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "strategies",
        help="which parallelism strategies survive this fabric: comm intra- vs inter-node",
    )
    add_common_args(parser)
    parser.add_argument(
        "--seq",
        type=int,
        default=None,
        help="tokens per micro-batch of the reference step (default: 4096)",
    )
    parser.add_argument(
        "--microbatches",
        type=int,
        default=None,
        help="micro-batches per GPU of the reference step (default: 8)",
    )
    parser.add_argument(
        "--degree",
        type=int,
        default=None,
        help="group size of every strategy (default: GPUs per node, at most 8 and at most "
        "the node count)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Compute and print the decision table; returns the exit status (0).

    Args:
        args: Parsed arguments (``model``, ``topology``, ``nodes``, ``json`` and optionally
            ``seq``, ``microbatches``, ``mfu``, ``hwdb``).

    Raises:
        FabricError: Unknown model or topology, or invalid numbers.
    """
    from fabricui.engine import strategies as engine
    from fabricui.services.session import pricer, without_failed_strategies

    _catalog, fabric, model = load_context(args)
    table = engine.decision_table(
        fabric,
        model,
        load_strategies().values(),
        seq_len=_arg(args, "seq", engine.TABLE_SEQ),
        microbatches=_arg(args, "microbatches", engine.TABLE_MICROBATCHES),
        mfu=_arg(args, "mfu", engine.DEFAULT_MFU),
        degree=getattr(args, "degree", None),
        evaluate=pricer(fabric),
    )
    table = without_failed_strategies(table)
    if args.json:
        print_json(table.to_json())
    else:
        print(render_table(table))
    return 0


def _arg(args: argparse.Namespace, name: str, default: Any) -> Any:
    value = getattr(args, name, None)
    return default if value is None else value


def load_context(args: argparse.Namespace) -> tuple[Catalog, Fabric, ModelShape]:
    """The catalog (with ``--hwdb`` dirs), the built fabric and the model of ``args``.

    Raises:
        FabricError: Unknown model or topology, or a bad ``--nodes``.
    """
    from fabricui.hwdb.catalog import unknown_id_message
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.session import build_fabric_with_plugins, load_catalog_with_plugins

    catalog = load_catalog_with_plugins(
        getattr(args, "hwdb", None) or [], calibration=getattr(args, "calibration", None)
    )
    model_id = getattr(args, "model", None) or DEFAULT_MODEL
    if model_id not in catalog.models:
        raise ConfigError(unknown_id_message("model", model_id, catalog.models))
    topology = getattr(args, "topology", None) or DEFAULT_TOPOLOGY
    spec = resolve_topology(topology, catalog, getattr(args, "nodes", None))
    return catalog, build_fabric_with_plugins(spec, catalog), catalog.models[model_id]


def load_strategies() -> dict[str, Strategy]:
    """Strategies by name: those plugins register, plus the built-in ones.

    Until pyproject.toml lists the ``fabricui_strategies`` entry points the plugin host does
    not load them, so the built-in classes are imported directly and added under any name
    no plugin registered. TODO(lead): drop the fallback once the entry points are wired.
    """
    found: dict[str, Strategy] = {}
    try:
        from fabricui.plugins import get_host

        found.update(get_host().strategies())
    except (ImportError, AttributeError):  # plugin host not ready: built-ins only
        pass
    for strategy in _builtin_strategies():
        found.setdefault(strategy.name, strategy)
    return found


def _builtin_strategies() -> list[Strategy]:
    from fabricui_strategies.ddp import DDP
    from fabricui_strategies.ep import ExpertParallel
    from fabricui_strategies.hsdp import HSDP
    from fabricui_strategies.pp import PipelineParallel
    from fabricui_strategies.tp import SequenceParallelTP, TensorParallel
    from fabricui_strategies.zero import FSDP, Zero1, Zero2

    return [
        DDP(),
        Zero1(),
        Zero2(),
        FSDP(),
        HSDP(),
        TensorParallel(),
        SequenceParallelTP(),
        PipelineParallel(),
        ExpertParallel(),
    ]


def render_table(table: DecisionTable) -> str:
    """The decision table as text: comm per step intra and inter, against the step."""
    from fabricui.units import format_time_us

    head = (
        f"{table.model} on {table.topology}: each strategy alone on {table.degree} GPUs, "
        f"{table.microbatches} micro-batches x {table.seq_len} tokens per GPU; "
        f"compute {format_time_us(table.step_us)} per step at {table.mfu:.0%} MFU"
    )
    columns = ("strategy", "comm intra", "OK intra?", "comm inter", "OK inter?")
    cells = [
        (
            row.name,
            _comm_cell(row.comm_us_intra, table.step_us),
            row.intra_verdict,
            _comm_cell(row.comm_us_inter, table.step_us),
            row.inter_verdict,
        )
        for row in table.rows
    ]
    widths = [max(len(c[i]) for c in [columns, *cells]) for i in range(len(columns))]
    lines = [head, "", _line(columns, widths), *(_line(c, widths) for c in cells), ""]
    lines += [f"  {row.name}: {row.note}" for row in table.rows if row.note]
    lines.append(_rule_text())
    if all(row.comm_us_inter is None for row in table.rows):
        lines.append("one node: give --nodes N (N >= 2) for the cross-node column")
    return "\n".join(lines)


def _comm_cell(comm_us: float | None, step_us: float) -> str:
    from fabricui.units import format_time_us

    if comm_us is None:
        return "-"
    return f"{format_time_us(comm_us)} ({comm_us / step_us:.0%})"


def _rule_text() -> str:
    from fabricui.engine.strategies import GOOD_EXPOSED_FRACTION, OK_EXPOSED_FRACTION

    return (
        "comm: per step (% of compute); OK when the exposed part (after overlap) is <= "
        f"{OK_EXPOSED_FRACTION:.0%} of compute, marginal above {GOOD_EXPOSED_FRACTION:.0%}"
    )


def _line(cells: Any, widths: list[int]) -> str:
    return "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths)).rstrip()
