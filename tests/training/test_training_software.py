"""The software a plan assumes: frameworks, attention kernels, passes, FP8 casts, power caps,
expert groups and dispatch, FSDP as it runs, and each mechanism checked by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from fabricui.engine.training.device import make_device, power_clock_scale
from fabricui.engine.training.kernels import flash_attention_times_s
from fabricui.engine.training.layer import (
    FP8_CAST_BYTES,
    FP8_CAST_EFFICIENCY,
    FP8_RESCALE_BYTES,
    PASS_BYTES,
    Kernels,
    layer_cost,
)
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout
from fabricui.errors import ConfigError, HwdbError
from fabricui.model.run import RunEntry, RunSpec
from fabricui.services.software import framework_in_source, software_for, software_for_run
from tests.training._devices import ROUND
from tests.training._models import llama3_8b_widths


@pytest.fixture(scope="module")
def strategies():
    """The registered strategies."""
    from fabricui.services.plan import load_strategies

    return load_strategies()


def test_attention_forward_and_backward_by_hand():
    """1 TFLOP forward at 0.5 of 100 TFLOP/s is 20 ms at 8k tokens; backward does 2.5 TFLOP
    at 0.25: 100 ms. At 1k tokens the kernel runs at (1k / 2k) / (8k / 9k) of its 8k rate."""
    fwd, bwd = flash_attention_times_s(ROUND, 1e12, 8192.0)
    assert (float(fwd), float(bwd)) == pytest.approx((0.02, 0.1))
    fwd_1k, _ = flash_attention_times_s(ROUND, 1e12, 1024.0)
    fill = (1024 / 2048) / (8192 / 9216)
    assert float(fwd_1k) == pytest.approx(0.02 / fill)


def test_power_cap_slows_compute_with_the_cube_root():
    """A 700 W board capped at 500 W holds (500 / 700)^(1/3) = 0.894 of its clock; a cap
    above the limit changes nothing; no limit in hwdb: no change."""
    assert power_clock_scale(700.0, 500.0) == pytest.approx((5 / 7) ** (1 / 3))
    assert power_clock_scale(700.0, 900.0) == 1.0
    assert power_clock_scale(None, 500.0) == 1.0


def test_device_reads_kernel_sustained_efficiency_and_cap(catalog):
    """H100 with cuDNN's record: forward 0.535, backward 0.524; the sustained efficiency and
    a 500 W cap multiply into the compute clock, each said in the assumptions."""
    gpu = catalog.gpus["h100-sxm"]
    device, notes = make_device(gpu, "bf16", catalog.kernels["cudnn-hopper"], 500.0)
    assert (device.attention_efficiency, device.bwd_attention_efficiency) == (0.535, 0.524)
    expected = gpu.sustained_efficiency * (500.0 / gpu.power_W) ** (1 / 3)
    assert device.clock_scale == pytest.approx(expected)
    assert any("500 W" in n for n in notes) and any("sustains" in n for n in notes)
    fp8, _ = make_device(gpu, "fp8")
    assert fp8.gemm_efficiency == gpu.fp8_gemm_efficiency and fp8.half_gemm_efficiency == 0.76


def test_eager_passes_move_what_the_ops_move(catalog):
    """One GELU layer (no rotary, no dropout), tp 1, 1,000 tokens on the round device: fused
    norms 2 x 4h and residuals 2 x 6h plus the activation 4f; eager norms 2 x 36h. The
    forward pass bytes differ by 64h per token."""
    model = dataclasses.replace(catalog.models["llama3-8b"], mlp="gelu", dropout=False)
    geo = dataclasses.replace(geometry(model), rotary=False, dropout=False)
    fused = layer_cost(ROUND, geo, 1, 1, 1, 1, 1000, 0, kernels=Kernels(passes="fused"))
    eager = layer_cost(ROUND, geo, 1, 1, 1, 1, 1000, 0, kernels=Kernels(passes="eager"))
    h = geo.hidden
    norms = 2 * (PASS_BYTES["eager"]["norm"] - PASS_BYTES["fused"]["norm"]) * h
    assert float(eager.elem_fwd_s - fused.elem_fwd_s) == pytest.approx(1000 * norms / 1e12)
    assert float(fused.elem_fwd_s) == pytest.approx(1000 * (8 * h + 12 * h + 4 * geo.ffn) / 1e12)


def test_fp8_casts_cost_by_recipe(catalog):
    """Under FP8 every GEMM operand is cast once forward (inputs) and once backward (output
    gradients): current scaling's amax pass makes each cast 6 bytes an element, delayed 4."""
    geo = dataclasses.replace(geometry(catalog.models["llama3-8b"]), rotary=False)
    delayed = layer_cost(ROUND, geo, 1, 1, 1, 1, 1000, 0, kernels=Kernels(fp8_recipe="delayed"))
    current = layer_cost(ROUND, geo, 1, 1, 1, 1, 1000, 0, kernels=Kernels(fp8_recipe="current"))
    none = layer_cost(ROUND, geo, 1, 1, 1, 1, 1000, 0, kernels=Kernels())
    h, q, f = geo.hidden, geo.q_dim, geo.ffn
    cast_in = 2 * h + q + f
    per_byte = float(delayed.elem_fwd_s - none.elem_fwd_s) / (1000 * cast_in)
    assert per_byte * 1e12 == pytest.approx(FP8_CAST_BYTES["delayed"])
    ratio = float(current.elem_fwd_s - none.elem_fwd_s) / float(
        delayed.elem_fwd_s - none.elem_fwd_s
    )
    assert ratio == pytest.approx(FP8_CAST_BYTES["current"] / FP8_CAST_BYTES["delayed"])


