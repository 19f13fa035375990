"""Impossible numbers at every boundary (a flag, a YAML value, a run file, an environment
variable, a plugin's return, a measured row) end in one line naming where the number came
from, or are dropped and counted; never a traceback, a NaN or an infinity on screen, nor a
numpy RuntimeWarning. Each case runs the CLI in this process (milliseconds)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from _hostile import DATA, ROOT

from fabricui.cli import main
from fabricui.plugins import get_host

#: A run file whose first entry (a run file of one run) is the shared runs' first.
RUNS = ROOT / "tests" / "data" / "training" / "runs_tiny.yaml"
NCCL_TESTS = DATA / "nccl_tests" / "h100_2node_degraded_default_all_reduce_perf.txt"

INSTANT_ALGORITHM = """\
import numpy as np
from fabricui import hookimpl
from fabricui.engine.types import CollectiveAlgorithm


class Instant(CollectiveAlgorithm):
    name = "instant"
    ops = ("all_reduce",)
    protocols = ("simple",)

    def applicable(self, group, op):
        return True

    def time_us(self, group, op, size_bytes, protocol):
        return np.full(np.shape(size_bytes), 1e-308)


@hookimpl
def register_collective_algorithms(register):
    register(Instant())
"""

HUGE_STRATEGY = """\
from fabricui import hookimpl
from fabricui.api import CommOp, MemoryTerm, Strategy


class Huge(Strategy):
    name = "huge"

    def applicable(self, model, layout):
        return layout.dp > 1

    def operations(self, model, layout):
        return [CommOp(self.name, "all_reduce", "dp", {size}, 1, True, "gradients")]

    def memory(self, model, layout):
        return [MemoryTerm(self.name, "buffer", {memory})]


@hookimpl
def register_strategies(register):
    register(Huge())
