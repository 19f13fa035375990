"""How many ring steps a small all-reduce costs when operations run back to back.

NCCL's ring all-reduce cuts a channel's elements into one part per rank, each
``ceil(count / ranks)`` rounded up to a granularity (src/device/all_reduce.h ``runRing``):
16 bytes from 2.22 (``alignUp(divUp(remCount, nranks), 16/sizeof(T))``), and up to 2.21
8 bytes for each of the kernel's threads (``minChunkSize`` in 2.18-2.19's
``runRing``, ``NCCL_LL_ALIGNMENT_PER_THREAD * nThreads`` in 2.20-2.21's src/enqueue.cc),
where NCCL halves an LL ring's 512 threads down to 64 while the message is under
``threads * 8 * ranks`` bytes, then gives the kernel at least 96 (``topoGetAlgoInfo``).
A message smaller than ``ranks * granularity`` fills only the first ``m`` parts; the
others are empty. An empty part costs the LL protocol no wait (src/device/prims_ll.h
``LLGenericOp``: no line to read, no flag to poll), so a rank whose remaining parts are
empty finishes the operation early and starts the next one while the last parts still
travel the ring. Operations issued back
to back on a stream (a training step's collectives, nccl-tests' timed loop in
src/common.cu) therefore overlap, and the time per operation is the ring's steady-state
cycle, ``back_to_back_steps`` steps, not all ``2 (ranks - 1)``: 8 of 14 steps on 8 GPUs
for one part, 12 for four (8x H100: 12.9 us at 8 bytes, 14.5 at 64, 15.5 at 128; GB200
2x4 trays: 21.6, 24.9, 26.5). LL128 and Simple are priced on every step: Simple waits for
an empty slice too (src/device/prims_simple.h ``genericOp``), and NCCL does not run LL128
at these sizes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fabricui.engine.nccl.tuner import MAX_THREADS, THREAD_THRESHOLD
from fabricui.engine.types import FloatArray

#: Granularity of a ring part from NCCL 2.22 [bytes] (``16/sizeof(T)`` elements).
PART_GRANULARITY_BYTES = 16
#: Release from which parts are 16-byte aligned (before: 8 bytes per kernel thread).
SIXTEEN_BYTE_PARTS_SINCE = (2, 22, 0)
#: Halving stops once the threads are not a multiple of 128 (64), and a kernel gets at
#: least three warps (``nt / WARP_SIZE < 3 ? 3 * WARP_SIZE : nt``, src/enqueue.cc).
LL_HALVING_STOPS_BELOW, LL_MIN_THREADS = 128, 96
#: Bytes of data each LL thread carries per part before 2.22 (``sizeof(uint64_t)``).
LL_BYTES_PER_THREAD = 8
#: Largest ring simulated [ranks]: a ring all-reduce this small across more ranks is not
#: what NCCL runs (it takes a tree), so it keeps every step.
MAX_SIMULATED_RANKS = 256


def part_granularity_bytes(
    size_bytes: FloatArray, n: int, version: tuple[int, int, int] | None
) -> FloatArray:
    """(n_sizes,) bytes a ring part is rounded up to under NCCL ``version`` (None: newest)."""
    size = np.asarray(size_bytes, dtype=np.float64)
    if version is None or tuple(version[:3]) >= SIXTEEN_BYTE_PARTS_SINCE:
        return np.full(size.shape, float(PART_GRANULARITY_BYTES))
    threads = np.full(size.shape, float(MAX_THREADS["ll"]))
    per_thread = THREAD_THRESHOLD["ll"] * n  # a ring's LL threshold is scaled by its ranks
    while True:  # at most three halvings: 512 -> 64
        halve = (size < threads * per_thread) & (threads >= LL_HALVING_STOPS_BELOW)
        if not halve.any():
            break
        threads = np.where(halve, threads / 2, threads)
    return np.maximum(threads, LL_MIN_THREADS) * LL_BYTES_PER_THREAD


def filled_parts(size_bytes: FloatArray, n: int, granularity_bytes: FloatArray) -> FloatArray:
    """(n_sizes,) parts of a one-channel ring all-reduce that hold data (``n`` = all).

    ``part = ceil(S / (n g)) * g``, ``m = ceil(S / part)``: ``n`` once ``S`` is many
    granules a rank, so only small messages leave parts empty.
    """
    size = np.maximum(np.asarray(size_bytes, dtype=np.float64), 1.0)
    part = np.ceil(size / (n * granularity_bytes)) * granularity_bytes
    return np.clip(np.ceil(size / part), 1.0, float(n))


@lru_cache(maxsize=512)
def back_to_back_steps(n: int, m: int) -> float:
    """Ring steps per operation, in steady state, of back-to-back all-reduces whose first
    ``m`` of ``n`` parts hold data: ``2 (n - 1)`` when every part does.

    Simulated: rank ``r``'s step ``k`` carries part ``(r - k - 1) mod n``; a step with data
    waits for the previous rank's step ``k - 1`` plus one step; an empty one waits for
    nothing; each rank starts the next operation when it finishes this one. The period is
    averaged over the last 16 of 32 operations (the transient is over by then).
    """
    if m >= n or n < 3 or n > MAX_SIMULATED_RANKS:
        return float(2 * (n - 1))
    operations, averaged = 32, 16
    ranks = np.arange(n)
    carries = [((ranks - k - 1) % n) < m for k in range(2 * n - 1)]
    done = np.zeros(n)  # when each rank finished its latest step [steps]
    arrival = np.empty(n)
    starts = np.empty((operations, n))
    for operation in range(operations):
        starts[operation] = done
        for k in range(1, 2 * n - 1):
            arrival[1:] = done[:-1]
            arrival[0] = done[-1]
            arrival += 1.0
            np.maximum(done, arrival, out=done, where=carries[k])
    return float((starts[-1] - starts[-1 - averaged]).mean() / averaged)


def cycle_steps(size_bytes: FloatArray, n: int, version: tuple[int, int, int] | None) -> FloatArray:
    """(n_sizes,) ring steps each size's all-reduce costs back to back under NCCL
    ``version`` (None: newest): ``2 (n - 1)`` where every part holds data."""
    size = np.asarray(size_bytes, dtype=np.float64)
    if n < 3:
        return np.full(size.shape, float(2 * (n - 1)))
    parts = filled_parts(size, n, part_granularity_bytes(size, n, version))
    values, where = np.unique(parts, return_inverse=True)
    steps = np.array([back_to_back_steps(n, int(m)) for m in values])  # a few distinct
    return steps[where].reshape(size.shape)


def network_share(cycle: FloatArray, n: int, n_nodes: int, network_steps: float) -> FloatArray:
    """(n_sizes,) network steps among ``cycle`` steps of a node-major ring: a lap of ``n``
    steps crosses ``n_nodes`` node boundaries, and a full operation crosses
    ``network_steps``; the shorter cycle keeps a lap's density of crossings, at most all of
    them (two nodes: both crossings stay on any cycle of one lap or more)."""
    return np.minimum(float(network_steps), cycle * n_nodes / n)
