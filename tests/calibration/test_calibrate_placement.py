"""``fabricui calibrate`` prices a run on the GPUs its rank lines name: the device of each
rank on its host, ranks that alternate between hosts included (the report says the model
rings them host by host, as NCCL does)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _model_outputs import all_reduce_output, model_times_us, refused

RTX = "NVIDIA GeForce RTX 4090"
#: Two 8-GPU PCIe boxes (four PCIe switches each): GPUs 0, 2, 4, 6 of a box sit under
#: other switches than GPUs 0-3, so where the ranks ran changes the price.
BOXES = "pcie-rtx4090x8"
SIZES = 4.0 ** np.arange(10, 16)


def _json(run_calibrate, *argv: str) -> dict[str, Any]:
    status, out, err = run_calibrate(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def alternating(tmp_path_factory) -> Path:
    """A run of 8 ranks on two boxes, rank r on box r % 2, device 2 * (r // 2): GPUs 0, 2,
    4, 6 of each, ranks alternating between the boxes; its times are the model's own on
    those GPUs."""
    gpus = [0, 2, 4, 6, 8, 10, 12, 14]
    times = model_times_us(BOXES, 2, {}, SIZES, ranks=gpus)
    placement = [(f"box{rank % 2}", 2 * (rank // 2)) for rank in range(8)]
    path = tmp_path_factory.mktemp("placement") / "all_reduce_perf.txt"
    path.write_text(all_reduce_output(SIZES, times, placement, gpu=RTX))
    return path


def test_ranks_alternating_between_hosts_are_priced_on_the_gpus_they_name(
    run_calibrate, alternating
):
    """The run is priced on GPUs 0, 2, 4, 6 of each box (the database then predicts its own
    times, nothing to fit), not on GPUs 0-3; the report says which GPUs, and that the
    model rings the ranks host by host, not in their alternating order."""
    report = _json(run_calibrate, str(alternating), "-t", BOXES)
    (run,) = report["runs"]
    assert run["devices"] == [[0, 2, 4, 6], [0, 2, 4, 6]] and run["nodes"] == 2
    measured = [row["measured_us"] for row in run["rows"]]
    assert [row["before_us"] for row in run["rows"]] == pytest.approx(measured, rel=1e-3)
    blocks = model_times_us(BOXES, 2, {}, SIZES, ranks=[0, 1, 2, 3, 8, 9, 10, 11])
    assert not np.allclose(blocks, measured, rtol=0.05)  # the blocks would price another run
    assert report["overlay"] == {}
    (note,) = run["assumptions"]
    assert "the rank lines alternate ranks between hosts; priced on the GPUs they name" in note
    assert "host by host as NCCL builds them (not in rank order)" in note
    status, out, err = run_calibrate(str(alternating), "-t", BOXES)
    assert status == 0, err
    assert "8 ranks on 2 node(s), GPUs 0, 2, 4, 6 of each, algo auto" in out
    assert "alternate ranks between hosts" in out.split("assumed:\n", 1)[1]


def test_a_device_beyond_the_node_isrefused(run_calibrate, tmp_path):
    """A rank line naming device 9 on 8-GPU nodes: one line naming the rank and its host."""
    placement = [("box0", device) for device in (0, 1, 2, 9)]
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text(all_reduce_output(SIZES[:3], [30.0, 60.0, 200.0], placement, gpu=RTX))
    err = refused(run_calibrate(str(path), "-t", BOXES))
    assert "rank 3 ran on device 9 of box0, but a node of pcie-rtx4090x8 has 8 GPUs" in err


def test_every_rank_on_device_0_takes_the_first_gpus_and_says_so(run_calibrate, tmp_path):
    """Processes that each saw only their own GPU print device 0 for every rank: the
    host's ranks take its GPUs 0, 1 ... and the report says that was assumed."""
    placement = [("box0", 0)] * 4
    times = model_times_us(BOXES, 1, {}, SIZES, ranks=[0, 1, 2, 3])
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text(all_reduce_output(SIZES, times, placement, gpu=RTX))
    report = _json(run_calibrate, str(path), "-t", BOXES)
    (run,) = report["runs"]
    assert run["devices"] == [[0, 1, 2, 3]]
    (note,) = run["assumptions"]
    assert "give several ranks of a host the same device" in note
    assert "GPUs 0-3 of each host assumed" in note


def test_alternating_ranks_on_an_imported_cluster(run_calibrate, selene, tmp_path):
    """On Selene the hosts the rank lines name, in order of their first rank, take the
    devices their ranks name (4-7 of luna-0200 and luna-0100), and the alternation is said."""
    placement = [(("luna-0200", "luna-0100")[rank % 2], 4 + rank // 2) for rank in range(8)]
    path = tmp_path / "all_reduce_perf.txt"
    times = [40.0, 60.0, 150.0]
    path.write_text(all_reduce_output(SIZES[:3], times, placement, gpu="NVIDIA A100-SXM4-80GB"))
    report = _json(run_calibrate, str(path), "-t", selene)
    (run,) = report["runs"]
    assert run["hosts"] == ["luna-0200", "luna-0100"]
    assert run["devices"] == [[4, 5, 6, 7], [4, 5, 6, 7]]
    assert any("alternate ranks between hosts" in text for text in run["assumptions"])


@pytest.mark.parametrize(
    ("devices", "text"),
    [
        ([], ""),
        ([[0, 1, 2, 3], [0, 1, 2, 3]], ""),
        ([[4, 5, 6, 7], [4, 5, 6, 7]], ", GPUs 4-7 of each"),
        ([[3], [3]], ", GPU 3 of each"),
        ([[0, 2], [0, 2]], ", GPUs 0, 2 of each"),
        ([[0, 1], [2, 3]], ", the GPUs its rank lines name (JSON devices)"),
    ],
)
def test_the_runs_line_names_gpus_other_than_the_first(devices, text):
    """The run's line of the text report names the GPUs priced when they are not each
    node's first ones."""
    from fabricui.commands.calibrate import _devices_text

    assert _devices_text({"devices": devices}) == text
