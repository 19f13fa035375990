"""How a framework runs an MoE layer's experts beyond their GEMMs: Megatron-Core's output-bias
pass for experts that carry biases (gpt-oss), and experts left in 16-bit by an FP8
conversion that covers ``nn.Linear`` layers only (torchtitan); each checked by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from fabricui.engine.training.device import Device
from fabricui.engine.training.layer import (
    EXPERT_BIAS_BYTES,
    FP8_CAST_BYTES,
    Kernels,
    layer_cost,
)
from fabricui.engine.training.recipe import (
    RecipeChoices,
    expert_bias_pass_bytes,
    resolve_recipe,
)
from fabricui.engine.training.shape import Geometry, geometry
from fabricui.errors import EngineError, HwdbError
from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
from fabricui.hwdb.run_file import read_run_file

#: A round device: 1 TB/s, 16-bit GEMMs at 100 TFLOP/s and FP8 ones at 200, no
#: quantization or launch overhead.
ROUND = Device(
    name="round",
    peak_flops=200e12,
    half_flops=100e12,
    gemm_efficiency=1.0,
    gemm_overhead_s=0.0,
    sms=None,
    attention_efficiency=0.5,
    hbm_Bps=1e12,
    memory_bytes=80e9,
    gemm_input_bytes=1.0,
    half_gemm_efficiency=1.0,
)

#: An MoE layer of round widths: h 1024, 8 experts of width 1024 (gated), top-2, no
#: rotary or dropout.
MOE = Geometry(
    hidden=1024,
    layers=1,
    heads=8,
    kv_heads=8,
    head_dim=128,
    ffn=1024,
    dense_ffn=1024,
    gated=True,
    vocab=1000,
    experts=8,
    top_k=2,
    shared_experts=0,
    moe_layers=1,
    window=0,
    window_layers=0,
    dropout=False,
)


def moe_cost(geo: Geometry, kernels: Kernels, tokens: int = 1000, imbalance: float = 1.0):
    """One MoE layer, TP 1, EP 1, one sequence of ``tokens``."""
    return layer_cost(
        ROUND, geo, 1, 1, 1, 1, tokens, 0, moe=True, kernels=kernels, imbalance=imbalance
    )


@pytest.mark.parametrize(
    ("prob_bytes", "forward", "backward"), [(4.0, 28.0, 40.0), (2.0, 12.0, 16.0)]
)
def test_expert_bias_bytes_as_the_ops_move_them(prob_bytes, forward, backward):
    """``t + b * p`` per expert, ``cat``, ``.to``: with FP32 probabilities 4 + (2 + 4 + 4) +
    (4 + 4) + (4 + 2) = 28 bytes forward and (2 + 4) + (4 + 2) + 2 x 3 x 4 + (2 + 2) = 40
    backward; with 16-bit ones 2 + 6 + 4 = 12 and 2 x 3 x 2 + 4 = 16."""
    assert EXPERT_BIAS_BYTES[prob_bytes] == (forward, backward)


@pytest.mark.parametrize(("prob_bytes", "imbalance"), [(4.0, 1.0), (2.0, 1.0), (4.0, 1.5)])
def test_expert_bias_pass_by_hand(prob_bytes, imbalance):
    """1,000 tokens, top-2, h 1024: 2,000 x 1024 = 2,048,000 output elements (times the
    most loaded GPU's imbalance); at 1 TB/s FP32 probabilities add 28 x 2.048 MB = 57.3 us
    forward and 40 x 2.048 MB = 81.9 us backward, 16-bit ones 24.6 us and 32.8 us. The
    forward pass is part of the MoE module a ``moe`` recompute repeats; the GEMMs do not
    change."""
    biased = dataclasses.replace(MOE, expert_bias=True)
    with_pass = moe_cost(biased, Kernels(expert_bias_prob_bytes=prob_bytes), imbalance=imbalance)
    without = moe_cost(biased, Kernels(), imbalance=imbalance)
    elements = 1000 * 2 * 1024 * imbalance
    forward, backward = (elements * b / 1e12 for b in EXPERT_BIAS_BYTES[prob_bytes])
    assert float(with_pass.elem_fwd_s - without.elem_fwd_s) == pytest.approx(forward)
    assert float(with_pass.elem_bwd_s - without.elem_bwd_s) == pytest.approx(backward)
    assert float(with_pass.mlp_fwd_s - without.mlp_fwd_s) == pytest.approx(forward)
    moe_again = with_pass.recompute_s("selective", modules=("moe",))
    assert float(moe_again - without.recompute_s("selective", modules=("moe",))) == (
        pytest.approx(forward)
    )
    assert float(with_pass.gemm_fwd_s) == pytest.approx(float(without.gemm_fwd_s))


def test_no_bias_pass_without_expert_biases_or_on_a_dense_layer():
    """A model whose experts carry no biases, or a dense layer, moves nothing more."""
    kernels = Kernels(expert_bias_prob_bytes=4.0)
    plain = moe_cost(MOE, kernels)
    assert float(plain.elem_fwd_s) == pytest.approx(float(moe_cost(MOE, Kernels()).elem_fwd_s))
    dense = dataclasses.replace(MOE, expert_bias=True)
    one = layer_cost(ROUND, dense, 1, 1, 1, 1, 1000, 0, kernels=kernels)
    two = layer_cost(ROUND, dense, 1, 1, 1, 1, 1000, 0, kernels=Kernels())
    assert float(one.elem_bwd_s) == pytest.approx(float(two.elem_bwd_s))


def test_bias_pass_broadcasts_over_layouts():
    """Arrays of micro-batches price one bias pass each, proportional to the tokens."""
    biased = dataclasses.replace(MOE, expert_bias=True)
    b = np.array([1.0, 2.0, 4.0])
    kernels = Kernels(expert_bias_prob_bytes=2.0)
    with_pass = layer_cost(ROUND, biased, 1, 1, 1, b, 1000, 0, moe=True, kernels=kernels)
    without = layer_cost(ROUND, biased, 1, 1, 1, b, 1000, 0, moe=True, kernels=Kernels())
    extra = np.asarray(with_pass.elem_fwd_s - without.elem_fwd_s)
    np.testing.assert_allclose(extra, b * 2000 * 1024 * 12 / 1e12)


@pytest.mark.parametrize("width", [1.0, 3.0, 8.0, -2.0])
def test_kernels_refuse_a_probability_width_not_priced(width):
    """Only 2- and 4-byte probabilities (and 0: no pass) are priced."""
    with pytest.raises(EngineError, match="0, 2 or 4 bytes"):
        Kernels(expert_bias_prob_bytes=width)


def test_expert_bias_pass_width_by_dispatch_and_graphs():
    """FP32 under the flex dispatcher (DeepEP, HybridEP), the router's 16 bits under the
    all-to-all one; none under a whole-iteration CUDA graph (Transformer Engine's fused
    grouped MLP) or for a framework that adds the bias in the GEMM."""
    assert expert_bias_pass_bytes(True, "deepep", None) == 4.0
    assert expert_bias_pass_bytes(True, "deepep", "partial") == 4.0
    assert expert_bias_pass_bytes(True, "alltoall", "none") == 2.0
    assert expert_bias_pass_bytes(True, "deepep", "full_iteration") == 0.0
    assert expert_bias_pass_bytes(False, "alltoall", None) == 0.0


def test_recipes_carry_the_frameworks_expert_kernels(catalog):
    """Megatron-Core (deepep by default) adds expert biases in FP32, with the all-to-all
    dispatcher in 16-bit, not under a whole-iteration graph; torchtitan adds them in the
    GEMM and keeps its experts 16-bit under FP8, Megatron-Core converts them."""
    core = catalog.frameworks["megatron-core"]
    titan = catalog.frameworks["torchtitan"]
    assert core.unfused_expert_bias and catalog.frameworks["megatron-lm"].unfused_expert_bias
    assert not titan.unfused_expert_bias and not titan.fp8_experts and core.fp8_experts
    flex, _ = resolve_recipe(RecipeChoices(precision="fp8"), "hopper", core)
    assert flex.kernels.expert_bias_prob_bytes == 4.0 and flex.kernels.fp8_experts
    a2a, _ = resolve_recipe(RecipeChoices(moe_dispatch="alltoall"), "hopper", core)
    assert a2a.kernels.expert_bias_prob_bytes == 2.0
    graphed, _ = resolve_recipe(RecipeChoices(cuda_graph="full_iteration"), "hopper", core)
    assert graphed.kernels.expert_bias_prob_bytes == 0.0
    fp8, _ = resolve_recipe(RecipeChoices(precision="fp8"), "hopper", titan)
    assert fp8.kernels.expert_bias_prob_bytes == 0.0 and not fp8.kernels.fp8_experts


def test_gpt_oss_experts_carry_biases(catalog):
    """gpt-oss-20b and -120b state expert biases with their source; other MoE models none."""
    for model_id in ("gpt-oss-20b", "gpt-oss-120b"):
        model = catalog.models[model_id]
        assert model.expert_bias and "modeling_gpt_oss.py" in model.sources["expert_bias"]
        assert geometry(model).expert_bias
    assert not catalog.models["qwen3-30b-a3b"].expert_bias


def test_16bit_experts_under_fp8_by_hand():
    """torchtitan under FP8: 8,000 tokens, top-2, 8 experts of width 1024, h 1024. The
    experts' GEMMs run 2 x 16,000 x 1024 x (2048 + 1024) = 100.7 GFLOP forward at the
    16-bit 100 TFLOP/s, not the FP8 200 (503 us more forward, twice that backward), and
    their casts go: 2 x (1024 + 1024) input and 2 x (2048 + 1024) gradient elements per
    token at 6 bytes (current scaling), 196.6 us and 294.9 us less."""
    fp8 = moe_cost(MOE, Kernels(fp8_recipe="current"), tokens=8000)
    bf16 = moe_cost(MOE, Kernels(fp8_recipe="current", fp8_experts=False), tokens=8000)
    flops = 2 * 16000 * 1024 * (2048 + 1024)
    assert float(bf16.gemm_fwd_s - fp8.gemm_fwd_s) == pytest.approx(flops / 200e12)
    assert float(bf16.gemm_bwd_s - fp8.gemm_bwd_s) == pytest.approx(2 * flops / 200e12)
    per_byte = FP8_CAST_BYTES["current"] * 8000 / 1e12
    assert float(fp8.elem_fwd_s - bf16.elem_fwd_s) == pytest.approx(per_byte * 2 * 2048)
    assert float(fp8.elem_bwd_s - bf16.elem_bwd_s) == pytest.approx(per_byte * 2 * 3072)


def test_16bit_shared_experts_under_fp8_by_hand():
    """A shared expert (width 1024) joins the routed ones in 16-bit: its GEMMs on all 8,000
    tokens, 2 x 8,000 x 1024 x 3072 FLOP, at half the rate, and its casts (1024 input and
    2048 gradient elements per token) go too."""
    geo = dataclasses.replace(MOE, shared_experts=1)
    routed = moe_cost(MOE, Kernels(fp8_recipe="current", fp8_experts=False), tokens=8000)
    fp8 = moe_cost(geo, Kernels(fp8_recipe="current"), tokens=8000)
    bf16 = moe_cost(geo, Kernels(fp8_recipe="current", fp8_experts=False), tokens=8000)
    plain = moe_cost(MOE, Kernels(fp8_recipe="current"), tokens=8000)
    shared = 2 * 8000 * 1024 * 3072
    assert float((bf16.gemm_fwd_s - routed.gemm_fwd_s) - (fp8.gemm_fwd_s - plain.gemm_fwd_s)) == (
        pytest.approx(shared / 200e12)
    )
    per_byte = FP8_CAST_BYTES["current"] * 8000 / 1e12
    assert float(fp8.elem_fwd_s - bf16.elem_fwd_s) == pytest.approx(per_byte * (4096 + 1024))
    assert float(fp8.elem_bwd_s - bf16.elem_bwd_s) == pytest.approx(per_byte * (6144 + 2048))


def test_16bit_experts_change_nothing_without_fp8():
    """Without FP8 the flag has nothing to keep in 16-bit."""
    one = moe_cost(MOE, Kernels(fp8_experts=False), tokens=8000)
    two = moe_cost(MOE, Kernels(), tokens=8000)
    assert float(one.fwd_s) == pytest.approx(float(two.fwd_s))
    assert float(one.bwd_s) == pytest.approx(float(two.bwd_s))


#: An inline gpt-oss-120b shape as the published tables print it (no expert biases).
GPT_OSS = {
    "name": "gpt-oss-120b",
    "layers": 36,
    "hidden": 2880,
    "heads": 64,
    "kv_heads": 8,
    "head_dim": 64,
    "ffn_hidden": 2880,
    "mlp": "swiglu",
    "experts": 128,
    "experts_per_token": 4,
    "seq_len": 4096,
    "vocab": 201088,
}


def run_file(tmp_path, model: dict):
    """A run file of one entry with ``model`` inline on one DGX H100."""
    path = tmp_path / "run.yaml"
    entry = {
        "id": "oss",
        "model": model,
        "run": {"topology": "dgx-h100", "tp": 1, "pp": 1, "dp": 8, "ep": 8, "global_batch": 8},
    }
    path.write_text(yaml.safe_dump(entry, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, True),
        ({"name": "openai/gpt-oss-120b"}, True),
        ({"expert_bias": False}, False),
        ({"experts": 64}, False),
        ({"name": "my-moe"}, False),
        ({"name": "my-moe", "expert_bias": True}, True),
    ],
)
def test_inline_shape_takes_the_named_models_expert_bias(tmp_path, catalog, changes, expected):
    """An inline shape that does not state ``expert_bias`` takes the hwdb model's its name
    spells (with as many experts); a stated value wins."""
    path = run_file(tmp_path, {**GPT_OSS, **changes})
    assert read_run_file(path, catalog)[0].model.expert_bias is expected


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"experts": 0, "experts_per_token": 0, "expert_bias": True}, "a dense model has no"),
        ({"expert_bias": "maybe"}, "expected true, false or null"),
    ],
)
def test_bad_expert_bias_in_a_run_file_is_one_line(tmp_path, catalog, changes, message):
    """Biases on a dense shape, or a value that is not a boolean, name file, line and key."""
    path = run_file(tmp_path, {**GPT_OSS, **changes})
    with pytest.raises(HwdbError, match=rf"run\.yaml:\d+: model\.expert_bias: {message}"):
        read_run_file(path, catalog)


def test_hwdb_model_with_biases_on_a_dense_shape_is_refused(tmp_path):
    """A models record stating expert biases without experts names file and key."""
    (tmp_path / "models.yaml").write_text(
        "models:\n- id: dense-biased\n  name: D\n  params_B: 1.0\n  layers: 2\n  hidden: 64\n"
        "  ffn_hidden: 256\n  heads: 4\n  kv_heads: 4\n  vocab: 100\n  seq_len: 128\n"
        "  expert_bias: true\n  source: test\n",
        encoding="utf-8",
    )
    with pytest.raises(HwdbError, match=r"models\.yaml:\d+: .*expert_bias: a dense model"):
        load_catalog([*shipped_hwdb_dirs(), tmp_path])


def test_mlp_and_moe_recompute_modules_each_on_their_own_layers():
    """Megatron-Core recomputes ``mlp`` on dense layers only ("if not self.is_moe_layer",
    transformer_layer.py at d98e8a64dd) and ``moe`` in MoE layers only (moe_layer.py): on
    an MoE layer ``mlp`` repeats nothing and ``moe`` its experts; on a dense layer the
    reverse; a mix of both layers weighs each by its share."""
    from fabricui.engine.training.step import _mix

    moe_layer = moe_cost(MOE, Kernels())
    dense_layer = layer_cost(ROUND, MOE, 1, 1, 1, 1, 1000, 0, moe=False, kernels=Kernels())
    assert float(moe_layer.recompute_s("selective", modules=("mlp",))) == 0.0
    assert float(moe_layer.recompute_s("selective", modules=("moe",))) == pytest.approx(
        float(moe_layer.mlp_fwd_s)
    )
    assert float(dense_layer.recompute_s("selective", modules=("moe",))) == 0.0
    assert float(dense_layer.recompute_s("selective", modules=("mlp",))) == pytest.approx(
        float(dense_layer.mlp_fwd_s)
    )
    mixed = _mix([(0.25, dense_layer), (0.75, moe_layer)])
    assert float(mixed.recompute_s("selective", modules=("mlp", "moe"))) == pytest.approx(
        0.25 * float(dense_layer.mlp_fwd_s) + 0.75 * float(moe_layer.mlp_fwd_s)
    )
