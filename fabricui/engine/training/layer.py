"""Time of one transformer layer, one micro-batch, on one GPU: forward, backward, recompute.

A layer is its linear layers (GEMMs sharded by tensor parallelism, experts spread by
expert parallelism), its attention core (a fused FlashAttention-style kernel, or
Megatron's unfused score matrix with a fused softmax) and its memory-bound passes (norms,
residual adds, rotary embeddings, activation, dropout masks, MoE token permutation, FP8
casts), counted the way the framework runs them (``Kernels``). Communication is priced
separately (``comm.py``). Everything broadcasts over numpy arrays of layouts.

Notation: ``T = b * s / cp`` tokens of the micro-batch on this GPU, ``t`` the TP degree,
``h`` the width, ``f`` the MLP width, ``d`` the head width, ``q`` and ``kv`` the query and
key/value widths on one TP rank.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fabricui import vocabulary
from fabricui.engine.training.kernels import (
    FloatArray,
    Number,
    flash_attention_times_s,
    gemm_time_s,
    linear_times_s,
    memory_time_s,
)
from fabricui.engine.training.memory import MLA_MM_ORDER
from fabricui.engine.training.ring import ring_merge_bytes
from fabricui.errors import EngineError

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
#: Bytes per logit of the cross entropy, (forward, backward), by ``Kernels.loss``:
#: ``fused``: one pass reads the 16-bit logits and writes their gradient, backward scales
#: it in place (Transformer Engine's and Apex's fused cross entropy); ``fp32``: Megatron's
#: vocabulary-parallel kernels read the logits and write and read an FP32 softmax, backward
#: reads it and writes the 16-bit gradient; ``eager``: ``logits.float()`` (2 + 4),
#: ``log_softmax`` (4 + 4), then backward through both (4 + 4 + 4 + 4 + 2 + 4).
LOSS_BYTES_PER_LOGIT = {"fused": (4.0, 4.0), "fp32": (10.0, 8.0), "eager": (14.0, 22.0)}
#: Memory-bound bytes per token and layer in the forward pass, by ``Kernels.passes``, as
#: multiples of the width they act on: (norms, residual adds) on ``h``, rotary on
#: ``q + kv``, the gated and the plain activation on ``f``.
#: ``fused``: each norm reads its input and writes its output (2 + 2), fused into the next
#: GEMM; each bias-dropout-add reads two inputs and writes one (6); rotary reads and writes
#: queries and keys (2 + 2); SwiGLU reads gate and up and writes their product (4 + 2 per
#: ``f``), GELU reads and writes (2 + 2). ``compiled``: torch.compile fuses each chain of
#: pointwise ops into one kernel, the same traffic. ``eager``: RMSNorm as PyTorch ops on an
#: FP32 copy (``x.float()`` 2 + 4, ``pow`` 4 + 4, ``mean`` 4, ``x * rsqrt`` 4 + 4,
#: ``type_as`` 4 + 2, ``* weight`` 2 + 2: 36), rotary through complex FP32 tensors
#: (``float`` 2 + 4, complex multiply 4 + 4, ``type_as`` 4 + 2: 20), SwiGLU as ``silu``
#: then ``mul`` (2 + 2, 4 + 2: 10), as torchtitan's Llama code writes them.
PASS_BYTES = {
    "fused": {"norm": 4.0, "residual": 6.0, "rotary": 4.0, "gated": 6.0, "plain": 4.0},
    "compiled": {"norm": 4.0, "residual": 6.0, "rotary": 4.0, "gated": 6.0, "plain": 4.0},
    "eager": {"norm": 36.0, "residual": 6.0, "rotary": 20.0, "gated": 10.0, "plain": 4.0},
}
#: Bytes per element of one FP8 cast of a GEMM operand, by recipe: ``delayed`` reads the
#: 16-bit tensor and writes it in FP8 and, for the weight-gradient GEMM, a transposed FP8
#: copy (2 + 1 + 1); ``current`` reads it once more for its amax first (+2); ``blockwise``
#: and ``mxfp8`` write row-wise and column-wise scaled copies with their scales in the same
#: pass (2 + 1 + 1) (Transformer Engine's FP8 recipes); ``nvfp4`` reads the tensor for its
#: amax, then writes two 4-bit copies with their 16-element FP8 scales (2 + 2 x 0.5625 + 2);
#: ``rowwise`` (torchao's float8 rowwise: a scale per row of each operand, and per column
#: for the copy the weight-gradient GEMM reads) writes the row-scaled copy in the pass that
#: reduces each row (2 + 1), while the column scales need their own reduction over the
#: tensor before the column-scaled copy is written (2, then 2 + 1).
FP8_CAST_BYTES = {
    "delayed": 4.0,
    "current": 6.0,
    "blockwise": 4.0,
    "mxfp8": 4.0,
    "nvfp4": 2.0 + 2 * (0.5 + 1.0 / 16) + 2.0,
    "rowwise": (2.0 + 1.0) + (2.0 + 2.0 + 1.0),
}
#: Share of the memory passes' bandwidth an FP8 recipe's cast kernels reach, by recipe (1
#: when not listed): the casts move ``FP8_CAST_BYTES / FP8_CAST_EFFICIENCY`` an element.
#: torchao's roofline of its own rowwise casts (pytorch/ao 6243040,
#: ``torchao/testing/float8/roofline_utils.py``) counts the same 8 bytes as
#: ``FP8_CAST_BYTES``, yet its published rowwise table ("Speedup observed vs bfloat16 for
#: LayerNorm -> Linear -> Sigmoid fwd + bwd", PyTorch 2.8.0a0+git48807d5, H100;
#: pytorch/ao fdddb2cfa, ``docs/static/fp8-rowwise-perf.png``, 0.45-1.73x) sits 16% below
#: what this model prices at full bandwidth (mean log ratio over its 144 cells with 4,096
#: to 32,768 tokens) on the 2.4 TB/s H100 the roofline names: with tensorwise GEMM
#: efficiency and the 4-byte rescale, the casts fit at 0.44 of the bandwidth (0.40 under a
#: 500 W cap), 0.14 rms against 0.25 at full bandwidth (tests/training/
#: test_rowwise_cast_efficiency.py). Measured on H100; other GPUs take the same share.
FP8_CAST_EFFICIENCY = {"rowwise": 0.44}
#: FP8 recipes whose casts run on the TP-gathered activations: torchtitan applies its float8
#: tensor-parallel styles (cast before the all-gather, gather in FP8) to tensorwise scaling
#: only, so under rowwise scaling the sequence-parallel input is gathered in BF16 and each
#: linear casts all ``T`` tokens, not its ``T / t`` (torchtitan ``parallelize_llama.py``,
#: ``enable_float8_tensorwise_tp``).
GATHERED_CAST_RECIPES = ("rowwise",)
#: Bytes per element of a backward GEMM's output (input and weight gradients) that the recipe
#: rescales in a kernel of its own, by recipe. torchao's float8 ``rowwise`` runs both backward
#: GEMMs without fast accumulation, where PyTorch's row-wise-scaled CUTLASS kernel "is so
#: slow without fast-accum that we'd rather use the tensorwise cuBLAS-based kernel and do the
#: scaling manually afterwards" (torchao ``float8_ops.py`` ``addmm_float8_unwrapped`` at
#: 6243040, June 2025: ``output *= post_inverse_scale``), which "with torch.compile ...
#: requires inductor to codegen at least one extra triton kernel *per GEMM* to be launched
#: just for the rescaling" (pytorch/ao#2184): it reads and writes the 16-bit output (2 + 2).
#: The forward GEMM runs with fast accumulation in the row-wise kernel and is not rescaled.
FP8_RESCALE_BYTES = {"rowwise": 2.0 + 2.0}
#: Bytes through HBM per element of the routed experts' output (``k`` rows of ``h`` per
#: token) when the framework adds their output bias in PyTorch ops of their own, (forward,
#: backward), by the width of the router probabilities ``P`` [bytes]. Megatron-Core's
#: ``TEGroupedMLP._apply_bias`` (NVIDIA/Megatron-LM a329dd6da5, 2025-09-22,
#: ``megatron/core/transformer/moe/experts.py``; the same code in the Megatron-LM of
#: Megatron-Bridge v0.2.0-v0.6.0, the 25.11-26.08 containers) splits the grouped GEMM's
#: 16-bit output by expert and computes ``t + b * p`` for each, concatenates the results and
#: casts them to the output's dtype: ``b * p`` writes a tensor of the probabilities' dtype
#: (P), the add reads it and the output and writes one (2 + 2P), ``cat`` reads and writes it
#: (2P), and ``.to`` reads it and writes 16 bits when P is 4 (4 + 2): 12 bytes with 16-bit
#: probabilities, 28 with FP32 ones. Backward: the cast's gradient (2 + 4 when P is 4), the
#: add's gradient cast back to the output's dtype (4 + 2 when P is 4), ``mul``'s gradients
#: for the bias and the probabilities, each reading the incoming gradient and writing a
#: product its reduction reads (3P each), and ``split``'s gradient concatenated (2 + 2):
#: 16 and 40 bytes.
EXPERT_BIAS_BYTES = {2.0: (12.0, 16.0), 4.0: (28.0, 40.0)}
#: Bytes through HBM per element of a clamped gated activation's output (``f`` per routed
#: row), (forward, backward), when the framework clamps the two halves of the first GEMM's
#: 16-bit output in ops of their own before its activation kernel (Megatron-Core's
#: ``weighted_bias_quick_geglu_impl``, Megatron-LM 4415119414
#: ``megatron/core/fusions/fused_bias_geglu.py``: ``x_glu.clamp(max=c)``,
#: ``x_linear.clamp(-c, c)``, ``torch.cat``). Forward: each clamp reads and writes its half
#: (2 x (2 + 2)), ``cat`` reads both and writes them (4 + 4): 16. Backward: each clamp's
#: gradient reads its saved input and the incoming gradient and writes one (2 x (2 + 2 + 2));
#: ``cat``'s gradient is two views; ``chunk``'s gradient writes the two halves into one
#: tensor (4 + 4): 20.
ACTIVATION_CLAMP_BYTES = (16.0, 20.0)
#: Bytes through HBM per element of queries and keys of rotary embeddings applied in PyTorch
#: ops (Megatron-Core's ``_apply_rotary_pos_emb_bshd``, Megatron-LM 4415119414
#: ``megatron/core/models/common/embeddings/rope_utils.py``, which
#: ``apply_rotary_pos_emb`` takes for a scaled (YaRN) cos and sin: "mscale ... is not
#: supported by TE's fused RoPE"), (forward, backward), in place of the fused pass's
#: ``PASS_BYTES["rotary"]`` (and twice that backward). Forward, on 16-bit ``t``: ``t * cos``
#: (2 + 2), ``_rotate_half``'s negated half and ``cat`` (1 + 1, 2 + 2), ``* sin`` (2 + 2),
#: the sum (4 + 2), then ``cat`` with the empty unrotated part copies it (2 + 2): 24.
#: Backward: the two products' gradients (2 + 2 each), the negation's (1 + 1), ``chunk``'s
#: gradient joining the halves (2 + 2) and the sum of the two paths (4 + 2): 20.
UNFUSED_ROPE_BYTES = (24.0, 20.0)


@dataclass(frozen=True)
class Kernels:
    """How a framework runs the work around the GEMMs (``FrameworkSpec``)."""

    attention: str = "flash"
    """``flash`` (a fused kernel) or ``unfused`` (score matrix in HBM)."""
    passes: str = "fused"
    """Memory-bound passes: ``fused``, ``compiled`` or ``eager`` (``PASS_BYTES``)."""
    loss: str = "fp32"
    """Cross entropy: ``fused``, ``fp32`` or ``eager`` (``LOSS_BYTES_PER_LOGIT``)."""
    fp8_recipe: str | None = None
    """FP8 scaling recipe when the GEMMs run in FP8 (``FP8_CAST_BYTES``), else None."""
    moe_sync_s: float = 0.0
    """GPU time lost per pass of an MoE layer to the host's read of the token counts [s]."""
    separate_projections: bool = False
    """Query, key and value (and a gated MLP's gate and up) are separate linear layers,
    each a GEMM reading its input (torchtitan's Llama), not one fused GEMM."""
    expert_bias_prob_bytes: float = 0.0
    """Width of the router probabilities [bytes] when the framework adds the experts'
    output bias in a pass of its own (``EXPERT_BIAS_BYTES``, for a model with expert
    biases); 0: no such pass."""
    fp8_experts: bool = True
    """Under FP8, the experts' grouped GEMMs run in FP8 too; False: in 16-bit, with no
    casts (the framework's FP8 conversion does not cover them)."""
    unfused_clamp: bool = False
    """The experts' activation clamps (a model with ``activation_clamp``) run as passes of
    their own (``ACTIVATION_CLAMP_BYTES``)."""
    unfused_scaled_rope: bool = False
    """YaRN-scaled rotary embeddings (a model with ``rope_yarn_factor``) run as PyTorch ops
    (``UNFUSED_ROPE_BYTES``), not one fused pass."""

    def __post_init__(self) -> None:
        """Refuse a probability width ``EXPERT_BIAS_BYTES`` does not price.

        Raises:
            EngineError: ``expert_bias_prob_bytes`` other than 0, 2 or 4.
        """
        if self.expert_bias_prob_bytes and self.expert_bias_prob_bytes not in EXPERT_BIAS_BYTES:
            raise EngineError(
                "expert bias probability width must be 0, 2 or 4 bytes "
                f"(got {self.expert_bias_prob_bytes})"
            )

    cp_attention: str = "ring"
    """Context parallelism's attention: ``ring`` (the steps combined inside the kernels'
    own bookkeeping) or ``torch`` (PyTorch's ring attention, which merges the steps in FP32
    outside the kernels: ``ring.ring_merge_bytes``)."""


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
    norm_fwd_s: FloatArray | float = 0.0
    """The norms' share of ``elem_fwd_s``."""
    mlp_fwd_s: FloatArray | float = 0.0
    """The MLP's (dense or routed experts') GEMMs and activation (and the experts' bias
    pass), forward."""
    dense_mlp_fwd_s: FloatArray | float = 0.0
    """``mlp_fwd_s`` of a dense layer (0 on an MoE layer): what recompute module ``mlp``
    repeats."""
    moe_mlp_fwd_s: FloatArray | float = 0.0
    """``mlp_fwd_s`` of an MoE layer (0 on a dense layer): what recompute module ``moe``
    repeats."""
    act_fwd_s: FloatArray | float = 0.0
    """The activation pass of the MLP or the experts, forward."""
    moe_mlp_bwd_s: FloatArray | float = 0.0
    """The routed experts' GEMMs, backward (input and weight gradients; 0 on a dense
    layer): what EP overlap's schedule runs beside the dispatch all-to-alls."""
    shared_fwd_s: FloatArray | float = 0.0
    """The shared experts' GEMMs and activation, forward."""
    host_s: FloatArray | float = 0.0
    """GPU idle per pass (forward, and again backward) waiting on the host (MoE token
    counts)."""
    ops_gemm_fwd_s: FloatArray | float = 0.0
    """The share of ``gemm_fwd_s`` PyTorch's op-level selective checkpointing recomputes
    (``ops_recomputed_gemm_s``)."""
    mla_up_fwd_s: FloatArray | float = 0.0
    """MLA's query and key/value up projections with the latent norms fused into them and
    the rotary pass, forward: what recompute module ``mla_up_proj`` repeats (0 without
    MLA)."""

    @property
    def fwd_s(self) -> FloatArray:
        """Forward."""
        return self.gemm_fwd_s + self.attn_fwd_s + self.elem_fwd_s + self.host_s

    @property
    def bwd_s(self) -> FloatArray:
        """Backward."""
        return self.gemm_bwd_s + self.attn_bwd_s + self.elem_bwd_s + self.host_s

    def recompute_s(
        self, recompute: str, selective: str = "attention", modules: tuple[str, ...] = ()
    ) -> FloatArray:
        """Extra forward work a recompute mode adds.

        ``full``: the whole forward. ``selective``: the ``modules`` named (Megatron-Core's
        ``recompute_modules``: ``core_attn``, ``mlp``, ``moe``, ``moe_act``, ``layernorm``,
        ``shared_experts``, ``mla_up_proj``; ``mlp`` on dense layers only and ``moe`` on MoE
        layers only, as ``TransformerLayer`` and ``MoELayer`` read them: Megatron-LM d98e8a64dd
        ``transformer_layer.py`` "if not self.is_moe_layer", ``moe_layer.py``), else by
        ``selective``: the attention core (``attention``,
        Korthikanti et al. 2022) or every memory-bound pass and the GEMMs whose outputs
        the policy does not save (``ops``, PyTorch's op-level policy as torchtitan runs
        it: ``ops_gemm_fwd_s``). ``none``: nothing.
        """
        if recompute == "full":
            return self.fwd_s
        if recompute != "selective":
            return np.zeros_like(self.fwd_s)
        if modules:
            parts = {
                "core_attn": self.attn_fwd_s,
                "mlp": self.dense_mlp_fwd_s,
                "moe": self.moe_mlp_fwd_s,
                "moe_act": self.act_fwd_s,
                "layernorm": self.norm_fwd_s,
                "shared_experts": self.shared_fwd_s,
                "mla_up_proj": self.mla_up_fwd_s,
            }
            total = np.zeros_like(self.fwd_s)
            for name in modules:
                total = total + parts.get(name, 0.0)
            return total
        if selective == "ops":
            return self.elem_fwd_s + self.ops_gemm_fwd_s
        return np.asarray(self.attn_fwd_s + np.zeros_like(self.fwd_s))


