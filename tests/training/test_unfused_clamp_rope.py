"""Megatron-Core's PyTorch-op passes for two gpt-oss properties, each checked by hand: the
clamp of a clamped gated activation in the experts (``weighted_bias_quick_geglu_impl``) and
rotary embeddings with YaRN's scale (``apply_rotary_pos_emb`` falls back to the unfused
path when YaRN's mscale is not 1)."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training.layer import (
    ACTIVATION_CLAMP_BYTES,
    PASS_BYTES,
    UNFUSED_ROPE_BYTES,
    Kernels,
    layer_cost,
)
from fabricui.engine.training.recipe import (
    RecipeChoices,
    activation_clamp_pass,
    resolve_recipe,
)
from fabricui.engine.training.shape import geometry
from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
from fabricui.hwdb.run_file import parse_runs
from fabricui.hwdb.yamlfile import parse_yaml
from tests.training.test_expert_kernels import MOE, ROUND, moe_cost

#: ``MOE`` with a clamped activation.
CLAMPED = dataclasses.replace(MOE, activation_clamp=7.0)
#: ``MOE`` with YaRN rotary embeddings (factor 32): queries 8 x 128, keys 8 x 128.
YARN = dataclasses.replace(MOE, rotary=True, rope_yarn_factor=32.0)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(shipped_hwdb_dirs())


def test_clamp_bytes_as_the_ops_move_them():
    """Two clamps of one half each (2 + 2 each) and a ``cat`` of both (4 + 4): 16 per
    element of the activation's output; backward two clamp gradients (2 + 2 + 2 each) and
    ``chunk``'s gradient joining the halves (4 + 4): 20."""
    assert ACTIVATION_CLAMP_BYTES == (2 * 4.0 + 8.0, 2 * 6.0 + 8.0)


@pytest.mark.parametrize("imbalance", [1.0, 1.5])
def test_clamp_pass_by_hand(imbalance):
    """1,000 tokens, top-2, f 1024: 2,048,000 activation elements (times the imbalance); at
    1 TB/s the clamps add 16 x 2.048 MB = 32.8 us forward and 20 x 2.048 MB = 41.0 us
    backward. They run inside ``bias_act_func``, so a ``moe_act`` (and ``moe``) recompute
    repeats the forward part; the GEMMs do not change."""
    kernels = Kernels(unfused_clamp=True)
    with_pass = moe_cost(CLAMPED, kernels, imbalance=imbalance)
    without = moe_cost(CLAMPED, Kernels(), imbalance=imbalance)
    elements = 1000 * 2 * 1024 * imbalance
    forward, backward = (elements * b / 1e12 for b in ACTIVATION_CLAMP_BYTES)
    assert float(with_pass.elem_fwd_s - without.elem_fwd_s) == pytest.approx(forward)
    assert float(with_pass.elem_bwd_s - without.elem_bwd_s) == pytest.approx(backward)
    for module in ("moe_act", "moe"):
        again = with_pass.recompute_s("selective", modules=(module,))
        base = without.recompute_s("selective", modules=(module,))
        assert float(again - base) == pytest.approx(forward)
    assert float(with_pass.gemm_fwd_s) == pytest.approx(float(without.gemm_fwd_s))


def test_no_clamp_pass_without_a_clamp_or_on_a_dense_layer():
    """An unclamped activation, or a dense layer (Megatron-Core's clamping path priced here
    is the experts'), moves nothing more."""
    kernels = Kernels(unfused_clamp=True)
    plain = moe_cost(MOE, kernels)
    assert float(plain.elem_fwd_s) == pytest.approx(float(moe_cost(MOE, Kernels()).elem_fwd_s))
    one = layer_cost(ROUND, CLAMPED, 1, 1, 1, 1, 1000, 0, kernels=kernels)
    two = layer_cost(ROUND, CLAMPED, 1, 1, 1, 1, 1000, 0, kernels=Kernels())
    assert float(one.elem_bwd_s) == pytest.approx(float(two.elem_bwd_s))


def test_clamp_pass_by_graphs():
    """A whole-iteration CUDA graph's recipes run Transformer Engine's fused grouped MLP,
    which clamps inside its kernel; partial graphs and none keep the separate clamps."""
    assert activation_clamp_pass(True, None)
    assert activation_clamp_pass(True, "partial")
    assert activation_clamp_pass(True, "none")
    assert not activation_clamp_pass(True, "full_iteration")
    assert not activation_clamp_pass(False, None)


def test_unfused_rope_bytes():
    """``t * cos`` (2 + 2), the negated half and ``cat`` (1 + 1, 2 + 2), ``* sin`` (2 + 2),
    the sum (4 + 2), the copy into the output (2 + 2): 24; backward 4 + 4 + 2 + 4 + 6: 20."""
    assert UNFUSED_ROPE_BYTES == (4 + 6 + 4 + 6 + 4.0, 4 + 4 + 2 + 4 + 6.0)


