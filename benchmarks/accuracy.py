"""Accuracy of the collective model against real nccl-tests runs (a benchmark, not a test).

Usage: python benchmarks/accuracy.py --data ../shared/data/nccl/measurements.yaml [--json]
       [--rows [ENTRY] [--small]] [--logs benchmarks/data/nccl_logs.yaml]
       [--log-dir ../shared/data/topo/nccl_debug_logs] [--source-env FILE | --entry-env-only]

For every ``reference`` entry: build the topology from its ``hardware`` block, predict each
row (honouring ``env``, ``launch`` and ``score_min_bytes``; ``env`` completed by what the
run's own job scripts exported, ``benchmarks/data/source_env.yaml``), and score as the data's README
defines: row error |t_pred / t_meas - 1| (time when published, else busbw); an entry's error
is the median over its rows; the summary gives median and p90 over entries, and the same
over bandwidth-bound rows (>= 64 MiB) and latency-bound rows (<= 64 KiB). Two predictions
are scored separately: NCCL's pick (the algorithm, protocol and channels NCCL's own tuner
chooses, priced by the engine: what the runs ran) and the best pick (the fastest the engine
knows among those NCCL can run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fabricui.engine.collectives import parse_library_version, predict
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.nccl.picks import P2P_OPS
from fabricui.errors import FabricError
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument, read_yaml
from fabricui.services.collective import JOB_ENV
from fabricui.services.session import collective_algorithms

LARGE = 64 * 2**20
SMALL = 64 * 2**10
ROOT = Path(__file__).resolve().parents[1]
#: Environment published runs set that their entries leave out, by result directory.
SOURCE_ENV = ROOT / "benchmarks" / "data" / "source_env.yaml"
_GITHUB_PATH = re.compile(r"https://github\.com/([^/]+/[^/]+)/(?:tree|blob)/[^/]+/(.+?)/?$")


def load_source_env(path: Path | None) -> list[dict[str, Any]]:
    """The result directories of ``path`` (``source_env.yaml``) with what their job scripts
    exported; none when ``path`` is None."""
    if path is None:
        return []
    return list(read_yaml(path).data or [])


def completed_env(entry: dict[str, Any], directories: list[dict[str, Any]]) -> dict[str, Any]:
    """An entry's ``env`` with what its run's job scripts exported added: the variables of
    the result directory its ``source`` (a GitHub tree or blob address) is in; a variable
    the entry states keeps the entry's value."""
    env = dict(entry.get("env") or {})
    found = _GITHUB_PATH.match(str(entry.get("source", "")))
    if found is None:
        return env
    repository, path = found.groups()
    for directory in directories:
        folder = directory["directory"].rstrip("/")
        if directory["repository"] == repository and (
            path == folder or path.startswith(folder + "/")
        ):
            return {**directory["env"], **env}
    return env


def log_matches(logs_file: Path, log_dir: Path | None, catalog) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """How often the model of NCCL's tuner picks what NCCL logged choosing.

    Every log of ``logs_file`` (a log with the hardware it ran on) is read; each logged
    choice is predicted on that hardware for the release the log prints. The logs of
    ``log_dir`` are only read, to count how many show choices at all (without their
    hardware they cannot be scored).

    Returns:
        ``choices``, ``algorithm`` (the algorithm matches), ``pick`` (algorithm and protocol
        match), ``channels`` (and NCCL's channel count, where printed), per-log details,
        and ``unscored_logs`` / ``unscored_with_choices`` for ``log_dir``.
    """
    from fabricui.engine.group import Group
    from fabricui.engine.nccl.picks import ENGINE_ALGORITHM
    from fabricui.importers.nccl_log import read_nccl_log

    counts = {"choices": 0, "algorithm": 0, "pick": 0, "channels": 0, "channels_printed": 0}
    details = []
    entries = read_yaml(logs_file).data if logs_file.exists() else []
    for entry in entries or []:
        log = read_nccl_log(ROOT / entry["log"])
        doc = YamlDocument(data=entry["hardware"], origin=f"nccl_logs:{entry['id']}")
        fabric = build_fabric(parse_topology(doc, catalog, default_id=entry["id"]), catalog)
        nranks = int(entry.get("nranks") or fabric.n_gpus)
        group = Group(
            fabric,
            np.arange(nranks),
            library_version=parse_library_version(log.version),
            nccl_env={k: v for k, v in log.env.items() if k.startswith("NCCL_")},
        )
        matched = 0
        for choice in log.choices:
            if choice.op is None:
                continue
            size = choice.size_bytes
            if choice.per_rank and choice.op in ("all_gather", "reduce_scatter"):
                size *= nranks
            prediction = predict(group, choice.op, [size], collective_algorithms())
            nccl = prediction.choice.nccl if prediction.choice is not None else None
            if nccl is None:
                continue
            counts["choices"] += 1
            same_algorithm = nccl.nccl_algorithm[0] == choice.algorithm or (
                ENGINE_ALGORITHM.get(choice.algorithm) == nccl.algorithm[0]
            )
            counts["algorithm"] += same_algorithm
            same = same_algorithm and nccl.protocol[0] == choice.protocol
            counts["pick"] += same
            matched += same
            if choice.channels is not None:
                counts["channels_printed"] += 1
                counts["channels"] += same and nccl.channels[0] == choice.channels
        details.append({"id": entry["id"], "choices": len(log.choices), "matched": matched})
    unscored, with_choices = 0, 0
    if log_dir is not None and log_dir.is_dir():
        for path in sorted(log_dir.iterdir()):
            if path.is_file():
                unscored += 1
                with_choices += bool(read_nccl_log(path).choices)
    return {
        **counts,
        "logs": details,
        "unscored_logs": unscored,
        "unscored_with_choices": with_choices,
    }


