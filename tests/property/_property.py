"""Shared pieces of the property tests: the CLI run in-process, the contract it must keep,
and strategies that break real samples or build hostile YAML."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from fabricui.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
MINI_HWDB = DATA / "hwdb" / "mini"
#: The real-world samples (``shared/data`` next to the checkout; FABRICUI_SHARED_DATA moves it).
SHARED = Path(os.environ.get("FABRICUI_SHARED_DATA", ROOT.parent / "shared" / "data"))
TOPO_SAMPLES = Path(os.environ.get("FABRICUI_TOPO_SAMPLES", SHARED / "topo"))

#: The profile every property test runs under: reproducible (derandomize) and small enough
#: for the whole directory to take well under a minute on two cores.
PROFILE = "fabricui-property"
settings.register_profile(
    PROFILE,
    max_examples=40,
    deadline=timedelta(seconds=8),
    derandomize=True,
    print_blob=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: A longer, randomized run for hunting bugs locally:
#: ``FABRICUI_HYPOTHESIS_PROFILE=fabricui-property-deep pytest tests/property``.
settings.register_profile(
    "fabricui-property-deep",
    parent=settings.get_profile(PROFILE),
    max_examples=1000,
    derandomize=False,
)

#: Longest one CLI call may take before the test calls it a hang [s].
HANG_S = 20.0


class Hang(Exception):
    """A CLI call ran longer than ``HANG_S``."""


@dataclass
class Outcome:
    """What one in-process CLI run did."""

    argv: list[str]
    status: int
    out: str
    err: str
    seconds: float

    @property
    def err_lines(self) -> list[str]:
        """Non-empty stderr lines."""
        return [line for line in self.err.splitlines() if line.strip()]


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in the main thread after ``seconds`` (no-op off the main thread)."""
    if not hasattr(signal, "setitimer") or not _main_thread():
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def run_cli(argv: Sequence[str], stdin: bytes | None = None) -> Outcome:
    """Run ``fabricui.cli.main(argv)`` in-process with captured stdout/stderr.

    Args:
        argv: The arguments after ``fabricui``.
        stdin: Bytes standard input holds (default: empty).

    Returns:
        The outcome; an exception escaping ``main`` (a traceback for the user) propagates.
    """
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    start = time.perf_counter()
    try:
        with _alarm(HANG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
    finally:
        sys.stdin = old_stdin
    return Outcome(list(argv), status, out.getvalue(), err.getvalue(), time.perf_counter() - start)


#: What an error line looks like when it is a crash wrapped in a message, not a diagnosis.
INTERNAL = re.compile(r"\b(?:[A-Z][a-z]+)+(?:Error|Exception): |\bTraceback\b")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN and Infinity (which are not JSON)."""
    return json.loads(text, parse_constant=_reject_constant)


def check_contract(outcome: Outcome, json_out: bool = False) -> None:
    """The CLI's contract with hostile input: success, or exit 2 with one error line.

    On success stdout is the command's output (strict JSON with ``--json``) and stderr holds
    only ``fabricui: ...`` lines (warnings). On failure the status is 2 and stderr ends with
    exactly one ``fabricui: error: ...`` line; the only other lines allowed before it are the
    warnings a command printed before it failed. Never a traceback.
    """
    where = f"fabricui {' '.join(outcome.argv)}"
    assert "Traceback" not in outcome.err, f"{where}: traceback\n{outcome.err}"
    assert outcome.status in (0, 2), f"{where}: exit {outcome.status}\n{outcome.err}"
    lines = outcome.err_lines
    assert all(line.startswith(("fabricui: ", "wrote ")) for line in lines), (
        f"{where}: stray stderr\n{outcome.err}"
    )
    errors = [line for line in lines if line.startswith("fabricui: error:")]
    if outcome.status == 2:
        assert len(errors) == 1 and lines[-1] == errors[0], f"{where}: stderr\n{outcome.err}"
        # A Python exception's name in the message is a bug a catch-all turned into a line.
        assert not INTERNAL.search(errors[0]), f"{where}: internal error\n{outcome.err}"
        assert all(
            line.startswith(("fabricui: warning:", "fabricui: plugin")) for line in lines[:-1]
        ), f"{where}: stderr\n{outcome.err}"
    else:
        assert not errors, f"{where}: error line with status 0\n{outcome.err}"
        if json_out:
            strict_json(outcome.out)


def no_leftovers(directory: Path, allowed: set[str]) -> None:
    """Nothing but ``allowed`` names in ``directory`` (no temporary or partial files)."""
    found = {p.name for p in directory.iterdir()}
    assert found <= allowed, f"left behind in {directory}: {sorted(found - allowed)}"


# --- samples ---------------------------------------------------------------------------------


def sample_files(folder: Path, pattern: str = "*") -> list[Path]:
    """Files in ``folder`` matching ``pattern``, sorted (empty when it is absent)."""
    return sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []


def read_sample(path: Path) -> str:
    """A sample as published: the collector's ``# source:``/``# machine:`` header dropped."""
    lines = path.read_text(encoding="utf-8").split("\n")
    start = 0
    while start < len(lines) and lines[start].startswith(("# source:", "# machine:")):
        start += 1
    if start and start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:])


