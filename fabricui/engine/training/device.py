"""What one GPU sustains for training kernels, from its hwdb record, the precision, the
attention kernel the framework runs and the board's power limit.

Every figure comes from the GPU's record (``fabricui/model/records.py``: peaks, GEMM
efficiency and per-call overhead at 16-bit and FP8, HBM bandwidth and its achievable
fraction, SM count, power limit) and from the attention kernel's record
(``KernelSpec``: forward and backward efficiency by sequence length); a record that lacks
one gets the default below, and the plan says so.

A power limit below the board's own slows every compute-bound kernel with the clock:
dynamic power goes as ``C V^2 f`` and the voltage tracks the clock along the DVFS curve,
so power goes about as ``f^3`` and the clock a capped board holds is
``(cap / limit)^(1/3)`` of the one it holds at its own limit (an upper bound: the static
part of the power does not scale). Memory-bound kernels keep their speed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.engine.constants import DEFAULT_HBM_EFFICIENCY
from fabricui.engine.training.legacy import peak_TFLOPS
from fabricui.errors import EngineError
from fabricui.vocabulary import FP8_ATTENTION_FORMAT_OF, PRECISIONS

if TYPE_CHECKING:
    from fabricui.model import GpuSpec, KernelSpec

#: Bytes per element of an NVFP4 GEMM operand: 4 bits and one FP8 scale per 16 elements.
FP4_INPUT_BYTES = 0.5 + 1.0 / 16
#: GEMM efficiency assumed for a GPU whose record has none: the lowest of the sourced
#: figures (B200 0.72; H100 0.76, A100 0.80).
DEFAULT_GEMM_EFFICIENCY = 0.72
#: Per-GEMM overhead assumed when a record has none: H100's 9 us (its hwdb note) [us].
DEFAULT_GEMM_OVERHEAD_US = 9.0
#: Fused-attention efficiency assumed when a record has none (FlashAttention-2 on A100 and
#: cuDNN on H100 bracket it: 0.5-0.7).
DEFAULT_ATTENTION_EFFICIENCY = 0.6
#: FP8 GEMM efficiency relative to the 16-bit one when a record has none: H100's measured
#: 0.709 / 0.803 of the two peaks (Stas Bekman's MAMF table, ml-engineering).
DEFAULT_FP8_GEMM_RATIO = 0.883
#: Precisions whose GEMMs need their own tensor peak: (hwdb field, name of the format, the
#: parts that have tensor cores for it). Without a peak a plan refuses the precision rather
#: than price it at another one's rate under its name.
LOW_PRECISION_PEAKS = {
    "fp8": ("fp8_dense_TFLOPS", "FP8", "NVIDIA Ada and Hopper on, AMD CDNA3 on"),
    "fp4": ("fp4_dense_TFLOPS", "FP4", "NVIDIA Blackwell on, AMD CDNA4 on"),
}
#: Parts a refusal names at most.
NAMED_PARTS_MAX = 16
#: A kernel's head-dimension table as the device keeps it: (head dim, factor), increasing.
HeadDimTable = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Device:
    """The throughputs a training step's kernels see on one GPU."""

    name: str
    """GPU id."""
    peak_flops: float
    """Dense tensor peak of the GEMM precision [FLOP/s]."""
    half_flops: float
    """Dense BF16/FP16 peak, which attention's efficiencies are quoted against (in FP8 too,
    its ``attention_fp8_*`` factors scale them) [FLOP/s]."""
    gemm_efficiency: float
    """Sustained fraction of ``peak_flops`` of a large square GEMM, wave quantization included."""
    gemm_overhead_s: float
    """Fixed time per GEMM call [s]."""
    sms: int | None
    """SMs (GEMM tiles run in waves of this many), None: no wave quantization."""
    attention_efficiency: float
    """Fraction of ``half_flops`` a fused attention kernel's forward sustains at long
    sequences."""
    hbm_Bps: float
    """Achievable memory bandwidth [bytes/s]."""
    memory_bytes: float
    """HBM capacity [bytes]."""
    gemm_input_bytes: float
    """Bytes per GEMM input element (1 under FP8, else 2)."""
    attention_bwd_efficiency: float | None = None
    """The same for the backward kernel; None: as the forward."""
    attention_half_seq: float = 0.0
    """Sequence length at which the attention kernel runs at half its long-sequence rate
    [tokens]; 0: no dependence on the sequence."""
    attention_fwd_head_dim_scale: HeadDimTable = ()
    """The forward attention kernel's throughput by query/key head dimension relative to
    head dim 128 (``KernelSpec.fwd_head_dim_scale``): (head dim, factor) pairs, head dims
    increasing; empty: the same at every head dimension."""
    attention_bwd_head_dim_scale: HeadDimTable = ()
    """The same for the backward kernel."""
    attention_window_fwd: HeadDimTable = ()
    """The forward attention kernel's efficiency on a sliding-window layer by window
    (``KernelSpec.window_fwd_efficiency``): (window, efficiency) pairs, windows increasing;
    empty: windowed layers run at the causal figures."""
    attention_window_bwd: HeadDimTable = ()
    """The same for the backward kernel."""
    attention_fp8_fwd: HeadDimTable = ()
    """With attention in FP8: the forward kernel's throughput over its 16-bit one by head
    dim (``KernelSpec.fp8_fwd_scale`` for the recipe's format); empty: 16-bit attention
    (or no FP8 figure)."""
    attention_fp8_bwd: HeadDimTable = ()
    """The same for the backward kernel."""
    attention_fp8_window_fwd: HeadDimTable = ()
    """With attention in FP8: the forward kernel's throughput on a sliding-window layer over
    its 16-bit window figure, by window (``KernelSpec.fp8_window_fwd_scale``); empty: the
    16-bit window figure."""
    attention_fp8_window_bwd: HeadDimTable = ()
    """The same for the backward kernel."""
    clock_scale: float = 1.0
    """Compute-bound throughput relative to the microbenchmark figures: the GPU's
    sustained efficiency through a training step, times the clock a lower power cap
    leaves."""
    half_gemm_efficiency: float | None = None
    """Efficiency of 16-bit GEMMs when ``peak_flops`` is the FP8 one (the output layer and
    the router stay in BF16 under FP8); None: ``gemm_efficiency``."""

    @property
    def bwd_attention_efficiency(self) -> float:
        """Backward attention efficiency at long sequences."""
        if self.attention_bwd_efficiency is None:
            return self.attention_efficiency
        return self.attention_bwd_efficiency