def test_framework_defaults_fill_what_is_unstated(catalog):
    """torchtitan: FlashAttention-2, eager passes, no TP overlap, FP32 reductions; a stated
    setting wins over the framework's."""
    torchtitan = catalog.frameworks["torchtitan"]
    recipe, notes = resolve_recipe(RecipeChoices(), "hopper", torchtitan)
    assert (recipe.attention_impl, recipe.passes, recipe.tp_overlap) == ("fa2", "eager", False)
    assert recipe.grad_reduce_bytes == 4 and recipe.framework == "torchtitan"
    assert any("torchtitan" in n for n in notes)
    stated, _ = resolve_recipe(
        RecipeChoices(tp_overlap=True, passes="compiled"), "hopper", torchtitan
    )
    assert stated.tp_overlap and stated.passes == "compiled"


@pytest.mark.parametrize(
    ("text", "arch", "expected"),
    [
        ("Narayanan et al. 2021, ... Using Megatron-LM (SC21)", "ampere", "megatron-lm-2021"),
        ("NVIDIA Megatron-LM README ... commit f2e5db402c, July 2024", "hopper", "megatron-lm"),
        (
            "NVIDIA Megatron-Bridge performance summary (25.11 NeMo container)",
            "hopper",
            "megatron-core",
        ),
        ("NVIDIA NeMo AutoModel performance summary", "hopper", "automodel"),
        ("torchtitan performance benchmarks (PyTorch team)", "hopper", "torchtitan"),
        ("MosaicML llm-foundry, MPT Training Benchmarks", "ampere", "llm-foundry"),
        ("Korthikanti et al. 2022, Reducing Activation Recomputation", "ampere", None),
    ],
)
def test_a_run_s_source_names_its_framework(catalog, text, arch, expected):
    """The longest framework word in the source wins; the year picks between Megatron-LM's
    profiles; no framework named: None (the caller falls back to the GPU's era)."""
    found = framework_in_source(text, catalog, arch)
    assert (found.id if found else None) == expected


def test_a_run_without_framework_falls_back_to_its_era(catalog):
    """An A100 run whose source names no framework ran the Megatron-LM of 2021-22; one
    that names an unknown framework id is a one-line error."""
    spec = catalog.topologies["dgx-a100"]
    run = RunSpec(topology=spec, tp=1, pp=1, dp=8, global_batch=8)
    entry = RunEntry("x", catalog.models["llama3-8b"], run, source_text="a paper")
    assert software_for_run(entry, catalog, "ampere").framework.id == "megatron-lm-2021"
    assert software_for_run(entry, catalog, "hopper").framework.id == "megatron-core"
    with pytest.raises(ConfigError, match="unknown framework 'nope'"):
        software_for(catalog, "nope")


