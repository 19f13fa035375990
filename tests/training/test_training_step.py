"""Pipeline schedules and the step model: uneven stages, bubbles, exposure by scope, the
recipe's overlaps and defaults, strategy memory, and Meta's Llama 3 405B layout."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pytest

from fabricui.engine.training import comm, schedule
from fabricui.engine.training.pricing import PricedOp
from fabricui.engine.training.recipe import Recipe, RecipeChoices, resolve_recipe
from fabricui.engine.training.step import PlanReport, plan
from fabricui.engine.types import CommOp, Layout, MemoryTerm, Strategy
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.plan import load_strategies
from fabricui.services.session import pricer


@pytest.fixture(scope="module")
def strategies():
    """The registered strategies."""
    return load_strategies()


@pytest.fixture(scope="module")
def pod(catalog):
    """The 4-node DGX H100 pod."""
    return build_fabric(resolve_topology("dgx-h100-pod", catalog), catalog)


@pytest.fixture(scope="module")
def meta_cluster(catalog):
    """2,048 nodes of 8 H100 (16,384 GPUs), as Llama 3 405B was pre-trained on."""
    return build_fabric(resolve_topology("h100-ib-cluster", catalog, 2048), catalog)


def test_uneven_stages_as_llama3_405b_ran():
    """126 layers on 16 stages: one fewer on the first and the last (Llama 3 paper)."""
    assert schedule.stage_layers(126, 16) == [7] + [8] * 14 + [7]
    assert schedule.stage_layers(80, 3) == [27, 27, 26]
    assert schedule.stage_layers(96, 8) == [12] * 8
    with pytest.raises(EngineError, match="pp 9"):
        schedule.stage_layers(8, 9)


def test_pipeline_time_and_bubble_by_hand():
    """Even stages: (m + (p - 1) / v) tau; uneven: m max + (sum - max) / v."""
    assert schedule.pipeline_time_s([1.0] * 4, 8) == pytest.approx(11.0)
    assert schedule.pipeline_time_s([1.0] * 4, 8, vpp=3) == pytest.approx(9.0)
    assert schedule.pipeline_time_s([1.0, 2.0, 1.0], 4) == pytest.approx(4 * 2 + 2)
    assert schedule.bubble_fraction(4, 16) == pytest.approx(3 / 19)
    assert schedule.bubble_fraction(4, 16, 2) == pytest.approx(1.5 / 17.5)


def test_plan_breakdown_adds_up(pod, catalog, strategies):
    """compute + recompute + exposed TP/CP/PP/DP/EP + bubble + optimizer = step, and the
    operations' exposed parts equal the exposed categories."""
    model = catalog.models["llama3-70b"]
    layout = Layout(tp=8, pp=2, dp=2, microbatches=16, global_batch=32, seq_len=4096)
    chosen = [strategies[n] for n in ("zero1", "tp-sp", "pp", "ep", "cp")]
    report = plan(pod, model, layout, chosen, evaluate=pricer(pod))
    assert sum(report.breakdown().values()) == pytest.approx(report.step_us)
    assert sum(report.exposed_us.values()) == pytest.approx(report.exposed_comm_us)
    assert report.stage_layers == (40, 40)
    assert 0 < report.mfu < 1 and report.tflops_per_gpu == pytest.approx(report.mfu * 989.4)
    assert report.memory is not None and report.memory.total_GB == pytest.approx(report.memory_GB)


def test_recompute_costs_in_order(pod, catalog, strategies):
    """Full recompute adds about a third of compute; selective much less; none nothing."""
    model = catalog.models["llama3-70b"]
    layout = Layout(tp=8, pp=4, microbatches=8, global_batch=8, seq_len=8192)
    chosen = [strategies[n] for n in ("ddp", "tp-sp", "pp")]
    steps = {}
    for mode in ("none", "selective", "full"):
        report = plan(
            pod, model, layout, chosen, evaluate=pricer(pod), recipe=Recipe(recompute=mode)
        )
        steps[mode] = report
    assert steps["none"].recompute_us == 0
    assert 0 < steps["selective"].recompute_us < 0.1 * steps["none"].compute_us
    assert steps["full"].recompute_us == pytest.approx(steps["none"].compute_us / 3, rel=0.15)
    assert steps["full"].memory_GB < steps["selective"].memory_GB <= steps["none"].memory_GB