def power_clock_scale(limit_W: float | None, cap_W: float | None) -> float:
    """Clock a board capped at ``cap_W`` holds relative to its own limit ``limit_W``:
    ``min(1, (cap / limit)^(1/3))`` (module docstring); 1 when either is unknown."""
    if not limit_W or not cap_W:
        return 1.0
    return min(1.0, (cap_W / limit_W) ** (1.0 / 3.0))


def make_device(
    gpu: GpuSpec,
    precision: str = "bf16",
    kernel: KernelSpec | None = None,
    power_W: float | None = None,
    software_efficiency: float = 1.0,
    fp8_attention: str | None = None,
    windowed: bool = False,
) -> tuple[Device, list[str]]:
    """The device a GPU record and a precision describe, and what had to be assumed.

    Args:
        gpu: The GPU record.
        precision: ``bf16``, ``fp16``, ``fp8`` or ``fp4``.
        kernel: The fused attention kernel the framework runs on this GPU's architecture
            (None: the record's ``attention_efficiency``).
        power_W: The board's power cap when below its own limit [W] (None: its limit).
        software_efficiency: The framework's share of the reference software's compute
            throughput (``FrameworkSpec.compute_efficiency``).
        fp8_attention: The FP8 recipe attention runs under (``fp8_attention_tables``);
            None: attention in 16-bit.
        windowed: The model has sliding-window layers (what FP8 figures they lack is
            said too).

    Returns:
        (device, assumptions): one sentence per figure the record lacks.

    Raises:
        EngineError: Unknown precision, the GPU has no published BF16 peak, no tensor
            peak for an FP8 or FP4 precision (``missing_peak``), or a power cap that is not
            a positive number.
    """
    if precision not in PRECISIONS:
        raise EngineError(f"precision must be one of {', '.join(PRECISIONS)} (got {precision!r})")
    missing = missing_peak(gpu, precision)
    if missing:
        raise EngineError(missing)

    notes: list[str] = []
    half = peak_TFLOPS(gpu) * 1e12
    figures = {}
    for name, default, unit in (
        ("gemm_efficiency", DEFAULT_GEMM_EFFICIENCY, ""),
        ("gemm_overhead_us", DEFAULT_GEMM_OVERHEAD_US, " us"),
        ("hbm_efficiency", DEFAULT_HBM_EFFICIENCY, ""),
    ):
        value = getattr(gpu, name)
        if value is None:
            value = default
            notes.append(f"{gpu.id} has no {name} in hwdb: assumed {default:g}{unit}")
        figures[name] = float(value)
    peak, efficiency, half_efficiency = half, figures["gemm_efficiency"], None
    if precision == "fp4":
        return _fp4_device(
            gpu, precision, kernel, power_W, software_efficiency, fp8_attention, windowed
        )
    if precision == "fp8" and gpu.fp8_dense_TFLOPS:
        peak = gpu.fp8_dense_TFLOPS * 1e12
        half_efficiency = efficiency
        if gpu.fp8_gemm_efficiency is not None:
            efficiency = float(gpu.fp8_gemm_efficiency)
        else:
            efficiency = efficiency * DEFAULT_FP8_GEMM_RATIO
            notes.append(
                f"{gpu.id} has no fp8_gemm_efficiency in hwdb: assumed "
                f"{DEFAULT_FP8_GEMM_RATIO:g} of its 16-bit one (H100's ratio)"
            )
    attention_fwd, attention_bwd, half_seq = _attention(gpu, kernel, notes)
    fwd_dims, bwd_dims = _head_dim_tables(kernel)
    fwd_windows, bwd_windows = _window_tables(kernel)
    fp8_tables = fp8_attention_tables(kernel, fp8_attention, notes, windowed)
    if power_W is not None and not power_W > 0:
        raise EngineError(f"power cap must be a positive number of watts (got {power_W})")
    scale = power_clock_scale(gpu.power_W, power_W)
    sustained = gpu.sustained_efficiency
    if sustained is not None and sustained < 1.0:
        notes.append(
            f"{gpu.id} sustains {sustained:.0%} of its GEMM and attention microbenchmarks "
            "through a training step (hwdb sustained_efficiency, fitted to published runs)"
        )
    if power_W and not gpu.power_W:
        notes.append(f"{gpu.id} has no power_W in hwdb: the {power_W:g} W cap is not priced")
    elif scale < 1.0:
        notes.append(
            f"power capped at {power_W:g} W of {gpu.power_W:g} W: compute at "
            f"{scale:.0%} clock ((cap / limit)^(1/3))"
        )
    device = Device(
        name=gpu.id,
        peak_flops=peak,
        half_flops=half,
        gemm_efficiency=efficiency,
        gemm_overhead_s=figures["gemm_overhead_us"] * 1e-6,
        sms=gpu.sms,
        attention_efficiency=attention_fwd,
        attention_bwd_efficiency=attention_bwd,
        attention_half_seq=half_seq,
        attention_fwd_head_dim_scale=fwd_dims,
        attention_bwd_head_dim_scale=bwd_dims,
        attention_window_fwd=fwd_windows,
        attention_window_bwd=bwd_windows,
        attention_fp8_fwd=fp8_tables[0],
        attention_fp8_bwd=fp8_tables[1],
        attention_fp8_window_fwd=fp8_tables[2],
        attention_fp8_window_bwd=fp8_tables[3],
        hbm_Bps=gpu.hbm_bw_GBps * 1e9 * figures["hbm_efficiency"],
        memory_bytes=gpu.memory_GB * 1e9,
        gemm_input_bytes=1.0 if precision == "fp8" else 2.0,
        clock_scale=scale * (sustained if sustained is not None else 1.0) * software_efficiency,
        half_gemm_efficiency=half_efficiency,
    )
    return device, notes


