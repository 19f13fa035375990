"""Strategy plugins, layout groups, plans, the layout search and the decision table."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math

import numpy as np
import pytest
from fabricui_strategies import ddp, ep, hsdp, pp, tp, zero
from fabricui_strategies.pp import bubble_fraction

from fabricui.commands import plan as plan_command
from fabricui.commands import strategies as strategies_command
from fabricui.engine import training as engine
from fabricui.engine.collectives import Prediction
from fabricui.engine.training.legacy import legacy_flops_per_token
from fabricui.engine.training.search import SearchSpace, candidate_layouts
from fabricui.engine.types import CommOp, Layout
from fabricui.errors import EngineError, FabricError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.plugins import PluginHost
from fabricui.services.session import pricer

GiB = 2**30
BUCKET = 25 * 2**20
ALL = [
    ddp.DDP(),
    zero.Zero1(),
    zero.Zero2(),
    zero.FSDP(),
    hsdp.HSDP(),
    tp.TensorParallel(),
    tp.SequenceParallelTP(),
    pp.PipelineParallel(),
    ep.ExpertParallel(),
]
DEFAULT_SET = [ddp.DDP(), tp.TensorParallel(), pp.PipelineParallel(), ep.ExpertParallel()]


@pytest.fixture(scope="module")
def pod(catalog):
    """The 4-node DGX H100 pod (32 GPUs)."""
    return build_fabric(resolve_topology("dgx-h100-pod", catalog), catalog)


@pytest.fixture(scope="module")
def pod8(catalog):
    """The DGX H100 pod rescaled to 8 nodes (64 GPUs)."""
    return build_fabric(resolve_topology("dgx-h100-pod", catalog, 8), catalog)


#: Bytes a GPU sends per message byte, ring-asymptotic (nccl-tests bus factor as n grows).
WIRE = {"all_reduce": 2.0, "all_gather": 1.0, "reduce_scatter": 1.0, "all_to_all": 1.0}


def volume(ops: list[CommOp]) -> float:
    """Message bytes per step over all operations: sum of size x count."""
    return sum(op.size_bytes * op.count for op in ops)


def wire_bytes(ops: list[CommOp]) -> float:
    """Bytes each GPU sends per step (the ZeRO paper's volume: all-reduce of Psi is 2 Psi)."""
    return sum(op.size_bytes * op.count * WIRE[op.collective] for op in ops)


# --- strategies: hand-computed bytes and counts ----------------------------------------------


def test_ddp_all_reduces_two_bytes_per_parameter(catalog):
    """DDP on llama3-8b: 2 * 8.03e9 bytes in 613 buckets of at most 25 MiB, overlappable."""
    model = catalog.models["llama3-8b"]
    (op,) = ddp.DDP().operations(model, Layout(dp=8))
    assert (op.collective, op.group, op.overlappable) == ("all_reduce", "dp", True)
    assert volume([op]) == pytest.approx(2 * 8.03e9)
    assert op.count == math.ceil(2 * 8.03e9 / BUCKET) == 613
    assert op.size_bytes <= BUCKET


def test_ddp_reduces_the_tp_pp_shard(catalog):
    """With tp 8 x pp 4 each GPU reduces 2 * params / 32 bytes."""
    model = catalog.models["llama3-70b"]
    ops = ddp.DDP().operations(model, Layout(tp=8, pp=4, dp=2))
    assert volume(ops) == pytest.approx(2 * 70.6e9 / 32)


def test_zero1_and_zero2_move_what_ddp_moves(catalog):
    """ZeRO-1/2: reduce-scatter + all-gather of the gradients/parameters: DDP's 2 Psi."""
    model = catalog.models["llama3-8b"]
    layout = Layout(dp=8)
    for strategy in (zero.Zero1(), zero.Zero2()):
        ops = strategy.operations(model, layout)
        assert [op.collective for op in ops] == ["reduce_scatter", "all_gather"]
        assert wire_bytes(ops) == pytest.approx(wire_bytes(ddp.DDP().operations(model, layout)))
        assert volume(ops[:1]) == volume(ops[1:]) == pytest.approx(2 * 8.03e9)


def test_fsdp_is_one_and_a_half_ddp(catalog):
    """FSDP on llama3-70b: 3 collectives x 80 layers of 70.6e9 * 2 / 80 bytes: 3 Psi = 1.5x DDP."""
    model = catalog.models["llama3-70b"]
    layout = Layout(dp=8)
    ops = zero.FSDP().operations(model, layout)
    assert [op.collective for op in ops] == ["all_gather", "all_gather", "reduce_scatter"]
    assert all(op.size_bytes == pytest.approx(70.6e9 * 2 / 80) for op in ops)
    assert all(op.count == 80 and op.overlappable for op in ops)
    psi = 2 * 70.6e9
    assert wire_bytes(ops) == pytest.approx(3 * psi)
    assert wire_bytes(ddp.DDP().operations(model, layout)) == pytest.approx(2 * psi)


def test_fsdp_gathers_again_for_every_microbatch(catalog):
    """With 4 micro-batches FSDP's per-layer collectives run 4 times; DDP's all-reduce once."""
    model = catalog.models["llama3-8b"]
    one, four = Layout(dp=8), Layout(dp=8, microbatches=4, global_batch=32)
    assert volume(zero.FSDP().operations(model, four)) == pytest.approx(
        4 * volume(zero.FSDP().operations(model, one))
    )
    assert volume(ddp.DDP().operations(model, four)) == volume(ddp.DDP().operations(model, one))


def test_hsdp_shards_in_the_group_and_all_reduces_the_shard(catalog):
    """HSDP dp 32 / shard 8: FSDP on dp_intra, all-reduce of 2 * params / 8 on dp_inter."""
    model = catalog.models["llama3-70b"]
    ops = hsdp.HSDP().operations(model, Layout(dp=32, dp_shard=8))
    assert [op.group for op in ops] == ["dp_intra"] * 3 + ["dp_inter"]
    assert ops[-1].collective == "all_reduce" and ops[-1].count == 1
    assert ops[-1].size_bytes == pytest.approx(2 * 70.6e9 / 8)
    assert volume(ops[:3]) == pytest.approx(volume(zero.FSDP().operations(model, Layout(dp=8))))


def test_hsdp_with_one_shard_group_is_fsdp(catalog):
    """dp_shard == dp (or unset): no replicas, so no all-reduce."""
    model = catalog.models["llama3-8b"]
    for layout in (Layout(dp=8, dp_shard=8), Layout(dp=8)):
        assert [op.group for op in hsdp.HSDP().operations(model, layout)] == ["dp_intra"] * 3


def test_tp_does_320_all_reduces_for_70b(catalog):
    """llama3-70b, tp 8, one 8192-token micro-batch: 2 x (fwd + bwd) x 80 = 320 of b*s*h*2."""
    model = catalog.models["llama3-70b"]
    ops = tp.TensorParallel().operations(model, Layout(tp=8, seq_len=8192))
    assert {op.collective for op in ops} == {"all_reduce"}
    assert sum(op.count for op in ops) == 320
    assert all(op.size_bytes == 8192 * 8192 * 2 and not op.overlappable for op in ops)


def test_tp_counts_per_stage_and_microbatch(catalog):
    """pp 4 and 8 micro-batches of 2 sequences: 4 x 20 layers x 8 calls of 2 * s * h * 2 bytes."""
    model = catalog.models["llama3-70b"]
    layout = Layout(tp=8, pp=4, dp=1, microbatches=8, global_batch=16, seq_len=4096)
    ops = tp.TensorParallel().operations(model, layout)
    assert sum(op.count for op in ops) == 4 * 20 * 8
    assert ops[0].size_bytes == 2 * 4096 * 8192 * 2


def test_sequence_parallel_swaps_all_reduce_for_gather_and_scatter(catalog):
    """TP + SP: an all-gather and a reduce-scatter of the same bytes for each all-reduce."""
    model = catalog.models["llama3-70b"]
    layout = Layout(tp=8, seq_len=8192)
    sp_ops = tp.SequenceParallelTP().operations(model, layout)
    assert sorted({op.collective for op in sp_ops}) == ["all_gather", "reduce_scatter"]
    assert sum(op.count for op in sp_ops) == 640
    assert volume(sp_ops) == pytest.approx(
        2 * volume(tp.TensorParallel().operations(model, layout))
    )


def test_pp_sends_activations_per_microbatch(catalog):
    """PP: one b*s*h*2 send forward and one backward per micro-batch, overlappable."""
    model = catalog.models["llama3-70b"]
    layout = Layout(pp=4, dp=2, microbatches=16, global_batch=32, seq_len=8192)
    ops = pp.PipelineParallel().operations(model, layout)
    assert [op.collective for op in ops] == ["send_recv", "send_recv"]
    assert all(op.count == 16 and op.overlappable for op in ops)
    assert all(op.size_bytes == 8192 * 8192 * 2 for op in ops)


def test_bubble_fraction():
    """(p - 1) / (m + p - 1): 3/19 for 4 stages and 16 micro-batches; 0 without a pipeline."""
    assert bubble_fraction(4, 16) == pytest.approx(3 / 19)
    assert bubble_fraction(1, 8) == 0.0
    assert bubble_fraction(8, 1) == pytest.approx(7 / 8)


def test_ep_all_to_alls_per_moe_layer(catalog):
    """mixtral ep 8: 2 + 2 all-to-alls x 32 MoE layers of tokens * top-2 * 4096 * 2 bytes."""
    model = catalog.models["mixtral-8x7b"]
    layout = Layout(dp=8, ep=8, global_batch=8, seq_len=4096)
    ops = ep.ExpertParallel().operations(model, layout)
    assert {op.collective for op in ops} == {"all_to_all"}
    assert sum(op.count for op in ops) == 4 * 32
    assert all(op.size_bytes == 4096 * 2 * 4096 * 2 and not op.overlappable for op in ops)


def test_applicability(catalog):
    """Each strategy applies only when its degree is above 1 (EP: MoE models only)."""
    dense, moe = catalog.models["llama3-70b"], catalog.models["mixtral-8x7b"]
    single = Layout()
    for strategy in ALL:
        assert not strategy.applicable(dense, single)
    assert ddp.DDP().applicable(dense, Layout(dp=2))
    assert tp.TensorParallel().applicable(dense, Layout(tp=2))
    assert pp.PipelineParallel().applicable(dense, Layout(pp=2))
    assert not ep.ExpertParallel().applicable(dense, Layout(dp=2, ep=2))
    assert ep.ExpertParallel().applicable(moe, Layout(dp=2, ep=2))


def test_plugins_register_through_the_host():
    """Every module's hookimpl registers its strategies with the plugin host."""
    host = PluginHost(load_external=False, builtins=False)
    for module in (ddp, zero, hsdp, tp, pp, ep):
        assert host.register(module, name=f"test-{module.__name__}")
    assert set(host.strategies()) == {s.name for s in ALL}


# --- engine: FLOPs, groups, pricing ----------------------------------------------------------


def test_model_flops_per_token(catalog):
    """6 * N + 6 * L * s * h (N: active parameters for MoE)."""
    dense, moe = catalog.models["llama3-8b"], catalog.models["mixtral-8x7b"]
    assert legacy_flops_per_token(dense, 4096) == pytest.approx(6 * 8.03e9 + 6 * 32 * 4096 * 4096)
    assert legacy_flops_per_token(moe, 1024) == pytest.approx(6 * 12.9e9 + 6 * 32 * 1024 * 4096)


def test_layout_groups_small_case():
    """tp 2, pp 2, dp 2 on 8 GPUs: TP pairs are consecutive, PP stride 2, DP stride 4."""
    groups = engine.layout_groups(8, 8, Layout(tp=2, pp=2, dp=2))
    as_lists = {k: [g.tolist() for g in v] for k, v in groups.items()}
    assert as_lists["tp"] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert as_lists["pp"] == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert as_lists["dp"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert as_lists["ep"] == [[r] for r in range(8)]
    assert as_lists["dp_intra"][0] == [0, 4] and as_lists["dp_inter"][0] == [0]


def test_layout_groups_split_dp_by_node():
    """With 4 GPUs per node DP pairs {0, 4} straddle nodes: shard 1, replicas across."""
    groups = engine.layout_groups(8, 4, Layout(tp=2, pp=2, dp=2))
    assert groups["dp_intra"][0].tolist() == [0]
    assert groups["dp_inter"][0].tolist() == [0, 4]


def test_layout_groups_ep_inside_dp():
    """tp 2, ep 2, dp 4: EP groups stride tp, within the DP groups."""
    groups = engine.layout_groups(8, 8, Layout(tp=2, dp=4, ep=2))
    assert [g.tolist() for g in groups["ep"]] == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert [g.tolist() for g in groups["dp"]] == [[0, 2, 4, 6], [1, 3, 5, 7]]


@pytest.mark.parametrize(
    "layout",
    [Layout(tp=8, pp=2, dp=2), Layout(tp=2, pp=4, dp=4, ep=2), Layout(dp=32), Layout(tp=4, dp=8)],
)
def test_layout_groups_partition_the_ranks(layout):
    """Every axis's groups cover each rank exactly once."""
    groups = engine.layout_groups(32, 8, layout)
    for axis in engine.AXES:
        ranks = np.sort(np.concatenate(groups[axis]))
        assert ranks.tolist() == list(range(layout.world)), axis


def test_layout_groups_refuse_too_many_gpus():
    """A layout larger than the fabric is an EngineError with a one-line message."""
    with pytest.raises(EngineError, match="layout needs 64 GPUs"):
        engine.layout_groups(32, 8, Layout(tp=8, pp=8))
    with pytest.raises(EngineError, match=r"ep 3 x etp 1 must divide tp x cp x dp = 4"):
        engine.layout_groups(32, 8, Layout(dp=4, ep=3))


def test_expert_groups_span_tp_ranks_when_etp_is_one():
    """Megatron-Core forms expert groups from a stage's TP x DP ranks: TP2, EP32, DP16 on
    32 GPUs per stage is one EP group of 32 consecutive ranks, and each rank holds its
    own experts (no expert data parallelism); with ETP 2 the same layout is refused."""
    groups = engine.layout_groups(64, 8, Layout(tp=2, dp=16, ep=32, etp=1, pp=2))
    assert groups["ep"].tolist() == [list(range(32)), list(range(32, 64))]
    assert groups["edp"].shape == (64, 1)
    assert groups["pp"][0].tolist() == [0, 32]
    with pytest.raises(EngineError, match="ep 32 x etp 2 must divide"):
        engine.layout_groups(64, 8, Layout(tp=2, dp=16, ep=32, pp=2))


def test_expert_data_parallel_groups_hold_the_same_experts():
    """TP2, DP8, EP4 (expert TP 2): a stage's 16 ranks are 2 expert-data-parallel copies of
    4 x 2 expert shards; the EP group strides over the TP pairs."""
    groups = engine.layout_groups(64, 8, Layout(tp=2, dp=8, ep=4, pp=4))
    assert groups["ep"][0].tolist() == [0, 2, 4, 6]
    assert groups["edp"][0].tolist() == [0, 32]


def fake_evaluate(fabric, op, size_bytes, ranks=None):
    """100 us per call whatever the collective."""
    sizes = np.atleast_1d(np.asarray(size_bytes, dtype=float))
    return Prediction(op, len(ranks), sizes, np.full(sizes.shape, 100.0), ("fake",) * sizes.size)


def test_price_operations_hides_overlappable_up_to_compute(pod):
    """Overlappable ops share the compute window; the rest is exposed in full."""
    ops = [
        CommOp("ddp", "all_reduce", "dp", 1e6, 10, True),
        CommOp("pp", "send_recv", "pp", 1e6, 5, True),
        CommOp("tp", "all_reduce", "tp", 1e6, 3, False),
    ]
    groups = engine.layout_groups(32, 8, Layout(tp=2, pp=2, dp=8))
    priced = engine.price_operations(pod, ops, groups, fake_evaluate, overlap_us=1200.0)
    assert [p.time_us for p in priced] == [1000.0, 500.0, 300.0]
    assert [p.group_size for p in priced] == [8, 2, 2]
    assert sum(p.exposed_us for p in priced[:2]) == pytest.approx(300.0)
    assert priced[0].exposed_us == pytest.approx(200.0) and priced[2].exposed_us == 300.0


def test_price_operations_single_rank_costs_nothing(pod):
    """A one-rank group moves nothing."""
    ops = [CommOp("ddp", "all_reduce", "dp", 1e9, 1, True)]
    groups = engine.layout_groups(32, 8, Layout(tp=8))
    (priced,) = engine.price_operations(pod, ops, groups)
    assert priced.time_us == 0.0 and priced.algorithm == "-"


# --- plan and search -------------------------------------------------------------------------


def test_plan_step_adds_up(pod, catalog):
    """plan on dgx-h100-pod: step = compute + exposed comm + bubble, each part as defined."""
    model = catalog.models["llama3-70b"]
    layout = Layout(tp=8, pp=2, dp=2, microbatches=16, global_batch=32, seq_len=4096)
    report = engine.plan(pod, model, layout, DEFAULT_SET, mfu=0.4)
    flops = 32 * 4096 * legacy_flops_per_token(model, 4096) / 32
    assert report.compute_us == pytest.approx(flops / (989.4e12 * 0.4) * 1e6)
    assert report.step_us == pytest.approx(
        report.compute_us + report.exposed_comm_us + report.bubble_us
    )
    assert report.bubble_fraction == pytest.approx(bubble_fraction(2, 16))
    assert 0 < report.exposed_comm_us <= report.comm_us
    assert set(report.strategies) == {"ddp", "tp", "pp"}
    sizes = {p.op.group: p.group_size for p in report.operations}
    assert sizes == {"dp": 2, "tp": 8, "pp": 2}
    tp_rows = [p for p in report.operations if p.op.strategy == "tp"]
    assert all(p.exposed_us == p.time_us > 0 for p in tp_rows)


def test_plan_json_shape(pod, catalog):
    """PlanReport.to_json has the operations table and the step breakdown."""
    layout = Layout(tp=8, dp=4, global_batch=4)
    report = engine.plan(pod, catalog.models["llama3-8b"], layout, DEFAULT_SET)
    data = json.loads(json.dumps(report.to_json()))
    assert {"operations", "compute_us", "exposed_comm_us", "bubble_us", "step_us"} <= set(data)
    assert {
        "strategy",
        "collective",
        "group_size",
        "size_bytes",
        "count",
        "time_us",
        "exposed_us",
    } <= set(data["operations"][0])


def test_plan_tp_inside_a_node_beats_tp_across(pod, catalog):
    """TP on NVLink (Megatron order) is cheaper than the same all-reduces across nodes."""
    model = catalog.models["llama3-70b"]
    report = engine.plan(pod, model, Layout(tp=8, dp=4, global_batch=4), DEFAULT_SET)
    inside = next(p for p in report.operations if p.op.group == "tp")
    across = engine.price_operations(pod, [inside.op], {"tp": [np.arange(8) * 4]})[0]
    assert inside.ranks == tuple(range(8))
    assert across.time_us > 3 * inside.time_us


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (Layout(tp=8, pp=8), "layout needs 64 GPUs, dgx-h100-pod has 32"),
        (Layout(tp=3, dp=2), "tp 3 does not divide llama3-70b's 64 attention heads"),
        (Layout(pp=2, vpp=41, microbatches=2, global_batch=2), "pp 2 x vpp 41 exceeds"),
        (Layout(cp=3, seq_len=4096), "cp 3 does not divide the sequence"),
        (Layout(dp=4, ep=2, global_batch=4), "dense"),
        (Layout(dp=4, global_batch=6), "global batch 6 is not a multiple"),
    ],
)
def test_plan_refuses_bad_layouts(pod, catalog, layout, message):
    """Invalid layouts raise EngineError with a one-line message."""
    with pytest.raises(EngineError, match=message) as info:
        engine.plan(pod, catalog.models["llama3-70b"], layout, DEFAULT_SET)
    assert "\n" not in str(info.value)