#: Megatron-Core's ``recompute_modules`` the layer model prices (``LayerCost.recompute_s``):
#: the run files' vocabulary. ``mla_up_proj`` recomputes "the MLA up projection and RoPE
#: applying parts" (Megatron-LM d98e8a64dd ``transformer_config.py``;
#: ``multi_latent_attention.py`` wraps ``qkv_up_proj_and_rope_apply`` in
#: ``CheckpointWithoutOutput``, and the TE layer spec fuses the latent norms into
#: ``linear_q_up_proj`` and ``linear_kv_up_proj``).
RECOMPUTE_MODULES = vocabulary.RECOMPUTE_MODULES


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
    kernels: Kernels | None = None,
    imbalance: float = 1.0,
    etp: Number | None = None,
) -> LayerCost:
    """Forward and backward time of one transformer layer for one micro-batch.

    Linear layers: QKV (``T x h`` by ``h x (q + 2 kv)``; key/value heads replicate when
    there are fewer than ``t``; three GEMMs with ``kernels.separate_projections``),
    attention output (with multi-head latent attention MLA's down, up and output
    projections instead, ``_mla_projections``, with its latent norms and its rotary pass
    over its widths, ``_mla_rotary_width``), then the MLP (gated: gate and up
    ``h x 2f / t``, two GEMMs when separate, down ``f / t x h``) or, in an MoE layer, the
    router (16-bit), ``E / ep`` local experts as one grouped GEMM of
    ``imbalance * T k ep / E`` tokens each (the most loaded GPU; 1: balanced routing) and
    the shared experts. Attention core:
    ``4 b (a / t) s_q s_kv d`` FLOPs with ``s_q = s / cp``; fused kernels skip the masked
    half (``s_kv = s / 2``, or the window) at the kernel's efficiency for ``s_q`` and the
    query/key head dim (``kernels.head_dim_scale``); the unfused path computes the whole
    ``s x s`` score matrix and moves it through HBM for
    softmax and dropout. Memory-bound passes: ``PASS_BYTES`` per token for norms and
    residual adds (on ``T / t`` tokens with sequence parallelism, on all ``T`` without),
    rotary embeddings, the activation, dropout masks (2h), for MoE the activation of every
    routed and shared expert and the token permutation (``4h + 4kh``) and, for expert
    biases the framework adds in a pass of its own, ``EXPERT_BIAS_BYTES`` per element of
    the routed experts' output, and for a clamped activation the framework clamps in passes
    of their own ``ACTIVATION_CLAMP_BYTES`` per element of the experts' activation; YaRN-scaled
    rotary embeddings the framework applies in PyTorch ops move ``UNFUSED_ROPE_BYTES`` in
    place of the fused pass; under FP8 one cast of every GEMM operand
    (``FP8_CAST_BYTES``; the sequence-parallel inputs on ``T / t`` tokens, on all ``T``
    under ``GATHERED_CAST_RECIPES``), the experts in 16-bit without casts when the
    framework's FP8 conversion leaves them out (``Kernels.fp8_experts``). Backward moves
    twice the forward's bytes (the bias pass its own), plus a pass over the outputs of the
    backward GEMMs a recipe rescales itself (``FP8_RESCALE_BYTES``). PyTorch's ring
    attention (``kernels.cp_attention`` ``torch``) adds its FP32 merges of the ring steps
    to the attention core (``ring.ring_merge_bytes``).

    Args:
        device: The GPU.
        geo: The model geometry.
        tp: Tensor-parallel degree.
        cp: Context-parallel degree.
        ep: Expert-parallel degree (MoE layers).
        micro_batch: Sequences per micro-batch ``b``.
        seq_len: Tokens per sequence ``s``.
        sequence_parallel: 1 (True) when norms and residuals are split over TP ranks.
        attention: ``flash`` or ``unfused`` (when ``kernels`` is None).
        moe: Price the MLP as an MoE layer.
        windowed: The layer attends within ``geo.window`` tokens.
        kernels: How the framework runs the non-GEMM work (default: fused passes,
            ``attention``).
        imbalance: Tokens of the most loaded expert over the mean (MoE layers).
        etp: Expert tensor-parallel degree (None: ``tp``): each rank routes
            ``T etp / tp`` tokens and holds ``1 / etp`` of each local expert.

    Returns:
        The layer's cost.
    """
    kernels = kernels or Kernels(attention=attention)
    t, c, e, b, s = (_arr(x) for x in (tp, cp, ep, micro_batch, seq_len))
    sp = _arr(sequence_parallel) > 0
    d = float(geo.head_dim)
    tokens = b * s / c
    w = _Widths(
        tokens=tokens,
        tp=t,
        split=np.where(sp, t, 1.0),
        cast_split=np.where(sp & (kernels.fp8_recipe not in GATHERED_CAST_RECIPES), t, 1.0),
        hidden=float(geo.hidden),
        q=geo.out_width / t,
        kv=np.maximum(geo.kv_heads / t, 1.0) * d,
    )
    pb = PASS_BYTES[kernels.passes]
    act = pb["gated"] if geo.gated else pb["plain"]
    latent_bytes: FloatArray | float
    if geo.mla:
        w = dataclasses.replace(w, rotary=_mla_rotary_width(geo) / t)
        sums, up_f = _mla_projections(device, geo, w)
        latent_bytes = tokens * pb["norm"] * (geo.q_lora_rank + geo.kv_lora_rank) / w.split
        rotary_bytes = tokens * pb["rotary"] * w.rotary if geo.rotary else 0.0
        mla_up_f = up_f + memory_time_s(device, latent_bytes + rotary_bytes)
    else:
        w = dataclasses.replace(w, rotary=w.q + w.kv)
        sums = _attention_projections(device, w, kernels.separate_projections)
        latent_bytes, mla_up_f = 0.0, _zero(tokens)
    attn_gemm_f = sums.gemm_f
    if moe:
        x = t if etp is None else _arr(etp)
        sums, mlp = _routed_experts(device, geo, w, sums, e, x, imbalance, act, kernels)
        if geo.shared_experts:
            sums, mlp = _shared_experts(device, geo, w, sums, mlp, act, _bf16_experts(kernels))
    else:
        sums, mlp = _dense_mlp(device, geo, w, sums, act, kernels.separate_projections)
    attn_f, attn_b, attn_flops = _attention(device, geo, t, c, b, s, kernels.attention, windowed)
    if kernels.cp_attention == "torch":
        merge_f, merge_b = ring_merge_bytes(tokens, w.q, c)
        attn_f = attn_f + memory_time_s(device, merge_f)
        attn_b = attn_b + memory_time_s(device, merge_b)
    norm_bytes = tokens * 2 * pb["norm"] * w.hidden / w.split
    elem_f, elem_b = _memory_passes(
        device, geo, w, sums, mlp, norm_bytes + latent_bytes, pb, kernels
    )
    ops_gemm_f = ops_recomputed_gemm_s(device, geo, w, kernels, moe, sums.gemm_f - attn_gemm_f)
    rescaled = _rescaled_bytes(geo, w, moe, kernels)
    if rescaled is not None:
        elem_b = elem_b + memory_time_s(device, rescaled)
    return LayerCost(
        gemm_fwd_s=sums.gemm_f,
        gemm_bwd_s=sums.gemm_b,
        attn_fwd_s=attn_f,
        attn_bwd_s=attn_b,
        elem_fwd_s=elem_f,
        elem_bwd_s=elem_b,
        flops_fwd=sums.flops + attn_flops,
        norm_fwd_s=memory_time_s(device, norm_bytes),
        mlp_fwd_s=mlp.mlp_f,
        dense_mlp_fwd_s=0.0 if moe else mlp.mlp_f,
        moe_mlp_fwd_s=mlp.mlp_f if moe else 0.0,
        moe_mlp_bwd_s=mlp.mlp_b if moe else 0.0,
        act_fwd_s=memory_time_s(device, mlp.act_bytes + mlp.clamp_fwd_bytes),
        shared_fwd_s=mlp.shared_f,
        host_s=np.full_like(
            np.asarray(tokens, dtype=np.float64), kernels.moe_sync_s if moe else 0.0
        ),
        ops_gemm_fwd_s=ops_gemm_f,
        mla_up_fwd_s=mla_up_f,
    )


