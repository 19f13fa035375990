"""Hardware-database directories (``--hwdb DIR``, ``hwdb validate DIR``) and calibration
overlays (``--calibration FILE``): broken or odd records load or fail in one line."""

from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from _property import (
    MINI_HWDB,
    ROOT,
    check_contract,
    finite_or_not,
    hostile_values,
    mutated,
    run_cli,
    sample_files,
    to_yaml,
)
from hypothesis import example, given
from hypothesis import strategies as st

#: Databases to copy and break: the small test one, the real core and two plugins' records.
SOURCES = [
    MINI_HWDB,
    ROOT / "hwdb",
    ROOT / "plugins" / "fabricui_nvlink" / "hwdb",
    ROOT / "plugins" / "fabricui_ethernet" / "hwdb",
]
#: (database, file relative to it) for every YAML file in them.
FILES = [(src, p.relative_to(src)) for src in SOURCES for p in sample_files(src, "**/*.yaml")]


def _commands(directory: str) -> list[list[str]]:
    return [
        ["hwdb", "validate", directory],
        ["--hwdb", directory, "hwdb", "list", "--json"],
        ["--hwdb", directory, "path", "-t", "dgx-h100-pod", "--src", "0", "--dst", "9", "--json"],
        ["--hwdb", directory, "hwdb", "show", "nvlink4", "--json"],
    ]


def _run_on(directory: Path, which: int) -> None:
    argv = _commands(str(directory))[which]
    check_contract(run_cli(argv), json_out="--json" in argv)


@given(data=st.data(), which=st.integers(0, 3))
def test_broken_database_file(data: st.DataObject, which: int) -> None:
    """A copy of a database with one file damaged loads, or fails naming file and line."""
    source, relative = data.draw(st.sampled_from(FILES), label="file")
    text = data.draw(mutated((source / relative).read_text(encoding="utf-8")), label="text")
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "db"
        shutil.copytree(source, target)
        (target / relative).write_text(text, encoding="utf-8")
        _run_on(target, which)


def _records(name: str, kind: str) -> list[dict[str, Any]]:
    """The shipped records of one kind: the core's and the built-in plugins' files."""
    records: list[dict[str, Any]] = []
    for directory in [ROOT / "hwdb", *sorted((ROOT / "plugins").glob("fabricui_*/hwdb"))]:
        path = directory / name
        if path.is_file():
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            records += [r for r in data[kind] if isinstance(r, dict)]
    return records


#: Real records per section, to change a field or two of.
RECORDS = {
    kind: _records(f"{kind}.yaml", kind) for kind in ("links", "gpus", "nics", "switches", "models")
}


_LINKS = {r["id"]: r for r in RECORDS["links"]}


@st.composite
def changed_records(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(section, a real record with one or two fields set to odd or wrong values)."""
    kind = draw(st.sampled_from(sorted(RECORDS)))
    record = copy.deepcopy(draw(st.sampled_from(RECORDS[kind])))
    for _ in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(sorted(record)))
        record[key] = draw(
            st.one_of(
                hostile_values(),
                finite_or_not(),
                st.sampled_from((1e-300, 1e300, 2**53, 0.001, 10**9)),
            )
        )
    return kind, record


@example(record=("links", {**_LINKS["ib-ndr"], "bw_GBps": 1e-300}), which=2)
@example(record=("links", {**_LINKS["nvlink4"], "lat_us": 9e15}), which=2)
@example(record=("links", {**_LINKS["ib-ndr"], "bw_GBps": 10**400}), which=0)
@given(record=changed_records(), which=st.integers(0, 3))
def test_changed_record_overrides_the_real_one(record: tuple[str, Any], which: int) -> None:
    """A record overriding a real one with an odd field value: used, or refused in one line."""
    kind, data = record
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "db"
        target.mkdir()
        (target / f"{kind}.yaml").write_text(to_yaml({kind: [data]}), encoding="utf-8")
        _run_on(target, which)


#: An overlay as ``fabricui calibrate`` writes it.
OVERLAY = """\
# fabricui calibration overlay (fabricui calibrate)
topology: dgx-h100-pod
fitted_on: [a.txt]
links:
  ib-ndr: {efficiency: 0.22, lat_us: 0.61}
  nvlink4: {efficiency: 0.9}
"""


@given(text=mutated(OVERLAY), which=st.sampled_from(("path", "collective")))
def test_broken_calibration_overlay(text: str, which: str) -> None:
    """``--calibration FILE`` with a damaged overlay is applied or refused in one line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "overlay.yaml"
        path.write_text(text, encoding="utf-8")
        command = (
            ["path", "--src", "0", "--dst", "9", "--json"]
            if which == "path"
            else ["collective", "all_reduce", "--size", "1M", "--json"]
        )
        check_contract(run_cli(["--calibration", str(path), *command]), json_out=True)