def test_search_returns_ten_valid_layouts_sorted(pod, catalog):
    """search: at most 10 plans, fastest first, each a valid layout on all 32 GPUs."""
    model = catalog.models["llama3-70b"]
    plans = engine.search_layouts(pod, model, DEFAULT_SET, global_batch=32, seq_len=4096)
    assert 0 < len(plans) <= 10
    steps = [p.step_us for p in plans]
    assert steps == sorted(steps)
    for p in plans:
        lay = p.layout
        assert lay.world == 32 and model.heads % lay.tp == 0 and model.layers % lay.pp == 0
        assert lay.global_batch % (lay.dp * lay.microbatches) == 0


def test_search_enumerates_moe_expert_degrees(pod, catalog):
    """For an MoE model valid layouts include ep > 1, and every ep divides the experts and,
    at ETP = TP, dp (below it, ``ep x etp`` divides ``tp x cp x dp``)."""
    model = catalog.models["mixtral-8x7b"]
    layouts = candidate_layouts(32, model, 32, 4096, SearchSpace())
    assert any(lay.ep > 1 for lay in layouts)
    assert all(model.experts % lay.ep == 0 for lay in layouts)
    assert all(lay.dp % lay.ep == 0 for lay in layouts if lay.expert_tp == lay.tp)
    assert all((lay.tp * lay.cp * lay.dp) % (lay.ep * lay.expert_tp) == 0 for lay in layouts)
    assert all(lay.pp == 1 or lay.microbatches >= lay.pp for lay in layouts)


