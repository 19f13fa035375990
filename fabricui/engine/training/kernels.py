"""Time of the kernels a training step runs: GEMMs, fused attention, memory-bound passes.

Vectorized over numpy arrays (every argument broadcasts), so the layout search prices
thousands of layouts at once.

GEMM model (NVIDIA, "Matrix Multiplication Background User's Guide", tile and wave
quantization): the output is cut into 128 x 128 tiles that run in waves of ``sms`` tiles;
a partial tile or a partial last wave costs a whole one. The device's measured large-GEMM
efficiency already contains the quantization of its 8192^3 measurement, which is divided
out. A GEMM also cannot beat its memory traffic (roofline), and each call costs the
device's fixed overhead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

import numpy as np
import numpy.typing as npt

from fabricui.model.records import ATTENTION_REF_HEAD_DIM

if TYPE_CHECKING:
    from fabricui.engine.training.device import Device

FloatArray = npt.NDArray[np.float64]
Number = Union[float, FloatArray]

#: Output tile edge of the GEMM model [elements].
TILE = 128
#: Size of the square GEMM the devices' efficiencies were measured at.
REFERENCE_GEMM = 8192
#: Sequence length the attention kernels' efficiencies are quoted at [tokens].
ATTENTION_REF_SEQ = 8192.0


def quantization(m: Number, n: Number, sms: int | None, count: Number = 1.0) -> FloatArray:
    """Useful fraction of the tile work a GEMM (or ``count`` of them batched) schedules.

    Args:
        m: Output rows.
        n: Output columns.
        sms: SMs (None: no quantization, 1.0).
        count: GEMMs in the batch (grouped GEMM), sharing the waves.

    Returns:
        ``m * n * count / (waves * sms * TILE^2)`` in (0, 1].
    """
    m_arr, n_arr, c_arr = (np.asarray(x, dtype=np.float64) for x in (m, n, count))
    if sms is None:
        return np.ones(np.broadcast(m_arr, n_arr, c_arr).shape)
    tiles = np.ceil(m_arr / TILE) * np.ceil(n_arr / TILE) * c_arr
    waves = np.maximum(1.0, np.ceil(tiles / sms))
    return np.minimum(1.0, m_arr * n_arr * c_arr / (waves * sms * TILE * TILE))


def gemm_time_s(
    device: Device,
    m: Number,
    n: Number,
    k: Number,
    count: Number = 1.0,
    calls: Number = 1.0,
    half: bool = False,
) -> FloatArray:
    """Time of ``count`` GEMMs ``(m x k) @ (k x n)`` issued as ``calls`` kernel launches [s].

    ``time = max(2 m n k count / (peak * eff * q * clock), bytes / hbm) + calls * overhead``
    where ``eff`` is the device's efficiency with the reference GEMM's quantization divided
    out, ``q`` this GEMM's quantization, ``clock`` the power cap's clock scale and
    ``bytes`` its inputs and 16-bit output.

    Args:
        device: The device.
        m: Output rows (tokens for a linear layer).
        n: Output columns.
        k: Inner dimension.
        count: GEMMs of this shape (batched heads, local experts).
        calls: Kernel launches they take (1 for a batched or grouped GEMM).
        half: Run in 16-bit even when the device's GEMM precision is FP8 (the output
            layer, the router and attention's own products stay in BF16).

    Returns:
        Time [s], broadcast over the arguments.
    """
    m_arr, n_arr, k_arr, c_arr = (np.asarray(x, dtype=np.float64) for x in (m, n, k, count))
    ref = float(quantization(REFERENCE_GEMM, REFERENCE_GEMM, device.sms))
    if half and device.half_gemm_efficiency is not None:
        peak, eff, in_bytes = device.half_flops, device.half_gemm_efficiency, 2.0
    else:
        peak, eff, in_bytes = device.peak_flops, device.gemm_efficiency, device.gemm_input_bytes
    rate = peak * eff / ref * device.clock_scale
    flops = 2.0 * m_arr * n_arr * k_arr * c_arr
    compute = flops / (rate * quantization(m_arr, n_arr, device.sms, c_arr))
    traffic = c_arr * (in_bytes * (m_arr * k_arr + k_arr * n_arr) + 2.0 * m_arr * n_arr)
    memory = traffic / device.hbm_Bps
    return (
        np.maximum(compute, memory) + np.asarray(calls, dtype=np.float64) * device.gemm_overhead_s
    )


def linear_times_s(
    device: Device,
    tokens: Number,
    n: Number,
    k: Number,
    count: Number = 1.0,
    half: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """Forward and backward time of a linear layer ``y = x W`` (``W``: k x n) [s].

    Backward is two GEMMs of the forward's FLOPs: the input gradient (``tokens x k``,
    inner ``n``) and the weight gradient (``k x n``, inner ``tokens``).

    Args:
        device: The device.
        tokens: Rows of ``x``.
        n: Output features.
        k: Input features.
        count: Copies (local experts of a grouped GEMM).
        half: Keep it in 16-bit under FP8 (``gemm_time_s``).

    Returns:
        (forward, backward) [s].
    """
    forward = gemm_time_s(device, tokens, n, k, count, half=half)
    backward = gemm_time_s(device, tokens, k, n, count, half=half) + gemm_time_s(
        device, k, n, tokens, count, half=half
    )
    return forward, backward


def memory_time_s(device: Device, size_bytes: Number) -> FloatArray:
    """Time of a memory-bound pass that moves ``size_bytes`` through HBM [s]."""
    return np.asarray(size_bytes, dtype=np.float64) / device.hbm_Bps


def head_dim_scale(table: Sequence[tuple[float, float]], head_dim: Number) -> FloatArray:
    """Attention throughput at ``head_dim`` relative to the head dim its efficiency is
    quoted at, from a kernel's ``(head dim, factor)`` table.

    Between listed head dims the factor is interpolated linearly in ``log2(head dim)``;
    below the smallest and above the largest the nearest entry holds (a kernel is not
    assumed to keep speeding up or slowing down past what its source measured). An empty
    table (no published figure) gives 1.

    Args:
        table: ``(head dim, factor)`` pairs, head dims increasing.
        head_dim: Query/key head dimension(s) [elements]; NaN gives NaN.

    Returns:
        The factor, broadcast over ``head_dim``.
    """
    d = np.asarray(head_dim, dtype=np.float64)
    if not table:
        return np.where(np.isnan(d), np.nan, 1.0)
    return _log2_interp(table, d)


def window_efficiency(table: Sequence[tuple[float, float]], window: Number) -> FloatArray:
    """Efficiency of a sliding-window layer's attention kernel at ``window`` tokens, from a
    kernel's ``(window, efficiency)`` table: interpolated linearly in ``log2(window)``
    between listed windows, the nearest entry held beyond them (``head_dim_scale``'s rule).

    Args:
        table: ``(window, efficiency)`` pairs, windows increasing; must not be empty.
        window: Window(s) [tokens]; NaN gives NaN.

    Returns:
        The efficiency (fraction of the dense 16-bit peak), broadcast over ``window``.
    """
    return _log2_interp(table, np.asarray(window, dtype=np.float64))


def _log2_interp(table: Sequence[tuple[float, float]], x: FloatArray) -> FloatArray:
    """``table``'s value at ``x``, linear in ``log2`` between entries, nearest beyond."""
    keys = np.log2([float(k) for k, _ in table])
    values = np.array([float(v) for _, v in table])
    with np.errstate(divide="ignore", invalid="ignore"):
        at = np.log2(x)
    return np.asarray(np.interp(at, keys, values), dtype=np.float64)


def flash_attention_times_s(
    device: Device,
    flops_forward: Number,
    seq_len: Number = 0.0,
    head_dim: Number = float(ATTENTION_REF_HEAD_DIM),
    window: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """Forward and backward time of a fused attention kernel [s].

    Backward does 2.5x the forward's FLOPs (the score matrix is recomputed, FlashAttention
    paper). Each direction runs at its kernel's efficiency, measured at ``ATTENTION_REF_SEQ``
    tokens and head dim 128, scaled to other lengths by ``s / (s + half_seq)`` (the
    kernel's tiles of queries and keys fill the GPU only on long sequences) and to other
    head dims by the kernel's table for that direction (``head_dim_scale``), times the
    power cap's clock scale. A sliding-window layer runs instead at the kernel's measured
    efficiency for its window (``window_efficiency``; scaled by sequence length and clock
    alike) when the kernel has one: with a short window each query tile has a loop of one
    or two key tiles, and the fixed work of a tile (loading its queries, writing its output
    and softmax statistics) is no longer hidden behind a long loop.

    With attention in FP8 each direction's efficiency is multiplied by the kernel's FP8
    factor over 16-bit for the head dim (causal) or the window (sliding window), each
    interpolated as its 16-bit table; a missing table leaves the 16-bit figure.

    Args:
        device: The device.
        flops_forward: Forward FLOPs of the attention core (score and value products).
        seq_len: Query tokens per sequence on this GPU (0: the long-sequence rate).
        head_dim: Query/key head dimension [elements] (the score product's width; with
            multi-head latent attention wider than the values').
        window: The layer's sliding window [tokens] (0: causal over the whole sequence).
    """
    s = np.asarray(seq_len, dtype=np.float64)
    half = device.attention_half_seq
    ref = ATTENTION_REF_SEQ / (ATTENTION_REF_SEQ + half)
    fill = np.where(s > 0, s / np.maximum(s + half, 1.0) / ref, 1.0)
    rate = device.half_flops * device.clock_scale * fill
    flops = np.asarray(flops_forward, dtype=np.float64)
    if window > 0 and device.attention_window_fwd and device.attention_window_bwd:
        fwd_eff = window_efficiency(device.attention_window_fwd, window) * _fp8_scale(
            device.attention_fp8_window_fwd, window
        )
        bwd_eff = window_efficiency(device.attention_window_bwd, window) * _fp8_scale(
            device.attention_fp8_window_bwd, window
        )
    else:
        fwd_eff = (
            device.attention_efficiency
            * head_dim_scale(device.attention_fwd_head_dim_scale, head_dim)
            * _fp8_scale(device.attention_fp8_fwd, head_dim)
        )
        bwd_eff = (
            device.bwd_attention_efficiency
            * head_dim_scale(device.attention_bwd_head_dim_scale, head_dim)
            * _fp8_scale(device.attention_fp8_bwd, head_dim)
        )
    forward = flops / (rate * fwd_eff)
    backward = 2.5 * flops / (rate * bwd_eff)
    return forward, backward


def _fp8_scale(table: Sequence[tuple[float, float]], at: Number) -> FloatArray:
    """FP8 attention's throughput over 16-bit at ``at`` (a head dim or a window) from one of
    the device's FP8 tables; 1 when it is empty (16-bit attention, or no FP8 figure)."""
    x = np.asarray(at, dtype=np.float64)
    if not table:
        return np.where(np.isnan(x), np.nan, 1.0)
    return _log2_interp(table, x)
