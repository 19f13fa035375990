"""Files fabricui writes are atomic and never replace a file without --force; YAML is only
ever read with a safe loader (checked in the source)."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest
from _property import DATA, ROOT, no_leftovers, run_cli

from fabricui import files as atomic_write
from fabricui.errors import ConfigError
from fabricui.files import write_text

#: Product source: the package and the built-in plugins.
SOURCES = sorted(
    [*(ROOT / "fabricui").rglob("*.py"), *(ROOT / "plugins").glob("fabricui_*/**/*.py")]
)
#: Modules allowed to write files other than through ``files``, and why.
OTHER_WRITERS = {
    "fabricui/files.py": "the one atomic writer",
    "fabricui/plugins/scaffold.py": "writes a new package into a private staging directory, then "
    "renames the whole directory into place",
}


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_yaml_is_only_read_with_safe_loaders():
    """No ``yaml.load`` without a safe loader, no unsafe/full loaders, no ``yaml.Loader``."""
    unsafe = re.compile(
        r"yaml\.(?:unsafe_load|full_load|load_all|Loader\b|UnsafeLoader|FullLoader|"
        r"CLoader|CUnsafeLoader|CFullLoader)|yaml\.load\((?![^)]*Loader=_?C?SafeLoader)"
    )
    found = []
    for path in SOURCES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if unsafe.search(line) and "_SafeLoader" not in line:
                found.append(f"{_relative(path)}:{number}: {line.strip()}")
    assert not found, "unsafe YAML loading:\n" + "\n".join(found)


def test_the_one_yaml_loader_is_safe():
    """``yamlfile`` loads with libyaml's or PyYAML's SafeLoader, nothing else."""
    import yaml

    from fabricui.hwdb import yamlfile

    assert yamlfile._SafeLoader in (getattr(yaml, "CSafeLoader", None), yaml.SafeLoader)
    with pytest.raises(Exception, match="could not determine a constructor"):
        yamlfile.parse_yaml("!!python/object/apply:os.system ['true']\n", "x")


def _writes(tree: ast.AST) -> list[int]:
    """Lines that open a file for writing or call write_text/write_bytes/os.replace."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = func.value if isinstance(func, ast.Attribute) else None
        owner_name = owner.id if isinstance(owner, ast.Name) else None
        if name in ("write_text", "write_bytes") and owner is not None:
            if owner_name not in ("atomic_write", "files"):  # Path.write_text, not files.write_text
                lines.append(node.lineno)
        elif (name in ("replace", "rename", "link") and owner_name == "os") or name == "mkstemp":
            lines.append(node.lineno)
        elif name in ("open", "fdopen"):
            modes = node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
            if any(isinstance(m, ast.Constant) and set(str(m.value)) & set("wxa+") for m in modes):
                lines.append(node.lineno)
    return lines


def test_every_file_write_goes_through_atomic_write():
    """Only ``fabricui.files`` (and the listed exceptions) write files."""
    found = []
    for path in SOURCES:
        relative = _relative(path)
        if relative in OTHER_WRITERS:
            continue
        for number in _writes(ast.parse(path.read_text(encoding="utf-8"))):
            found.append(f"{relative}:{number}")
    assert not found, "files written outside fabricui.files:\n" + "\n".join(found)


def test_write_refuses_to_replace_without_force(tmp_path: Path):
    """An existing file is kept (one-line error) unless forced; no temporary file remains."""
    target = tmp_path / "out.yaml"
    write_text(target, "one\n")
    with pytest.raises(ConfigError, match=r"out\.yaml: already exists; pass --force") as exc:
        write_text(target, "two\n")
    assert "\n" not in str(exc.value)
    assert target.read_text() == "one\n"
    write_text(target, "two\n", force=True)
    assert target.read_text() == "two\n"
    no_leftovers(tmp_path, {"out.yaml"})


def test_written_file_has_normal_permissions(tmp_path: Path):
    """The temporary file's private mode does not leak into the result."""
    umask = os.umask(0o022)
    try:
        write_text(tmp_path / "out.txt", "x")
    finally:
        os.umask(umask)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("target", "message"),
    [(".", "is a directory"), ("missing/out.txt", "no such directory")],
)
def test_write_refuses_bad_targets(tmp_path: Path, target: str, message: str):
    """A directory, or a file in a directory that does not exist: one line, nothing written."""
    with pytest.raises(ConfigError, match=message):
        write_text(tmp_path / target, "x", force=True)
    no_leftovers(tmp_path, set())


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A write that fails half-way (disk full) leaves neither the target nor a temp file."""

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "fsync", full)
    with pytest.raises(ConfigError, match="(?i)no space left on device"):
        write_text(tmp_path / "out.txt", "x" * 10_000)
    no_leftovers(tmp_path, set())


def test_file_created_meanwhile_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A file that appears between the check and the rename is kept (no --force)."""
    target = tmp_path / "out.txt"
    real_link = os.link

    def racing_link(src: str, dst: str) -> None:
        Path(dst).write_text("theirs")
        real_link(src, dst)

    monkeypatch.setattr(atomic_write.os, "link", racing_link)
    with pytest.raises(ConfigError, match="already exists"):
        write_text(target, "ours")
    assert target.read_text() == "theirs"
    no_leftovers(tmp_path, {"out.txt"})


def test_unencodable_text_is_one_error(tmp_path: Path):
    """Text that is not Unicode (a lone surrogate) is refused, nothing written."""
    with pytest.raises(ConfigError, match="not Unicode"):
        write_text(tmp_path / "out.txt", "bad \ud800")
    no_leftovers(tmp_path, set())


RING = DATA / "nccl_tests" / "h100_2node_degraded_ring_all_reduce_perf.txt"
NVIDIA_SMI = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\t0-47\nGPU1\tNV12\t X \t0-47\n"


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    source = tmp_path / "topo.txt"
    source.write_text(NVIDIA_SMI)
    return {
        "import": ["import", "nvidia-smi", str(source), "-o"],
        "calibrate": ["calibrate", str(RING), "-t", "dgx-h100", "-o"],
    }


@pytest.mark.parametrize("command", ["import", "calibrate"])
def test_commands_refuse_to_overwrite(tmp_path: Path, command: str):
    """``-o`` onto an existing file: exit 2, one line, the file untouched; --force replaces."""
    argv = _commands(tmp_path)[command]
    target = tmp_path / "out.yaml"
    target.write_text("mine\n")
    outcome = run_cli([*argv, str(target)])
    assert outcome.status == 2 and outcome.err_lines == [
        f"fabricui: error: {target}: already exists; pass --force to overwrite it"
    ]
    assert target.read_text() == "mine\n"
    forced = run_cli([*argv, str(target), "--force"])
    assert forced.status == 0, forced.err
    assert target.read_text() != "mine\n"
    no_leftovers(tmp_path, {"out.yaml", "topo.txt"})
