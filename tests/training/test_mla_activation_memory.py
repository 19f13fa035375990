"""Multi-head latent attention's activations as Megatron-Core saves them (and torchtitan's
op-level policy), Megatron-Core's ``recompute_modules`` removing what they rebuild, and
the MLA widths of the op-level recomputed GEMMs and torchao's rescale pass, each figure
checked by hand on DeepSeek-V3's shape: h 7,168, 128 heads, Q and K 192 wide a head
(24,576 a token), V and the attention output 128 (16,384), query latent 1,536, key/value
latent 512 + rotary key 64, dense MLP f 18,432, experts 2,048 wide (8 routed, 1 shared
per token, 256 in all). One 4,096-token sequence unless stated: 256 bytes a token are
1 MiB a layer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.engine.training.kernels import linear_times_s
from fabricui.engine.training.layer import FP8_RESCALE_BYTES, Kernels, layer_cost
from fabricui.engine.training.memory import (
    activation_bytes,
    layer_activation_bytes,
    ops_saved_bytes_per_token,
    recompute_modules,
)
from fabricui.engine.training.shape import geometry
from tests.training._devices import ROUND

MiB = 2**20
TOKENS = 4096


@pytest.fixture(scope="module")
def dsv3(catalog):
    """DeepSeek-V3's geometry."""
    return geometry(catalog.models["deepseek-v3"])


@pytest.fixture(scope="module")
def dense(dsv3):
    """DeepSeek-V3's shape with every layer dense (MLP 6 f = 110,592 bytes a token)."""
    return dataclasses.replace(dsv3, moe_layers=0)


@pytest.fixture(scope="module")
def moe(dsv3):
    """DeepSeek-V3's shape with every layer MoE: 8 x (2h + 6 x 2,048) + 6 x 2,048 =
    225,280 bytes a token."""
    return dataclasses.replace(dsv3, moe_layers=dsv3.layers)


def _mib(geo, tp=1, sp=0.0, recompute="none", modules=(), attention="flash"):
    size = layer_activation_bytes(
        geo, tp, 1, 1, TOKENS, sp, recompute, attention, modules=tuple(modules)
    )
    return float(size) / MiB


def test_mla_keeps_its_own_widths(dense):
    """TP 1, no recompute: 8h = 57,344 (norm inputs, the down projections' and the MLP's
    inputs), the latents before and after their norms 4 x (1,536 + 512) = 8,192, Q and K
    4 x 24,576, V and O 4 x 16,384, the FP32 softmax statistics 4 x 128: 164,352; the MLP
    110,592. 340,480 bytes a token, 1,330 MiB. Plain Q/K/V at hidden / heads = 56 would
    count 4 x 7,168 x 2 = 57,344 for the attention and nothing for the latents: 115,200
    bytes a token (450 MiB) less."""
    assert _mib(dense) == pytest.approx(340480 * TOKENS / MiB) == pytest.approx(1330.0)
    plain = dataclasses.replace(dense, kv_lora_rank=0, q_lora_rank=0, qk_rope_head_dim=0)
    assert _mib(dense) - _mib(plain) == pytest.approx(450.0)


def test_sequence_parallelism_splits_the_latents(dense):
    """TP 8: the down projections are duplicated and run on the rank's own tokens, so the
    latents split with the sequence: with SP (57,344 + 8,192) / 8 + (164,352 + 110,592) / 8
    = 42,560 bytes a token (166.25 MiB); without, 65,536 + 34,368 = 99,904 (390.25 MiB)."""
    assert _mib(dense, tp=8, sp=1.0) == pytest.approx(166.25)
    assert _mib(dense, tp=8, sp=0.0) == pytest.approx(390.25)


def test_mla_up_proj_keeps_the_latents_instead_of_q_k_v(dense):
    """``mla_up_proj`` frees Q, K and V and the latents' norm outputs and keeps the
    checkpoint's inputs: the query latent, the key/value latent's whole down-projection
    output 2 x (1,536 + 512 + 64) = 4,224, O and the statistics 2 x 16,384 + 512 = 33,280:
    57,344 + 4,224 + 33,280 + 110,592 = 205,440 bytes a token (802.5 MiB). TP 8 with SP:
    61,568 / 8 + the rotary key gathered to every token 128 + (33,280 + 110,592) / 8 =
    25,808 (100.8125 MiB). ``core_attn`` drops the statistics (512 bytes a token, 2 MiB);
    it is what ``selective`` recomputes when no module is named."""
    assert _mib(dense, recompute="selective", modules=["mla_up_proj"]) == pytest.approx(802.5)
    sp = _mib(dense, tp=8, sp=1.0, recompute="selective", modules=["mla_up_proj"])
    assert sp == pytest.approx(100.8125)
    both = _mib(dense, recompute="selective", modules=["mla_up_proj", "core_attn"])
    assert both == pytest.approx(800.5)
    assert _mib(dense, recompute="selective") == pytest.approx(1328.0)
    assert recompute_modules("selective") == ("core_attn",)
    assert recompute_modules("none", ("mla_up_proj",)) == ()


