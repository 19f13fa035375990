"""Pipeline schedules: which layers each stage holds, how long a step takes, what is in flight.

Stages (Megatron's placement): with ``pp`` dividing the layers every stage holds
``L / pp`` (the output layer and the loss add to the last stage, the embedding to the
first). Otherwise stages hold ``ceil(L / pp)`` and the layers short of that are taken one
each from the last stage, the first, the second to last, the second ... which is what
Llama 3 405B ran: 126 layers on 16 stages as 7 + 14 x 8 + 7 (Llama 3 paper, Sec. 3.3.2:
one layer fewer on the first and the last stage, which hold the embedding and the loss).

Step time of 1F1B and of the interleaved schedule (Narayanan et al. 2021) with ``m``
micro-batches, ``v`` model chunks per stage and per-micro-batch times ``tau_i`` of the
stages: ``m * max(tau) + (sum(tau) - max(tau)) / v``. With equal stages this is
``(m + (p - 1) / v) tau``: the bubble is ``(p - 1) / (v m)`` of the busy time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError

FloatArray = npt.NDArray[np.float64]


def stage_layers(layers: int, pp: int) -> list[int]:
    """Transformer layers of each pipeline stage (Megatron's even split, or Llama 3's
    uneven one when ``pp`` does not divide ``layers``).

    Args:
        layers: Transformer layers.
        pp: Pipeline stages.

    Returns:
        Layers per stage, first to last (each at least 1).

    Raises:
        EngineError: More stages than layers.
    """
    if pp < 1 or layers < pp:
        raise EngineError(f"pp {pp} must be between 1 and the model's {layers} layers")
    per = -(-layers // pp)
    counts = [per] * pp
    short = per * pp - layers
    order = _trim_order(pp)
    for i in range(short):
        counts[order[i % pp]] -= 1
    if min(counts) < 1:
        raise EngineError(f"pp {pp} leaves a stage without layers ({layers} layers)")
    return counts


def _trim_order(pp: int) -> list[int]:
    """Stages in the order they give up a layer: last, first, second to last, second ..."""
    order, low, high = [], 0, pp - 1
    while low <= high:
        order.append(high)
        if low != high:
            order.append(low)
        low, high = low + 1, high - 1
    return order


def pipeline_time_s(
    stage_s: Sequence[float] | FloatArray, microbatches: int, vpp: int = 1
) -> float:
    """Busy-plus-bubble time of one step's pipeline [s].

    Args:
        stage_s: Time of one micro-batch (forward + backward + exposed per-micro-batch
            communication) on each stage [s].
        microbatches: Micro-batches per step ``m``.
        vpp: Model chunks per stage ``v`` (1: plain 1F1B).

    Returns:
        ``m * max(tau) + (sum(tau) - max(tau)) / v`` [s].
    """
    tau = np.asarray(stage_s, dtype=np.float64)
    slowest = float(tau.max())
    return microbatches * slowest + (float(tau.sum()) - slowest) / max(1, vpp)


def bubble_fraction(pp: int, microbatches: int, vpp: int = 1) -> float:
    """Idle share of an even pipeline: ``(p - 1) / (v m + p - 1)`` of the step.

    Relative to the busy time this is ``(p - 1) / (v m)``.
    """
    idle = (pp - 1) / max(1, vpp)
    return idle / (microbatches + idle)


def in_flight(pp: int, microbatches: int, vpp: int = 1, stage: int = 0) -> float:
    """Micro-batches whose activations a stage holds at the peak, in units of the stage's
    whole set of layers (Korthikanti et al. 2022, Sec. 4.2.3).

    1F1B: stage ``i`` holds ``p - i`` micro-batches (at most ``m``). Interleaved: the first
    stage holds ``p (1 + (p - 1) / (p v))`` micro-batches' worth of its layers.
    """
    held = float(pp - stage)
    if vpp > 1:
        held = held + (pp - 1 - stage) / vpp
    return min(float(microbatches), held)


def unpaired_share(pp: int, microbatches: int) -> float:
    """Share of a stage's forward (and of its backward) passes Megatron-Core's EP overlap
    runs alone, with no pass of another micro-batch to hide their all-to-alls behind.

    The combined 1F1B schedule (``overlap_moe_expert_parallel_comm``) pairs the forward of
    one micro-batch with the backward of another. Without a pipeline the first forward and
    the last backward run alone (``combined_1f1b_schedule_for_no_pipelining``): ``1 / m``.
    With one, the warm-up forwards and the cool-down backwards do: stage ``r`` warms up
    with ``2 (p - r - 1) + (v - 1) g + 1`` of its ``v m`` chunk passes, ``g = p`` by
    default, one more than the interleaved schedule so that each paired forward and
    backward are independent (``get_pp_rank_microbatches``, Megatron-LM d98e8a64dd
    ``pipeline_parallel/schedules.py``), ``v p`` on average over the stages: ``p / m``.

    Args:
        pp: Pipeline stages ``p``.
        microbatches: Micro-batches per step ``m``.

    Returns:
        ``min(1, max(p, 1) / m)``.
    """
    return min(1.0, max(pp, 1) / max(microbatches, 1))
