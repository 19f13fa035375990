"""A key repeated in one YAML mapping is refused (one line: file, line, key path, first line)
in every file the tool reads, instead of the last value silently winning."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fabricui.errors import HwdbError
from fabricui.hwdb import yamlfile
from fabricui.hwdb.yamlfile import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
#: The shared data set (``shared/data`` beside the checkout or its worktree directory;
#: FABRICUI_SHARED_DATA moves it, as for the property tests).
SHARED_DATA = Path(
    os.environ.get(
        "FABRICUI_SHARED_DATA",
        next(
            (
                p
                for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data")
                if p.is_dir()
            ),
            ROOT.parent / "shared" / "data",
        ),
    )
)
TOPOLOGY = (
    "gpu: h100-sxm\n"
    "nodes: 4\n"
    "nodes: 8\n"
    "gpus_per_node: 8\n"
    "intra: {fabric: nvswitch, link: nvlink4}\n"
    "net: {link: ib-ndr, gbps: 400, nics_per_node: 8}\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", "t.yaml:3: a: duplicate key 'a' (first at line 1)"),
        ("x: {a: 1, b: 2, a: 3}\n", "t.yaml:1: x.a: duplicate key 'a' (first at line 1)"),
        (
            "- k: 1\n- k: 1\n  j: 2\n  j: 3\n",
            "t.yaml:4: [1].j: duplicate key 'j' (first at line 3)",
        ),
        ('a: 1\n"a": 2\n', "t.yaml:2: a: duplicate key 'a' (first at line 1)"),
        ("x:\n  1: a\n  0x1: b\n", "t.yaml:3: x.0x1: duplicate key '0x1' (first at line 2)"),
    ],
)
def test_duplicate_keys_are_refused_with_file_line_and_path(text, message):
    """Block and flow mappings, quoted and differently spelt equal keys, inside lists."""
    with pytest.raises(HwdbError) as exc:
        parse_yaml(text, "t.yaml")
    assert str(exc.value) == message


def test_the_duplicate_refusing_loader_is_the_safe_loader():
    """The check adds to the safe loader and keeps refusing Python tags."""
    assert issubclass(yamlfile._UniqueKeyLoader, yamlfile._SafeLoader)
    with pytest.raises(HwdbError, match="could not determine a constructor"):
        parse_yaml("!!python/object/apply:os.system ['true']\n", "x")


def test_overriding_a_merged_key_is_not_a_duplicate():
    """``<<: *base`` then a key of the base overrides it, as YAML intends."""
    text = "base: &b {x: 1, y: 2}\nuse: {<<: *b, x: 3}\nboth: {<<: [*b], y: 4}\n"
    data = parse_yaml(text, "t.yaml").data
    assert data["use"] == {"x": 3, "y": 2} and data["both"] == {"x": 1, "y": 4}


def test_hwdb_validate_refuses_a_topology_with_a_duplicate_key(tmp_path, run_cli):
    """The reviewer's case: ``nodes`` twice no longer validates as 8 nodes."""
    path = tmp_path / "dup.yaml"
    path.write_text(TOPOLOGY, encoding="utf-8")
    status, out, err = run_cli("hwdb", "validate", str(path))
    assert status == 2 and out == ""
    assert f"{path}:3: nodes: duplicate key 'nodes' (first at line 2)" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_topology_given_by_path_is_refused(tmp_path, run_cli):
    """``-t FILE`` reads the same loader."""
    path = tmp_path / "dup.yaml"
    path.write_text(TOPOLOGY, encoding="utf-8")
    status, _, err = run_cli("path", "0", "1", "-t", str(path))
    assert status == 2 and "duplicate key 'nodes'" in err


def test_an_hwdb_directory_record_is_refused(tmp_path, run_cli):
    """A record file in an ``--hwdb`` directory with a repeated field."""
    directory = tmp_path / "db"
    shutil.copytree(ROOT / "tests" / "data" / "hwdb" / "mini", directory)
    links = directory / "links.yaml"
    text = links.read_text(encoding="utf-8")
    text = text.replace("{id: tcp, name: TCP,", "{id: tcp, name: TCP, name: TCP2,")
    links.write_text(text, encoding="utf-8")
    status, _, err = run_cli("--hwdb", str(directory), "topologies")
    assert status == 2 and "links.yaml:" in err
    assert "links[" in err and ".name: duplicate key 'name'" in err


def test_a_plan_run_file_is_refused(tmp_path, run_cli):
    """A ``plan --run`` file whose run block repeats ``tp``."""
    path = tmp_path / "run.yaml"
    path.write_text(
        "id: toy\nmodel: llama3-8b\nrun:\n  topology: dgx-h100\n  tp: 1\n  tp: 8\n"
        "  pp: 1\n  dp: 1\n  global_batch: 8\n",
        encoding="utf-8",
    )
    status, _, err = run_cli("plan", "--run", str(path))
    assert status == 2 and f"{path}:6: run.tp: duplicate key 'tp' (first at line 5)" in err


def test_a_calibration_overlay_is_refused(tmp_path, run_cli):
    """A ``--calibration`` overlay that states one link twice."""
    path = tmp_path / "cal.yaml"
    path.write_text(
        "links:\n  ib-ndr: {efficiency: 0.5}\n  ib-ndr: {efficiency: 0.9}\n", encoding="utf-8"
    )
    status, _, err = run_cli("--calibration", str(path), "topologies")
    assert status == 2 and f"{path}:3: links.ib-ndr: duplicate key 'ib-ndr'" in err


def _yaml_files() -> list[Path]:
    """Our YAML data: the built-in hwdb, the plugins' hwdb, test and benchmark data, and the
    shared data set when this checkout sits beside it."""
    roots = [ROOT / "hwdb", ROOT / "plugins", ROOT / "tests" / "data", ROOT / "benchmarks"]
    roots += [SHARED_DATA] if SHARED_DATA.is_dir() else []
    return sorted(p for r in roots for p in r.rglob("*") if p.suffix in (".yaml", ".yml"))


def test_shipped_and_shared_yaml_has_no_duplicate_keys():
    """Every YAML file we ship or read for tests and benchmarks still loads."""
    problems = []
    for path in _yaml_files():
        text = path.read_text(encoding="utf-8")
        try:
            parse_yaml(text, str(path))
        except HwdbError as exc:
            if "duplicate key" in str(exc):
                problems.append(str(exc))
    assert problems == []
