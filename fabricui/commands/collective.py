"""``fabricui collective``: time, algbw and busbw of a collective per size, as nccl-tests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricui.commands.options import (
    add_hosts_option,
    add_json_option,
    add_topology_options,
    catalog,
    completes,
    take_free_words,
    topology_request,
    written_path,
)
from fabricui.errors import ConfigError, FabricError, unknown_id_message
from fabricui.files import check_target, shown_path, write_text
from fabricui.render.output import print_json
from fabricui.render.progress import terminal_progress
from fabricui.render.table import text_table
from fabricui.render.terminal_fit import fitted_width
from fabricui.services.command_requests import CollectiveRequest
from fabricui.services.requests import GROUP_CHOICES
from fabricui.units import (
    format_bytes,
    join_size_units,
    parse_bandwidth_GBps,
    parse_message_size,
    parse_size_sweep,
)
from fabricui.vocabulary import LAUNCHES, OPS, op_name, pick_label


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``collective`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "collective", help="predict a collective per size (time, algbw, busbw, algorithm)"
    )
    op = parser.add_argument(
        "op",
        nargs="?",
        metavar="OP",
        help=f"{', '.join(OPS)} (also allreduce, all-reduce, AllReduce ...); before or after "
        "the options, and the sizes may follow it as words (all_reduce 64K 1G, or 8:16G)",
    )
    completes(op, OPS)
    take_free_words(parser, "words")
    add_topology_options(parser)
    # --gpus and --group both pick the ranks: given together, one would silently win.
    ranks = parser.add_mutually_exclusive_group()
    ranks.add_argument("--gpus", type=int, help="use the first N GPUs (global ranks 0..N-1)")
    ranks.add_argument(
        "--group",
        choices=GROUP_CHOICES,
        default=None,
        help="all GPUs (default), the GPUs of host 0 (node is the same), of scale-up domain 0 "
        "(an NVLink rack), or GPU 0 of every node",
    )
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument(
        "--size",
        "--message-size",
        dest="size",
        nargs="+",
        metavar="S",
        help="sizes: 8, 64K, 1G (binary, as nccl-tests), 1GB, 1GiB",
    )
    sizes.add_argument(
        "--sweep",
        "--sizes",
        dest="sweep",
        metavar="A:B",
        help="sizes from A to B doubling, e.g. 8:16G, or one size (as `snapshot --sweep`)",
    )
    algo = parser.add_argument(
        "--algo",
        default="auto",
        help="auto (NCCL's own pick per size, the fastest beside it), or force ring, tree, "
        "p2p, nvls, nvlstree, sharp, pat, ... (as NCCL_ALGO does); hierarchical: a "
        "framework's calls per level (in each node, then across nodes), each NCCL's pick",
    )
    completes(algo, "collective_algorithm")
    parser.add_argument(
        "--nccl",
        metavar="VERSION",
        help="NCCL release whose tuner picks (2.18 to 2.30; default the newest modelled)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NCCL_NAME=VALUE",
        help="NCCL setting of the job (repeatable), read as NCCL reads it: NCCL_ALGO, "
        "NCCL_PROTO (^ excludes), NCCL_MIN/MAX_NCHANNELS, NCCL_NVLS_ENABLE, "
        "NCCL_COLLNET_ENABLE ...; on Slingshot libfabric's FI_CXI_RX_MATCH_MODE, "
        "FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD, FI_HMEM_CUDA_USE_GDRCOPY; on EFA and Slingshot "
        "aws-ofi-nccl's OFI_NCCL_NET_LATENCY; NCCL_*, FI_* and OFI_NCCL_* variables of this "
        "shell are read too",
    )
    parser.add_argument(
        "--ideal",
        action="store_true",
        help="textbook bandwidth-only time (needs --nranks and --bw)",
    )
    parser.add_argument("--nranks", type=int, help="ranks for --ideal")
    parser.add_argument("--bw", help="per-rank bandwidth for --ideal, e.g. 100GB/s or 400Gb/s")
    parser.add_argument(
        "--tuner",
        type=written_path,
        metavar="FILE",
        help="write a config for NCCL's example tuner plugin (NCCL_TUNER_CONFIG_FILE) with "
        "the best picks that beat NCCL's own by --tuner-margin or more (fabrics that run NCCL)",
    )
    parser.add_argument(
        "--tuner-margin",
        type=float,
        default=0.05,
        metavar="SHARE",
        help="least saving a --tuner line needs, as a share of NCCL's time (default 0.05)",
    )
    parser.add_argument("--force", action="store_true", help="let --tuner replace a file")
    parser.add_argument(
        "--launch",
        choices=LAUNCHES,
        default=LAUNCHES[0],
        help="one process per GPU (default, as torchrun and mpirun -np N run), or one "
        "process driving every GPU of its node (nccl-tests -g N): a call then takes at "
        "least that process's issue on its GPUs",
    )
    parser.add_argument(
        "--gpus-per-thread",
        type=int,
        metavar="N",
        help="with --launch single-process: each thread drives N GPUs, 1 to a node's "
        "(fewer: nccl-tests -g N with several processes or threads per node, issuing side by "
        "side)",
    )
    add_hosts_option(parser, "the group is the job's GPUs, compared with as many packed")
    add_json_option(parser, "print one JSON object")
    return parser


def _op_and_sizes(args: argparse.Namespace) -> tuple[str, list[int]]:
    """The operation and the sizes, wherever they were typed: ``all_reduce 1G 4G`` (sizes as
    words after it), ``--size 1G all_reduce`` (``--size`` takes several values, so a size
    that is an operation's name is the operation) or ``all_reduce 8:16G`` (a sweep).

    Raises:
        ConfigError: No operation, two, an unknown one (with the nearest names), no sizes,
            or sizes given both as words and by an option.
    """
    free = join_size_units(([args.op] if args.op else []) + list(args.words))
    given = join_size_units(list(args.size or []))
    named = [w for w in given + free if op_name(w) is not None]
    if len(named) > 1:
        raise ConfigError(f"collective: one operation, not {', '.join(named)}")
    loose = [w for w in free if op_name(w) is None]
    if not named:
        unknown = [w for w in loose if not _sizes_word(w)]
        if unknown:
            raise ConfigError(unknown_id_message("operation", unknown[0], OPS))
        raise ConfigError(f"collective: give the operation ({', '.join(OPS)})")
    op = op_name(named[0])
    assert op is not None
    given = [w for w in given if w not in named]
    if loose and (given or args.sweep):
        option = "--size" if given else "--sweep"
        raise ConfigError(f"collective: sizes as words ({' '.join(loose)}) and by {option}")
    if loose:
        return op, [size for word in loose for size in _sizes_of(word, "size")]
    if args.sweep:
        return op, _sizes_of(args.sweep, "--sweep")
    if not given:
        raise ConfigError("collective: give --size S [S ...], --sweep A:B or sizes after the op")
    return op, [parse_message_size(w) for w in given]


def _sizes_of(word: str, what: str) -> list[int]:
    """The sizes ``word`` names: one (``1G``) or a doubling range (``8:16G``).

    Raises:
        ConfigError: Neither, named by ``what``.
    """
    return parse_size_sweep(word, what) if ":" in word else [parse_message_size(word, what)]


def _sizes_word(word: str) -> bool:
    """True when ``word`` reads as a size or a size range (``1G``, ``8:16G``)."""
    try:
        _sizes_of(word, "size")
    except ConfigError:
        return False
    return True


def run(args: argparse.Namespace) -> int:
    """Predict and print; returns 0.

    Raises:
        FabricError: Bad sizes, topology, group, algorithm; ``--ideal`` without its numbers.
    """
    from fabricui.services.collective import ideal_collective, predict_collective

    op, sizes = _op_and_sizes(args)
    if args.tuner:
        if args.ideal:
            raise ConfigError("--tuner needs a topology's prediction, not --ideal")
        check_target(Path(args.tuner), args.force)
    if args.hosts and (args.gpus is not None or args.group is not None):
        given = "--gpus" if args.gpus is not None else "--group"
        raise ConfigError(f"--hosts picks the job's GPUs: give --hosts or {given}, not both")
    per_thread = args.gpus_per_thread
    if per_thread is not None and (per_thread < 1 or args.launch != LAUNCHES[1]):
        raise ConfigError(
            f"--gpus-per-thread {per_thread}: give a count of 1 or more, "
            f"with --launch {LAUNCHES[1]}"
        )
    if not args.ideal and (args.nranks is not None or args.bw is not None):
        given = "--nranks" if args.nranks is not None else "--bw"
        raise ConfigError(
            f"{given} is for --ideal (a textbook time); a topology's prediction takes its "
            "ranks from --gpus, --group or --hosts"
        )
    if args.ideal:
        if args.nranks is not None and args.nranks < 2:
            raise ConfigError(
                f"--nranks {args.nranks}: a collective needs at least 2 ranks "
                "(one rank moves nothing)"
            )
        if not args.nranks or not args.bw:
            raise ConfigError("--ideal needs --nranks N (>= 2) and --bw BW, e.g. 100GB/s")

        result = ideal_collective(op, sizes, args.nranks, parse_bandwidth_GBps(args.bw))
    else:
        from fabricui.services.collective import (
            blame_environment,
            nccl_environment,
            setting_names,
        )

        request = CollectiveRequest(
            topology_request(args),
            op,
            tuple(sizes),
            args.group,
            args.gpus,
            args.algo,
            args.hosts,
            nccl_version=args.nccl,
            nccl_env=tuple(sorted(nccl_environment(args.env).items())),
            single_process=args.launch == LAUNCHES[1],
            gpus_per_thread=per_thread,
        )
        from fabricui.services.collective import COLLECTIVE_PHASES, newer_than_modelled

        if warning := newer_than_modelled(args.nccl):
            print(f"fabricui: warning: {warning}", file=sys.stderr)

        phases = COLLECTIVE_PHASES + (args.hosts is not None)
        with terminal_progress("collective", phases, quiet=args.json) as progress:
            try:
                result = predict_collective(request, catalog(args), progress=progress)
            except FabricError as error:
                raise blame_environment(error, setting_names(args.env)) from None
    if args.tuner:
        _write_tuner(args, result)
    if args.json:
        print_json(result.to_json())
    else:
        print(render(result.to_json(), width=fitted_width(sys.stdout)))
    return 0


def _write_tuner(args: argparse.Namespace, result: Any) -> None:
    """Write the tuner plugin's config; say so on stderr (stdout stays the table or JSON)."""
    from fabricui.services.collective import tuner_config

    if not 0 <= args.tuner_margin < 10:
        raise ConfigError(f"--tuner-margin must be a share from 0 (got {args.tuner_margin})")
    text, lines = tuner_config(result, result.nccl_nodes, args.tuner_margin)
    write_text(Path(args.tuner), text, force=args.force)
    print(
        f"wrote {shown_path(args.tuner)}: {lines} size range(s) where a pick beats NCCL's by "
        f"{100 * args.tuner_margin:.0f}% or more (use it with NCCL_TUNER_CONFIG_FILE="
        f"{shown_path(args.tuner)}"
        " and NCCL's example tuner plugin)",
        file=sys.stderr,
    )


def render(result: dict[str, Any], width: int | None = None) -> str:
    """nccl-tests-like table of one collective's rows: NCCL's pick, and the best pick where
    it is faster (with what forces it).

    ``width``: the terminal's columns; a table wider than that leaves out its algbw column
    (busbw and the size carry it) so that each row stays on one line."""
    where = f" on {result['topology']}" if result["topology"] else " (ideal)"
    header = ["size", "time us", "algbw GB/s", "busbw GB/s", "algorithm"]
    picks = any("best_pick" in row for row in result["rows"])
    if picks:
        pick = pick_label(result.get("library"))
        header = [*header[:4], pick, "ch", "best pick", "best us", "gain"]
    rows = [tuple(header)]
    notes: dict[str, list[str]] = {}
    for row in result["rows"]:
        cells = [
            format_bytes(row["size_bytes"]),
            f"{row['time_us']:.2f}",
            f"{row['algbw_GBps']:.2f}",
            f"{row['busbw_GBps']:.2f}",
            row["algorithm"],
        ]
        if picks:
            nccl, best = row["nccl_pick"], row["best_pick"]
            channels = "" if nccl["channels"] is None else str(nccl["channels"])
            differs = bool(row["env"])
            best_label = f"{best['algorithm']}/{best['protocol']}" if differs else "same"
            cells += [
                channels,
                best_label,
                f"{best['time_us']:.2f}" if differs else "",
                f"{100 * row['gain']:.0f}%" if differs else "",
            ]
            if differs:
                setting = " ".join(f"{k}={v}" for k, v in row["env"].items())
                if row.get("caution"):
                    setting += f" (caution: {row['caution']})"
                notes.setdefault(setting, []).append(format_bytes(row["size_bytes"]))
        rows.append(tuple(cells))
    library = result.get("library")
    title = f"{result['op']}{where}, {result['nranks']} ranks"
    if library:
        title += f"; {library}'s pick" if library.startswith("NCCL") else f"; {library}"
    if result.get("launch") == LAUNCHES[1]:
        per_thread = result.get("gpus_per_thread")
        title += (
            f"; each thread drives {per_thread} GPU(s)"
            if per_thread
            else "; one process drives every GPU of a node"
        )
    lines = [title]
    job = result.get("job")
    if job is not None:
        rows[0] = (*rows[0], "packed busbw")
        for i, packed in enumerate(result["packed_rows"], start=1):
            rows[i] = (*rows[i], f"{packed['busbw_GBps']:.2f}")
        lines.append(
            f"job on {len(job['hosts'])} host(s) {job['hostlist']}: {job['top_tier']} "
            "is the highest tier its traffic climbs; 'packed' is as many GPUs from rank 0"
        )
    right = {0, 1, 2, 3} | ({5, 7, 8} if picks else set())
    if job is not None:
        right.add(len(rows[0]) - 1)
    table = text_table(rows, right=right)
    if width is not None and max(map(len, table)) > width:
        table = _narrow_table(rows, right)
        lines[0] += " (busbw in GB/s)"
    for setting, sizes in notes.items():
        span = sizes[0] if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"
        table.append(f"best for {span}: {setting}")
    table += [f"note: {note}" for note in result.get("notes", ())]
    return "\n".join([*lines, *table])


def _narrow_table(rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    """The table for a terminal narrower than its full width: without its algbw column
    (busbw and the size carry it) and with the busbw headers as ``busbw`` and ``packed``
    (the title gives their unit), so that NCCL's pick and the best one stay on each row's
    line."""
    algbw = rows[0].index("algbw GB/s")
    short = {"busbw GB/s": "busbw", "packed busbw": "packed"}
    header = tuple(short.get(cell, cell) for cell in rows[0])
    narrow = [(*row[:algbw], *row[algbw + 1 :]) for row in [header, *rows[1:]]]
    return text_table(narrow, right={c - (c > algbw) for c in right if c != algbw})
