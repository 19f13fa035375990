"""The training-step model: compute from the model's shape and the GPU's measured kernel
throughput, communication priced on the fabric, pipeline schedules, memory, and a layout
search. Pure functions and frozen dataclasses over numpy; strategies and collective
algorithms are passed in.

Modules, one job each: ``shape`` (geometry of a model), ``device`` (what a GPU sustains),
``kernels`` (GEMM, attention and memory-bound kernel times), ``layer`` (one layer's
forward, backward and recompute), ``flops`` (model FLOPs for MFU), ``schedule`` (stages,
bubble, in-flight micro-batches), ``memory`` (states and activations per GPU), ``groups``
(process groups), ``pricing`` (collectives on the fabric), ``comm`` (what is exposed),
``recipe`` (settings and their defaults), ``step`` (a plan), ``search`` (the ranking),
``table`` (the decision table), ``legacy`` (the fixed-MFU model of ``--mfu``).

The package's names are imported on first use, so that importing one module (the
process-group axes the plugin guards check, a model's geometry for ``fabricui.api``) does
not load the whole training engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabricui.engine.training.groups import AXES, layout_groups
    from fabricui.engine.training.pricing import PricedOp, Pricer, price_operations
    from fabricui.engine.training.recipe import Recipe, RecipeChoices, resolve_recipe
    from fabricui.engine.training.search import SearchSpace, search_layouts
    from fabricui.engine.training.step import PlanReport, check_layout, plan
    from fabricui.engine.training.table import DecisionRow, DecisionTable, decision_table

#: Each name of the package -> the module that defines it.
_MODULE_OF = {
    "AXES": "groups",
    "layout_groups": "groups",
    "PricedOp": "pricing",
    "Pricer": "pricing",
    "price_operations": "pricing",
    "Recipe": "recipe",
    "RecipeChoices": "recipe",
    "resolve_recipe": "recipe",
    "SearchSpace": "search",
    "search_layouts": "search",
    "PlanReport": "step",
    "check_layout": "step",
    "plan": "step",
    "DecisionRow": "table",
    "DecisionTable": "table",
    "decision_table": "table",
}

__all__ = [
    "AXES",
    "DecisionRow",
    "DecisionTable",
    "PlanReport",
    "PricedOp",
    "Pricer",
    "Recipe",
    "RecipeChoices",
    "SearchSpace",
    "check_layout",
    "decision_table",
    "layout_groups",
    "plan",
    "price_operations",
    "resolve_recipe",
    "search_layouts",
]


def __getattr__(name: str) -> Any:
    """``fabricui.engine.training.plan`` and friends, from their module on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
