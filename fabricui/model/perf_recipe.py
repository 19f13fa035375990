"""One performance recipe of a framework release: the layout and settings NVIDIA's
Megatron-Bridge ran a model at, on a GPU and GPU count and in a precision, for a
performance summary (``hwdb/recipes/megatron-bridge.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

#: Precisions of the recipes, as their ``compute_dtype`` spells them.
RECIPE_PRECISIONS = ("bf16", "fp8_cs", "fp8_mx", "fp8_ds", "nvfp4")


@dataclass(frozen=True)
class PerfRecipe:
    """A recipe; a setting left None is one the recipe leaves to its base model recipe."""

    release: str
    """The performance summary's release (``26.08``, ``26.04.01``)."""
    recipe: str
    """The recipe's name in the source (function or constant)."""
    model: str
    """The recipe's model (``qwen3_235b_a22b``), as its name spells it."""
    gpu: str
    """The recipe's GPU word (``h100``, ``gb300``)."""
    gpus: int
    """GPUs it runs on."""
    precision: str
    """``RECIPE_PRECISIONS``."""
    source: str
    """The recipe's file at the release's commit."""
    variant: str = ""
    """A variant beside the release's main recipe (``v1``, ``large_scale``); empty: none."""
    any_count: bool = False
    """The one recipe of its model, GPU and precision that the release's perf script runs
    at a GPU count no recipe names (scaling its global batch to that count)."""
    global_batch: int | None = None
    """Sequences per step."""
    tp: int | None = None
    """Tensor parallel."""
    pp: int | None = None
    """Pipeline stages."""
    cp: int | None = None
    """Context parallel."""
    ep: int | None = None
    """Expert parallel."""
    etp: int | None = None
    """Expert tensor parallel (``expert_tensor_parallel_size``); None: Megatron-Core's
    default, the tensor-parallel size."""
    fp8_recipe: str | None = None
    """FP8 scaling recipe (``current``, ``mxfp8``, ``delayed``)."""
    ep_overlap: bool | None = None
    """Expert all-to-alls overlapped (``overlap_moe_expert_parallel_comm``)."""
    tp_overlap: bool | None = None
    """TP communication overlap (``tp_comm_overlap``)."""
    dp_overlap: bool | None = None
    """Gradient reduction overlapped with the backward pass (``overlap_grad_reduce``)."""
    cuda_graph: str | None = None
    """CUDA graphs: ``none``, ``partial``, ``full_iteration``."""
    moe_dispatch: str | None = None
    """``alltoall`` or ``deepep`` (DeepEP or HybridEP: the flex dispatcher)."""
    recompute_modules: tuple[str, ...] | None = None
    """Modules selective recomputation recomputes (empty: none)."""
    fp8_attention: bool | None = None
    """Attention in FP8 (``fp8_dot_product_attention``)."""

    @property
    def label(self) -> str:
        """``release recipe model gpu gpus precision [variant]``, for notes."""
        parts = [self.model, self.gpu, str(self.gpus), self.precision]
        if self.variant:
            parts.append(self.variant)
        return " ".join(parts)
