"""fabricui plugin: PowerSGD-compressed data parallelism (rank-r P and Q all-reduces).

PowerSGD (Vogels et al., NeurIPS 2019, https://arxiv.org/abs/1905.13727) replaces DDP's
gradient all-reduce with a low-rank one. Each weight matrix's gradient ``M`` (n x m, after
error feedback) is approximated by ``P @ Q.T`` with one step of power iteration:
``P = M @ Q`` (n x r) is all-reduced and orthogonalised, then ``Q = M.T @ P`` (m x r) is
all-reduced. Only ``r * (n + m)`` numbers cross the network instead of ``n * m``.

This models PyTorch's DDP communication hook ``powerSGD_hook``
(``torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook``), which runs per DDP
bucket: per bucket one all-reduce of every P, one of every Q, and one of the tensors it
does not compress (1-D tensors, and matrices where compression saves less than
``min_compression_rate``). The strategy returns those all-reduces; the engine prices them
on the layout's data-parallel group, as it does DDP's.

Use it as the data-parallel flavour of a plan::

    fabricui plan -m llama3-70b --tp 8 --pp 2 --dp-strategy powersgd
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, MemoryTerm, Strategy, hookimpl

if TYPE_CHECKING:
    from fabricui.api import ModelShape

__version__ = "0.1.0"

#: DDP's gradient bucket (PyTorch ``bucket_cap_mb=25``); the hook runs once per bucket [bytes].
BUCKET_BYTES = 25 * 2**20
#: PyTorch's default ``min_compression_rate``: a matrix is compressed only when
#: ``n * m > min_compression_rate * r * (n + m)``.
MIN_COMPRESSION_RATE = 2.0


@dataclass(frozen=True)
class Matrix:
    """Gradient matrices of one kind that one GPU holds, as PowerSGD views them.

    PowerSGD flattens a gradient to ``(tensor.shape[0], -1)``: a linear layer's weight is
    ``(out_features, in_features)``, an embedding's ``(vocab, hidden)``.
    """

    what: str
    """Which weight (``attention q``, ``mlp down``, ``embedding``)."""
    rows: int
    """Rows ``n`` on one GPU (after tensor-parallel sharding)."""
    cols: int
    """Columns ``m`` on one GPU (after tensor-parallel sharding)."""
    count: float
    """How many such matrices one GPU holds (fractional: embeddings averaged over stages)."""


@dataclass(frozen=True)
class Traffic:
    """What PowerSGD all-reduces per step on one GPU, in elements."""

    p_elements: float
    """Elements of every P (``n * r`` per compressed matrix)."""
    q_elements: float
    """Elements of every Q (``m * r`` per compressed matrix)."""
    uncompressed_elements: float
    """Elements all-reduced as they are (1-D tensors and matrices not worth compressing)."""
    gradient_elements: float
    """Every gradient element the GPU holds (what plain DDP would all-reduce)."""


def mlp_matrices(model: ModelShape) -> int:
    """Weight matrices per MLP: 3 (gated, SwiGLU: gate, up, down) or 2 (up, down).

    ``ModelShape`` does not say which; this picks whichever makes the layer shapes add up
    closest to ``params_B``.
    """
    return min((2, 3), key=lambda k: abs(shape_params(model, k) - model.params_B * 1e9))


def shape_params(model: ModelShape, mlp: int) -> float:
    """Parameters of a dense decoder with ``mlp`` matrices per MLP [count].

    Per layer: q and o (``h x h``), k and v (``h x kv_heads * head_dim``), the MLP
    (``mlp x h x ffn``) and two norm weights (``2 h``); plus untied input embedding and
    output head (``2 x vocab x h``) and the final norm (``h``). No biases (LLaMA-style).
    """
    h, kv = model.hidden, model.kv_heads * model.hidden // model.heads
    layer = 2 * h * h + 2 * h * kv + mlp * h * model.ffn_hidden + 2 * h
    return float(model.layers * layer + 2 * model.vocab * h + h)


def gradient_tensors(model: ModelShape, layout: Layout) -> tuple[list[Matrix], float]:
    """The gradient matrices one GPU holds, and its 1-D gradient elements.

    Megatron sharding: q, k, v and the MLP's gate/up are column-parallel (rows / tp), o
    and down row-parallel (columns / tp), embedding and head vocabulary-parallel
    (rows / tp); norm weights are replicated. A stage holds ``layers / pp`` layers; the
    embedding, head and final norm are spread evenly over the stages (an average, as
    fabricui's built-in strategies count them).

    Args:
        model: A dense model shape.
        layout: The layout (``tp``, ``pp``).

    Returns:
        (matrices, 1-D elements) per GPU.
    """
    tp, h, ffn = layout.tp, model.hidden, model.ffn_hidden
    head_dim = h // model.heads
    kv_rows = max(1, model.kv_heads // tp) * head_dim  # KV heads are replicated past tp > kv
    layers = model.layers / layout.pp
    mlp_in = ("mlp gate", "mlp up") if mlp_matrices(model) == 3 else ("mlp up",)
    matrices = [
        Matrix("attention q", h // tp, h, layers),
        Matrix("attention k", kv_rows, h, layers),
        Matrix("attention v", kv_rows, h, layers),
        Matrix("attention o", h, h // tp, layers),
        *(Matrix(what, ffn // tp, h, layers) for what in mlp_in),
        Matrix("mlp down", h, ffn // tp, layers),
        Matrix("embedding", model.vocab // tp, h, 1 / layout.pp),
        Matrix("output head", model.vocab // tp, h, 1 / layout.pp),
    ]
    vectors = layers * 2 * h + h / layout.pp
    return matrices, vectors


def compresses(rows: int, cols: int, rank: int, min_rate: float = MIN_COMPRESSION_RATE) -> bool:
    """PyTorch's ``_should_compress``: ``n * m > min_rate * r * (n + m)``."""
    return rows * cols > min_rate * min(rows, cols, rank) * (rows + cols)


def powersgd_traffic(
    model: ModelShape, layout: Layout, rank: int, min_rate: float = MIN_COMPRESSION_RATE
) -> Traffic:
    """Elements PowerSGD all-reduces per step on one GPU.

    Each compressed ``n x m`` matrix sends ``P`` (``n * r'``) and ``Q`` (``m * r'``),
    ``r' = min(n, m, r)``; the others and the 1-D tensors go uncompressed.

    Args:
        model: A dense model shape.
        layout: The layout.
        rank: PowerSGD's ``matrix_approximation_rank`` ``r``.
        min_rate: ``min_compression_rate``.
    """
    matrices, vectors = gradient_tensors(model, layout)
    p = q = 0.0
    uncompressed = vectors
    for m in matrices:
        r = min(m.rows, m.cols, rank)
        if compresses(m.rows, m.cols, rank, min_rate):
            p += m.count * m.rows * r
            q += m.count * m.cols * r
        else:
            uncompressed += m.count * m.rows * m.cols
    total = vectors + sum(m.count * m.rows * m.cols for m in matrices)
    return Traffic(p, q, uncompressed, total)


class PowerSGD(Strategy):
    """DDP with PyTorch's ``powerSGD_hook`` at rank 1 (its default).

    Per step (gradient accumulation: once per optimizer step), on the data-parallel group:
    ``buckets`` all-reduces of P and as many of Q (the hook's per-bucket P and Q
    all-reduces, every bucket's share taken as equal), and one all-reduce of the
    uncompressed rest (the hook issues one per bucket that holds any; they are small, so
    one call understates only latency). All overlap the backward pass, as DDP's buckets
    do. Not modelled: the warm-up steps before ``start_powerSGD_iter`` (plain all-reduce),
    the compression's own matrix multiplies, and MoE models (not applicable).
    """

    name: ClassVar[str] = "powersgd"
    description: ClassVar[str] = "PowerSGD data parallel: rank-1 P and Q all-reduces per bucket"
    rank: ClassVar[int] = 1
    """``matrix_approximation_rank``."""

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs two or more data-parallel replicas of a dense model."""
        return layout.dp > 1 and model.experts == 0

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """P and Q all-reduces per bucket, then the uncompressed rest.

        Args:
            model: A dense model shape.
            layout: The layout.
        """
        traffic = powersgd_traffic(model, layout, self.rank)
        size = layout.dtype_bytes
        buckets = max(1, math.ceil(traffic.gradient_elements * size / BUCKET_BYTES))
        mib = BUCKET_BYTES // 2**20
        ops = [
            CommOp(
                strategy=self.name,
                collective="all_reduce",
                group="dp",
                size_bytes=elements * size / buckets,
                count=buckets,
                overlappable=True,
                note=f"PowerSGD {factor} (rank {self.rank}), one per {mib} MiB bucket",
            )
            for factor, elements in (("P", traffic.p_elements), ("Q", traffic.q_elements))
        ]
        if traffic.uncompressed_elements > 0:
            ops.append(
                CommOp(
                    strategy=self.name,
                    collective="all_reduce",
                    group="dp",
                    size_bytes=traffic.uncompressed_elements * size,
                    count=1,
                    overlappable=True,
                    note="uncompressed: norm weights and matrices not worth compressing",
                )
            )
        return ops

    def memory(self, model: ModelShape, layout: Layout) -> list[MemoryTerm]:
        """What the hook keeps per GPU: the error-feedback residual (a copy of every
        gradient element this GPU holds) and the P and Q matrices it reuses between steps
        (``use_error_feedback`` and ``warm_start``, the hook's defaults).

        Args:
            model: A dense model shape.
            layout: The layout.
        """
        traffic = powersgd_traffic(model, layout, self.rank)
        size = layout.dtype_bytes
        return [
            MemoryTerm(self.name, "error feedback", traffic.gradient_elements * size),
            MemoryTerm(self.name, "P and Q", (traffic.p_elements + traffic.q_elements) * size),
        ]


class PowerSGDRank4(PowerSGD):
    """PowerSGD at rank 4: a closer approximation for four times rank 1's traffic."""

    name: ClassVar[str] = "powersgd-r4"
    description: ClassVar[str] = "PowerSGD data parallel: rank-4 P and Q all-reduces per bucket"
    rank: ClassVar[int] = 4


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register PowerSGD at ranks 1 and 4.

    Args:
        register: The host's callback.
    """
    register(PowerSGD())
    register(PowerSGDRank4())
