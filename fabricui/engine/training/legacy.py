"""Fixed-MFU compute (``--mfu``, and the decision table's compute when it has no kernel
model): all of a step's FLOPs at one fraction of the dense peak."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.engine.types import Layout
    from fabricui.fabric.fabric import Fabric
    from fabricui.model import GpuSpec, ModelShape

#: One MFU for every GPU, model and shape, where a fixed fraction is asked for.
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
