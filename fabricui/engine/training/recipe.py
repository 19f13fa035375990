"""How a job trains beyond its layout: recomputation, precision, kernels, overlaps and the
framework whose defaults fill in what is not stated.

A setting a plan or a run states wins. What it leaves unstated takes its framework's
default (``FrameworkSpec``, read from the hwdb's ``frameworks.yaml`` by the caller), and
the plan says so. Without a framework the defaults are those of the software the GPU
generation trained with: on Volta and Ampere the Megatron-LM of 2021-22 (the runs of
Narayanan et al. and Korthikanti et al.: unfused attention with a fused softmax, gradient
all-reduce after the backward pass, no sequence parallelism); on Hopper and later
Megatron-Core / NeMo as its performance recipes run it (fused attention, gradient
reduction and parameter gathers overlapped with compute, sequence parallelism with TP and
TP collectives overlapped with the GEMMs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.engine.training.layer import (
    ATTENTION_KINDS,
    FP8_CAST_BYTES,
    LOSS_BYTES_PER_LOGIT,
    PASS_BYTES,
    RECOMPUTE_MODULES,
    Kernels,
)
from fabricui.errors import EngineError
from fabricui.model.choices import RecipeChoices
from fabricui.vocabulary import (
    ATTENTION_CHOICES,
    CP_ATTENTION,
    CUDA_GRAPH_MODES,
    MOE_DISPATCH,
    PRECISIONS,
    RECOMPUTE_MODES,
    TP_USERBUFFERS,
)

if TYPE_CHECKING:
    from fabricui.model import FrameworkSpec, KernelSpec

#: GPU architectures whose default software is 2021-22 Megatron-LM.
EARLY_ARCHS = ("volta", "turing", "ampere")
#: GPU architectures without BF16 (FP16 mixed precision).
FP16_ONLY_ARCHS = ("volta", "turing")


@dataclass(frozen=True)
class Recipe:
    """Training settings the step and memory models read."""

    recompute: str = "none"
    """``none``, ``selective`` (attention core, Korthikanti et al.) or ``full``."""
    precision: str = "bf16"
    """``bf16``, ``fp16`` or ``fp8`` (GEMMs in FP8)."""
    attention: str = "flash"
    """``flash`` (fused) or ``unfused`` (score matrix in HBM)."""
    dp_overlap: bool = True
    """Gradient reduction overlaps the last micro-batch's backward, and ZeRO's parameter
    gather the next forward."""
    tp_overlap: bool = False
    """TP collectives hide behind the layer's GEMMs (Megatron's TP communication overlap)."""
    tp_overlap_backward: bool = True
    """With ``tp_overlap``, the backward pass's TP collectives hide too (False: only the
    forward's, as PyTorch's async TP runs)."""
    tp_overlap_decomposed: bool = False
    """With ``tp_overlap``, each TP collective is decomposed with the GEMMs beside it
    (PyTorch's micro-pipelined async TP) and hides only behind those
    (``comm.decomposed_tp_exposure``); False: behind all the layer's GEMMs."""
    tp_userbuffers: str = ""
    """With ``tp_overlap``, the Transformer Engine userbuffers configuration each TP
    collective runs with beside the one GEMM it is paired with
    (``vocabulary.TP_USERBUFFERS``, ``comm.userbuffers_tp_exposure``); ``""``: behind all
    the layer's GEMMs."""
    ep_overlap: bool = False
    """Expert all-to-alls hide behind the expert GEMMs."""
    grad_bytes: float = 4.0
    """Bytes per gradient element kept for the optimizer (FP32 main gradients: 4)."""
    optimizer_bytes: float = 12.0
    """Bytes per parameter the optimizer keeps (FP32 master and Adam moments: 12;
    ``FrameworkSpec.optimizer_bytes``)."""
    mfu: float | None = None
    """Legacy: run compute at this fraction of the dense peak instead of the kernel model."""
    framework: str = ""
    """Id of the framework whose defaults filled in the rest (empty: the GPU generation's
    software)."""
    attention_impl: str = ""
    """The fused attention kernel (``cudnn``, ``fa2`` ...; empty: the GPU record's one
    figure)."""
    passes: str = "fused"
    """Memory-bound passes: ``fused``, ``compiled`` or ``eager``."""
    loss: str = "fp32"
    """Cross entropy: ``fused``, ``fp32`` or ``eager``."""
    selective: str = "attention"
    """What ``selective`` recomputes: ``attention`` or ``ops``."""
    recompute_modules: tuple[str, ...] = ()
    """Modules ``selective`` recomputes (Megatron-Core's ``recompute_modules``); empty: by
    ``selective``."""
    fp8_recipe: str = "delayed"
    """FP8 scaling recipe (``delayed``, ``current``, ``blockwise``, ``mxfp8``)."""
    grad_reduce_bytes: float = 2.0
    """Bytes per gradient element the data-parallel reduction moves."""
    bucket_params: float = 0.0
    """Parameters per gradient bucket (0: 25 MiB buckets; negative: one layer's)."""
    fsdp_reshard: bool = True
    """FSDP / ZeRO-3 gathers the parameters again for backward."""
    fsdp_reduce_bytes: float = 4.0
    """Bytes per gradient element of FSDP's reduce-scatter."""
    pp_defers_fsdp_sync: bool = False
    """Under PP, FSDP's gradients stay unsharded (at ``fsdp_reduce_bytes``) and its
    parameters gathered until the last micro-batch, then reduce-scatter once
    (``FrameworkSpec.pp_defers_fsdp_sync``)."""
    moe_dispatch: str = "alltoall"
    """MoE dispatch: ``alltoall`` (a copy per routed expert) or ``deepep`` (a copy per node)."""
    moe_imbalance: float = 1.0
    """Tokens of the most loaded expert over the mean (1: balanced)."""
    power_W: float | None = None
    """Board power cap below the GPU's own limit [W]; None: its limit."""
    moe_sync_us: float = 0.0
    """GPU time lost per MoE layer pass to the host's read of the token counts [us]."""
    cuda_graph: str = "none"
    """CUDA graphs captured: ``none``, ``partial`` or ``full_iteration``
    (``vocabulary.CUDA_GRAPH_MODES``)."""
    separate_projections: bool = False
    """Query, key, value (and gate, up) are separate GEMMs (the framework's model code)."""
    kv_repeated: bool = False
    """Keys and values are repeated to the query heads before attention, which saves them
    at that width (the framework's model code)."""
    cp_attention: str = "ring"
    """Context parallelism's attention: ``ring`` or ``torch`` (``vocabulary.CP_ATTENTION``)."""
    compute_efficiency: float = 1.0
    """The framework's share of the reference software's compute throughput."""
    attention_kernel: KernelSpec | None = None
    """The fused attention kernel's record on this GPU's architecture (None: the GPU
    record's one figure)."""
    expert_bias_prob_bytes: float = 0.0
    """Width of the router probabilities [bytes] when the framework adds the experts'
    output bias in a pass of its own (``expert_bias_pass_bytes``); 0: no such pass."""
    fp8_experts: bool = True
    """Under FP8, the experts' grouped GEMMs run in FP8 too (False: in 16-bit)."""
    unfused_clamp: bool = False
    """The experts' activation clamps (a model with ``activation_clamp``) run as passes of
    their own (``activation_clamp_pass``)."""
    unfused_scaled_rope: bool = False
    """Rotary embeddings with YaRN's scale (a model with ``rope_yarn_factor``) run as PyTorch
    ops, not one fused pass (``FrameworkSpec.unfused_scaled_rope``)."""
    fp8_attention: bool = False
    """Under FP8 (or FP4), fused attention runs in FP8 too (Transformer Engine's
    ``fp8_dot_product_attention``), in the format its recipe selects."""

    def __post_init__(self) -> None:
        """Refuse unknown modes and numbers outside their range.

        Raises:
            EngineError: An unknown recompute mode, precision, attention kind, pass style,
                loss, FP8 recipe or module, or a number out of range.
        """
        for name, value, allowed in (
            ("recompute", self.recompute, RECOMPUTE_MODES),
            ("precision", self.precision, PRECISIONS),
            ("attention", self.attention, ATTENTION_KINDS),
            ("passes", self.passes, tuple(PASS_BYTES)),
            ("loss", self.loss, tuple(LOSS_BYTES_PER_LOGIT)),
            ("fp8 recipe", self.fp8_recipe, tuple(FP8_CAST_BYTES)),
            ("selective", self.selective, ("attention", "ops")),
            ("moe dispatch", self.moe_dispatch, MOE_DISPATCH),
            ("cuda graph", self.cuda_graph, CUDA_GRAPH_MODES),
            ("cp attention", self.cp_attention, CP_ATTENTION),
            ("tp userbuffers", self.tp_userbuffers, TP_USERBUFFERS),
        ):
            if value not in allowed:
                raise EngineError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")
        for module in self.recompute_modules:
            if module not in RECOMPUTE_MODULES:
                raise EngineError(
                    f"recompute module must be one of {', '.join(RECOMPUTE_MODULES)} "
                    f"(got {module!r})"
                )
        if self.mfu is not None and not 0.0 < self.mfu <= 1.0:
            raise EngineError(f"mfu must be in (0, 1] (got {self.mfu})")
        if not 1.0 <= self.moe_imbalance <= 1000.0:
            raise EngineError(
                f"MoE imbalance must be between 1 and 1000 (got {self.moe_imbalance})"
            )
        if self.power_W is not None and not 1.0 <= self.power_W <= 1e5:
            raise EngineError(f"power cap must be between 1 and 100000 W (got {self.power_W})")

    @property
    def selective_kind(self) -> str:
        """What ``selective`` recomputes when no ``recompute_modules`` are named (those
        take Megatron-Core's attention-core memory): ``attention`` or ``ops``."""
        return "attention" if self.recompute_modules else self.selective

    @property
    def fp8_attention_recipe(self) -> str | None:
        """The recipe FP8 attention runs under (``fp8_recipe`` under FP8, ``nvfp4`` under
        FP4); None: attention in 16-bit (not asked for, or a 16-bit precision)."""
        if not self.fp8_attention or self.precision not in ("fp8", "fp4"):
            return None
        return self.fp8_recipe if self.precision == "fp8" else "nvfp4"

    @property
    def kernels(self) -> Kernels:
        """How the layer model runs the non-GEMM work under this recipe."""
        return Kernels(
            attention=self.attention,
            passes=self.passes,
            loss=self.loss,
            fp8_recipe=self.fp8_recipe
            if self.precision == "fp8"
            else ("nvfp4" if self.precision == "fp4" else None),
            moe_sync_s=self.moe_sync_us * 1e-6,
            separate_projections=self.separate_projections,
            expert_bias_prob_bytes=self.expert_bias_prob_bytes,
            fp8_experts=self.fp8_experts,
            cp_attention=self.cp_attention,
            unfused_clamp=self.unfused_clamp,
            unfused_scaled_rope=self.unfused_scaled_rope,
        )


def moe_host_sync_us(sync_us: float, cuda_graph: str | None) -> float:
    """GPU time an MoE layer pass waits on the host [us]: the framework's ``sync_us``,
    none under a whole-iteration CUDA graph.

    Megatron-Core's dropless MoE layers copy the tokens each expert receives to the host
    to size the all-to-all and the grouped GEMM; a whole-iteration graph
    (``cuda_graph_impl = "full_iteration"``) needs static shapes, so Megatron-Bridge's
    recipes that capture it give each expert rank a fixed capacity
    (``moe_expert_rank_capacity_factor``, ``moe_paged_stash``) and nothing is read on the
    host (Megatron-Bridge ``perf_recipes/qwen/common.py``
    ``_enable_hybridep_full_iteration_mxfp8``). Partial graphs (attention, router,
    preprocessing) leave the read in place.
    """
    return 0.0 if cuda_graph == "full_iteration" else sync_us


def expert_bias_pass_bytes(unfused: bool, moe_dispatch: str, cuda_graph: str | None) -> float:
    """Width of the router probabilities [bytes] the experts' output-bias pass works in, or
    0 when there is no such pass.

    Megatron-Core adds the routed experts' output (fc2) bias as ``t + b * p`` per local
    expert after the grouped GEMM (``TEGroupedMLP._apply_bias``, NVIDIA/Megatron-LM
    a329dd6da5; ``FrameworkSpec.unfused_expert_bias``). Its arithmetic runs in the
    probabilities' dtype: the flex dispatcher (DeepEP, HybridEP: ``deepep`` here) casts them
    to FP32 (``token_dispatcher.py``, "DeepEP only supports float32 probs"), the all-to-all
    dispatcher keeps the router's dtype, the activations' 16 bits when no
    ``moe_router_dtype`` is set (``router.py`` ``gating``; Transformer Engine's fused router
    writes its probabilities in the logits' dtype), as Megatron-Bridge's gpt-oss recipes
    leave it. That path splits by host token counts and is never captured in a CUDA graph;
    the recipes that capture the whole iteration run Transformer Engine's fused grouped MLP
    instead (``use_transformer_engine_op_fuser`` and ``NVTE_CUTEDSL_FUSED_GROUPED_MLP=1``:
    Megatron-Bridge 4ab94dfad ``perf_recipes/gpt_oss/common.py``
    ``_apply_gpt_oss_120b_full_iter_fp8mx_configs``), which hands the bias and its
    probability scale to the grouped GEMM kernel (Megatron-LM e4ea85970b ``scale_bias``;
    Transformer Engine d0067d0da ``ops/fused/grouped_mlp.py`` ``bias_tensor``,
    ``prob_tensor``): no pass of its own.

    Args:
        unfused: The framework adds expert biases in a pass of their own.
        moe_dispatch: ``alltoall`` or ``deepep``.
        cuda_graph: The run's CUDA graphs (None: none stated).

    Returns:
        4.0, 2.0, or 0.0 without the pass.
    """
    if not unfused or cuda_graph == "full_iteration":
        return 0.0
    return 4.0 if moe_dispatch == "deepep" else 2.0


def activation_clamp_pass(unfused: bool, cuda_graph: str | None) -> bool:
    """The experts' activation clamps run as passes of their own.

    Megatron-Core's ``TEGroupedMLP`` hands a clamped gated activation to
    ``weighted_bias_quick_geglu_impl`` (``megatron/core/fusions/fused_bias_geglu.py``, the
    same in the Megatron-LM of Megatron-Bridge v0.2.0-v0.6.0, 25.11-26.08: 92c8482e6d to
    24bad8e677), which clamps the two halves of the first GEMM's output and concatenates
    them (``x_glu.clamp``, ``x_linear.clamp``, ``torch.cat``) before its compiled kernel
    (``FrameworkSpec.unfused_activation_clamp``). The recipes that capture the whole
    iteration run Transformer Engine's fused grouped MLP instead
    (``use_transformer_engine_op_fuser``, ``expert_bias_pass_bytes``), whose
    ``ScaledClampedQGeGLU`` clamps inside the kernel.

    Args:
        unfused: The framework clamps in ops of their own.
        cuda_graph: The run's CUDA graphs (None: none stated).
    """
    return unfused and cuda_graph != "full_iteration"


def software_era(arch: str) -> str:
    """The software a GPU generation's defaults come from (for messages)."""
    return "Megatron-LM 2021-22" if arch in EARLY_ARCHS else "Megatron-Core/NeMo"


def default_sequence_parallel(arch: str, tp: int, framework: FrameworkSpec | None = None) -> bool:
    """SP by default with TP on Hopper and later (Megatron-Core, NeMo) and with any named
    framework of today, not with the Megatron-LM of 2021-22."""
    if framework is not None:
        return tp > 1 and framework.attention != "unfused"
    return tp > 1 and arch not in EARLY_ARCHS


def era_recipe(arch: str) -> Recipe:
    """The recipe of a GPU generation's software when nothing is stated."""
    return resolve_recipe(RecipeChoices(), arch)[0]


def resolve_recipe(
    choices: RecipeChoices, arch: str, framework: FrameworkSpec | None = None
) -> tuple[Recipe, list[str]]:
    """The recipe a set of choices means on a GPU architecture, and the assumptions made.

    Args:
        choices: What was stated.
        arch: The GPU's architecture (``ampere``, ``hopper`` ...).
        framework: The framework whose defaults fill in what is unstated (None: the GPU
            generation's software, ``software_era``).

    Returns:
        (recipe, assumptions): one sentence per setting that took a default.

    Raises:
        EngineError: An unknown mode.
    """
    if framework is not None:
        return _framework_recipe(choices, arch, framework)
    early = arch in EARLY_ARCHS
    era = software_era(arch)
    notes: list[str] = []

    def pick(name: str, value: object, default: object, why: str) -> object:
        if value is not None:
            return value
        notes.append(f"{name} not stated: {_show(default)} ({why})")
        return default

    recompute = pick("recompute", choices.recompute, "none", f"{era} default")
    precision = pick(
        "precision",
        choices.precision,
        "fp16" if arch in FP16_ONLY_ARCHS or early else "bf16",
        f"{era} mixed precision",
    )
    attention = pick(
        "attention",
        choices.attention,
        "unfused" if early else "flash",
        "score matrix with a fused softmax, as Megatron-LM ran before FlashAttention"
        if early
        else "fused attention (cuDNN / FlashAttention)",
    )
    dp_overlap = pick(
        "DP overlap",
        choices.dp_overlap,
        not early,
        "gradient all-reduce after the backward pass" if early else "overlap_grad_reduce",
    )
    tp_overlap = pick(
        "TP overlap",
        choices.tp_overlap,
        not early,
        "TP collectives after each GEMM"
        if early
        else "NeMo's performance recipes overlap TP collectives with the GEMMs",
    )
    ep_overlap = pick("EP overlap", choices.ep_overlap, False, f"{era} default")
    kind, impl = _attention_kind(str(attention))
    recipe = Recipe(
        recompute=str(recompute),
        precision=str(precision),
        attention=kind,
        attention_impl=impl,
        dp_overlap=bool(dp_overlap),
        tp_overlap=bool(tp_overlap),
        ep_overlap=bool(ep_overlap),
        mfu=choices.mfu,
        **_stated_extras(choices),
    )
    return recipe, notes


def _framework_recipe(
    choices: RecipeChoices, arch: str, framework: FrameworkSpec
) -> tuple[Recipe, list[str]]:
    """``resolve_recipe`` with a framework's defaults."""
    notes: list[str] = []
    name = framework.id

    def pick(label: str, value: object, default: object, why: str = "") -> object:
        if value is not None:
            return value
        notes.append(f"{label} not stated: {_show(default)} ({name}{'; ' + why if why else ''})")
        return default

    early_software = framework.attention == "unfused"
    half = "fp16" if early_software or arch in FP16_ONLY_ARCHS else "bf16"
    precision = pick("precision", choices.precision, half)
    recompute = pick("recompute", choices.recompute, "none")
    attention = choices.attention or framework.attention
    if choices.attention in (None, "flash"):
        attention = framework.attention
    if choices.attention is None:
        notes.append(f"attention not stated: {_attention_words(framework.attention)} ({name})")
    dp_overlap = pick("DP overlap", choices.dp_overlap, not early_software)
    tp_overlap = pick("TP overlap", choices.tp_overlap, framework.tp_overlap)
    ep_overlap = pick("EP overlap", choices.ep_overlap, False)
    fp8_recipe = choices.fp8_recipe or framework.fp8_recipe
    if precision == "fp8" and choices.fp8_recipe is None:
        notes.append(f"FP8 recipe not stated: {fp8_recipe} scaling ({name})")
    kind, impl = _attention_kind(str(attention))
    moe_dispatch = choices.moe_dispatch or framework.moe_dispatch
    recipe = Recipe(
        recompute=str(recompute),
        precision=str(precision),
        attention=kind,
        attention_impl=impl,
        dp_overlap=bool(dp_overlap),
        tp_overlap=bool(tp_overlap),
        tp_overlap_backward=framework.tp_overlap_backward,
        tp_overlap_decomposed=framework.tp_overlap_decomposed,
        tp_userbuffers=framework.tp_userbuffers,
        ep_overlap=bool(ep_overlap),
        mfu=choices.mfu,
        framework=name,
        passes=choices.passes or framework.passes,
        loss=framework.loss,
        selective=framework.selective,
        recompute_modules=tuple(choices.recompute_modules or ()),
        fp8_recipe=fp8_recipe,
        grad_reduce_bytes=choices.grad_reduce_bytes or framework.grad_reduce_bytes,
        grad_bytes=framework.grad_bytes,
        optimizer_bytes=framework.optimizer_bytes,
        bucket_params=-1.0 if framework.bucket_layers else framework.bucket_params,
        fsdp_reshard=framework.fsdp_reshard
        if choices.fsdp_reshard is None
        else choices.fsdp_reshard,
        fsdp_reduce_bytes=choices.grad_reduce_bytes or framework.fsdp_reduce_bytes,
        pp_defers_fsdp_sync=framework.pp_defers_fsdp_sync,
        moe_dispatch=moe_dispatch,
        # 'is None', not 'or': an explicit 0 must reach the range check, not become 1.
        moe_imbalance=1.0 if choices.moe_imbalance is None else choices.moe_imbalance,
        power_W=choices.power_W,
        moe_sync_us=moe_host_sync_us(framework.moe_sync_us, choices.cuda_graph),
        cuda_graph=choices.cuda_graph or "none",
        separate_projections=framework.separate_projections,
        kv_repeated=framework.kv_repeated,
        cp_attention=framework.cp_attention,
        compute_efficiency=framework.compute_efficiency,
        expert_bias_prob_bytes=expert_bias_pass_bytes(
            framework.unfused_expert_bias, moe_dispatch, choices.cuda_graph
        ),
        fp8_experts=framework.fp8_experts,
        fp8_attention=bool(choices.fp8_attention),
        unfused_clamp=activation_clamp_pass(framework.unfused_activation_clamp, choices.cuda_graph),
        unfused_scaled_rope=framework.unfused_scaled_rope,
    )
    if choices.cuda_graph == "full_iteration" and framework.moe_sync_us:
        notes.append(
            "whole-iteration CUDA graph: MoE layers do not wait on the host for token "
            "counts (static expert capacity)"
        )
    if tp_overlap and not framework.tp_overlap_backward:
        notes.append(
            f"{name}'s TP overlap (async TP) hides the forward pass's TP collectives only; "
            "the backward's stay exposed"
        )
    if framework.compute_efficiency < 1.0:
        notes.append(
            f"{name}'s kernels reach {framework.compute_efficiency:.0%} of Megatron-Core's "
            "compute throughput (hwdb compute_efficiency, fitted to its published runs)"
        )
    return recipe, notes


def _stated_extras(choices: RecipeChoices) -> dict[str, Any]:
    """The settings a choice states beyond the era's (no framework to default them)."""
    extras: dict[str, Any] = {}
    for name in (
        "fp8_recipe",
        "passes",
        "moe_dispatch",
        "grad_reduce_bytes",
        "fsdp_reshard",
        "cuda_graph",
        "fp8_attention",
    ):
        value = getattr(choices, name)
        if value is not None:
            extras[name] = value
    if choices.recompute_modules:
        extras["recompute_modules"] = tuple(choices.recompute_modules)
    if choices.moe_imbalance is not None:
        extras["moe_imbalance"] = choices.moe_imbalance
    if choices.power_W is not None:
        extras["power_W"] = choices.power_W
    return extras


def _attention_kind(attention: str) -> tuple[str, str]:
    """(kind, implementation) of an attention choice: ``unfused`` is its own kind; a named
    fused kernel is ``flash`` priced by its record; ``flash`` alone by the GPU's figure.

    Raises:
        EngineError: An unknown attention choice.
    """
    if attention not in ATTENTION_CHOICES:
        raise EngineError(
            f"attention must be one of {', '.join(ATTENTION_CHOICES)} (got {attention!r})"
        )
    if attention == "unfused":
        return "unfused", ""
    return "flash", "" if attention == "flash" else attention


def _attention_words(impl: str) -> str:
    return {
        "unfused": "unfused (score matrix with a fused softmax)",
        "cudnn": "cuDNN fused attention",
        "fa2": "FlashAttention-2",
        "fa3": "FlashAttention-3",
        "fa4": "FlashAttention-4",
        "triton": "Triton fused attention",
    }.get(impl, impl)


def _show(value: object) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)
