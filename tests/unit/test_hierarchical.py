"""Two-level collectives: a framework's NCCL calls per level, each priced as NCCL runs it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricui.engine.collectives import predict
from fabricui.engine.group import Group
from fabricui.engine.hierarchical import Stage, stages
from fabricui.errors import EngineError
from fabricui.services.session import collective_algorithms
from tests.unit.test_collectives_at_scale import H100_2, fabric_of


@pytest.fixture(scope="module")
def fabric(catalog):
    """Two 8x H100 servers on NDR."""
    return fabric_of(catalog, H100_2)


def test_each_op_splits_into_its_levels():
    """All-reduce: reduce-scatter in the node, all-reduce of 1/ppn across nodes, all-gather
    in the node; all-gather crosses nodes first, reduce-scatter scatters in the node first."""
    assert stages("all_reduce", 8) == (
        Stage("reduce_scatter", "node", 1.0),
        Stage("all_reduce", "network", 0.125),
        Stage("all_gather", "node", 1.0),
    )
    assert [s.level for s in stages("all_gather", 4)] == ["network", "node"]
    assert [s.level for s in stages("reduce_scatter", 4)] == ["node", "network"]
    with pytest.raises(EngineError, match="not all_to_all"):
        stages("all_to_all", 8)


def test_the_time_is_its_calls_one_after_another(fabric):
    """1 GiB on 2 x 8 H100: NCCL's pick for a 1 GiB reduce-scatter and all-gather on one
    node's 8 GPUs, plus its pick for a 128 MiB all-reduce on GPU 0 of each node."""
    algorithms = collective_algorithms()
    sizes = np.array([2.0**30, 2.0**20])
    whole = predict(Group(fabric, np.arange(16)), "all_reduce", sizes, algorithms, "hierarchical")
    node, rail = Group(fabric, np.arange(8)), Group(fabric, np.array([0, 8]))
    parts = (
        predict(node, "reduce_scatter", sizes, algorithms).time_us
        + predict(rail, "all_reduce", sizes / 8, algorithms).time_us
        + predict(node, "all_gather", sizes, algorithms).time_us
    )
    np.testing.assert_allclose(whole.time_us, parts)
    assert whole.algorithm[0].startswith("hierarchical/")
    assert whole.choice is not None and whole.choice.library.startswith("hierarchical: ")


def test_it_needs_several_nodes_of_equal_gpus(fabric):
    algorithms = collective_algorithms()
    with pytest.raises(EngineError, match="two or more nodes"):
        predict(Group(fabric, np.arange(8)), "all_reduce", [2.0**20], algorithms, "hierarchical")
    with pytest.raises(EngineError, match="two or more nodes"):
        predict(Group(fabric, np.arange(12)), "all_reduce", [2.0**20], algorithms, "hierarchical")


def test_the_command_line_forces_it_and_names_its_calls(run_cli):
    status, out, _ = run_cli("collective", "all_gather", "1G", "--algo", "hierarchical", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["library"].startswith("hierarchical: all-gather across nodes, then")
    assert result["rows"][0]["nccl_pick"]["algorithm"] == "hierarchical"
    status, _, err = run_cli("collective", "all_reduce", "1G", "--algo", "hierarchy")
    assert status == 2 and "hierarchical" in err
