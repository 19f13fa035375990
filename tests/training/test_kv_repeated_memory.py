"""Keys and values repeated to the query heads before attention (torchtitan's ``repeat_kv``)
are what the attention saves for backward: the memory model keeps them at the query heads'
width where the layer keeps its attention inputs, each figure checked by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.memory import activation_bytes, layer_activation_bytes
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.search import SearchSpace, candidate_layouts
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout

MiB = 2**20


def test_repeated_keys_and_values_are_kept_at_the_query_width(catalog):
    """Llama 3 8B (h 4096, 32 query heads and 8 key/value heads of 128, gated f 14336), one
    8,192-token sequence, TP 1, no recompute: per token 8h = 32,768 (norm, QKV and MLP
    inputs), Q and the output 4 x 4,096, the MLP 6 x 14,336 = 86,016; K and V 4 x 1,024
    unrepeated (139,264 bytes a token, 1,088 MiB), 4 x 4,096 repeated (151,552, 1,184 MiB):
    96 MiB more. TP 2 (no SP) halves the split part: 86,016 and 92,160 bytes a token."""
    geo = geometry(catalog.models["llama3-8b"])
    plain = layer_activation_bytes(geo, 1, 1, 1, 8192, 0.0, "none", "flash")
    repeated = layer_activation_bytes(geo, 1, 1, 1, 8192, 0.0, "none", "flash", True)
    assert (float(plain) / MiB, float(repeated) / MiB) == pytest.approx((1088.0, 1184.0))
    tp2 = layer_activation_bytes(geo, 2, 1, 1, 8192, 0.0, "none", "flash", np.True_)
    assert float(tp2) == pytest.approx(92160 * 8192)
    tp2_plain = layer_activation_bytes(geo, 2, 1, 1, 8192, 0.0, "none", "flash")
    assert float(tp2_plain) == pytest.approx(86016 * 8192)


def test_recompute_modes_that_rebuild_the_copy_keep_the_key_value_width(catalog):
    """Selective recompute (PyTorch's op-level policy recomputes the copy; a recomputed
    attention core repeats inside) keeps K and V unrepeated: 1,088 MiB either way. Full
    recompute keeps each layer's input (2h: 64 MiB a layer, 2,048 MiB for 32) and rebuilds
    one layer's whole set at the query width while its backward runs: 2,048 + 1,184 =
    3,232 MiB, against 2,048 + 1,088 = 3,136 MiB without the repeat."""
    geo = geometry(catalog.models["llama3-8b"])
    for repeated in (False, True):
        sel = layer_activation_bytes(geo, 1, 1, 1, 8192, 0.0, "selective", "flash", repeated)
        assert float(sel) / MiB == pytest.approx(1088.0)
    full = [
        float(activation_bytes(geo, 32, 1, 1, 1, 1, 8192, 0.0, "full", "flash", repeated)) / MiB
        for repeated in (False, True)
    ]
    assert full == pytest.approx([3136.0, 3232.0])


def test_without_grouped_keys_the_repeat_changes_nothing():
    """A model with as many key/value heads as query heads repeats nothing."""
    from fabricui.model import ModelShape

    mha = ModelShape(
        id="mha", name="mha", params_B=1.0, layers=4, hidden=1024, ffn_hidden=4096,
        heads=8, kv_heads=8, vocab=32000, seq_len=2048, source="test", mlp="swiglu",
    )  # fmt: skip
    geo = geometry(mha)
    plain = layer_activation_bytes(geo, 2, 1, 1, 2048, 1.0, "none", "flash")
    repeated = layer_activation_bytes(geo, 2, 1, 1, 2048, 1.0, "none", "flash", True)
    assert float(repeated) == pytest.approx(float(plain))


def test_torchtitan_repeats_keys_and_values(catalog):
    """torchtitan's profile repeats K and V before attention; Megatron-Core's attention
    takes the grouped heads as they are."""
    titan, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["torchtitan"])
    core, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["megatron-core"])
    assert titan.kv_repeated and not core.kv_repeated
    assert catalog.frameworks["torchtitan"].sources["kv_repeated"]


def test_plan_and_search_count_the_repeat_alike(catalog):
    """Llama 3 8B on 8 H100s, TP 1, PP 1, DP 8, one 8,192-token sequence per micro-batch,
    no recompute: torchtitan's plan holds 32 layers x 96 MiB = 3,072 MiB more activations
    than the same recipe without the repeat, and the layout search's fit check counts the
    same 3,072 MiB."""
    from fabricui.engine.training.step import plan
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.plan import load_strategies
    from fabricui.services.session import pricer

    fabric = build_fabric(resolve_topology("dgx-h100-pod", catalog, 1), catalog)
    model = catalog.models["llama3-8b"]
    strategies = load_strategies()
    titan, _ = resolve_recipe(
        RecipeChoices(recompute="none"), "hopper", catalog.frameworks["torchtitan"]
    )
    plain = dataclasses.replace(titan, kv_repeated=False)
    layout = Layout(tp=1, pp=1, dp=8, global_batch=8, microbatches=1, seq_len=8192)
    used = [strategies[n] for n in ("fsdp", "tp", "pp")]
    evaluate = pricer(fabric)
    acts = [
        plan(fabric, model, layout, used, evaluate=evaluate, recipe=r).memory.activations_bytes
        for r in (plain, titan)
    ]
    assert (acts[1] - acts[0]) / MiB == pytest.approx(32 * 96.0)
    space = SearchSpace(micro_batches=(1,), vpp_degrees=(1,))
    layouts = [
        lay for lay in candidate_layouts(8, model, 8, 8192, space) if (lay.tp, lay.pp) == (1, 1)
    ]
    assert layouts
    cols = search_module._Columns.of(layouts, [False] * len(layouts))
    stages = search_module._StageSplit.of(model, cols.arr["pp"])
    geo = geometry(model)
    fit = [search_module._StageMemory.of("none", geo, r, cols, stages) for r in (plain, titan)]
    tokens = cols.b * cols.arr["seq_len"] / cols.arr["cp"]
    assert (fit[1].acts0 - fit[0].acts0).tolist() == pytest.approx((32 * 12288 * tokens).tolist())
