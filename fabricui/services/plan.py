"""Training plans as a service: what ``fabricui plan``, ``fabricui strategies``, the
accuracy benchmark and the explorer's strategies view ask, with typed requests.

Loads what a question needs (catalog, fabric, model, the registered strategies, the
collective algorithms of the plugins), turns a request into the engine's layout and
recipe (saying what it assumed), and returns the engine's reports. No argparse, no
printing, no Textual. Published runs (``plan --run FILE``) are priced by ``plan_runs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabricui.bounds import PLAN_COUNT_MAX, plan_count
from fabricui.errors import ConfigError, EngineError, FabricError, nearest
from fabricui.services.requests import CatalogRequest, TopologyRequest
from fabricui.services.software import software_for
from fabricui.vocabulary import (
    DEFAULT_MODEL,
    DP_ALIASES,
    DP_STRATEGIES,
    FP8_RECIPES,
    MLA_RECOMPUTE_MODULES,
    MOE_RECOMPUTE_MODULES,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from fabricui.engine.training.pricing import Pricer
    from fabricui.engine.training.recipe import Recipe, RecipeChoices
    from fabricui.engine.training.step import PlanReport
    from fabricui.engine.training.table import DecisionTable
    from fabricui.engine.types import Layout, Strategy
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import GpuSpec, ModelShape
    from fabricui.plugins import PluginHost
    from fabricui.services.jobs import JobPlacement
    from fabricui.services.software import Software

#: Strategies that split the model, never a ``--dp-strategy``.
MODEL_PARALLEL = ("tp", "tp-sp", "pp", "ep", "cp")
#: Layouts a search returns.
SEARCH_TOP = 10
#: A plan's step parts (``PlanReport.breakdown`` keys) in the order reports and the explorer
#: show them, with their labels.
STEP_PARTS = (
    ("compute", "compute"),
    ("recompute", "recompute"),
    ("tp_exposed", "exposed TP"),
    ("cp_exposed", "exposed CP"),
    ("pp_exposed", "exposed PP"),
    ("dp_exposed", "exposed DP"),
    ("ep_exposed", "exposed EP"),
    ("bubble", "pipeline bubble"),
    ("optimizer", "optimizer"),
)


@dataclass(frozen=True)
class LayoutRequest:
    """Degrees and batch of a plan; None: the default (module docstring of ``build_layout``)."""

    tp: int | None = None
    """Tensor-parallel degree."""
    pp: int | None = None
    """Pipeline stages."""
    dp: int | None = None
    """Data-parallel replicas."""
    cp: int | None = None
    """Context-parallel degree."""
    ep: int | None = None
    """Expert-parallel degree."""
    vpp: int | None = None
    """Interleaved chunks per stage."""
    microbatches: int | None = None
    """Micro-batches per step."""
    micro_batch: int | None = None
    """Sequences per micro-batch (alternative to ``microbatches``)."""
    global_batch: int | None = None
    """Sequences per step."""
    seq_len: int | None = None
    """Tokens per sequence."""
    etp: int | None = None
    """Expert tensor-parallel degree (None: tp when the expert groups allow it, else 1)."""


@dataclass(frozen=True)
class PlanRequest:
    """``fabricui plan``: price one layout, or search every layout."""

    topology: TopologyRequest = field(default_factory=TopologyRequest)
    """Where."""
    model: str = DEFAULT_MODEL
    """Model id."""
    layout: LayoutRequest = field(default_factory=LayoutRequest)
    """Degrees and batch (ignored by a search except ``global_batch`` and ``seq_len``)."""
    dp_strategy: str | None = None
    """DP flavour (a built-in or a plugin's); None: ``ddp`` for a plan, every built-in one
    for a search."""
    sequence_parallel: bool | None = None
    """SP with TP; None: the GPU generation's default (on with TP on Hopper and later)."""
    extra_strategies: tuple[str, ...] = ()
    """Further registered strategies to price (``--strategy``)."""
    recipe: RecipeChoices | None = None
    """Recompute, precision, attention, overlaps, fixed MFU; None: all defaults."""
    search: bool = False
    """Rank every layout instead of pricing one."""
    top: int = SEARCH_TOP
    """Layouts a search returns."""
    catalog: CatalogRequest = field(default_factory=CatalogRequest)
    """Which hardware database."""
    hosts: str | None = None
    """A job's hosts on an imported cluster (Slurm hostlist): the layout runs on their GPUs
    (default ``$SLURM_JOB_NODELIST`` on such a cluster); one layout only, not a search."""
    framework: str | None = None
    """The training framework whose defaults apply (an hwdb ``frameworks`` id); None:
    ``software.DEFAULT_FRAMEWORK``."""


@dataclass(frozen=True)
class TableRequest:
    """``fabricui strategies``: the decision table."""

    topology: TopologyRequest = field(default_factory=TopologyRequest)
    """Where."""
    model: str = DEFAULT_MODEL
    """Model id."""
    seq_len: int | None = None
    """Tokens per micro-batch of the reference step (default ``TABLE_SEQ``)."""
    microbatches: int | None = None
    """Micro-batches per GPU of the reference step (default ``TABLE_MICROBATCHES``)."""
    degree: int | None = None
    """Group size (default: GPUs per node, at most 8 and the node count; a node is a
    scale-up domain, ``table.table_unit``)."""
    mfu: float | None = None
    """Price the reference compute at this MFU instead of the kernel model."""
    catalog: CatalogRequest = field(default_factory=CatalogRequest)
    """Which hardware database."""
    framework: str | None = None
    """The training framework whose defaults apply; None: today's default."""


@dataclass(frozen=True)
class PlanResult:
    """A priced layout and what it ran on."""

    report: PlanReport
    """The engine's plan."""
    fabric: Fabric
    """The fabric it was priced on."""
    model: ModelShape
    """The model."""
    job: JobPlacement | None = None
    """The job's hosts it ran on (``--hosts``), or None: the fabric's first GPUs."""


@dataclass(frozen=True)
class SearchResult:
    """Ranked layouts."""

    plans: tuple[PlanReport, ...]
    """Fastest first."""
    fabric: Fabric
    """The fabric."""
    model: ModelShape
    """The model."""
    global_batch: int
    """Sequences per step of every plan."""
    seq_len: int
    """Tokens per sequence."""
    job: JobPlacement | None = None
    """The job's hosts the layouts were ranked on (``--hosts``), or None: every GPU."""


# --- strategies -----------------------------------------------------------------------------


def load_strategies(host: PluginHost | None = None) -> dict[str, Strategy]:
    """Strategies by name, as plugins register them (the built-in ones are plugins too: a
    disabled or broken one is simply absent, and plans that need it say so)."""
    from fabricui.plugins import get_host

    return dict((host or get_host()).strategies())


def chosen_strategies(
    dp_strategy: str,
    sequence_parallel: bool,
    extra: Sequence[str] = (),
    available: Mapping[str, Strategy] | None = None,
) -> list[Strategy]:
    """The strategies a plan uses: one DP flavour, TP (or TP+SP), PP, EP, CP, then ``extra``.

    Args:
        dp_strategy: A built-in DP flavour (``DP_STRATEGIES``) or any registered strategy
            other than the model-parallel ones (a plugin's DP flavour).
        sequence_parallel: Use TP with sequence parallelism.
        extra: Further registered strategies to price (``--strategy``), each once.
        available: Registered strategies (default: ``load_strategies()``).

    Raises:
        ConfigError: An unknown or unregistered strategy.
    """
    available = load_strategies() if available is None else available
    dp_name = DP_ALIASES.get(dp_strategy, dp_strategy)
    wrong = dp_strategy_problem(dp_strategy, available)
    if wrong:
        raise ConfigError(f"--dp-strategy {wrong}")
    names = [dp_name, "tp-sp" if sequence_parallel else "tp", "pp", "ep"]
    names += [n for n in dict.fromkeys(extra) if n not in names]
    if "cp" in available and "cp" not in names:
        names.append("cp")
    missing = [n for n in names if n not in available]
    if missing:
        unknown = [n for n in missing if n in extra]
        close = nearest(unknown[0], available) if unknown else []
        hint = f"; nearest: {', '.join(close)}" if close else ""
        raise ConfigError(
            f"strategies not available: {', '.join(missing)}{hint} (see fabricui plugins)"
        )
    return [available[n] for n in names]


def dp_strategy_problem(name: str, available: Mapping[str, Strategy]) -> str | None:
    """Why ``name`` is not a data-parallel strategy (a built-in one, an alias, or one a
    plugin registers that does not split the model), with the nearest names; None when it
    is one."""
    if name in DP_STRATEGIES or name in DP_ALIASES:
        return None
    if name not in MODEL_PARALLEL and name in available:
        return None
    pool = [*DP_STRATEGIES, *(n for n in available if n not in MODEL_PARALLEL)]
    close = nearest(name, pool)
    hint = f"nearest: {', '.join(close)}; " if close else ""
    return (
        f"must be one of {', '.join(DP_STRATEGIES)} or a data-parallel strategy a plugin "
        f"registers (got {name!r}; {hint}see fabricui plugins)"
    )


# --- layouts and recipes --------------------------------------------------------------------


def build_layout(
    request: LayoutRequest, fabric: Fabric, model: ModelShape, n_gpus: int | None = None
) -> Layout:
    """The layout a request describes on ``fabric`` (or on a job's ``n_gpus`` of it).

    Defaults: tp, pp, cp, ep, vpp 1; dp the GPUs left over; micro-batches
    ``global_batch / (dp x micro_batch)`` when the global batch is given (micro-batch 1 by
    default), else ``4 x pp`` with a pipeline and 1 without; global batch
    ``dp x micro-batches x micro_batch``; sequence the model's.

    Raises:
        ConfigError: A degree below 1, or degrees that do not divide the GPUs or the batch.
    """
    from fabricui.engine.types import Layout

    tp, pp, cp, ep, vpp = (_positive(request, name, 1) for name in ("tp", "pp", "cp", "ep", "vpp"))
    dp = _positive(request, "dp", 0) or _leftover_dp(fabric, tp * pp * cp, n_gpus)
    seq = _positive(request, "seq_len", model.seq_len)
    micro = _positive(request, "micro_batch", 0)
    batch = _positive(request, "global_batch", 0)
    if request.microbatches is not None:
        microbatches = _positive(request, "microbatches", 1)
    elif batch:
        per = micro or 1
        if batch % (dp * per):
            raise ConfigError(
                f"--global-batch {batch} is not a multiple of dp x micro-batch = {dp * per}"
            )
        microbatches = batch // (dp * per)
    else:
        microbatches = 4 * pp if pp > 1 else 1
    if not batch:
        batch = dp * microbatches * (micro or 1)
        if batch > PLAN_COUNT_MAX:
            raise ConfigError(
                f"dp x micro-batches x micro-batch = {batch} sequences a step, more than "
                f"{PLAN_COUNT_MAX}: give fewer --microbatches"
            )
    etp = _positive(request, "etp", 0) or default_etp(tp, cp, dp, ep)
    return Layout(tp, pp, dp, ep, microbatches, batch, seq, cp=cp, vpp=vpp, etp=etp)


def default_etp(tp: int, cp: int, dp: int, ep: int) -> int:
    """Expert tensor parallelism when unstated: ``tp`` (Megatron-Core's default) when
    ``tp x ep`` expert groups tile a pipeline stage's ``tp x cp x dp`` ranks, else 1 (the
    experts are spread over the TP ranks too, as Megatron-Bridge's MoE recipes set)."""
    return tp if (tp * cp * dp) % (tp * ep) == 0 else 1


def _positive(request: LayoutRequest, name: str, default: int) -> int:
    """The request's ``name`` (``default`` when unset), a whole number within
    ``1..PLAN_COUNT_MAX``, as a run file's are."""
    value = getattr(request, name)
    if value is None:
        return default
    flag = {"seq_len": "seq"}.get(name, name).replace("_", "-")
    return plan_count(f"--{flag}", value)


def _leftover_dp(fabric: Fabric, split: int, n_gpus: int | None = None) -> int:
    n = fabric.n_gpus if n_gpus is None else n_gpus
    owner = f"{fabric.spec.id}'s" if n_gpus is None else f"the job's (on {fabric.spec.id})"
    if split > n:
        raise ConfigError(f"layout needs {split} GPUs, more than {owner} {n}")
    if n % split:
        raise ConfigError(f"tp x pp x cp = {split} does not divide {owner} {n} GPUs; give --dp")
    return n // split


def resolve(
    choices: RecipeChoices | None,
    fabric: Fabric,
    tp: int,
    sequence_parallel: bool | None = None,
    software: Software | None = None,
) -> tuple[Recipe, bool, list[str]]:
    """(recipe, sequence parallelism, assumptions) of a request's choices on a fabric, with
    ``software``'s framework filling in what is unstated (None: the GPU generation's
    software) and its attention kernel record for the fabric's GPU; ``sequence_parallel``
    overrides the choices' own.

    Raises:
        ConfigError: An unknown recompute mode, precision or attention kernel.
    """
    from fabricui.engine.training.recipe import (
        RecipeChoices,
        default_sequence_parallel,
        resolve_recipe,
        software_era,
    )

    choices = choices or RecipeChoices()
    arch = fabric.gpu.arch
    framework = software.framework if software is not None else None
    try:
        recipe, notes = resolve_recipe(choices, arch, framework)
    except EngineError as exc:
        raise ConfigError(exc.message) from None
    if software is not None:
        if software.why:
            notes.insert(0, software.why)
        impl = recipe.attention_impl or (framework.attention if framework else "")
        kernel = software.kernel(impl, arch) if recipe.attention == "flash" else None
        recipe = dataclasses.replace(recipe, attention_impl=impl, attention_kernel=kernel)
        if kernel is None and choices.attention not in (None, "flash", "unfused"):
            notes.append(
                f"{impl} attention has no measured record on {arch} GPUs (hwdb kernels.yaml): "
                f"priced at {fabric.gpu.id}'s own attention figure"
            )
    notes += unused_settings(choices, recipe)
    sp = choices.sequence_parallel if sequence_parallel is None else sequence_parallel
    if sp is None:
        sp = default_sequence_parallel(arch, tp, framework)
        if tp > 1:
            era = framework.id if framework else software_era(arch)
            notes.append(f"sequence parallelism not stated: {'on' if sp else 'off'} ({era})")
    return recipe, bool(sp), notes


def unused_settings(choices: RecipeChoices, recipe: Recipe) -> list[str]:
    """Settings stated that the resolved recipe does not use, said (never silently
    dropped): an FP8 recipe without FP8 GEMMs, recompute modules without selective
    recomputation."""
    notes = []
    if choices.fp8_recipe and recipe.precision != "fp8":
        notes.append(
            f"FP8 recipe {choices.fp8_recipe} not used: precision {recipe.precision} "
            "(it scales FP8 GEMMs)"
        )
    if choices.fp8_attention and recipe.fp8_attention_recipe is None:
        notes.append(
            f"FP8 attention not used: precision {recipe.precision} (attention runs in FP8 "
            "only under an FP8 or FP4 recipe)"
        )
    if choices.recompute_modules and recipe.recompute != "selective":
        notes.append(
            f"recompute modules {', '.join(choices.recompute_modules)} not used: recompute "
            f"{recipe.recompute} (they pick what selective recomputation recomputes)"
        )
    return notes


#: Data-parallel strategies that shard the model states over the data-parallel ranks.
SHARDING = ("zero1", "zero2", "fsdp", "hsdp")


def memory_advice(report: PlanReport, n_gpus: int) -> list[str]:
    """What to change so that a layout that does not fit would (empty when it fits): for
    the larger of the model states and the activations, the settings not already at their
    lightest, then more of the fabric's ``n_gpus`` when the layout leaves some out.

    Args:
        report: The plan.
        n_gpus: GPUs the layout may use (the fabric's, or the job's).

    Returns:
        Short imperative phrases naming flags (``--recompute full``).
    """
    mem = report.memory
    if mem is None or report.fits:
        return []
    lay, recipe = report.layout, report.recipe
    states = mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes
    room = lay.dp > 1 or lay.world < n_gpus  # GPUs a larger model-parallel split can take
    advice = []
    if mem.total_bytes - states >= states:
        if recipe.recompute != "full":
            advice.append("--recompute full")
        if lay.micro_batch > 1:
            advice.append("--micro-batch 1")
        if room:
            advice.append("a larger --cp, --tp or --pp (each splits the activations)")
    else:
        if lay.dp * lay.cp > 1 and not any(s in report.strategies for s in ("fsdp", "hsdp")):
            advice.append("--dp-strategy fsdp (shards the model states over dp x cp)")
        if room:
            advice.append("a larger --tp or --pp (each splits the model states)")
    if lay.world < n_gpus:
        advice.append(f"more of the {n_gpus} GPUs (the layout uses {lay.world})")
    elif not room:
        advice.append(f"more GPUs than {n_gpus} (--nodes)")
    return advice


def precision_problem(gpu: GpuSpec, precision: str | None, catalog: Catalog) -> str | None:
    """Why a stated precision cannot run on ``gpu``: an FP8 or FP4 precision on a part
    whose record has no tensor peak for it (one sentence naming the GPU, the hwdb field and
    the database's parts that have one, those of its own vendor first: a TPU's refusal
    names the TPU that has the peak before a list cut at its length hides it); None when
    it can."""
    from fabricui.engine.training.device import LOW_PRECISION_PEAKS, missing_peak

    if precision is None or precision not in LOW_PRECISION_PEAKS:
        return None
    field = LOW_PRECISION_PEAKS[precision][0]
    having = [record for record in catalog.gpus.values() if getattr(record, field, None)]
    having.sort(key=lambda record: record.vendor != gpu.vendor)  # stable: hwdb order kept
    return missing_peak(gpu, precision, [record.id for record in having])


def _check_precision(request: PlanRequest, fabric: Fabric, catalog: Catalog) -> None:
    """Refuse ``--precision`` or ``--fp8-recipe`` the GPU cannot run (``gpu_recipe_problem``).

    Raises:
        ConfigError: The sentence of ``gpu_recipe_problem``.
    """
    wrong = gpu_recipe_problem(fabric.gpu, request.recipe, catalog)
    if wrong:
        raise ConfigError(wrong[1])


def gpu_recipe_problem(
    gpu: GpuSpec, choices: RecipeChoices | None, catalog: Catalog, setting: str = "--fp8-recipe"
) -> tuple[str, str] | None:
    """Why the precision settings ``choices`` states cannot run on ``gpu``: the one check
    ``plan``'s flags and a run file's run block (``plan --run``) both go through, so
    neither prices what the other refuses.

    Args:
        gpu: The GPU record.
        choices: The recipe settings stated (None: none).
        catalog: The hardware database, to name the parts that can.
        setting: How the FP8 recipe setting is written where it was given (a flag, or a
            run block's ``fp8_recipe``).

    Returns:
        (the run block key at fault, ``precision`` or ``fp8_recipe``; the sentence), or
        None when the GPU can run them.
    """
    wrong = precision_problem(gpu, choices.precision if choices else None, catalog)
    if wrong:
        return "precision", wrong
    wrong = mx_recipe_problem(gpu, choices, catalog, setting)
    if wrong:
        return "fp8_recipe", wrong
    return None


def mx_recipe_problem(
    gpu: GpuSpec, choices: RecipeChoices | None, catalog: Catalog, setting: str = "--fp8-recipe"
) -> str | None:
    """Why the FP8 recipe ``mxfp8`` cannot run on ``gpu``: its tensor cores do not apply MX
    block scales (E8M0 per 32 values), which came with the FP4 tensor cores (NVIDIA
    Blackwell, AMD CDNA4; Transformer Engine refuses MXFP8 below compute capability 10.0),
    so a part without an FP4 peak in hwdb has none; None when it can or is not asked to.
    ``setting`` is how the recipe was given (``--fp8-recipe``, a run block's ``fp8_recipe``)."""
    if choices is None or choices.precision != "fp8" or choices.fp8_recipe != "mxfp8":
        return None
    if gpu.fp4_dense_TFLOPS:
        return None
    having = [record.id for record in catalog.gpus.values() if record.fp4_dense_TFLOPS]
    return (
        f"{setting} mxfp8 needs tensor cores that apply MX block scales (NVIDIA Blackwell "
        f"on, AMD CDNA4 on; in hwdb: {', '.join(having)}); {gpu.id} has none: use another "
        f"{setting} ({', '.join(r for r in FP8_RECIPES if r != 'mxfp8')})"
    )


def check_recompute_modules(model: ModelShape, modules: Sequence[str]) -> None:
    """Refuse a recompute module of MoE layers on a dense model (its MLP is ``mlp``), or
    of multi-head latent attention on a model without it.

    Raises:
        ConfigError: Naming the module and the model.
    """
    moe = [name for name in modules if name in MOE_RECOMPUTE_MODULES]
    if moe and not model.experts:
        raise ConfigError(
            f"recompute module {moe[0]}: {model.id} is dense (no MoE layers); its MLP is "
            "recomputed by 'mlp'"
        )
    mla = [name for name in modules if name in MLA_RECOMPUTE_MODULES]
    if mla and not model.kv_lora_rank:
        raise ConfigError(
            f"recompute module {mla[0]}: {model.id} has no multi-head latent attention "
            "(no kv_lora_rank)"
        )


# --- loading --------------------------------------------------------------------------------


def load_context(
    topology: TopologyRequest,
    model_id: str,
    catalog_request: CatalogRequest | None = None,
    host: PluginHost | None = None,
) -> tuple[Catalog, Fabric, ModelShape]:
    """The catalog, the built fabric and the model a request names.

    Raises:
        FabricError: Unknown model or topology, or a bad node count.
    """
    from fabricui.services.session import load_catalog, load_fabric

    catalog = load_catalog(catalog_request or CatalogRequest(), host)
    model = catalog.model(model_id)
    return catalog, load_fabric(topology, catalog, host), model


def pricer_for(fabric: Fabric, host: PluginHost | None = None) -> Pricer:
    """A pricer with every loaded collective algorithm (core and plugins')."""
    from fabricui.services.session import pricer

    return pricer(fabric, host)


# --- the questions --------------------------------------------------------------------------


def plan(
    request: PlanRequest,
    strategies: Mapping[str, Strategy] | None = None,
    host: PluginHost | None = None,
) -> PlanResult:
    """Price one layout (``request.search`` is ignored: see ``search``).

    Args:
        request: What to price.
        strategies: Registered strategies (default: ``load_strategies(host)``).
        host: The plugin host (default: the process-wide one).

    Raises:
        FabricError: Unknown ids, a bad layout or strategy, a layout the model or the
            fabric cannot run.
    """
    from fabricui.services.jobs import job_of

    catalog, fabric, model = load_context(request.topology, request.model, request.catalog, host)
    _check_precision(request, fabric, catalog)
    job = job_of(fabric, request.hosts)
    software = software_for(catalog, request.framework)
    report = plan_on(fabric, model, request, strategies, pricer_for(fabric, host), job, software)
    return PlanResult(report, fabric, model, job)


def plan_on(
    fabric: Fabric,
    model: ModelShape,
    request: PlanRequest,
    strategies: Mapping[str, Strategy] | None = None,
    pricer: Pricer | None = None,
    job: JobPlacement | None = None,
    software: Software | None = None,
    ranks: npt.NDArray[np.int64] | None = None,
) -> PlanReport:
    """Price one layout of ``request`` on an already built fabric (the explorer's call),
    on the GPUs of ``job`` (or the global ``ranks``) when given, with ``software``
    (default: the request's framework from the request's catalog).

    Raises:
        FabricError: A bad layout or strategy, or a layout the model or fabric cannot run.
    """
    from fabricui.engine.training.step import plan as engine_plan

    software = software or software_of(request.catalog, request.framework)
    if job is not None:
        ranks = job.ranks
    n_gpus = None if ranks is None else len(ranks)
    layout = build_layout(request.layout, fabric, model, n_gpus)
    if request.recipe and request.recipe.recompute_modules:
        check_recompute_modules(model, request.recipe.recompute_modules)
    recipe, sp, notes = resolve(
        request.recipe, fabric, layout.tp, request.sequence_parallel, software
    )
    available = load_strategies() if strategies is None else strategies
    chosen = chosen_strategies(
        request.dp_strategy or "ddp", sp, request.extra_strategies, available
    )
    report = engine_plan(
        fabric,
        model,
        layout,
        chosen,
        evaluate=pricer,
        recipe=recipe,
        assumptions=notes,
        ranks=ranks,
    )
    unused = unpriced_notes(request, report)
    if unused:
        report = dataclasses.replace(report, assumptions=(*report.assumptions, *unused))
    return report


def unpriced_notes(request: PlanRequest, report: PlanReport) -> list[str]:
    """What the request named that the plan could not price, said (the engine skips a
    strategy its layout does not use: a data-parallel one without data-parallel ranks)."""
    lay = report.layout
    notes = []
    if request.dp_strategy:
        name = DP_ALIASES.get(request.dp_strategy, request.dp_strategy)
        if name not in report.strategies and name != "ddp":
            notes.append(
                f"data-parallel strategy {request.dp_strategy} not priced: dp x cp = "
                f"{lay.dp * lay.cp}, no data-parallel ranks to shard or reduce over"
            )
    for name in dict.fromkeys(request.extra_strategies):
        if name not in report.strategies:
            notes.append(f"strategy {name} not priced: it does not apply to this layout")
    return notes


def search(
    request: PlanRequest,
    strategies: Mapping[str, Strategy] | None = None,
    host: PluginHost | None = None,
) -> SearchResult:
    """Rank every layout of the request's model on all GPUs (``search_layouts``).

    Raises:
        FabricError: Unknown ids, a bad batch, no valid layout or none that fits.
    """
    from fabricui.services.jobs import job_of

    catalog, fabric, model = load_context(request.topology, request.model, request.catalog, host)
    _check_precision(request, fabric, catalog)
    software = software_for(catalog, request.framework)
    job = job_of(fabric, request.hosts)
    return search_on(fabric, model, request, strategies, pricer_for(fabric, host), software, job)


def search_on(
    fabric: Fabric,
    model: ModelShape,
    request: PlanRequest,
    strategies: Mapping[str, Strategy] | None = None,
    pricer: Pricer | None = None,
    software: Software | None = None,
    job: JobPlacement | None = None,
) -> SearchResult:
    """``search`` on an already built fabric, on the GPUs of ``job`` when given.

    Raises:
        FabricError: A bad batch, no valid layout or none that fits.
    """
    from fabricui.engine.training.search import DP_FLAVOURS, SearchSpace, search_layouts

    software = software or software_of(request.catalog, request.framework)
    available = load_strategies() if strategies is None else strategies
    layout = request.layout
    seq = layout.seq_len or model.seq_len
    batch = layout.global_batch or (fabric.n_gpus if job is None else len(job.ranks))
    for name, value in (("--global-batch", batch), ("--seq", seq), ("--top", request.top)):
        plan_count(name, value)
    recipe, sp, _notes = resolve(request.recipe, fabric, 2, request.sequence_parallel, software)
    flavours: tuple[str, ...] | None = None
    if request.dp_strategy:
        chosen = chosen_strategies(request.dp_strategy, sp, request.extra_strategies, available)
        flavours = (chosen[0].name,)
    pool = [s for name, s in available.items() if name in (*DP_FLAVOURS, *MODEL_PARALLEL)]
    pool += [available[n] for n in request.extra_strategies if n in available]
    if flavours and flavours[0] not in DP_FLAVOURS:
        pool.append(available[flavours[0]])
    space = SearchSpace(dp_flavours=flavours)
    if request.recipe and request.recipe.recompute:
        space = dataclasses.replace(space, recompute=(recipe.recompute,))
    try:
        plans = search_layouts(
            fabric,
            model,
            pool,
            batch,
            seq,
            top=request.top,
            evaluate=pricer,
            recipe=recipe,
            sequence_parallel=sp,
            space=space,
            ranks=None if job is None else job.ranks,
        )
    except EngineError as exc:
        raise ConfigError(exc.message) from None
    return SearchResult(tuple(plans), fabric, model, batch, seq, job)


def decision_table(
    request: TableRequest,
    strategies: Mapping[str, Strategy] | None = None,
    host: PluginHost | None = None,
) -> DecisionTable:
    """The decision table of a model on a topology (plugin strategies that failed while it
    was computed are left out).

    Raises:
        FabricError: Unknown ids, or a degree the fabric does not have.
    """
    catalog, fabric, model = load_context(request.topology, request.model, request.catalog, host)
    software = software_for(catalog, request.framework)
    return decision_table_on(
        fabric, model, request, strategies, pricer_for(fabric, host), host, software
    )


def decision_table_on(
    fabric: Fabric,
    model: ModelShape,
    request: TableRequest,
    strategies: Mapping[str, Strategy] | None = None,
    pricer: Pricer | None = None,
    host: PluginHost | None = None,
    software: Software | None = None,
) -> DecisionTable:
    """``decision_table`` on an already built fabric.

    Raises:
        FabricError: A degree the fabric does not have, or invalid numbers.
    """
    from fabricui.engine.training.table import TABLE_MICROBATCHES, TABLE_SEQ
    from fabricui.engine.training.table import decision_table as engine_table
    from fabricui.services.session import without_failed_strategies

    software = software or software_of(request.catalog, request.framework)
    seq = TABLE_SEQ if request.seq_len is None else plan_count("--seq", request.seq_len)
    microbatches = (
        TABLE_MICROBATCHES
        if request.microbatches is None
        else plan_count("--microbatches", request.microbatches)
    )
    recipe, _sp, _notes = resolve(None, fabric, 1, None, software)
    available = load_strategies() if strategies is None else strategies
    table = engine_table(
        fabric,
        model,
        available.values(),
        seq_len=seq,
        microbatches=microbatches,
        mfu=request.mfu,
        degree=request.degree,
        evaluate=pricer,
        recipe=recipe,
    )
    return without_failed_strategies(table, host)


def software_of(catalog: CatalogRequest, framework: str | None) -> Software:
    """The software of a request whose caller did not resolve it (loads the catalog)."""
    from fabricui.services.session import load_catalog

    return software_for(load_catalog(catalog), framework)


def exposed_thresholds() -> tuple[float, float]:
    """(good, ok): the shares of compute a strategy's exposed communication may reach and
    still be called good, and OK (the decision table's verdicts)."""
    from fabricui.engine.training.table import GOOD_EXPOSED_FRACTION, OK_EXPOSED_FRACTION

    return GOOD_EXPOSED_FRACTION, OK_EXPOSED_FRACTION


def verdict_text(verdict: str, exposed_us: float | None, step_us: float) -> str:
    """A decision-table verdict with the exposed share of compute it rests on (``yes (0%)``
    beside a communication share the overlap hides)."""
    if exposed_us is None or not step_us:
        return verdict
    return f"{verdict} ({exposed_us / step_us:.0%})"


def default_layout(fabric: Fabric, model: ModelShape) -> LayoutRequest:
    """TP over a node's GPUs when it divides the heads (at most 8), DP over the rest."""
    tp = min(8, fabric.gpus_per_node)
    while tp > 1 and (model.heads % tp or fabric.n_gpus % tp):
        tp -= 1
    return LayoutRequest(tp=tp)


__all__ = [
    "MODEL_PARALLEL",
    "SEARCH_TOP",
    "FabricError",
    "LayoutRequest",
    "PlanRequest",
    "PlanResult",
    "SearchResult",
    "TableRequest",
    "build_layout",
    "chosen_strategies",
    "decision_table",
    "decision_table_on",
    "default_layout",
    "dp_strategy_problem",
    "gpu_recipe_problem",
    "load_context",
    "load_strategies",
    "memory_advice",
    "plan",
    "plan_count",
    "plan_on",
    "precision_problem",
    "resolve",
    "search",
    "search_on",
]


def even_stage_bubble_fraction(pp: int, microbatches: int, vpp: int = 1) -> float:
    """The pipeline's idle share when every stage takes as long: ``(pp-1)/(vpp m + pp-1)``
    (the engine's schedule), for views to set beside the plan's own figure."""
    from fabricui.engine.training.schedule import bubble_fraction

    return bubble_fraction(pp, microbatches, vpp)