def test_tp_overlap_hides_tp_inside_a_node_only(pod, catalog, strategies):
    """With TP overlap the TP collectives of a TP group inside a node hide behind the GEMMs;
    a TP group across nodes stays exposed."""
    model = catalog.models["llama3-70b"]
    chosen = [strategies[n] for n in ("ddp", "tp", "pp")]
    layout = Layout(tp=8, dp=4, global_batch=4, seq_len=8192)
    on = plan(pod, model, layout, chosen, evaluate=pricer(pod), recipe=Recipe(tp_overlap=True))
    off = plan(pod, model, layout, chosen, evaluate=pricer(pod), recipe=Recipe(tp_overlap=False))
    assert off.exposed_us["tp"] > 0 and on.exposed_us["tp"] < off.exposed_us["tp"]
    assert on.exposed_us["tp"] == 0
    assert "TP8 inside the NVLink domain" in on.reasons()


def test_tp_overlap_spans_the_hosts_of_one_nvlink_domain(catalog, strategies):
    """On GB200 NVL72 a host has 4 GPUs but its rack's 72 share one NVLink switch: TP8
    across two hosts still overlaps with the GEMMs (no network on the way), and the ranking
    says it is inside the NVLink domain. The decision table's "node" is the rack: its intra
    group spans two hosts over NVLink (TP hidden), one rack has no inter group, and on the
    8-rack cluster the inter group takes one GPU per rack, across the network."""
    from fabricui.engine.training.table import decision_table

    rack = build_fabric(resolve_topology("gb200-nvl72", catalog), catalog)
    assert rack.gpus_per_node == 4 and rack.gpus_per_domain == 72
    model = catalog.models["llama3-70b"]
    chosen = [strategies[n] for n in ("ddp", "tp", "pp")]
    layout = Layout(tp=8, dp=9, global_batch=9, seq_len=8192)
    on = plan(rack, model, layout, chosen, evaluate=pricer(rack), recipe=Recipe(tp_overlap=True))
    assert on.exposed_us["tp"] == 0
    assert "TP8 inside the NVLink domain" in on.reasons()
    table = decision_table(rack, model, list(strategies.values()))
    tp_row = next(row for row in table.rows if row.name == "tp")
    assert table.degree == 8 and table.unit == "NVLink domain"
    assert tp_row.exposed_us_intra == 0 and tp_row.comm_us_inter is None
    assert table.span == "within an NVLink domain and across NVLink domains"
    cluster = build_fabric(resolve_topology("gb200-nvl72-cluster", catalog), catalog)
    table = decision_table(cluster, model, list(strategies.values()))
    tp_row = next(row for row in table.rows if row.name == "tp")
    assert tp_row.exposed_us_intra == 0 < tp_row.exposed_us_inter
    hsdp = next(row for row in table.rows if row.name == "hsdp")
    assert hsdp.note == "inter: shard in an NVLink domain, replicate across NVLink domains"


def test_reasons_name_what_a_group_crosses(catalog, strategies):
    """A ranking says where TP and CP groups sit: inside a 72-GPU NVLink rack, across racks
    (not "nodes": a rack's hosts share its switch), or some of them across where the group
    size does not divide the rack (16 in 72: ranks 64-79 straddle two racks); on 8-GPU
    servers a group beyond the server is across nodes."""
    rack = build_fabric(resolve_topology("gb200-nvl72", catalog), catalog)
    model = catalog.models["llama3-70b"]
    chosen = [strategies[n] for n in ("ddp", "tp", "pp")]
    base = plan(
        rack, model, Layout(tp=8, dp=9, global_batch=9, seq_len=8192), chosen, evaluate=pricer(rack)
    )

    def reasons(**layout: int) -> list[str]:
        lay = dataclasses.replace(base.layout, **layout)
        return dataclasses.replace(base, layout=lay).reasons()

    assert "CP2 ring (some groups across NVLink domains)" in reasons(cp=2)
    assert "CP3 in the NVLink domain" in reasons(cp=3)
    assert "TP96 across NVLink domains" in reasons(tp=96)
    server = dataclasses.replace(base, gpus_per_node=8, gpus_per_domain=8)
    assert (
        "TP16 across nodes"
        in dataclasses.replace(server, layout=dataclasses.replace(base.layout, tp=16)).reasons()
    )


def test_dp_overlap_hides_gradient_reduction(pod, catalog, strategies):
    """DDP's bucketed all-reduce: exposed in full without DP overlap, less with it."""
    model = catalog.models["llama3-8b"]
    layout = Layout(tp=1, dp=32, microbatches=1, global_batch=32, seq_len=8192)
    chosen = [strategies["ddp"]]
    on = plan(pod, model, layout, chosen, evaluate=pricer(pod), recipe=Recipe(dp_overlap=True))
    off = plan(pod, model, layout, chosen, evaluate=pricer(pod), recipe=Recipe(dp_overlap=False))
    assert off.exposed_us["dp"] == pytest.approx(off.comm_us)
    assert on.exposed_us["dp"] < off.exposed_us["dp"]


