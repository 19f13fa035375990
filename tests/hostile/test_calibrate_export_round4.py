"""Hostile review of ``calibrate``, ``export``, ``snapshot`` and ``traffic``: nccl-tests outputs
as people hand them over (two runs under one header, out-of-place figures N/A, wrong results,
impossible sizes, another GPU, ranks spread unevenly) and the files these commands write.
Each case runs the CLI in this process."""

from __future__ import annotations

import io
import json
import xml.dom.minidom
from pathlib import Path

import pytest
from _hostile import DATA, one_error

from fabricui.importers.nccl_tests import parse_nccl_tests

RUN = DATA / "nccl_tests" / "h100_2node_degraded_default_all_reduce_perf.txt"


def table(
    gpu: str = "NVIDIA H100 80GB HBM3",
    hosts: tuple[str, ...] = ("hostA",),
    per_host: tuple[int, ...] = (8,),
    rows: tuple[str, ...] = (),
    gpus_per_thread: int = 1,
) -> str:
    """An all_reduce_perf output: rank lines on ``hosts`` (``per_host`` ranks each) and
    ``rows`` (default: 1 KiB to 1 MiB, 8 ranks' bus factor)."""
    lines = [
        "# Collective test starting: all_reduce_perf",
        f"# nThread 1 nGpus {gpus_per_thread} minBytes 1024 maxBytes 1048576 step: 2(factor)",
        "# Using devices",
    ]
    rank = 0
    for host, count in zip(hosts, per_host):
        for device in range(count):
            lines.append(
                f"#  Rank {rank:2d} Group  0 Pid {1000 + rank} on {host} device {device:2d} "
                f"[0000:{device:02x}:00] {gpu}"
            )
            rank += 1
    lines.append(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong"
    )
    if not rows:
        rows = tuple(
            f"{size:12d} {size // 4:12d}     float     sum      -1  {20 + size / 2e5:7.2f}"
            f"  {size / (20 + size / 2e5) / 1e3:6.2f}  {size / (20 + size / 2e5) / 1e3 * 1.75:6.2f}"
            f"      0  {20 + size / 2e5:7.2f}    0.00    0.00      0"
            for size in (2**k for k in range(10, 21))
        )
    return "\n".join([*lines, *rows]) + "\n"


def write(tmp_path: Path, text: str, name: str = "all_reduce_perf.txt") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# --- reading nccl-tests output ------------------------------------------------------------


def test_two_runs_pasted_under_one_header_are_two_runs():
    """Sizes that start over begin another run: a repeated run is never fitted on one half
    and 'held out' on its own copy of the same sizes."""
    text = RUN.read_text()
    again = [line for line in text.splitlines() if line.strip()[:1].isdigit()]
    runs = parse_nccl_tests(text + "\n".join(again) + "\n", "two.txt")
    assert len(runs) == 2
    assert [len(r.rows) for r in runs] == [11, 11]
    assert runs[1].nranks == 16 and runs[1].op == "all_reduce"  # the header's ranks carry
    assert runs[0].source != runs[1].source


def test_rows_with_wrong_results_are_dropped_and_said():
    """A row whose ``#wrong`` count is above 0 computed wrong data: dropped, with why."""
    rows = table().splitlines()
    rows[-1] = rows[-1].replace("      0  ", "      7  ", 1)
    (run,) = parse_nccl_tests("\n".join(rows), "all_reduce_perf.txt")
    assert len(run.rows) == 10
    assert [d.why for d in run.dropped] == ["wrong results (#wrong above 0)"]


def test_the_old_error_column_is_no_count_of_wrong_results():
    """Old nccl-tests print the largest rounding error (``2e-07``), not a count: kept."""
    text = (
        "#       size         count    type   redop     time   algbw   busbw  error\n"
        "           8             2   float     sum    34.73    0.00    0.00  2e-07\n"
    )
    (run,) = parse_nccl_tests(text, "all_reduce_perf.txt")
    assert len(run.rows) == 1 and not run.dropped


def test_out_of_place_figures_n_a_use_the_in_place_ones():
    """Out-of-place columns N/A, in-place numbers: the in-place figures are read, not 'no
    rows'."""
    rows = [
        "        1024           256     float     sum      -1      N/A     N/A     N/A    N/A"
        "    21.50    0.05    0.08      0",
        "        2048           512     float     sum      -1      N/A     N/A     N/A    N/A"
        "    22.50    0.09    0.16      0",
    ]
    (run,) = parse_nccl_tests(table(rows=tuple(rows)), "all_reduce_perf.txt")
    assert [r.time_us for r in run.rows] == [21.5, 22.5]


