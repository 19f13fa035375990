"""``fabricui probe``: without GPU tools it lists what is missing and exits 0; with (fake) tools
on PATH it saves their raw outputs, reads them, writes a node spec that loads, and never
overwrites a folder unless told to."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from fabricui.services.probe import TOOLS, probe

TOPO_M = (
    "\tGPU0\tGPU1\tNIC0\tCPU Affinity\nGPU0\t X \tNV18\tPIX\t0-47\n"
    "GPU1\tNV18\t X \tPIX\t0-47\nNIC0\tPIX\tPIX\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n"
)
QUERY = (
    "GPU 00000000:18:00.0\n    Product Name : NVIDIA H100 80GB HBM3\n    Fabric\n"
    "        State : Completed\n        Status : Success\n"
)
IBSTAT = (
    "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
)


def fake_tool(folder: Path, name: str, body: str) -> None:
    """A shell script named ``name`` (builtins only: PATH holds nothing else)."""
    script = folder / name
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def printing(folder: Path, name: str, text: str) -> str:
    """Script lines printing ``text`` (kept in a data file next to the script)."""
    data = folder / f"{name}.data"
    data.write_text(text)
    return f'while IFS= read -r line; do printf "%s\\n" "$line"; done < "{data}"\n'


def gpu_and_ib_tools(folder: Path) -> None:
    """Fake nvidia-smi (the topology matrix and ``-q``) and ibstat in ``folder``."""
    fake_tool(
        folder,
        "nvidia-smi",
        'if [ "$1" = "topo" ]; then\n'
        + printing(folder, "topo", TOPO_M)
        + "else\n"
        + printing(folder, "query", QUERY)
        + "fi\n",
    )
    fake_tool(folder, "ibstat", printing(folder, "ibstat", IBSTAT))


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A PATH folder with fake nvidia-smi, ibstat, lspci (fails), rocm-smi (hangs) and
    ibnetdiscover."""
    folder = tmp_path / "bin"
    folder.mkdir()
    gpu_and_ib_tools(folder)
    fake_tool(
        folder, "lspci", 'printf "lspci: Cannot find any working access method.\\n" >&2\nexit 1\n'
    )
    fake_tool(folder, "rocm-smi", "exec /bin/sleep 30\n")
    fake_tool(
        folder, "ibnetdiscover", 'printf "ibwarn: no permission to open umad\\n" >&2\nexit 2\n'
    )
    return folder


def test_no_tools_exit_0_with_the_missing_list(tmp_path, monkeypatch, run_cli):
    """On a machine without GPU tools: exit 0, every program listed as missing, probe.json."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    out = tmp_path / "probe"
    status, stdout, err = run_cli("probe", "-o", str(out))
    assert status == 0 and err == ""
    assert (
        "missing tools: nvidia-smi, ibstat, ibv_devinfo, rocm-smi, lspci, ibnetdiscover" in stdout
    )
    assert "node spec: not written" in stdout
    report = json.loads((out / "probe.json").read_text())
    assert report["missing"] == [
        "nvidia-smi",
        "ibstat",
        "ibv_devinfo",
        "rocm-smi",
        "lspci",
        "ibnetdiscover",
    ]
    assert sorted(p.name for p in out.iterdir()) == ["probe.json"]


def test_collects_reads_and_writes_a_node_spec(tmp_path, tools, catalog):
    """Present tools run with a timeout; outputs are saved; the node spec loads."""
    out = tmp_path / "probe"
    report = probe(out, timeout_s=1.0, path=str(tools))
    status = {r.tool: r.status for r in report.runs}
    assert status == {
        "nvidia-smi topo -m": "ok",
        "nvidia-smi -q": "ok",
        "ibstat": "ok",
        "ibv_devinfo -v": "missing",
        "rocm-smi --showtopo": "timeout",
        "lspci -tv": "failed",
        "ibnetdiscover": "skipped",
    }
    assert report.missing == ["ibv_devinfo"]
    files = {p.name for p in out.iterdir()}
    assert {
        "nvidia-smi-topo-m.txt",
        "nvidia-smi-q.txt",
        "ibstat.txt",
        "lspci-tv.stderr.txt",
        "node.yaml",
        "probe.json",
    } <= files
    runs = {r.tool: r for r in report.runs}
    assert runs["nvidia-smi -q"].detail.startswith("nvidia-smi -q: 1 GPUs")
    assert "Cannot find any working access method" in runs["lspci -tv"].detail
    from fabricui.hwdb.resolve import resolve_topology

    spec = resolve_topology(str(out / "node.yaml"), catalog)
    assert spec.gpus_per_node == 2 and spec.net is not None and spec.net.link == "ib-ndr"


def test_ibnetdiscover_only_when_allowed(tmp_path, tools):
    """ibnetdiscover runs only with allow_ibnetdiscover; its failure is recorded, not fatal."""
    report = probe(tmp_path / "p", timeout_s=1.0, path=str(tools), allow_ibnetdiscover=True)
    run = next(r for r in report.runs if r.tool == "ibnetdiscover")
    assert run.status == "failed" and "exit 2: ibwarn" in run.detail


def test_never_overwrites_without_force(tmp_path, tools, monkeypatch, run_cli):
    """A non-empty folder is refused in one line; --force reuses it; a file is refused."""
    monkeypatch.setenv("PATH", str(tools))
    out = tmp_path / "probe"
    assert run_cli("probe", "-o", str(out), "--timeout", "1")[0] == 0
    status, _, err = run_cli("probe", "-o", str(out), "--timeout", "1")
    assert status == 2 and "already exists and is not empty; pass --force" in err
    assert err.count("\n") == 1
    assert run_cli("probe", "-o", str(out), "--timeout", "1", "--force")[0] == 0
    taken = tmp_path / "file"
    taken.write_text("x")
    status, _, err = run_cli("probe", "-o", str(taken))
    assert status == 2 and "is not a folder" in err
    status, _, err = run_cli("probe", "-o", str(tmp_path / "p2"), "--timeout", "0")
    assert status == 2 and "--timeout must be a positive" in err


def test_json_report(tmp_path, monkeypatch, run_cli):
    """--json prints the report: host, folder, every tool, missing, node spec."""
    monkeypatch.setenv("PATH", str(tmp_path))
    status, stdout, _ = run_cli("probe", "-o", str(tmp_path / "p"), "--json")
    data = json.loads(stdout)
    assert status == 0 and len(data["runs"]) == len(TOOLS) and data["node_spec"] is None