def test_run_file_states_the_software(tmp_path, catalog):
    """A run block names its framework, power cap, FP8 recipe, recompute modules, compile
    and dispatch; an unknown framework names the file, line and key."""
    from fabricui.hwdb.run_file import read_run_file

    good = tmp_path / "run.yaml"
    good.write_text(
        "id: r\nmodel: llama3-8b\nrun:\n  topology: dgx-h100\n  tp: 1\n  pp: 1\n  dp: 8\n"
        "  global_batch: 8\n  framework: torchtitan\n  power_W: 500\n  fp8_recipe: current\n"
        "  recompute_modules: [core_attn, mlp]\n  compile: true\n",
        encoding="utf-8",
    )
    run = read_run_file(good, catalog)[0].run
    assert (run.framework, run.power_W, run.fp8_recipe, run.compile) == (
        "torchtitan",
        500.0,
        "current",
        True,
    )
    assert run.recompute_modules == ("core_attn", "mlp")
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("torchtitan", "titan"), encoding="utf-8")
    with pytest.raises(HwdbError, match=r"bad\.yaml:\d+: run\.framework: unknown framework"):
        read_run_file(bad, catalog)


def test_expert_gradients_reduce_over_the_expert_data_parallel_group(catalog, strategies):
    """DDP on an MoE model with EP: the dense parameters' gradients all-reduce over dp, the
    routed experts' (each GPU holding 1 / (ep x etp) of them) over edp; without EP every
    parameter reduces over dp in one op."""
    model = catalog.models["mixtral-8x7b"]
    layout = Layout(tp=1, dp=8, ep=4, etp=1, global_batch=8, seq_len=4096)
    ops = strategies["ddp"].operations(model, layout)
    groups = {op.group: op.size_bytes * op.count for op in ops}
    experts = geometry(model).moe_layers * geometry(model).experts * geometry(model).expert_params
    assert groups["edp"] == pytest.approx(experts * 2 / 4)
    assert groups["dp"] == pytest.approx((model.params_B * 1e9 - experts) * 2)
    assert layout.expert_dp == 2
    plain = strategies["ddp"].operations(model, dataclasses.replace(layout, ep=1))
    assert {op.group for op in plain} == {"dp"}


def test_deepep_sends_a_copy_per_destination_domain(catalog, strategies):
    """Top-8 of experts on 8 domains: 8 (1 - (7/8)^8) = 5.25 distinct domains, capped at the
    node limit of 4; an all-to-all dispatch sends one copy per routed expert (8)."""
    model = catalog.models["deepseek-v3"]
    base = Layout(tp=1, dp=64, ep=64, etp=1, global_batch=64, seq_len=4096, ep_local=8)
    deepep = strategies["ep"].operations(model, dataclasses.replace(base, moe_dispatch="deepep"))
    a2a = strategies["ep"].operations(model, base)
    assert deepep[0].size_bytes / a2a[0].size_bytes == pytest.approx(4 / 8)
    assert "4 copies per token" in deepep[0].note


def test_fsdp_without_resharding_gathers_once(catalog, strategies):
    """FSDP that keeps parameters after forward gathers once per layer and micro-batch, not
    twice; its reduce-scatter moves FP32 gradients (twice the gathers' bytes)."""
    model = catalog.models["llama3-8b"]
    layout = Layout(dp=8, global_batch=8, seq_len=8192, fsdp_reduce_bytes=4)
    ops = strategies["fsdp"].operations(model, layout)
    assert [op.collective for op in ops] == ["all_gather", "all_gather", "reduce_scatter"]
    kept = strategies["fsdp"].operations(model, dataclasses.replace(layout, fsdp_reshard=False))
    assert [op.collective for op in kept] == ["all_gather", "reduce_scatter"]
    assert kept[1].size_bytes == pytest.approx(2 * kept[0].size_bytes)
    assert [op.phase for op in kept] == ["forward", "backward"]


def test_mfu_stays_under_the_peak_at_a_million_tokens(run_cli):
    """Model FLOPs count the causal half of attention: at 1M tokens MFU is below 100%."""
    import json

    status, out, _ = run_cli(
        "plan", "-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--cp", "4",
        "--seq", "1048576", "--json",
    )  # fmt: skip
    assert status == 0
    mfu = json.loads(out)["mfu"]
    assert 0 < mfu < 1