@pytest.mark.parametrize(
    ("row", "why"),
    [
        (
            "999999999999999999 1 float sum -1 1000.0 1.00 1.75 0 1000.0 1.00 1.75 0",
            "a size over 1 PB",
        ),
        ("1024 256 float sum -1 1e-300 1.00 1.75 0 1.0 1.00 1.75 0", "a time under a nanosecond"),
    ],
)
def test_impossible_sizes_and_times_are_dropped(row: str, why: str):
    """A size over 1 PB or a time under a nanosecond is no measurement (``bounds``)."""
    (run,) = parse_nccl_tests(table(rows=(row,)), "all_reduce_perf.txt")
    assert not run.rows and [d.why for d in run.dropped] == [why]


def test_rank_lines_give_each_hosts_rank_count():
    """``hosts`` holds each host's ranks, in the order of their first rank."""
    (run,) = parse_nccl_tests(
        table(hosts=("b", "a"), per_host=(3, 5)), "all_reduce_perf.txt", op="all_reduce"
    )
    assert run.hosts == (("b", 3), ("a", 5))


# --- calibrate ----------------------------------------------------------------------------


def test_calibrate_refuses_a_run_of_another_gpu_architecture(run_cli, tmp_path: Path):
    """An A100 output fitted to an H100 topology would describe A100s: one line, status 2."""
    path = write(tmp_path, table(gpu="NVIDIA A100-SXM4-80GB"))
    err = one_error(run_cli, "calibrate", path, "-t", "dgx-h100")
    assert "ran on NVIDIA A100-SXM4-80GB, not dgx-h100's h100-sxm" in err


@pytest.mark.parametrize(
    ("gpu", "topology"),
    [
        ("NVIDIA H200", "dgx-h100"),
        ("NVIDIA A100-SXM4-40GB", "dgx-a100"),
        ("Mystery GPU", "dgx-h100"),
    ],
)
def test_calibrate_takes_a_run_of_the_same_architecture(
    run_cli, tmp_path: Path, gpu: str, topology: str
):
    """Parts of one architecture share their links (H200 on an H100 topology); an unknown
    name is not refused."""
    status, _, err = run_cli("calibrate", write(tmp_path, table(gpu=gpu)), "-t", topology)
    assert status == 0, err


def test_calibrate_refuses_more_ranks_on_a_host_than_its_node_has_gpus(run_cli, tmp_path: Path):
    """11 ranks on one host of an 8-GPU topology cannot have run there."""
    path = write(tmp_path, table(hosts=("a", "b"), per_host=(11, 5)))
    err = one_error(run_cli, "calibrate", path, "-t", "dgx-h100")
    assert "the rank lines put 11 ranks on host a, but a node of dgx-h100 has 8 GPUs" in err


def test_calibrate_refuses_ranks_spread_unevenly(run_cli, tmp_path: Path):
    """3 ranks on one host, 5 on the other: the fit would price 4 and 4."""
    path = write(tmp_path, table(hosts=("a", "b"), per_host=(3, 5)))
    err = one_error(run_cli, "calibrate", path, "-t", "dgx-h100")
    assert "different numbers of ranks on the hosts (a: 3, b: 5)" in err


def test_calibrate_all_rows_wrong_is_one_line(run_cli, tmp_path: Path):
    """Every row with wrong results: nothing to fit, one line saying why."""
    text = table().replace("      0  ", "      2  ")
    err = one_error(run_cli, "calibrate", write(tmp_path, text), "-t", "dgx-h100")
    assert "dropped 11 rows: 11 with wrong results" in err


def test_calibrate_says_a_single_process_run_in_text_and_json(run_cli, tmp_path: Path):
    """``-g 8``: the text names the launch its times include, the JSON its GPUs per thread."""
    path = write(tmp_path, table(gpus_per_thread=8))
    status, out, err = run_cli("calibrate", path, "-t", "dgx-h100")
    assert status == 0, err
    assert "algo auto, each thread drove 8 GPUs" in out
    status, out, _ = run_cli("calibrate", path, "-t", "dgx-h100", "--json")
    (run,) = json.loads(out)["runs"]
    assert (run["single_process"], run["gpus_per_thread"]) == (True, 8)


def test_calibrate_standard_input_twice_is_one_line(run_cli, monkeypatch):
    """``-`` read twice would find the second empty: refused up front."""
    err = one_error(run_cli, "calibrate", "-", "--held-out", "-", "-t", "dgx-h100")
    assert "standard input (-) holds one output: give it once" in err


def test_calibrate_names_standard_input_as_such(run_cli, monkeypatch):
    """Empty standard input: the message says ``<stdin>``, not ``-``."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    err = one_error(run_cli, "calibrate", "-", "-t", "dgx-h100")
    assert err.startswith("fabricui: error: <stdin>: no nccl-tests result rows")


# --- snapshot -----------------------------------------------------------------------------


def test_snapshot_reads_a_measured_run_from_standard_input_once(run_cli, monkeypatch):
    """``--measured -``: the request is checked and the report rendered from one read of
    standard input (a second read would find it empty and refuse the run)."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(RUN.read_bytes())))
    status, out, err = run_cli(
        "snapshot", "collectives", "-t", "dgx-h100", "--nodes", "2", "--measured", "-"
    )
    assert status == 0, err
    assert "Measured: pasted output, 16 ranks" in out
    row = next(line for line in out.splitlines() if line.startswith("| 8 MiB |"))
    assert "| 215 us |" in row


