"""What part of each operation's time the step waits for: exposure by scope and window.

An operation runs in every layer of every micro-batch (``layer``), once per micro-batch
(``microbatch``) or once per step (``step``) (``CommOp.scope``). What it can hide behind:

- ``layer``: overlappable operations hide behind their axis's window in that layer (CP's
  ring behind the attention core, FSDP's prefetched gathers and other overlappable
  operations behind the layer's compute); TP and EP collectives are on the critical path
  unless TP / EP overlap is switched on, then they hide behind the layer's GEMMs (TP only
  when its group sits in one node: the overlap runs over NVLink);
- ``microbatch``: pipeline sends are on the critical path;
- ``step``: with DP overlap, overlappable operations (bucketed gradient reduction, ZeRO's
  parameter gather) hide behind one micro-batch's backward and forward; without it, and
  for non-overlappable ones, the step waits for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from fabricui.engine.training.pricing import PricedOp
from fabricui.engine.training.recipe import Recipe

#: Breakdown category of each group axis.
CATEGORY = {
    "tp": "tp",
    "cp": "cp",
    "ep": "ep",
    "pp": "pp",
    "dp": "dp",
    "dp_intra": "dp",
    "dp_inter": "dp",
}
#: Categories of exposed communication, in report order.
CATEGORIES = ("tp", "cp", "pp", "dp", "ep")


@dataclass(frozen=True)
class Windows:
    """Compute an operation can hide behind on the critical stage [s]."""

    gemm_s: float
    """GEMMs of one layer, one micro-batch, forward and backward."""
    expert_s: float
    """Expert GEMMs of one (MoE) layer, one micro-batch."""
    attention_s: float
    """Attention core of one layer, one micro-batch."""
    layer_s: float
    """One layer, one micro-batch, forward and backward."""
    microbatch_s: float
    """Forward and backward of one micro-batch on the stage."""


@dataclass(frozen=True)
class Exposure:
    """Exposed communication by category: per layer and micro-batch, per micro-batch, and
    per step [s]."""

    per_layer_s: dict[str, float]
    """Each layer, each micro-batch."""
    per_microbatch_s: dict[str, float]
    """Each micro-batch (once per stage)."""
    per_step_s: dict[str, float]
    """Once per step."""


def with_recompute(priced: Sequence[PricedOp], recipe: Recipe) -> list[PricedOp]:
    """Full recomputation issues forward collectives again: double their calls."""
    if recipe.recompute != "full":
        return list(priced)
    return [dataclasses.replace(p, count=p.op.count * 2) if p.op.recomputed else p for p in priced]


def expose(
    priced: Sequence[PricedOp],
    recipe: Recipe,
    layers_per_stage: float,
    microbatches: int,
    windows: Windows,
    tp_in_node: bool = True,
) -> Exposure:
    """Exposed time of every category per layer, per micro-batch and per step.

    Args:
        priced: Operations with their per-call time; ``calls`` are per step per GPU.
        recipe: Which overlaps are on.
        layers_per_stage: Layers the strategies counted per stage (``layers / pp``).
        microbatches: Micro-batches per step.
        windows: Compute on the critical stage to hide behind.
        tp_in_node: The TP group sits in one node (TP overlap works over NVLink only).

    Returns:
        The exposure, every category present in each dict.
    """
    per_layer = {c: 0.0 for c in CATEGORIES}
    per_mb = {c: 0.0 for c in CATEGORIES}
    per_step = {c: 0.0 for c in CATEGORIES}
    hideable: dict[str, float] = {}
    exposed: dict[str, float] = {}
    step_hidden = 0.0
    per_layer_calls = max(layers_per_stage, 1e-9) * max(microbatches, 1)
    for p in priced:
        cat = CATEGORY.get(p.op.group, p.op.group)
        time_s = p.time_us * 1e-6
        scope = p.op.resolved_scope
        if scope == "layer":
            each = time_s / per_layer_calls
            if _hides_in_layer(p, recipe, tp_in_node):
                hideable[cat] = hideable.get(cat, 0.0) + each
            else:
                exposed[cat] = exposed.get(cat, 0.0) + each
        elif scope == "microbatch":
            per_mb[cat] = per_mb.get(cat, 0.0) + time_s / max(microbatches, 1)
        elif p.op.overlappable and recipe.dp_overlap:
            step_hidden += time_s
            per_step[cat] = per_step.get(cat, 0.0)
        else:
            per_step[cat] = per_step.get(cat, 0.0) + time_s
    for cat in set(hideable) | set(exposed):
        window = _layer_window(cat, recipe, windows, tp_in_node)
        left = max(0.0, hideable.get(cat, 0.0) - window)
        per_layer[cat] = per_layer.get(cat, 0.0) + exposed.get(cat, 0.0) + left
    if step_hidden > 0:
        left = max(0.0, step_hidden - windows.microbatch_s)
        per_step["dp"] = per_step.get("dp", 0.0) + left
    return Exposure(per_layer, per_mb, per_step)


def _hides_in_layer(p: PricedOp, recipe: Recipe, tp_in_node: bool) -> bool:
    group = p.op.group
    if group == "tp" and recipe.tp_overlap and tp_in_node:
        return True
    if group == "ep" and recipe.ep_overlap:
        return True
    return p.op.overlappable


def _layer_window(category: str, recipe: Recipe, windows: Windows, tp_in_node: bool) -> float:
    if category == "tp":
        return windows.gemm_s if recipe.tp_overlap and tp_in_node else 0.0
    if category == "ep":
        return windows.expert_s if recipe.ep_overlap else 0.0
    if category == "cp":
        return windows.attention_s
    return windows.layer_s


def spread(priced: Sequence[PricedOp], exposed_by_category_us: dict[str, float]) -> list[PricedOp]:
    """Each operation's share of its category's exposed time (in proportion to its time)."""
    totals: dict[str, float] = {}
    for p in priced:
        cat = CATEGORY.get(p.op.group, p.op.group)
        totals[cat] = totals.get(cat, 0.0) + p.time_us
    out = []
    for p in priced:
        cat = CATEGORY.get(p.op.group, p.op.group)
        total = totals.get(cat, 0.0)
        share = p.time_us / total if total > 0 else 0.0
        out.append(dataclasses.replace(p, exposed_us=exposed_by_category_us.get(cat, 0.0) * share))
    return out
