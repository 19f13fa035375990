"""Multi-head latent attention's projections priced at their own shapes (DeepSeek-V3's
config.json: q_lora_rank 1536, kv_lora_rank 512, qk_rope_head_dim 64, 128 heads of
192-wide queries/keys and 128-wide values), sharded as Megatron-Core shards them: down
projections whole on every TP rank, up projections column parallel, output row parallel;
and recompute module ``mla_up_proj``."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training.device import make_device
from fabricui.engine.training.layer import RECOMPUTE_MODULES, layer_cost
from fabricui.engine.training.memory import stage_params
from fabricui.engine.training.shape import geometry
from fabricui.vocabulary import RECOMPUTE_MODULES as RUN_RECOMPUTE_MODULES

#: Multiply-adds per token of DeepSeek-V3's attention projections, by hand: q down
#: 7168 x 1536, kv down 7168 x (512 + 64), q up 1536 x 128 x 192, kv up 512 x 128 x
#: (128 + 128), output 128 x 128 x 7168.
DOWN = 7168 * 1536 + 7168 * (512 + 64)  # 15,138,816
UP = 1536 * 128 * 192 + 512 * 128 * (128 + 128)  # 54,525,952
OUT = 128 * 128 * 7168  # 117,440,512


def _projection_flops(catalog, tp: int, sp: float, tokens: int = 4096) -> float:
    """Forward FLOPs of one dense DeepSeek-V3 layer less its MLP and attention core."""
    geo = geometry(catalog.models["deepseek-v3"])
    device, _ = make_device(catalog.gpus["h100-sxm"])
    cost = layer_cost(device, geo, tp, 1, 1, 1, tokens, sp, "flash")
    mlp = 2 * tokens * geo.hidden * 3 * geo.dense_ffn / tp
    core = 4 * (geo.heads / tp) * tokens * (tokens / 2) * geo.core_head_dim
    return float(cost.flops_fwd) - mlp - core


def test_one_layer_projection_flops_by_hand_tp1(catalog):
    """TP 1: 2 x (15.1M + 54.5M + 117.4M) = 374.2M FLOPs per token, not the 411M that
    hidden / heads = 56 per head as QKV would give."""
    tokens = 4096
    assert DOWN + UP + OUT == 187_105_280
    assert _projection_flops(catalog, 1, 0.0, tokens) == pytest.approx(tokens * 374_210_560)


def test_one_layer_projection_flops_by_hand_tp8(catalog):
    """TP 8: the up and output projections split eight ways; the down projections are
    whole on every rank, run on its T / 8 tokens with sequence parallelism and on all T
    (repeated on every rank) without."""
    tokens = 4096
    with_sp = 2 * tokens * (DOWN / 8 + UP / 8 + OUT / 8)
    without = 2 * tokens * (DOWN + UP / 8 + OUT / 8)
    assert with_sp == pytest.approx(2 * tokens * 23_388_160)
    assert _projection_flops(catalog, 8, 1.0, tokens) == pytest.approx(with_sp)
    assert _projection_flops(catalog, 8, 0.0, tokens) == pytest.approx(without)


def test_mla_parameters_count_the_low_rank_projections(catalog):
    """One layer's attention holds 187.1M weights (plus 1536 + 512 latent norm weights);
    DeepSeek-V3 then adds up to its published 671B, and a TP rank holds the down
    projections whole."""
    geo = geometry(catalog.models["deepseek-v3"])
    assert geo.attention_params == DOWN + UP + OUT + 1536 + 512
    assert geo.params == pytest.approx(671e9, rel=0.005)
    dense = dataclasses.replace(geo, experts=0, moe_layers=0, shared_experts=0, top_k=0)
    tp1 = float(stage_params(dense, 1, 1, 1, False, False))
    tp8 = float(stage_params(dense, 1, 8, 1, False, False))
    assert tp1 - tp8 == pytest.approx((UP + OUT + dense.dense_mlp_params) * (1 - 1 / 8))


def test_kimi_k2_record_states_its_latents(catalog):
    """Kimi K2 (config.json): DeepSeek-V3's latents with 64 heads."""
    model = catalog.models["kimi-k2"]
    assert (model.q_lora_rank, model.kv_lora_rank, model.qk_rope_head_dim) == (1536, 512, 64)
    geo = geometry(model)
    assert geo.attention_params == (
        7168 * (1536 + 512 + 64) + 1536 * 64 * 192 + 512 * 64 * 256 + 64 * 128 * 7168 + 2048
    )


def test_mla_up_proj_recomputes_the_up_projections_norms_and_rotary(catalog):
    """``mla_up_proj`` repeats the up projections' GEMMs and the memory-bound latent norms
    and rotary pass: more than the two GEMMs alone, less than the whole forward; nothing
    for a model without MLA."""
    assert "mla_up_proj" in RECOMPUTE_MODULES and "mla_up_proj" in RUN_RECOMPUTE_MODULES
    geo = geometry(catalog.models["deepseek-v3"])
    device, _ = make_device(catalog.gpus["h100-sxm"])
    cost = layer_cost(device, geo, 1, 1, 1, 1, 4096, 0.0, "flash", moe=True)
    extra = float(cost.recompute_s("selective", modules=("mla_up_proj",)))
    tokens = 4096
    gemm_flops = 2 * tokens * UP
    assert extra > gemm_flops / device.peak_flops
    assert extra < float(cost.fwd_s) * 0.2
    plain = dataclasses.replace(geo, q_lora_rank=0, kv_lora_rank=0, qk_rope_head_dim=0)
    cost = layer_cost(device, plain, 1, 1, 1, 1, 4096, 0.0, "flash", moe=True)
    assert float(cost.recompute_s("selective", modules=("mla_up_proj",))) == 0.0
