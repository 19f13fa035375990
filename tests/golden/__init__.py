"""Pinned predictions (cases.yaml): what a command prints, figure by figure."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import yaml

CASES = Path(__file__).with_name("cases.yaml")

#: The figures pinned for each command (JSON key paths; ``rows.*`` expands per row).
FIGURES = {
    "path": ("bottleneck_GBps", "latency_us", "transfer_us"),
    "collective": (
        "rows.*.time_us",
        "rows.*.nccl_pick.algorithm",
        "rows.*.nccl_pick.protocol",
        "rows.*.best_pick.time_us",
    ),
    "plan": (
        "step_s",
        "compute_us",
        "exposed_comm_us",
        "bubble_us",
        "optimizer_us",
        "memory_GB",
        "fits",
        "layout.tp",
        "layout.pp",
        "layout.dp",
    ),
}


def load_cases() -> list[dict[str, Any]]:
    with CASES.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def run_json(argv: list[str]) -> Any:
    """The command's ``--json`` output, run in-process as the CLI runs it."""
    from fabricui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    if status != 0:
        raise RuntimeError(f"fabricui {' '.join(map(str, argv))}: exit {status}: {err.getvalue()}")
    return json.loads(out.getvalue())


def _walk(data: Any, parts: list[str], prefix: str) -> dict[str, Any]:
    if not parts:
        return {prefix: data}
    head, rest = parts[0], parts[1:]
    join = f"{prefix}." if prefix else ""
    if head == "*":
        found: dict[str, Any] = {}
        for i, item in enumerate(data):
            found.update(_walk(item, rest, f"{join}{i}"))
        return found
    if isinstance(data, list):
        return _walk(data[int(head)], rest, f"{join}{head}")
    return _walk(data[head], rest, f"{join}{head}")


def figures_of(argv: list[str], data: Any) -> dict[str, Any]:
    """The pinned figures of one command's output, by key path."""
    found: dict[str, Any] = {}
    for path in FIGURES[argv[0]]:
        found.update(_walk(data, path.split("."), ""))
    return found


def moved(pinned: Any, now: Any, tolerance: float) -> bool:
    """A figure moved: a number beyond the relative tolerance, anything else changed."""
    if isinstance(pinned, (int, float)) and isinstance(now, (int, float)):
        if math.isnan(pinned) or math.isnan(now):
            return not (math.isnan(pinned) and math.isnan(now))
        return abs(now - pinned) > tolerance * max(abs(pinned), 1e-12)
    return pinned != now
