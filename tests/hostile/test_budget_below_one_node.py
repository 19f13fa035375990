"""A --max-memory below what the smallest request needs has no count to advise: the refusal
says how much memory the smallest one needs (raise --max-memory), never a count that would
be refused in turn (``use --nodes 1 or fewer`` when one node does not fit either)."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.services import admission


@pytest.mark.parametrize(
    ("argv", "smallest"),
    [
        (("path", "n0.g0", "n1.g0", "--nodes", "100"), "even one node's GPUs need about 120 MiB"),
        (("collective", "all_reduce", "1M", "-t", "h100-ib-cluster"), "one node's GPUs"),
    ],
)
def test_a_budget_below_one_node_says_raise_max_memory(run_cli, argv, smallest):
    status, out, err = run_cli(*argv, "--max-memory", "100M")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "raise --max-memory" in err and smallest in err
    assert "or fewer" not in err


def test_a_budget_that_fits_some_nodes_still_names_a_count(run_cli):
    status, _, err = run_cli("path", "n0.g0", "n1.g0", "--nodes", "100000", "--max-memory", "200M")
    assert status == 2 and "use --nodes" in err and "or fewer" in err


def test_a_collective_below_two_gpus_of_budget_says_raise_max_memory():
    with pytest.raises(ConfigError, match=r"even two GPUs need about .*: raise --max-memory"):
        admission.admit_collective("all_reduce", 10**9, budget_bytes=admission.BASE_BYTES)


def test_a_collective_that_fits_some_gpus_names_a_count():
    budget = admission.BASE_BYTES + 100 * admission.RANK_BYTES
    with pytest.raises(ConfigError, match="use --gpus 100 or fewer"):
        admission.admit_collective("all_reduce", 10**9, budget_bytes=budget)