# --- decision table --------------------------------------------------------------------------

EXPECTED = {
    "tp": (True, False),
    "ddp": (True, True),
    "pp": (True, True),
    "fsdp": (True, False),
    "hsdp": (True, True),
}


@pytest.mark.parametrize("fixture", ["pod", "pod8"])
def test_decision_table_reproduces_the_seed(request, catalog, fixture):
    """llama3-70b on the DGX H100 pod: the seed's table, computed (degree 4 and degree 8)."""
    fabric = request.getfixturevalue(fixture)
    table = engine.decision_table(
        fabric, catalog.models["llama3-70b"], ALL, evaluate=pricer(fabric)
    )
    rows = {row.name: row for row in table.rows}
    assert list(rows) == ["ddp", "fsdp", "hsdp", "tp", "pp", "ep"]
    for name, (intra, inter) in EXPECTED.items():
        assert (rows[name].intra_ok, rows[name].inter_ok) == (intra, inter), name
    # EP does not apply to a dense model: the row says so and carries no figures.
    ep_row = rows["ep"]
    assert not ep_row.applies and (ep_row.intra_verdict, ep_row.inter_verdict) == ("n/a", "n/a")
    assert ep_row.comm_us_intra is None and "dense" in ep_row.note
    for row in table.rows:
        assert row.step_us == table.step_us
        if row.applies:
            assert row.comm_us_inter > row.comm_us_intra, row.name


