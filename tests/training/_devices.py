"""Devices of round figures the training tests compute by hand."""

from __future__ import annotations

from fabricui.engine.training.device import Device

#: A round device: 100 TFLOP/s, 1 TB/s, no quantization or overhead.
ROUND = Device(
    name="round",
    peak_flops=100e12,
    half_flops=100e12,
    gemm_efficiency=1.0,
    gemm_overhead_s=0.0,
    sms=None,
    attention_efficiency=0.5,
    attention_bwd_efficiency=0.25,
    attention_half_seq=1024.0,
    hbm_Bps=1e12,
    memory_bytes=80e9,
    gemm_input_bytes=2.0,
)
