"""The layers of docs/architecture.md hold: import-linter's contracts in pyproject.toml (the
layer order, a pure engine, Textual only in the TUI, no import cycle at any depth); a module
imports at its top all it needs but what is slow to import."""

from __future__ import annotations

import ast
import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def test_import_contracts_hold():
    """``lint-imports`` keeps every contract."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        if sys.version_info < (3, 10):
            pytest.skip("import-linter needs Python 3.10+; the contracts are checked there")
        pytest.fail("lint-imports is missing: pip install -e '.[test]'")
    result = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


#: What the views (commands, TUI, CLI) may not import at run time: they ask the services.
#: Type-only imports (under ``if TYPE_CHECKING:``) name the types results carry; the device
#: kinds (``fabric.kinds``, one small enum) are words of the map as much as of the fabric.
BELOW_SERVICES = ("fabricui.engine", "fabricui.importers", "fabricui.fabric", "fabricui.hwdb")
VIEW_MAY_IMPORT = ("fabricui.fabric.kinds",)


@functools.cache
def _parsed(path: Path) -> tuple[ast.Module, frozenset[int]]:
    """A module's tree, and the ids of the nodes under its ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = frozenset(
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    )
    return tree, type_only


def _run_time_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each ``from X import`` outside ``if TYPE_CHECKING:`` blocks."""
    tree, type_only = _parsed(path)
    return [
        (node.lineno, node.module)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and id(node) not in type_only
    ]


def test_views_reach_the_engine_only_through_services():
    """Commands, the TUI and the CLI import no engine, importer, fabric or hwdb module at
    run time (one road: every figure a view shows comes from a service)."""
    files = [ROOT / "fabricui" / "cli.py"]
    for package in ("commands", "tui"):
        files += sorted((ROOT / "fabricui" / package).rglob("*.py"))
    reaches = [
        f"{path.relative_to(ROOT)}:{line} {module}"
        for path in files
        for line, module in _run_time_imports(path)
        if module.startswith(BELOW_SERVICES) and not module.startswith(VIEW_MAY_IMPORT)
    ]
    assert not reaches, "views reaching past the services:\n" + "\n".join(reaches)


#: Third-party and standard-library modules a function may import on first use instead of
#: at the top of its module: slow to import (times on a 2-core machine, Python 3.11) and not
#: needed by the command line's parser, ``--help`` or the explorer's first frame.
SLOW_PACKAGES = {
    "numpy": "the engine's arrays (~50 ms)",
    "yaml": "PyYAML (~12 ms): only the hardware database reads YAML",
    "pluggy": "the plugin manager (~8 ms, then every plugin it loads)",
    "textual": "the explorer (~140 ms)",
    "rich": "the explorer's renderables (~25 ms)",
    "asyncio": "~25 ms: the explorer's server and off-screen snapshots",
    "textual_serve": "the web server of `fabricui serve`",
    "aiohttp": "the web server of `fabricui serve`",
    "tempfile": "~4 ms (random, shutil): only a command that writes a file",
    "socket": "~5 ms (selectors, _socket): only `probe` names its host",
    "hashlib": "~5 ms (OpenSSL): only `serve` hashes its access token",
    "grp": "POSIX only: imported where it is used, so the module loads on Windows",
    "pwd": "POSIX only",
    "resource": "POSIX only",
    "termios": "POSIX only",
}

#: fabricui modules (a name covers its submodules) slow for what they import at their top:
#: one of ``SLOW_PACKAGES`` or of these (``test_slow_modules_are_slow`` checks each module
#: listed). Inside the engine the same holds for its parts: the training engine, NCCL's
#: tuner model, the traffic simulator and the fabric builders (~10 to 20 ms each beyond
#: numpy) load when first used.
SLOW_BY_IMPORT = (
    # numpy: the engine, the fabric's arrays, and what routes or draws them
    "fabricui.engine",
    "fabricui.fabric",
    "fabricui.render.diagram",
    "fabricui.render.path",
    # PyYAML and the catalog (~40 ms)
    "fabricui.hwdb",
    # pluggy, the plugin host and every plugin
    "fabricui.hookspecs",
    "fabricui.plugins",
    # services that load the catalog, the plugins or a fabric: a command imports its own
    # when it runs, so that help and the parser load none
    "fabricui.services.calibrate",
    "fabricui.services.catalog_info",
    "fabricui.services.collective",
    "fabricui.services.doctor",
    "fabricui.services.doctor_fabric",
    "fabricui.services.doctor_health",
    "fabricui.services.health",
    "fabricui.services.importing",
    "fabricui.services.jobs",
    "fabricui.services.loaded",
    "fabricui.services.path",
    "fabricui.services.place",
    "fabricui.services.probe",
    "fabricui.services.reports",
    "fabricui.services.session",
    "fabricui.services.traffic",
    # hashlib: the access checks of `fabricui serve`
    "fabricui.services.serve_access",
    # Textual: the explorer's app, command line, screens and widgets (the first frame
    # imports only the first view's)
    "fabricui.tui.app",
    "fabricui.tui.command_line",
    "fabricui.tui.screens",
    "fabricui.tui.widgets",
    # asyncio: the explorer's terminal driver (the command line starts it to explore)
    "fabricui.tui.launch",
    "fabricui.tui.terminal",
    "fabricui.tui.textual_private",
    # asyncio: the web server and off-screen snapshots
    "fabricui.tui.offscreen",
    "fabricui.tui.serve",
    "fabricui.tui.serve_guard",
    "fabricui.tui.snapshot",
)

#: fabricui modules slow by themselves.
SLOW_BY_THEMSELVES = {
    "fabricui.cli": "every command's parser (~30 ms): only `fabricui.api.run_cli` needs it",
    "fabricui.importers": "a parser per format, compiling its patterns (~1 to 8 ms each): "
    "a command reads one or two formats",
    "fabricui.model": "the records' frozen dataclasses (~14 ms): the parser builds none",
    "fabricui.services.plan_runs": "the hardware and precision wording tables and their "
    "patterns (~10 ms): only `plan --run` reads a run file",
}

SLOW = (*SLOW_PACKAGES, *SLOW_BY_IMPORT, *SLOW_BY_THEMSELVES)

_IMPORT_LINE = re.compile(r"^[ \t]+(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w.]+))")
_TOP_IMPORT_LINE = re.compile(r"^(?:from ([\w.]+) import ([^#]*)|import ([\w.]+))")
_DEF_LINE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]")
_TRIPLE_QUOTE = re.compile(r"\"\"\"|\'\'\'")


def _is_slow(module: str, slow: tuple[str, ...] = SLOW) -> bool:
    return any(module == name or module.startswith(name + ".") for name in slow)


def _scanned_function_imports(text: str) -> list[tuple[int, str]]:
    """(line, module) of the imports inside a ``def`` (not under ``if TYPE_CHECKING:``
    nor in a string), read line by line: a tenth of the time ``ast`` takes, which
    ``_function_imports`` then confirms where something is found."""
    found: list[tuple[int, str]] = []
    blocks: list[tuple[int, bool]] = []  # (indent, is a def) of the open def / TYPE_CHECKING
    quote = None
    for number, line in enumerate(text.splitlines(), 1):
        if quote is not None:  # inside a triple-quoted string
            quote = None if line.count(quote) % 2 else quote
            continue
        stripped = line.lstrip()
        if not stripped or stripped[0] in "#)]}":  # a comment or the end of a bracket
            continue
        indent = len(line) - len(stripped)
        while blocks and blocks[-1][0] >= indent:
            blocks.pop()
        quotes = _TRIPLE_QUOTE.findall(line)
        if quotes and line.count(quotes[0]) % 2:
            quote = quotes[0]
        match = _IMPORT_LINE.match(line)
        if _DEF_LINE.match(line):
            blocks.append((indent, True))
        elif stripped.startswith("if TYPE_CHECKING"):
            blocks.append((indent, False))
        elif match and blocks and all(is_def for _, is_def in blocks):
            found.append((number, match.group(1) or match.group(2)))
    return found


def _targets(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (``from fabricui.services import plan``
    loads ``fabricui.services.plan``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    module = node.module or ""
    folder = ROOT / module.replace(".", "/")
    submodules = [
        f"{module}.{alias.name}"
        for alias in node.names
        if (folder / f"{alias.name}.py").exists() or (folder / alias.name).is_dir()
    ]
    return submodules or [module]


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each import inside a function, outside ``if TYPE_CHECKING:``."""
    tree, type_only = _parsed(path)
    found = {
        (node.lineno, module)
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(function)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in type_only
        for module in _targets(node)
    }
    return sorted(found)


