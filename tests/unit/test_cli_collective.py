"""``fabricui collective``: nccl-tests-shaped rows, sweeps, the ideal calculator, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabricui.engine.nccl.picks import NCCL_ALGORITHM
from fabricui.hwdb import load_catalog

ROOT = Path(__file__).parents[2]
MEASUREMENTS = ROOT / "tests" / "data" / "nccl" / "measurements.yaml"


def test_collective_json_shape(run_cli):
    """One object with op, topology, nranks and a row per size with the documented keys."""
    status, out, err = run_cli(
        "collective",
        "all_reduce",
        "--topology",
        "dgx-h100-pod",
        "--size",
        "8",
        "64K",
        "1G",
        "--json",
    )
    assert status == 0, err
    data = json.loads(out)
    assert (data["op"], data["topology"], data["nranks"]) == ("all_reduce", "dgx-h100-pod", 32)
    assert [r["size_bytes"] for r in data["rows"]] == [8, 65536, 2**30]
    assert data["library"].startswith("NCCL ")
    for row in data["rows"]:
        assert set(row) == {
            "size_bytes",
            "algorithm",
            "time_us",
            "algbw_GBps",
            "busbw_GBps",
            "nccl_pick",
            "best_pick",
            "gain",
            "env",
            "caution",
        }
        assert row["algbw_GBps"] == pytest.approx(row["size_bytes"] / row["time_us"] / 1e3)
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * 31 / 32)
        for pick in ("nccl_pick", "best_pick"):
            assert set(row[pick]) == {"algorithm", "protocol", "channels", "time_us"}
        # The top-level figures are NCCL's pick: what a job runs.
        nccl = row["nccl_pick"]
        assert row["time_us"] == nccl["time_us"]
        assert row["algorithm"] == f"{nccl['algorithm']}/{nccl['protocol']}"
        assert row["best_pick"]["time_us"] <= row["time_us"]
        assert bool(row["env"]) == (row["best_pick"]["time_us"] < row["time_us"])


def test_launch_single_process_prices_one_process_driving_each_node(run_cli):
    """--launch single-process (nccl-tests -g N): a small all-reduce on 8 GPUs takes the
    process's issue on them (2.1 + 8 * 4.2 = 35.7 us), a large one what one process per GPU
    takes; the JSON and the title say how the job was launched."""
    args = ("collective", "all_reduce", "-t", "dgx-a100", "--size", "8", "1G", "--json")
    status, out, err = run_cli(*args, "--launch", "single-process")
    assert status == 0, err
    driven = json.loads(out)
    status, out, err = run_cli(*args)
    alone = json.loads(out)
    assert (driven["launch"], alone["launch"]) == ("single-process", "process-per-gpu")
    assert driven["rows"][0]["time_us"] == pytest.approx(35.7)
    assert alone["rows"][0]["time_us"] < 35.7
    assert driven["rows"][1]["time_us"] == pytest.approx(alone["rows"][1]["time_us"])
    status, out, err = run_cli(*args[:-1], "--launch", "single-process")
    assert "one process drives every GPU of a node" in out.splitlines()[0]
    assert driven["gpus_per_thread"] is None and alone["gpus_per_thread"] is None


def test_gpus_per_thread_prices_threads_side_by_side(run_cli):
    """--gpus-per-thread N (nccl-tests -g N with several threads or processes per 8-GPU
    node): the floor is the busiest thread's issue on its N GPUs, 2.1 + 6 * 4.2 = 27.3 us
    for 6; for 2 (10.5 us) the GPUs' own work is longer and sets the time, as with one
    process per GPU. The count needs --launch single-process and must be 1 or more (one
    line, exit 2)."""
    args = ("collective", "all_reduce", "-t", "dgx-a100", "--size", "8", "--launch")
    times = {}
    for count in ("6", "2"):
        status, out, err = run_cli(*args, "single-process", "--gpus-per-thread", count, "--json")
        assert status == 0, err
        result = json.loads(out)
        assert result["gpus_per_thread"] == int(count)
        times[count] = result["rows"][0]["time_us"]
    status, out, err = run_cli(*args, "process-per-gpu", "--json")
    alone = json.loads(out)["rows"][0]["time_us"]
    assert times["6"] == pytest.approx(27.3) and alone < 27.3
    assert times["2"] == pytest.approx(alone)
    status, out, err = run_cli(*args, "single-process", "--gpus-per-thread", "2")
    assert "each thread drives 2 GPU(s)" in out.splitlines()[0]
    bad_counts = (
        ("process-per-gpu", "--gpus-per-thread", "2"),
        ("single-process", "--gpus-per-thread", "0"),
    )
    for bad in bad_counts:
        status, out, err = run_cli(*args, *bad)
        assert status == 2 and "--gpus-per-thread" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_nccl_version_and_env_change_the_pick(run_cli, monkeypatch):
    """--env NCCL_ALGO=ring makes NCCL run rings; the shell's NCCL_* variables count too,
    --env overrides them; --nccl picks the release whose tuner decides."""
    monkeypatch.setenv("NCCL_PROTO", "Simple")
    argv = ["collective", "all_reduce", "-t", "dgx-h100", "--size", "8", "1G", "--json"]
    status, out, err = run_cli(*argv, "--env", "NCCL_ALGO=ring", "--nccl", "2.21")
    assert status == 0, err
    data = json.loads(out)
    assert data["library"] == "NCCL 2.21.5" and data["nccl_env"]["NCCL_ALGO"] == "ring"
    assert [r["algorithm"] for r in data["rows"]] == ["ring/simple", "ring/simple"]
    # The best pick leaves the settings aside and says how to get it.
    assert data["rows"][0]["best_pick"]["protocol"] == "ll"
    assert data["rows"][0]["env"]["NCCL_PROTO"] == "LL"


def test_a_slingshot_prediction_names_the_receive_matching_it_assumed(run_cli, monkeypatch):
    """Across Slingshot nodes with FI_CXI_RX_MATCH_MODE unset, the prediction says it priced
    libfabric's default (matching in the NIC) and how to price a site's software matching;
    with the setting given (--env or the shell) or inside one node, no note."""
    monkeypatch.delenv("FI_CXI_RX_MATCH_MODE", raising=False)
    argv = ["collective", "all_reduce", "-t", "gh200-quad", "--nodes", "4", "--size", "8K"]
    status, out, err = run_cli(*argv, "--json")
    assert status == 0, err
    plain = json.loads(out)
    (note,) = plain["notes"]
    assert "FI_CXI_RX_MATCH_MODE unset" in note
    assert "--env FI_CXI_RX_MATCH_MODE=software" in note
    status, out, err = run_cli(*argv)
    assert status == 0 and out.splitlines()[-1].startswith("note: libfabric's CXI provider")
    status, out, err = run_cli(*argv, "--json", "--env", "FI_CXI_RX_MATCH_MODE=software")
    software = json.loads(out)
    assert software["notes"] == []
    assert software["rows"][0]["time_us"] > plain["rows"][0]["time_us"]  # the copies
    monkeypatch.setenv("FI_CXI_RX_MATCH_MODE", "hardware")
    assert json.loads(run_cli(*argv, "--json")[1])["notes"] == []
    monkeypatch.delenv("FI_CXI_RX_MATCH_MODE")
    one_node = ["collective", "all_reduce", "-t", "gh200-quad", "--size", "8K", "--json"]
    assert json.loads(run_cli(*one_node)[1])["notes"] == []
    infiniband = ["collective", "all_reduce", "-t", "dgx-h100-pod", "--size", "8K", "--json"]
    assert json.loads(run_cli(*infiniband)[1])["notes"] == []


def test_an_aws_prediction_at_scale_names_the_plugins_tuner(run_cli, monkeypatch):
    """On four P5en instances aws-ofi-nccl's tuner picks instead of NCCL: the prediction
    (NCCL's own choice) says so and what runs that choice; not with it turned off, and the
    picks themselves do not change."""
    for name in ("NCCL_TUNER_PLUGIN", "OFI_NCCL_TUNER_TYPE", "OFI_NCCL_FORCE_NUM_RAILS"):
        monkeypatch.delenv(name, raising=False)
    argv = ["collective", "all_reduce", "-t", "aws-p5en-cluster", "--nodes", "4", "--size", "1M"]
    status, out, err = run_cli(*argv, "--json")
    assert status == 0, err
    plain = json.loads(out)
    (note,) = plain["notes"]
    assert "aws-ofi-nccl" in note and "OFI_NCCL_TUNER_TYPE=Internal" in note
    status, out, err = run_cli(*argv)
    assert status == 0 and out.splitlines()[-1].startswith("note: on AWS P5e/P5en instances")
    status, out, err = run_cli(*argv, "--json", "--env", "OFI_NCCL_TUNER_TYPE=Internal")
    internal = json.loads(out)
    assert internal["notes"] == [] and internal["rows"] == plain["rows"]


def test_a_release_past_the_newest_modelled_is_named(run_cli):
    """--nccl 2.99 (a typo, or a release out later) is priced with the newest tuner, and
    stderr says so in one line; the newest line itself (2.30) is not warned about."""
    argv = ["collective", "all_reduce", "-t", "dgx-h100", "--size", "1G", "--json", "--nccl"]
    status, out, err = run_cli(*argv, "2.99")
    assert status == 0 and json.loads(out)["library"] == "NCCL 2.30.7"
    assert err == (
        "fabricui: warning: NCCL 2.99 is newer than the newest release modelled (2.30.7): "
        "priced with 2.30.7's tuner\n"
    )
    assert run_cli(*argv, "2.30")[2] == ""


def test_tuner_config_for_nccls_example_plugin(run_cli, tmp_path):
    """--tuner FILE writes one line per size range whose best pick beats NCCL's by the
    margin, in the example tuner plugin's columns; the table still goes to stdout, an
    existing file needs --force, and collectives NCCL's tuner does not choose for are
    refused."""
    config = tmp_path / "tuner.conf"
    argv = ["collective", "all_reduce", "-t", "h100-ib-cluster", "--nodes", "16"]
    status, out, err = run_cli(*argv, "--sweep", "64K:64M", "--json", "--tuner", str(config))
    assert status == 0, err
    rows = json.loads(out)["rows"]
    assert f"wrote {config}" in err
    text = config.read_text(encoding="utf-8")
    assert "NCCL_TUNER_PLUGIN=" in text and "NCCL_TUNER_CONFIG_FILE=" in text  # how to load it
    lines = [ln for ln in text.splitlines() if ln[:1] != "#"]
    better = [r for r in rows if r["env"] and r["gain"] >= 0.05]
    assert better and lines
    covered = []
    for line in lines:
        function, lo, hi, algorithm, protocol, channels, nodes, ranks, pipe, reg = line.split(",")
        assert (function, channels, nodes, ranks, pipe, reg) == (
            "allreduce",
            "-1",
            "16",
            "128",
            "-1",
            "-1",
        )
        covered += [
            r
            for r in better
            if int(lo) <= r["size_bytes"] <= int(hi)
            and NCCL_ALGORITHM[r["best_pick"]["algorithm"]] == algorithm  # NCCL's names
            and r["best_pick"]["protocol"] == protocol
        ]
    assert len(covered) == len(better)
    status, _, err = run_cli(*argv, "--size", "1M", "--tuner", str(config))
    assert status == 2 and "already exists" in err
    status, _, err = run_cli(*argv, "--size", "1M", "--tuner", str(config), "--force")
    assert status == 0, err
    status, _, err = run_cli(
        "collective", "all_to_all", "--size", "1M", "--tuner", str(tmp_path / "a.conf")
    )
    assert status == 2 and "not all_to_all" in err


def test_sweep_groups_and_nodes(run_cli):
    """--sweep doubles from A to B; --group node uses one node; --nodes rescales."""
    status, out, _ = run_cli(
        "collective",
        "all_gather",
        "-t",
        "h100-ib-cluster",
        "--nodes",
        "4",
        "--sweep",
        "8:16G",
        "--group",
        "node",
        "--json",
    )
    data = json.loads(out)
    assert status == 0 and data["nranks"] == 8 and len(data["rows"]) == 32
    status, out, _ = run_cli(
        "collective",
        "all_reduce",
        "-t",
        "h100-ib-cluster",
        "--nodes",
        "4",
        "--group",
        "per-node",
        "--size",
        "1M",
        "--json",
    )
    assert json.loads(out)["nranks"] == 4


def test_sweep_takes_one_size_and_sizes_is_its_alias(run_cli):
    """``--sweep 1G`` is the one size, as on ``snapshot``, whose ``--sizes`` alias works here
    too (a user who typed ``--sizes 1G`` gets the row, not an unknown-option error)."""
    rows = []
    for flag, value in (("--sweep", "1G"), ("--sizes", "1G"), ("--size", "1G")):
        status, out, err = run_cli("collective", "all_reduce", flag, value, "--json")
        assert status == 0, err
        rows.append(json.loads(out)["rows"])
    assert rows[0] == rows[1] == rows[2] and [r["size_bytes"] for r in rows[0]] == [2**30]
    status, out, _ = run_cli("collective", "all_reduce", "--sizes", "1K:4K", "--json")
    assert [r["size_bytes"] for r in json.loads(out)["rows"]] == [1024, 2048, 4096]
    status, _, err = run_cli("collective", "all_reduce", "--sweep", "foo")
    assert status == 2 and err.count("\n") == 1 and "--sweep" in err


def test_ideal_calculator(run_cli):
    """The textbook ring all-reduce: 1 GB over 8 ranks at 100 GB/s takes 17.5 ms."""
    status, out, _ = run_cli(
        "collective",
        "all_reduce",
        "--ideal",
        "--nranks",
        "8",
        "--bw",
        "100GB/s",
        "--size",
        "1GB",
        "--json",
    )
    row = json.loads(out)["rows"][0]
    assert status == 0 and row["time_us"] == pytest.approx(17_500.0)
    assert row["busbw_GBps"] == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("words", "sizes"),
    [
        (["all_reduce", "1G"], [2**30]),
        (["all_reduce", "64K", "1G"], [2**16, 2**30]),
        (["1M", "allreduce"], [2**20]),
        (["all_reduce", "8:64"], [8, 16, 32, 64]),
        (["all_reduce", "1", "GiB", "64", "K"], [2**30, 2**16]),  # a unit typed apart
        (["all_reduce", "--size", "1", "MiB"], [2**20]),
    ],
)
def test_sizes_follow_the_operation_as_words(run_cli, words, sizes):
    """``collective all_reduce 1G`` is ``--size 1G``; ``8:64`` after it is a sweep."""
    status, out, err = run_cli("collective", *words, "-t", "dgx-h100", "--json")
    assert status == 0 and err == ""
    assert [row["size_bytes"] for row in json.loads(out)["rows"]] == sizes


def test_text_table(run_cli):
    """The text form is a table with time, algbw, busbw and algorithm."""
    status, out, _ = run_cli("collective", "broadcast", "-t", "dgx-h100", "--size", "1M")
    assert status == 0 and "busbw GB/s" in out and "1 MiB" in out


@pytest.mark.parametrize(
    ("topology", "heading"),
    [("dgx-h100", "NCCL's pick"), ("mi300x-node", "RCCL's pick"), ("tpu-v5p-torus", "pick")],
)
def test_the_pick_column_names_the_library_that_picks(run_cli, topology, heading):
    """NCCL's pick on NVIDIA GPUs, RCCL's on AMD's; a vendor library whose tuner is not
    modelled (the fastest pick, as the title says) heads it plain ``pick``."""
    status, out, err = run_cli("collective", "all_reduce", "1G", "-t", topology)
    assert status == 0, err
    header = out.splitlines()[1]
    assert f"  {heading}  " in header and header.count("'s pick") == (heading != "pick")


def test_an_80_column_terminal_gets_each_row_on_one_line(run_cli):
    """On an 80-column terminal the table leaves out algbw (busbw and the size carry it)
    so NCCL's pick and the best one stay on each row's line; a pipe or a file keeps it."""
    from fabricui.commands.collective import render

    argv = ("collective", "all_reduce", "-t", "h100-ib-cluster", "--nodes", "128")
    status, out, err = run_cli(*argv, "--sweep", "256K:8G", "--json")
    assert status == 0, err
    result = json.loads(out)
    full = render(result).splitlines()
    assert "algbw GB/s" in full[1] and max(map(len, full)) > 80
    narrow = render(result, width=80).splitlines()
    assert "algbw" not in narrow[1] and "(busbw in GB/s)" in narrow[0]
    rows = [line for line in narrow[2:] if not line.startswith("best for")]
    assert len(rows) == len(result["rows"]) and max(map(len, rows)) <= 80
    gains = [line for line in rows if line.endswith("%")]  # a best pick, its time and gain
    assert gains and all("same" not in line for line in gains)
    assert render(result, width=200) == "\n".join(full)
    status, out, err = run_cli(*argv, "1M", "1G", "--hosts", "n[0-3]", "--json")
    assert status == 0, err
    job = render(json.loads(out), width=80).splitlines()  # with the job's packed column
    header = next(i for i, line in enumerate(job) if "NCCL's pick" in line)
    assert job[header].split()[-1] == "packed"
    assert max(len(line) for line in job[header : header + 3]) <= 80


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["collective", "all_reduce"], "give --size"),
        (["collective", "alreduce", "1G"], "unknown operation 'alreduce' (nearest"),
        (["collective", "all_reduce", "1G", "--size", "2G"], "sizes as words (1G) and by --size"),
        (["collective", "all_reduce", "1G", "all_gather"], "one operation, not all_reduce"),
        (["collective", "all_reduce", "1x"], "invalid size '1x'"),
        (["collective", "all_reduce", "--size", "1G", "--algo", "magic"], "unknown algorithm"),
        (["collective", "all_reduce", "--size", "1G", "--gpus", "99"], "--gpus must be within"),
        (["collective", "all_reduce", "--sweep", "1G:8"], "invalid --sweep"),
        (["collective", "all_reduce", "--ideal", "--size", "1G"], "--ideal needs"),
        (["collective", "alreduce", "--size", "1G"], "unknown operation 'alreduce' (nearest"),
        (["collective", "all_reduce", "--size", "1G", "--nccl", "2.17"], "predates"),
        (["collective", "all_reduce", "--size", "1G", "--env", "ALGO=ring"], "NCCL_NAME=value"),
        (
            ["collective", "all_reduce", "--size", "1G", "--env", "NCCL_PROTO=magic"],
            "unknown name 'magic'",
        ),
        (  # NCCL refuses the list when it tunes the communicator, whatever then runs
            ["collective", "all_to_all", "--size", "1G", "--env", "NCCL_ALGO=magic"],
            "unknown name 'magic'",
        ),
        (
            ["collective", "all_reduce", "--size", "1G", "--env", "NCCL_ALGO=allgather:magic"],
            "unknown name 'magic'",
        ),
        (
            ["collective", "send_recv", "--size", "1G", "--algo", "ring"],
            "algorithm ring does not run send_recv (those that do: p2p)",
        ),
        (["collective", "--size", "1G", "all_gather", "all_reduce"], "one operation"),
        (["collective", "all_reduce", "--size", "0"], "from 1 byte to 1 PiB"),
        (
            ["collective", "all_reduce", "-t", "dgx-a100", "--size", "1G", "--algo", "nvls"],
            "no algorithm can run all_reduce",
        ),
    ],
)
def test_collective_errors(run_cli, argv, expected):
    """Bad input: one line, exit 2."""
    status, out, err = run_cli(*argv)
    assert status == 2 and out == "" and err.count("\n") == 1 and expected in err


def test_accuracy_benchmark_runs():
    """benchmarks/accuracy.py scores the shared measurements and prints the summary keys
    (with the mean signed error) and each entry's absolute and signed error, and its error
    over large, middle and small rows."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "accuracy.py"),
            "--data",
            str(MEASUREMENTS),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    data = json.loads(proc.stdout)
    assert set(data["summary"]) == {
        "scored",
        "median",
        "p90",
        "large_median",
        "small_median",
        "mean_signed",
    }
    assert set(data["best_summary"]) == set(data["summary"])
    assert data["summary"]["scored"] >= 30
    keys = {"id", "problem", "error", "signed", "large", "middle", "small"}
    extra = {"best_error", "best_large", "env_from_job_scripts"}
    assert all(set(e) == keys | extra for e in data["entries"])
    assert not any(e["problem"] for e in data["entries"])
    # An entry's large- and middle-row errors lie within its rows' range, so a median of
    # all rows sits between them whenever both classes exist.
    for e in data["entries"]:
        if e["large"] is not None and e["middle"] is not None and e["small"] is None:
            assert min(e["large"], e["middle"]) - 1e-12 <= e["error"]
            assert e["error"] <= max(e["large"], e["middle"]) + 1e-12
    assert all(isinstance(e["signed"], float) for e in data["entries"] if e["error"] is not None)
    assert isinstance(data["summary"]["mean_signed"], float)
    # Every choice the NCCL logs of benchmarks/data/nccl_logs.yaml show is the model's.
    logs = data["log_matches"]
    assert logs["choices"] >= 14
    assert logs["algorithm"] == logs["pick"] == logs["choices"]
    assert logs["channels"] == logs["channels_printed"]


def test_accuracy_rows_small_prints_the_latency_bound_rows_with_nccls_channels(
    tmp_path, capsys, monkeypatch
):
    """``--rows --small`` prints only rows of 64 KiB or less, each with NCCL's pick and its
    channels (``x1``: NCCL runs 8 B on one channel)."""
    entry = {
        "id": "two_gh200_on_slingshot",
        "quality": "reference",
        "hardware": {
            "gpu": "gh200",
            "nodes": 2,
            "gpus_per_node": 1,
            "intra": None,
            "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 1},
        },
        "op": "all_reduce",
        "nranks": 2,
        "rows": [[8, 20.0, 0.0, 0.0], [134217728, 9000.0, 14.9, 14.9]],
    }
    data = tmp_path / "one.yaml"
    data.write_text(yaml.safe_dump([entry]), encoding="utf-8")
    accuracy = _accuracy_module(monkeypatch)
    argv = ["--data", str(data), "--rows", "--small", "--logs", str(tmp_path / "none.yaml")]
    (tmp_path / "logs").mkdir()
    assert accuracy.main([*argv, "--log-dir", str(tmp_path / "logs")]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "meas" in line]
    assert [row[0] for row in rows] == ["8"]
    assert rows[0][7].endswith("/ll") and rows[0][8] == "x1"


def test_accuracy_completes_an_entrys_env_from_its_runs_job_scripts(tmp_path, monkeypatch):
    """An entry whose source is a result directory of ``source_env.yaml`` is priced with
    what that directory's job scripts exported; a variable the entry states keeps its
    value; an entry from elsewhere (or under --entry-env-only) keeps its own env."""
    accuracy = _accuracy_module(monkeypatch)
    directories = [
        {
            "repository": "someone/runs",
            "directory": "results/base",
            "env": {"FI_CXI_RX_MATCH_MODE": "software", "NCCL_CROSS_NIC": "0"},
        }
    ]
    tree = "https://github.com/someone/runs/tree/0123abc/results/base"
    blob = "https://github.com/someone/runs/blob/0123abc/results/base/job-n-8.txt"
    for source in (tree, tree + "/", blob):
        entry = {"source": source, "env": {"NCCL_CROSS_NIC": "1"}}
        assert accuracy.completed_env(entry, directories) == {
            "FI_CXI_RX_MATCH_MODE": "software",
            "NCCL_CROSS_NIC": "1",
        }
    for source in (
        "https://github.com/someone/runs/tree/0123abc/results/base_other",
        "https://github.com/other/runs/tree/0123abc/results/base",
        "https://example.org/results/base",
    ):
        assert accuracy.completed_env({"source": source}, directories) == {}
    shipped = accuracy.load_source_env(accuracy.SOURCE_ENV)
    assert shipped and all(d["env"] and d["env_source"] for d in shipped)
    assert accuracy.load_source_env(None) == []


def test_accuracy_prices_an_alps_run_with_software_matching_from_its_job_script(
    tmp_path, capsys, monkeypatch
):
    """The shipped source_env.yaml turns on the CXI provider's software matching for a run
    of boeschf/nccl-benchmark-on-alps-2025 (its job scripts export it): a 4 KiB all-reduce
    on two GH200 nodes pays the receive copies, and the benchmark says which variables it
    added; --entry-env-only prices the entry as written."""
    accuracy = _accuracy_module(monkeypatch)
    entry = {
        "id": "alps_two_nodes",
        "source": "https://github.com/boeschf/nccl-benchmark-on-alps-2025/tree/"
        "897cff446b5e814a0a991f94dd52559df8cdf9e0/results/nccl-tests_nccl-2.23.4-1-aws-1.13.0-v0",
        "quality": "reference",
        "hardware": {
            "gpu": "gh200",
            "nodes": 2,
            "gpus_per_node": 4,
            "intra": {"fabric": "mesh", "link": "nvlink4", "links_per_pair": 6},
            "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 4},
        },
        "op": "all_reduce",
        "nranks": 8,
        "env": {"NCCL_CROSS_NIC": "0"},
        "rows": [[4096, 38.0, 0.0, 0.0]],
    }
    data = tmp_path / "alps.yaml"
    data.write_text(yaml.safe_dump([entry]), encoding="utf-8")
    (tmp_path / "logs").mkdir()
    argv = ["--data", str(data), "--json", "--logs", str(tmp_path / "none.yaml")]
    argv += ["--log-dir", str(tmp_path / "logs")]
    predicted = {}
    for flags in ([], ["--entry-env-only"]):
        assert accuracy.main([*argv, *flags]) == 0
        (scored,) = json.loads(capsys.readouterr().out)["entries"]
        predicted[bool(flags)] = (scored["signed"], scored["env_from_job_scripts"])
    assert "FI_CXI_RX_MATCH_MODE" in predicted[False][1] and predicted[True][1] == []
    assert predicted[False][0] > predicted[True][0]  # the copies make it slower


def _accuracy_module(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
    assert spec is not None and spec.loader is not None
    accuracy = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "accuracy", accuracy)  # its dataclasses look it up
    spec.loader.exec_module(accuracy)
    return accuracy


def test_accuracy_scores_p2p_runs_under_nccl_algo_and_reports_what_nccl_refuses(
    monkeypatch, h100_box
):
    """NCCL_ALGO leaves point-to-point operations be, so an all-to-all run with it set is
    scored; a run the engine cannot price (NCCL_ALGO=tree on an all-gather, which NCCL
    refuses) carries its one-line problem instead of stopping the benchmark."""
    accuracy = _accuracy_module(monkeypatch)
    rows = [[8 * 1048576, 120.0, 0.0, 0.0]]

    def entry(op, algo):
        return {
            "id": op,
            "hardware": h100_box,
            "op": op,
            "nranks": 8,
            "rows": rows,
            "env": {"NCCL_ALGO": algo},
        }

    catalog = load_catalog()
    alltoall = accuracy.score_entry(entry("all_to_all", "Ring"), catalog)
    assert not alltoall.problem and alltoall.error is not None
    refused = accuracy.score_entry(entry("all_gather", "tree"), catalog)
    assert refused.error is None and "tree does not run all_gather" in refused.problem


@pytest.mark.parametrize(
    "argv",
    [
        ["collective", "--size", "1G", "all_reduce", "-t", "dgx-h100"],
        ["collective", "allreduce", "--size", "1G", "-t", "dgx-h100"],
        ["collective", "All-Reduce", "-t", "dgx-h100", "--size", "1G"],
        ["-t", "dgx-h100", "collective", "all_reduce", "--size", "1G"],
    ],
)
def test_collective_takes_the_op_anywhere_and_in_any_spelling(run_cli, argv):
    """The op before or after the options (even after --size), nccl-tests' spellings, and
    the topology before the command all mean the same run."""
    status, out, err = run_cli(*argv, "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["op"] == "all_reduce" and data["topology"] == "dgx-h100"


def test_one_gpu_prices_nccls_copy_for_every_op(run_cli, tmp_path):
    """On a one-GPU topology every operation is NCCL's buffer copy (no channels, nothing to
    force), even the point-to-point ones and under NCCL_ALGO."""
    spec = tmp_path / "one.yaml"
    spec.write_text(
        "gpu: h100-sxm\nnodes: 1\ngpus_per_node: 1\nintra: null\nnet: null\n", encoding="utf-8"
    )
    for op in ("all_reduce", "send_recv", "all_to_all"):
        status, out, err = run_cli(
            "collective", op, "-t", str(spec), "--size", "1G", "--env", "NCCL_ALGO=tree", "--json"
        )
        assert status == 0, err
        row = json.loads(out)["rows"][0]
        assert row["nccl_pick"]["algorithm"] == "copy" and row["nccl_pick"]["channels"] is None
        assert row["env"] == {} and row["best_pick"] == row["nccl_pick"]
        # H100 SXM: 3350 GB/s x its HBM efficiency / 2 copies at about 1.4 TB/s.
        assert 1.2e3 < row["algbw_GBps"] < 1.6e3


def test_pick_label_names_the_library_as_reports_and_tables_say_it():
    from fabricui.vocabulary import pick_label

    assert pick_label("NCCL 2.30.7") == "NCCL's pick"
    assert pick_label("NCCL 2.30.7", release=True) == "NCCL 2.30.7's pick"
    assert pick_label("RCCL (tuner not modelled: fastest pick)", release=True) == "RCCL's pick"
    assert pick_label("google (tuner not modelled: fastest pick)") == "pick"
    assert pick_label(None) == "NCCL's pick"


def test_accuracy_without_its_measurements_file_says_so_in_one_line(monkeypatch, capsys, tmp_path):
    """A measurements file that is not there (a checkout beside no ``shared/`` folder): one
    line naming it and ``--data``, status 2, no traceback."""
    accuracy = _accuracy_module(monkeypatch)
    missing = tmp_path / "measurements.yaml"
    assert accuracy.main(["--data", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"accuracy: error: {missing}: no such file (give the measurements file with --data)\n"
    )