# --- strategies ------------------------------------------------------------------------------

#: Text that breaks parsers: YAML syntax, hostile numbers, odd unicode, control characters.
HOSTILE_TOKENS = (
    "",
    " ",
    "\t",
    ":",
    ": ",
    "- ",
    "-",
    "#",
    "[",
    "]",
    "{",
    "}",
    "{}",
    "[]",
    ",",
    "'",
    '"',
    "&a",
    "*a",
    "!!binary",
    "!!python/object/apply:os.system ['true']",
    "<<: *a",
    "---",
    "...",
    "%YAML 1.1",
    "?",
    "|",
    ">",
    "~",
    "null",
    "true",
    "no",
    ".nan",
    ".inf",
    "-.inf",
    "NaN",
    "inf",
    "0",
    "-1",
    "-0.0",
    "1e309",
    "1.0e+309",
    "1e-400",
    "0x7fffffffffffffff",
    "9" * 30,
    "9" * 5000,
    "2147483648",
    "1000000000000",
    "4294967296",
    "0.5",
    "nodes: 1000000000000",
    "\x00",
    "\x1b[31m",
    "\r",
    "\u2028",
    "\ufeff",
    "\u202e",
    "\ud7ff",
    "é",
    "💥",
    "GPU0",
    "NV18",
    "X",
    "SYS",
    "NIC0",
    "mlx5_0",
    "<system>",
    "</system>",
    "<!--",
    "<!DOCTYPE x>",
    "NCCL INFO",
    "NCCL WARN",
    "#  Rank",
)

#: Characters whose long runs make badly written regexes quadratic.
RUN_PIECES = (" ", "\t", "\n", " \n", "0", "a", "|", "<", "=", ":", ",", ".", "GPU0", "NV1 ")


@st.composite
def mutated(draw: st.DrawFn, text: str, max_edits: int = 4, runs: bool = True) -> str:
    """``text`` with a few line and character edits: the shapes real pastes break in."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, max_edits))):
        op = draw(
            st.sampled_from(
                (
                    "delete",
                    "duplicate",
                    "swap",
                    "truncate",
                    "token",
                    "number",
                    "char",
                    "indent",
                    "run",
                )
                if runs
                else ("delete", "duplicate", "swap", "truncate", "token", "number", "char")
            )
        )
        if not lines:
            lines = [""]
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "truncate":
            cut = draw(st.integers(0, len(line)))
            lines = [*lines[:i], line[:cut]]
        elif op == "token":
            at = draw(st.integers(0, len(line)))
            token = draw(st.sampled_from(HOSTILE_TOKENS))
            lines[i] = line[:at] + token + line[at:]
        elif op == "number":
            numbers = list(re.finditer(r"\d+(?:\.\d+)?", line))
            token = draw(st.sampled_from(HOSTILE_TOKENS[28:56]))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                lines[i] = line[: m.start()] + token + line[m.end() :]
            else:
                lines[i] = line + " " + token
        elif op == "char":
            if line:
                at = draw(st.integers(0, len(line) - 1))
                char = draw(st.characters(blacklist_categories=("Cs",)))
                lines[i] = line[:at] + char + line[at + 1 :]
        elif op == "indent":
            lines[i] = draw(st.sampled_from(("", " ", "  ", "\t", "    "))) + line.lstrip()
        elif op == "run":
            piece = draw(st.sampled_from(RUN_PIECES))
            run = piece * (draw(st.sampled_from((2_000, 20_000))) // len(piece))
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + run + line[at:]
    return "\n".join(lines)


def finite_or_not() -> st.SearchStrategy[float]:
    """Floats including NaN, infinities, zero, negatives, tiny and huge."""
    return st.one_of(
        st.sampled_from((math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1e-300, 1e300)),
        st.floats(allow_nan=True, allow_infinity=True),
    )


def hostile_scalars() -> st.SearchStrategy[Any]:
    """YAML scalars of every wrong type and range."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from((0, -1, 1, 2, 3, 8, 10**12, 2**63, -(2**63), 10**30, 10**400)),
        finite_or_not(),
        st.text(max_size=12),
        st.sampled_from(("", " ", "💥", "\x00", "h100-sxm", "ib-ndr", "nvlink4", "1e309")),
    )


def hostile_values() -> st.SearchStrategy[Any]:
    """Scalars, lists and mappings of them (one level deep)."""
    scalars = hostile_scalars()
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=4),
        st.dictionaries(st.text(max_size=6), scalars, max_size=3),
    )


def small_counts() -> st.SearchStrategy[Any]:
    """Counts a real spec uses, or one that is wrong (zero, negative, huge, not a number)."""
    return st.one_of(
        st.integers(1, 8), st.sampled_from((0, -1, 64, 10**6, 10**12)), hostile_values()
    )


def to_yaml(data: Any) -> str:
    """Dump generated data the way a person would write it (``safe_dump``; NaN as .nan)."""
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10**6)
