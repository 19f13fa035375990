"""Kernel times: the GEMM model (tiles, waves, roofline, per-call overhead), linear layers,
fused attention, memory-bound passes; and the device figures read from hwdb."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.engine.training.device import (
    DEFAULT_HBM_EFFICIENCY,
    NAMED_PARTS_MAX,
    Device,
    make_device,
    missing_peak,
)
from fabricui.engine.training.kernels import (
    flash_attention_times_s,
    gemm_time_s,
    head_dim_scale,
    linear_times_s,
    memory_time_s,
    quantization,
)
from fabricui.engine.training.layer import layer_cost
from fabricui.engine.training.shape import geometry
from fabricui.errors import EngineError

#: A round device: 100 TFLOP/s peak at 0.5 efficiency, 4 SMs, 1 TB/s, 10 us per GEMM.
TOY = Device(
    name="toy",
    peak_flops=100e12,
    half_flops=100e12,
    gemm_efficiency=0.5,
    gemm_overhead_s=10e-6,
    sms=4,
    attention_efficiency=0.25,
    hbm_Bps=1e12,
    memory_bytes=80e9,
    gemm_input_bytes=2.0,
)


def test_quantization_by_hand():
    """256 x 256 is 4 tiles of 128: one full wave of 4 SMs; 384 x 128 is 3 of 4 slots;
    200 x 128 pads to 2 tiles of which 200/256 is useful, on 2 of 4 slots."""
    assert quantization(256, 256, 4) == pytest.approx(1.0)
    assert quantization(384, 128, 4) == pytest.approx(0.75)
    assert quantization(200, 128, 4) == pytest.approx(200 * 128 / (4 * 128 * 128))
    assert quantization(128, 128, 4, count=8) == pytest.approx(1.0)  # 8 tiles, 2 full waves
    assert quantization(1000, 1000, None) == 1.0


def test_gemm_time_by_hand():
    """8192^3 on 4 SMs: 4096 tiles in 1024 full waves (q = 1); 2 * 8192^3 FLOPs at
    100e12 * 0.5 plus 10 us."""
    flops = 2 * 8192.0**3
    expected = flops / (100e12 * 0.5) + 10e-6
    assert float(gemm_time_s(TOY, 8192, 8192, 8192)) == pytest.approx(expected)


def test_gemm_efficiency_is_relative_to_the_reference_shape():
    """A GEMM quantized like the 8192^3 reference runs at the device's efficiency; one with a
    half-empty last wave takes longer per FLOP by the ratio of the two quantizations."""
    dev = dataclasses.replace(TOY, sms=3, gemm_overhead_s=0.0)
    ref_q = float(quantization(8192, 8192, 3))
    small = float(gemm_time_s(dev, 512, 512, 4096))  # 16 tiles on 3 SMs: 6 waves, 16/18
    flops = 2 * 512 * 512 * 4096
    assert small == pytest.approx(flops / (100e12 * 0.5 / ref_q * 16 / 18))


def test_skinny_gemm_is_memory_bound():
    """M = 16 tokens on a fast device: reading the 8192 x 8192 weight (2 bytes each) takes
    longer than the FLOPs, so the GEMM runs at memory speed (roofline)."""
    dev = dataclasses.replace(TOY, gemm_overhead_s=0.0, peak_flops=1e16)
    t = float(gemm_time_s(dev, 16, 8192, 8192))
    traffic = 2.0 * (16 * 8192 + 8192 * 8192) + 2.0 * 16 * 8192
    assert t == pytest.approx(traffic / 1e12)


def test_linear_backward_is_two_gemms():
    """Backward = input gradient (tokens x k, inner n) + weight gradient (k x n, inner tokens)."""
    fwd, bwd = linear_times_s(TOY, 4096, 1024, 2048)
    assert float(fwd) == pytest.approx(float(gemm_time_s(TOY, 4096, 1024, 2048)))
    expected = gemm_time_s(TOY, 4096, 2048, 1024) + gemm_time_s(TOY, 2048, 1024, 4096)
    assert float(bwd) == pytest.approx(float(expected))


def test_kernels_broadcast_over_arrays_and_empty_inputs():
    """Array in, array out (the search prices thousands of layouts at once); empty stays empty."""
    m = np.array([1024.0, 2048.0, 4096.0])
    times = gemm_time_s(TOY, m, 4096, 4096)
    assert times.shape == (3,) and np.all(np.diff(times) > 0)
    assert gemm_time_s(TOY, np.array([]), 4096, 4096).shape == (0,)
    assert np.isnan(gemm_time_s(TOY, np.nan, 4096, 4096))


def test_memory_and_flash_attention_by_hand():
    """1 GB at 1 TB/s is 1 ms; a 1e12-FLOP attention at 25 % of 100 TFLOP/s is 40 ms forward
    and 2.5 times that backward (the score matrix is recomputed)."""
    assert float(memory_time_s(TOY, 1e9)) == pytest.approx(1e-3)
    fwd, bwd = flash_attention_times_s(TOY, 1e12)
    assert (float(fwd), float(bwd)) == pytest.approx((0.04, 0.1))


#: A head-dimension table with round figures: 0.5 at 64, 1 at 128, 0.75 at 256.
ROUND_TABLE = ((64.0, 0.5), (128.0, 1.0), (256.0, 0.75))


def test_head_dim_scale_by_hand():
    """Listed head dims give their factor; between them the factor is linear in log2(head
    dim): 96 is log2(1.5) = 0.585 of the way from 64 to 128, 192 as far from 128 to 256;
    beyond the table the nearest entry holds; no table is 1 at every head dim."""
    t = np.log2(1.5)
    assert float(head_dim_scale(ROUND_TABLE, 64)) == pytest.approx(0.5)
    assert float(head_dim_scale(ROUND_TABLE, 128)) == pytest.approx(1.0)
    assert float(head_dim_scale(ROUND_TABLE, 96)) == pytest.approx(0.5 + t * 0.5)
    assert float(head_dim_scale(ROUND_TABLE, 192)) == pytest.approx(1.0 - t * 0.25)
    assert float(head_dim_scale(ROUND_TABLE, 32)) == pytest.approx(0.5)
    assert float(head_dim_scale(ROUND_TABLE, 512)) == pytest.approx(0.75)
    assert float(head_dim_scale((), 64)) == 1.0


def test_head_dim_scale_arrays_empty_and_nan():
    """Arrays broadcast, an empty array stays empty, NaN stays NaN (with a table or not)."""
    got = head_dim_scale(ROUND_TABLE, np.array([64.0, 128.0, 256.0]))
    np.testing.assert_allclose(got, [0.5, 1.0, 0.75])
    assert head_dim_scale(ROUND_TABLE, np.array([])).shape == (0,)
    assert np.isnan(head_dim_scale(ROUND_TABLE, np.nan))
    assert np.isnan(head_dim_scale((), np.nan))


def test_flash_attention_runs_each_direction_at_its_head_dim_factor():
    """At head dim 64 with forward 0.5 and backward 0.8 of the 128 rate: the 1e12-FLOP
    attention of the round device takes 0.04 / 0.5 = 80 ms forward and 0.1 / 0.8 = 125 ms
    backward; at 128 (the default) it takes 40 and 100 ms as before."""
    dev = dataclasses.replace(
        TOY,
        attention_fwd_head_dim_scale=((64.0, 0.5), (128.0, 1.0)),
        attention_bwd_head_dim_scale=((64.0, 0.8), (128.0, 1.0)),
    )
    fwd, bwd = flash_attention_times_s(dev, 1e12, head_dim=64)
    assert (float(fwd), float(bwd)) == pytest.approx((0.08, 0.125))
    fwd, bwd = flash_attention_times_s(dev, 1e12)
    assert (float(fwd), float(bwd)) == pytest.approx((0.04, 0.1))


def test_cudnn_on_h100_at_head_dim_64_by_hand(catalog):
    """gpt-oss's 64-wide heads on H100 with cuDNN: forward at 0.535 x 0.716 and backward at
    0.524 x 0.834 of the 989.4 TFLOP/s BF16 peak (FlashAttention-3 paper, Figures 5 and 6),
    times the sustained clock; 1e15 forward FLOPs at 8k tokens."""
    gpu = catalog.gpus["h100-sxm"]
    device, _ = make_device(gpu, "bf16", catalog.kernels["cudnn-hopper"])
    clock = gpu.sustained_efficiency
    fwd, bwd = flash_attention_times_s(device, 1e15, 8192.0, 64)
    assert float(fwd) == pytest.approx(1e15 / (989.4e12 * clock * 0.535 * 0.716))
    assert float(bwd) == pytest.approx(2.5e15 / (989.4e12 * clock * 0.524 * 0.834))
    fwd_128, _ = flash_attention_times_s(device, 1e15, 8192.0)
    assert float(fwd_128) == pytest.approx(1e15 / (989.4e12 * clock * 0.535))


def test_gpu_record_attention_has_no_head_dim_tables(catalog):
    """A GPU without a kernel record (its one attention_efficiency, quoted at head dim 128)
    runs every head dim at that figure."""
    device, _ = make_device(catalog.gpus["a100-sxm4-80gb"], "bf16")
    assert device.attention_fwd_head_dim_scale == device.attention_bwd_head_dim_scale == ()
    at_64 = flash_attention_times_s(device, 1e15, 8192.0, 64)
    at_128 = flash_attention_times_s(device, 1e15, 8192.0, 128)
    np.testing.assert_allclose(at_64, at_128)


def test_latent_attention_runs_at_its_score_head_dim(catalog):
    """DeepSeek-V3's attention core (192-wide scores, 128-wide values) runs at the kernel's
    factor for 192: with 1 at 128 and 0.5 at 256 that is 1 - log2(1.5) / 2 of the 128 rate,
    forward and backward alike here."""
    geo = geometry(catalog.models["deepseek-v3"])
    assert (geo.qk_head_dim, geo.v_head_dim) == (192, 128)
    table = ((128.0, 1.0), (256.0, 0.5))
    scaled = dataclasses.replace(
        TOY, attention_fwd_head_dim_scale=table, attention_bwd_head_dim_scale=table
    )
    plain = layer_cost(TOY, geo, 1, 1, 1, 1, 4096, 0)
    slow = layer_cost(scaled, geo, 1, 1, 1, 1, 4096, 0)
    factor = 1.0 - np.log2(1.5) / 2
    assert float(slow.attn_fwd_s) == pytest.approx(float(plain.attn_fwd_s) / factor)
    assert float(slow.attn_bwd_s) == pytest.approx(float(plain.attn_bwd_s) / factor)


def test_device_reads_hwdb_figures(catalog):
    """H100: 989.4 TFLOP/s BF16, 1978.9 FP8, 0.76 GEMM efficiency, 9 us per call, 132 SMs;
    no HBM efficiency in hwdb, so the default (and a sentence saying so)."""
    gpu = catalog.gpus["h100-sxm"]
    bf16, notes = make_device(gpu, "bf16")
    fp8, _ = make_device(gpu, "fp8")
    assert bf16.peak_flops == pytest.approx(989.4e12) and fp8.peak_flops == pytest.approx(1978.9e12)
    assert (bf16.gemm_efficiency, bf16.gemm_overhead_s, bf16.sms) == (0.76, 9e-6, 132)
    assert fp8.gemm_input_bytes == 1.0 and fp8.half_flops == bf16.peak_flops
    assert bf16.hbm_Bps == pytest.approx(3350e9 * DEFAULT_HBM_EFFICIENCY)
    assert any("hbm_efficiency" in n for n in notes)


def test_device_refuses_unknown_precision(catalog):
    """A precision the model does not know is an EngineError."""
    with pytest.raises(EngineError, match="precision must be one of"):
        make_device(catalog.gpus["h100-sxm"], "fp6")


@pytest.mark.parametrize(
    ("gpu", "precision", "field", "parts"),
    [
        ("a100-sxm4-80gb", "fp8", "fp8_dense_TFLOPS", "NVIDIA Ada and Hopper on, AMD CDNA3 on"),
        ("v100-sxm2", "fp8", "fp8_dense_TFLOPS", "NVIDIA Ada and Hopper on, AMD CDNA3 on"),
        ("h100-sxm", "fp4", "fp4_dense_TFLOPS", "NVIDIA Blackwell on, AMD CDNA4 on"),
    ],
)
def test_device_refuses_a_precision_without_its_peak(catalog, gpu, precision, field, parts):
    """FP8 on a part without an FP8 tensor peak is refused, as FP4 without an FP4 one is:
    one sentence naming the GPU, the hwdb field and the parts that have one (never priced
    at the 16-bit rate under the low precision's name)."""
    with pytest.raises(EngineError) as caught:
        make_device(catalog.gpus[gpu], precision)
    message = caught.value.message
    assert message == (
        f"{gpu} has no {precision.upper()} tensor peak in hwdb ({field}): precision "
        f"{precision} needs one ({parts})"
    )


def test_missing_peak_names_the_parts_that_have_one(catalog):
    """The parts given are named after the generations, at most ``NAMED_PARTS_MAX`` of them;
    a part with the peak, or a 16-bit precision, has nothing missing."""
    a100 = catalog.gpus["a100-sxm4-80gb"]
    assert missing_peak(a100, "fp8", ["h100-sxm", "b200"]).endswith(
        "(NVIDIA Ada and Hopper on, AMD CDNA3 on; in hwdb: h100-sxm, b200)"
    )
    many = [f"gpu{i}" for i in range(NAMED_PARTS_MAX + 2)]
    assert missing_peak(a100, "fp8", many).endswith(f"gpu{NAMED_PARTS_MAX - 1} and 2 more)")
    assert missing_peak(a100, "bf16") is None and missing_peak(a100, "fp16") is None
    assert missing_peak(catalog.gpus["h100-sxm"], "fp8") is None
    assert missing_peak(catalog.gpus["b200"], "fp4") is None


def test_every_sourced_gemm_figure_has_a_source(catalog):
    """Each GPU figure of the training model names where it comes from."""
    for gpu in catalog.gpus.values():
        for name in ("gemm_efficiency", "gemm_overhead_us", "attention_efficiency", "sms"):
            if getattr(gpu, name) is not None:
                assert name in gpu.sources, (gpu.id, name)