@dataclass
class EntryResult:
    """Scores of one measurement entry."""

    id: str
    quality: str
    op: str
    error: float | None = None
    large: float | None = None
    small: float | None = None
    middle: float | None = None
    """Median error of the rows between the small and the large classes."""
    signed: float | None = None
    """Median over rows of t_pred / t_meas - 1 (positive: predicted slower than measured)."""
    best_error: float | None = None
    """The same median error for the best pick (the fastest the model knows)."""
    best_large: float | None = None
    best_small: float | None = None
    best_middle: float | None = None
    best_signed: float | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    problem: str = ""
    env_added: list[str] = field(default_factory=list)
    """Variables taken from the run's job scripts (``source_env.yaml``), not the entry."""


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def score_entry(  # type: ignore[no-untyped-def]
    entry: dict[str, Any], catalog, directories: list[dict[str, Any]] | None = None
) -> EntryResult:
    """Predict and score every row of one entry (its ``env`` completed from
    ``directories``, ``load_source_env``)."""
    result = EntryResult(id=entry["id"], quality=entry.get("quality", ""), op=entry["op"])
    doc = YamlDocument(data=entry["hardware"], origin=f"measurements:{entry['id']}")
    try:
        spec = parse_topology(doc, catalog, default_id=entry["id"])
        fabric = build_fabric(spec, catalog)
    except FabricError as exc:
        result.problem = str(exc)
        return result
    rows = [r for r in entry["rows"] if r[0] >= (entry.get("score_min_bytes") or 0)]
    sizes = np.array([r[0] for r in rows], dtype=np.float64)
    nranks = entry.get("nranks", fabric.n_gpus)
    env = completed_env(entry, directories or [])
    result.env_added = sorted(set(env) - set(entry.get("env") or {}))
    try:
        prediction = evaluate_collective(
            fabric,
            entry["op"],
            sizes,
            ranks=np.arange(nranks),
            algorithms=collective_algorithms(env),
            algo=_forced_algo(env, entry["op"]),
            single_process=entry.get("launch") == "single-process",
            library_version=parse_library_version(entry.get("nccl_version")),
            nccl_env={str(k): str(v) for k, v in env.items() if str(k).startswith(JOB_ENV)},
        )
    except FabricError as exc:  # the run cannot be priced (NCCL itself would refuse it)
        result.problem = str(exc)
        return result
    scores = {"nccl": _Scores(), "best": _Scores()}
    for i, (size, t_meas, _algbw, busbw_meas) in enumerate(rows):
        picks = {
            "nccl": float(prediction.time_us[i]),
            "best": float(prediction.best_time_us[i]),
        }
        if not t_meas and not busbw_meas:
            continue
        errs = {}
        for name, t_pred in picks.items():
            busbw_pred = float(size) / t_pred / 1e3 * _bus_factor(entry["op"], nranks)
            if t_meas:
                err, sign = abs(t_pred / t_meas - 1), t_pred / t_meas - 1
            else:
                err = abs(busbw_pred / busbw_meas - 1)
                sign = busbw_meas / busbw_pred - 1 if busbw_pred > 0 else float("inf")
            scores[name].add(size, err, sign)
            errs[name] = err
        result.rows.append(
            {
                "size_bytes": int(size),
                "measured_us": t_meas,
                "predicted_us": picks["nccl"],
                "best_us": picks["best"],
                "measured_busbw": busbw_meas,
                "predicted_busbw": float(prediction.busbw_GBps[i]),
                "algorithm": prediction.algorithm[i],
                "channels": _nccl_channels(prediction, i),
                "best_algorithm": prediction.best_algorithm[i],
                "error": errs["nccl"],
                "best_error": errs["best"],
            }
        )
    nccl, best = scores["nccl"], scores["best"]
    result.error, result.large, result.small, result.middle, result.signed = nccl.medians()
    (
        result.best_error,
        result.best_large,
        result.best_small,
        result.best_middle,
        result.best_signed,
    ) = best.medians()
    return result


