"""What one GPU sustains for training kernels, from its hwdb record and the precision.

Every figure comes from the GPU's record (``fabricui/model/records.py``: peak, GEMM
efficiency and per-call overhead, fused-attention efficiency, HBM bandwidth and its
achievable fraction, SM count); a record that lacks one gets the default below, and the
plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.model import GpuSpec

#: Precisions the training model knows (fp8: GEMMs in FP8, everything else in BF16).
PRECISIONS = ("bf16", "fp16", "fp8")
#: GEMM efficiency assumed for a GPU whose record has none: the lowest of the sourced
#: figures (B200 0.72; H100 0.76, A100 0.80).
DEFAULT_GEMM_EFFICIENCY = 0.72
#: Per-GEMM overhead assumed when a record has none: H100's 9 us (its hwdb note) [us].
DEFAULT_GEMM_OVERHEAD_US = 9.0
#: Fused-attention efficiency assumed when a record has none (FlashAttention-2 on A100 and
#: cuDNN on H100 bracket it: 0.6-0.7).
DEFAULT_ATTENTION_EFFICIENCY = 0.6
#: Achievable fraction of HBM bandwidth assumed when a record has none (A100's measured 0.84).
DEFAULT_HBM_EFFICIENCY = 0.84


@dataclass(frozen=True)
class Device:
    """The throughputs a training step's kernels see on one GPU."""

    name: str
    """GPU id."""
    peak_flops: float
    """Dense tensor peak of the GEMM precision [FLOP/s]."""
    half_flops: float
    """Dense BF16/FP16 peak (attention runs in 16-bit even under FP8) [FLOP/s]."""
    gemm_efficiency: float
    """Sustained fraction of the peak of a large square GEMM, wave quantization included."""
    gemm_overhead_s: float
    """Fixed time per GEMM call [s]."""
    sms: int | None
    """SMs (GEMM tiles run in waves of this many), None: no wave quantization."""
    attention_efficiency: float
    """Fraction of ``half_flops`` a fused attention kernel sustains."""
    hbm_Bps: float
    """Achievable memory bandwidth [bytes/s]."""
    memory_bytes: float
    """HBM capacity [bytes]."""
    gemm_input_bytes: float
    """Bytes per GEMM input element (1 under FP8, else 2)."""


def make_device(gpu: GpuSpec, precision: str = "bf16") -> tuple[Device, list[str]]:
    """The device a GPU record and a precision describe, and what had to be assumed.

    Args:
        gpu: The GPU record.
        precision: ``bf16``, ``fp16`` or ``fp8``.

    Returns:
        (device, assumptions): one sentence per figure the record lacks.

    Raises:
        EngineError: Unknown precision, or the GPU has no published BF16 peak.
    """
    if precision not in PRECISIONS:
        raise EngineError(f"precision must be one of {', '.join(PRECISIONS)} (got {precision!r})")
    from fabricui.engine.training.legacy import peak_TFLOPS

    notes: list[str] = []
    half = peak_TFLOPS(gpu) * 1e12
    peak = half
    if precision == "fp8":
        if gpu.fp8_dense_TFLOPS:
            peak = gpu.fp8_dense_TFLOPS * 1e12
        else:
            notes.append(f"{gpu.id} has no FP8 tensor peak in hwdb: FP8 GEMMs priced at BF16 rate")
    figures = {}
    for name, default, unit in (
        ("gemm_efficiency", DEFAULT_GEMM_EFFICIENCY, ""),
        ("gemm_overhead_us", DEFAULT_GEMM_OVERHEAD_US, " us"),
        ("attention_efficiency", DEFAULT_ATTENTION_EFFICIENCY, ""),
        ("hbm_efficiency", DEFAULT_HBM_EFFICIENCY, ""),
    ):
        value = getattr(gpu, name)
        if value is None:
            value = default
            notes.append(f"{gpu.id} has no {name} in hwdb: assumed {default:g}{unit}")
        figures[name] = float(value)
    device = Device(
        name=gpu.id,
        peak_flops=peak,
        half_flops=half,
        gemm_efficiency=figures["gemm_efficiency"],
        gemm_overhead_s=figures["gemm_overhead_us"] * 1e-6,
        sms=gpu.sms,
        attention_efficiency=figures["attention_efficiency"],
        hbm_Bps=gpu.hbm_bw_GBps * 1e9 * figures["hbm_efficiency"],
        memory_bytes=gpu.memory_GB * 1e9,
        gemm_input_bytes=1.0 if precision == "fp8" else 2.0,
    )
    return device, notes
