"""A framework whose pipeline defers FSDP's gradient sync to a stage's last micro-batch
(``pp_defers_fsdp_sync``: torch 2.6.0's ``_PipelineStageBase.backward_maybe_with_nosync``
with FSDP2, as torchtitan 9dec370 runs it) holds the stage's parameters gathered and its
gradients whole at the reduce width, adds each micro-batch's gradient in, and
reduce-scatters once, after the last backward; each figure checked by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.device import make_device
from fabricui.engine.training.memory import (
    grad_accumulation_bytes,
    held_shards,
    sync_deferred,
)
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout

#: Llama 3 8B's two stages of 16 layers (h 4096, 32 query and 8 key/value heads of 128, f
#: 14,336, vocabulary 128,256): a layer 4096 x (4096 + 2 x 1024) + 4096 x 4096 + 3 x 4096 x
#: 14,336 + 2 x 4096 = 218,112,000 parameters; the first stage adds the embedding (128,256 x
#: 4096 = 525,336,576), the last the output layer and the final norm (525,340,672).
STAGE_PARAMS = (16 * 218_112_000 + 525_336_576, 16 * 218_112_000 + 525_336_576 + 4096)
#: TP 1, two stages, DP 4, two micro-batches of one 8,192-token sequence.
LAYOUT = Layout(tp=1, pp=2, dp=4, microbatches=2, global_batch=8, seq_len=8192)


def test_held_shards_by_hand():
    """Deferred on a pipeline with sharded gradients: weights and gradients whole, the
    gradients at the reduce width; unchanged without a pipeline, without the deferral, or
    when the strategy keeps whole gradients (DDP, ZeRO-1)."""
    assert [float(x) for x in held_shards(8, 8, 4.0, 2.0, 8, True)] == [1.0, 1.0, 2.0]
    assert [float(x) for x in held_shards(8, 8, 4.0, 2.0, 1, True)] == [8.0, 8.0, 4.0]
    assert [float(x) for x in held_shards(8, 8, 4.0, 2.0, 8, False)] == [8.0, 8.0, 4.0]
    assert [float(x) for x in held_shards(1, 1, 2.0, 4.0, 8, True)] == [1.0, 1.0, 2.0]
    w, g, width = held_shards(
        np.array([1.0, 8.0, 8.0]), np.array([8.0, 8.0, 1.0]), 4.0, 2.0, np.array([4, 1, 4]), True
    )
    assert (w.tolist(), g.tolist(), width.tolist()) == (
        [1.0, 8.0, 8.0],
        [1.0, 8.0, 1.0],
        [2.0, 4.0, 4.0],
    )
    assert sync_deferred(np.array([8, 8]), np.array([2, 1]), True).tolist() == [True, False]


def test_accumulation_bytes_by_hand():
    """FP32 reduction: the first micro-batch's cast reads 2 and writes 4 bytes, each later
    sum reads 4 + 2 and writes 4; over 8 micro-batches (6 + 7 x 10) / 8 = 9.5 bytes a
    micro-batch, over one 6. BF16 reduction: no cast, autograd's sum reads 2 + 2 and
    writes 2: over 4 micro-batches 3 x 6 / 4 = 4.5."""
    assert grad_accumulation_bytes(8, 4.0) == pytest.approx(9.5)
    assert grad_accumulation_bytes(1, 4.0) == pytest.approx(6.0)
    assert grad_accumulation_bytes(4, 2.0) == pytest.approx(4.5)


def test_torchtitan_defers_the_sync(catalog):
    """torchtitan's profile sets the field, with its source; Megatron-Core's does not."""
    titan = catalog.frameworks["torchtitan"]
    assert (
        titan.pp_defers_fsdp_sync and "pipelining/stage.py" in titan.sources["pp_defers_fsdp_sync"]
    )
    assert not catalog.frameworks["megatron-core"].pp_defers_fsdp_sync
    recipe, _ = resolve_recipe(RecipeChoices(), "hopper", titan)
    assert recipe.pp_defers_fsdp_sync


@pytest.fixture
def box(catalog):
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology

    return build_fabric(resolve_topology("dgx-h100-pod", catalog, 1), catalog)


def _plans(box, catalog, names, layout=LAYOUT):
    """The torchtitan plan and the same recipe without the deferral."""
    from fabricui.engine.training.step import plan
    from fabricui.services.plan import load_strategies
    from fabricui.services.session import pricer

    strategies = load_strategies()
    titan, _ = resolve_recipe(
        RecipeChoices(recompute="full"), "hopper", catalog.frameworks["torchtitan"]
    )
    plain = dataclasses.replace(titan, pp_defers_fsdp_sync=False)
    used = [strategies[n] for n in names]
    evaluate = pricer(box)
    model = catalog.models["llama3-8b"]
    return [plan(box, model, layout, used, evaluate=evaluate, recipe=r) for r in (titan, plain)]


def test_zero2_stage_holds_fp32_gradients_whole(box, catalog):
    """ZeRO-2 (FSDP2 kept gathered after forward), DP 4: deferred, the reported stage holds
    its BF16 weights (2 bytes a parameter, as ZeRO-2 does anyway), its whole FP32 gradient
    (4) and a quarter of the FP32 master and Adam moments (12 / 4 = 3); without the
    deferral a quarter of the gradient (1)."""
    deferred, plain = _plans(box, catalog, ("zero2", "pp"))
    for report, grad in ((deferred, 4.0), (plain, 1.0)):
        mem = report.memory
        params = STAGE_PARAMS[mem.stage]
        assert mem.weights_bytes == pytest.approx(2.0 * params)
        assert mem.grads_bytes == pytest.approx(grad * params)
        assert mem.optimizer_bytes == pytest.approx(3.0 * params)


def test_fsdp_stage_holds_weights_gathered(box, catalog):
    """FSDP, DP 4: deferred, weights whole (2 bytes a parameter) and gradients whole (4);
    without the deferral both a quarter (0.5 and 1)."""
    deferred, plain = _plans(box, catalog, ("fsdp", "pp"))
    for report, weights, grad in ((deferred, 2.0, 4.0), (plain, 0.5, 1.0)):
        mem = report.memory
        params = STAGE_PARAMS[mem.stage]
        assert (mem.weights_bytes, mem.grads_bytes) == pytest.approx(
            (weights * params, grad * params)
        )


def test_without_a_pipeline_nothing_is_deferred(box, catalog):
    """PP 1, DP 8: the deferral changes nothing, memory or step."""
    layout = Layout(tp=1, pp=1, dp=8, microbatches=2, global_batch=16, seq_len=8192)
    deferred, plain = _plans(box, catalog, ("zero2",), layout)
    assert deferred.memory.total_bytes == pytest.approx(plain.memory.total_bytes)
    assert deferred.step_us == pytest.approx(plain.step_us)


def test_gradient_sums_and_the_exposed_reduce_scatter(box, catalog):
    """Each micro-batch's compute on the critical stage grows by its parameters times
    (6 + 10) / 2 = 8 bytes (two micro-batches, FP32) over the GPU's HBM bandwidth, twice a
    step; the ZeRO-2 reduce-scatter is exposed whole, and more DP time is exposed than
    without the deferral, where it hides behind the last backward but its last bucket."""
    deferred, plain = _plans(box, catalog, ("zero2", "pp"))
    assert deferred.critical_stage == plain.critical_stage
    device, _ = make_device(box.gpu, deferred.recipe.precision, deferred.recipe.attention_kernel)
    extra_s = 2 * STAGE_PARAMS[deferred.critical_stage] * 8.0 / device.hbm_Bps
    assert (deferred.compute_us - plain.compute_us) * 1e-6 == pytest.approx(extra_s)
    scatter_us = sum(p.time_us for p in deferred.operations if p.op.collective == "reduce_scatter")
    assert scatter_us > 0
    assert deferred.exposed_us["dp"] >= scatter_us
    assert plain.exposed_us["dp"] < deferred.exposed_us["dp"]
    notes = [p.op.note for p in deferred.operations if p.op.collective == "reduce_scatter"]
    assert all(n.endswith("after the last micro-batch's backward") for n in notes)
    said = [a for a in deferred.assumptions if "defers FSDP's sync" in a]
    assert len(said) == 1 and "gradients whole (4 bytes each)" in said[0]
    assert not any("defers FSDP's sync" in a for a in plain.assumptions)


def test_search_fits_as_the_plan_counts(box, catalog):
    """The layout search's fit check adds what the plan adds: with ZeRO-2 on the two
    stages, three more bytes a parameter of the most loaded stage (4 whole against 1)."""
    from fabricui.services.plan import load_strategies

    model = catalog.models["llama3-8b"]
    titan, _ = resolve_recipe(
        RecipeChoices(recompute="full"), "hopper", catalog.frameworks["torchtitan"]
    )
    plain = dataclasses.replace(titan, pp_defers_fsdp_sync=False)
    layouts = [LAYOUT]
    cols = search_module._Columns.of(layouts, [False])
    stages = search_module._StageSplit.of(model, cols.arr["pp"])
    memory = search_module._StageMemory.of("full", geometry(model), titan, cols, stages)
    device, _ = make_device(box.gpu, titan.precision, titan.attention_kernel)
    zero2 = load_strategies()["zero2"]
    fits = [
        search_module._fit(zero2, model, layouts, r, device, memory, {})[0][0]
        for r in (titan, plain)
    ]
    deferred, undeferred = _plans(box, catalog, ("zero2", "pp"))
    stage = deferred.memory.stage
    assert fits[0] - fits[1] == pytest.approx(3.0 * STAGE_PARAMS[stage])
    assert fits[0] - fits[1] == pytest.approx(
        deferred.memory.total_bytes - undeferred.memory.total_bytes
    )
