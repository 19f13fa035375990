"""ZeRO-2, FSDP and HSDP on a pipeline whose framework defers FSDP's gradient sync to the
last micro-batch (``Layout.pp_defers_fsdp_sync``: torch 2.6's pipeline stage with FSDP2,
as torchtitan runs it): each operation's count, scope and overlap checked by hand."""

from __future__ import annotations

import dataclasses

import pytest
from fabricui_strategies import hsdp, zero

from fabricui.engine.types import Layout

#: Llama 3 8B's parameters and layers as the strategies count them (``hwdb/models``:
#: ``params_B`` 8.03).
LLAMA3_8B_PARAMS, LLAMA3_8B_LAYERS = 8.03e9, 32

DEFERRED = Layout(
    tp=1,
    pp=2,
    dp=4,
    microbatches=4,
    global_batch=16,
    seq_len=8192,
    grad_reduce_bytes=4.0,
    bucket_params=-1.0,
    fsdp_reduce_bytes=4.0,
    pp_defers_fsdp_sync=True,
)


def _by_note(ops):
    return {op.note: op for op in ops}


def test_zero2_reduces_after_the_last_micro_batch(catalog):
    """ZeRO-2 (FSDP2 kept gathered after forward) reduce-scatters its FP32 gradients once a
    step either way; deferred, nothing is left to hide them behind. The parameter gather
    after the optimizer step still hides behind the first forward."""
    model = catalog.models["llama3-8b"]
    ops = zero.Zero2().operations(model, DEFERRED)
    scatters = [op for op in ops if op.collective == "reduce_scatter"]
    gathers = [op for op in ops if op.collective == "all_gather"]
    assert scatters and gathers
    for op in scatters:
        assert not op.overlappable
        assert op.resolved_scope == "step"
        assert op.note.endswith("after the last micro-batch's backward")
    assert all(op.overlappable for op in gathers)
    plain = zero.Zero2().operations(model, dataclasses.replace(DEFERRED, pp=1))
    assert all(op.overlappable for op in plain)
    unset = zero.Zero2().operations(model, dataclasses.replace(DEFERRED, pp_defers_fsdp_sync=False))
    assert all(op.overlappable for op in unset)


def test_zero1_is_not_fsdp():
    """ZeRO-1 keeps whole gradients (no FSDP module to defer): its reduction still hides."""
    from fabricui.model import ModelShape

    model = ModelShape(
        id="m", name="m", params_B=1.0, layers=4, hidden=1024, ffn_hidden=4096, heads=8,
        kv_heads=8, vocab=32000, seq_len=2048, source="test", mlp="swiglu",
    )  # fmt: skip
    ops = zero.Zero1().operations(model, DEFERRED)
    assert all(op.overlappable for op in ops)


def test_fsdp_gathers_m_plus_one_times_and_reduces_once(catalog):
    """FSDP (resharded after forward) on 2 stages of 16 layers, 4 micro-batches: a layer
    stays gathered from its first backward on, so the forward gathers run every
    micro-batch (16 x 4 = 64 calls, per layer) and the backward gather once a step (16
    calls, scope step); the FP32 reduce-scatter (twice the 16-bit layer) once a step, 16
    calls, not hidden. Without the deferral: 64 calls of each, all per layer."""
    model = catalog.models["llama3-8b"]
    layer_bytes = LLAMA3_8B_PARAMS * 2 / LLAMA3_8B_LAYERS  # 501,875,000
    ops = _by_note(zero.FSDP().operations(model, DEFERRED))
    fwd = ops["parameter all-gather per layer, forward"]
    assert (fwd.count, fwd.resolved_scope, fwd.overlappable) == (64, "layer", True)
    bwd = ops["parameter all-gather per layer, backward, once a step"]
    assert (bwd.count, bwd.resolved_scope, bwd.phase, bwd.overlappable) == (
        16,
        "step",
        "backward",
        True,
    )
    rs = ops["FP32 gradient reduce-scatter per layer, after the last micro-batch's backward"]
    assert (rs.count, rs.resolved_scope, rs.overlappable) == (16, "step", False)
    assert rs.size_bytes == fwd.size_bytes * 2
    assert fwd.size_bytes == pytest.approx(layer_bytes)
    plain = zero.FSDP().operations(model, dataclasses.replace(DEFERRED, pp_defers_fsdp_sync=False))
    assert [(op.count, op.resolved_scope, op.overlappable) for op in plain] == [
        (64, "layer", True)
    ] * 3


def test_fsdp_kept_gathered_after_forward_gathers_once_a_step(catalog):
    """Without resharding after forward (torchtitan's setting under PP) and deferred, each
    layer is gathered once a step, in the first forward (16 calls, scope step)."""
    model = catalog.models["llama3-8b"]
    ops = zero.FSDP().operations(model, dataclasses.replace(DEFERRED, fsdp_reshard=False))
    assert [(op.collective, op.count, op.resolved_scope, op.overlappable) for op in ops] == [
        ("all_gather", 16, "step", True),
        ("reduce_scatter", 16, "step", False),
    ]
    assert ops[0].phase == "forward"


def test_hsdp_all_reduce_waits_for_the_last_backward(catalog):
    """HSDP's replica all-reduce runs with the reduce-scatter, after the last backward."""
    model = catalog.models["llama3-8b"]
    lay = dataclasses.replace(DEFERRED, dp=8, global_batch=32, dp_shard=4)
    reduce = [op for op in hsdp.HSDP().operations(model, lay) if op.group == "dp_inter"]
    assert len(reduce) == 1 and not reduce[0].overlappable
    assert reduce[0].note.endswith("after the last micro-batch's backward")
    plain = dataclasses.replace(lay, pp_defers_fsdp_sync=False)
    assert [
        op.overlappable for op in hsdp.HSDP().operations(model, plain) if op.group == "dp_inter"
    ] == [True]