def test_decision_table_on_one_node_has_no_inter_column(catalog):
    """A single node: intra only."""
    fabric = build_fabric(resolve_topology("dgx-h100", catalog), catalog)
    table = engine.decision_table(fabric, catalog.models["llama3-8b"], ALL)
    assert all(r.comm_us_inter is None and r.inter_ok is None for r in table.rows)
    assert all(r.intra_ok is not None for r in table.rows if r.applies)
    assert [r.name for r in table.rows if not r.applies] == ["ep"]


def test_decision_table_for_moe_uses_the_model(pod, catalog):
    """mixtral's EP row is priced on its own experts (no dense-model note)."""
    table = engine.decision_table(pod, catalog.models["mixtral-8x7b"], ALL)
    rows = {row.name: row for row in table.rows}
    assert rows["ep"].note == "" and rows["ep"].intra_ok
    assert (rows["tp"].intra_ok, rows["tp"].inter_ok) == (True, False)


def test_decision_table_names_missing_strategies(pod, catalog):
    """A strategy no plugin registers (disabled, broken) is named and left out; the others
    are priced as before; with none of them the table is one error."""
    model = catalog.models["llama3-8b"]
    full = engine.decision_table(pod, model, ALL)
    table = engine.decision_table(pod, model, ALL[:-1])
    assert table.missing == ("ep",) and full.missing == ()
    assert table.rows == tuple(row for row in full.rows if row.name != "ep")
    assert table.to_json()["missing"] == ["ep"]
    with pytest.raises(EngineError, match="no strategy registered"):
        engine.decision_table(pod, model, [])


