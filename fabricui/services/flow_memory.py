"""What routing many flows at once costs in memory, measured rather than assumed: a traffic
pattern, the explorer's heat view and an all-to-all are admitted (``admission``) by routing a
sample of their own flows on their own fabric and scaling up what the sample took.

Why measured: the memory per flow depends on the fabric and on the group, not only on the
flow count. A flow on a fat-tree loads about 9 links and aggregates, while on a dragonfly
its adaptive routes spread over 65 to 125 (and the width grows when the group spans more
dragonfly groups), so one figure per flow was off by a factor of 8 one way or the other.
The sample takes milliseconds; its peak is traced with ``tracemalloc`` (numpy reports its
buffers), at two sample sizes so that what does not grow with the flows is set apart.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.bulk import bulk_router
from fabricui.errors import ConfigError
from fabricui.services import admission

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: Flows of the two samples whose traced peaks give the memory per flow.
SAMPLE_FLOWS = (400, 1200)
#: Resident bytes per traced byte of the engine's arrays: what the allocator keeps beyond
#: the live buffers (freed arrays below glibc's growing mmap threshold stay in the heap).
#: Measured 2026-11-27 as peak RSS minus the start over the sample's scaled peak: 1.0-1.25
#: on fat-trees and dragonflies, 1.5-1.65 on the 4,096-chip torus (its max-min filling
#: runs many rounds of equal-sized arrays). Rounded up.
RESIDENT_PER_TRACED = 1.7
#: Bytes per flow of building the pattern itself (an all-to-all's n x n index grids and
#: mask, then the flow arrays); not in the sample, which draws its flows directly.
PATTERN_BYTES = 48
#: The least a routed flow costs [bytes] (a flow loading a single link): requests whose
#: flows cannot fit even at this rate are refused without routing a sample.
FLOOR_BYTES = 120
#: The least a flow of a whole pattern is taken to cost, traced [bytes]: its route, its
#: share of the max-min filling and their temporaries. A sample's slope can fall below it
#: where a call's fixed arrays (per link of a big fabric) dwarf the sample's flows: on the
#: imported Selene cluster and the 4,096-chip torus the slope read 71 B while whole
#: all-to-alls of 1,000 to 2,000 GPUs traced 435-440 B a flow and took 445-515 B resident
#: (as on a fat-tree), so their estimates came out at half the peak. Measured 2026-11-29;
#: rounded up (300 B traced is 558 B resident with the pattern's arrays).
MIN_PER_FLOW_BYTES = 300

_TRACING = threading.Lock()


def flow_count(pattern: str, gpus: int) -> int:
    """Flows of ``pattern`` among ``gpus`` GPUs (an all-to-all: every ordered pair)."""
    return gpus * (gpus - 1) if pattern == "all_to_all" else gpus


def sample_flows(
    pattern: str, ranks: NDArray[np.int64], count: int, seed: int = 0
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """About ``count`` flows of ``pattern`` among ``ranks``, evenly spread over the
    pattern's order (which ``engine.traffic.pattern_flows`` defines), without building
    the whole pattern: every source and every distance is represented."""
    from fabricui.engine.traffic import pattern_flows

    ranks = np.asarray(ranks, dtype=np.int64)
    n = ranks.shape[0]
    total = flow_count(pattern, n)
    pick = np.unique(np.linspace(0, total - 1, min(count, total)).astype(np.int64))
    if pattern != "all_to_all":
        src, dst = pattern_flows(pattern, ranks, seed)
        return src[pick], dst[pick]
    row, col = pick // (n - 1), pick % (n - 1)
    col = col + (col >= row)  # the pattern skips each rank's flow to itself
    return ranks[row], ranks[col]


@dataclass(frozen=True)
class FlowCost:
    """The memory a flow computation takes, from its samples."""

    fixed_bytes: float
    """What the computation takes whatever its size (traced) [bytes]."""
    per_flow_bytes: float
    """What each flow adds (traced) [bytes]."""

    def peak_bytes(self, flows: int, start_bytes: int) -> int:
        """Estimated peak resident memory of the process computing ``flows`` flows, from
        ``start_bytes`` [bytes]."""
        traced = self.fixed_bytes + self.per_flow_bytes * flows
        return int(start_bytes + RESIDENT_PER_TRACED * traced + PATTERN_BYTES * flows)


def measure(run_sample: Callable[[int], Any]) -> FlowCost:
    """Trace the peak of ``run_sample(k)`` for both ``SAMPLE_FLOWS`` sizes; the slope is
    the memory per flow, the rest is fixed."""
    with _TRACING:  # one measurement at a time (the explorer's workers share the process)
        return _measure(run_sample)


def _measure(run_sample: Callable[[int], Any]) -> FlowCost:
    """The larger sample is run first, cold: what a router builds once (an imported
    cluster's best-route trees, its caches) is set apart as fixed, so that it is not
    read as memory per flow (it had made a 400-GPU all-to-all on Selene 13 times its
    peak). The slope comes from both samples run warm, at least ``MIN_PER_FLOW_BYTES``."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    small, large = SAMPLE_FLOWS
    try:
        cold = _traced_peak(run_sample, large)
        peaks = [_traced_peak(run_sample, count) for count in SAMPLE_FLOWS]
    finally:
        if started:
            tracemalloc.stop()
    slope = (peaks[1] - peaks[0]) / (large - small)
    per_flow = max(FLOOR_BYTES / RESIDENT_PER_TRACED, MIN_PER_FLOW_BYTES, slope)
    fixed = max(0.0, peaks[0] - per_flow * small, cold - per_flow * large)
    return FlowCost(fixed, per_flow)


def _traced_peak(run_sample: Callable[[int], Any], count: int) -> int:
    """What ``run_sample(count)`` allocated at its peak, traced [bytes]."""
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    run_sample(count)
    _, peak = tracemalloc.get_traced_memory()
    return max(0, peak - before)


def admit_flows(
    what: str,
    gpus: int,
    pattern: str,
    cost_of: Callable[[int], FlowCost],
    advice: Callable[[int], str],
    budget_bytes: int | None = None,
) -> None:
    """Let ``pattern`` among ``gpus`` GPUs be routed, or refuse it in one line whose advice
    (a GPU count from ``advice``) is itself admitted.

    Args:
        what: What is asked, for the message (``traffic all_to_all among 1024 GPUs``).
        gpus: GPUs of the request.
        pattern: Its traffic pattern (``all_to_all``, ``ring`` ...).
        cost_of: The measured cost of the pattern among the first N of its GPUs.
        advice: What to do instead, given the largest GPU count that fits.
        budget_bytes: The budget (default ``admission.memory_budget()``).

    Raises:
        ConfigError: The estimate is above the budget.
    """
    budget = admission.memory_budget() if budget_bytes is None else budget_bytes
    start = admission.resident_bytes() or admission.BASE_BYTES
    flows = flow_count(pattern, gpus)
    floor = start + (FLOOR_BYTES + PATTERN_BYTES) * flows
    if floor <= budget:
        estimate = cost_of(gpus).peak_bytes(flows, start)
        if estimate <= budget:
            return
        about = f"about {admission.format_size(estimate)}"
    else:
        estimate, about = floor, f"at least {admission.format_size(floor)}"
    fits = _most_gpus(gpus, estimate, start, budget, pattern, cost_of)
    raise ConfigError(
        f"{what} is {flows:,} flows, {about} to compute (limit "
        f"{admission.format_size(budget)}, --max-memory or {admission.ENV_MAX_MEMORY}): "
        + advice(fits)
    )


def _most_gpus(
    gpus: int,
    estimate: int,
    start: int,
    budget: int,
    pattern: str,
    cost_of: Callable[[int], FlowCost],
) -> int:
    """A GPU count below ``gpus`` whose measured estimate fits the budget, near the largest.

    Memory per flow changes with the group (wider routes once it spans more switches), so
    each candidate is measured: the flows are scaled by the room left, until one fits.
    """
    candidate = gpus
    for _ in range(8):
        room = max(0.0, budget - start) / max(1, estimate - start)
        flows = int(flow_count(pattern, candidate) * room * 0.95)
        candidate = max(2, min(candidate - 1, _gpus_for(flows, pattern)))
        estimate = cost_of(candidate).peak_bytes(flow_count(pattern, candidate), start)
        if estimate <= budget or candidate == 2:
            return candidate
    return 2


def _gpus_for(flows: int, pattern: str) -> int:
    """The GPU count with about ``flows`` flows of ``pattern``."""
    if pattern != "all_to_all":
        return flows
    return int((1 + (1 + 4 * flows) ** 0.5) / 2)


def traffic_cost(
    fabric: Any, pattern: str, ranks: Any, bulk: Any, seed: int = 0
) -> Callable[[int], FlowCost]:
    """The measured cost of ``pattern`` among the first N of ``ranks``, as ``traffic`` and
    the heat view compute it (max-min fair rates, both routing modes of a dragonfly)."""
    from fabricui.engine.traffic import simulate_traffic

    def cost(gpus: int) -> FlowCost:
        group = ranks[:gpus]
        return measure(
            lambda k: simulate_traffic(fabric, *sample_flows(pattern, group, k, seed), bulk)
        )

    return cost


def all_to_all_cost(bulk: Any, ranks: Any) -> Callable[[int], FlowCost]:
    """The measured cost of an all-to-all among the first N of ``ranks``, as the
    point-to-point algorithm prices it (every pair's load, both routing modes)."""

    def cost(gpus: int) -> FlowCost:
        group = ranks[:gpus]

        def run(k: int) -> None:
            src, dst = sample_flows("all_to_all", group, k)
            bulk.seconds_per_byte(src, dst, np.full(src.shape[0], 1.0 / gpus))

        return measure(run)

    return cost


def admit_collective(op: str, ranks: Any, router: Any, budget_bytes: int | None = None) -> None:
    """Let a collective among ``ranks`` be predicted (``admission.admit_collective``); an
    all-to-all's n (n - 1) flows are measured on the fabric of ``router`` too.

    Raises:
        ConfigError: The estimate is above the budget.
    """
    n = len(ranks)
    admission.admit_collective(op, n, budget_bytes)
    if op == "all_to_all":
        admit_flows(
            f"all_to_all among {n} GPUs",
            n,
            "all_to_all",
            all_to_all_cost(bulk_router(router), ranks),
            admission.group_advice,
            budget_bytes,
        )