def ops_recomputed_gemm_s(
    device: Device,
    geo: Geometry,
    w: _Widths,
    kernels: Kernels,
    moe: bool,
    mlp_gemm_f: FloatArray,
) -> FloatArray:
    """Forward time of the GEMMs PyTorch's op-level selective checkpointing recomputes in
    one layer as torchtitan runs it [s].

    The policy (``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370) saves every
    odd-numbered ``aten.mm`` of a block's forward and recomputes the even-numbered ones:
    with separate projections (``wq, wk, wv, wo, w1, w3, w2``) the key projection, the
    attention output projection and the up projection ``w3``; with a fused QKV
    (``qkv, wo, w13, w2``) the output projection and the down projection. Compiled, a
    recomputed GEMM whose output backward does not need is not run again: the attention
    output projection when TP with sequence parallelism saves its reduce-scatter's output,
    and the MLP's down projection; eagerly the block's forward replays up to its last
    saved tensor. In an MoE layer the router is the fifth (third) ``aten.mm`` and saved,
    while the routed and shared experts' grouped GEMMs (``torch._grouped_mm``, ``bmm``)
    are not ``aten.mm`` and are recomputed. Multi-head latent attention's block
    (torchtitan's DeepSeek-V3) recomputes the even ones of ``memory.MLA_MM_ORDER``:
    ``_ops_mla_recomputed_gemm_s``.

    Args:
        device: The GPU.
        geo: The model geometry.
        w: The layer's widths on one GPU.
        kernels: How the framework runs the layer (``passes``, ``separate_projections``).
        moe: An MoE layer.
        mlp_gemm_f: Forward time of the MLP's GEMMs (an MoE layer's router included) [s].
    """
    t, h = w.tokens, w.hidden
    compiled = kernels.passes == "compiled"
    reduced_saved = compiled & (w.split > 1)
    if geo.mla:
        return _ops_mla_recomputed_gemm_s(device, geo, w, compiled, moe, mlp_gemm_f)
    out_f, _ = linear_times_s(device, t, h, w.q)
    attention = np.where(reduced_saved, 0.0, out_f)
    separate = kernels.separate_projections
    if separate:
        kv_f, _ = linear_times_s(device, t, w.kv, h)
        attention = attention + kv_f
    if moe:
        router_f, _ = linear_times_s(device, t, float(geo.experts), h, half=True)
        return np.asarray(attention + mlp_gemm_f - router_f)
    if separate and geo.gated:
        up_f, _ = linear_times_s(device, t, geo.dense_ffn / w.tp, h)
        return np.asarray(attention + up_f)
    down_f, _ = linear_times_s(device, t, h, geo.dense_ffn / w.tp)
    return np.asarray(attention + (0.0 if compiled else down_f))


