"""The fixed-MFU compute of the first planner, kept for ``--mfu`` and the decision table's
old callers: all of a step's FLOPs at one fraction of the dense peak."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.engine.types import Layout
    from fabricui.fabric.fabric import Fabric
    from fabricui.model import GpuSpec, ModelShape

#: The MFU the first planner assumed for every GPU, model and shape (``--mfu`` default then).
DEFAULT_MFU = 0.4


def legacy_flops_per_token(model: ModelShape, seq_len: int | None = None) -> float:
    """Training FLOPs per token (forward + backward): ``6 * N + 6 * L * s * h``.

    ``6 * N`` counts the matrix multiplies of the ``N`` active parameters (2 forward, 4
    backward, Kaplan et al.); ``6 * L * s * h`` is causal self-attention's score and
    value products (``12 * L * s * h`` in PaLM's count, halved for the causal mask).

    Args:
        model: The model shape (``active_params_B`` for MoE).
        seq_len: Tokens per sequence (default: the model's).
    """
    active = model.active_params_B if model.active_params_B is not None else model.params_B
    seq = model.seq_len if seq_len is None else seq_len
    return 6.0 * active * 1e9 + 6.0 * model.layers * seq * model.hidden


def compute_time_us(fabric: Fabric, model: ModelShape, layout: Layout, mfu: float) -> float:
    """One GPU's compute per step [us]: its share of the step's FLOPs at ``mfu`` x peak."""
    flops = layout.global_batch * layout.seq_len * legacy_flops_per_token(model, layout.seq_len)
    flops_per_us = peak_TFLOPS(fabric.gpu) * 1e6 * mfu
    return flops / layout.world / flops_per_us


def peak_TFLOPS(gpu: GpuSpec) -> float:
    """The GPU's dense BF16 peak [TFLOP/s].

    Raises:
        EngineError: The record has none (``bf16_dense_TFLOPS: null``).
    """
    if gpu.bf16_dense_TFLOPS is None:
        raise EngineError(
            f"{gpu.id} has no published BF16 peak (hwdb bf16_dense_TFLOPS: null); "
            "a plan needs one: give it in a --hwdb directory that overrides the GPU record"
        )
    return float(gpu.bf16_dense_TFLOPS)


def pipeline_bubble_us(compute_us: float, stages: int, microbatches: int) -> float:
    """Idle time of a 1F1B pipeline [us]: ``compute * (p - 1) / m``.

    The bubble is then ``(p - 1) / (m + p - 1)`` of compute + bubble.
    """
    return compute_us * (stages - 1) / microbatches


#: Bytes per parameter of mixed-precision Adam: BF16 weights 2 + BF16 gradients 2 + FP32
#: master weights, momentum and variance 12 (ZeRO paper, section 3.1).
STATE_BYTES = {"weights": 2.0, "grads": 2.0, "optimizer": 12.0}
#: Activation bytes per token per layer per unit of hidden size with selective recompute of
#: attention, before tensor-parallel sharding (Korthikanti et al. 2022, "34 s b h").
ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 34.0
#: Share of HBM usable by the job (allocator, CUDA context, NCCL buffers take the rest).


def memory_per_gpu_GB(model: ModelShape, layout: Layout, strategies: Iterable[str]) -> float:
    """Estimated memory per GPU: sharded model states plus in-flight activations [GB].

    Notes:
        states = params / (tp * pp) * (2 + 2 + 12) bytes, with the optimizer states divided
        by dp under ZeRO-1, optimizer + gradients under ZeRO-2, everything under FSDP (by
        the shard group under HSDP); activations = 34 * tokens * hidden * layers / (tp * pp)
        bytes per micro-batch, times the micro-batches in flight (pp under 1F1B).
    """
    names = set(strategies)
    params = model.params_B * 1e9 / (layout.tp * layout.pp)
    shard = layout.dp
    if "hsdp" in names:
        shard = max(1, layout.dp_shard or layout.dp)
    weights, grads, optim = (STATE_BYTES[k] for k in ("weights", "grads", "optimizer"))
    if names & {"fsdp", "hsdp"}:
        weights, grads, optim = weights / shard, grads / shard, optim / shard
    elif "zero2" in names:
        grads, optim = grads / shard, optim / shard
    elif "zero1" in names:
        optim = optim / shard
    states = params * (weights + grads + optim)
    sequences = layout.global_batch / max(1, layout.dp * layout.microbatches)
    tokens = sequences * layout.seq_len
    in_flight = min(layout.pp, layout.microbatches)
    activations = (
        ACTIVATION_BYTES_PER_TOKEN_HIDDEN
        * tokens
        * model.hidden
        * model.layers
        / (layout.tp * layout.pp)
        * in_flight
    )
    return (states + activations) / 1e9
