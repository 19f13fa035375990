"""Routed experts' model states: held by ``ep`` times fewer ranks, so data-parallel
sharding divides them only over the expert data-parallel group, and a framework's
optimizer decides the bytes per parameter."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricui.engine.training.memory import (
    adam_step_bytes,
    expert_shards,
    stage_expert_params,
    stage_params,
    states_bytes,
)
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout, StateShards


def test_expert_shards_follow_the_expert_data_parallel_group():
    """Sharded over all 32 data-parallel ranks, experts with EP 8 split over 32 / 8 = 4;
    unsharded stays 1; an HSDP group of 8 of the 32 ranks takes 8 / 32 of the 4 (at
    least 1); an expert group larger than the DP group (TP ranks that do not split the
    experts) shards them further."""
    layout = Layout(dp=32, ep=8)
    assert layout.expert_dp == 4
    got = expert_shards(np.array([32.0, 1.0, 8.0]), 32, layout.expert_dp)
    assert got.tolist() == [4.0, 1.0, 1.0]
    assert float(expert_shards(8, 8, Layout(tp=4, dp=8, ep=2, etp=1).expert_dp)) == 16.0


def test_states_split_dense_and_expert_parts_by_hand():
    """1e9 parameters of which 0.8e9 routed experts, FSDP over 32 ranks, expert group of 4:
    weights 2 * (0.2e9 / 32 + 0.8e9 / 4), gradients 4 * (...), optimizer 12 * (...)."""
    weights, grads, optimizer = states_bytes(1e9, StateShards(32, 32, 32), 4.0, 0.8e9, 32, 4)
    per = 0.2e9 / 32 + 0.8e9 / 4
    assert float(weights) == pytest.approx(2 * per)
    assert float(grads) == pytest.approx(4 * per)
    assert float(optimizer) == pytest.approx(12 * per)


def test_stage_expert_params_are_part_of_the_stage(catalog):
    """DeepSeek-V3: the routed experts of a stage split over ep (and etp) are what
    ``stage_params`` adds over a model without them."""
    geo = geometry(catalog.model("deepseek-v3"))
    experts = float(stage_expert_params(geo, 61, 32, 1))
    assert experts == pytest.approx(61 * geo.moe_layers / geo.layers * 256 / 32 * geo.expert_params)
    total = float(stage_params(geo, 61, 1, 32, False, False))
    one_expert_per_gpu = float(stage_params(geo, 61, 1, 256, False, False))
    assert total - one_expert_per_gpu == pytest.approx(experts * (1 - 32 / 256))


def test_fsdp_does_not_shard_experts_past_their_group(run_cli):
    """DeepSeek-V3 (671B) on 32 H100 with EP 32 under FSDP: every GPU holds its own
    experts whole (the expert group is 1), so the 32 GPUs together hold at least the
    model's 16-bit weights (1,342 GB), and the plan does not fit."""
    argv = ["plan", "-m", "deepseek-v3", "-t", "dgx-h100-pod", "--tp", "1", "--dp", "32"]
    status, out, _ = run_cli(*argv, "--ep", "32", "--dp-strategy", "fsdp", "--json")
    assert status == 0
    report = json.loads(out)
    assert report["memory"]["weights_GB"] * 32 >= 0.98 * 671 * 2
    assert report["fits"] is False


def test_search_refuses_a_trillion_parameters_on_32_gpus(run_cli):
    """Kimi K2 (1T) needs about 16 TB of model states; 32 H100 hold 2.56 TB."""
    status, _, err = run_cli("plan", "--search", "-m", "kimi-k2", "-t", "dgx-h100-pod")
    assert status == 2 and "no layout of kimi-k2 fits" in err


def test_automodel_trains_with_bf16_adam_states(catalog):
    """NeMo AutoModel's benchmark configs run torch.optim.Adam on bf16 parameters: bf16
    gradients and moments (2 + 4 bytes), no FP32 master copy; an Adam step then moves
    2 * 4 + 2 bytes per parameter besides the gradient (26 with FP32 states)."""
    framework = catalog.table("frameworks")["automodel"]
    recipe, _ = resolve_recipe(RecipeChoices(), "hopper", framework)
    assert (recipe.grad_bytes, recipe.optimizer_bytes) == (2.0, 4.0)
    assert adam_step_bytes(recipe.optimizer_bytes) == 10.0
    assert adam_step_bytes() == 26.0
