"""Sliding-window attention layers: the fused kernel's measured efficiency for the window
(``KernelSpec.window_fwd_efficiency`` / ``window_bwd_efficiency``) in place of the causal
figures, by hand; and the kernel records' window tables as hwdb reads and checks them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from fabricui.engine.training.device import Device, make_device
from fabricui.engine.training.kernels import (
    ATTENTION_REF_SEQ,
    flash_attention_times_s,
    window_efficiency,
)
from fabricui.engine.training.layer import layer_cost
from fabricui.engine.training.shape import geometry
from fabricui.errors import HwdbError
from fabricui.hwdb import Catalog
from tests.unit._records import load_kernel

#: A round device: 100 TFLOP/s 16-bit peak, causal attention at 0.5 forward and 0.4
#: backward, a head-dim table that halves head dim 64, windows of 128 at 0.1 / 0.05 and of
#: 1024 at 0.4 / 0.2.
TOY = Device(
    name="toy",
    peak_flops=100e12,
    half_flops=100e12,
    gemm_efficiency=0.5,
    gemm_overhead_s=0.0,
    sms=None,
    attention_efficiency=0.5,
    attention_bwd_efficiency=0.4,
    attention_fwd_head_dim_scale=((64.0, 0.5), (128.0, 1.0)),
    attention_bwd_head_dim_scale=((64.0, 0.5), (128.0, 1.0)),
    attention_window_fwd=((128.0, 0.1), (1024.0, 0.4)),
    attention_window_bwd=((128.0, 0.05), (1024.0, 0.2)),
    hbm_Bps=1e12,
    memory_bytes=80e9,
    gemm_input_bytes=2.0,
)


def test_window_efficiency_by_hand():
    """Linear in log2(window) between 128 (0.1) and 1024 (0.4): 2^8.5 is half way on the
    three octaves' first 1.5, so 0.1 + 0.5 x 0.3 = 0.25; the nearest entry beyond; NaN in,
    NaN out; arrays broadcast."""
    table = TOY.attention_window_fwd
    assert float(window_efficiency(table, 128)) == pytest.approx(0.1)
    assert float(window_efficiency(table, 1024)) == pytest.approx(0.4)
    assert float(window_efficiency(table, 2**8.5)) == pytest.approx(0.25)
    assert float(window_efficiency(table, 64)) == pytest.approx(0.1)
    assert float(window_efficiency(table, 8192)) == pytest.approx(0.4)
    assert np.isnan(window_efficiency(table, np.nan))
    got = window_efficiency(table, np.array([128.0, 1024.0]))
    np.testing.assert_allclose(got, [0.1, 0.4])


def test_windowed_kernel_runs_at_its_window_figure():
    """1e12 forward FLOPs with a 128-token window: 1e12 / (100e12 x 0.1) = 100 ms forward and
    2.5e12 / (100e12 x 0.05) = 500 ms backward, whatever the head dim (the window figure is
    the measured shape's); causal at head dim 64 they take 1e12 / (100e12 x 0.5 x 0.5) =
    40 ms and 2.5e12 / (100e12 x 0.4 x 0.5) = 125 ms."""
    fwd, bwd = flash_attention_times_s(TOY, 1e12, head_dim=64, window=128)
    assert (float(fwd), float(bwd)) == pytest.approx((0.1, 0.5))
    fwd, bwd = flash_attention_times_s(TOY, 1e12, head_dim=64)
    assert (float(fwd), float(bwd)) == pytest.approx((0.04, 0.125))


def test_window_figure_scales_with_sequence_and_clock_like_the_causal_one():
    """At 2048 tokens with half_seq 256 and a 0.8 clock: the window figure times
    (2048 / 2304) / (8192 / 8448) times 0.8, as the causal figures are scaled."""
    dev = dataclasses.replace(TOY, attention_half_seq=256.0, clock_scale=0.8)
    fill = (2048 / 2304) / (ATTENTION_REF_SEQ / (ATTENTION_REF_SEQ + 256))
    fwd, bwd = flash_attention_times_s(dev, 1e12, 2048.0, 64, window=128)
    assert float(fwd) == pytest.approx(1e12 / (100e12 * 0.8 * fill * 0.1))
    assert float(bwd) == pytest.approx(2.5e12 / (100e12 * 0.8 * fill * 0.05))


def test_a_kernel_without_window_figures_runs_windows_at_the_causal_ones():
    """No window table: a windowed layer's kernel runs at the causal efficiency and head-dim
    factor, as before window figures existed."""
    plain = dataclasses.replace(TOY, attention_window_fwd=(), attention_window_bwd=())
    windowed = flash_attention_times_s(plain, 1e12, head_dim=64, window=128)
    causal = flash_attention_times_s(plain, 1e12, head_dim=64)
    np.testing.assert_allclose(windowed, causal)


def test_gpt_oss_layers_by_hand(catalog):
    """gpt-oss-120b, one micro-batch of 4 x 4096 tokens, TP 1: a windowed layer's core does
    4 x 4 x 64 x 4096 x 128 x 64 FLOPs forward at the window figure; a full one
    4 x 4 x 64 x 4096 x 2048 x 64 at the causal figure; a window as long as the sequence is
    causal attention (s / 2 keys per query, the causal figure)."""
    geo = geometry(catalog.models["gpt-oss-120b"])
    assert (geo.window, geo.head_dim, geo.heads) == (128, 64, 64)
    dev = dataclasses.replace(TOY, attention_half_seq=0.0)
    band = 4 * 4 * 64 * 4096 * 128 * 64
    causal = 4 * 4 * 64 * 4096 * 2048 * 64
    win = layer_cost(dev, geo, 1, 1, 1, 4, 4096, 0, moe=True, windowed=True)
    full = layer_cost(dev, geo, 1, 1, 1, 4, 4096, 0, moe=True)
    assert float(win.attn_fwd_s) == pytest.approx(band / (100e12 * 0.1))
    assert float(win.attn_bwd_s) == pytest.approx(2.5 * band / (100e12 * 0.05))
    assert float(full.attn_fwd_s) == pytest.approx(causal / (100e12 * 0.5 * 0.5))
    assert float(full.flops_fwd) - float(win.flops_fwd) == pytest.approx(causal - band)
    long = dataclasses.replace(geo, window=4096)
    same = layer_cost(dev, long, 1, 1, 1, 4, 4096, 0, moe=True, windowed=True)
    assert float(same.attn_fwd_s) == pytest.approx(float(full.attn_fwd_s))
    assert float(same.flops_fwd) == pytest.approx(float(full.flops_fwd))


def test_windowed_and_full_sequences_broadcast(catalog):
    """An array of sequence lengths: the window is banded where shorter than the sequence
    (4096) and causal where not (128)."""
    geo = geometry(catalog.models["gpt-oss-120b"])
    dev = dataclasses.replace(TOY, attention_half_seq=0.0)
    seqs = np.array([4096.0, 128.0])
    got = layer_cost(dev, geo, 1, 1, 1, 1, seqs, 0, moe=True, windowed=True)
    band = 4 * 64 * 4096 * 128 * 64
    causal = 4 * 64 * 128 * 64 * 64
    np.testing.assert_allclose(
        got.attn_fwd_s, [band / (100e12 * 0.1), causal / (100e12 * 0.5 * 0.5)]
    )


def test_cudnn_blackwell_window_figures_by_hand(catalog):
    """GB200 with cuDNN: gpt-oss's 128-token windowed layer at 4096 tokens runs forward at
    0.0678 and backward at 0.0776 of the 2,500 TFLOP/s peak (cudnn-frontend's gpt_oss
    preset, cuDNN 9.22), times the fill at 4096 against 8192 (half_seq 262) and the
    sustained clock."""
    gpu = catalog.gpus["gb200"]
    device, _ = make_device(gpu, "bf16", catalog.kernels["cudnn-blackwell"])
    geo = geometry(catalog.models["gpt-oss-120b"])
    cost = layer_cost(device, geo, 1, 1, 64, 4, 4096, 0, moe=True, windowed=True)
    fill = (4096 / (4096 + 262)) / (8192 / (8192 + 262))
    rate = 2500e12 * gpu.sustained_efficiency * fill
    band = 4 * 4 * 64 * 4096 * 128 * 64
    assert float(cost.attn_fwd_s) == pytest.approx(band / (rate * 0.0678))
    assert float(cost.attn_bwd_s) == pytest.approx(2.5 * band / (rate * 0.0776))


def load(tmp_path: Path, tables: str) -> Catalog:
    """The database with one cudnn blackwell kernel record holding ``tables``."""
    return load_kernel(tmp_path, tables, "cudnn", "blackwell")


def test_window_tables_load(tmp_path):
    """Windows to efficiencies as given; a record without them has none."""
    catalog = load(
        tmp_path,
        "  window_fwd_efficiency: {128: 0.07, 1024: 0.28}\n  window_bwd_efficiency: {128: 0.08}",
    )
    kernel = catalog.kernels["test-kernel"]
    assert kernel.window_fwd_efficiency == {128: 0.07, 1024: 0.28}
    assert kernel.window_bwd_efficiency == {128: 0.08}
    plain = load(tmp_path, "").kernels["test-kernel"]
    assert plain.window_fwd_efficiency == plain.window_bwd_efficiency == {}


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        (
            "  window_fwd_efficiency: {128: 1.5}\n  window_bwd_efficiency: {128: 0.1}",
            r"window_fwd_efficiency\.128: efficiency must be between 0\.01 and 1",
        ),
        (
            "  window_fwd_efficiency: {0: 0.1}\n  window_bwd_efficiency: {128: 0.1}",
            r"window_fwd_efficiency\.0: window must be between 1 and",
        ),
        (
            "  window_fwd_efficiency: {128: 0.1}",
            r"window_fwd_efficiency and window_bwd_efficiency go together",
        ),
    ],
)
def test_a_bad_window_table_is_one_line(tmp_path, tables, message):
    """Each bad table is one error line naming the file and the record."""
    with pytest.raises(HwdbError) as caught:
        load(tmp_path, tables)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'kernels.yaml'}:")
    assert re.search(message, text), text
