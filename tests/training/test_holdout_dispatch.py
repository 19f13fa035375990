"""The Megatron-Bridge MoE rows of the training holdout state the token dispatcher their
recipe or workload config runs, each with a note naming it, and are priced with it."""

from __future__ import annotations

from pathlib import Path

import yaml

from fabricui.engine.training.recipe import resolve_recipe
from fabricui.hwdb.run_file import read_run_file
from fabricui.services.plan_runs import run_choices

HOLDOUT = Path(__file__).parents[2] / "benchmarks" / "data" / "training_holdout.yaml"

#: Rows whose workload config sets no flex backend: Megatron-Bridge runs all-to-all.
ALLTOALL = {
    "mbridge2604p1_gptoss120b_64xgb300_bf16",
    "mbridge2604p1_gptoss120b_64xgb200_bf16",
    "mbridge2604p1_gptoss120b_64xb200_bf16",
    "mbridge2604p1_qwen3_235b_256xb200_mxfp8",
    "mbridge2511_gptoss120b_64xgb300_bf16_s8k",
    "mbridge2511_gptoss120b_64xh100_bf16_gbs512",
    "mbridge2511_qwen3_235b_64xb200_mxfp8",
    "mbridge2511_qwen3_30b_16xh100_fp8cs",
}

#: 25.11 rows whose layout no workload config of that release holds: left unstated (the
#: DeepSeek-V3 ones state the rest of their release's config, their layout overridden).
UNSTATED = {
    "mbridge2511_qwen3_235b_256xgb300_bf16",
    "mbridge2511_qwen3_235b_256xgb200_bf16",
}


def _megatron_bridge_moe(catalog):
    """The holdout's Megatron-Bridge MoE entries and their raw rows, by id."""
    raw = {row["id"]: row for row in yaml.safe_load(HOLDOUT.read_text(encoding="utf-8"))}
    entries = [
        e
        for e in read_run_file(HOLDOUT, catalog)
        if e.id.startswith("mbridge") and "experts" in raw[e.id]["model"]
    ]
    return entries, raw


def test_each_row_states_its_dispatcher_with_a_note(catalog):
    """Every row but the two unmatched 25.11 ones states moe_dispatch, and its note says
    which: all-to-all where the config sets no flex backend, deepep (DeepEP, HybridEP)
    elsewhere."""
    entries, raw = _megatron_bridge_moe(catalog)
    assert len(entries) == 32
    stated = {e.id: e.run.moe_dispatch for e in entries if e.run.moe_dispatch is not None}
    assert set(stated) == {e.id for e in entries} - UNSTATED
    assert {i for i, value in stated.items() if value == "alltoall"} == ALLTOALL
    for entry_id, value in stated.items():
        assert f"moe_dispatch {value}" in raw[entry_id]["note"], entry_id


def test_gpt_oss_rows_price_the_expert_bias_in_their_dispatchers_width(catalog):
    """gpt-oss's expert-bias pass reads 16-bit probabilities under all-to-all, FP32 under
    the flex dispatcher, none under a whole-iteration CUDA graph."""
    core = catalog.frameworks["megatron-core"]
    entries, _ = _megatron_bridge_moe(catalog)
    widths = {}
    for entry in entries:
        if "gptoss" in entry.id:
            recipe, _ = resolve_recipe(run_choices(entry.run), "blackwell", core)
            widths[entry.id] = recipe.kernels.expert_bias_prob_bytes
    assert widths["mbridge2604p1_gptoss120b_64xgb200_bf16"] == 2.0
    assert widths["mbridge2604p1_gptoss120b_64xb300_bf16"] == 4.0
    assert widths["mbridge2608_gptoss120b_64xgb200_mxfp8"] == 0.0
    assert {i for i, w in widths.items() if w == 2.0} == {i for i in ALLTOALL if "gptoss" in i}
