"""``probe``: a tool that exits 0 but prints binary garbage, or text its importer does not
know, is reported ``unreadable`` with the reason, never ``ok``."""

from __future__ import annotations

import json
import os

from test_probe import fake_tool

from fabricui.services.probe import probe


def test_a_tool_printing_binary_garbage_is_unreadable(tmp_path, run_cli, monkeypatch):
    """ibstat printing 5 KB of random bytes (and lspci printing some): status
    ``unreadable`` with the reason, not ``ok``; the raw bytes are still saved."""
    tools = tmp_path / "bin"
    tools.mkdir()
    garbage = os.urandom(5000).replace(b"\0", b"") + b"\0\xff\xfe"
    (tools / "garbage.bin").write_bytes(garbage)
    fake_tool(tools, "ibstat", f'exec /bin/cat "{tools / "garbage.bin"}"\n')
    fake_tool(tools, "lspci", f'exec /bin/cat "{tools / "garbage.bin"}"\n')
    out = tmp_path / "probe"
    monkeypatch.setenv("PATH", str(tools))
    status, stdout, err = run_cli("probe", "-o", str(out), "--json")
    assert status == 0, err
    runs = {r["tool"]: r for r in json.loads(stdout)["runs"]}
    for tool, name in (("ibstat", "ibstat.txt"), ("lspci -tv", "lspci-tv.txt")):
        assert runs[tool]["status"] == "unreadable", runs[tool]
        assert runs[tool]["detail"].startswith(f"not read: {name}: a binary file (NUL bytes)")
        assert (out / name).read_bytes() == garbage
    status, stdout, _ = run_cli("probe", "-o", str(out), "--force")
    assert status == 0
    assert "  unreadable ibstat (not read: ibstat.txt: a binary file" in stdout
    assert "  ok " not in stdout


def test_a_tool_printing_text_its_importer_does_not_know_is_unreadable(tmp_path):
    """ibstat exiting 0 with text that is no ibstat output: ``unreadable``, with the
    importer's reason; invalid UTF-8 without NUL bytes is unreadable too."""
    tools = tmp_path / "bin"
    tools.mkdir()
    fake_tool(tools, "ibstat", 'printf "hello world\\n"\n')
    fake_tool(tools, "ibv_devinfo", "printf 'hca_id:\\377\\376 mlx5_0\\n'\n")
    report = probe(tmp_path / "probe", timeout_s=5.0, path=str(tools))
    runs = {r.tool: r for r in report.runs}
    assert runs["ibstat"].status == "unreadable"
    assert runs["ibstat"].detail.startswith("not read: ")
    assert runs["ibv_devinfo -v"].status == "unreadable"
    assert "not UTF-8 text" in runs["ibv_devinfo -v"].detail
