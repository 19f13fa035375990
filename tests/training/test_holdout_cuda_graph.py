"""The Megatron-Bridge rows of the training holdout state the CUDA graphs their recipe or
workload config captures, each with a note naming it; Transformer Engine's graphs of parts
of each layer (``partial``) price as none, a whole-iteration graph removes the MoE host
wait."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from fabricui.engine.training.recipe import resolve_recipe
from fabricui.hwdb.run_file import read_run_file
from fabricui.services.plan_runs import price_entry, run_choices

HOLDOUT = Path(__file__).parents[2] / "benchmarks" / "data" / "training_holdout.yaml"

#: cuda_graph_impl transformer_engine, scope [attn, moe_router, moe_preprocess].
PARTIAL = {
    "mbridge2606_dsv3_256xb300_mxfp8",
    "mbridge2606_gptoss120b_64xb300_mxfp8",
    "mbridge2604p1_dsv3_256xb200_mxfp8",
    "mbridge2604p1_gptoss120b_64xgb300_bf16",
    "mbridge2604p1_gptoss120b_64xb300_bf16",
    "mbridge2604p1_qwen3_30b_8xb200_mxfp8",
    "mbridge2511_gptoss120b_64xgb300_bf16_s8k",
    "mbridge2511_dsv3_256xgb300_bf16",
    "mbridge2511_dsv3_256xgb300_mxfp8",
    "mbridge2511_dsv3_256xgb200_mxfp8",
}

#: cuda_graph_impl full_iteration (26.06, 26.08), or local with scope full_iteration (25.11).
FULL_ITERATION = {
    "mbridge2608_dsv3_256xgb300_mxfp8",
    "mbridge2608_dsv3_256xgb200_mxfp8",
    "mbridge2608_gptoss120b_64xgb300_mxfp8",
    "mbridge2608_gptoss120b_64xgb200_mxfp8",
    "mbridge2608_qwen3_30b_8xgb300_mxfp8",
    "mbridge2608_qwen3_30b_8xgb200_mxfp8",
    "mbridge2608_qwen3_235b_256xgb300_mxfp8",
    "mbridge2608_qwen3_235b_256xgb200_mxfp8",
    "mbridge2606_dsv3_256xgb300_mxfp8_gbs15360",
    "mbridge2606_qwen3_30b_8xb300_mxfp8",
    "mbridge2511_llama3_8b_8xgb300_fp8cs",
    "mbridge2511_llama3_8b_8xgb200_fp8cs",
    "mbridge2511_llama3_8b_8xb200_mxfp8",
}

#: 25.11 rows whose layout no workload config of that release holds: left unstated (the
#: DeepSeek-V3 ones state the rest of their release's config, their layout overridden).
UNSTATED = {
    "mbridge2511_qwen3_235b_256xgb300_bf16",
    "mbridge2511_qwen3_235b_256xgb200_bf16",
}


@pytest.fixture(scope="module")
def rows(catalog):
    """The holdout's Megatron-Bridge entries and their raw rows, by id."""
    raw = {row["id"]: row for row in yaml.safe_load(HOLDOUT.read_text(encoding="utf-8"))}
    entries = {e.id: e for e in read_run_file(HOLDOUT, catalog) if e.id.startswith("mbridge")}
    return entries, raw


def test_each_row_states_its_cuda_graph_with_a_note(rows):
    """Every Megatron-Bridge row but the two unmatched 25.11 ones states cuda_graph, and
    its note says which; Transformer Engine's graphs are written partial, Megatron-Core's
    whole-iteration graph full_iteration, the rest none."""
    entries, raw = rows
    assert len(entries) == 50
    stated = {i: e.run.cuda_graph for i, e in entries.items() if e.run.cuda_graph is not None}
    assert set(stated) == set(entries) - UNSTATED
    assert {i for i, mode in stated.items() if mode == "partial"} == PARTIAL
    assert {i for i, mode in stated.items() if mode == "full_iteration"} == FULL_ITERATION
    for entry_id, mode in stated.items():
        assert f"cuda_graph {mode}" in raw[entry_id]["note"], entry_id
    for entry_id in PARTIAL:
        assert "Transformer Engine graphs of" in raw[entry_id]["note"], entry_id


def test_partial_graphs_keep_the_moe_host_wait(rows, catalog):
    """Transformer Engine's graphs of attention, router and preprocessing leave the host
    read of the token counts (the expert path is outside them): a partial row resolves as
    if it stated none, while a whole-iteration row drops the wait and the gpt-oss
    expert-bias pass."""
    core = catalog.frameworks["megatron-core"]
    entries, _ = rows
    for entry_id in PARTIAL:
        run = entries[entry_id].run
        graphed, _ = resolve_recipe(run_choices(run), "blackwell", core)
        plain, _ = resolve_recipe(
            run_choices(dataclasses.replace(run, cuda_graph=None)), "blackwell", core
        )
        assert graphed.moe_sync_us == plain.moe_sync_us == core.moe_sync_us, entry_id
        assert graphed.kernels == plain.kernels, entry_id
    whole, _ = resolve_recipe(
        run_choices(entries["mbridge2608_gptoss120b_64xgb300_mxfp8"].run), "blackwell", core
    )
    assert whole.moe_sync_us == 0.0 and whole.kernels.expert_bias_prob_bytes == 0.0


@pytest.mark.parametrize(
    "entry_id",
    ["mbridge2604p1_gptoss120b_64xgb300_bf16", "mbridge2511_llama3_8b_8xgb200_fp8cs"],
)
def test_stated_graph_prices_as_the_engine_says(rows, catalog, entry_id):
    """A partial MoE row prices as with no graph; a dense row's whole-iteration graph has
    no MoE wait to remove, so it prices as with none too."""
    entries, _ = rows
    entry = entries[entry_id]
    bare = dataclasses.replace(entry, run=dataclasses.replace(entry.run, cuda_graph=None))
    stated = price_entry(entry, catalog).report.step_us
    assert stated == pytest.approx(price_entry(bare, catalog).report.step_us, rel=1e-12)