def test_full_recompute_repeats_forward_collectives():
    """Operations marked ``recomputed`` run twice as often under full recomputation."""
    op = CommOp("tp", "all_reduce", "tp", 1e6, 10, False, recomputed=True)
    other = CommOp("ddp", "all_reduce", "dp", 1e6, 1, True)
    priced = [PricedOp(op, (0, 1), 5.0, "ring"), PricedOp(other, (0, 1), 5.0, "ring")]
    full = comm.with_recompute(priced, Recipe(recompute="full"))
    assert [p.calls for p in full] == [20, 1]
    assert [p.calls for p in comm.with_recompute(priced, Recipe())] == [10, 1]


def test_exposure_windows_by_hand():
    """Per layer: TP 3 us exposed (no overlap); CP 5 us against a 4 us attention window
    leaves 1 us. Per step: DP's 5 buckets of 2 us (10 us) against the last micro-batch's
    backward (2/3 of 6 us = 4 us) leave 6 us; a single bucket cannot start before the
    backward ends: all of it is exposed."""
    ops = [
        PricedOp(CommOp("tp", "all_reduce", "tp", 1.0, 4, False), (0, 1), 0.75, "ring"),
        PricedOp(CommOp("cp", "send_recv", "cp", 1.0, 4, True), (0, 1), 1.25, "ring"),
        PricedOp(CommOp("ddp", "all_reduce", "dp", 1.0, 5, True), (0, 1), 2.0, "ring"),
    ]
    windows = comm.Windows(gemm_s=1, expert_s=0, attention_s=4e-6, layer_s=1, microbatch_s=6e-6)
    exposure = comm.expose(ops, Recipe(tp_overlap=False), 2, 2, windows)
    assert exposure.per_layer_s["tp"] == pytest.approx(0.75e-6)
    assert exposure.per_layer_s["cp"] == pytest.approx(0.0)
    assert exposure.per_step_s["dp"] == pytest.approx(6e-6)
    one = [
        *ops[:2],
        PricedOp(CommOp("ddp", "all_reduce", "dp", 1.0, 1, True), (0, 1), 10.0, "ring"),
    ]
    assert comm.expose(one, Recipe(), 2, 2, windows).per_step_s["dp"] == pytest.approx(10e-6)
    windows = dataclasses.replace(windows, attention_s=1e-6)
    assert comm.expose(ops, Recipe(), 2, 2, windows).per_layer_s["cp"] == pytest.approx(0.25e-6)


def test_meta_llama3_405b_layout_fits(meta_cluster, catalog, strategies):
    """TP 8 x PP 16 x DP 128, global batch 2,048 of 8,192 tokens, ZeRO-2 on 16,384 H100:
    accepted (126 layers on 16 stages) and fits in memory; with an interleaved schedule
    (Llama 3 paper Sec. 3.3.2; two chunks per stage assumed) the MFU is near Meta's
    reported 38-43 %."""
    model = catalog.models["llama3-405b"]
    layout = Layout(tp=8, pp=16, dp=128, microbatches=16, global_batch=2048, seq_len=8192)
    chosen = [strategies[n] for n in ("zero2", "tp-sp", "pp", "ep", "cp")]
    report = plan(meta_cluster, model, layout, chosen, evaluate=pricer(meta_cluster))
    assert report.fits and report.stage_layers[0] == 7 and report.stage_layers[1] == 8
    interleaved = dataclasses.replace(layout, vpp=2)
    report = plan(meta_cluster, model, interleaved, chosen, evaluate=pricer(meta_cluster))
    assert 0.33 < report.mfu < 0.5


class _Buffered(Strategy):
    """A test strategy adding an all-reduce and a 1 GB buffer per GPU."""

    name: ClassVar[str] = "buffered"

    def operations(self, model, layout):  # type: ignore[no-untyped-def]
        return [CommOp(self.name, "all_reduce", "dp", 1e6, 1, True, note="toy")]

    def memory(self, model, layout):  # type: ignore[no-untyped-def]
        return [MemoryTerm(self.name, "error-feedback buffer", 1e9)]


