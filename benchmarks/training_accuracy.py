"""Accuracy of the training-step model against published training runs (a benchmark, not a
test).

Usage: python benchmarks/training_accuracy.py --data ../shared/data/training/runs.yaml
[--json] [--rows] [--all] [--families] [--published-schema]

Every ``reference`` entry (``--all``: every entry) is priced as ``fabricui plan --run``
prices it, and scored as the data's README defines: entry error ``|t_pred / t_meas - 1|``
on ``run.step_time_s``; the summary gives the median and the 90th percentile over entries
(numpy's linear interpolation) and the mean signed error ``t_pred / t_meas - 1`` (negative:
optimistic). ``--json`` prints ``{"summary": {"scored", "median", "p90", "mean_signed"}, "families":
{family: summary}, "entries": [{"id", "pred_s", "meas_s", "error", "families"}]}`` with
fractions, not percents; ``--families`` prints each family's summary (A100 Megatron,
Hopper dense BF16, FP8, FSDP, MoE, Blackwell; a run can be in several). An entry
that cannot be priced is named on stderr, counted as ``failed`` and not scored.
``--published-schema`` first drops every ``run`` key outside the shared data's published
entry schema (``PUBLISHED_RUN_KEYS``), as an unseen row of the same tables states them:
what the model then assumes is what such a row gets.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabricui.errors import FabricError
from fabricui.hwdb.run_file import PUBLISHED_RUN_KEYS

#: Families the summary is broken down by, in print order (an entry can be in several).
FAMILIES = (
    "A100 Megatron",
    "Hopper dense BF16",
    "FP8",
    "FSDP",
    "MoE",
    "Blackwell",
)


@dataclass(frozen=True)
class Scored:
    """One entry's prediction and score."""

    id: str
    """Entry id."""
    pred_s: float
    """Predicted step time [s]."""
    meas_s: float
    """Measured step time [s]."""
    breakdown: dict[str, float]
    """The predicted step's parts [s]."""
    families: tuple[str, ...] = ()
    """The ``FAMILIES`` it belongs to."""

    @property
    def signed(self) -> float:
        """``pred / meas - 1``."""
        return self.pred_s / self.meas_s - 1.0

    @property
    def error(self) -> float:
        """``|pred / meas - 1|``."""
        return abs(self.signed)


def summarize(scored: Sequence[Scored], failed: int = 0) -> dict[str, Any]:
    """Median and 90th percentile of the errors, and the mean signed error (fractions)."""
    errors = [s.error for s in scored]
    signed = [s.signed for s in scored]
    return {
        "scored": len(scored),
        "failed": failed,
        "median": float(np.median(errors)) if errors else None,
        "p90": float(np.percentile(errors, 90)) if errors else None,
        "mean_signed": float(np.mean(signed)) if signed else None,
    }


def score(path: Path, every: bool = False) -> tuple[list[Scored], list[str]]:
    """Price and score the entries of a run file.

    Args:
        path: The run file.
        every: Score every entry with a measured step, not only ``reference`` ones.

    Returns:
        (scored entries, one line per entry that could not be priced).

    Raises:
        FabricError: The file cannot be read or parsed.
    """
    from fabricui.services.plan import load_strategies
    from fabricui.services.plan_runs import price_entry, read_runs
    from fabricui.services.session import load_catalog

    catalog = load_catalog()
    strategies = load_strategies()
    scored, problems = [], []
    for entry in read_runs(path, catalog):
        if entry.run.step_time_s is None or not (every or entry.quality == "reference"):
            continue
        try:
            result = price_entry(entry, catalog, strategies)
        except FabricError as exc:
            problems.append(f"{entry.id}: {exc.message}")
            continue
        parts = {k: v * 1e-6 for k, v in result.report.breakdown().items()}
        families = families_of(result)
        scored.append(
            Scored(entry.id, result.report.step_us * 1e-6, entry.run.step_time_s, parts, families)
        )
    return scored, problems


