"""Parallelism plans (compatibility module): the training-step model now lives in
``fabricui.engine.training``; the names callers used from here are re-exported."""

from __future__ import annotations

from fabricui.engine.training.groups import AXES, Groups, IntArray, layout_groups
from fabricui.engine.training.legacy import (
    ACTIVATION_BYTES_PER_TOKEN_HIDDEN,
    DEFAULT_MFU,
    STATE_BYTES,
    compute_time_us,
    memory_per_gpu_GB,
    pipeline_bubble_us,
)
from fabricui.engine.training.legacy import legacy_flops_per_token as model_flops_per_token
from fabricui.engine.training.pricing import Evaluate, PricedOp, Pricer, price_operations
from fabricui.engine.training.search import candidate_layouts, search_layouts
from fabricui.engine.training.step import USABLE_MEMORY, PlanReport, check_layout, plan
from fabricui.engine.training.table import (
    DENSE_EP_TOP_K,
    GOOD_EXPOSED_FRACTION,
    NOT_APPLICABLE,
    OK_EXPOSED_FRACTION,
    TABLE_MAX_DEGREE,
    TABLE_MICROBATCHES,
    TABLE_SEQ,
    TABLE_STRATEGIES,
    DecisionRow,
    DecisionTable,
    decision_table,
    table_degree,
    verdict,
)


def valid_layouts(n_gpus: int, model, global_batch: int, seq_len: int) -> list:
    """Every layout the search considers (``search.candidate_layouts`` over its whole space)."""
    from fabricui.engine.training.search import SearchSpace

    return candidate_layouts(n_gpus, model, global_batch, seq_len, SearchSpace())


__all__ = [
    "ACTIVATION_BYTES_PER_TOKEN_HIDDEN",
    "AXES",
    "DEFAULT_MFU",
    "DENSE_EP_TOP_K",
    "GOOD_EXPOSED_FRACTION",
    "NOT_APPLICABLE",
    "OK_EXPOSED_FRACTION",
    "STATE_BYTES",
    "TABLE_MAX_DEGREE",
    "TABLE_MICROBATCHES",
    "TABLE_SEQ",
    "TABLE_STRATEGIES",
    "USABLE_MEMORY",
    "DecisionRow",
    "DecisionTable",
    "Evaluate",
    "Groups",
    "IntArray",
    "PlanReport",
    "PricedOp",
    "Pricer",
    "check_layout",
    "compute_time_us",
    "decision_table",
    "layout_groups",
    "memory_per_gpu_GB",
    "model_flops_per_token",
    "pipeline_bubble_us",
    "plan",
    "price_operations",
    "search_layouts",
    "table_degree",
    "valid_layouts",
    "verdict",
]