def _fp4_device(
    gpu: GpuSpec,
    precision: str,
    kernel: KernelSpec | None,
    power_W: float | None,
    software_efficiency: float,
    fp8_attention: str | None = None,
    windowed: bool = False,
) -> tuple[Device, list[str]]:
    """NVFP4 GEMMs: the FP4 peak at the FP8 GEMM efficiency (no FP4 GEMM measurement is
    published; assumed and said), 4-bit operands with their 16-element scales.

    Raises:
        EngineError: The GPU has no FP4 tensor peak in hwdb, or no FP8 one.
    """
    fp4_TFLOPS = gpu.fp4_dense_TFLOPS
    if not fp4_TFLOPS:
        raise EngineError(missing_peak(gpu, "fp4") or f"{gpu.id} has no FP4 tensor peak")
    base, notes = make_device(
        gpu, "fp8", kernel, power_W, software_efficiency, fp8_attention, windowed
    )
    notes.append(
        f"{gpu.id}: NVFP4 GEMMs at the FP8 GEMM efficiency ({base.gemm_efficiency:.2f}) of "
        "the FP4 peak (no FP4 GEMM measurement in hwdb)"
    )

    device = dataclasses.replace(
        base, peak_flops=fp4_TFLOPS * 1e12, gemm_input_bytes=FP4_INPUT_BYTES
    )
    return device, notes


