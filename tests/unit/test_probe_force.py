"""``probe --force`` into an earlier probe's folder leaves none of the earlier results that
this probe did not produce (only probe's own files go, and they are named)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_probe import fake_tool, gpu_and_ib_tools

from fabricui.services.probe import probe


def full_tools(folder: Path) -> Path:
    """Fake nvidia-smi (matrix and -q), ibstat and a failing lspci: a node spec is written."""
    folder.mkdir()
    gpu_and_ib_tools(folder)
    fake_tool(folder, "lspci", 'printf "lspci: no access\\n" >&2\nexit 1\n')
    return folder


def test_force_removes_what_an_earlier_probe_wrote_and_this_one_did_not(
    tmp_path, monkeypatch, run_cli
):
    """Second probe with no tools on PATH: the first probe's node.yaml, raw outputs and
    stderr files are removed and listed; the user's own files stay untouched."""
    out = tmp_path / "probe"
    first = probe(out, timeout_s=5.0, path=str(full_tools(tmp_path / "bin")))
    assert first.node_spec is not None
    earlier = {p.name for p in out.iterdir()}
    assert {"node.yaml", "nvidia-smi-topo-m.txt", "ibstat.txt", "lspci-tv.stderr.txt"} <= earlier
    (out / "notes.txt").write_text("mine\n")
    (out / "node.yaml.orig").write_text("mine too\n")
    (out / "keep").mkdir()

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    status, stdout, err = run_cli("probe", "-o", str(out), "--force")
    assert status == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "keep",
        "node.yaml.orig",
        "notes.txt",
        "probe.json",
    ]
    removed = sorted(earlier - {"probe.json"})
    assert f"removed (an earlier probe's, not written by this one): {', '.join(removed)}" in stdout
    assert json.loads((out / "probe.json").read_text())["removed"] == removed


def test_force_keeps_what_it_rewrote_and_removes_by_the_earlier_report(tmp_path):
    """Files this probe writes again are kept (not listed); a raw output the earlier
    probe.json lists (an older version's tool) goes, a path out of the folder never does."""
    out = tmp_path / "probe"
    tools = full_tools(tmp_path / "bin")
    probe(out, timeout_s=5.0, path=str(tools))
    outside = tmp_path / "outside.txt"
    outside.write_text("not probe's\n")
    report = json.loads((out / "probe.json").read_text())
    report["runs"].append({"tool": "old-tool", "files": ["old-tool.txt", "../outside.txt"]})
    (out / "probe.json").write_text(json.dumps(report))
    (out / "old-tool.txt").write_text("an older probe's output\n")
    os.symlink(outside, out / "ibv_devinfo.txt")  # a probe name, but a link: not probe's

    again = probe(out, force=True, timeout_s=5.0, path=str(tools))
    assert again.removed == ["old-tool.txt"]
    assert outside.read_text() == "not probe's\n"
    assert (out / "ibv_devinfo.txt").is_symlink() and (out / "node.yaml").is_file()


def test_without_force_nothing_is_removed(tmp_path, run_cli, monkeypatch):
    """Without --force the folder is refused as before, and every file stays."""
    out = tmp_path / "probe"
    probe(out, timeout_s=5.0, path=str(full_tools(tmp_path / "bin")))
    before = sorted(p.name for p in out.iterdir())
    monkeypatch.setenv("PATH", str(tmp_path))
    status, _, err = run_cli("probe", "-o", str(out))
    assert status == 2 and "pass --force" in err
    assert sorted(p.name for p in out.iterdir()) == before
