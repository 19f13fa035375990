"""What a plan request or a run states of its training recipe, before the framework's
defaults fill in the rest (``engine.training.recipe.resolve_recipe``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecipeChoices:
    """What a run or a command states; None: unstated (the framework's default)."""

    recompute: str | None = None
    """Recompute mode."""
    precision: str | None = None
    """Precision."""
    attention: str | None = None
    """Attention kernel (``ATTENTION_CHOICES``)."""
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
    fp8_recipe: str | None = None
    """FP8 scaling recipe."""
    recompute_modules: tuple[str, ...] | None = None
    """Modules selective recomputation recomputes."""
    passes: str | None = None
    """Memory-bound passes (``compiled`` for a torch.compile run)."""
    moe_dispatch: str | None = None
    """MoE dispatch."""
    moe_imbalance: float | None = None
    """Tokens of the most loaded expert over the mean."""
    cuda_graph: str | None = None
    """CUDA graphs captured (``vocabulary.CUDA_GRAPH_MODES``)."""
    power_W: float | None = None
    """Board power cap [W]."""
    grad_reduce_bytes: float | None = None
    """Bytes per gradient element of the data-parallel reduction (4: FP32)."""
    fsdp_reshard: bool | None = None
    """FSDP gathers again for backward (reshard after forward)."""
    fp8_attention: bool | None = None
    """Attention runs in FP8 too (Transformer Engine's ``fp8_dot_product_attention``);
    None: not stated (16-bit attention, the frameworks' default)."""