def test_snapshot_measured_standard_input_without_a_table_is_one_line(run_cli, monkeypatch):
    """Standard input holding no table: one line naming ``<stdin>``."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"hello\n")))
    err = one_error(run_cli, "snapshot", "collectives", "-t", "dgx-h100", "--measured", "-")
    assert "<stdin>: no nccl-tests result rows" in err


def test_the_reports_diagram_link_survives_spaces_and_parentheses(run_cli, tmp_path: Path):
    """``-o 'my report (v2).md'``: the link to ``my report (v2)-fabric.svg`` is
    percent-encoded, so a Markdown viewer finds the image."""
    target = tmp_path / "my report (v2).md"
    status, _, err = run_cli("snapshot", "topology", "-t", "dgx-h100", "-o", str(target))
    assert status == 0, err
    assert (tmp_path / "my report (v2)-fabric.svg").is_file()
    assert "(my%20report%20%28v2%29-fabric.svg)" in target.read_text()


def test_a_report_says_when_the_measured_run_ran_on_another_gpu(run_cli, tmp_path: Path):
    """An A100 run beside an H100 topology's prediction: the report says its errors
    compare other hardware (the same check ``calibrate`` refuses by)."""
    path = write(tmp_path, table(gpu="NVIDIA A100-SXM4-80GB"))
    status, out, err = run_cli("snapshot", "collectives", "-t", "dgx-h100", "--measured", path)
    assert status == 0, err
    assert (
        "The measured run's GPUs are NVIDIA A100-SXM4-80GB, not dgx-h100's h100-sxm: its "
        "errors compare other hardware." in out
    )
    status, out, _ = run_cli(
        "snapshot",
        "collectives",
        "-t",
        "dgx-h100",
        "--measured",
        str(RUN.parent / "h100_2node_degraded_ring_all_reduce_perf.txt"),
        "--nodes",
        "2",
    )
    assert status == 0 and "other hardware" not in out


# --- export -------------------------------------------------------------------------------


def test_export_refuses_a_diagram_larger_than_the_memory_budget(run_cli, monkeypatch, tmp_path):
    """``--max-hosts 1024`` of a 1,024-host fabric under 160 MiB: one line with the
    estimate and the ``--max-hosts`` that fits, nothing written (the process is taken to
    hold 100 MiB, as the CLI does after loading such a fabric)."""
    monkeypatch.setattr("fabricui.services.admission.resident_bytes", lambda: 100 * 2**20)
    target = tmp_path / "big.svg"
    argv = ("export", "-t", "h100-ib-cluster", "--nodes", "1024", "-o", str(target))
    err = one_error(run_cli, "--max-memory", "160M", *argv, "--max-hosts", "1024")
    assert "a diagram of 1,024 hosts is 23,552 devices" in err
    assert err.endswith("use --max-hosts 911 or fewer") and not target.exists()
    status, _, err = run_cli("--max-memory", "160M", *argv, "--max-hosts", "911")
    assert status == 0, err


def test_the_pdf_font_warning_is_a_fabricui_warning(run_cli, tmp_path: Path):
    """Names the PDF's fonts lack: one stderr line prefixed as every other warning."""
    spec = tmp_path / "topo.yaml"
    spec.write_text(
        "id: Ω-pod\ngpu: h100-sxm\nnodes: 1\ngpus_per_node: 8\n"
        "intra: {fabric: nvswitch, link: nvlink4}\n"
    )
    status, _, err = run_cli("export", "-t", str(spec), "-o", str(tmp_path / "x.pdf"))
    assert status == 0, err
    assert err.startswith("fabricui: warning: the PDF's standard fonts have no"), err


# --- traffic ------------------------------------------------------------------------------


def test_traffic_prints_the_total_rate_in_full(run_cli):
    """The total of a pod's all-to-all (about 12,000 GB/s) is written out, not
    ``1.2e+04``, and is the JSON's total."""
    status, out, err = run_cli("traffic", "-t", "dgx-h100-pod")
    assert status == 0, err
    total = out.splitlines()[1].rsplit("(total ", 1)[1].rstrip(")")
    assert "e+" not in out and total.replace(",", "").isdigit()
    status, out, _ = run_cli("traffic", "-t", "dgx-h100-pod", "--json")
    assert f"{json.loads(out)['rates']['total_GBps']:,.0f}" == total


