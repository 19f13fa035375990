"""What a published Megatron-Bridge run ran where its row does not say: the settings of that
release's performance recipe for the row's model, GPU, GPU count and precision
(``hwdb/recipes/megatron-bridge.yaml``, read from the recipes by ``tools/perf_recipes.py``).

Only runs whose software is Megatron-Core (``megatron-core``) and whose source names a
release of NVIDIA's performance summaries (``26.08 NeMo container``) look one up. The
lookup reads what a published row shows (release, model, GPU, GPU count, precision, then
the global batch and layout to tell a release's variants apart), never its measured time.
At a GPU count no recipe of the model, GPU and precision names, the row ran the recipe the
release's perf script runs at any count (``PerfRecipe.any_count``: it scales the global
batch, and the row states its layout); a release whose script does not has none. A
setting the run states always wins; with no matching recipe the framework's defaults
stay, and the plan says so. The expert tensor-parallel size (``etp``, outside the
published schema) is taken the same way (``recipe_etp``) where it fits the row's layout.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fabricui.vocabulary import MLA_RECOMPUTE_MODULES, MOE_RECOMPUTE_MODULES, RECOMPUTE_MODULES

if TYPE_CHECKING:
    from fabricui.model import FrameworkSpec, RecipeChoices
    from fabricui.model.perf_recipe import PerfRecipe
    from fabricui.model.run import RunEntry

#: The framework whose runs take a performance recipe's settings.
RECIPE_FRAMEWORK = "megatron-core"
#: A release of the performance summaries as a row's source names it.
_RELEASE = re.compile(r"(?<![\d.])(\d\d\.\d\d(?:\.\d+)?)\s+nemo\s+container", re.IGNORECASE)
#: Variants in the order a row that does not tell them apart takes them: the release's main
#: recipe, then the run script's default variant (v2, falling back to v1).
_VARIANT_ORDER = ("", "v2", "v1")
#: (run key, words in notes).
_SETTINGS = (
    ("ep_overlap", "EP overlap"),
    ("tp_overlap", "TP overlap"),
    ("dp_overlap", "DP overlap"),
    ("cuda_graph", "CUDA graphs"),
    ("moe_dispatch", "MoE dispatch"),
    ("fp8_recipe", "FP8 recipe"),
    ("fp8_attention", "FP8 attention"),
)


def named_release(source_text: str) -> str | None:
    """The performance-summary release a source names (``26.08``), or None."""
    found = _RELEASE.search(source_text)
    return found.group(1) if found else None


def recipe_precisions(precision: str | None, text: str) -> tuple[str, ...]:
    """The recipe precisions a row's precision can be, most likely first: its run block's
    ``precision`` and its own wording (``MXFP8``, ``FP8-CS``, ``NVFP4``)."""
    words = text.lower()
    # Every FP8 recipe the words name is a candidate (a footnote may name another
    # granularity beside the row's own); the GPU's recipes tell them apart.
    fp8 = tuple(
        name
        for name, pattern in (
            ("fp8_mx", r"mxfp8|fp8[-_ ]?mx"),
            ("fp8_cs", r"fp8[-_ ]?cs|current[- ]scaling"),
            ("fp8_ds", r"fp8[-_ ]?ds|delayed[- ]scaling"),
        )
        if re.search(pattern, words)
    )
    if not fp8:  # the summaries' plain FP8 is current scaling
        fp8 = ("fp8_cs", "fp8_mx", "fp8_ds")
    if precision == "fp8":
        return fp8
    if precision == "bf16":
        return ("bf16",)
    if precision == "fp4" or (precision is None and "nvfp4" in words):
        return ("nvfp4",)
    return ()


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def gpu_matches(recipe_gpu: str, gpu_id: str) -> bool:
    """The recipe's GPU word names the hwdb GPU (``h100`` is the SXM part of DGX H100)."""
    return gpu_id in (recipe_gpu, f"{recipe_gpu}-sxm")


def find_recipe(entry: RunEntry, recipes: Sequence[PerfRecipe]) -> PerfRecipe | None:
    """The recipe a published row ran (module docstring), or None."""
    release = named_release(entry.source_text)
    if release is None:
        return None
    run = entry.run
    gpus = run_gpus(entry)
    precisions = recipe_precisions(run.precision, f"{entry.precision_text} {entry.source_text}")
    released = [
        r
        for r in recipes
        if r.release == release
        and r.precision in precisions
        and gpu_matches(r.gpu, run.topology.gpu)
    ]
    pool = _named_model([r for r in released if r.gpus == gpus], entry)
    if not pool:  # a count no recipe names: the one the perf script runs at any count
        pool = _named_model([r for r in released if r.any_count], entry)
    if not pool:
        return None
    longest = max(len(r.model) for r in pool)  # qwen3_235b_a22b over a shorter name inside
    pool = [r for r in pool if len(r.model) == longest]
    pool = _narrow(pool, lambda r: r.global_batch == run.global_batch)
    pool = _narrow(pool, lambda r: (r.tp, r.pp, r.cp, r.ep) == (run.tp, run.pp, run.cp, run.ep))
    return min(
        pool,
        key=lambda r: (
            precisions.index(r.precision),
            _VARIANT_ORDER.index(r.variant) if r.variant in _VARIANT_ORDER else 9,
            r.recipe,
        ),
    )