@dataclass(frozen=True)
class _Widths:
    """What one GPU holds of a layer for one micro-batch (arrays broadcast over layouts)."""

    tokens: FloatArray
    """Tokens ``T = b * s / cp``."""
    tp: FloatArray
    """Tensor-parallel degree ``t``."""
    split: FloatArray
    """Ranks the norms and residuals are split over: ``t`` with sequence parallelism."""
    cast_split: FloatArray
    """Ranks the FP8 casts of the sequence-parallel GEMM inputs and output gradients are
    split over: ``split``, or 1 when the recipe casts the gathered tensors
    (``GATHERED_CAST_RECIPES``)."""
    hidden: float
    """Width ``h``."""
    q: FloatArray
    """Query width on one TP rank."""
    kv: FloatArray
    """Key/value width on one TP rank (heads replicate when fewer than ``t``)."""
    rotary: FloatArray | float = 0.0
    """Elements per token the rotary pass reads and writes on one TP rank, in units of
    ``PASS_BYTES["rotary"]``: ``q + kv``, or MLA's (``_mla_rotary_width``)."""


@dataclass(frozen=True)
class _Sums:
    """Running totals of the linear layers; the FP8 casts' elements per token."""

    gemm_f: FloatArray
    """GEMMs forward [s]."""
    gemm_b: FloatArray
    """GEMMs backward [s]."""
    flops: FloatArray
    """Forward FLOPs."""
    cast_in: FloatArray
    """GEMM input elements per token cast to FP8 in the forward."""
    cast_grad: FloatArray
    """Output-gradient elements per token cast to FP8 in the backward."""