"""


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Built-in plugins only, a config dir of the test's own, a fresh plugin host, and
    every warning recorded (none may be a RuntimeWarning)."""
    for name in ("FABRICUI_PLUGINS_DIR", "FABRICUI_CONFIG", "FABRICUI_DISABLE_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("FABRICUI_PLUGIN_TIMEOUT_S", raising=False)
    monkeypatch.setenv("FABRICUI_LOAD_PLUGINS", "")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    get_host.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    get_host.cache_clear()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [
        str(w.message) for w in caught
    ]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "RuntimeWarning" not in err, err
    return status, out, err


def error_line(status: int, err: str) -> str:
    """The one line of a refusal (status 2)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("fabricui: error: "), err
    return lines[0][len("fabricui: error: ") :]


def with_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, source: str) -> None:
    """Load the plugin file ``name.py`` (and built-ins) from a directory of the test's own."""
    directory = tmp_path / "plugins"
    directory.mkdir()
    (directory / f"{name}.py").write_text(source)
    monkeypatch.setenv("FABRICUI_PLUGINS_DIR", str(directory))
    monkeypatch.delenv("FABRICUI_LOAD_PLUGINS")
    get_host.cache_clear()


def test_nic_rate_flag_of_a_femtobit(capsys):
    """``path --nic-gbps 1e-15``: the flag is named, not an OverflowError in the builder."""
    status, _, err = run(
        capsys, "path", "-t", "h100-ib-cluster", "--src", "0", "--dst", "9", "--nic-gbps", "1e-15"
    )
    assert error_line(status, err) == (
        "--nic-gbps: NIC port rate must be a finite number within 1..100000 Gb/s (got 1e-15)"
    )


def test_nic_rate_in_a_topology_file(capsys, tmp_path: Path):
    """``net.gbps: 1.0e-15`` in a topology file: file, line and key."""
    text = (ROOT / "hwdb" / "topologies" / "h100-ib-cluster.yaml").read_text()
    topology = tmp_path / "slow.yaml"
    topology.write_text(re.sub(r"gbps: \d+", "gbps: 1.0e-15", text, count=1))
    line = 1 + topology.read_text().splitlines().index("  gbps: 1.0e-15")
    status, _, err = run(capsys, "path", "-t", str(topology), "--src", "0", "--dst", "9")
    assert error_line(status, err) == (
        f"{topology}:{line}: net.gbps: NIC port rate must be a finite number within "
        "1..100000 Gb/s (got 1e-15)"
    )


@pytest.mark.parametrize("key", ["links_per_pair", "links_per_gpu", "sockets"])
def test_zero_links_or_sockets_in_a_topology_file(capsys, tmp_path: Path, key):
    """A GPU mesh of 0 links per pair (or 0 NVLinks per GPU, or 0 sockets) is refused where it
    is written, not priced as a fabric of zero bandwidth (or quietly given the default)."""
    topology = tmp_path / "zero.yaml"
    fabric = "mesh" if key == "links_per_pair" else "nvswitch"
    topology.write_text(
        "gpu: h100-sxm\nnodes: 2\ngpus_per_node: 4\n"
        f"intra: {{fabric: {fabric}, link: nvlink4, {key}: 0}}\n"
        "net: {link: ib-ndr, gbps: 400, nics_per_node: 4}\n"
    )
    status, _, err = run(capsys, "collective", "all_reduce", "-t", str(topology), "--size", "1M")
    assert error_line(status, err) == (
        f"{topology}:4: intra.{key}: must be greater than zero (got 0)"
    )


@pytest.mark.parametrize(
    ("old", "new", "key", "message"),
    [
        ("hidden: 2304", "hidden: .nan", "model.hidden", "expected a whole number, got nan"),
        (
            "global_batch: 512",
            "global_batch: .inf",
            "run.global_batch",
            "expected a whole number, got inf",
        ),
        (
            "step_time_s: 3.528",
            "step_time_s: .nan",
            "run.step_time_s",
            "expected a finite number, got nan",
        ),
    ],
    ids=["nan-int", "inf-int", "nan-float"],
)
def test_nan_and_inf_in_a_run_file(capsys, tmp_path: Path, old, new, key, message):
    """``.nan`` / ``.inf`` in a ``plan --run`` file: file, line and key path, not a
    ValueError or OverflowError."""
    first = "- id:" + RUNS.read_text().split("\n- id:")[1]
    assert old in first
    path = tmp_path / "run.yaml"
    path.write_text(first.replace(old, new))  # the prose copies too: the run block's counts
    status, _, err = run(capsys, "plan", "--run", str(path))
    assert re.fullmatch(
        rf"{re.escape(str(path))}:\d+: \[0\]\.{key}: {message}", error_line(status, err)
    )


def test_plugin_time_budget_of_three_centuries(capsys, monkeypatch):
    """``FABRICUI_PLUGIN_TIMEOUT_S=1e10``: no limit (as ``inf``), and commands work."""
    monkeypatch.setenv("FABRICUI_PLUGIN_TIMEOUT_S", "1e10")
    status, out, err = run(capsys, "path", "-t", "dgx-h100", "--src", "0", "--dst", "1", "--json")
    assert status == 0 and err == "" and json.loads(out)["bottleneck_GBps"] > 0


def test_mfu_of_a_denormal(capsys):
    """``plan --mfu 1e-308``: the flag is named, not "inf s" and "nan%"."""
    status, _, err = run(capsys, "plan", "-m", "llama3-8b", "--mfu", "1e-308")
    assert error_line(status, err) == (
        "--mfu: MFU must be a finite number within 0.001..1 (got 1e-308)"
    )


def test_an_algorithm_faster_than_light_is_named_and_skipped(capsys, monkeypatch, tmp_path):
    """An algorithm plugin claiming 1e-308 us: named once, skipped; the table shows the
    built-in algorithms' figures (no inf GB/s), and asking for it is one line."""
    with_plugin(monkeypatch, tmp_path, "instant", INSTANT_ALGORITHM)
    argv = ("collective", "all_reduce", "-t", "dgx-h100", "--size", "1G", "--json")
    status, out, err = run(capsys, *argv)
    assert status == 0, err
    rows = json.loads(out)["rows"]
    assert [r["algorithm"].split("/")[0] for r in rows] != ["instant"]
    assert all(0 < r["busbw_GBps"] < 1e4 for r in rows)
    assert err == (
        "fabricui: plugin instant skipped: collective algorithm 'instant': time_us: returned "
        "an impossible time: time must be a finite number within 0.001..1e+15 us "
        "(got 1e-308)\n"
    )
    get_host.cache_clear()  # a new run: the plugin is tried again
    status, _, err = run(capsys, *argv, "--algo", "instant")
    assert error_line(status, err.splitlines()[-1] + "\n") == (
        "no algorithm could run all_reduce: plugin instant: collective algorithm 'instant' "
        "skipped (see `fabricui plugins`)"
    )


@pytest.mark.parametrize(
    ("size", "memory", "method"),
    [("1e308", "0", "operations"), ("1e6", "1e308", "memory")],
    ids=["operation-bytes", "memory-bytes"],
)
def test_a_strategy_of_1e308_bytes_is_named_and_skipped(
    capsys, monkeypatch, tmp_path, size, memory, method
):
    """A strategy plugin returning 1e308 bytes (an operation or a memory term), asked for
    with --strategy: one line naming it and the impossible size, never NaN or infinity."""
    with_plugin(monkeypatch, tmp_path, "huge", HUGE_STRATEGY.format(size=size, memory=memory))
    status, out, err = run(
        capsys, "plan", "-m", "llama3-8b", "-t", "dgx-h100-pod", "--strategy", "huge", "--json"
    )
    line = error_line(status, err)
    assert not re.search(r"\b(nan|inf|NaN|Infinity)\b", out)
    assert line.startswith(f"--strategy huge: plugin huge: strategy 'huge': {method}: ")
    assert "must be a finite number within 0..1e+15 bytes (got 1e+308)" in line


def test_calibrate_says_which_rows_it_dropped(capsys, tmp_path: Path):
    """NaN, infinite and negative times in nccl-tests output: the rows are left out and
    one warning line says how many, why and where; ``--json`` lists them."""
    lines = NCCL_TESTS.read_text().splitlines()
    spoil = {"16777216": ("262.9", "nan"), "67108864": ("918.4", "-918.4")}
    spoil["268435456"] = ("3027.9", "inf")
    numbers = {}
    for index, line in enumerate(lines):
        words = line.split()
        if words and words[0] in spoil:
            lines[index] = line.replace(*spoil[words[0]], 1)
            numbers[words[0]] = index + 1
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text("\n".join(lines) + "\n")
    argv = ("calibrate", "-t", "h100-ib-cluster", "--nodes", "2", str(log))
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert len(report["runs"][0]["rows"]) == 8  # 11 rows, 3 dropped
    assert [(d["line"], d["why"]) for d in report["dropped_rows"]] == [
        (numbers["16777216"], "a NaN or infinite time"),
        (numbers["67108864"], "a negative time"),
        (numbers["268435456"], "a NaN or infinite time"),
    ]
    [warning] = [line for line in err.splitlines() if "dropped" in line]
    assert warning == (
        f"fabricui: warning: {report['runs'][0]['source']}: dropped 3 rows: 2 with a NaN or "
        f"infinite time (lines {numbers['16777216']}, {numbers['268435456']}), 1 with a "
        f"negative time (line {numbers['67108864']})"
    )