def run_gpus(entry: RunEntry) -> int:
    """The GPUs a run ran on, as the recipes count them (tp x pp x cp x dp)."""
    run = entry.run
    return run.tp * run.pp * run.cp * run.dp


def _named_model(fitting: list[PerfRecipe], entry: RunEntry) -> list[PerfRecipe]:
    """The recipes of the model a row names: the table's model name first (Kimi_K2), then
    the entry's own (which may name the architecture it shares: "Kimi K2 ... DeepSeek-V3
    architecture")."""
    for text in (entry.source_text, f"{entry.model.name} {entry.model.id}"):
        pool = [r for r in fitting if _squash(r.model) in _squash(text)]
        if pool:
            return pool
    return []


def _narrow(pool: list[PerfRecipe], keep: Callable[[PerfRecipe], bool]) -> list[PerfRecipe]:
    """The recipes ``keep`` accepts, when any; else all of them."""
    kept = [r for r in pool if keep(r)]
    return kept or pool


def recipe_choices(
    entry: RunEntry,
    choices: RecipeChoices,
    framework: FrameworkSpec,
    recipes: Sequence[PerfRecipe],
) -> tuple[RecipeChoices, list[str]]:
    """``choices`` with what the run leaves unstated taken from its release's performance
    recipe, and one note per setting taken (or one saying no recipe matched).

    Args:
        entry: The published run.
        choices: What its run block states.
        framework: The software it ran (only ``RECIPE_FRAMEWORK`` takes recipes).
        recipes: The performance recipes (``hwdb.perf_recipes.load_perf_recipes``).
    """
    release = named_release(entry.source_text)
    if framework.id != RECIPE_FRAMEWORK or release is None:
        return choices, []
    recipe = find_recipe(entry, recipes)
    if recipe is None:
        return choices, [
            f"no Megatron-Bridge {release} performance recipe for this model, GPU, GPU count "
            f"and precision: {framework.id}'s defaults"
        ]
    where = f"Megatron-Bridge {release} recipe {recipe.label}"
    if recipe.gpus != run_gpus(entry):
        where += f", run at {run_gpus(entry)} GPUs"
    run, model = entry.run, entry.model
    taken: dict[str, Any] = {}
    notes: list[str] = []
    for key, words in _SETTINGS:
        value = getattr(recipe, key)
        if value is None or getattr(choices, key) is not None:
            continue
        if key == "moe_dispatch" and not model.experts:
            continue
        if key == "fp8_recipe" and run.precision != "fp8":
            continue
        if key == "fp8_attention" and run.precision not in ("fp8", "fp4"):
            continue
        if key == "tp_overlap" and run.tp == 1:
            continue
        taken[key] = value
        notes.append(f"{words} not stated: {_show(value)} (from {where})")
    modules = _modules(recipe, model.experts > 0, model.kv_lora_rank is not None)
    if modules and choices.recompute_modules is None and choices.recompute in (None, "selective"):
        taken["recompute_modules"] = modules
        if choices.recompute is None:
            taken["recompute"] = "selective"
        notes.append(f"recompute modules not stated: {', '.join(modules)} (from {where})")
    return dataclasses.replace(choices, **taken), notes


def recipe_etp(entry: RunEntry, recipes: Sequence[PerfRecipe]) -> tuple[int | None, list[str]]:
    """The expert tensor-parallel size a published MoE row ran where it does not state one:
    its release's recipe's (``expert_tensor_parallel_size``, which the published schema
    lacks), with a note; None (Megatron-Core's default, ETP = TP) when the row states it,
    the recipe leaves it, or it does not fit the row's layout (etp x ep must divide
    tp x cp x dp, as a run file's ``etp``), which the note says.
    """
    run = entry.run
    if run.etp is not None or not entry.model.experts:
        return None, []
    release = named_release(entry.source_text)
    recipe = find_recipe(entry, recipes) if release is not None else None
    if release is None or recipe is None or recipe.etp is None:
        return None, []
    where = f"Megatron-Bridge {release} recipe {recipe.label}"
    if recipe.gpus != run_gpus(entry):
        where += f", run at {run_gpus(entry)} GPUs"
    stage = run.tp * run.cp * run.dp
    if stage % (recipe.etp * run.ep):
        return None, [
            f"etp not stated: the recipe's {recipe.etp} (from {where}) does not fit this "
            f"layout (etp x ep = {recipe.etp * run.ep} must divide tp x cp x dp = {stage}): "
            "ETP = TP, Megatron-Core's default"
        ]
    return recipe.etp, [f"etp not stated: {recipe.etp} (from {where})"]


def _modules(recipe: PerfRecipe, moe: bool, mla: bool) -> tuple[str, ...]:
    """The recipe's recompute modules that the model has."""
    out = []
    for module in recipe.recompute_modules or ():
        if module not in RECOMPUTE_MODULES:
            continue
        if module in MOE_RECOMPUTE_MODULES and not moe:
            continue
        if module in MLA_RECOMPUTE_MODULES and not mla:
            continue
        out.append(module)
    return tuple(out)


def _show(value: object) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)
