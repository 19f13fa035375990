"""``collective --gpus-per-thread`` is 1 to a node's GPUs: a thread cannot drive more GPUs
than its node has."""

from __future__ import annotations

import pytest

SINGLE = ("collective", "all_reduce", "1G", "--launch", "single-process")


@pytest.mark.parametrize("count", ["9", "100"])
def test_a_thread_cannot_drive_more_gpus_than_a_node_has(run_cli, count):
    """8-GPU nodes: 9 or 100 GPUs per thread is one line naming the node's 8 GPUs."""
    status, out, err = run_cli(*SINGLE, "--gpus-per-thread", count, "-t", "dgx-h100-pod")
    assert status == 2 and out == ""
    assert err.strip() == (
        f"fabricui: error: --gpus-per-thread {count}: a node of dgx-h100-pod has 8 GPUs; "
        "give 1 to 8"
    )


@pytest.mark.parametrize("count", ["1", "4", "8"])
def test_one_to_a_nodes_gpus_per_thread_are_priced(run_cli, count):
    """1 to 8 (8: nccl-tests -g 8, what a measured run's copied command says) still work."""
    status, out, _ = run_cli(*SINGLE, "--gpus-per-thread", count, "-t", "dgx-h100-pod")
    assert status == 0 and f"each thread drives {count} GPU(s)" in out


def test_eight_per_thread_prices_like_the_plain_single_process_launch(run_cli):
    """A thread driving all 8 GPUs of its node is the single-process launch itself."""
    every = run_cli(*SINGLE, "-t", "dgx-h100-pod", "--json")[1]
    eight = run_cli(*SINGLE, "-t", "dgx-h100-pod", "--gpus-per-thread", "8", "--json")[1]
    assert '"rows"' in every
    assert every.split('"rows"')[1] == eight.split('"rows"')[1]