def test_a_disabled_strategy_plugin_leaves_the_table_working(run_cli, monkeypatch):
    """FABRICUI_DISABLE_PLUGINS=ddp: no ddp row, a line naming it, status 0."""
    from fabricui.plugins import get_host

    monkeypatch.setenv("FABRICUI_DISABLE_PLUGINS", "ddp")
    get_host.cache_clear()
    try:
        status, out, _ = run_cli("strategies", "-t", "dgx-h100-pod")
    finally:
        monkeypatch.delenv("FABRICUI_DISABLE_PLUGINS")
        get_host.cache_clear()
    assert status == 0
    assert "\nddp " not in out and "not loaded: ddp" in out


# --- CLI -------------------------------------------------------------------------------------


def parse(module, *argv: str) -> argparse.Namespace:
    """Parse argv with a parser holding just ``module``'s subcommand."""
    parser = argparse.ArgumentParser()
    module.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(list(argv))


def run_json(capsys, module, *argv: str) -> dict:
    """Run a subcommand with --json; its parsed output."""
    assert module.run(parse(module, *argv, "--json")) == 0
    return json.loads(capsys.readouterr().out)


def test_strategies_cli_json_shape(capsys):
    """strategies --json: model, topology, step_us and the six rows with the documented keys."""
    data = run_json(capsys, strategies_command, "strategies", "-m", "llama3-70b")
    assert {"model", "topology", "step_us", "strategies"} <= set(data)
    assert data["model"] == "llama3-70b" and data["topology"] == "dgx-h100-pod"
    assert [s["name"] for s in data["strategies"]] == ["ddp", "fsdp", "hsdp", "tp", "pp", "ep"]
    keys = {"name", "comm_us_intra", "comm_us_inter", "intra_ok", "inter_ok"}
    assert all(keys <= set(s) for s in data["strategies"])


