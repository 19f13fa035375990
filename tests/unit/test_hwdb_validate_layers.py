"""``hwdb validate`` on what a user layers over the database: a directory or a single record
file says what it holds and which built-in ids it replaces; one that holds nothing (empty, a
mistyped path, YAML in a subdirectory, empty lists) is one error line, status 2; ``--hwdb``
with such a directory warns once and goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _records import link

from fabricui.commands import options
from fabricui.services import catalog_info


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No settings file, no $FABRICUI_HWDB, and warnings not yet given."""
    monkeypatch.setenv("FABRICUI_CONFIG", str(tmp_path / "no-config.yaml"))
    monkeypatch.delenv("FABRICUI_HWDB", raising=False)
    monkeypatch.setattr(options, "_WARNED_EMPTY", set())


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def one_error(status: int, out: str, err: str) -> str:
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fabricui: error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- a record file (item: validate FILE reads links/gpus/... files as records) ---------------


def test_record_file_is_validated_as_records(run_cli, tmp_path: Path):
    """``hwdb validate d/links.yaml``: the records are checked, counted and any built-in id
    they replace named; no 'unknown key' from the topology reader."""
    path = write(tmp_path / "d" / "links.yaml", link("testlink9", 450))
    status, out, err = run_cli("hwdb", "validate", str(path))
    assert status == 0, err
    assert out.startswith(f"ok: {path}: holds 1 link; database: ")
    assert "replaces" not in out and "unknown key" not in err


def test_record_file_replacing_a_builtin_says_so(run_cli, tmp_path: Path):
    path = write(tmp_path / "links.yaml", link("nvlink4", 1))
    status, out, _ = run_cli("hwdb", "validate", str(path), "--json")
    data = json.loads(out)
    assert status == 0
    assert data["holds"] == {"links": 1}
    assert data["replaces"] == {"built-in": {"links": ["nvlink4"]}}


def test_record_file_errors_name_file_and_line(run_cli, tmp_path: Path):
    """A bad record in a record file is the record loader's one line (file:line: key)."""
    path = write(tmp_path / "links.yaml", link("testlink9", "fast"))
    line = one_error(*run_cli("hwdb", "validate", str(path)))
    assert f"{path}:6" in line and "bw_GBps" in line


def test_record_file_with_an_unknown_section(run_cli, tmp_path: Path):
    path = write(tmp_path / "x.yaml", link("t", 1) + "gpuz: []\n")
    line = one_error(*run_cli("hwdb", "validate", str(path)))
    assert "gpuz: unknown section" in line


def test_record_file_with_empty_lists_holds_no_records(run_cli, tmp_path: Path):
    path = write(tmp_path / "links.yaml", "links: []\ngpus: []\n")
    line = one_error(*run_cli("hwdb", "validate", str(path)))
    assert line == f"fabricui: error: {path}: holds no records: it holds empty lists"


def test_topology_file_is_still_a_topology(run_cli):
    """A topology file (gpu:, nodes: ...) keeps being read as one."""
    topo = Path(__file__).parents[1] / "data" / "topologies" / "minimal.yaml"
    status, out, _ = run_cli("hwdb", "validate", str(topo))
    assert status == 0 and "topology minimal" in out


def test_hwdb_file_advice_names_a_command_that_works(run_cli, tmp_path: Path):
    """``--hwdb d/links.yaml`` advises ``hwdb validate d/links.yaml``, which then passes."""
    path = write(tmp_path / "d" / "links.yaml", link("testlink9", 450))
    line = one_error(*run_cli("--hwdb", str(path), "topologies"))
    assert f"`fabricui hwdb validate {path}`" in line
    assert run_cli("hwdb", "validate", str(path))[0] == 0


# --- a directory ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({}, "the directory is empty"),
        ({"readme.txt": "notes\n"}, "no *.yaml file in it (it holds readme.txt)"),
        (
            {"sub/links.yaml": link("t", 1)},
            "no *.yaml file at its top level (sub/links.yaml is in a subdirectory",
        ),
        (
            {"links.yml": link("t", 1)},
            "only *.yaml files are read (links.yml",
        ),
        ({"links.yaml": ""}, "its *.yaml files are empty or hold empty lists"),
        ({"links.yaml": "links: []\n"}, "its *.yaml files are empty or hold empty lists"),
        ({"links.yaml": "# nothing yet\n"}, "its *.yaml files are empty or hold empty lists"),
    ],
)
def test_directory_that_holds_nothing_is_an_error(
    run_cli, tmp_path: Path, files: dict[str, str], reason: str
):
    """A directory a load reads no record from: status 2, one line saying why."""
    directory = tmp_path / "db"
    directory.mkdir()
    for name, text in files.items():
        write(directory / name, text)
    line = one_error(*run_cli("hwdb", "validate", str(directory)))
    assert line.startswith(f"fabricui: error: {directory}: holds no records: {reason}")