def test_strategy_memory_is_added(pod, catalog, strategies):
    """A strategy's ``memory`` terms show in the memory breakdown and the total."""
    model = catalog.models["llama3-8b"]
    layout = Layout(tp=8, dp=4, global_batch=4, seq_len=4096)
    base = [strategies["ddp"], strategies["tp"]]
    plain = plan(pod, model, layout, base, evaluate=pricer(pod))
    extra = plan(pod, model, layout, [*base, _Buffered()], evaluate=pricer(pod))
    assert extra.memory_GB == pytest.approx(plain.memory_GB + 1.0)
    assert extra.memory.extra == (("buffered: error-feedback buffer", 1e9),)


def test_recipe_defaults_follow_the_gpu_generation():
    """Ampere: Megatron-LM 2021-22 (unfused attention, no DP overlap); Hopper: Megatron-Core
    (flash attention, DP and TP overlap); each default is stated, stated settings are kept."""
    early, notes = resolve_recipe(RecipeChoices(), "ampere")
    late, _ = resolve_recipe(RecipeChoices(), "hopper")
    assert (early.attention, early.dp_overlap, early.tp_overlap) == ("unfused", False, False)
    assert (late.attention, late.dp_overlap, late.tp_overlap) == ("flash", True, True)
    assert any(n.startswith("attention not stated") for n in notes)
    stated, notes = resolve_recipe(RecipeChoices(recompute="full", attention="flash"), "ampere")
    assert stated.recompute == "full" and stated.attention == "flash"
    assert not any(n.startswith(("recompute", "attention")) for n in notes)


def test_bad_recipe_is_refused():
    """Unknown modes are one-line EngineErrors."""
    with pytest.raises(EngineError, match="recompute must be one of"):
        Recipe(recompute="some")
    with pytest.raises(EngineError, match="mfu must be in"):
        Recipe(mfu=1.5)


def test_mfu_mode_keeps_the_first_planners_compute(pod, catalog, strategies):
    """With --mfu the compute is the step's FLOPs at that fraction of peak (as before)."""
    model = catalog.models["llama3-70b"]
    layout = Layout(tp=8, pp=2, dp=2, microbatches=16, global_batch=32, seq_len=4096)
    report = plan(pod, model, layout, [strategies["ddp"]], mfu=0.4)
    flops = 32 * 4096 * (6 * 70.6e9 + 6 * 80 * 4096 * 8192) / 32
    assert report.compute_us == pytest.approx(flops / (989.4e12 * 0.4) * 1e6)
    assert report.compute_mfu == 0.4 and any("--mfu" in a for a in report.assumptions)


def test_plan_arrays_are_plain_floats(pod, catalog, strategies):
    """The report's figures are floats (JSON-safe), not numpy scalars."""
    model = catalog.models["llama3-8b"]
    report = plan(pod, model, Layout(tp=8, dp=4, global_batch=4), [strategies["ddp"]])
    data = report.to_json()
    for key in ("step_us", "compute_us", "bubble_us", "memory_GB", "mfu", "tflops_per_gpu"):
        assert isinstance(data[key], float) and not isinstance(data[key], np.floating), key


def toy_pipeline(**layout: int) -> PlanReport:
    """A 4-stage step of round figures: compute 0.5 s, recompute 0.1 s, bubble 0.2 s,
    optimizer 0.2 s (1 s in all), no communication."""
    lay = Layout(**{"tp": 1, "pp": 4, "dp": 1, "microbatches": 6, "global_batch": 6, **layout})
    return PlanReport(
        topology="toy",
        model="toy",
        layout=lay,
        mfu=0.5,
        operations=(),
        compute_us=500_000.0,
        recompute_us=100_000.0,
        bubble_us=200_000.0,
        optimizer_us=200_000.0,
        flops_per_token=1.0,
    )


def test_bubble_as_a_share_of_the_step_and_of_the_pipeline():
    """By hand: 0.2 s of bubble in a 1 s step is 20 % of the step (``bubble_fraction_of_step``,
    what the search's reasons say beside the exposed communication's share) and 25 % of
    compute + recompute + bubble (0.8 s, ``bubble_fraction``); both in the JSON."""
    report = toy_pipeline()
    assert report.step_us == pytest.approx(1e6)
    assert report.bubble_fraction_of_step == pytest.approx(0.2)
    assert report.bubble_fraction == pytest.approx(0.25)
    data = report.to_json()
    assert data["bubble_fraction_of_step"] == pytest.approx(0.2)
    assert data["bubble_fraction"] == pytest.approx(0.25)
    assert "bubble 20%" in report.reasons() and "exposed comm 0%" in report.reasons()
    assert (
        dataclasses.replace(
            report, compute_us=0, recompute_us=0, bubble_us=0, optimizer_us=0
        ).bubble_fraction_of_step
        == 0.0
    )