def test_exposed_never_exceeds_the_communication(catalog):
    """Every category's exposed time is at most its operations' time on the critical
    stage (a 61-layer model on 4 stages puts 16 layers on the critical one)."""
    from pathlib import Path

    from fabricui.services.plan import load_strategies
    from fabricui.services.plan_runs import price_entry, read_runs

    data = Path(__file__).parents[1] / "data" / "training"
    strategies = load_strategies()
    for path in sorted(data.glob("*.yaml")):
        try:
            entries = read_runs(path, catalog)
        except HwdbError:
            continue
        for entry in entries:
            try:
                report = price_entry(entry, catalog, strategies).report
            except ConfigError:
                continue
            totals: dict[str, float] = {}
            for p in report.operations:
                cat = {"edp": "dp", "dp_intra": "dp", "dp_inter": "dp"}.get(p.op.group, p.op.group)
                totals[cat] = totals.get(cat, 0.0) + p.time_us
            for cat, exposed in report.exposed_us.items():
                assert exposed <= totals.get(cat, 0.0) * (1 + 1e-9) + 1e-6, (entry.id, cat)
    assert np.isfinite(report.step_us)


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "training"


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared training runs are not beside the repo")
def test_accuracy_on_the_published_runs():
    """The published runs stay where the model was checked (benchmarks/training_accuracy.py):
    Hopper and Blackwell median <= 10%, p90 <= 20%, mean signed within 5%; the A100-era
    runs median <= 10%, p90 <= 20%; no entry of either beyond 35%."""
    from tests.training.test_training_runs import _scorer

    scorer = _scorer()
    for name, median, p90, mean in (
        ("runs_hopper_blackwell.yaml", 0.10, 0.20, 0.05),
        ("runs.yaml", 0.10, 0.20, 0.05),
    ):
        scored, problems = scorer.score(SHARED / name)
        summary = scorer.summarize(scored, len(problems))
        assert not problems, problems
        assert summary["median"] <= median and summary["p90"] <= p90, (name, summary)
        assert abs(summary["mean_signed"]) <= mean, (name, summary)
        assert max(s.error for s in scored) <= 0.35, (name, max(scored, key=lambda s: s.error))


def test_async_tp_hides_the_forward_pass_only():
    """TP overlap with ``tp_overlap_backward`` off (PyTorch's async TP): 4 forward and 4
    backward TP calls of 1 us over 2 layers x 2 micro-batches, a 10 us GEMM window: the
    forward's hide, the backward's 4 us are exposed, 1 us per layer; with it on (Megatron's
    userbuffers) nothing is, and no SM share is taken from the GEMMs."""
    from fabricui.engine.training import comm
    from fabricui.engine.training.pricing import PricedOp
    from fabricui.engine.training.recipe import Recipe
    from fabricui.engine.types import CommOp

    ops = [
        PricedOp(
            CommOp("tp", "all_gather", "tp", 1.0, 4, False, scope="layer", phase=phase),
            (0, 1),
            1.0,
            "ring",
        )
        for phase in ("forward", "backward")
    ]
    windows = comm.Windows(
        gemm_s=10e-6, expert_s=0, attention_s=0, layer_s=1, microbatch_s=1, sm_share=0.5
    )
    both = comm.expose(ops, Recipe(tp_overlap=True), 2, 2, windows)
    forward_only = comm.expose(
        ops, Recipe(tp_overlap=True, tp_overlap_backward=False), 2, 2, windows
    )
    off = comm.expose(ops, Recipe(tp_overlap=False), 2, 2, windows)
    assert both.per_layer_s["tp"] == pytest.approx(0.0)
    assert forward_only.per_layer_s["tp"] == pytest.approx(1e-6)
    assert off.per_layer_s["tp"] == pytest.approx(2e-6)


def test_torchtitan_async_tp_is_forward_only(catalog):
    """torchtitan's profile: async TP (stated ``tp_overlap``) hides the forward pass's TP
    collectives only, and the plan says so; Megatron-Core's overlap hides both passes'."""
    titan, notes = resolve_recipe(
        RecipeChoices(tp_overlap=True), "hopper", catalog.frameworks["torchtitan"]
    )
    assert titan.tp_overlap and not titan.tp_overlap_backward
    assert any("forward pass's TP collectives only" in n for n in notes)
    core, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["megatron-core"])
    assert core.tp_overlap and core.tp_overlap_backward