@dataclass(frozen=True)
class _Mlp:
    """The MLP's (or the experts') forward time and memory-bound bytes."""

    mlp_f: FloatArray
    """Dense MLP or routed experts: GEMMs, activation and an output-bias pass, forward [s]."""
    act_bytes: FloatArray
    """Bytes of its activation pass."""
    mlp_bytes: FloatArray
    """Memory-bound bytes of the MLP: activations, MoE token permutation."""
    shared_f: FloatArray
    """Shared experts: GEMMs and activation, forward [s] (0 without)."""
    bias_fwd_bytes: FloatArray | float = 0.0
    """Bytes of the experts' output-bias pass, forward (``EXPERT_BIAS_BYTES``; 0 without)."""
    bias_bwd_bytes: FloatArray | float = 0.0
    """Bytes of the experts' output-bias pass, backward."""
    mlp_b: FloatArray | float = 0.0
    """Routed experts: GEMMs, backward [s] (0 for a dense MLP)."""
    clamp_fwd_bytes: FloatArray | float = 0.0
    """Bytes of the experts' activation clamps, forward (``ACTIVATION_CLAMP_BYTES``; 0
    without); part of the activation a ``moe_act`` recompute repeats."""
    clamp_bwd_bytes: FloatArray | float = 0.0
    """Bytes of the experts' activation clamps, backward."""


def _attention_projections(device: Device, w: _Widths, separate: bool = False) -> _Sums:
    """QKV (``T x h`` by ``h x (q + 2 kv)``, or with ``separate`` three GEMMs ``h x q``,
    ``h x kv``, ``h x kv``, each reading the input) and the attention output projection."""
    t, h = w.tokens, w.hidden
    if separate:
        q_f, q_b = linear_times_s(device, t, w.q, h)
        kv_f, kv_b = linear_times_s(device, t, w.kv, h)
        qkv_f, qkv_b = q_f + 2 * kv_f, q_b + 2 * kv_b
    else:
        qkv_f, qkv_b = linear_times_s(device, t, w.q + 2 * w.kv, h)
    out_f, out_b = linear_times_s(device, t, h, w.q)
    return _Sums(
        gemm_f=qkv_f + out_f,
        gemm_b=qkv_b + out_b,
        flops=2 * t * h * (w.q + 2 * w.kv) + 2 * t * h * w.q,
        cast_in=2 * h / w.cast_split + w.q,
        cast_grad=w.q + 2 * w.kv + 2 * h / w.cast_split,
    )


