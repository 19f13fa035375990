"""What a transformer shape cannot be, beyond its fields' types: one check for hwdb model
records and run files' inline shapes, so a shape refused in one is refused in the other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricui.bounds import above_plan_count_max

if TYPE_CHECKING:
    from fabricui.model import ModelShape

#: Counts of a shape bounded as a plan's degrees and batches are (``PLAN_COUNT_MAX``).
COUNT_KEYS = (
    "layers",
    "hidden",
    "ffn_hidden",
    "heads",
    "kv_heads",
    "vocab",
    "seq_len",
    "experts",
    "experts_per_token",
    "moe_layers",
    "head_dim",
    "qk_head_dim",
    "v_head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "shared_experts",
    "dense_ffn_hidden",
    "sliding_window",
    "window_layers",
)


def shape_problem(model: ModelShape) -> tuple[str, str] | None:
    """The first key of ``model`` that cannot be and why, or None: a count beyond any
    model, heads that do not split the hidden width (without ``head_dim``), key/value heads
    that do not divide the heads, more routed experts per token than experts (or none on an
    MoE model), expert biases on a dense model, more MoE or windowed layers than layers,
    latent-attention widths without ``kv_lora_rank`` or a rotary part as wide as the head.

    Args:
        model: The shape as read.

    Returns:
        ``(key, why)``, or None when the shape can be.
    """
    for key in COUNT_KEYS:
        value = getattr(model, key)
        too_many = above_plan_count_max(value) if isinstance(value, int) else None
        if too_many is not None:
            return key, too_many
    if model.hidden % model.heads and not model.head_dim:
        return "heads", f"{model.heads} heads do not divide hidden {model.hidden}; give head_dim"
    if model.kv_heads < 1 or model.heads % model.kv_heads:
        return "kv_heads", f"{model.kv_heads} key/value heads do not divide the {model.heads} heads"
    if model.experts and model.experts_per_token > model.experts:
        return "experts_per_token", f"more than the {model.experts} experts"
    if model.experts and model.experts_per_token < 1:
        return "experts_per_token", "an MoE model routes each token to at least one expert"
    if model.expert_bias and not model.experts:
        return "expert_bias", "a dense model has no experts to carry biases"
    if model.moe_layers > model.layers:
        return "moe_layers", f"more than the {model.layers} layers"
    if model.window_layers > model.layers:
        return "window_layers", f"more than the {model.layers} layers"
    return _mla_problem(model)


def _mla_problem(model: ModelShape) -> tuple[str, str] | None:
    """A query latent or a rotary key width without the key/value latent that makes the
    attention MLA, or a rotary part as wide as the query/key head it is part of."""
    if not model.kv_lora_rank:
        for key in ("q_lora_rank", "qk_rope_head_dim"):
            if getattr(model, key):
                return key, "multi-head latent attention needs kv_lora_rank"
        return None
    qk = model.qk_head_dim or model.head_dim or model.hidden // max(1, model.heads)
    if (model.qk_rope_head_dim or 0) >= qk:
        return "qk_rope_head_dim", f"not below the query/key head width {qk}"
    return None
