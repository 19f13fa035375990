"""Memory per GPU: weights, gradients and optimizer states per data-parallel sharding, the
activations of the micro-batches in flight (Korthikanti et al. 2022), and the logits.

Model states, per parameter a GPU holds: 16-bit weights (2 bytes), main gradients
(``grad_bytes``: 4 for Megatron's FP32 gradient buffer, 2 for 16-bit gradients), and mixed-
precision Adam (FP32 master weights, momentum and variance: 12 bytes), each divided by the
ranks the data-parallel strategy shards it over (``Strategy.state_shards``). Routed experts
are held by ``ep`` times fewer ranks, so a strategy that shards over the data-parallel group
shards them only over the expert data-parallel group (``Layout.expert_dp``; Megatron-Core's
distributed optimizer and FSDP shard expert states over it): ``expert_shards``. Megatron's
18 bytes per parameter reproduces Korthikanti et al.'s Figure 1 (45.6 GiB for 22B and 175B
on 64 GPUs).

Activations of one layer and one micro-batch of ``T`` tokens (bytes per token), after
Korthikanti et al.'s Table 2 generalized to GQA and gated MLPs: kept on every TP rank
unless sequence parallelism splits them: two norm inputs (4h), the QKV and MLP inputs
(2h + 2h), dropout masks (2h); split by TP: Q, K, V and the attention output
(``4 q_dim + 4 kv_dim``), the MLP's inner tensors (GELU: input and output, ``4f``; gated:
gate, up and product, ``6f``); with the unfused attention of 2021-22 the score matrix's
softmax output, dropout mask and dropout output (``5 a s^2 b / t`` per micro-batch, 2 without
dropout). GPT-3: ``sbh (10 + 24 / t + 5 a s / (h t))``, as in the paper. Selective
recompute drops the score terms; full recompute keeps only each layer's input (``2h``, split
by SP) plus one layer's full set while it is recomputed. Multi-head latent attention keeps
its own, wider set (``mla_attention_bytes_per_token``: Q and K at ``a d_qk``, V and the output
at ``a d_v``, the latents before and after their norms), and Megatron-Core's named
``recompute_modules`` remove what ``recomputed_bytes_per_token`` lists. A clamped gated
activation clamped in PyTorch ops (Megatron-Core's experts) keeps the first GEMM's output
twice unless ``moe_act`` is recomputed (``clamp_saved_bytes_per_token``).

A framework that repeats the key and value heads to the query heads before attention
(``kv_repeated``: torchtitan's ``repeat_kv``) hands the repeated copies to the attention,
which saves them for backward: Q, K, V and the attention output take ``8 q_dim`` without
recompute and in the layer full recompute rebuilds (``layer_activation_bytes``).

Megatron-Core's routed experts run on the tokens their expert tensor-parallel group
gathers (``routed_bytes_per_token``): each of the ``etp`` ranks holds all of the group's
routed copies at the full hidden width and ``1 / etp`` of each expert's inner width.

PyTorch's op-level selective checkpointing as torchtitan runs it (``selective`` ``ops``)
keeps per layer only the block's input and the outputs of the operations its policy saves
(``ops_saved_bytes_per_token``), and rebuilds the rest of one layer while its backward runs.

The loss (``logits_bytes``) holds ``LOGIT_BYTES`` per logit, or with PyTorch's eager cross
entropy on FP32-upcast logits what its backward holds at once (``EAGER_LOSS_BYTES``).

PyTorch's ring attention (``cp_attention`` ``torch``) adds the buffers one layer's attention
backward holds beside its kernels: ``ring_attention_bytes``.

A framework whose pipeline defers FSDP's gradient sync to a stage's last micro-batch
(``pp_defers_fsdp_sync``: PyTorch's pipelining with FSDP2, as torchtitan runs it) holds the
stage's parameters gathered and its gradients unsharded, at the reduce width, until then:
``held_shards``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.training.kernels import FloatArray, Number
from fabricui.engine.types import StateShards

if TYPE_CHECKING:
    import numpy.typing as npt

    from fabricui.engine.training.shape import Geometry

#: Bytes per parameter of the 16-bit weights.
WEIGHT_BYTES = 2.0
#: Bytes per parameter of mixed-precision Adam: FP32 master weights, momentum, variance.
OPTIMIZER_BYTES = 12.0
#: Bytes per logit kept for the loss: 16-bit logits and FP32 softmax.
LOGIT_BYTES = 6.0
#: Bytes per logit PyTorch's eager cross entropy holds at its peak, the start of the
#: loss's backward, as torchtitan calls it (``cross_entropy(pred.flatten(0, 1).float(),
#: labels)``, ``train.py`` at 9dec370; ``del pred`` before ``backward``): by TP degree 1,
#: ``F.cross_entropy`` (``log_softmax`` then ``nll_loss``): the saved FP32 log-softmax (4),
#: the FP32 gradient ``nll_loss_backward`` fills (4) and the one ``_log_softmax_backward_data``
#: writes (4); above 1, PyTorch's ``loss_parallel`` (torchtitan's default with TP) on the
#: rank's vocabulary shard: the saved log-softmax (4), ``nll_loss_backward``'s zero-filled
#: gradient (4), ``exp`` of the log-softmax (4) and their sum (4) before it is scaled
#: (``_nll_loss_and_log_softmax_backward``, torch/distributed/tensor/parallel/loss.py).
EAGER_LOSS_BYTES = {"single": 12.0, "parallel": 16.0}
#: Bytes per element of the rank's ``T x A`` queries that PyTorch's ring attention's
#: backward holds besides its ``4 c`` of all-gathered 16-bit keys and values: their
#: concatenation sent to the all-gather (4), the FP32 query-gradient accumulator (4), the
#: FP32 key and value gradients sent to the next rank and those arriving (8 + 8).
RING_BACKWARD_BYTES = 4.0 + 4.0 + 8.0 + 8.0
#: What eager PyTorch holds on top until the second ring step: the zero-filled FP32 key and
#: value gradient accumulators (8) and the contiguous copies of the saved keys and values (4).
RING_EAGER_BYTES = 8.0 + 4.0
#: Bytes per element of a clamped gated activation's output (``f`` per routed copy) that
#: autograd keeps beyond what the fused activation saves, when the framework clamps the two
#: halves of the first GEMM's 16-bit output in PyTorch ops of their own (Megatron-Core's
#: ``weighted_bias_quick_geglu_impl``, Megatron-LM 4415119414
#: ``megatron/core/fusions/fused_bias_geglu.py``; the same at 92c8482e6d..24bad8e677). Each
#: ``clamp`` saves its input (PyTorch ``tools/autograd/derivatives.yaml``: ``self:
#: clamp_backward(grad, self, min, max)``), a view of the first GEMM's output that keeps all
#: of it; ``chunk`` and ``cat`` save only sizes; ``WeightedQuickGeGLUFunction`` saves the
#: concatenated copy (the compiled kernel runs inside it and saves nothing of its own). The
#: first GEMM's output is thus kept twice: the copy, two 16-bit halves, 2 + 2.
CLAMP_SAVED_BYTES = 2.0 + 2.0


@dataclass(frozen=True)
class MemoryReport:
    """Memory of the most loaded GPU [bytes]."""

    weights_bytes: float
    """16-bit weights."""
    grads_bytes: float
    """Main gradients."""
    optimizer_bytes: float
    """Optimizer states (master weights and Adam moments)."""
    activations_bytes: float
    """Activations of the micro-batches in flight (and one recomputed layer)."""
    logits_bytes: float = 0.0
    """Logits of the loss (last stage)."""
    extra: tuple[tuple[str, float], ...] = field(default=())
    """What strategies add: (what, bytes)."""
    stage: int = 0
    """Pipeline stage it describes."""

    @property
    def total_bytes(self) -> float:
        """Everything."""
        extra = sum(size for _, size in self.extra)
        states = self.weights_bytes + self.grads_bytes + self.optimizer_bytes
        return states + self.activations_bytes + self.logits_bytes + extra

    @property
    def total_GB(self) -> float:
        """Everything [GB]."""
        return self.total_bytes / 1e9

    def to_json(self) -> dict[str, object]:
        """The ``memory`` object of ``plan --json``."""
        return {
            "stage": self.stage,
            "weights_GB": self.weights_bytes / 1e9,
            "grads_GB": self.grads_bytes / 1e9,
            "optimizer_GB": self.optimizer_bytes / 1e9,
            "activations_GB": self.activations_bytes / 1e9,
            "logits_GB": self.logits_bytes / 1e9,
            "extra": [{"what": what, "GB": size / 1e9} for what, size in self.extra],
            "total_GB": self.total_GB,
        }


def adam_step_bytes(optimizer_bytes: float = OPTIMIZER_BYTES) -> float:
    """Bytes per parameter an Adam step moves through HBM besides the gradient: it reads
    and writes the optimizer's states and writes the 16-bit weights (26 with an FP32
    master copy and FP32 moments)."""
    return 2.0 * optimizer_bytes + WEIGHT_BYTES


def grad_accumulation_bytes(microbatches: int, reduce_bytes: float) -> float:
    """Bytes per parameter per micro-batch, averaged over a step of ``microbatches``, that
    FSDP2's post-backward moves through HBM holding a deferred gradient (``held_shards``):
    after the first micro-batch it casts the 16-bit gradient to the reduce width
    (``to_accumulated_grad_if_needed``: read 2, write ``r``; nothing when ``r`` is 2), after
    each later one it adds the new 16-bit gradient in (``accumulate_unsharded_grad_if_needed``,
    or autograd's own sum at ``r`` = 2: read ``r`` and 2, write ``r``)."""
    m = max(int(microbatches), 1)
    r = float(reduce_bytes)
    first = 0.0 if r == WEIGHT_BYTES else WEIGHT_BYTES + r
    return (first + (m - 1) * (WEIGHT_BYTES + 2.0 * r)) / m


def stage_params(
    geo: Geometry,
    layers: Number,
    tp: Number,
    ep: Number,
    first: bool,
    last: bool,
    etp: Number | None = None,
) -> FloatArray:
    """Parameters one GPU of a stage holds: its layers' TP (and EP) shards, plus the input
    embedding on the first stage and the output layer on the last (vocabulary-parallel).

    MoE layers hold ``experts / ep`` routed experts split over ``etp`` (default ``tp``) and
    the shared experts TP-sharded like the dense MLP; MLA's down projections are whole on
    every TP rank; a stage's MoE layers are counted in proportion to the model's share of
    MoE layers.
    """
    t, n = (np.asarray(x, dtype=np.float64) for x in (tp, layers))
    whole = geo.replicated_attention_params
    attention = (geo.attention_params - whole) / t + whole
    dense_layer = attention + geo.dense_mlp_params / t + 2 * geo.hidden
    moe_layer = (
        attention
        + geo.shared_experts * geo.expert_params / t
        + geo.hidden * geo.experts
        + 2 * geo.hidden
    )
    moe_share = geo.moe_layers / geo.layers
    per_layer = (1 - moe_share) * dense_layer + moe_share * moe_layer
    params = n * per_layer + stage_expert_params(geo, layers, ep, tp if etp is None else etp)
    if first:
        params = params + geo.embedding_params / t
    if last:
        params = params + geo.embedding_params / t + geo.hidden
    return params


def stage_expert_params(geo: Geometry, layers: Number, ep: Number, etp: Number) -> FloatArray:
    """Routed-expert parameters one GPU of a stage holds (part of ``stage_params``):
    ``experts / ep`` experts split over ``etp``, in the stage's share of MoE layers."""
    e, x, n = (np.asarray(v, dtype=np.float64) for v in (ep, etp, layers))
    moe_share = geo.moe_layers / geo.layers
    return n * moe_share * geo.experts / e * geo.expert_params / x


def expert_shards(shards: Number, dp_ranks: Number, expert_dp: Number) -> FloatArray:
    """Ranks a state of the routed experts is divided over when the rest of the model is
    divided over ``shards`` of the ``dp_ranks`` (``dp x cp``) data-parallel ranks: the same
    fraction of the expert data-parallel group, at least 1 (unsharded stays unsharded)."""
    s, d, x = (np.asarray(v, dtype=np.float64) for v in (shards, dp_ranks, expert_dp))
    return np.where(s > 1, np.maximum(1.0, s * x / np.maximum(d, 1.0)), 1.0)


def states_bytes(
    params: Number,
    shards: StateShards,
    grad_bytes: float = 4.0,
    experts: Number = 0.0,
    dp_ranks: Number = 1.0,
    expert_dp: Number = 1.0,
    optimizer_bytes: float = OPTIMIZER_BYTES,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weights, gradients, optimizer) bytes of ``params`` parameters under ``shards``, of
    which ``experts`` are routed-expert parameters sharded per ``expert_shards``."""
    p = np.asarray(params, dtype=np.float64)
    e = np.asarray(experts, dtype=np.float64)
    out = []
    for size, count in (
        (WEIGHT_BYTES, shards.weights),
        (grad_bytes, shards.grads),
        (optimizer_bytes, shards.optimizer),
    ):
        out.append(size * ((p - e) / count + e / expert_shards(count, dp_ranks, expert_dp)))
    return out[0], out[1], out[2]


def held_shards(
    weights: Number,
    grads: Number,
    grad_bytes: Number,
    reduce_bytes: Number,
    pp: Number,
    deferred: bool,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weight shards, gradient shards, bytes per gradient element) a GPU holds at its peak:
    the strategy's, or where the framework's pipeline defers FSDP's gradient sync
    (``deferred``) on a pipeline of two stages or more whose strategy shards gradients,
    1, 1 and the reduce width ``reduce_bytes``.

    Read in torch 2.6.0 (``torch/distributed/pipelining/stage.py``,
    ``_PipelineStageBase.backward_maybe_with_nosync``) as torchtitan 9dec370 runs it
    (``parallelize_llama.py``: ``reshard_after_forward=False`` when PP is on,
    ``MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)``): every
    micro-batch's backward runs with ``set_reshard_after_backward(False)`` and
    ``set_requires_gradient_sync(False)``, so FSDP2's post-backward
    (``_fsdp_param_group.py``) neither reshards nor reduces: it upcasts each 16-bit
    gradient to the reduce dtype (``FSDPParam.to_accumulated_grad_if_needed``) and adds
    the next micro-batch's to it (``accumulate_unsharded_grad_if_needed``). Only after the
    last micro-batch's backward does the stage turn both back on and run every group's
    post-backward: the reduce-scatter, then the resharding. Until then the stage holds its
    whole parameter set gathered in 16 bits and its whole gradient at the reduce width.
    Each GPU still holds its shard of the FP32 master weights and Adam moments (the
    optimizer states); the gradient shards the reduce-scatter writes replace the
    unsharded gradients group by group.

    Args:
        weights: Ranks the strategy shards the weights over.
        grads: Ranks the strategy shards the gradients over.
        grad_bytes: Bytes per gradient element the strategy keeps.
        reduce_bytes: Bytes per element of FSDP's reduction (its reduce dtype).
        pp: Pipeline stages.
        deferred: The framework defers FSDP's sync under PP.
    """
    w, g = (np.asarray(x, dtype=np.float64) for x in (weights, grads))
    held = sync_deferred(grads, pp, deferred)
    width = np.where(held, np.asarray(reduce_bytes, dtype=np.float64), grad_bytes)
    return np.where(held, 1.0, w), np.where(held, 1.0, g), width


def sync_deferred(grads: Number, pp: Number, deferred: bool) -> npt.NDArray[np.bool_]:
    """Where the framework's pipeline defers FSDP's gradient sync (``deferred``) and it
    matters: two pipeline stages or more, and a strategy that shards the gradients over
    ``grads`` ranks, more than one."""
    g, p = (np.asarray(x, dtype=np.float64) for x in (grads, pp))
    return bool(deferred) & (p > 1) & (g > 1)


def layer_activation_bytes(
    geo: Geometry,
    tp: Number,
    cp: Number,
    micro_batch: Number,
    seq_len: Number,
    sequence_parallel: Number,
    recompute: str = "none",
    attention: str = "flash",
    kv_repeated: bool = False,
    selective: str = "attention",
    eager: bool = False,
    modules: tuple[str, ...] = (),
    unfused_clamp: bool = False,
    etp: Number | None = None,
) -> FloatArray:
    """Activations one layer keeps for one micro-batch until its backward [bytes].

    With ``kv_repeated`` and no recompute, the keys and values are kept at the query
    heads' width, as torchtitan's attention saves them (``repeat_kv`` in
    ``torchtitan/models/llama/model.py`` at 9dec370, ``models/llama3/model.py`` at
    e7c0cae and 820504e): the expand and reshape copy K and V to ``n_heads``, and
    ``F.scaled_dot_product_attention`` saves its inputs (query, key, value), its output
    and the log-sum-exp. Nothing else keeps the unrepeated K and V (the copy's backward
    needs only shapes; the rotary product saves only the frequencies), so the repeated
    copies replace them. ``torch.compile`` keeps them too: AOTAutograd's min-cut
    partitioner never recomputes a node the backward must materialize (the copy feeds
    the attention's backward kernel), so it saves the copy, not its input. Under
    ``selective`` by the attention core (Korthikanti et al.) the keys and values stay at
    their own width: a recomputed attention core is taken to repeat them inside, as
    Megatron-Core's unfused ``DotProductAttention`` does (``repeat_interleave``), so its
    saved inputs stay unrepeated. Under ``selective`` by ``ops`` the layer keeps what
    ``ops_saved_bytes_per_token`` lists (neither keys nor values: the policy recomputes
    the key projection and the copy). Under ``full`` nothing of the layer is kept; the
    layer being recomputed holds its full set (``activation_bytes``).

    Multi-head latent attention (``geo.mla``) keeps what ``mla_attention_bytes_per_token``
    lists in place of the plain Q, K and V. Megatron-Core's ``recompute_modules``
    (``modules``; under ``selective`` with none named, ``core_attn``, its default) remove
    what ``recomputed_bytes_per_token`` lists; the unfused score matrix is kept unless
    ``core_attn`` is among them. A clamped activation the framework clamps in ops of their
    own (``unfused_clamp``) keeps ``clamp_saved_bytes_per_token`` more. The routed experts
    keep what ``routed_bytes_per_token`` lists for the expert tensor-parallel degree.

    Args:
        geo: Model geometry.
        tp: TP degree.
        cp: CP degree (the sequence is split ``cp`` ways).
        micro_batch: Sequences per micro-batch.
        seq_len: Tokens per sequence.
        sequence_parallel: 1 when norms and dropout are split over TP ranks.
        recompute: ``none``, ``selective`` or ``full``.
        attention: ``flash`` (no score matrix kept) or ``unfused``.
        kv_repeated: Keys and values are repeated to the query heads before attention.
        selective: What ``selective`` recomputes: ``attention`` or ``ops``.
        eager: The block runs eagerly (no ``torch.compile``; ``ops`` only).
        modules: Megatron-Core's ``recompute_modules`` under ``selective``.
        unfused_clamp: The experts' activation clamps run as ops of their own
            (``Recipe.unfused_clamp``).
        etp: Expert tensor-parallel degree (None: ``tp``).
    """
    t, c, b, s = (np.asarray(x, dtype=np.float64) for x in (tp, cp, micro_batch, seq_len))
    x = t if etp is None else np.asarray(etp, dtype=np.float64)
    split = np.where(np.asarray(sequence_parallel, dtype=np.float64) > 0, t, 1.0)
    tokens = b * s / c
    h = float(geo.hidden)
    if recompute == "full":
        return tokens * 2 * h / split
    if recompute == "selective" and selective == "ops":
        return tokens * ops_saved_bytes_per_token(geo, tp, sequence_parallel, eager)
    mods = recompute_modules(recompute, modules)
    replicated = 8 * h + (2 * h if geo.dropout else 0.0)
    inner = 6.0 if geo.gated else 4.0
    kv_width = geo.q_dim if kv_repeated and recompute == "none" else geo.kv_dim
    whole: FloatArray | float = 0.0
    if geo.mla:
        latents, attention_part, whole = mla_attention_bytes_per_token(geo, split, mods)
        replicated = replicated + latents
    else:
        attention_part = 4.0 * geo.q_dim + 4.0 * kv_width
    mlp: FloatArray | float
    if geo.moe_layers:
        share = geo.moe_layers / geo.layers
        moe_mlp = routed_bytes_per_token(geo, x) + geo.shared_experts * inner * geo.ffn
        mlp = (1 - share) * inner * geo.dense_ffn + share * moe_mlp
    else:
        mlp = inner * geo.dense_ffn
    dropped_split, dropped_tp = recomputed_bytes_per_token(geo, mods, x)
    if unfused_clamp:
        mlp = mlp + clamp_saved_bytes_per_token(geo, mods)
    per_token = (
        (replicated - dropped_split) / split + (attention_part + mlp - dropped_tp) / t + whole
    )
    size = tokens * per_token
    if attention == "unfused" and "core_attn" not in mods:
        per_score = 5.0 if geo.dropout else 2.0
        s_kv = s
        size = size + per_score * b * (geo.heads / t) * (s / c) * s_kv
    return size


def clamp_saved_bytes_per_token(geo: Geometry, modules: tuple[str, ...]) -> float:
    """Bytes per token, divided by TP like the experts' inner tensors, that a clamped gated
    activation clamped in PyTorch ops keeps beyond the fused activation's saved input
    (``CLAMP_SAVED_BYTES`` per element of the routed experts' activation output, averaged
    over dense and MoE layers); 0 without a clamp, on dense layers, and when ``moe_act`` or
    ``moe`` is recomputed (``moe_act``'s ``CheckpointWithoutOutput`` and ``moe``'s
    ``checkpoint`` run the clamps without autograd, keeping only their own inputs)."""
    if not (geo.moe_layers and geo.gated and geo.activation_clamp > 0):
        return 0.0
    if "moe" in modules or "moe_act" in modules:
        return 0.0
    share = geo.moe_layers / geo.layers
    return share * geo.top_k * CLAMP_SAVED_BYTES * geo.ffn


def recompute_modules(recompute: str, modules: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The Megatron-Core ``recompute_modules`` a recompute mode runs: under ``selective``
    those named, or ``core_attn`` when none are (``TransformerConfig``'s default); none
    otherwise."""
    if recompute != "selective":
        return ()
    return tuple(modules) or ("core_attn",)


def mla_attention_bytes_per_token(
    geo: Geometry, split: Number, modules: tuple[str, ...] = ()
) -> tuple[float, float, FloatArray]:
    """Bytes per token multi-head latent attention keeps for backward, as (divided by the
    ranks sequence parallelism splits over, divided by TP, on every rank whole), beside
    the block input and the down projections' input that ``layer_activation_bytes``
    counts as every layer's (``2h + 2h``, split by SP).

    Read in Megatron-Core's ``MLASelfAttention`` (Megatron-LM d98e8a64dd
    ``multi_latent_attention.py``, the same at the 0d8e0714cd..cd4afffa64 that
    Megatron-Bridge 0.2-0.6 pin) with the TE layer spec (``gpt_layer_specs.py``: a
    separate input norm, ``TELinear`` down projections, ``TELayerNormColumnParallelLinear``
    up projections with the latent norms fused in) and Transformer Engine's modules:

    - the down projections are ``duplicated``: each runs on the rank's own tokens, ``T /
      t`` under sequence parallelism (nothing gathered), and both save the same input;
    - each up projection saves its input latent and its norm's output (the local
      shard: ``LayerNormLinear`` gathers again in backward): ``4 q_lora + 4 kv_lora``,
      split like the tokens (without a query latent the query projection saves the
      down projections' input);
    - the attention core (TE's fused attention) saves Q (``a d_qk``), K (``a d_qk``,
      its rotary part expanded to every head), V and its output O (``a d_v`` each), and
      the FP32 softmax statistics (``4 a`` bytes): ``4 a d_qk + 4 a d_v + 4 a``, split by
      TP; the output projection saves O too (the same tensor). The rotary passes keep
      only their frequencies; the rotary key gathered under SP is saved by nothing.

    ``mla_up_proj`` (``CheckpointWithoutOutput`` around ``qkv_up_proj_and_rope_apply``)
    runs the up projections without autograd and frees Q, K and V once the attention has
    run; it keeps its inputs instead: the query latent, the key/value latent (a view that
    keeps the down projection's whole ``kv_lora + d_rope`` output) and the rotary key,
    which sequence parallelism has gathered to all ``T`` tokens (``2 d_rope`` on every
    rank): ``2 (q_lora + kv_lora + d_rope)`` split, O and the statistics by TP.
    ``core_attn`` recomputes the attention core from Q, K and V: only the statistics go.
    """
    sp = np.asarray(split, dtype=np.float64)
    q_lora, kv_lora = float(geo.q_lora_rank), float(geo.kv_lora_rank)
    rope = float(geo.qk_rope_head_dim)
    stats = 0.0 if "core_attn" in modules else 4.0 * geo.heads
    if "mla_up_proj" in modules:
        gathered = np.where(sp > 1, 2.0 * rope, 0.0)
        return 2.0 * (q_lora + kv_lora + rope), 2.0 * geo.out_width + stats, gathered
    latents = 4.0 * (q_lora + kv_lora)
    return latents, 4.0 * geo.q_up_width + 4.0 * geo.out_width + stats, np.zeros_like(sp)


def routed_bytes_per_token(geo: Geometry, etp: Number = 1.0) -> FloatArray:
    """Bytes per token, divided by TP in ``layer_activation_bytes``, that the routed experts
    of an MoE layer keep for backward: per routed copy the first GEMM's input (``2h``) and
    the inner tensors (``inner f``), on ``etp`` times the copies at ``1 / etp`` of the
    inner width: ``k (2h etp + inner f)``.

    Read in Megatron-Core (Megatron-LM d98e8a64dd ``moe/token_dispatcher.py``,
    ``moe/experts.py``): under sequence parallelism a rank routes its ``T / t`` tokens;
    ``MoEAlltoAllTokenDispatcher.dispatch_postprocess`` all-gathers the tokens the
    all-to-all brought over the expert tensor-parallel group (``pg_collection.expt_tp``,
    ``etp`` ranks) and ``combine_preprocess`` reduce-scatters them back, so each rank runs
    ``T k etp / t`` copies (``layer.layer_cost``'s count). ``TEGroupedMLP``'s ``linear_fc1``
    and ``linear_fc2`` are column- and row-parallel over that group (``1 / etp`` of each
    expert's ``2f`` or ``f``) and take no part in the communication, so ``linear_fc1``
    saves the gathered copies at the full hidden width (unlike a dense MLP's
    ``LayerNormLinear``, which saves its ``T / t`` shard and gathers again in backward);
    the activation's input (``4f`` gated, ``2f`` plain) and ``linear_fc2``'s input
    (``2f``) are split by ``etp``. With ``etp`` 1 a rank runs only its own ``T k / t``
    copies, so all of it is split by TP.
    """
    x = np.asarray(etp, dtype=np.float64)
    inner = 6.0 if geo.gated else 4.0
    return geo.top_k * (2.0 * geo.hidden * x + inner * geo.ffn)


def recomputed_bytes_per_token(
    geo: Geometry, modules: tuple[str, ...], etp: Number = 1.0
) -> tuple[FloatArray | float, FloatArray | float]:
    """Bytes per token Megatron-Core's ``recompute_modules`` remove from what a layer
    keeps, as (divided by the SP ranks, divided by TP), averaged over dense and MoE
    layers (Megatron-LM d98e8a64dd ``transformer_layer.py``, ``moe/moe_layer.py``,
    ``moe/experts.py``, ``moe/shared_experts.py``):

    - ``layernorm``: the outputs of the norms that are modules of their own (checkpointed
      without output): MLA's input norm and an MoE layer's pre-MLP norm, ``2h`` each; the
      TE spec fuses the others into the next linear layer, which nothing recomputes;
    - ``mlp`` (dense layers): the MLP from its input, its inner tensors and the fused
      norm's output (``2h``) go;
    - ``moe`` (MoE layers): the whole MoE block from the norm's output (the routed
      experts' ``routed_bytes_per_token`` at the expert tensor-parallel degree ``etp``);
    - ``moe_act``: the routed experts' activation output (``2 f`` per routed copy);
    - ``shared_experts``: the shared experts' inner tensors.

    ``core_attn`` and ``mla_up_proj`` act on the attention (``layer_activation_bytes``,
    ``mla_attention_bytes_per_token``).
    """
    h = float(geo.hidden)
    inner = 6.0 if geo.gated else 4.0
    share = geo.moe_layers / geo.layers
    split_part: FloatArray | float = 0.0
    tp_part: FloatArray | float = 0.0
    if "layernorm" in modules:
        split_part += (2 * h if geo.mla else 0.0) + share * 2 * h
    if "mlp" in modules:
        split_part += (1 - share) * 2 * h
        tp_part += (1 - share) * inner * geo.dense_ffn
    if "moe" in modules:
        moe_mlp = routed_bytes_per_token(geo, etp) + geo.shared_experts * inner * geo.ffn
        tp_part += share * moe_mlp
    else:
        if "moe_act" in modules:
            tp_part += share * geo.top_k * 2.0 * geo.ffn
        if "shared_experts" in modules:
            tp_part += share * geo.shared_experts * inner * geo.ffn
    return split_part, tp_part


def ops_saved_bytes_per_token(
    geo: Geometry, tp: Number, sequence_parallel: Number, eager: bool = False
) -> FloatArray:
    """Bytes per token one layer keeps under PyTorch's op-level selective checkpointing as
    torchtitan runs it (``selective_ac_option = 'op'``).

    Read in ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370 (the same policy at
    820504e and e7c0cae, ``models/llama3/parallelize_llama.py``): each transformer block is
    checkpointed with a policy that saves the outputs of ``aten.mm``, the SDPA kernels,
    ``reduce_scatter_tensor``, ``abs`` and ``max``, except every second ``aten.mm`` counted
    per block and pass, and recomputes every other operation. torchtitan's Llama block
    (``models/llama/model.py``) runs its matmuls in the order ``wq, wk, wv, wo, w1, w3,
    w2`` (``w2(silu(w1(x)) * w3(x))``), so the outputs of ``wq``, ``wv``, ``w1`` and
    ``w2`` are saved and those of ``wk``, ``wo`` and ``w3`` recomputed. Per token, with
    ``t`` the TP degree and ``split`` the ranks sequence parallelism splits over:

    - the block's input, kept by the checkpoint: ``2h / split``;
    - the query and value projections: ``(2 q + 2 kv) / t``;
    - the attention's output and FP32 log-sum-exp: ``(2 q + 4 a) / t``;
    - the attention's reduce-scatter output (TP with sequence parallelism): ``2h / t``;
    - the gate projection: ``2 f / t``; in an MoE layer the router's scores (``2 E``):
      the experts' ``torch._grouped_mm`` and the shared expert's ``bmm``
      (``experiments/llama4/model/moe.py`` at 820504e) are not ``aten.mm`` and are
      recomputed.

    Compiled (``torch.compile``, AOTAutograd's min-cut partitioner), a saved output is
    kept only when backward needs it, which drops ``w2``'s and the second reduce-scatter's
    outputs; eagerly, the policy's cache keeps every saved output until the block's
    backward: ``w2``'s partial sums on all tokens (``2h``) and their reduce-scatter
    (``2h / t``) too. Everything else (norms, rotary embeddings, the repeated keys and
    values, the activation, the all-gathered inputs) is recomputed. Under FP8 the saved
    ``max`` is a scalar; run eagerly, 9dec370's list (not 820504e's) would also keep the
    ``abs`` of every tensor cast to FP8, which is not counted.

    Multi-head latent attention keeps what ``_ops_mla_saved_bytes_per_token`` lists.

    Args:
        geo: Model geometry.
        tp: TP degree.
        sequence_parallel: 1 when the block's input is split over TP ranks.
        eager: The block runs eagerly.
    """
    t = np.asarray(tp, dtype=np.float64)
    split = np.where(np.asarray(sequence_parallel, dtype=np.float64) > 0, t, 1.0)
    h = float(geo.hidden)
    reduced = np.where(split > 1, 2 * h / t, 0.0)
    if geo.mla:
        return _ops_mla_saved_bytes_per_token(geo, t, split, reduced, eager)
    attention = (4.0 * geo.q_dim + 2.0 * geo.kv_dim + 4.0 * geo.heads) / t + reduced
    share = geo.moe_layers / geo.layers
    mlp = (1 - share) * 2.0 * geo.dense_ffn / t + share * 2.0 * geo.experts
    kept = 2 * h / split + attention + mlp
    if eager:
        kept = kept + (1 - share) * 2 * h + reduced
    return kept


#: The ``aten.mm`` calls of torchtitan's DeepSeek-V3 block in forward order
#: (``models/deepseek_v3/model.py``: ``wq_a, wq_b`` or ``wq``, then ``wkv_a, wkv_b, wo``;
#: the router, or a dense layer's ``w1, w3, w2``): the op-level policy saves the odd ones.
MLA_MM_ORDER = {
    (True, True): ("wq_a", "wq_b", "wkv_a", "wkv_b", "wo", "router"),
    (True, False): ("wq_a", "wq_b", "wkv_a", "wkv_b", "wo", "w1", "w3", "w2"),
    (False, True): ("wq", "wkv_a", "wkv_b", "wo", "router"),
    (False, False): ("wq", "wkv_a", "wkv_b", "wo", "w1", "w3", "w2"),
}


def mla_saved_mms(geo: Geometry, moe: bool) -> tuple[str, ...]:
    """The ``aten.mm`` calls of an MLA block whose outputs the op-level policy saves (every
    odd one of ``MLA_MM_ORDER``); the others are recomputed."""
    return MLA_MM_ORDER[(geo.q_lora_rank > 0, moe)][::2]


def _ops_mla_saved_bytes_per_token(
    geo: Geometry, t: FloatArray, split: FloatArray, reduced: FloatArray, eager: bool
) -> FloatArray:
    """``ops_saved_bytes_per_token`` for torchtitan's DeepSeek-V3 block (multi-head latent
    attention), whose matmuls run in ``MLA_MM_ORDER``. torchtitan's TP plan
    (``models/deepseek_v3/sharding.py``) gathers the attention's input to every rank and
    keeps the down projections (``wq_a``, ``wkv_a``) and latent norms whole, so their
    outputs cover all ``T`` tokens on every rank; the up projections are column parallel.
    Per token: the block input (``2h / split``), the saved outputs (``wq_a`` ``2 q_lora``,
    ``wkv_a`` ``2 (kv_lora + d_rope)``, ``wq`` ``2 a d_qk / t``, ``wkv_b``
    ``2 a (d_qk - d_rope + d_v) / t``, the router ``2 E``, ``w1`` or ``w3`` ``2 f / t``),
    the attention's output and log-sum-exp (``(2 a d_v + 4 a) / t``) and the attention's
    reduce-scatter output. Compiled, the saved outputs backward does not need go (``wo``'s
    and ``w2``'s partial sums); eagerly they stay (``2h`` each) with the MLP's
    reduce-scatter output."""
    h = float(geo.hidden)
    widths: dict[str, Number] = {
        "wq_a": 2.0 * geo.q_lora_rank,
        "wq": 2.0 * geo.q_up_width / t,
        "wkv_a": 2.0 * (geo.kv_lora_rank + geo.qk_rope_head_dim),
        "wkv_b": 2.0 * geo.kv_up_width / t,
        "router": 2.0 * geo.experts,
        "w1": 2.0 * geo.dense_ffn / t,
        "w3": 2.0 * geo.dense_ffn / t,
    }
    unneeded: dict[str, float] = {"wo": 2 * h, "w2": 2 * h}
    share = geo.moe_layers / geo.layers
    kept = 2 * h / split + (2.0 * geo.out_width + 4.0 * geo.heads) / t + reduced
    for moe, weight in ((True, share), (False, 1 - share)):
        for name in mla_saved_mms(geo, moe):
            kept = kept + weight * widths.get(name, 0.0)
            if eager:
                kept = kept + weight * unneeded.get(name, 0.0)
    return kept + (reduced if eager else 0.0)


def activation_bytes(
    geo: Geometry,
    layers: Number,
    in_flight: Number,
    tp: Number,
    cp: Number,
    micro_batch: Number,
    seq_len: Number,
    sequence_parallel: Number,
    recompute: str = "none",
    attention: str = "flash",
    kv_repeated: bool = False,
    selective: str = "attention",
    eager: bool = False,
    modules: tuple[str, ...] = (),
    unfused_clamp: bool = False,
    etp: Number | None = None,
) -> FloatArray:
    """Activations of a stage: ``layers * in_flight`` layer-micro-batches, plus under full
    recompute one layer's whole set while its backward runs (with ``kv_repeated``, its
    keys and values at the query heads), and under op-level selective recompute
    (``selective`` ``ops``) or named ``recompute_modules`` (``modules``) what that set has
    beyond what the layer keeps, at most, while that layer's backward rebuilds it; with
    ``unfused_clamp``, what the experts' clamps keep (``clamp_saved_bytes_per_token``);
    the routed experts at the expert tensor-parallel degree ``etp`` (None: ``tp``) [bytes]."""
    kept = layer_activation_bytes(
        geo, tp, cp, micro_batch, seq_len, sequence_parallel, recompute, attention,
        kv_repeated, selective, eager, modules, unfused_clamp, etp,
    )  # fmt: skip
    total = kept * np.asarray(layers, dtype=np.float64) * np.asarray(in_flight, dtype=np.float64)
    partial = recompute == "selective" and (selective == "ops" or bool(modules))
    if recompute == "full" or partial:
        rebuilt = layer_activation_bytes(
            geo, tp, cp, micro_batch, seq_len, sequence_parallel, "none", attention,
            kv_repeated, unfused_clamp=unfused_clamp, etp=etp,
        )  # fmt: skip
        total = total + (np.maximum(rebuilt - kept, 0.0) if partial else rebuilt)
    return total


def logits_bytes(
    geo: Geometry,
    tp: Number,
    cp: Number,
    micro_batch: Number,
    seq_len: Number,
    loss: str = "fp32",
) -> FloatArray:
    """Logits of one micro-batch on the last stage: ``T V / t`` values, ``LOGIT_BYTES``
    each, or with the ``eager`` loss (PyTorch's cross entropy on FP32-upcast logits)
    ``EAGER_LOSS_BYTES`` by whether TP splits the vocabulary (``loss_parallel``)."""
    t, c, b, s = (np.asarray(x, dtype=np.float64) for x in (tp, cp, micro_batch, seq_len))
    per_logit: FloatArray | float = LOGIT_BYTES
    if loss == "eager":
        single, parallel = EAGER_LOSS_BYTES["single"], EAGER_LOSS_BYTES["parallel"]
        per_logit = np.where(t > 1, parallel, single)
    return b * s / c * geo.vocab / t * per_logit


def ring_attention_bytes(
    geo: Geometry,
    tp: Number,
    cp: Number,
    micro_batch: Number,
    seq_len: Number,
    eager: bool = False,
) -> FloatArray:
    """Buffers PyTorch's ring attention holds while one layer's attention backward runs
    [bytes]: ``(4 c + 24) T A``, eager ``(4 c + 36) T A``; 0 at ``c = 1``.

    Read in torch 2.6.0's ``torch/distributed/tensor/experimental/_attention.py``
    (``_templated_ring_attention_backward``) as torchtitan 9dec370 calls it (``repeat_kv``
    in ``torchtitan/models/llama/model.py``: keys and values repeated to the query heads,
    then transposed), with ``T = b s / c`` the rank's tokens and ``A`` its query width
    (``q_dim / t``). At the end of the first ring step these are live at once:

    - the keys and values of all ``c`` ranks, all-gathered once in 16 bits
      (``_AllGatherRotater``, torchtitan's default rotate method): ``4 c``;
    - their input, the rank's keys and values concatenated (``torch.cat``), until the
      all-gather is waited for at the second step: 4;
    - the FP32 query-gradient accumulator (``accum_dtype = torch.float32``): 4;
    - the FP32 key and value gradients concatenated and sent to the next rank
      (``dkv_rotater``, a permute), and the buffer the previous rank's arrive in: 8 + 8.

    Run eagerly (``eager``, no ``torch.compile``), the step also keeps the zero-filled FP32
    ``grad_key`` and ``grad_value`` (8) and ``key.contiguous()`` / ``value.contiguous()``
    copies of the saved transposed keys and values (4) until the second step rebinds them;
    a compiled block frees each buffer after its last use. The steps' own 16-bit gradients
    are the kernel's outputs, as without CP. Forward holds less (the same gather, an FP32
    merge of the output) and frees it before backward, so this is the ring's peak: one
    layer at a time in every recompute mode (under full recompute, the recomputed layer's).

    Args:
        geo: Model geometry.
        tp: TP degree.
        cp: CP degree ``c``.
        micro_batch: Sequences per micro-batch ``b``.
        seq_len: Tokens per sequence ``s``.
        eager: The block runs eagerly.
    """
    t, c, b, s = (np.asarray(x, dtype=np.float64) for x in (tp, cp, micro_batch, seq_len))
    elements = b * s / c * geo.q_dim / t
    per_element = 4.0 * c + RING_BACKWARD_BYTES + (RING_EAGER_BYTES if eager else 0.0)
    return np.where(c > 1, per_element * elements, 0.0)