@pytest.mark.parametrize("pattern", ["all_to_all", "ring", "random-pairs"])
def test_traffic_never_loads_a_link_past_its_capacity(run_cli, pattern: str):
    """Max-min fair rates: every listed link's load is at most its achievable capacity,
    and the flows' rates add up to the total."""
    status, out, err = run_cli(
        "traffic", pattern, "-t", "h100-ib-cluster", "--nodes", "4", "--json"
    )
    assert status == 0, err
    data = json.loads(out)
    for link in data["busiest_links"]:
        assert link["load_GBps"] <= link["capacity_GBps"] * (1 + 1e-9), link
    rates = [flow["rate_GBps"] for flow in data["flows"]]
    assert sum(rates) == pytest.approx(data["rates"]["total_GBps"])


# --- the overlay calibrate writes ---------------------------------------------------------


def test_an_overlay_named_with_a_newline_reads_back(run_cli, tmp_path: Path):
    """``-o $'o\\nx: 1.yaml'``: the name in the header comment cannot end the comment and
    put ``x: 1.yaml`` into the YAML; the overlay applies."""
    target = tmp_path / "o\nx: 1.yaml"
    status, _, err = run_cli("calibrate", str(RUN), "-t", "dgx-h100", "-o", str(target))
    assert status == 0, err
    assert all(line.startswith("#") for line in target.read_text().splitlines()[:3])
    status, _, err = run_cli(f"--calibration={target}", "topologies")
    assert status == 0, err


def test_the_overlay_header_names_how_each_run_was_priced(run_cli, tmp_path: Path):
    """Each run's algorithm and launch are in the header: the settings under which the
    fitted times it states come back."""
    ring = RUN.parent / "h100_2node_degraded_ring_all_reduce_perf.txt"
    target = tmp_path / "fit.yaml"
    status, _, err = run_cli("calibrate", str(ring), "-t", "dgx-h100", "-o", str(target))
    assert status == 0, err
    header = [line for line in target.read_text().splitlines() if line.startswith("# run ")]
    assert header == [f"# run {ring}:32: all_reduce, 16 ranks on 2 node(s), NCCL_ALGO=ring"]


def test_the_overlay_reproduces_the_fitted_times(run_cli, tmp_path: Path):
    """Applied to ``collective`` under the run's settings, the overlay predicts the
    ``after_us`` calibrate reported (the overlay's six digits aside)."""
    ring = RUN.parent / "h100_2node_degraded_ring_all_reduce_perf.txt"
    target = tmp_path / "fit.yaml"
    status, out, err = run_cli(
        "calibrate", str(ring), "-t", "dgx-h100", "-o", str(target), "--json"
    )
    assert status == 0, err
    after = {row["size_bytes"]: row["after_us"] for row in json.loads(out)["runs"][0]["rows"]}
    status, out, err = run_cli(
        f"--calibration={target}", "collective", "all_reduce", "-t", "dgx-h100", "--nodes", "2",
        "--sweep", "8M:8G", "--env", "NCCL_ALGO=ring", "--json",
    )  # fmt: skip
    assert status == 0, err
    predicted = {row["size_bytes"]: row["time_us"] for row in json.loads(out)["rows"]}
    for size, time_us in after.items():
        assert predicted[size] == pytest.approx(time_us, rel=1e-4)


@pytest.mark.parametrize("spelling", ["AllGather", "all-gather", "allgather"])
def test_calibrate_op_takes_the_spellings_collective_takes(run_cli, tmp_path: Path, spelling):
    """``--op AllGather`` is all_gather, as ``collective AllGather`` is."""
    text = table().replace("# Collective test starting: all_reduce_perf\n", "")
    path = write(tmp_path, text, "results.txt")
    status, out, err = run_cli("calibrate", path, "-t", "dgx-h100", "--op", spelling, "--json")
    assert status == 0, err
    assert json.loads(out)["runs"][0]["op"] == "all_gather"


def test_an_svg_of_names_with_control_characters_is_well_formed_xml(run_cli, tmp_path: Path):
    """A topology id holding ``\\x01`` (a YAML escape): the SVG stays XML a viewer opens,
    the character shown as U+FFFD."""
    spec = tmp_path / "ctl.yaml"
    spec.write_text(
        'id: "a\\x01b<&>"\ngpu: h100-sxm\nnodes: 1\ngpus_per_node: 8\n'
        "intra: {fabric: nvswitch, link: nvlink4}\n"
    )
    target = tmp_path / "ctl.svg"
    status, _, err = run_cli("export", "-t", str(spec), "-o", str(target))
    assert status == 0, err
    root = xml.dom.minidom.parse(str(target))
    titles = [t.firstChild.data for t in root.getElementsByTagName("text") if t.firstChild]
    assert any(title.startswith("a\ufffdb<&>") for title in titles), titles
