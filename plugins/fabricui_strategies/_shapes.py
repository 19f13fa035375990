"""Shape arithmetic the strategies share: parameter, gradient and activation bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricui.api import CommOp

if TYPE_CHECKING:
    from fabricui.api import Layout, ModelShape

#: DDP / ZeRO gradient bucket size (PyTorch DDP's default ``bucket_cap_mb=25``) [bytes].
BUCKET_BYTES = 25 * 2**20


def total_params(model: ModelShape) -> float:
    """All parameters of the model [count]."""
    return model.params_B * 1e9


def stage_param_bytes(model: ModelShape, layout: Layout) -> float:
    """Bytes of the parameters one GPU of a TP x PP shard holds (= its gradient bytes)."""
    return total_params(model) * layout.dtype_bytes / (layout.tp * layout.pp)


def layer_param_bytes(model: ModelShape, layout: Layout) -> float:
    """Bytes of one layer's TP shard: parameters spread evenly over layers, embeddings included."""
    return total_params(model) * layout.dtype_bytes / (model.layers * layout.tp)


def stage_layers(model: ModelShape, layout: Layout) -> float:
    """Transformer layers per pipeline stage."""
    return model.layers / layout.pp


def micro_batch(layout: Layout) -> float:
    """Sequences per micro-batch: global batch / (dp * micro-batches)."""
    return layout.global_batch / (layout.dp * layout.microbatches)


def activation_bytes(model: ModelShape, layout: Layout) -> float:
    """One micro-batch's hidden-state tensor on one context-parallel rank,
    ``b * (s / cp) * h * dtype_bytes`` [bytes]."""
    tokens = micro_batch(layout) * layout.seq_len / max(1, layout.cp)
    return tokens * model.hidden * layout.dtype_bytes


def kv_bytes(model: ModelShape, layout: Layout) -> float:
    """Keys and values of one micro-batch's sequence chunk on one TP rank,
    ``2 * b * (s / cp) * kv_dim / tp * dtype_bytes`` (key/value heads replicate when there
    are fewer than ``tp``) [bytes]."""
    head_dim = model.head_dim or model.hidden // max(1, model.heads)
    kv_heads = max(model.kv_heads / layout.tp, 1.0)
    tokens = micro_batch(layout) * layout.seq_len / max(1, layout.cp)
    return 2 * tokens * kv_heads * head_dim * layout.dtype_bytes


def n_buckets(size_bytes: float) -> int:
    """Gradient buckets of at most ``BUCKET_BYTES`` that hold ``size_bytes`` (at least 1)."""
    return max(1, -int(-size_bytes // BUCKET_BYTES))


def bucketed_gradients(strategy: str, collective: str, grad_bytes: float) -> CommOp:
    """``collective`` over the dp group once per gradient bucket, overlapped with backward
    (how DDP all-reduces and ZeRO reduce-scatters gradients)."""
    buckets = n_buckets(grad_bytes)
    verb = collective.replace("_", "-")
    return CommOp(
        strategy=strategy,
        collective=collective,
        group="dp",
        size_bytes=grad_bytes / buckets,
        count=buckets,
        overlappable=True,
        note=f"gradient {verb}, {BUCKET_BYTES // 2**20} MiB buckets",
    )
