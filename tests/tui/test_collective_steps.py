"""The collective stepper draws the algorithm the table shows (ring, tree, NVLS, NVLS+tree,
SHARP, PAT, direct), and each drawing ends where the collective must."""

from __future__ import annotations

import pytest

from fabricui.tui.app import settle
from fabricui.tui.widgets.collective_steps import (
    ALGORITHMS,
    DOUBLE_TREE,
    STEPPER_OPS,
    collective_steps,
)
from fabricui.tui.widgets.ring_stepper import RingStepper, chunk_list, send_text

N = 4
EVERYONE = frozenset(range(N))


def finished(op: str, state) -> bool:
    """Whether ``state`` is what ``op`` leaves: the sum everywhere (all-reduce), every
    GPU's chunk everywhere (all-gather), each GPU one whole sum (reduce-scatter), the
    root's data everywhere (broadcast)."""
    if op == "all_reduce":
        return all(state[r][c] == EVERYONE for r in range(N) for c in range(N))
    if op == "all_gather":
        return all(state[r][c] == {c} for r in range(N) for c in range(N))
    if op == "reduce_scatter":
        return all(sum(state[r][c] == EVERYONE for c in range(N)) >= 1 for r in range(N))
    if op == "reduce":
        return all(state[0][c] == EVERYONE for c in range(N))
    if op == "all_to_all":
        return all(state[r][r] == EVERYONE for r in range(N))
    if op == "send_recv":
        return all(state[(r + 1) % N][c] == {r} for r in range(N) for c in range(N))
    return all(state[r][c] == {0} for r in range(N) for c in range(N))


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("op", STEPPER_OPS)
def test_every_drawing_ends_where_the_collective_must(algorithm, op):
    """Whatever is drawn (the algorithm, or the ring or direct sends in its place)
    completes the op."""
    drawn, steps, caption = collective_steps(op, algorithm)
    assert steps and finished(op, steps[-1].state)
    assert drawn == algorithm or f"has no {op} picture: the {drawn}" in caption


@pytest.mark.parametrize(
    ("algorithm", "op", "steps"),
    [
        ("ring", "all_reduce", 6),  # 2 (N - 1)
        ("tree", "all_reduce", 4),  # up two levels, down two
        ("nvls", "all_reduce", 2),  # the switch adds, then multicasts
        ("nvlstree/simple", "all_reduce", 3),
        ("pat", "all_gather", 2),  # log2 N
        ("pat", "reduce_scatter", 2),
        ("p2p", "all_gather", 1),
        ("ring", "reduce", 6),  # 2N - 2, pipelined into GPU0
        ("p2p/simple", "all_to_all", 1),  # every block straight to its GPU
        ("ring", "send_recv", 1),  # drawn as direct sends
    ],
)
def test_step_counts_are_the_algorithms(algorithm, op, steps):
    """Each algorithm takes its own number of steps on four GPUs."""
    assert len(collective_steps(op, algorithm)[1]) == steps


def test_pat_reduce_scatter_leaves_gpu_r_with_chunk_r():
    """PAT's halving distances end with GPU r holding the whole sum of chunk r."""
    final = collective_steps("reduce_scatter", "pat")[1][-1].state
    assert all(final[r][r] == EVERYONE for r in range(N))


def test_double_binary_tree_makes_every_gpu_a_leaf_once():
    """In NCCL's double binary tree each GPU is a leaf of one tree and inside the other."""
    for gpu in range(N):
        inside = [gpu in children for children, _chunks in DOUBLE_TREE]
        assert sorted(inside) == [False, True]


async def test_stepper_follows_the_row_under_the_cursor(app_factory):
    """On the pod the small sizes run a tree and 16 MiB and up NVLS+tree: the stepper
    draws whichever the highlighted row says."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        stepper = app.screen.query_one(RingStepper)
        algorithms = list(app.screen.prediction.algorithm)
        assert stepper.drawn == algorithms[0].split("/")[0] == "tree"
        first_nvls = next(i for i, a in enumerate(algorithms) if a.startswith("nvlstree"))
        app.screen.query_one("DataTable").move_cursor(row=first_nvls)
        await pilot.pause()
        assert stepper.drawn == "nvlstree" and stepper.step == 0
        await pilot.press("n")
        assert "nvlstree all_reduce" in str(stepper.render())


async def test_stepper_draws_the_chosen_point_to_point_op(app_factory):
    """All-to-all on the pod: the stepper draws direct sends of all-to-all (not an
    all-reduce) under the caption of that picture, once the table's row names p2p."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.op = "all_to_all"
        await settle(pilot)
        stepper = app.screen.query_one(RingStepper)
        assert (stepper.op, stepper.drawn) == ("all_to_all", "p2p")
        assert stepper.caption == "direct: every block straight to its GPU"
        assert "p2p all_to_all" in str(stepper.render())


def test_every_gpu_line_fits_the_80_column_stepper():
    """What a GPU sends stays within 17 columns in every picture (the stepper is 56 wide
    with four 8-column chunk cells): three chunks with a gap read ``ACD``."""
    assert chunk_list([0, 2, 3]) == "ACD" and chunk_list([1, 2, 3]) == "B-D"
    assert chunk_list([0, 2]) == "A,C"
    for algorithm in ALGORITHMS:
        for op in STEPPER_OPS:
            for step in collective_steps(op, algorithm)[1]:
                for rank in range(N):
                    assert len(send_text(step, rank, "->")) <= 17, (algorithm, op, rank)
