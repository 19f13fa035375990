"""Memory per GPU: mixed-precision Adam states sharded per strategy, plus activations."""

from __future__ import annotations

import pytest

from fabricui.engine.strategies import memory_per_gpu_GB
from fabricui.engine.types import Layout


def test_memory_states_and_activations_by_hand(catalog):
    """llama3-8b, tp 2 pp 2 dp 4: states 8.03e9/4 x 16 B; activations 34 s b h L/(tp pp) x pp."""
    model = catalog.models["llama3-8b"]
    layout = Layout(tp=2, pp=2, dp=4, microbatches=4, global_batch=16, seq_len=4096)
    states = 8.03e9 / 4 * 16
    tokens = 16 / (4 * 4) * 4096  # one sequence per micro-batch
    activations = 34 * tokens * 4096 * 32 / 4 * 2  # two micro-batches in flight (pp = 2)
    expected = (states + activations) / 1e9
    assert memory_per_gpu_GB(model, layout, ["ddp", "tp", "pp"]) == pytest.approx(expected)


def test_sharding_divides_states(catalog):
    """ZeRO-1 shards the optimizer, ZeRO-2 also gradients, FSDP everything, over dp."""
    model = catalog.models["llama3-8b"]
    layout = Layout(dp=8, microbatches=1, global_batch=8, seq_len=1)
    per_param = {"ddp": 16, "zero1": 2 + 2 + 12 / 8, "zero2": 2 + (2 + 12) / 8, "fsdp": 16 / 8}
    for name, bytes_per_param in per_param.items():
        got = memory_per_gpu_GB(model, layout, [name])
        states = 8.03e9 * bytes_per_param / 1e9
        assert got == pytest.approx(states, rel=1e-3), name
