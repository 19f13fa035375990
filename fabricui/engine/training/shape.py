"""A transformer's geometry as the training model reads it: widths, matrices, parameters.

``ModelShape`` (hwdb) states what a paper or a config states; ``Geometry`` derives what the
cost model needs from it (head width, query and key/value widths, gated or plain MLP,
routed and shared experts, parameters per layer and in the embeddings). Pure arithmetic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.model.records import GATED_MLPS

if TYPE_CHECKING:
    from fabricui.model import ModelShape


@dataclass(frozen=True)
class Geometry:
    """Widths and parameter counts of a decoder-only transformer.

    Parameter counts leave out biases and norm weights below ``hidden`` per matrix (they
    are under 0.1 % of any model here); ``layer_params`` is one dense layer,
    ``moe_layer_params`` one MoE layer (router, routed and shared experts, attention).
    """

    hidden: int
    """Model width ``h``."""
    layers: int
    """Transformer layers ``L``."""
    heads: int
    """Query heads ``a``."""
    kv_heads: int
    """Key/value heads (GQA)."""
    head_dim: int
    """Width of one head ``d``."""
    ffn: int
    """MLP inner width (per expert for MoE layers)."""
    dense_ffn: int
    """MLP inner width of the dense layers of an MoE model (``ffn`` for a dense model)."""
    gated: bool
    """True for SwiGLU/GeGLU (gate, up and down matrices), False for GELU (up and down)."""
    vocab: int
    """Vocabulary size ``V``."""
    experts: int
    """Routed experts per MoE layer (0: dense)."""
    top_k: int
    """Routed experts per token."""
    shared_experts: int
    """Experts every token visits."""
    moe_layers: int
    """MoE layers (the first ``layers - moe_layers`` are dense)."""
    window: int
    """Sliding attention window [tokens] (0: none)."""
    window_layers: int
    """Layers that use the window."""
    dropout: bool
    """Dropout in training (adds masks to activations and memory traffic)."""
    rotary: bool = False
    """Rotary position embeddings on queries and keys (a memory-bound pass)."""
    qk_head_dim: int = 0
    """Query/key width per head in the attention core's scores (0: ``head_dim``)."""
    v_head_dim: int = 0
    """Value width per head in the attention core (0: ``head_dim``)."""
    expert_bias: bool = False
    """The experts' linear layers carry biases (``ModelShape.expert_bias``)."""
    activation_clamp: float = 0.0
    """Limit the gated activation clamps its halves to (``ModelShape.activation_clamp``; 0:
    none)."""
    rope_yarn_factor: float = 0.0
    """YaRN's factor of the rotary embeddings (``ModelShape.rope_yarn_factor``; 0: none)."""
    q_lora_rank: int = 0
    """MLA's query latent width (0: queries projected directly from ``hidden``)."""
    kv_lora_rank: int = 0
    """MLA's key/value latent width (0: not MLA; the projections are ordinary QKV)."""
    qk_rope_head_dim: int = 0
    """MLA's rotary part of ``qk_head_dim``, whose key is projected down once for all heads."""

    @property
    def mla(self) -> bool:
        """Multi-head latent attention: low-rank projections (``kv_lora_rank`` set)."""
        return self.kv_lora_rank > 0

    @property
    def q_up_width(self) -> int:
        """MLA's query projection output, ``a * d_qk`` (up from the latent, or from ``h``)."""
        return self.heads * (self.qk_head_dim or self.head_dim)

    @property
    def kv_up_width(self) -> int:
        """MLA's key/value up-projection output, ``a * (d_qk - d_rope + d_v)``: each head's
        key without its rotary part, and its value."""
        d_qk = self.qk_head_dim or self.head_dim
        return self.heads * (d_qk - self.qk_rope_head_dim + (self.v_head_dim or self.head_dim))

    @property
    def down_width(self) -> int:
        """MLA's down-projection outputs, ``q_lora + kv_lora + d_rope`` (replicated under TP)."""
        return self.q_lora_rank + self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def out_width(self) -> int:
        """Attention output projection's input: ``a * d_v`` for MLA, else ``q_dim``."""
        return self.heads * (self.v_head_dim or self.head_dim) if self.mla else self.q_dim

    @property
    def replicated_attention_params(self) -> float:
        """Attention parameters every TP rank holds whole [count]: MLA's down projections
        and its latent norms (Megatron-Core builds the down projections ``duplicated``);
        0 without MLA."""
        if not self.mla:
            return 0.0
        return float(self.hidden * self.down_width + self.q_lora_rank + self.kv_lora_rank)

    @property
    def core_head_dim(self) -> float:
        """Mean of the score and value widths per head: the attention core's FLOPs are
        ``2 s_q s_kv a (d_qk + d_v)`` forward, ``4 s_q s_kv a`` times this (``head_dim``
        but for multi-head latent attention, where it is (192 + 128) / 2)."""
        return ((self.qk_head_dim or self.head_dim) + (self.v_head_dim or self.head_dim)) / 2

    @property
    def q_dim(self) -> int:
        """Query (and attention output) width ``a * d``."""
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Key (= value) width ``kv_heads * d``."""
        return self.kv_heads * self.head_dim

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices per MLP: 3 gated, 2 plain."""
        return 3 if self.gated else 2

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.layers - self.moe_layers

    @property
    def attention_params(self) -> float:
        """Q, K, V and output projections of one layer [count]; with MLA its down and up
        projections (queries from ``h`` without a query latent), latent norms and output."""
        if not self.mla:
            return float(self.hidden * (2 * self.q_dim + 2 * self.kv_dim))
        q_in = self.q_lora_rank or self.hidden
        sharded = q_in * self.q_up_width + self.kv_lora_rank * self.kv_up_width
        return float(self.replicated_attention_params + sharded + self.out_width * self.hidden)

    @property
    def dense_mlp_params(self) -> float:
        """One dense MLP [count]."""
        return float(self.mlp_matrices * self.hidden * self.dense_ffn)

    @property
    def expert_params(self) -> float:
        """One expert's MLP [count]."""
        return float(self.mlp_matrices * self.hidden * self.ffn)

    @property
    def layer_params(self) -> float:
        """One dense layer: attention, MLP and two norms [count]."""
        return self.attention_params + self.dense_mlp_params + 2 * self.hidden

    @property
    def moe_layer_params(self) -> float:
        """One MoE layer: attention, router, routed and shared experts, norms [count]."""
        experts = (self.experts + self.shared_experts) * self.expert_params
        return self.attention_params + experts + self.hidden * self.experts + 2 * self.hidden

    @property
    def embedding_params(self) -> float:
        """Input embedding (and, untied, the output layer has as many) [count]."""
        return float(self.vocab * self.hidden)

    @property
    def params(self) -> float:
        """All parameters: layers, input embedding and output layer (untied) [count]."""
        return (
            self.dense_layers * self.layer_params
            + self.moe_layers * self.moe_layer_params
            + 2 * self.embedding_params
            + self.hidden
        )

    @property
    def active_params(self) -> float:
        """Parameters one token uses (routed top-k and shared experts only) [count]."""
        if not self.moe_layers:
            return self.params
        active_layer = (
            self.attention_params
            + (self.top_k + self.shared_experts) * self.expert_params
            + self.hidden * self.experts
            + 2 * self.hidden
        )
        return (
            self.dense_layers * self.layer_params
            + self.moe_layers * active_layer
            + 2 * self.embedding_params
            + self.hidden
        )


