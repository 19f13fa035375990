"""The seeds' worked examples that hold, and pinned corrections of the claims that do not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fabricui_strategies.ddp import DDP
from fabricui_strategies.pp import PipelineParallel, bubble_fraction
from fabricui_strategies.tp import TensorParallel
from fabricui_strategies.zero import FSDP

from fabricui.engine.collectives import bus_factor, ideal_time_us
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.types import Layout
from fabricui.fabric import DeviceKind, build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.units import gbps_to_GBps

#: A rank count large enough for ring factors to reach their limit (2 for all-reduce).
MANY = 10**6


@pytest.fixture(scope="module")
def model_7b(catalog):
    """The seeds' "7B model with 32 layers": llama2-7b's shape with exactly 7e9 parameters."""
    return dataclasses.replace(catalog.models["llama2-7b"], params_B=7.0)


@pytest.fixture(scope="module")
def dgx_h100(catalog):
    """One DGX H100 (8 GPUs on NVSwitch)."""
    return build_fabric(resolve_topology("dgx-h100", catalog), catalog)


# --- worked examples that hold ---------------------------------------------------------------


def test_ring_all_reduce_1gb_8_ranks_100GBps():
    """Seed 000: "all-reduce of 1 GB across 8 nodes at 100 GB/s ... t ~ 17.5 ms"."""
    assert ideal_time_us("all_reduce", 1e9, 8, 100) == pytest.approx(17_500)


def test_ring_all_reduce_moves_2_n_minus_1_over_n():
    """DESIGN: ring all-reduce moves 2(N-1)/N * M bytes per GPU (the seed lost the symbols)."""
    assert bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("all_gather", 8) == bus_factor("reduce_scatter", 8) == pytest.approx(7 / 8)


def test_70b_gradient_all_reduce_8_nodes():
    """Seed 000: 70B BF16 gradients (140 GB) over 8 nodes at 100 GB/s: 1.75 * 140 / 100 = 2.45 s."""
    assert ideal_time_us("all_reduce", 70e9 * 2, 8, 100) == pytest.approx(2.45e6)


def test_ddp_7b_is_28_GB_ring_asymptotic_560_ms(model_7b):
    """Seed 001: "2 · params bytes — for a 7B model that's 28 GB ring-asymptotic ... ~560 ms"."""
    (op,) = DDP().operations(model_7b, Layout(dp=8))
    grad_bytes = op.size_bytes * op.count
    assert grad_bytes == pytest.approx(2 * 7e9)
    assert grad_bytes * bus_factor("all_reduce", MANY) == pytest.approx(28e9, rel=1e-5)
    assert ideal_time_us("all_reduce", grad_bytes, MANY, 50) == pytest.approx(560e3, rel=1e-5)


def test_fsdp_7b_per_layer_437_MB_about_9_ms(model_7b):
    """Seed 001: "7e9 / 32 · 2 = 437 MB per layer. At inter-node 50 GB/s that's 9 ms"."""
    ops = FSDP().operations(model_7b, Layout(dp=8))
    assert all(op.size_bytes == pytest.approx(437.5e6) for op in ops)
    assert ops[0].size_bytes / 50e9 * 1e3 == pytest.approx(8.75)
    assert ideal_time_us("all_gather", ops[0].size_bytes, MANY, 50) == pytest.approx(8750, rel=1e-5)
    assert sum(op.count for op in ops) == 3 * 32


def test_pp_16_microbatches_of_16_MB_about_5_ms(model_7b):
    """Seed 001: "16 × 16 MB = 256 MB. At 50 GB/s, that's ~5 ms" (5.12 ms; 5.37 ms in MiB)."""
    assert pytest.approx(5.12) == 16 * 16e6 / 50e9 * 1e3
    layout = Layout(pp=4, dp=1, microbatches=16, global_batch=16, seq_len=2048)
    forward = PipelineParallel().operations(model_7b, layout)[0]
    assert forward.size_bytes == 2048 * 4096 * 2 == 16 * 2**20
    assert forward.size_bytes * forward.count / 50e9 * 1e3 == pytest.approx(5.37, abs=0.01)


def test_tp_70b_320_all_reduces(catalog):
    """Seed 001: 2 AllReduces per layer, 80 layers: "320 AllReduces in a forward + backward"."""
    ops = TensorParallel().operations(catalog.models["llama3-70b"], Layout(tp=8))
    assert sum(op.count for op in ops) == 2 * 2 * 80 == 320


def test_bubble_fraction_formula():
    """Seed 000 / DESIGN: bubble fraction is (p-1)/(m+p-1) for p stages and m micro-batches."""
    for p, m in ((4, 16), (8, 32), (2, 1)):
        assert bubble_fraction(p, m) == pytest.approx((p - 1) / (m + p - 1))
    assert bubble_fraction(4, 16) == pytest.approx(3 / 19)


# --- corrected claims (DESIGN.md "Known errors") ---------------------------------------------


def test_zero3_is_1_5x_dp_volume_not_3x(catalog):
    """Seed 000 says ZeRO-3 costs 3x DP's all-reduce bandwidth; the ZeRO paper gives 1.5x."""
    model, layout = catalog.models["llama3-8b"], Layout(dp=8)
    wire = {"all_reduce": 2.0, "all_gather": 1.0, "reduce_scatter": 1.0}

    def sent(ops):
        return sum(op.size_bytes * op.count * wire[op.collective] for op in ops)

    ratio = sent(FSDP().operations(model, layout)) / sent(DDP().operations(model, layout))
    assert ratio == pytest.approx(1.5)


