"""What autograd keeps when the framework clamps a gated activation's halves in PyTorch ops
before its fused activation (Megatron-Core's ``weighted_bias_quick_geglu_impl``): each
``clamp`` saves its input, a view of the first GEMM's 16-bit output, and the activation's
``autograd.Function`` saves the concatenated copy, so the first GEMM's output is kept twice
unless ``moe_act`` (or ``moe``) is recomputed. Each figure checked by hand."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.memory import (
    CLAMP_SAVED_BYTES,
    activation_bytes,
    clamp_saved_bytes_per_token,
    layer_activation_bytes,
)
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.search import SearchSpace, candidate_layouts
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout
from tests.training.test_expert_kernels import MOE

MiB = 2**20
#: ``MOE`` (h 1024, 8 gated experts of width 1024, top-2, one MoE layer) with a clamp.
CLAMPED = dataclasses.replace(MOE, activation_clamp=7.0)
TOKENS = 4096


def _layer(geo, tp=1, recompute="none", modules=(), unfused_clamp=True, sp=0.0):
    return float(
        layer_activation_bytes(
            geo, tp, 1, 1, TOKENS, sp, recompute, "flash", modules=modules,
            unfused_clamp=unfused_clamp,
        )
    )  # fmt: skip


def test_clamp_keeps_the_first_gemms_output_again():
    """The concatenated copy of the two 16-bit halves: 2 + 2 bytes per element of the
    activation's output."""
    assert CLAMP_SAVED_BYTES == 2.0 + 2.0


@pytest.mark.parametrize(("tp", "sp", "mib"), [(1, 0.0, 32.0), (2, 0.0, 16.0), (2, 1.0, 16.0)])
def test_clamp_saved_by_hand(tp, sp, mib):
    """4,096 tokens, top-2, f 1024: 8,192 routed copies x 1,024 x 4 bytes = 32 MiB a layer,
    divided by TP like the experts' inner tensors (sequence parallelism does not split them
    further)."""
    extra = _layer(CLAMPED, tp, sp=sp) - _layer(CLAMPED, tp, sp=sp, unfused_clamp=False)
    assert extra / MiB == pytest.approx(mib)


@pytest.mark.parametrize(
    ("modules", "mib"),
    [((), 32.0), (("core_attn",), 32.0), (("moe_act",), 0.0), (("moe",), 0.0)],
    ids=["default", "core_attn", "moe_act", "moe"],
)
def test_nothing_kept_when_the_activation_is_recomputed(modules, mib):
    """``CheckpointWithoutOutput`` (``moe_act``) and the MoE block's ``checkpoint`` (``moe``)
    run the clamps without autograd: only the first GEMM's output stays, as without a
    clamp. Other modules keep the 32 MiB."""
    extra = _layer(CLAMPED, 1, "selective", modules) - _layer(
        CLAMPED, 1, "selective", modules, unfused_clamp=False
    )
    assert extra / MiB == pytest.approx(mib)


def test_a_stage_keeps_it_per_layer_and_micro_batch_or_while_rebuilding():
    """4 layers, 3 micro-batches in flight: 12 x 32 = 384 MiB kept without recompute; with
    ``moe_act`` none is kept but the layer whose backward rebuilds the activation holds the
    copy again (32 MiB), as does the layer full recompute rebuilds."""

    def stage(recompute, modules=(), unfused_clamp=True):
        return float(
            activation_bytes(
                CLAMPED, 4, 3, 1, 1, 1, TOKENS, 0.0, recompute, "flash", modules=modules,
                unfused_clamp=unfused_clamp,
            )
        )  # fmt: skip

    for recompute, modules, mib in (
        ("none", (), 384.0),
        ("selective", ("moe_act",), 32.0),
        ("full", (), 32.0),
    ):
        extra = stage(recompute, modules) - stage(recompute, modules, unfused_clamp=False)
        assert extra / MiB == pytest.approx(mib), recompute


@pytest.mark.parametrize(
    "geo",
    [
        MOE,
        dataclasses.replace(CLAMPED, gated=False),
        dataclasses.replace(CLAMPED, experts=0, top_k=0, moe_layers=0),
    ],
    ids=["no-clamp", "not-gated", "dense"],
)
def test_nothing_kept_without_a_clamped_expert_activation(geo):
    """No clamp, a plain (ungated) activation, or a dense model: nothing more."""
    assert clamp_saved_bytes_per_token(geo, ()) == 0.0
    assert _layer(geo) == pytest.approx(_layer(geo, unfused_clamp=False))


def test_gpt_oss_by_hand(catalog):
    """gpt-oss-120b (every layer MoE, top-4, f 2880): 4 x 4 x 2,880 = 46,080 bytes a token,
    180 MiB a layer for 4,096 tokens at TP 1."""
    geo = geometry(catalog.models["gpt-oss-120b"])
    assert clamp_saved_bytes_per_token(geo, ()) == pytest.approx(46080.0)
    extra = _layer(geo) - _layer(geo, unfused_clamp=False)
    assert extra / MiB == pytest.approx(180.0)


def test_plan_and_search_count_it_alike(catalog):
    """gpt-oss-120b on 8 H100s, TP 1, PP 1, EP 8, one 4,096-token sequence per
    micro-batch, no recompute: Megatron-Core's recipe (partial CUDA graphs) holds 36 x 180
    = 6,480 MiB more activations than the same recipe with the clamp fused, and the layout
    search's fit check counts as much; a whole-iteration graph (TE's fused grouped MLP)
    holds none."""
    from fabricui.engine.training.step import plan
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.plan import load_strategies
    from fabricui.services.session import pricer

    fabric = build_fabric(resolve_topology("dgx-h100-pod", catalog, 1), catalog)
    model = catalog.models["gpt-oss-120b"]
    core = catalog.frameworks["megatron-core"]
    clamped, _ = resolve_recipe(
        RecipeChoices(recompute="none", cuda_graph="partial"), "hopper", core
    )
    assert clamped.unfused_clamp
    fused = dataclasses.replace(clamped, unfused_clamp=False)
    whole, _ = resolve_recipe(
        RecipeChoices(recompute="none", cuda_graph="full_iteration"), "hopper", core
    )
    assert not whole.unfused_clamp
    layout = Layout(tp=1, pp=1, dp=8, ep=8, global_batch=8, microbatches=1, seq_len=4096)
    strategies = load_strategies()
    used = [strategies[n] for n in ("fsdp", "tp", "pp", "ep")]
    evaluate = pricer(fabric)
    acts = [
        plan(fabric, model, layout, used, evaluate=evaluate, recipe=r).memory.activations_bytes
        for r in (fused, clamped)
    ]
    assert (acts[1] - acts[0]) / MiB == pytest.approx(36 * 180.0)
    space = SearchSpace(micro_batches=(1,), vpp_degrees=(1,))
    layouts = [
        lay
        for lay in candidate_layouts(8, model, 8, 4096, space)
        if (lay.tp, lay.pp, lay.ep) == (1, 1, 8)
    ]
    assert layouts
    cols = search_module._Columns.of(layouts, [False] * len(layouts))
    stages = search_module._StageSplit.of(model, cols.arr["pp"])
    geo = geometry(model)
    fit = [search_module._StageMemory.of("none", geo, r, cols, stages) for r in (fused, clamped)]
    tokens = cols.b * cols.arr["seq_len"] / cols.arr["cp"]
    expected = (36 * 46080.0 * tokens).tolist()
    assert (fit[1].acts0 - fit[0].acts0).tolist() == pytest.approx(expected)