def geometry(model: ModelShape) -> Geometry:
    """The geometry of a model shape; unstated fields take the usual defaults.

    ``head_dim`` defaults to ``hidden / heads``; an MLP kind left empty is read off
    ``params_B`` (gated when three matrices per MLP make the parameters add up closer than
    two); ``dropout`` and ``rotary`` left unset follow the MLP (GELU models of the GPT-3
    era trained with dropout and without rotary embeddings, gated ones the other way).

    Args:
        model: The model shape.

    Returns:
        Its geometry.
    """
    head_dim = model.head_dim or max(1, model.hidden // max(1, model.heads))
    moe_layers = (model.moe_layers or model.layers) if model.experts else 0
    base = Geometry(
        hidden=model.hidden,
        layers=model.layers,
        heads=model.heads,
        kv_heads=max(1, model.kv_heads),
        head_dim=head_dim,
        ffn=model.ffn_hidden,
        dense_ffn=model.dense_ffn_hidden or model.ffn_hidden,
        gated=True,
        vocab=model.vocab,
        experts=model.experts,
        top_k=max(1, model.experts_per_token) if model.experts else 0,
        shared_experts=model.shared_experts,
        moe_layers=moe_layers,
        window=model.sliding_window,
        window_layers=min(model.window_layers, model.layers) if model.sliding_window else 0,
        dropout=False,
        qk_head_dim=model.qk_head_dim or 0,
        v_head_dim=model.v_head_dim or 0,
        expert_bias=model.expert_bias and model.experts > 0,
        activation_clamp=model.activation_clamp,
        rope_yarn_factor=model.rope_yarn_factor,
        q_lora_rank=(model.q_lora_rank or 0) if model.kv_lora_rank else 0,
        kv_lora_rank=model.kv_lora_rank or 0,
        qk_rope_head_dim=(model.qk_rope_head_dim or 0) if model.kv_lora_rank else 0,
    )
    gated = model.mlp in GATED_MLPS if model.mlp else _gated_by_params(base, model.params_B)
    dropout = model.dropout if model.dropout is not None else not gated
    rotary = model.rotary if model.rotary is not None else gated
    return _replace(base, gated=gated, dropout=dropout, rotary=rotary)


def _gated_by_params(base: Geometry, params_B: float) -> bool:
    target = params_B * 1e9
    gated = abs(_replace(base, gated=True).params - target)
    plain = abs(_replace(base, gated=False).params - target)
    return gated <= plain


def _replace(geo: Geometry, **changes: object) -> Geometry:
    return dataclasses.replace(geo, **changes)  # type: ignore[arg-type]
