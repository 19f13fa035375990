"""Shape arithmetic the strategies share: parameter, gradient and activation bytes.

An MoE model's parameters split in two: the dense ones (attention, norms, the dense layers'
MLPs, shared experts, routers, embeddings) live on every data-parallel replica and reduce
their gradients over the ``dp`` group; the routed experts are spread over ``ep`` ranks (and
split ``etp`` ways) and reduce over the ranks holding the same experts, the ``edp`` group
(Megatron-Core's expert data parallelism).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricui.api import CommOp, geometry

if TYPE_CHECKING:
    from fabricui.api import Layout, ModelShape

#: DDP / ZeRO gradient bucket size (PyTorch DDP's default ``bucket_cap_mb=25``) [bytes].
BUCKET_BYTES = 25 * 2**20


def total_params(model: ModelShape) -> float:
    """All parameters of the model [count]."""
    return model.params_B * 1e9


def expert_params(model: ModelShape) -> float:
    """Parameters of the routed experts of every MoE layer [count] (0 for a dense model)."""
    if not model.experts:
        return 0.0
    geo = geometry(model)
    return float(geo.moe_layers * geo.experts * geo.expert_params)


def dense_params(model: ModelShape, layout: Layout | None = None) -> float:
    """Parameters reduced and gathered over the ``dp`` group: all but the routed experts
    when expert parallelism spreads them (``ep > 1``), else all of them."""
    if layout is not None and layout.ep <= 1:
        return total_params(model)
    return max(0.0, total_params(model) - expert_params(model))


def stage_param_bytes(model: ModelShape, layout: Layout, grads: bool = False) -> float:
    """Bytes of the dense parameters one GPU of a TP x PP shard holds (``grads``: of their
    gradients as the data-parallel reduction moves them)."""
    per = layout.wire_grad_bytes if grads else layout.dtype_bytes
    return dense_params(model, layout) * per / (layout.tp * layout.pp)


def stage_expert_bytes(model: ModelShape, layout: Layout, grads: bool = False) -> float:
    """Bytes of the routed experts one GPU holds apart from the dense parameters:
    ``1 / (ep x etp)`` of a stage's (0 without expert parallelism)."""
    if layout.ep <= 1:
        return 0.0
    per = layout.wire_grad_bytes if grads else layout.dtype_bytes
    return expert_params(model) * per / (layout.ep * layout.expert_tp * layout.pp)


def layer_param_bytes(model: ModelShape, layout: Layout) -> float:
    """Bytes of one layer's TP shard of the dense parameters, embeddings spread evenly."""
    return dense_params(model, layout) * layout.dtype_bytes / (model.layers * layout.tp)


def layer_expert_bytes(model: ModelShape, layout: Layout) -> float:
    """Bytes of one layer's share of the routed experts on one GPU."""
    return stage_expert_bytes(model, layout) * layout.pp / model.layers


def stage_layers(model: ModelShape, layout: Layout) -> float:
    """Transformer layers per pipeline stage."""
    return model.layers / layout.pp


def deferred_sync(layout: Layout) -> bool:
    """True when the framework's pipeline holds FSDP's gradients unsharded until a stage's
    last micro-batch and reduces them after its backward (``Layout.pp_defers_fsdp_sync``
    on a pipeline of two stages or more)."""
    return layout.pp_defers_fsdp_sync and layout.pp > 1


def micro_batch(layout: Layout) -> float:
    """Sequences per micro-batch: global batch / (dp * micro-batches)."""
    return layout.global_batch / (layout.dp * layout.microbatches)


def activation_bytes(model: ModelShape, layout: Layout) -> float:
    """One micro-batch's hidden-state tensor on one context-parallel rank,
    ``b * (s / cp) * h * dtype_bytes`` [bytes]."""
    tokens = micro_batch(layout) * layout.seq_len / max(1, layout.cp)
    return tokens * model.hidden * layout.dtype_bytes


def kv_bytes(model: ModelShape, layout: Layout, repeated: bool = False) -> float:
    """Keys and values of one micro-batch's sequence chunk on one TP rank,
    ``2 * b * (s / cp) * kv_dim / tp * dtype_bytes`` (key/value heads replicate when there
    are fewer than ``tp``; ``repeated``: at the query heads, ``heads / tp``, as torchtitan
    repeats them before attention) [bytes]."""
    head_dim = model.head_dim or model.hidden // max(1, model.heads)
    heads = model.heads if repeated else model.kv_heads
    kv_heads = max(heads / layout.tp, 1.0)
    tokens = micro_batch(layout) * layout.seq_len / max(1, layout.cp)
    return 2 * tokens * kv_heads * head_dim * layout.dtype_bytes


def bucket_bytes(layout: Layout, model: ModelShape | None = None) -> float:
    """Bytes of one gradient bucket: Megatron's ``bucket_params`` parameters at the wire
    width (``max(40M, 1M x dp)`` parameters there); one layer's (``bucket_params < 0``:
    PyTorch FSDP moves a wrapped transformer block at a time, also in ``SHARD_GRAD_OP``);
    else PyTorch DDP's 25 MiB."""
    if layout.bucket_params > 0:
        params = max(layout.bucket_params, 1e6 * layout.dp * layout.cp)
        return params * layout.wire_grad_bytes
    if layout.bucket_params < 0 and model is not None:
        return stage_param_bytes(model, layout, True) / stage_layers(model, layout)
    return float(BUCKET_BYTES)


def n_buckets(size_bytes: float, bucket: float = BUCKET_BYTES) -> int:
    """Gradient buckets of at most ``bucket`` bytes that hold ``size_bytes`` (at least 1)."""
    return max(1, -int(-size_bytes // bucket))


def bucketed_gradients(
    strategy: str,
    collective: str,
    grad_bytes: float,
    layout: Layout,
    group: str = "dp",
    model: ModelShape | None = None,
) -> CommOp:
    """``collective`` over ``group`` once per gradient bucket, overlapped with backward (how
    DDP all-reduces and ZeRO reduce-scatters gradients)."""
    bucket = bucket_bytes(layout, model)
    buckets = n_buckets(grad_bytes, bucket)
    verb = collective.replace("_", "-")
    width = "FP32 " if layout.wire_grad_bytes >= 4 else ""
    what = "expert " if group == "edp" else ""
    return CommOp(
        strategy=strategy,
        collective=collective,
        group=group,
        size_bytes=grad_bytes / buckets,
        count=buckets,
        overlappable=True,
        note=f"{width}{what}gradient {verb}, "
        + ("one per layer" if layout.bucket_params < 0 else f"{bucket / 2**20:.0f} MiB buckets"),
        phase="backward",
    )


def gradient_operations(
    strategy: str, collective: str, model: ModelShape, layout: Layout
) -> list[CommOp]:
    """Bucketed gradient reduction of the dense parameters over ``dp`` and, for an MoE
    model, of the experts over ``edp`` (when more than one rank holds them)."""
    dense = stage_param_bytes(model, layout, True)
    ops = [bucketed_gradients(strategy, collective, dense, layout, "dp", model)]
    experts = stage_expert_bytes(model, layout, True)
    if experts > 0 and layout.expert_dp > 1:
        ops.append(bucketed_gradients(strategy, collective, experts, layout, "edp", model))
    return ops
