"""The CLI: commands, JSON shapes, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOPO = Path(__file__).parents[1] / "data" / "topologies"

PATH_KEYS = {"src", "dst", "hops", "bottleneck_GBps", "bottleneck_link", "latency_us"}
HOP_KEYS = {"from", "to", "link", "bw_GBps", "lat_us"}


def test_path_json_shape(run_cli):
    """``path --json`` is one object with the documented keys; transfer only with --size."""
    status, out, err = run_cli(
        "path", "--topology", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7", "--json"
    )
    assert status == 0 and err == ""
    data = json.loads(out)
    assert set(data) >= PATH_KEYS and "transfer_us" not in data
    assert all(set(h) >= HOP_KEYS for h in data["hops"])
    assert data["src"] == "n0.g0" and data["dst"] == "n3.g7"
    assert data["bottleneck_GBps"] == min(h["bw_GBps"] for h in data["hops"])
    assert data["latency_us"] == pytest.approx(sum(h["lat_us"] for h in data["hops"]))


def test_path_json_with_size(run_cli):
    """With --size the transfer time is latency + size / bottleneck."""
    status, out, _ = run_cli(
        "path", "-t", "dgx-h100-pod", "--src", "0", "--dst", "31", "--size", "1G", "--json"
    )
    data = json.loads(out)
    assert status == 0
    expected = data["latency_us"] + 2**30 / (data["bottleneck_GBps"] * 1e3)
    assert data["transfer_us"] == pytest.approx(expected)
    assert data["size_bytes"] == 2**30


def test_path_text(run_cli):
    """The text form lists hops then bottleneck, latency and transfer."""
    status, out, _ = run_cli(
        "path", "--topology", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7", "--size", "1G"
    )
    assert status == 0
    assert "bottleneck:" in out and "latency:" in out and "transfer:" in out
    assert "leaf1" in out and "n3.nic7" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["path", "n0.g0", "n3.g7"],
        ["path", "-t", "dgx-h100-pod", "n0.g0", "--size", "1G", "n3.g7"],
        ["path", "n0.g0", "--dst", "n3.g7"],
        ["path", "--src", "n0.g0", "n3.g7"],
    ],
)
def test_path_takes_its_gpus_as_words(run_cli, argv):
    """``path SRC DST`` is ``path --src SRC --dst DST``, options anywhere between."""
    status, out, err = run_cli(*argv, "--json")
    assert status == 0 and err == ""
    data = json.loads(out)
    assert (data["src"], data["dst"]) == ("n0.g0", "n3.g7")


@pytest.mark.parametrize(
    "words", [["--size", "1", "GiB", "n0.g0", "n3.g7"], ["n0.g0", "n3.g7", "--size", "1", "G"]]
)
def test_path_reads_a_size_unit_typed_apart(run_cli, words):
    """``--size 1 GiB`` is ``--size 1GiB``: the unit names no GPU."""
    status, out, err = run_cli("path", "-t", "dgx-h100-pod", *words, "--json")
    assert status == 0, err
    data = json.loads(out)
    assert (data["src"], data["dst"], data["size_bytes"]) == ("n0.g0", "n3.g7", 2**30)


def test_path_from_yaml_file(run_cli):
    """--topology accepts a file holding just the hardware block."""
    status, out, _ = run_cli(
        "path",
        "--topology",
        str(TOPO / "minimal.yaml"),
        "--src",
        "n0.g0",
        "--dst",
        "n1.g0",
        "--json",
    )
    assert status == 0 and json.loads(out)["bottleneck_GBps"] > 0


def test_topologies_lists_every_reference(run_cli):
    """Every reference topology the foundation issue names is built in."""
    status, out, _ = run_cli("topologies", "--json")
    ids = {t["id"] for t in json.loads(out)}
    assert status == 0
    assert {
        "dgx-a100",
        "dgx-h100",
        "hgx-h200",
        "dgx-b200",
        "gb200-nvl72",
        "dgx-h100-pod",
        "pcie-rtx4090x2",
        "pcie-rtx4090x8",
        "mi300x-node",
        "gh200-quad",
        "h100-ib-cluster",
    } <= ids
    status, out, _ = run_cli("topologies")
    assert "dgx-h100-pod" in out and "GPUs" in out


def test_hwdb_list_show_validate(run_cli):
    """The hwdb subcommands list, show (with sources) and validate."""
    status, out, _ = run_cli("hwdb", "list", "gpus")
    assert status == 0 and "h100-sxm" in out
    status, out, _ = run_cli("hwdb", "list", "--json")
    assert set(json.loads(out)) == {
        "links",
        "gpus",
        "nics",
        "switches",
        "topologies",
        "models",
        "frameworks",
        "kernels",
    }
    status, out, _ = run_cli("hwdb", "show", "nvlink4", "--json")
    record = json.loads(out)
    assert record["kind"] == "links" and record["source"].startswith("http")
    status, out, _ = run_cli("hwdb", "validate")
    assert status == 0 and out.startswith("ok:")
    status, out, _ = run_cli("hwdb", "validate", str(TOPO / "minimal.yaml"))
    assert status == 0 and "topology minimal" in out


@pytest.mark.parametrize(
    ("typed", "heading"),
    [
        ("H100-SXM", "GPU h100-sxm  ("),
        ("dgx_h100", "topology dgx-h100  ("),
        ("meta-llama/Llama-3-70B", "model llama3-70b  ("),
        ("Quantum_2", "switch quantum-2  ("),
    ],
)
def test_hwdb_show_takes_a_spelling_and_names_the_kind(run_cli, typed, heading):
    """`hwdb show` finds the one id a spelling names, as plan and -t do, and its heading
    names the kind in the singular (topology, switch)."""
    status, out, err = run_cli("hwdb", "show", typed)
    assert status == 0, err
    assert out.startswith(heading)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["path", "--topology", "dgx-h100-pod", "--src", "n9.g0", "--dst", "n0.g1"],
            "no GPU n9.g0 in dgx-h100-pod",
        ),
        (
            ["path", "--topology", "dgx-h100", "--src", "n0.g0", "--dst", "n0.g1", "--nodes", "0"],
            "--nodes must be at least 1",
        ),
        (
            ["path", "--topology", "dgx-h10", "--src", "0", "--dst", "1"],
            "unknown topology 'dgx-h10' (nearest: dgx-h100",
        ),
        (
            ["path", "--topology", str(TOPO / "bad-type.yaml"), "--src", "0", "--dst", "1"],
            "bad-type.yaml:2: nodes: expected a number",
        ),
        (["path", "--src", "0", "--dst", "1", "--size", "lots"], "invalid size 'lots'"),
        (["path", "--src", "0"], "path: give the two GPUs: SRC DST, or --dst"),
        (["path", "0", "1", "2"], "path: two GPUs, not also 2"),
        (["hwdb", "show", "nvlink9"], "unknown hwdb id 'nvlink9' (nearest: nvlink"),
        (["hwdb", "list", "cables"], "unknown record kind 'cables'"),
        (["hwdb", "validate", str(TOPO / "syntax-error.yaml")], "syntax-error.yaml:5"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_errors_are_one_line_exit_2(run_cli, argv, expected):
    """User errors: exit 2, one stderr line, nothing on stdout."""
    status, out, err = run_cli(*argv)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("fabricui: error: ")
    assert expected in err


def test_no_traceback_from_the_installed_entry_point():
    """The real process prints one line and exits 2 (no traceback) on bad input."""
    proc = subprocess.run(
        [sys.executable, "-m", "fabricui", "path", "--src", "n0.g99", "--dst", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_path_names_the_hardware_at_the_bottleneck(capsys):
    """Text and JSON say which devices the narrowest hop joins (the NIC and the leaf switch)."""
    from fabricui.cli import main

    args = ["path", "-t", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "hardware:   NVIDIA ConnectX-7 NDR (400 Gb/s InfiniBand) -> NVIDIA Quantum-2" in out
    assert main([*args, "--json"]) == 0
    hops = json.loads(capsys.readouterr().out)["hops"]
    assert hops[0]["from_model"] == "NVIDIA H100 SXM5 80GB"
    # cross-rail: PXN over NVLink to n0.g7, then its NIC enters the leaf at hop 5
    assert hops[4]["to_model"].startswith("NVIDIA Quantum-2 QM9700")


def test_doctor_fail_on_gives_ci_an_exit_status(run_cli, tmp_path):
    """``doctor --fail-on warning`` exits 1 on a log with warnings; without it, 0."""
    log = Path(__file__).parents[1] / "data" / "topo" / "nccl_debug_logs"
    sample = str(log / "nccl_952_ib_no_device_p2p_ipc_plus_net_socket.txt")
    assert run_cli("doctor", sample)[0] == 0
    assert run_cli("doctor", sample, "--fail-on", "warning")[0] == 1
    healthy = str(Path(__file__).parents[1] / "doctor" / "data" / "healthy_h100_nvls_2_24_3.log")
    assert run_cli("doctor", healthy, "--fail-on", "warning")[0] == 0


def test_hwdb_validate_json(run_cli):
    """``hwdb validate --json``: ok, the target and counts (or the topology checked)."""
    status, out, _ = run_cli("hwdb", "validate", "--json")
    data = json.loads(out)
    assert status == 0 and data["ok"] is True and data["counts"]["topologies"] > 5
    status, out, _ = run_cli("hwdb", "validate", str(TOPO / "minimal.yaml"), "--json")
    assert json.loads(out)["topology"]["nodes"] >= 1


def test_hwdb_validate_refuses_what_the_builder_refuses(run_cli, tmp_path):
    """A topology file passes ``hwdb validate`` only when its fabric builds: 20 trays do not
    fill whole 18-tray NVLink domains, so validate fails as ``path`` does, naming the file."""
    spec = tmp_path / "nvl.yaml"
    spec.write_text(
        "id: nvl-odd\ngpu: gb200\nnodes: 20\ngpus_per_node: 4\n"
        "intra: {fabric: nvswitch, link: nvlink5, hosts_per_domain: 18}\n"
        "net: {link: ib-ndr, gbps: 400, nics_per_node: 4}\n"
    )
    status, out, err = run_cli("hwdb", "validate", str(spec))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert f"{spec}: nvl-odd: 20 nodes do not fill whole scale-up domains of 18" in err
    assert run_cli("path", "-t", str(spec), "--src", "0", "--dst", "1")[0] == 2
    spec.write_text(spec.read_text().replace("nodes: 20", "nodes: 18"))
    assert run_cli("hwdb", "validate", str(spec))[0] == 0


def test_what_if_flags_change_the_path(run_cli):
    """``--nic-gbps 800`` makes the NIC hop 100 GB/s; a bad value is one line, exit 2."""
    argv = ["path", "-t", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7", "--json"]
    status, out, _ = run_cli(*argv, "--nic-gbps", "800")
    assert status == 0 and json.loads(out)["bottleneck_GBps"] == pytest.approx(63.0)
    status, _, err = run_cli(*argv, "--nic-gbps", "nan")
    assert status == 2 and err.count("\n") == 1
    assert "--nic-gbps: NIC port rate must be a finite number within" in err


@pytest.mark.parametrize("rate", ["200", "200G", "200Gb/s", "200Gbps", "25GB/s"])
def test_nic_gbps_takes_a_rate_as_people_write_it(run_cli, rate):
    """--nic-gbps 200G (or 200Gb/s, or 25GB/s in bytes) is 200 Gb/s: the NIC hop 25 GB/s."""
    argv = ["path", "-t", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8", "--json"]
    status, out, err = run_cli(*argv, "--nic-gbps", rate)
    assert status == 0, err
    assert json.loads(out)["bottleneck_GBps"] == pytest.approx(25.0)


def test_nic_gbps_that_is_not_a_rate_says_what_is(run_cli):
    """A word where a rate goes is one line with the forms it takes."""
    status, out, err = run_cli("path", "--src", "0", "--dst", "1", "--nic-gbps", "fast")
    assert (status, out) == (2, "")
    assert "--nic-gbps: a port rate in Gb/s such as 400 or 400Gb/s (got 'fast')" in err


def test_control_characters_from_input_are_escaped(run_cli, tmp_path):
    """A file name with an escape sequence is printed escaped, never raw."""
    evil = tmp_path / "a\x1b]0;pwned\x07.yaml"
    status, _, err = run_cli("path", "-t", str(evil), "--src", "0", "--dst", "1")
    assert status == 2 and "\x1b" not in err and "\\x1b]0;pwned\\x07" in err


def test_no_explorer_without_a_terminal():
    """``fabricui | cat`` and ``fabricui < /dev/null``: one line, exit 2, no escape codes."""
    result = subprocess.run(
        [sys.executable, "-m", "fabricui"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("fabricui: error: the explorer needs a terminal")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "Llama-3-70B", "--tp", "8"],
        ["plan", "--tp", "8", "-m", "meta-llama/Llama-3-70B"],
        ["plan", "llama3_70b", "--tp", "8", "--model", "llama3_70b"],
        ["plan", "Llama-3-70B", "--tp", "8", "-m", "llama3-70b"],  # one model, two spellings
    ],
)
def test_plan_takes_the_model_as_a_word_and_as_people_spell_it(run_cli, argv):
    """``plan MODEL`` is ``plan --model MODEL``, and a model's name as written (any case,
    dashes, underscores, a Hugging Face owner) is its id."""
    status, out, err = run_cli(*argv, "--json")
    assert status == 0 and err == ""
    assert json.loads(out)["model"] == "llama3-70b"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["plan", "llama3-70b", "-m", "llama3-8b"], "one model, not llama3-70b and --model"),
        (["strategies", "Llama-4"], "unknown model 'Llama-4' (nearest:"),
    ],
)
def test_model_words_that_do_not_name_one_model_are_one_line(run_cli, argv, expected):
    """Two different models, or a spelling of none, are a one-line error."""
    status, out, err = run_cli(*argv)
    assert status == 2 and out == "" and expected in err and err.count("\n") == 1


def test_topology_ids_take_other_case_and_separators(run_cli):
    """``-t DGX-H100-Pod`` or ``dgx_h100_pod`` is the built-in ``dgx-h100-pod``."""
    for spelling in ("DGX-H100-Pod", "dgx_h100_pod"):
        status, out, err = run_cli("path", "-t", spelling, "n0.g0", "n1.g0", "--json")
        assert status == 0 and err == ""
        assert json.loads(out)["topology"] == "dgx-h100-pod"
