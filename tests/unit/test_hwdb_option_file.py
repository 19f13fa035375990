"""``--hwdb FILE`` says a file was given where a directory is expected, not that the
directory is missing."""

from __future__ import annotations


def test_a_file_for_hwdb_is_named_as_a_file(tmp_path, run_cli):
    """Before or after the command, one line naming the file and what --hwdb takes."""
    record = tmp_path / "links.yaml"
    record.write_text("links: []\n", encoding="utf-8")
    for argv in (("--hwdb", str(record), "topologies"), ("topologies", "--hwdb", str(record))):
        status, out, err = run_cli(*argv)
        assert status == 2 and out == ""
        line = err.strip()
        assert line.startswith(f"fabricui: error: {record}: a file, not a directory")
        assert "directory of *.yaml records" in line and "hwdb validate" in line
        assert "\n" not in line and "not found" not in line


def test_a_missing_hwdb_directory_is_still_not_found(tmp_path, run_cli):
    """A path that does not exist keeps its message."""
    status, _, err = run_cli("--hwdb", str(tmp_path / "nope"), "topologies")
    assert status == 2 and "nope: hardware database directory not found" in err