def _mla_projections(device: Device, geo: Geometry, w: _Widths) -> tuple[_Sums, FloatArray]:
    """Multi-head latent attention's projections as Megatron-Core runs them (Megatron-LM
    d98e8a64dd ``multi_latent_attention.py``, TE layer spec), and the up projections'
    forward time [s]. The down projections, ``h x q_lora`` and ``h x (kv_lora + d_rope)``,
    are built ``duplicated``: every TP rank holds them whole and runs them on its own
    tokens (``T / t`` under sequence parallelism, all ``T`` without, each rank repeating
    them). The up projections, ``q_lora x a d_qk / t`` (``h x a d_qk / t`` without a query
    latent) and ``kv_lora x a (d_qk - d_rope + d_v) / t``, are column parallel on all ``T``
    tokens, the output projection ``a d_v / t x h`` row parallel. The ``_Sums`` FP8 casts
    also count the MLP's input (``h``) and output gradient, as ``_attention_projections``."""
    t, h, tp = w.tokens, w.hidden, w.tp
    local = t / w.split
    q_lora, kv_lora = float(geo.q_lora_rank), float(geo.kv_lora_rank)
    kv_down = kv_lora + geo.qk_rope_head_dim
    q_up, kv_up = geo.q_up_width / tp, geo.kv_up_width / tp
    kvd_f, kvd_b = linear_times_s(device, local, kv_down, h)
    if q_lora:
        qd_f, qd_b = linear_times_s(device, local, q_lora, h)
    else:
        qd_f, qd_b = _zero(t), _zero(t)
    q_in = q_lora or h
    qu_f, qu_b = linear_times_s(device, t, q_up, q_in)
    kvu_f, kvu_b = linear_times_s(device, t, kv_up, kv_lora)
    out_f, out_b = linear_times_s(device, t, h, w.q)
    down_inputs = (2.0 if q_lora else 1.0) * h / w.split
    sums = _Sums(
        gemm_f=qd_f + kvd_f + qu_f + kvu_f + out_f,
        gemm_b=qd_b + kvd_b + qu_b + kvu_b + out_b,
        flops=2 * local * h * (q_lora + kv_down)
        + 2 * t * (q_in * q_up + kv_lora * kv_up)
        + 2 * t * h * w.q,
        cast_in=h / w.cast_split + down_inputs + (q_in + kv_lora) / w.cast_split + w.q,
        cast_grad=(q_lora + kv_down) / w.split + q_up + kv_up + 2 * h / w.cast_split,
    )
    return sums, qu_f + kvu_f


def _mla_rotary_width(geo: Geometry) -> float:
    """Elements per token MLA's rotary pass moves over all heads, in units of a 16-bit read
    and write: Megatron-Core's fused MLA RoPE kernels (``fused_apply_mla_rope_for_q`` and
    ``_for_kv``) read the query up projection's ``a d_qk`` and write the query, and read
    the key/value up projection's ``a (d_qk - d_rope + d_v)`` and write keys and values,
    ``a (d_qk + d_v)``."""
    d_qk = geo.qk_head_dim or geo.head_dim
    d_v = geo.v_head_dim or geo.head_dim
    return geo.q_up_width + (geo.kv_up_width + geo.heads * (d_qk + d_v)) / 2


def _dense_mlp(
    device: Device, geo: Geometry, w: _Widths, sums: _Sums, act: float, separate: bool = False
) -> tuple[_Sums, _Mlp]:
    """A dense MLP: up (gated: gate and up, ``h x 2f / t``, with ``separate`` two GEMMs
    ``h x f / t``) and down (``f / t x h``)."""
    t, h, tokens = w.tp, w.hidden, w.tokens
    dense_up = (2.0 if geo.gated else 1.0) * geo.dense_ffn
    if separate and geo.gated:
        one_f, one_b = linear_times_s(device, tokens, geo.dense_ffn / t, h)
        up_f, up_b = 2 * one_f, 2 * one_b
    else:
        up_f, up_b = linear_times_s(device, tokens, dense_up / t, h)
    down_f, down_b = linear_times_s(device, tokens, h, geo.dense_ffn / t)
    act_bytes = tokens * act * geo.dense_ffn / t
    sums = _Sums(
        gemm_f=sums.gemm_f + up_f + down_f,
        gemm_b=sums.gemm_b + up_b + down_b,
        flops=sums.flops + 2 * tokens * h * (dense_up + geo.dense_ffn) / t,
        cast_in=sums.cast_in + geo.dense_ffn / t,
        cast_grad=sums.cast_grad + dense_up / t,
    )
    mlp_f = up_f + down_f + memory_time_s(device, act_bytes)
    return sums, _Mlp(mlp_f, act_bytes, act_bytes, _zero(tokens))


def _bf16_experts(kernels: Kernels) -> bool:
    """The experts' GEMMs stay 16-bit under the recipe's FP8 (``Kernels.fp8_experts``)."""
    return kernels.fp8_recipe is not None and not kernels.fp8_experts


def _routed_experts(
    device: Device,
    geo: Geometry,
    w: _Widths,
    sums: _Sums,
    ep: FloatArray,
    etp: FloatArray,
    imbalance: float,
    act: float,
    kernels: Kernels,
) -> tuple[_Sums, _Mlp]:
    """An MoE layer's router (16-bit) and its ``E / ep`` local experts as one grouped GEMM
    of ``imbalance * T k ep / E`` tokens each (the most loaded GPU), ``1 / etp`` of each
    expert per rank; the token permutation moves ``4h + 4kh`` bytes per token. Under FP8
    the experts run in FP8 with their casts, or in 16-bit without when the framework's
    conversion leaves them out (``Kernels.fp8_experts``). With expert biases added in a
    pass of their own, that pass moves ``EXPERT_BIAS_BYTES`` per element of the experts'
    ``imbalance * T k`` output rows of ``h``."""
    t, h, tokens = w.tp, w.hidden, w.tokens
    up_width = (2.0 if geo.gated else 1.0) * geo.ffn
    local = geo.experts / ep
    routed = tokens * etp / t * geo.top_k
    per_expert = imbalance * routed * ep / geo.experts
    half = _bf16_experts(kernels)
    router_f, router_b = linear_times_s(device, tokens, float(geo.experts), h, half=True)
    up_f, up_b = linear_times_s(device, per_expert, up_width / etp, h, local, half=half)
    down_f, down_b = linear_times_s(device, per_expert, h, geo.ffn / etp, local, half=half)
    act_bytes = routed * imbalance * act * geo.ffn / etp
    share = 0.0 if half else etp / t * geo.top_k * imbalance
    per_element = EXPERT_BIAS_BYTES.get(kernels.expert_bias_prob_bytes, (0.0, 0.0))
    bias_fwd, bias_bwd = per_element if geo.expert_bias else (0.0, 0.0)
    outputs = routed * imbalance * h
    clamped = kernels.unfused_clamp and geo.activation_clamp > 0 and geo.gated
    clamp_fwd, clamp_bwd = ACTIVATION_CLAMP_BYTES if clamped else (0.0, 0.0)
    activations = routed * imbalance * geo.ffn / etp
    sums = _Sums(
        gemm_f=sums.gemm_f + router_f + up_f + down_f,
        gemm_b=sums.gemm_b + router_b + up_b + down_b,
        flops=sums.flops
        + 2 * tokens * h * geo.experts
        + 2 * routed * h * (up_width + geo.ffn) / etp,
        cast_in=sums.cast_in + share * (h + geo.ffn / etp),
        cast_grad=sums.cast_grad + share * (up_width / etp + h),
    )
    mlp = _Mlp(
        mlp_f=up_f
        + down_f
        + memory_time_s(device, act_bytes + outputs * bias_fwd + activations * clamp_fwd),
        act_bytes=act_bytes,
        mlp_bytes=act_bytes + routed / geo.top_k * (4 * h + 4 * geo.top_k * h),
        shared_f=_zero(tokens),
        bias_fwd_bytes=outputs * bias_fwd,
        bias_bwd_bytes=outputs * bias_bwd,
        mlp_b=up_b + down_b,
        clamp_fwd_bytes=activations * clamp_fwd,
        clamp_bwd_bytes=activations * clamp_bwd,
    )
    return sums, mlp