def test_strategies_cli_text(capsys):
    """The text table has the seed's columns."""
    assert strategies_command.run(parse(strategies_command, "strategies")) == 0
    out = capsys.readouterr().out
    assert "OK intra?" in out and "OK inter?" in out and "marginal" in out


def test_plan_cli_json_shape(capsys):
    """plan --json: operations and the step breakdown."""
    data = run_json(capsys, plan_command, "plan", "--tp", "8", "--pp", "2", "--seq", "4096")
    assert data["layout"]["dp"] == 2 and data["layout"]["microbatches"] == 8
    # On Hopper TP runs with sequence parallelism unless --no-sp (as Megatron-Core does).
    assert {op["strategy"] for op in data["operations"]} == {"ddp", "tp-sp", "pp"}
    parts = (
        data["compute_us"]
        + data["recompute_us"]
        + data["exposed_comm_us"]
        + data["bubble_us"]
        + data["optimizer_us"]
    )
    assert data["step_us"] == pytest.approx(parts)
    assert sum(data["breakdown_us"].values()) == pytest.approx(data["step_us"])


def test_plan_cli_search_json(capsys):
    """plan --search --json: at most 10 plans, sorted."""
    data = run_json(capsys, plan_command, "plan", "--search", "-m", "llama3-8b", "--seq", "2048")
    steps = [p["step_us"] for p in data["plans"]]
    assert 0 < len(steps) <= 10 and steps == sorted(steps)