def test_unfused_rope_by_hand():
    """1,000 tokens, queries 1024 and keys 1024 wide: 2,048,000 elements; the unfused path
    moves 24 - 4 = 20 bytes an element more forward than the fused pass and 20 - 2 x 4 = 12
    more backward: 41.0 us and 24.6 us at 1 TB/s. Attention's GEMMs do not change."""
    kernels = Kernels(unfused_scaled_rope=True)
    with_ops = moe_cost(YARN, kernels)
    fused = moe_cost(YARN, Kernels())
    elements = 1000 * (1024 + 1024)
    rotary = PASS_BYTES["fused"]["rotary"]
    assert float(with_ops.elem_fwd_s - fused.elem_fwd_s) == pytest.approx(
        elements * (UNFUSED_ROPE_BYTES[0] - rotary) / 1e12
    )
    assert float(with_ops.elem_bwd_s - fused.elem_bwd_s) == pytest.approx(
        elements * (UNFUSED_ROPE_BYTES[1] - 2 * rotary) / 1e12
    )
    assert float(with_ops.gemm_fwd_s) == pytest.approx(float(fused.gemm_fwd_s))


@pytest.mark.parametrize(
    "geo",
    [
        dataclasses.replace(MOE, rotary=True),
        dataclasses.replace(YARN, rotary=False),
        dataclasses.replace(YARN, rope_yarn_factor=1.0),
        dataclasses.replace(YARN, kv_lora_rank=512, qk_rope_head_dim=64, qk_head_dim=192),
    ],
    ids=["no-yarn", "no-rotary", "factor-1", "mla"],
)
def test_no_unfused_rope_without_a_scale(geo):
    """Plain rotary embeddings, none, a YaRN factor of 1 (mscale 1) and multi-head latent
    attention (its own fused rotary kernels) keep the fused pass."""
    a = moe_cost(geo, Kernels(unfused_scaled_rope=True))
    b = moe_cost(geo, Kernels())
    assert float(a.elem_fwd_s) == pytest.approx(float(b.elem_fwd_s))
    assert float(a.elem_bwd_s) == pytest.approx(float(b.elem_bwd_s))


def test_megatron_core_runs_both_for_gpt_oss(catalog):
    """The hwdb's gpt-oss models state the clamp and the YaRN factor; Megatron-Core's recipe
    prices both passes, a whole-iteration graph the rotary one only; a framework without
    them (Automodel) neither."""
    for model_id in ("gpt-oss-20b", "gpt-oss-120b"):
        geo = geometry(catalog.models[model_id])
        assert (geo.activation_clamp, geo.rope_yarn_factor) == (7.0, 32.0)
    core = catalog.frameworks["megatron-core"]
    partial, _ = resolve_recipe(RecipeChoices(cuda_graph="partial"), "hopper", core)
    assert (partial.kernels.unfused_clamp, partial.kernels.unfused_scaled_rope) == (True, True)
    whole, _ = resolve_recipe(RecipeChoices(cuda_graph="full_iteration"), "hopper", core)
    assert (whole.kernels.unfused_clamp, whole.kernels.unfused_scaled_rope) == (False, True)
    auto, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["automodel"])
    assert (auto.kernels.unfused_clamp, auto.kernels.unfused_scaled_rope) == (False, False)


ROW = """
- id: row
  model:
    name: {name}
    layers: 36
    hidden: 2880
    heads: 64
    kv_heads: 8
    head_dim: 64
    ffn_hidden: 2880
    experts: 128
    experts_per_token: 4
    seq_len: 4096
    vocab: 201088{extra}
  run:
    topology: {{gpu: gb300, nodes: 16, gpus_per_node: 4,
               intra: {{fabric: nvswitch, link: nvlink5, hosts_per_domain: 18}},
               net: {{link: ib-xdr, gbps: 800, nics_per_node: 4}}}}
    tp: 1
    pp: 1
    dp: 64
    ep: 8
    global_batch: 512
    micro_batch: 1
    precision: bf16
    step_time_s: 1.0
"""


@pytest.mark.parametrize(
    ("name", "extra", "expected"),
    [
        ("gpt-oss-120b", "", (7.0, 32.0)),
        ("gpt-oss-120b", "\n    activation_clamp: 10.0\n    rope_yarn_factor: 4.0", (10.0, 4.0)),
        ("some-moe", "", (0.0, 0.0)),
    ],
    ids=["named", "stated", "unknown"],
)
def test_inline_shape_takes_the_named_models_clamp_and_yarn(catalog, name, extra, expected):
    """A published row's inline shape prints widths, not the clamp or the YaRN factor: it
    takes them from the hwdb model its name spells (same width and experts), unless it
    states them."""
    text = ROW.format(name=name, extra=extra)
    (entry,) = parse_runs(parse_yaml(text, "row.yaml"), catalog)
    assert (entry.model.activation_clamp, entry.model.rope_yarn_factor) == expected