def test_directory_lists_what_it_holds_and_replaces(run_cli, tmp_path: Path):
    """Overriding a built-in id is allowed, and listed: ``replaces built-in links: nvlink4``."""
    directory = tmp_path / "db"
    write(directory / "links.yaml", link("nvlink4", 1))
    write(directory / "more.yaml", link("testlink9", 2))
    status, out, err = run_cli("hwdb", "validate", str(directory))
    assert status == 0, err
    assert out.startswith(
        f"ok: {directory}: holds 2 links; replaces built-in links: nvlink4; database: "
    )
    data = json.loads(run_cli("hwdb", "validate", str(directory), "--json")[1])
    assert data["holds"] == {"links": 2}
    assert data["replaces"] == {"built-in": {"links": ["nvlink4"]}}
    assert data["counts"]["links"] >= 30


def test_replacing_an_earlier_directory_names_it(run_cli, tmp_path: Path):
    first = tmp_path / "first"
    second = tmp_path / "second"
    write(first / "links.yaml", link("testlink9", 2))
    write(second / "links.yaml", link("testlink9", 3))
    status, out, _ = run_cli("--hwdb", str(first), "hwdb", "validate", str(second))
    assert status == 0
    assert f"replaces {first}'s links: testlink9" in out


def test_builtin_database_summary_is_unchanged(run_cli):
    status, out, _ = run_cli("hwdb", "validate")
    assert status == 0 and out.startswith("ok: ") and "holds" not in out
    data = json.loads(run_cli("hwdb", "validate", "--json")[1])
    assert "holds" not in data and data["counts"]["links"] >= 30


def test_hwdb_option_with_an_empty_directory_warns_once(run_cli, tmp_path: Path):
    """``--hwdb DIR`` with nothing to read: one warning (even when the command builds the
    request twice), and the command still runs on the built-in database."""
    directory = tmp_path / "typo"
    write(directory / "sub" / "links.yaml", link("t", 1))
    status, out, err = run_cli("--hwdb", str(directory), "hwdb", "list", "links")
    assert status == 0 and "nvlink4" in out
    assert err.strip().splitlines() == [
        f"fabricui: warning: {directory}: adds nothing to the hardware database: no *.yaml "
        "file at its top level (sub/links.yaml is in a subdirectory: record files go at the "
        "top level, topology files in topologies/)"
    ]
    status, _, err = run_cli("--hwdb", str(directory), "hwdb", "show", "nvlink4")
    assert status == 0 and err == ""


@pytest.mark.parametrize("text", ["# nothing yet\n", "links: []\n"])
def test_hwdb_option_whose_files_hold_no_records_warns(run_cli, tmp_path: Path, text: str):
    """``--hwdb DIR`` whose YAML files hold no records (a comment, an empty list): every
    command that loads the database says so in one line, and runs on the rest of it."""
    directory = tmp_path / "db"
    write(directory / "links.yaml", text)
    status, out, err = run_cli("--hwdb", str(directory), "hwdb", "show", "nvlink4")
    assert status == 0 and "nvlink4" in out
    assert err.strip().splitlines() == [
        f"fabricui: warning: {directory}: adds nothing to the hardware database: its *.yaml "
        "files are empty or hold empty lists"
    ]


def test_explorer_says_a_directory_without_records_before_it_starts(tmp_path: Path, capsys):
    """The explorer loads ``--hwdb`` before taking the screen: the warning is said there
    (here the terminal check then refuses a pipe, so nothing is drawn)."""
    from fabricui.errors import ConfigError
    from fabricui.services.requests import CatalogRequest, LaunchRequest
    from fabricui.tui.launch import run_explorer

    directory = tmp_path / "db"
    write(directory / "links.yaml", "links: []\n")
    with pytest.raises(ConfigError):
        run_explorer(LaunchRequest(), CatalogRequest((directory,)))
    assert "adds nothing to the hardware database: its *.yaml files" in capsys.readouterr().err


def test_hwdb_option_with_records_does_not_warn(run_cli, tmp_path: Path):
    directory = tmp_path / "db"
    write(directory / "links.yaml", link("testlink9", 2))
    status, out, err = run_cli("--hwdb", str(directory), "hwdb", "show", "testlink9")
    assert status == 0 and err == "" and "testlink9" in out


@pytest.mark.parametrize(
    ("n", "kind", "shown"),
    [
        (1, "links", "1 link"),
        (1, "switches", "1 switch"),
        (1, "topologies", "1 topology"),
        (2, "switches", "2 switches"),
        (0, "gpus", "0 gpus"),
    ],
)
def test_counts_of_one_record_are_singular(n: int, kind: str, shown: str):
    assert catalog_info._count(n, kind) == shown