@dataclass
class _Scores:
    """Row errors of one pick, kept by size class."""

    errors: list[float] = field(default_factory=list)
    large: list[float] = field(default_factory=list)
    small: list[float] = field(default_factory=list)
    middle: list[float] = field(default_factory=list)
    signed: list[float] = field(default_factory=list)

    def add(self, size: float, error: float, signed: float) -> None:
        self.errors.append(error)
        self.signed.append(signed)
        if size >= LARGE:
            self.large.append(error)
        elif size <= SMALL:
            self.small.append(error)
        else:
            self.middle.append(error)

    def medians(self) -> tuple[float | None, ...]:
        """Median error over all rows, large, small and middle rows, and the signed one."""
        return (
            _median(self.errors),
            _median(self.large),
            _median(self.small),
            _median(self.middle),
            _median(self.signed),
        )


def _nccl_channels(prediction, i: int) -> int | None:  # type: ignore[no-untyped-def]
    """Channels NCCL's pick runs at size ``i`` (None where they are not modelled)."""
    choice = prediction.choice
    return None if choice is None or choice.nccl is None else choice.nccl.channels[i]


def _bus_factor(op: str, nranks: int) -> float:
    from fabricui.engine.collectives import bus_factor

    return bus_factor(op, nranks)


def _forced_algo(env: dict[str, Any], op: str) -> str:
    """The algorithm ``NCCL_ALGO`` forces, or ``auto``: NCCL runs point-to-point operations
    (send/recv, all-to-all) outside its algorithm selection, so the variable leaves them be."""
    algo = str(env.get("NCCL_ALGO", "")).lower()
    return algo if algo in ("ring", "tree") and op not in P2P_OPS else "auto"