@pytest.mark.parametrize(
    ("modules", "dropped_mib"),
    [
        (["moe_act"], 128.0),  # 8 routed x 2 x 2,048 = 32,768 bytes a token
        (["layernorm"], 112.0),  # MLA's input norm and the pre-MLP norm: 2 x 2h
        (["shared_experts"], 48.0),  # 6 x 2,048
        (["moe"], 880.0),  # the whole MoE block: 225,280
        (["mlp"], 0.0),  # dense layers only
        (["moe", "moe_act", "shared_experts"], 880.0),
    ],
)
def test_recompute_modules_remove_what_they_rebuild(moe, modules, dropped_mib):
    """Every layer MoE, TP 1: 1,330 - 432 + 880 = 1,778 MiB kept without recompute (the
    MoE block 225,280 bytes a token against the dense MLP's 110,592); each module named
    removes its tensors (and the statistics stay: no ``core_attn``)."""
    assert _mib(moe) == pytest.approx(1778.0)
    kept = _mib(moe, recompute="selective", modules=modules)
    assert _mib(moe) - kept == pytest.approx(dropped_mib)


def test_mlp_recompute_on_dense_layers(dense):
    """``mlp`` reruns a dense layer's MLP from its input: the fused norm's output (2h) and
    the inner tensors (6 f) go, 124,928 bytes a token (488 MiB)."""
    assert _mib(dense) - _mib(dense, recompute="selective", modules=["mlp"]) == pytest.approx(488.0)


def test_layernorm_on_grouped_query_attention(dsv3):
    """Without MLA Megatron-Core's TE spec fuses the input norm into the QKV projection:
    ``layernorm`` removes only an MoE layer's pre-MLP norm output (2h, 56 MiB); and with
    a dense model nothing. The unfused score matrix stays unless ``core_attn`` is named."""
    plain = dataclasses.replace(
        dsv3, kv_lora_rank=0, q_lora_rank=0, qk_rope_head_dim=0, moe_layers=dsv3.layers
    )
    assert _mib(plain) - _mib(plain, recompute="selective", modules=["layernorm"]) == (
        pytest.approx(56.0)
    )
    dense_plain = dataclasses.replace(plain, moe_layers=0, experts=0)
    scores = 2 * 128 * TOKENS * TOKENS / MiB  # softmax output and its mask, no dropout
    unfused = _mib(dense_plain, attention="unfused")
    kept = _mib(dense_plain, recompute="selective", modules=["layernorm"], attention="unfused")
    assert kept == pytest.approx(unfused)
    core = _mib(dense_plain, recompute="selective", modules=["core_attn"], attention="unfused")
    assert unfused - core == pytest.approx(scores)


def test_named_modules_rebuild_one_layer_during_its_backward(dense):
    """Four layers, one micro-batch in flight, ``mla_up_proj``: 4 x 802.5 MiB kept, plus
    what one layer's backward rebuilds, 1,330 - 802.5 = 527.5: 3,737.5 MiB. Full
    recompute: 4 x 2h (56 MiB each) + 1,330."""
    named = activation_bytes(
        dense, 4, 1, 1, 1, 1, TOKENS, 0.0, "selective", "flash", modules=("mla_up_proj",)
    )
    assert float(named) / MiB == pytest.approx(3737.5)
    full = activation_bytes(dense, 4, 1, 1, 1, 1, TOKENS, 0.0, "full", "flash")
    assert float(full) / MiB == pytest.approx(4 * 56.0 + 1330.0)