def _shared_experts(
    device: Device,
    geo: Geometry,
    w: _Widths,
    sums: _Sums,
    mlp: _Mlp,
    act: float,
    half: bool = False,
) -> tuple[_Sums, _Mlp]:
    """The shared experts every token passes through, sharded by TP like a dense MLP
    (``half``: in 16-bit under FP8, without casts, as the routed experts)."""
    t, h, tokens = w.tp, w.hidden, w.tokens
    shared = geo.shared_experts
    up_width = (2.0 if geo.gated else 1.0) * geo.ffn
    sh_up_f, sh_up_b = linear_times_s(device, tokens, shared * up_width / t, h, half=half)
    sh_dn_f, sh_dn_b = linear_times_s(device, tokens, h, shared * geo.ffn / t, half=half)
    sh_act = tokens * shared * act * geo.ffn / t
    cast = 0.0 if half else 1.0
    sums = _Sums(
        gemm_f=sums.gemm_f + sh_up_f + sh_dn_f,
        gemm_b=sums.gemm_b + sh_up_b + sh_dn_b,
        flops=sums.flops + 2 * tokens * h * shared * (up_width + geo.ffn) / t,
        cast_in=sums.cast_in + cast * shared * geo.ffn / t,
        cast_grad=sums.cast_grad + cast * shared * up_width / t,
    )
    mlp = dataclasses.replace(
        mlp,
        mlp_bytes=mlp.mlp_bytes + sh_act,
        shared_f=sh_up_f + sh_dn_f + memory_time_s(device, sh_act),
    )
    return sums, mlp


def _ops_mla_recomputed_gemm_s(
    device: Device, geo: Geometry, w: _Widths, compiled: bool, moe: bool, mlp_gemm_f: FloatArray
) -> FloatArray:
    """``ops_recomputed_gemm_s`` for torchtitan's DeepSeek-V3 block: the even ones of
    ``memory.MLA_MM_ORDER`` (with a query latent ``wq_b``, ``wkv_b`` and the router or
    ``w1``, ``w2``; without, ``wkv_a``, ``wo`` and ``w3``), at torchtitan's shapes (the
    attention's input gathered to all ``T`` tokens, the down projections whole on every
    rank, the up projections column parallel), plus an MoE layer's experts. Compiled,
    ``wo`` is not run again where its reduce-scatter's output is saved (sequence
    parallelism), nor ``w2``, whose output backward does not need."""
    t, h, tp = w.tokens, w.hidden, w.tp
    q_lora, kv_lora = float(geo.q_lora_rank), float(geo.kv_lora_rank)
    ffn = geo.dense_ffn / tp
    shapes: dict[str, tuple[Number, Number]] = {
        "wq_b": (geo.q_up_width / tp, q_lora),
        "wkv_a": (kv_lora + geo.qk_rope_head_dim, h),
        "wkv_b": (geo.kv_up_width / tp, kv_lora),
        "wo": (h, w.q),
        "w1": (ffn, h),
        "w3": (ffn, h),
        "w2": (h, ffn),
    }
    router_f, _ = linear_times_s(device, t, float(geo.experts), h, half=True)
    total = np.asarray(mlp_gemm_f - router_f) if moe else _zero(t)
    for name in MLA_MM_ORDER[(geo.q_lora_rank > 0, moe)][1::2]:
        if name == "router":
            total = total + router_f
            continue
        n, k = shapes[name]
        gemm_f, _ = linear_times_s(device, t, n, k)
        if name == "wo":
            gemm_f = np.where(compiled & (w.split > 1), 0.0, gemm_f)
        elif name == "w2" and compiled:
            gemm_f = _zero(t)
        total = total + gemm_f
    return np.asarray(total)


def _memory_passes(
    device: Device,
    geo: Geometry,
    w: _Widths,
    sums: _Sums,
    mlp: _Mlp,
    norm_bytes: FloatArray,
    pb: dict[str, float],
    kernels: Kernels,
) -> tuple[FloatArray, FloatArray]:
    """(forward, backward) of the memory-bound passes [s]: norms, residual adds and
    dropout masks, rotary, the MLP's bytes, FP8 casts; backward moves twice the forward's
    bytes, its casts on the output gradients; the experts' bias pass its own bytes each
    way (``EXPERT_BIAS_BYTES``)."""
    tokens, split = w.tokens, w.split
    replicated = 2 * pb["residual"] * w.hidden + (2.0 * w.hidden if geo.dropout else 0.0)
    rotary = pb["rotary"] * w.rotary if geo.rotary else 0.0
    fp8 = _fp8_cast_bytes(kernels.fp8_recipe)
    elem_bytes = (
        norm_bytes + tokens * (replicated / split + rotary + fp8 * sums.cast_in) + mlp.mlp_bytes
    )
    rope_f, rope_b = _unfused_rope_bytes(geo, w, pb, kernels)
    elem_f = memory_time_s(device, elem_bytes + mlp.bias_fwd_bytes + mlp.clamp_fwd_bytes + rope_f)
    elem_b = memory_time_s(
        device,
        ELEMENTWISE_BACKWARD_FACTOR * (elem_bytes - tokens * fp8 * sums.cast_in)
        + tokens * fp8 * sums.cast_grad
        + mlp.bias_bwd_bytes
        + mlp.clamp_bwd_bytes
        + rope_b,
    )
    return elem_f, elem_b


def _fp8_cast_bytes(recipe: str | None) -> float:
    """Effective bytes per element of one FP8 cast under ``recipe`` (0 without FP8): its
    ``FP8_CAST_BYTES`` over the share of the bandwidth its kernels reach
    (``FP8_CAST_EFFICIENCY``)."""
    if not recipe:
        return 0.0
    return FP8_CAST_BYTES[recipe] / FP8_CAST_EFFICIENCY.get(recipe, 1.0)


def _unfused_rope_bytes(
    geo: Geometry, w: _Widths, pb: dict[str, float], kernels: Kernels
) -> tuple[FloatArray | float, FloatArray | float]:
    """(forward, backward) bytes the rotary embeddings move beyond the fused pass when the
    framework applies YaRN-scaled ones in PyTorch ops (``UNFUSED_ROPE_BYTES`` per element of
    the queries and keys, less the fused pass's ``PASS_BYTES["rotary"]`` and its backward).
    YaRN scales cos and sin by ``0.1 ln(factor) + 1`` (Megatron-LM 4415119414
    ``yarn_rotary_pos_embedding.py`` ``_yarn_get_mscale``), which is not 1 for any factor
    above 1. Multi-head latent attention applies its rotary part in fused kernels of its own
    (``_mla_rotary_width``): none there."""
    scaled = geo.rope_yarn_factor > 1.0 and geo.rotary and not geo.mla
    if not (kernels.unfused_scaled_rope and scaled):
        return 0.0, 0.0
    elements = w.tokens * w.rotary
    forward = UNFUSED_ROPE_BYTES[0] - pb["rotary"]
    backward = UNFUSED_ROPE_BYTES[1] - ELEMENTWISE_BACKWARD_FACTOR * pb["rotary"]
    return elements * forward, elements * backward