def test_plan_cli_text_and_options(capsys):
    """Text output names every part of the step; --dp-strategy and --sp pick strategies."""
    args = parse(plan_command, "plan", "--tp", "2", "--dp-strategy", "hsdp", "--sp")
    assert plan_command.run(args) == 0
    out = capsys.readouterr().out
    assert "compute" in out and "exposed comm" in out and "pipeline bubble" in out
    assert "tp-sp" in out and "dp_intra" in out


def test_plan_cli_minimal_namespace(capsys):
    """run() accepts a bare Namespace (defaults for everything not given)."""
    args = argparse.Namespace(model="llama3-8b", topology="dgx-h100", tp=8, json=True)
    assert plan_command.run(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["layout"]["tp"] == 8 and data["layout"]["dp"] == 1


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", "--tp", "16", "--pp", "4"),
        ("plan", "--model", "nope"),
        ("plan", "--tp", "0"),
        ("plan", "--topology", "nope"),
        ("plan", "-m", "mixtral-8x7b", "--ep", "3", "--dp", "3"),
    ],
)
def test_plan_cli_errors_are_fabric_errors(argv):
    """Bad input raises a FabricError (printed as one line, exit 2, by the main CLI)."""
    with pytest.raises(FabricError) as info:
        plan_command.run(parse(plan_command, *argv))
    assert "\n" not in str(info.value)