@pytest.mark.parametrize(
    ("q_lora", "moe_layer", "eager", "per_token"),
    [
        # block input 2h, O and its log-sum-exp 33,280, wq_a 3,072, wkv_a 1,152
        (True, True, False, 14336 + 33280 + 3072 + 1152),
        # eagerly wo's output (the fifth matmul, saved) stays: 2h
        (True, True, True, 14336 + 33280 + 3072 + 1152 + 14336),
        # dense: w3 is the seventh matmul, 2 f = 36,864
        (True, False, False, 14336 + 33280 + 3072 + 1152 + 36864),
        # without a query latent: wq 2 x 24,576, wkv_b 2 x 32,768, the router 2 x 256
        (False, True, False, 14336 + 33280 + 49152 + 65536 + 512),
    ],
)
def test_op_level_policy_on_torchtitans_mla_block(dsv3, q_lora, moe_layer, eager, per_token):
    """torchtitan's DeepSeek-V3 block saves every odd matmul output of wq_a, wq_b, wkv_a,
    wkv_b, wo, then the router or w1, w3, w2 (wq in place of wq_a, wq_b without a query
    latent); TP 1."""
    geo = dataclasses.replace(
        dsv3,
        moe_layers=dsv3.layers if moe_layer else 0,
        q_lora_rank=dsv3.q_lora_rank if q_lora else 0,
    )
    assert float(ops_saved_bytes_per_token(geo, 1, 0.0, eager)) == pytest.approx(per_token)


def test_op_level_recomputed_gemms_of_the_mla_block(catalog, dense):
    """A dense MLA layer, TP 1, 4,096 tokens: the policy recomputes wq_b (1,536 to 24,576),
    wkv_b (512 to 32,768), w1 (7,168 to 18,432) and, eagerly, w2; without a query latent
    wkv_a (7,168 to 576), wo (16,384 to 7,168) and w3."""
    from fabricui.engine.training.device import make_device

    device, _ = make_device(catalog.gpus["h100-sxm"], "bf16")
    t = float(TOKENS)

    def recomputed(geo, passes):
        kernels = Kernels(passes=passes, separate_projections=True)
        return float(
            layer_cost(device, geo, 1, 1, 1, 1, TOKENS, 0.0, kernels=kernels).ops_gemm_fwd_s
        )

    wq_b, _ = linear_times_s(device, t, 24576.0, 1536.0)
    wkv_b, _ = linear_times_s(device, t, 32768.0, 512.0)
    w1, _ = linear_times_s(device, t, 18432.0, 7168.0)
    w2, _ = linear_times_s(device, t, 7168.0, 18432.0)
    assert recomputed(dense, "compiled") == pytest.approx(float(wq_b + wkv_b + w1))
    assert recomputed(dense, "eager") == pytest.approx(float(wq_b + wkv_b + w1 + w2))
    no_q = dataclasses.replace(dense, q_lora_rank=0)
    wkv_a, _ = linear_times_s(device, t, 576.0, 7168.0)
    wo, _ = linear_times_s(device, t, 7168.0, 16384.0)
    assert recomputed(no_q, "compiled") == pytest.approx(float(wkv_a + wo + w1))


def test_rowwise_rescale_at_mla_widths(monkeypatch, dsv3):
    """torchao's rescale of the backward GEMM outputs in an MoE layer (the experts are not
    converted), TP 1, 8,000 tokens on the round device (1 TB/s): input gradients 2h
    (wq_a, wkv_a) + 1,536 (wq_b) + 512 (wkv_b) + 16,384 (wo) = 32,768 a token; weight
    gradients 7,168 x (1,536 + 576) + 1,536 x 24,576 + 512 x 32,768 + 16,384 x 7,168 =
    187,105,280 elements; 4 bytes an element."""
    assert FP8_RESCALE_BYTES["rowwise"] == 4.0
    kernels = Kernels(fp8_recipe="rowwise")
    rowwise = layer_cost(ROUND, dsv3, 1, 1, 1, 1, 8000, 0.0, moe=True, kernels=kernels)
    monkeypatch.setitem(FP8_RESCALE_BYTES, "rowwise", 0.0)
    unscaled = layer_cost(ROUND, dsv3, 1, 1, 1, 1, 8000, 0.0, moe=True, kernels=kernels)
    weights = 7168 * (1536 + 576) + 1536 * 24576 + 512 * 32768 + 16384 * 7168
    assert weights == 187_105_280
    more_bytes = 4 * (8000 * 32768 + weights)
    assert float(rowwise.elem_bwd_s - unscaled.elem_bwd_s) == pytest.approx(more_bytes / 1e12)


def test_arrays_of_layouts(dense):
    """TP as an array prices each layout as its scalar does."""
    tps = np.array([1.0, 8.0])
    both = layer_activation_bytes(dense, tps, 1, 1, TOKENS, 1.0)
    assert (both / MiB).tolist() == pytest.approx([1330.0, 166.25])