def test_whole_iteration_cuda_graph_has_no_moe_host_wait(catalog):
    """Megatron-Core's MoE layers wait on the host 950 us a pass; a whole-iteration CUDA
    graph (static expert capacity) removes the wait, partial graphs do not; a run block
    states it as ``cuda_graph``, an unknown mode is a one-line error naming the key."""
    from fabricui.engine.training.recipe import moe_host_sync_us

    assert moe_host_sync_us(950.0, None) == 950.0
    assert moe_host_sync_us(950.0, "partial") == 950.0
    assert moe_host_sync_us(950.0, "full_iteration") == 0.0
    core = catalog.frameworks["megatron-core"]
    graphed, notes = resolve_recipe(RecipeChoices(cuda_graph="full_iteration"), "hopper", core)
    plain, _ = resolve_recipe(RecipeChoices(), "hopper", core)
    assert (graphed.moe_sync_us, plain.moe_sync_us) == (0.0, core.moe_sync_us)
    assert graphed.kernels.moe_sync_s == 0.0 and graphed.cuda_graph == "full_iteration"
    assert any("CUDA graph" in n for n in notes)


def test_run_file_states_its_cuda_graph(tmp_path, catalog):
    """``cuda_graph`` in a run block is read; a value outside none, partial and
    full_iteration names the file, line and key."""
    from fabricui.hwdb.run_file import read_run_file

    good = tmp_path / "run.yaml"
    good.write_text(
        "id: r\nmodel: llama3-8b\nrun:\n  topology: dgx-h100\n  tp: 1\n  pp: 1\n  dp: 8\n"
        "  global_batch: 8\n  cuda_graph: full_iteration\n",
        encoding="utf-8",
    )
    assert read_run_file(good, catalog)[0].run.cuda_graph == "full_iteration"
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("full_iteration", "all"), encoding="utf-8")
    with pytest.raises(HwdbError, match=r"bad\.yaml:\d+: run\.cuda_graph: "):
        read_run_file(bad, catalog)


def test_rowwise_casts_the_gathered_inputs_twice_scaled():
    """torchao's rowwise scaling, TP 8 with sequence parallelism, 8,000 tokens on the round
    device, llama3-8b widths (h 4096, q 4096 / 8, f 14336 / 8): current scaling casts the
    QKV and MLP inputs before the gather (2h / 8 per token) at 6 bytes, rowwise after it
    (2h) at 3 + 5 bytes, at 0.44 of the bandwidth (8 / 0.44 bytes); the out-projection and
    down-projection inputs are TP-sharded either way. Forward: 8,000 x ((2 x 4096 + 512 +
    1792) x 8 / 0.44 - (2 x 512 + 512 + 1792) x 6) bytes more at 1 TB/s."""
    model = llama3_8b_widths(seq_len=8000)
    geo = dataclasses.replace(geometry(model), rotary=False, dropout=False)
    current = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, kernels=Kernels(fp8_recipe="current"))
    rowwise = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, kernels=Kernels(fp8_recipe="rowwise"))
    assert FP8_CAST_BYTES["rowwise"] == 8.0
    assert FP8_CAST_EFFICIENCY == {"rowwise": 0.44}
    more = 8000 * ((2 * 4096 + 512 + 1792) * 8 / 0.44 - (2 * 512 + 512 + 1792) * 6)
    assert float(rowwise.elem_fwd_s - current.elem_fwd_s) == pytest.approx(more / 1e12)


@pytest.mark.parametrize(
    ("separate", "grad_in"),
    [(False, 4096 + 512 + 4096 + 1792), (True, 3 * 4096 + 512 + 2 * 4096 + 1792)],
)
def test_rowwise_rescales_the_backward_gemm_outputs(monkeypatch, separate, grad_in):
    """torchao's rowwise backward GEMMs run in the tensorwise kernel and their 16-bit outputs
    are rescaled in a kernel of their own (2 + 2 bytes an element). llama3-8b widths, TP 8,
    8,000 tokens on the round device (1 TB/s): the input gradients are T by each GEMM's
    input width (QKV h or q, k, v 3h; out q = 512; gate and up h or 2h; down f / 8 = 1792),
    the weight gradients 4096 x (512 + 2 x 128) + 512 x 4096 + 4096 x 3584 + 1792 x 4096 =
    27,262,976 elements; the forward is unchanged."""
    model = llama3_8b_widths(seq_len=8000)
    geo = geometry(model)
    kernels = Kernels(fp8_recipe="rowwise", separate_projections=separate)
    rowwise = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, kernels=kernels)
    monkeypatch.setitem(FP8_RESCALE_BYTES, "rowwise", 0.0)
    unscaled = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, kernels=kernels)
    weights = 4096 * 768 + 512 * 4096 + 4096 * 3584 + 1792 * 4096
    assert weights == 27_262_976
    more_bytes = 4 * (8000 * grad_in + weights)
    assert float(rowwise.elem_bwd_s - unscaled.elem_bwd_s) == pytest.approx(more_bytes / 1e12)
    assert float(rowwise.elem_fwd_s) == pytest.approx(float(unscaled.elem_fwd_s))