def summarize(results: list[EntryResult], pick: str = "nccl") -> dict[str, Any]:
    """Median and p90 over scored entries, large- and small-message medians, and the mean
    of the entries' signed errors (positive: the model predicts slower than measured), for
    NCCL's pick (``nccl``, what the runs ran) or the best pick (``best``)."""
    prefix = "" if pick == "nccl" else "best_"
    scored = [r for r in results if getattr(r, prefix + "error") is not None]
    errs = [getattr(r, prefix + "error") for r in scored]
    large = [v for r in scored if (v := getattr(r, prefix + "large")) is not None]
    small = [v for r in scored if (v := getattr(r, prefix + "small")) is not None]
    signed = [v for r in scored if (v := getattr(r, prefix + "signed")) is not None]
    return {
        "scored": len(scored),
        "median": _median(errs),
        "p90": float(np.percentile(errs, 90)) if errs else None,
        "large_median": _median(large),
        "small_median": _median(small),
        "mean_signed": float(np.mean(signed)) if signed else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints a table (or JSON) and returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "nccl" / "measurements.yaml"
    parser.add_argument("--data", type=Path, default=default, help="measurements YAML")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--all", action="store_true", help="score every quality, not only reference"
    )
    parser.add_argument(
        "--rows",
        nargs="?",
        const="",
        metavar="ENTRY",
        help="print measured vs predicted per row: of every entry, or of the entries whose "
        "id contains ENTRY",
    )
    parser.add_argument(
        "--small",
        action="store_true",
        help="with --rows: only latency-bound rows (<= 64 KiB), of the entries that have them",
    )
    parser.add_argument(
        "--logs",
        type=Path,
        default=ROOT / "benchmarks" / "data" / "nccl_logs.yaml",
        help="NCCL TUNING logs with their hardware: how often the model picks what NCCL did",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "topo" / "nccl_debug_logs",
        help="more NCCL_DEBUG logs, counted for choice lines (no hardware to score them on)",
    )
    parser.add_argument(
        "--source-env",
        type=Path,
        default=SOURCE_ENV,
        help="environment runs' job scripts exported that their entries leave out, by "
        "result directory",
    )
    parser.add_argument(
        "--entry-env-only",
        action="store_true",
        help="price each entry with its own env alone (no --source-env)",
    )
    args = parser.parse_args(argv)
    try:
        entries = read_yaml(args.data).data
        catalog = load_catalog()
        directories = load_source_env(None if args.entry_env_only else args.source_env)
    except FabricError as exc:  # a missing or malformed file: one line
        hint = "" if args.data.is_file() else " (give the measurements file with --data)"
        print(f"accuracy: error: {exc.message}{hint}", file=sys.stderr)
        return 2
    results = [
        score_entry(e, catalog, directories)
        for e in entries
        if args.all or e.get("quality") == "reference"
    ]
    completed = {r.id: r.env_added for r in results if r.env_added}
    summary = summarize(results)
    best = summarize(results, "best")
    logs = log_matches(args.logs, args.log_dir, catalog)
    if args.json:
        print(
            json.dumps(
                {
                    "entries": [
                        {
                            "id": r.id,
                            "problem": r.problem or None,
                            "error": r.error,
                            "signed": r.signed,
                            "large": r.large,
                            "middle": r.middle,
                            "small": r.small,
                            "best_error": r.best_error,
                            "best_large": r.best_large,
                            "env_from_job_scripts": r.env_added,
                        }
                        for r in results
                    ],
                    "summary": summary,
                    "best_summary": best,
                    "log_matches": logs,
                },
                indent=2,
            )
        )
        return 0
    print(f"{'NCCL':>6} {'signed':>7} {'best':>6} {'large':>6} {'middle':>6}  entry")
    for r in sorted(results, key=lambda r: -(r.error or 0)):
        listing = args.rows is not None and args.rows in r.id
        shown = [row for row in r.rows if not args.small or row["size_bytes"] <= SMALL]
        if listing and args.small and not shown:
            continue
        err, best_err, large, middle = (
            "   n/a" if v is None else f"{100 * v:5.1f}%"
            for v in (r.error, r.best_error, r.large, r.middle)
        )
        bias = "" if r.signed is None else f"{100 * r.signed:+6.1f}%"
        print(f"{err} {bias:>7} {best_err} {large} {middle}  {r.id:<52} {r.op:<14} {r.problem}")
        if listing:
            for row in shown:
                best_note = ""
                if row["best_algorithm"] != row["algorithm"]:
                    best_note = f"  best {row['best_us']:>10.1f}us {row['best_algorithm']}"
                channels = "" if row["channels"] is None else f" x{row['channels']}"
                print(
                    f"        {row['size_bytes']:>12}  meas {row['measured_us'] or 0:>10.1f}us "
                    f"{row['measured_busbw']:>7.1f}  pred {row['predicted_us']:>10.1f}us "
                    f"{row['predicted_busbw']:>7.1f}  {row['algorithm'] + channels:<20} "
                    f"{100 * row['error']:5.1f}%{best_note}"
                )
    for name, figures in (("NCCL's pick", summary), ("best pick", best)):
        fmt = {k: (f"{100 * v:.1f}%" if isinstance(v, float) else v) for k, v in figures.items()}
        print(f"summary ({name}): {fmt}")
    n = logs["choices"]
    print(
        f"logged NCCL choices: {n} in {len(logs['logs'])} log(s); the model picks the same "
        f"algorithm for {logs['algorithm']}, the same algorithm and protocol for {logs['pick']}"
        f", and NCCL's channels too for {logs['channels']} of {logs['channels_printed']} "
        f"printed; {logs['unscored_logs']} more log(s) in --log-dir, "
        f"{logs['unscored_with_choices']} with choice lines"
    )
    if completed:
        print(
            f"env completed from the runs' job scripts ({args.source_env.name}) for "
            f"{len(completed)} entr{'y' if len(completed) == 1 else 'ies'}: "
            + "; ".join(f"{k} (+{', '.join(v)})" for k, v in completed.items())
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `| head`: the reader left; say nothing more
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (flushed at exit, never closed)
        sys.exit(0)