def published_schema(path: Path, out_dir: Path) -> Path:
    """A copy of a run file in ``out_dir`` whose run blocks keep only ``PUBLISHED_RUN_KEYS``.

    Raises:
        FabricError: The file cannot be read or parsed as YAML.
    """
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FabricError(f"{path}: cannot read: {exc}") from None
    entries = data if isinstance(data, list) else [data]
    for entry in entries:
        run = entry.get("run") if isinstance(entry, dict) else None
        if isinstance(run, dict):
            for key in [k for k in run if k not in PUBLISHED_RUN_KEYS]:
                del run[key]
    stripped = out_dir / f"{Path(path).stem}.published.yaml"
    stripped.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return stripped


def families_of(result: Any) -> tuple[str, ...]:
    """The families of a priced run: by GPU generation, precision, sharding and experts."""
    report, arch = result.report, result.fabric.gpu.arch
    moe = result.entry.model.experts > 0
    fsdp = any(name in ("fsdp", "hsdp") for name in report.strategies)
    out = []
    if arch == "ampere" and report.recipe.framework.startswith("megatron"):
        out.append("A100 Megatron")
    if arch == "hopper" and not moe and report.recipe.precision != "fp8":
        out.append("Hopper dense BF16")
    if report.recipe.precision == "fp8" and not moe:
        out.append("FP8")
    if fsdp and not moe:
        out.append("FSDP")
    if moe:
        out.append("MoE")
    if arch == "blackwell":
        out.append("Blackwell")
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints a table (or JSON); 0, or 2 for an unreadable file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "training" / "runs.yaml"
    parser.add_argument("--data", type=Path, default=default, help="runs YAML")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--rows", action="store_true", help="print each entry's step breakdown")
    parser.add_argument("--all", action="store_true", help="score every measured entry")
    parser.add_argument(
        "--families", action="store_true", help="print the summary of each family too"
    )
    parser.add_argument(
        "--published-schema",
        action="store_true",
        help="drop run keys outside the shared data's published schema before scoring",
    )
    args = parser.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = published_schema(args.data, Path(tmp)) if args.published_schema else args.data
            scored, problems = score(data, args.all)
    except FabricError as exc:
        print(f"training_accuracy: error: {exc.message}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"training_accuracy: not scored: {line}", file=sys.stderr)
    summary = summarize(scored, len(problems))
    by_family = {
        family: summarize([s for s in scored if family in s.families]) for family in FAMILIES
    }
    if args.json:
        entries = [
            {
                "id": s.id,
                "pred_s": s.pred_s,
                "meas_s": s.meas_s,
                "error": s.error,
                "families": list(s.families),
            }
            for s in scored
        ]
        out = {"summary": summary, "families": by_family, "entries": entries}
        print(json.dumps(out, indent=2))
        return 0
    for s in sorted(scored, key=lambda s: -s.error):
        print(f"{100 * s.signed:+6.1f}%  {s.id:<44} pred {s.pred_s:9.3f} s  meas {s.meas_s:9.3f} s")
        if args.rows:
            parts = ", ".join(f"{k} {v:.3g}" for k, v in s.breakdown.items() if v)
            print(f"         {parts}")
    fmt = {
        k: (
            f"{100 * v:+.1f}%"
            if k == "mean_signed" and v is not None
            else f"{100 * v:.1f}%"
            if isinstance(v, float)
            else v
        )
        for k, v in summary.items()
    }
    if args.families:
        print(f"{'family':<20} {'runs':>4} {'median':>7} {'p90':>7} {'mean signed':>12}")
        for family, stats in by_family.items():
            if stats["scored"]:
                print(
                    f"{family:<20} {stats['scored']:>4} {100 * stats['median']:>6.1f}% "
                    f"{100 * stats['p90']:>6.1f}% {100 * stats['mean_signed']:>+11.1f}%"
                )
    print(f"summary: {fmt}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