def missing_peak(gpu: GpuSpec, precision: str, parts: Sequence[str] = ()) -> str | None:
    """Why ``gpu`` cannot run ``precision`` GEMMs: its record has no tensor peak for that
    format (``LOW_PRECISION_PEAKS``), one sentence naming the GPU, the hwdb field and the
    parts that have one; None when it has one or the precision needs none.

    Args:
        gpu: The GPU record.
        precision: A ``PRECISIONS`` name.
        parts: Ids of the database's parts that have the peak, to name too.
    """
    if precision not in LOW_PRECISION_PEAKS:
        return None
    field, name, generations = LOW_PRECISION_PEAKS[precision]
    if getattr(gpu, field):
        return None
    named = ", ".join(parts[:NAMED_PARTS_MAX])
    if len(parts) > NAMED_PARTS_MAX:
        named += f" and {len(parts) - NAMED_PARTS_MAX} more"
    where = f"; in hwdb: {named}" if named else ""
    return (
        f"{gpu.id} has no {name} tensor peak in hwdb ({field}): precision {precision} needs "
        f"one ({generations}{where})"
    )


def _attention(
    gpu: GpuSpec, kernel: KernelSpec | None, notes: list[str]
) -> tuple[float, float | None, float]:
    """(forward efficiency, backward efficiency or None, half-rate sequence) of the fused
    attention kernel: the kernel record's, else the GPU record's one figure."""
    if kernel is not None:
        return kernel.fwd_efficiency, kernel.bwd_efficiency, kernel.half_seq
    value = gpu.attention_efficiency
    if value is None:
        value = DEFAULT_ATTENTION_EFFICIENCY
        notes.append(
            f"{gpu.id} has no attention_efficiency in hwdb: assumed "
            f"{DEFAULT_ATTENTION_EFFICIENCY:g}"
        )
    return float(value), None, 0.0


def _head_dim_tables(kernel: KernelSpec | None) -> tuple[HeadDimTable, HeadDimTable]:
    """(forward, backward) head-dimension tables of the attention kernel; none for a GPU
    record's one figure (quoted at head dim 128 alone)."""
    if kernel is None:
        return (), ()
    return _pairs(kernel.fwd_head_dim_scale), _pairs(kernel.bwd_head_dim_scale)


def _window_tables(kernel: KernelSpec | None) -> tuple[HeadDimTable, HeadDimTable]:
    """(forward, backward) sliding-window efficiency tables of the attention kernel; none
    for a GPU record's one figure."""
    if kernel is None:
        return (), ()
    return _pairs(kernel.window_fwd_efficiency), _pairs(kernel.window_bwd_efficiency)


def fp8_attention_tables(
    kernel: KernelSpec | None, recipe: str | None, notes: list[str], windowed: bool = False
) -> tuple[HeadDimTable, HeadDimTable, HeadDimTable, HeadDimTable]:
    """(forward, backward, window forward, window backward) FP8-over-16-bit tables of the
    attention kernel when attention runs in FP8 under ``recipe``; what is missing is said
    in ``notes`` and runs at the 16-bit figures (nothing is assumed in its place).

    Args:
        kernel: The fused attention kernel's record (None: the GPU record's one figure).
        recipe: The FP8 recipe attention runs under (``delayed``, ``current``, ``mxfp8``
            select a format, ``vocabulary.FP8_ATTENTION_FORMAT_OF``); None: 16-bit
            attention, no tables.
        notes: Assumptions, appended to.
        windowed: The model has sliding-window layers: say which window figures the
            kernel lacks too.
    """
    empty: HeadDimTable = ()
    if recipe is None:
        return empty, empty, empty, empty
    form = FP8_ATTENTION_FORMAT_OF.get(recipe)
    if form is None:
        notes.append(
            f"FP8 attention under the {recipe} recipe: no fused FP8 attention runs under it "
            "(Transformer Engine's runs under delayed, current and MXFP8 scaling): priced "
            "in 16-bit"
        )
        return empty, empty, empty, empty
    names = ("fp8_fwd_scale", "fp8_bwd_scale", "fp8_window_fwd_scale", "fp8_window_bwd_scale")
    if kernel is None or not any(form in getattr(kernel, name) for name in names):
        what = kernel.id if kernel is not None else "the GPU's attention figure"
        notes.append(f"{what} has no {form} attention figure in hwdb: priced in 16-bit")
        return empty, empty, empty, empty
    tables = tuple(_pairs(getattr(kernel, name).get(form, {})) for name in names)
    parts = ["forward", "backward"]
    if windowed and kernel.window_fwd_efficiency:
        parts += ["sliding-window forward", "sliding-window backward"]
    missing = [part for part, table in zip(parts, tables) if not table]
    if missing:
        notes.append(
            f"{kernel.id} has no {form} figure in hwdb for the {' and '.join(missing)}: "
            "priced in 16-bit"
        )
    return tables[0], tables[1], tables[2], tables[3]


def _pairs(table: dict[int, float]) -> HeadDimTable:
    """A head-dimension table's entries, head dims increasing."""
    return tuple((float(d), float(f)) for d, f in sorted(table.items()))
