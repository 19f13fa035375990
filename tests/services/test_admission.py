"""Admission control: work past the memory budget is refused up front with what fits."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.services import admission


def test_budget_from_option_env_or_default(monkeypatch):
    """--max-memory wins over $FABRICUI_MAX_MEMORY, which wins over the default."""
    monkeypatch.delenv(admission.ENV_MAX_MEMORY, raising=False)
    assert admission.memory_budget() == admission.DEFAULT_BUDGET_BYTES
    monkeypatch.setenv(admission.ENV_MAX_MEMORY, "8G")
    assert admission.memory_budget() == 8 * 2**30
    assert admission.memory_budget("512M") == 512 * 2**20
    with pytest.raises(ConfigError, match="at least 64M"):
        admission.memory_budget("1k")


@pytest.mark.parametrize("pattern", ["all_to_all", "ring", "random-pairs"])
def test_samples_are_flows_of_the_pattern_spread_over_it(pattern):
    """The flows measured are the pattern's own, evenly spread (every source of an
    all-to-all), without building the whole pattern."""
    import numpy as np

    from fabricui.engine.traffic import pattern_flows
    from fabricui.services import flow_memory

    ranks = np.arange(100, 164)
    src, dst = flow_memory.sample_flows(pattern, ranks, 256, seed=3)
    every = set(zip(*(a.tolist() for a in pattern_flows(pattern, ranks, 3))))
    assert set(zip(src.tolist(), dst.tolist())) <= every
    assert len(src) == min(256, flow_memory.flow_count(pattern, 64))
    assert set(src.tolist()) == set(ranks.tolist())  # every source is represented


def test_a_flow_cost_grows_with_the_flows_it_measured():
    """The slope between the two samples is the memory per flow; the estimate scales it
    to resident bytes and adds the pattern's own arrays."""
    from fabricui.services import flow_memory

    buffers: list[bytearray] = []
    cost = flow_memory.measure(lambda k: buffers.append(bytearray(1000 * k + 10**6)))
    assert cost.per_flow_bytes == pytest.approx(1000, rel=0.01)
    assert cost.fixed_bytes == pytest.approx(10**6, rel=0.05)
    traced = cost.fixed_bytes + cost.per_flow_bytes * 1000
    expected = 5 + flow_memory.RESIDENT_PER_TRACED * traced + 1000 * flow_memory.PATTERN_BYTES
    assert cost.peak_bytes(1000, 5) == pytest.approx(expected, abs=1)


def test_what_a_sample_builds_once_is_fixed_not_per_flow():
    """A router's one-time build (a cache filled by the first sample) goes to the fixed
    part: the slope is that of the warm samples."""
    from fabricui.services import flow_memory

    built: list[bytearray] = []

    def run(k: int) -> None:
        if not built:
            built.append(bytearray(50 * 10**6))  # the cold run's trees and caches
        bytearray(1000 * k)

    cost = flow_memory.measure(run)
    assert cost.per_flow_bytes == pytest.approx(1000, rel=0.01)
    assert cost.fixed_bytes >= 49 * 10**6


def test_a_flow_costs_at_least_what_whole_patterns_take():
    """A slope below what a whole pattern takes a flow (a big fabric's fixed arrays dwarf
    the sample) is raised to ``MIN_PER_FLOW_BYTES``."""
    from fabricui.services import flow_memory

    cost = flow_memory.measure(lambda k: bytearray(10 * k + 10**6))
    assert cost.per_flow_bytes == flow_memory.MIN_PER_FLOW_BYTES


def test_refusals_are_one_line_with_advice(run_cli):
    """traffic and all_to_all on 8,192 GPUs, and a 1.9M-GPU cluster, are refused at once."""
    status, _, err = run_cli("traffic", "-t", "h100-ib-cluster", "--nodes", "1024")
    assert status == 2 and err.count("\n") == 1
    assert "67,100,672 flows" in err and "use --gpus" in err
    status, _, err = run_cli(
        "collective", "all_to_all", "-t", "h100-ib-cluster", "--nodes", "1024", "--size", "1G"
    )
    assert status == 2 and "all_to_all among 8192 GPUs" in err
    status, _, err = run_cli(
        "path", "-t", "gb200-nvl72-cluster", "--nodes", "27000", "--src", "0", "--dst", "5"
    )
    assert status == 2 and err.count("\n") == 1  # refused at once (radix or memory)
    argv = ["path", "-t", "h100-ib-cluster", "--nodes", "64", "--src", "0", "--dst", "5"]
    status, _, err = run_cli("--max-memory", "100M", *argv)
    # below one node's GPUs there is no count to advise, only the memory to give
    assert status == 2 and "limit 100 MiB" in err and "raise --max-memory" in err
    some_nodes = str(120 * 2**20 + 100_000)  # the base and 50 GPUs
    status, _, err = run_cli("--max-memory", some_nodes, *argv)
    assert status == 2 and "use --nodes 6 or fewer" in err
    assert run_cli(*argv)[0] == 0


def test_collectives_are_admitted_by_their_ranks(run_cli):
    """A collective among more GPUs than the budget's ranks is refused with the group size
    that fits (which is then admitted); the explorer's collectives view refuses the same."""
    budget = 512 * 2**20
    most = (budget - admission.BASE_BYTES) // admission.RANK_BYTES
    admission.admit_collective("all_reduce", most, budget)
    with pytest.raises(ConfigError, match=rf"all_reduce among {most + 1:,} GPUs.*--gpus {most}"):
        admission.admit_collective("all_reduce", most + 1, budget)
    argv = ["collective", "all_reduce", "-t", "h100-ib-cluster", "--nodes", "8", "--size", "1M"]
    status, _, err = run_cli("--max-memory", "120.3M", *argv)
    assert status == 2 and err.count("\n") == 1 and "64 GPUs is 64 ranks" in err


def test_the_explorer_refuses_a_collective_past_the_budget(monkeypatch, catalog):
    """LoadedFabric.collective (the view's call) goes through the same admission."""
    from fabricui.services.loaded import LoadedFabric
    from fabricui.services.requests import TopologyRequest

    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod"), catalog=catalog)
    monkeypatch.setenv(admission.ENV_MAX_MEMORY, "120.3M")
    with pytest.raises(ConfigError, match="all_reduce among 32 GPUs"):
        data.collective("all_reduce", "all", [1 << 20])
    monkeypatch.delenv(admission.ENV_MAX_MEMORY)
    assert data.collective("all_reduce", "all", [1 << 20]).time_us[0] > 0
