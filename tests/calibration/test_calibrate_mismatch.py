"""``fabricui calibrate`` refuses runs that do not match the topology: another node count
than the output names, another collective than ``--op``, entries of other hardware."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _model_outputs import refused

DATA = Path(__file__).parents[1] / "data"
DEFAULT = DATA / "nccl_tests" / "h100_2node_degraded_default_all_reduce_perf.txt"
PAIR = DATA / "nccl_tests" / "h100_2node_degraded_measurements.yaml"
SHARED = DATA / "nccl" / "measurements.yaml"


@pytest.mark.parametrize("nodes", ["8", "3"])
def test_nodes_other_than_the_named_hosts_arerefused(run_calibrate, nodes):
    """16 ranks on 2 named hosts with --nodes 8 (or 3, which 16 ranks would fit): one line
    with the real reason, the hosts the output names."""
    err = refused(run_calibrate(str(DEFAULT), "-t", "dgx-h100-pod", "--nodes", nodes))
    assert f"names 2 host(s) (16 ranks), --nodes says {nodes}" in err
    assert "give --nodes 2" in err and "do not fit" not in err


def test_an_entry_names_its_hosts_too(run_calibrate):
    """A measurements entry's hardware.nodes is the run's host count."""
    err = refused(run_calibrate(str(PAIR), "-t", "dgx-h100-pod", "--nodes", "4"))
    assert "names 2 host(s)" in err


def test_without_nodes_the_outputs_host_count_is_used(run_calibrate):
    """No --nodes: the run is fitted on the hosts its rank lines name."""
    status, out, err = run_calibrate(str(DEFAULT), "-t", "dgx-h100-pod", "--json")
    assert status == 0, err
    assert json.loads(out)["runs"][0]["nodes"] == 2


@pytest.mark.parametrize("nodes", ["0", "-1"])
def test_nodes_below_one_arerefused(run_calibrate, nodes):
    """--nodes 0 is refused like a negative count, not taken as the default."""
    err = refused(run_calibrate(str(DEFAULT), "-t", "dgx-h100-pod", "--nodes", nodes))
    assert f"--nodes must be at least 1 (got {nodes})" in err


def test_ranks_that_do_not_split_evenly_say_so(run_calibrate, tmp_path):
    """Without rank lines (16 ranks from busbw / algbw), --nodes 3 fails because 16 ranks
    do not split over 3 nodes, not because they would not fit."""
    table = tmp_path / "all_reduce_perf.txt"
    table.write_text(
        "\n".join(line for line in DEFAULT.read_text().splitlines() if "Rank" not in line)
    )
    err = refused(run_calibrate(str(table), "-t", "dgx-h100-pod", "--nodes", "3"))
    assert "16 ranks do not split evenly over 3 nodes" in err


def test_op_that_contradicts_the_output_isrefused(run_calibrate):
    """--op all_gather on an all_reduce_perf output: one line naming both."""
    err = refused(run_calibrate(str(DEFAULT), "-t", "dgx-h100", "--op", "all_gather"))
    assert "ran all_reduce, --op says all_gather" in err


def test_op_the_output_agrees_with_is_fine(run_calibrate):
    """--op naming the output's own collective changes nothing."""
    status, _, err = run_calibrate(str(DEFAULT), "-t", "dgx-h100", "--op", "all_reduce")
    assert status == 0, err


def test_a_named_entry_of_another_gpu_isrefused(run_calibrate):
    """An H100 entry cannot calibrate the A100 topology's NVLink3."""
    err = refused(
        run_calibrate(
            str(SHARED), "-t", "dgx-a100", "--entry", "aws_p5_h100_1node_allreduce_nvls_batch"
        )
    )
    assert "ran on h100-sxm, not dgx-a100's a100-sxm4-80gb" in err


def test_entries_of_other_hardware_are_skipped_and_counted(run_calibrate):
    """Of the shared measurements, dgx-h100 fits only its H100 runs over InfiniBand NDR (or
    one node) and the H200 runs on its 8-GPU NVSwitch node (each said under assumed), and
    one warning line says how many others were left out and why."""
    status, out, err = run_calibrate(str(SHARED), "-t", "dgx-h100", "--json")
    assert status == 0, err
    report = json.loads(out)
    runs = [run["source"] for run in report["runs"]]
    assert runs and all("h100" in source or "h200" in source for source in runs)
    h200 = [source for source in runs if "h200" in source]
    said = [text for text in report["assumptions"] if "ran on h200-sxm, fitted as" in text]
    assert h200 and len(said) == len(h200)
    warnings = [line for line in err.splitlines() if "skipped" in line]
    assert len(warnings) == 1
    skipped = report["skipped_entries"]
    assert f"skipped {len(skipped)} measurements entries" in warnings[0]
    assert "not dgx-h100's h100-sxm" in warnings[0] and "b200" in warnings[0]
    assert "ran over efa" in warnings[0] and "not dgx-h100's ib-ndr" in warnings[0]


def test_no_entry_of_this_hardware_isrefused(run_calibrate):
    """A topology none of whose hardware ran the entries is refused, naming their GPUs."""
    err = refused(run_calibrate(str(PAIR), "-t", "dgx-a100"))
    assert "no measurements entry ran on the hardware of dgx-a100" in err
    assert "ran on h100-sxm" in err