def _rescaled_bytes(geo: Geometry, w: _Widths, moe: bool, kernels: Kernels) -> FloatArray | None:
    """Bytes of the backward GEMM outputs the FP8 recipe rescales in a pass of their own
    (``FP8_RESCALE_BYTES``), None when it rescales none: the input gradients (all ``T``
    tokens by each linear layer's input width, one per GEMM, so ``3h`` for separate query,
    key and value projections) and the weight gradients of the attention projections and
    of a dense MLP. torchao converts ``nn.Linear`` layers; the experts of an MoE layer are
    grouped GEMMs it does not convert (torchtitan's ``GroupedExperts``, routed and shared,
    call ``torch._grouped_mm``), and the router stays in 16-bit. Multi-head latent
    attention's linear layers are its own (torchtitan's DeepSeek-V3): the down projections
    ``wq_a`` (``h x q_lora``) and ``wkv_a`` (``h x (kv_lora + d_rope)``), whole on every
    rank, the column-parallel up projections ``wq_b`` (``q_lora x a d_qk / t``; without a
    query latent ``wq``, ``h x a d_qk / t``) and ``wkv_b`` (``kv_lora x a (d_qk - d_rope +
    d_v) / t``) and the output ``wo`` (``a d_v / t x h``): input gradients
    ``2h + q_lora + kv_lora + a d_v / t`` per token."""
    per_element = FP8_RESCALE_BYTES.get(kernels.fp8_recipe or "")
    if not per_element:
        return None
    h, t, separate = w.hidden, w.tp, kernels.separate_projections
    if geo.mla:
        q_lora, kv_lora = float(geo.q_lora_rank), float(geo.kv_lora_rank)
        q_in = q_lora or h
        grad_in = 2.0 * h + q_lora + kv_lora + w.q
        weights = (
            h * (q_lora + kv_lora + geo.qk_rope_head_dim)
            + q_in * geo.q_up_width / t
            + kv_lora * geo.kv_up_width / t
            + w.q * h
        )
    else:
        grad_in = (3.0 if separate else 1.0) * h + w.q
        weights = h * (w.q + 2 * w.kv) + w.q * h
    if not moe:
        ffn = geo.dense_ffn / t
        grad_in = grad_in + (2.0 if separate and geo.gated else 1.0) * h + ffn
        weights = weights + h * (2.0 if geo.gated else 1.0) * ffn + ffn * h
    return per_element * (w.tokens * grad_in + weights)


def _zero(like: FloatArray) -> FloatArray:
    return np.zeros_like(np.asarray(like, dtype=np.float64))


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
    """(forward, backward, forward FLOPs) of the attention core. A fused kernel runs at its
    throughput for the query/key head dim (the score product's width: with multi-head
    latent attention 192 against 128-wide values), which is what its tiles are sized by;
    on a sliding-window layer at its throughput for the window when it has one
    (``flash_attention_times_s``)."""
    heads = b * geo.heads / t
    s_q = s / c
    d = geo.core_head_dim
    d_qk = float(geo.qk_head_dim or geo.head_dim)
    if attention == "flash":
        window = float(geo.window) if windowed and geo.window else 0.0
        banded = window < s if window else np.zeros_like(s, dtype=bool)
        s_kv = np.where(banded, window, s / 2)
        flops = 4 * heads * s_q * s_kv * d
        forward, backward = flash_attention_times_s(device, flops, s_q, d_qk)
        if window:
            band_f, band_b = flash_attention_times_s(device, flops, s_q, d_qk, window)
            forward = np.where(banded, band_f, forward)
            backward = np.where(banded, band_b, backward)
        return forward, backward, flops
    s_kv = np.minimum(float(geo.window), s) if windowed and geo.window else s
    d_v = float(geo.v_head_dim or geo.head_dim)
    scores_f, scores_b = linear_times_s(device, s_q, s_kv, d_qk, heads, half=True)
    values_f, values_b = linear_times_s(device, s_q, d_v, s_kv, heads, half=True)
    elements = heads * s_q * s_kv
    drop = 1.0 if geo.dropout else 0.0
    fwd_bytes = elements * (UNFUSED_SCORE_BYTES_FWD[0] + drop * UNFUSED_SCORE_BYTES_FWD[1])
    bwd_bytes = elements * (UNFUSED_SCORE_BYTES_BWD[0] + drop * UNFUSED_SCORE_BYTES_BWD[1])
    forward = scores_f + values_f + memory_time_s(device, fwd_bytes)
    backward = scores_b + values_b + memory_time_s(device, bwd_bytes)
    return forward, backward, 4 * heads * s_q * s_kv * d


def output_layer_cost(
    device: Device,
    geo: Geometry,
    tp: Number,
    cp: Number,
    micro_batch: Number,
    seq_len: Number,
    loss: str = "fp32",
) -> LayerCost:
    """The output layer and the loss for one micro-batch on the last stage.

    A ``T x h`` by ``h x V / t`` GEMM (vocabulary-parallel; 16-bit under FP8, as Transformer
    Engine leaves the output layer) and the cross entropy over its ``T x V / t`` logits
    (``LOSS_BYTES_PER_LOGIT[loss]``).
    """
    t, c, b, s = (_arr(x) for x in (tp, cp, micro_batch, seq_len))
    tokens = b * s / c
    vocab = geo.vocab / t
    gemm_f, gemm_b = linear_times_s(device, tokens, vocab, float(geo.hidden), half=True)
    logits = tokens * vocab
    zero = np.zeros_like(gemm_f)
    fwd_bytes, bwd_bytes = LOSS_BYTES_PER_LOGIT[loss]
    return LayerCost(
        gemm_fwd_s=gemm_f,
        gemm_bwd_s=gemm_b,
        attn_fwd_s=zero,
        attn_bwd_s=zero,
        elem_fwd_s=memory_time_s(device, logits * fwd_bytes),
        elem_bwd_s=memory_time_s(device, logits * bwd_bytes),
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
    "ACTIVATION_CLAMP_BYTES",
    "ATTENTION_KINDS",
    "EXPERT_BIAS_BYTES",
    "Kernels",
    "LayerCost",
    "RECOMPUTE_MODULES",
    "UNFUSED_ROPE_BYTES",
    "embedding_cost",
    "gemm_time_s",
    "layer_cost",
    "output_layer_cost",
]
