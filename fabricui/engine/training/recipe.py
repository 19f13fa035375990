"""How a job trains beyond its layout: recomputation, precision, attention kernel, overlaps.

What a run or a command leaves unstated takes the default of the software its GPU
generation trained with, and the plan says so: on Volta and Ampere the Megatron-LM of
2021-22 (the runs of Narayanan et al. and Korthikanti et al.: unfused attention with a
fused softmax, gradient all-reduce after the backward pass, no sequence parallelism); on
Hopper and later Megatron-Core / NeMo as its performance recipes run it (fused attention,
gradient reduction and parameter gathers overlapped with compute, sequence parallelism with
TP and TP collectives overlapped with the GEMMs).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricui.engine.training.device import PRECISIONS
from fabricui.engine.training.layer import ATTENTION_KINDS
from fabricui.errors import EngineError

#: Activation recomputation modes.
RECOMPUTE_MODES = ("none", "selective", "full")
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
    ep_overlap: bool = False
    """Expert all-to-alls hide behind the expert GEMMs."""
    grad_bytes: float = 4.0
    """Bytes per gradient element kept for the optimizer (FP32 main gradients: 4)."""
    mfu: float | None = None
    """Legacy: run compute at this fraction of the dense peak instead of the kernel model."""

    def __post_init__(self) -> None:
        """Refuse unknown modes.

        Raises:
            EngineError: An unknown recompute mode, precision or attention kind.
        """
        for name, value, allowed in (
            ("recompute", self.recompute, RECOMPUTE_MODES),
            ("precision", self.precision, PRECISIONS),
            ("attention", self.attention, ATTENTION_KINDS),
        ):
            if value not in allowed:
                raise EngineError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")
        if self.mfu is not None and not 0.0 < self.mfu <= 1.0:
            raise EngineError(f"mfu must be in (0, 1] (got {self.mfu})")


@dataclass(frozen=True)
class RecipeChoices:
    """What a run or a command states; None: unstated (the generation's default)."""

    recompute: str | None = None
    """Recompute mode."""
    precision: str | None = None
    """Precision."""
    attention: str | None = None
    """Attention kernel."""
    dp_overlap: bool | None = None
    """Overlap gradient reduction with backward."""
    tp_overlap: bool | None = None
    """Overlap TP collectives with GEMMs."""
    ep_overlap: bool | None = None
    """Overlap expert all-to-alls with expert GEMMs."""
    sequence_parallel: bool | None = None
    """Sequence parallelism with TP."""
    mfu: float | None = None
    """Legacy fixed MFU."""


def software_era(arch: str) -> str:
    """The software a GPU generation's defaults come from (for messages)."""
    return "Megatron-LM 2021-22" if arch in EARLY_ARCHS else "Megatron-Core/NeMo"


def default_sequence_parallel(arch: str, tp: int) -> bool:
    """SP by default with TP on Hopper and later (Megatron-Core, NeMo), not before."""
    return tp > 1 and arch not in EARLY_ARCHS


def era_recipe(arch: str) -> Recipe:
    """The recipe of a GPU generation's software when nothing is stated."""
    return resolve_recipe(RecipeChoices(), arch)[0]


def resolve_recipe(choices: RecipeChoices, arch: str) -> tuple[Recipe, list[str]]:
    """The recipe a set of choices means on a GPU architecture, and the assumptions made.

    Args:
        choices: What was stated.
        arch: The GPU's architecture (``ampere``, ``hopper`` ...).

    Returns:
        (recipe, assumptions): one sentence per setting that took a default.

    Raises:
        EngineError: An unknown mode.
    """
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
    recipe = Recipe(
        recompute=str(recompute),
        precision=str(precision),
        attention=str(attention),
        dp_overlap=bool(dp_overlap),
        tp_overlap=bool(tp_overlap),
        ep_overlap=bool(ep_overlap),
        mfu=choices.mfu,
    )
    return recipe, notes


def _show(value: object) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)
