"""Time of one transformer layer, one micro-batch, on one GPU: forward, backward, recompute.

A layer is its linear layers (GEMMs sharded by tensor parallelism, experts spread by
expert parallelism), its attention core (fused FlashAttention-style, or Megatron's
unfused score matrix with a fused softmax) and its memory-bound passes (norms, residual
adds, activation, dropout masks, MoE token permutation). Communication is priced
separately (``comm.py``). Everything broadcasts over numpy arrays of layouts.

Notation: ``T = b * s / cp`` tokens of the micro-batch on this GPU, ``t`` the TP degree,
``h`` the width, ``f`` the MLP width, ``d`` the head width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.training.kernels import (
    FloatArray,
    Number,
    flash_attention_times_s,
    gemm_time_s,
    linear_times_s,
    memory_time_s,
)

if TYPE_CHECKING:
    from fabricui.engine.training.device import Device
    from fabricui.engine.training.shape import Geometry

#: Attention implementations: fused (FlashAttention, cuDNN) or Megatron's unfused score
#: matrix with a fused scale-mask-softmax kernel (2021-22).
ATTENTION_KINDS = ("flash", "unfused")
#: Bytes through HBM per score element in the unfused forward: softmax reads and writes
#: the 16-bit scores (4); dropout reads and writes them and writes a 1-byte mask (5).
UNFUSED_SCORE_BYTES_FWD = (4.0, 5.0)
#: The same in backward: softmax gradient reads probabilities and their gradient and writes
#: one (6); dropout's gradient reads the mask and the gradient and writes one (5).
UNFUSED_SCORE_BYTES_BWD = (6.0, 5.0)
#: Backward memory passes move about twice the forward's bytes (read the saved input and
#: the incoming gradient, write the outgoing one).
ELEMENTWISE_BACKWARD_FACTOR = 2.0
#: Bytes per logit of the vocabulary-parallel cross entropy: forward reads the 16-bit
#: logits and writes and reads FP32 softmax (10), backward reads it and writes the 16-bit
#: gradient (8).
LOSS_BYTES_PER_LOGIT = (10.0, 8.0)


@dataclass(frozen=True)
class LayerCost:
    """One layer (or the output layer) for one micro-batch on one GPU [s]; arrays broadcast
    over layouts."""

    gemm_fwd_s: FloatArray
    """Linear layers, forward."""
    gemm_bwd_s: FloatArray
    """Linear layers, backward (input and weight gradients)."""
    attn_fwd_s: FloatArray
    """Attention core (scores, softmax, values), forward."""
    attn_bwd_s: FloatArray
    """Attention core, backward."""
    elem_fwd_s: FloatArray
    """Memory-bound passes, forward."""
    elem_bwd_s: FloatArray
    """Memory-bound passes, backward."""
    flops_fwd: FloatArray
    """FLOPs the forward executes (what a recompute repeats)."""

    @property
    def fwd_s(self) -> FloatArray:
        """Forward."""
        return self.gemm_fwd_s + self.attn_fwd_s + self.elem_fwd_s

    @property
    def bwd_s(self) -> FloatArray:
        """Backward."""
        return self.gemm_bwd_s + self.attn_bwd_s + self.elem_bwd_s

    def recompute_s(self, recompute: str) -> FloatArray:
        """Extra forward work a recompute mode adds: the whole forward (``full``), the
        attention core (``selective``, Korthikanti et al. 2022) or nothing."""
        if recompute == "full":
            return self.fwd_s
        if recompute == "selective":
            return self.attn_fwd_s
        return np.zeros_like(self.fwd_s)


def _arr(x: Number) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def layer_cost(
    device: Device,
    geo: Geometry,
    tp: Number,
    cp: Number,
    ep: Number,
    micro_batch: Number,
    seq_len: Number,
    sequence_parallel: Number,
    attention: str = "flash",
    moe: bool = False,
    windowed: bool = False,
) -> LayerCost:
    """Forward and backward time of one transformer layer for one micro-batch.

    Linear layers: QKV (``T x h`` by ``h x (q + 2 kv) / t``; key/value heads replicate
    when there are fewer than ``t``), attention output, then the MLP (gated: gate and up
    ``h x 2f / t``, down ``f / t x h``) or, in an MoE layer, the router, ``E / ep`` local
    experts as one grouped GEMM of ``T k ep / E`` tokens each (balanced routing) and the
    shared experts. Attention core: ``4 b (a / t) s_q s_kv d`` FLOPs with ``s_q = s / cp``;
    fused kernels skip the masked half (``s_kv = s / 2``, or the window), the unfused path
    computes the whole ``s x s`` score matrix and moves it through HBM for softmax and
    dropout. Memory-bound bytes per token, forward: two norms (8h) and two residual adds
    (12h, plus 2h of dropout masks) on ``T / t`` tokens with sequence parallelism, on all
    ``T`` without; the activation (``6f / t`` gated, ``4f / t`` GELU); for MoE the
    activation of every routed and shared expert and the token permutation (``4h + 4kh``).
    Backward moves twice the forward's bytes.

    Args:
        device: The GPU.
        geo: The model geometry.
        tp: Tensor-parallel degree.
        cp: Context-parallel degree.
        ep: Expert-parallel degree (MoE layers).
        micro_batch: Sequences per micro-batch ``b``.
        seq_len: Tokens per sequence ``s``.
        sequence_parallel: 1 (True) when norms and residuals are split over TP ranks.
        attention: ``flash`` or ``unfused``.
        moe: Price the MLP as an MoE layer.
        windowed: The layer attends within ``geo.window`` tokens.

    Returns:
        The layer's cost.
    """
    t, c, e, b, s = (_arr(x) for x in (tp, cp, ep, micro_batch, seq_len))
    sp = _arr(sequence_parallel) > 0
    h, d = float(geo.hidden), float(geo.head_dim)
    tokens = b * s / c
    kv_local = np.maximum(geo.kv_heads / t, 1.0) * d
    qkv_f, qkv_b = linear_times_s(device, tokens, geo.q_dim / t + 2 * kv_local, h)
    out_f, out_b = linear_times_s(device, tokens, h, geo.q_dim / t)
    gemm_f, gemm_b = qkv_f + out_f, qkv_b + out_b
    flops = 2 * tokens * h * (geo.q_dim / t + 2 * kv_local) + 2 * tokens * h * geo.q_dim / t
    act_bytes_per_width = 6.0 if geo.gated else 4.0
    up_width = (2.0 if geo.gated else 1.0) * geo.ffn
    if moe:
        local = geo.experts / e
        per_expert = tokens * geo.top_k * e / geo.experts
        router_f, router_b = linear_times_s(device, tokens, float(geo.experts), h)
        up_f, up_b = linear_times_s(device, per_expert, up_width / t, h, local)
        down_f, down_b = linear_times_s(device, per_expert, h, geo.ffn / t, local)
        gemm_f = gemm_f + router_f + up_f + down_f
        gemm_b = gemm_b + router_b + up_b + down_b
        routed = tokens * geo.top_k
        flops = flops + 2 * tokens * h * geo.experts + 2 * routed * h * (up_width + geo.ffn) / t
        mlp_bytes = tokens * (
            (geo.top_k + geo.shared_experts) * act_bytes_per_width * geo.ffn / t
            + 4 * h
            + 4 * geo.top_k * h
        )
        if geo.shared_experts:
            shared = geo.shared_experts
            sh_up_f, sh_up_b = linear_times_s(device, tokens, shared * up_width / t, h)
            sh_dn_f, sh_dn_b = linear_times_s(device, tokens, h, shared * geo.ffn / t)
            gemm_f = gemm_f + sh_up_f + sh_dn_f
            gemm_b = gemm_b + sh_up_b + sh_dn_b
            flops = flops + 2 * tokens * h * shared * (up_width + geo.ffn) / t
    else:
        dense_up = (2.0 if geo.gated else 1.0) * geo.dense_ffn
        up_f, up_b = linear_times_s(device, tokens, dense_up / t, h)
        down_f, down_b = linear_times_s(device, tokens, h, geo.dense_ffn / t)
        gemm_f, gemm_b = gemm_f + up_f + down_f, gemm_b + up_b + down_b
        flops = flops + 2 * tokens * h * (dense_up + geo.dense_ffn) / t
        mlp_bytes = tokens * act_bytes_per_width * geo.dense_ffn / t
    attn_f, attn_b, attn_flops = _attention(device, geo, t, c, b, s, attention, windowed)
    replicated = 20.0 * h + (2.0 * h if geo.dropout else 0.0)
    elem_f = memory_time_s(device, tokens * replicated / np.where(sp, t, 1.0) + mlp_bytes)
    return LayerCost(
        gemm_fwd_s=gemm_f,
        gemm_bwd_s=gemm_b,
        attn_fwd_s=attn_f,
        attn_bwd_s=attn_b,
        elem_fwd_s=elem_f,
        elem_bwd_s=ELEMENTWISE_BACKWARD_FACTOR * elem_f,
        flops_fwd=flops + attn_flops,
    )


def _attention(
    device: Device,
    geo: Geometry,
    t: FloatArray,
    c: FloatArray,
    b: FloatArray,
    s: FloatArray,
    attention: str,
    windowed: bool,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(forward, backward, forward FLOPs) of the attention core."""
    heads = b * geo.heads / t
    s_q = s / c
    d = float(geo.head_dim)
    if attention == "flash":
        s_kv = np.minimum(float(geo.window), s) if windowed and geo.window else s / 2
        flops = 4 * heads * s_q * s_kv * d
        forward, backward = flash_attention_times_s(device, flops)
        return forward, backward, flops
    s_kv = np.minimum(float(geo.window), s) if windowed and geo.window else s
    scores_f, scores_b = linear_times_s(device, s_q, s_kv, d, heads)
    values_f, values_b = linear_times_s(device, s_q, d, s_kv, heads)
    elements = heads * s_q * s_kv
    drop = 1.0 if geo.dropout else 0.0
    fwd_bytes = elements * (UNFUSED_SCORE_BYTES_FWD[0] + drop * UNFUSED_SCORE_BYTES_FWD[1])
    bwd_bytes = elements * (UNFUSED_SCORE_BYTES_BWD[0] + drop * UNFUSED_SCORE_BYTES_BWD[1])
    forward = scores_f + values_f + memory_time_s(device, fwd_bytes)
    backward = scores_b + values_b + memory_time_s(device, bwd_bytes)
    return forward, backward, 4 * heads * s_q * s_kv * d


