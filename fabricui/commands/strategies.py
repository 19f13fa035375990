"""``fabricui strategies``: the decision table (each strategy's communication intra vs inter)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fabricui.bounds import MFU, checked
from fabricui.commands.options import (
    add_topology_options,
    catalog_request,
    completes,
    topology_request,
)
from fabricui.errors import ConfigError
from fabricui.render.output import print_json
from fabricui.render.table import text_table
from fabricui.services.plan import (
    TableRequest,
    decision_table,
    exposed_thresholds,
    load_strategies,
    verdict_text,
)
from fabricui.units import format_time_us
from fabricui.vocabulary import DEFAULT_MODEL, spelling_key

if TYPE_CHECKING:
    from fabricui.engine.training.table import DecisionTable


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """``--model``, the topology options (``--topology``, ``--nodes``, what-if links),
    ``--mfu`` and ``--json`` (plan and strategies).

    Args:
        parser: The subcommand's parser.
    """
    model = parser.add_argument(
        "model_word",
        nargs="?",
        metavar="MODEL",
        help="the model, as --model (`plan llama3-70b --tp 8`)",
    )
    completes(model, "model")
    parser.add_argument(
        "--model",
        "-m",
        help=f"model id, or its name as written (Llama-3-70B); default {DEFAULT_MODEL}",
    )
    add_topology_options(parser)
    parser.add_argument(
        "--mfu",
        type=float,
        default=None,
        help="run compute at this fraction of the GPU's dense peak instead of the kernel "
        "model (GEMM and attention throughput from the GPU's hwdb figures)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def model_of(args: argparse.Namespace) -> str:
    """The model a command names: ``--model``, the MODEL word, else the default.

    Raises:
        ConfigError: Both name a model, and not the same one (``Llama-3-70B`` and
            ``llama3-70b`` are the same).
    """
    named, word = getattr(args, "model", None), getattr(args, "model_word", None)
    if named == "" or word == "":
        raise ConfigError("an empty model name (see fabricui hwdb list models)")
    if named and word and spelling_key(named) != spelling_key(word):
        raise ConfigError(f"one model, not {word} and --model {named}")
    return named or word or DEFAULT_MODEL


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
        "the node count; on an NVL72 rack a node is the rack's NVLink domain)",
    )
    framework = parser.add_argument(
        "--framework",
        metavar="ID",
        help="training framework whose defaults price the reference step (default: "
        "megatron-core; see fabricui hwdb list frameworks)",
    )
    completes(framework, "framework")
    return parser


def run(args: argparse.Namespace) -> int:
    """Compute and print the decision table; returns the exit status (0).

    Args:
        args: Parsed arguments (``model``, ``topology``, ``nodes``, ``json`` and optionally
            ``seq``, ``microbatches``, ``mfu``, ``degree``, ``hwdb``).

    Raises:
        FabricError: Unknown model or topology, or invalid numbers.
    """
    request = TableRequest(
        topology=topology_request(args),
        model=model_of(args),
        seq_len=getattr(args, "seq", None),
        microbatches=getattr(args, "microbatches", None),
        degree=getattr(args, "degree", None),
        mfu=_mfu(getattr(args, "mfu", None)),
        catalog=catalog_request(args),
        framework=getattr(args, "framework", None),
    )
    table = decision_table(request, strategies=load_strategies())
    if getattr(args, "json", False):
        good, _ok = exposed_thresholds()
        print_json({**table.to_json(), "good_exposed_fraction": good})
    else:
        print(render_table(table))
    return 0


def _mfu(value: float | None) -> float | None:
    """``--mfu`` checked as ``plan`` checks it (one range, one message)."""
    return None if value is None else checked(value, MFU, "--mfu")


#: Why a strategy of the table is absent.
MISSING_WHY = "(plugin disabled or failed to load; see fabricui plugins --all)"


def render_table(table: DecisionTable) -> str:
    """The decision table as text: comm per step intra and inter, against the step."""
    head = (
        f"{table.model} on {table.topology}: {table.groups}, "
        f"{table.microbatches} micro-batches x {table.seq_len} tokens per GPU; "
        f"compute {format_time_us(table.step_us)} per step ({table.compute_basis})"
    )
    columns = ("strategy", "comm intra", "OK intra?", "comm inter", "OK inter?")
    cells = [
        (
            row.name,
            _comm_cell(row.comm_us_intra, table.step_us, row.applies),
            verdict_text(row.intra_verdict, row.exposed_us_intra, table.step_us),
            _comm_cell(row.comm_us_inter, table.step_us, row.applies),
            verdict_text(row.inter_verdict, row.exposed_us_inter, table.step_us),
        )
        for row in table.rows
    ]

    lines = [head, "", *text_table([columns, *cells]), ""]
    lines += [f"  {row.name}: {row.note}" for row in table.rows if row.note]
    if table.missing:
        lines.append(f"  not loaded: {', '.join(table.missing)} {MISSING_WHY}")
    lines.append(_rule_text())
    lines.append(
        "the reference step is the whole model on one GPU; a plan's step (fabricui plan) "
        "prices its own batch and layout"
    )
    if all(row.comm_us_inter is None for row in table.rows):
        lines.append("one node: give --nodes N (N >= 2) for the cross-node column")
    return "\n".join(lines)


def _comm_cell(comm_us: float | None, step_us: float, applies: bool = True) -> str:
    if not applies:
        return "does not apply"
    if comm_us is None:
        return "-"
    return f"{format_time_us(comm_us)} ({comm_us / step_us:.0%})"


def _rule_text() -> str:
    good, ok = exposed_thresholds()
    return (
        "comm: per step (% of compute); OK when the exposed part (after overlap, in brackets "
        f"after the verdict) is <= {ok:.0%} of compute, marginal above {good:.0%}"
    )