def test_ndr_is_50_GBps_per_direction(catalog):
    """DESIGN: NDR InfiniBand is 400 Gb/s = 50 GB/s per direction ("100 GB/s" is not NDR)."""
    assert catalog.links["ib-ndr"].bw_GBps == 50
    assert gbps_to_GBps(400) == 50


def test_nvlink4_is_450_GBps_per_gpu_per_direction(catalog):
    """DESIGN: NVLink 4 is 450 GB/s per direction per GPU (3,350 GB/s is H100's HBM3)."""
    nvlink4 = catalog.links["nvlink4"]
    assert nvlink4.bw_GBps * nvlink4.links_per_gpu == 450
    assert catalog.gpus["h100-sxm"].hbm_bw_GBps != 450


def test_nvlink_to_ib_gap(catalog):
    """DESIGN: the gap is 18x (900 vs 50, bidirectional NVLink) and 36x for NVLink 5, not 160x.

    Per direction on both sides it is 450 / 50 = 9x (NVLink 4) and 900 / 50 = 18x (NVLink 5).
    """
    ndr = catalog.links["ib-ndr"].bw_GBps
    nvlink4 = catalog.links["nvlink4"].per_gpu_bw_GBps
    nvlink5 = catalog.links["nvlink5"].per_gpu_bw_GBps
    assert 900 / 50 == 18 and 1800 / 50 == 36
    assert 2 * nvlink4 / ndr == 18 and 2 * nvlink5 / ndr == 36
    assert nvlink4 / ndr == 9 and nvlink5 / ndr == 18


def test_dgx_h100_has_one_nic_per_gpu(dgx_h100):
    """DESIGN: DGX H100 has one 400G compute NIC per GPU (1:1), not an 8:1 GPU-to-NIC ratio."""
    nics = dgx_h100.devices_of_kind(DeviceKind.NIC)
    assert len(nics) == dgx_h100.n_gpus == 8
    assert len(np.unique(dgx_h100.gpu_nic)) == 8


def test_h100_single_node_all_reduce_is_not_650_GBps(dgx_h100):
    """DESIGN: one DGX H100 peaks at 469-487 GB/s busbw (NVLS), not "650-700 GB/s"."""
    prediction = evaluate_collective(dgx_h100, "all_reduce", [16 * 2**30])
    assert prediction.busbw_GBps[0] < 520