def test_strategies_cli_bad_degree():
    """--degree beyond a node or the node count is refused."""
    with pytest.raises(FabricError, match="degree must be 2..4"):
        strategies_command.run(parse(strategies_command, "strategies", "--degree", "8"))


def test_load_strategies_has_the_builtins():
    """The command layer finds every built-in strategy (plugin host or direct import)."""
    from fabricui.services.plan import load_strategies

    assert {s.name for s in ALL} <= set(load_strategies())


def test_layout_default_dp_fills_the_fabric(pod, catalog):
    """Without --dp the layout uses every GPU; micro-batches default to 4 x pp."""
    args = parse(plan_command, "plan", "--tp", "8", "--pp", "2")
    from fabricui.services.plan import build_layout

    request = plan_command.layout_request(args)
    layout = build_layout(request, pod, catalog.models["llama3-70b"])
    assert dataclasses.astuple(layout)[:5] == (8, 2, 2, 1, 8)
    assert layout.global_batch == 16 and layout.seq_len == 8192


def test_strategies_and_plan_take_the_shared_topology_options(run_cli):
    """``fabricui -t X strategies`` keeps X (the command's copy does not reset it), and the
    what-if NIC rate reaches the cross-node column."""
    status, out, _ = run_cli("-t", "dgx-a100", "strategies")
    assert status == 0 and out.startswith("llama3-70b on dgx-a100:")
    status, out, _ = run_cli("-t", "dgx-a100", "plan", "--model", "llama3-8b")
    assert status == 0 and out.startswith("llama3-8b on dgx-a100")

    def inter_comm(*extra: str) -> str:
        status, out, _ = run_cli("strategies", "-t", "dgx-h100-pod", *extra, "--json")
        assert status == 0
        rows = {row["name"]: row for row in json.loads(out)["strategies"]}
        return rows["fsdp"]["comm_us_inter"]

    assert inter_comm("--nic-gbps", "100") > 3 * inter_comm()