def test_functions_import_only_what_is_slow_to_import():
    """A function imports on first use only what ``SLOW_PACKAGES``, ``SLOW_BY_IMPORT`` or
    ``SLOW_BY_THEMSELVES`` name; everything else is imported at the top of the module,
    where a reader sees what the module needs (an import cycle is fixed, not hidden)."""
    suspects = [
        path
        for path in sorted((ROOT / "fabricui").rglob("*.py"))
        if any(
            not _is_slow(module)
            for _, module in _scanned_function_imports(path.read_text(encoding="utf-8"))
        )
    ]
    quick = [
        f"{path.relative_to(ROOT)}:{line} {module}"
        for path in suspects
        for line, module in _function_imports(path)
        if not _is_slow(module)
    ]
    assert not quick, "imported inside a function but quick to import:\n" + "\n".join(quick)


def test_the_line_scan_finds_what_ast_finds(tmp_path):
    """The scan sees imports in methods and nested functions, after a header split over
    lines, and none under ``if TYPE_CHECKING:``, at module level or in a docstring."""
    source = '''"""Docstring::

    import fabricui.in_a_docstring
"""
import fabricui.at_the_top
if TYPE_CHECKING:
    from fabricui import type_only
try:
    import fabricui.top_level_try
except ImportError:
    pass


def split(
    a: int,
) -> None:
    """One line."""
    from fabricui import after_a_split_header

    def inner():
        import fabricui.nested
    if a:
        if TYPE_CHECKING:
            import fabricui.typed_in_a_function
        text = """
    import fabricui.in_a_string
"""
        from fabricui.in_a_branch import x


class Screen:
    import fabricui.class_body

    async def method(self):
        from fabricui.in_a_method import y
'''
    path = tmp_path / "sample.py"
    path.write_text(source, encoding="utf-8")
    scanned = [line for line, _ in _scanned_function_imports(source)]
    assert scanned == sorted({line for line, _ in _function_imports(path)})
    assert len(scanned) == 4


def _top_imports(text: str) -> list[str]:
    """The modules (and ``from M import name``'s ``M.name``) a module imports at its top:
    its import lines at column 0 (type-only ones are indented under their ``if``)."""
    found = []
    for line in text.splitlines():
        match = _TOP_IMPORT_LINE.match(line)
        if match:
            module = match.group(1) or match.group(3)
            names = (match.group(2) or "").replace("(", "").split(",")
            found += [module, *(f"{module}.{name.split()[0]}" for name in names if name.strip())]
    return found


def test_slow_modules_are_slow():
    """Each module of ``SLOW_BY_IMPORT`` that is a file imports, at its top, something slow
    (else it belongs at the top of the modules that import it)."""
    quick = []
    for name in SLOW_BY_IMPORT:
        path = (ROOT / name.replace(".", "/")).with_suffix(".py")
        if not path.exists():  # a package: its modules are many, each checked where used
            continue
        others = tuple(slow for slow in SLOW if slow != name)
        if not any(_is_slow(module, others) for module in _top_imports(path.read_text())):
            quick.append(name)
    assert not quick, f"listed as slow but importing nothing slow: {quick}"