def test_only_rowwise_rescales_and_not_the_experts(monkeypatch):
    """The tensorwise recipes scale inside the GEMM (no entry); in an MoE layer only the
    attention projections' outputs are rescaled (torchao leaves the experts' grouped GEMMs
    unconverted, the router is 16-bit): 4 x (8,000 x (4096 + 512) + 4096 x 768 + 512 x 4096)
    bytes at 1 TB/s."""
    assert set(FP8_RESCALE_BYTES) == {"rowwise"}
    model = llama3_8b_widths(seq_len=8000)
    geo = dataclasses.replace(geometry(model), experts=8, top_k=2, ffn=1792)
    kernels = Kernels(fp8_recipe="rowwise")
    rowwise = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, moe=True, kernels=kernels)
    monkeypatch.setitem(FP8_RESCALE_BYTES, "rowwise", 0.0)
    unscaled = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, moe=True, kernels=kernels)
    more_bytes = 4 * (8000 * (4096 + 512) + 4096 * 768 + 512 * 4096)
    assert float(rowwise.elem_bwd_s - unscaled.elem_bwd_s) == pytest.approx(more_bytes / 1e12)


def test_separate_projections_each_read_the_input():
    """torchtitan's wq, wk, wv as three GEMMs: TP 8, 1,000 tokens, h 4096 on a device of
    100 TFLOP/s and 0.25 TB/s, 16-bit. Fused QKV (4096 x 768) moves 2 (T h + 768 h) + 2 T 768
    bytes, 64.1 us, above its 62.9 us of FLOPs; separate, q (4096 x 512) is 53.6 us of
    traffic and k and v (4096 x 128) 38.0 us each, 129.6 us in all. The gated MLP's gate and
    up stay compute-bound either way (293.6 us), so the forward differs by 65.5 us."""
    model = llama3_8b_widths(seq_len=1000)
    geo = geometry(model)
    slow = dataclasses.replace(ROUND, hbm_Bps=0.25e12)

    def roofline_us(m, n, k):
        return max(2 * m * n * k / 100e12, (2 * (m * k + k * n) + 2 * m * n) / 0.25e12) * 1e6

    fused = roofline_us(1000, 768, 4096)
    separate = roofline_us(1000, 512, 4096) + 2 * roofline_us(1000, 128, 4096)
    assert (round(fused, 1), round(separate, 1)) == (64.1, 129.6)
    one = layer_cost(slow, geo, 8, 1, 1, 1, 1000, 1, kernels=Kernels())
    three = layer_cost(slow, geo, 8, 1, 1, 1, 1000, 1, kernels=Kernels(separate_projections=True))
    diff_us = float(three.gemm_fwd_s - one.gemm_fwd_s) * 1e6
    assert diff_us == pytest.approx(separate - fused)


def test_torchtitan_runs_separate_projections(catalog):
    """torchtitan's profile runs q, k, v and gate, up as separate GEMMs; Megatron-Core's
    fuses them."""
    titan, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["torchtitan"])
    core, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["megatron-core"])
    assert titan.kernels.separate_projections and not core.kernels.separate_projections


def test_llm_foundry_prices_its_triton_attention_at_a_sourced_record(catalog):
    """llm-foundry's benchmark rows ran attn_impl 'triton' (submit_benchmarks.py at
    b2a43a147), a kernel with no published H100 figure: the framework keeps naming a kernel
    that has a Hopper record (FlashAttention-2's), so its rows are not priced at the GPU's
    generic figure, and cites the code the rows were measured with."""
    foundry = catalog.frameworks["llm-foundry"]
    recipe, _ = resolve_recipe(RecipeChoices(), "hopper", foundry)
    records = [k for k in catalog.kernels.values() if k.arch == "hopper"]
    assert recipe.attention_impl in {k.impl for k in records}
    assert not any(k.impl == "triton" for k in records)
    assert "b2a43a147" in foundry.sources["attention"]
    assert "attn_impl" in foundry.note and "'triton'" in foundry.note