def output_layer_cost(
    device: Device, geo: Geometry, tp: Number, cp: Number, micro_batch: Number, seq_len: Number
) -> LayerCost:
    """The output layer and the loss for one micro-batch on the last stage.

    A ``T x h`` by ``h x V / t`` GEMM (vocabulary-parallel) and the cross entropy over its
    ``T x V / t`` logits (``LOSS_BYTES_PER_LOGIT``).
    """
    t, c, b, s = (_arr(x) for x in (tp, cp, micro_batch, seq_len))
    tokens = b * s / c
    vocab = geo.vocab / t
    gemm_f, gemm_b = linear_times_s(device, tokens, vocab, float(geo.hidden))
    logits = tokens * vocab
    zero = np.zeros_like(gemm_f)
    return LayerCost(
        gemm_fwd_s=gemm_f,
        gemm_bwd_s=gemm_b,
        attn_fwd_s=zero,
        attn_bwd_s=zero,
        elem_fwd_s=memory_time_s(device, logits * LOSS_BYTES_PER_LOGIT[0]),
        elem_bwd_s=memory_time_s(device, logits * LOSS_BYTES_PER_LOGIT[1]),
        flops_fwd=2 * tokens * vocab * geo.hidden,
    )


def embedding_cost(
    device: Device, geo: Geometry, cp: Number, micro_batch: Number, seq_len: Number
) -> LayerCost:
    """The input embedding on the first stage: a gather forward, a scatter-add backward."""
    c, b, s = (_arr(x) for x in (cp, micro_batch, seq_len))
    size = b * s / c * geo.hidden * 4.0
    zero = np.zeros_like(size)
    return LayerCost(
        gemm_fwd_s=zero,
        gemm_bwd_s=zero,
        attn_fwd_s=zero,
        attn_bwd_s=zero,
        elem_fwd_s=memory_time_s(device, size),
        elem_bwd_s=memory_time_s(device, 2 * size),
        flops_fwd=zero,
    )


__all__ = [
    "ATTENTION_KINDS",
    "LayerCost",
    "embedding_cost",
    "gemm_time_s",
    "layer_cost",
    "output_layer_cost",
]
