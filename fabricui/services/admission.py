"""Admission control: every request that can grow without bound says up front how much
work it is (flows, ranks, GPUs) and roughly what memory that takes; above the budget it is
refused with one line that says what would fit, instead of eating a shared login node.

The per-item costs below were measured on this code (peak RSS over a range of sizes, the
slope, rounded up); they are deliberately on the safe side: a refusal should be right, an
admitted request should fit. Routing many flows costs what the fabric makes it cost, so
flows are measured on a sample of the request's own (``flow_memory``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from fabricui.errors import ConfigError
from fabricui.units import format_bytes, parse_size

#: Environment variable raising (or lowering) the budget; ``--max-memory`` wins over it.
ENV_MAX_MEMORY = "FABRICUI_MAX_MEMORY"
#: Default budget [bytes]: a share of a few-GB, 2-core login node.
DEFAULT_BUDGET_BYTES = 2 * 2**30
#: Memory a process has before any work (interpreter, numpy, the catalog) [bytes].
BASE_BYTES = 120 * 2**20
#: Memory per GPU of a built fabric (device and link tables, routes) [bytes].
GPU_BYTES = 2000
#: Memory per rank of a collective's prediction (every algorithm's flows, their routes and
#: loads) [bytes]. Measured 2026-11-23 as the slope of peak RSS of ``fabricui collective
#: all_reduce --size 1G`` on dragonfly-cluster: 1.13 GB at 64,000 ranks, 1.95 GB at
#: 128,000, 3.58 GB at 240,000 (12-13 KB per rank); a fat-tree takes less (0.79 GB at
#: 64,000). Rounded up.
RANK_BYTES = 15_000


@dataclass(frozen=True)
class Work:
    """How big a request is."""

    what: str
    """What is asked, for the message (``traffic all_to_all among 8192 GPUs``)."""
    items: int
    """How many units of work (flows, GPUs ...)."""
    unit: str
    """Their name (``flows``)."""
    bytes_each: int
    """Estimated memory per unit [bytes]."""
    start_bytes: int = BASE_BYTES
    """Memory the process holds before the work [bytes] (``resident_bytes()`` where the
    request is admitted after loading, ``BASE_BYTES`` before)."""

    @property
    def bytes(self) -> int:
        """Estimated peak memory of the request [bytes]."""
        return self.start_bytes + self.items * self.bytes_each


def memory_budget(text: str | None = None) -> int:
    """The budget [bytes]: ``--max-memory`` if given, else ``$FABRICUI_MAX_MEMORY``, else
    ``DEFAULT_BUDGET_BYTES``.

    Raises:
        ConfigError: A value that is not a size of at least 64 MiB.
    """
    source = "--max-memory"
    if text is None:
        text, source = os.environ.get(ENV_MAX_MEMORY), ENV_MAX_MEMORY
    if not text:
        return DEFAULT_BUDGET_BYTES
    try:
        value = parse_size(text, whole_bytes=False)  # a limit: a fraction of a byte is moot
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None
    if value < 64 * 2**20:
        raise ConfigError(f"{source} {text}: at least 64M (a size such as 4G)")
    return value


def format_size(value: float) -> str:
    """``1.5 GiB``: a byte count as messages show it."""
    return format_bytes(value)


def resident_bytes() -> int:
    """Memory the process holds now [bytes] (resident set; 0 where unknown)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        try:
            import resource
        except ImportError:  # Windows
            return 0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def admit(work: Work, budget_bytes: int, advice: str) -> None:
    """Let ``work`` run, or refuse it in one line.

    Args:
        work: The request's size.
        budget_bytes: The memory it may use.
        advice: What the user can do instead (``use --gpus 1448 or fewer``).

    Raises:
        ConfigError: The estimate is above the budget.
    """
    if work.bytes <= budget_bytes:
        return
    raise ConfigError(
        f"{work.what} is {work.items:,} {work.unit}, about {format_size(work.bytes)} to compute "
        f"(limit {format_size(budget_bytes)}, --max-memory or {ENV_MAX_MEMORY}): {advice}"
    )


def group_advice(most: int) -> str:
    """How to ask for a collective among at most ``most`` GPUs, in each command's words."""
    return f"use --gpus {most} or fewer (snapshot: --group gpus:{most}), or --group per-node"


def admit_collective(op: str, ranks: int, budget_bytes: int | None = None) -> None:
    """Let a collective among ``ranks`` GPUs be predicted, or refuse it in one line with
    the group size that fits (an all-to-all's n (n - 1) flows are measured on top:
    ``flow_memory.admit_collective``).

    Raises:
        ConfigError: The estimate is above the budget.
    """
    budget = memory_budget() if budget_bytes is None else budget_bytes
    most = (budget - BASE_BYTES) // RANK_BYTES
    advice = (
        group_advice(most) if most >= 2 else raise_budget(BASE_BYTES + 2 * RANK_BYTES, "two GPUs")
    )
    admit(Work(f"{op} among {ranks:,} GPUs", ranks, "ranks", RANK_BYTES), budget, advice)


def raise_budget(need_bytes: int, smallest: str) -> str:
    """The advice when not even the smallest request fits the budget: no count to give."""
    return f"even {smallest} need about {format_size(need_bytes)}: raise --max-memory"
