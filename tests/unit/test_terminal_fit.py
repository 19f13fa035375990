"""Text output fitted to the terminal's width (``render.terminal_fit``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from fabricui.render.terminal_fit import FitWriter, fit_line, fitted_width
from fabricui.streams import StreamWrapper


def test_a_line_that_fits_is_kept():
    assert fit_line("short", 80) == ["short"]


def test_prose_wraps_under_its_own_indent():
    """Prose wraps at spaces; continuation lines are indented two more than the line."""
    line = "  exposed comm 35.94 ms of 1.131 s communication; pipeline bubble 10.9% of all"
    lines = fit_line(line, 40)
    assert all(len(part) <= 40 for part in lines)
    assert lines[0].startswith("  exposed") and all(p.startswith("    ") for p in lines[1:])
    assert " ".join(part.strip() for part in lines) == line.strip()


def test_a_table_row_wraps_its_last_cell_under_that_cell():
    row = "ddp   all_reduce  dp  gradient all-reduce of every bucket, overlapped with backward"
    lines = fit_line(row, 50)
    start = row.index("gradient")
    assert lines[0].startswith("ddp   all_reduce  dp  gradient")
    assert all(len(part) <= 50 and part[:start].strip() == "" for part in lines[1:])
    assert " ".join(part.strip() for part in lines).endswith("overlapped with backward")


def test_a_last_cell_starting_too_far_right_goes_below_the_row():
    """The columns before it keep their alignment; the cell follows, indented."""
    row = "tp-sp  all_gather  tp  8  128 MiB  640  228.8 ms  0  ring/simple  activation all-gather"
    lines = fit_line(row, 70)
    assert lines[0] == "tp-sp  all_gather  tp  8  128 MiB  640  228.8 ms  0  ring/simple"
    assert lines[1] == "  activation all-gather"


def test_rows_wider_than_the_terminal_without_their_last_cell_are_left_whole():
    row = "a" * 60 + "  " + "b" * 30 + "  tail"
    assert fit_line(row, 50) == [row]


def test_the_writer_fits_complete_lines_and_flushes_the_rest():
    out = io.StringIO()
    writer = FitWriter(out, 20)
    writer.write("one two three four five six\npartial")
    assert out.getvalue() == "one two three four\n  five six\n"
    writer.flush()
    assert out.getvalue().endswith("partial")


def test_a_command_finds_the_terminal_width_under_other_wrappers():
    """``fitted_width`` sees through the wrappers on stdout (the plugin output router)."""
    fitted = FitWriter(io.StringIO(), 72)
    assert fitted_width(fitted) == 72
    assert fitted_width(StreamWrapper(StreamWrapper(fitted))) == 72
    assert fitted_width(io.StringIO()) is None
    assert fitted_width(StreamWrapper(io.StringIO())) is None


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_the_cli_fits_a_terminal_and_not_a_pipe():
    """``strategies`` on an 80-column terminal prints no line wider than it; piped, its
    header stays one line (scripts see one line per row)."""
    argv = [sys.executable, "-m", "fabricui", "strategies"]
    env = {**os.environ, "COLUMNS": "80"}
    master, slave = os.openpty()
    with subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, env=env) as proc:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=120)
    os.close(master)
    shown = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    assert proc.returncode == 0 and shown
    assert max(len(line) for line in shown) <= 80
    piped = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    assert max(len(line) for line in piped.stdout.splitlines()) > 80


def test_settings_and_urls_stay_whole_to_copy():
    """A line with an environment setting is kept as one line; a URL is never split."""
    setting = "best for 1 GiB to 4 GiB: NCCL_ALGO=allreduce:NVLSTree NCCL_PROTO=allreduce:Simple"
    assert fit_line(setting, 60) == [setting]
    link = "https://github.com/NVIDIA/nccl/blob/5067397c2676d5aed50042fc39e5c8ee96eb0027/x.cc"
    assert [part.strip() for part in fit_line(f"see {link}", 40)] == ["see", link]


def test_prose_that_only_names_a_setting_wraps():
    """A line giving settings (after a label, or two in a row before a caution) stays whole
    to copy; prose that names one in passing wraps at spaces, the setting whole."""
    prose = (
        "         fix: capture the whole log from init through the first collective with"
        " NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH)"
    )
    lines = fit_line(prose, 80)
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)
    assert "NCCL_DEBUG=INFO" in lines[1]
    given = "to route the NICs by hand before the job, set: NCCL_IB_HCA=mlx5_0,mlx5_1"
    assert fit_line(given, 40) == [given]
    passing = "fix: check ibv_devinfo, and do not set NCCL_IB_DISABLE=1 in the job's environment"
    assert fit_line(passing, 40)[-1].split()[-1] == "environment"
    ending = "fix: check ibv_devinfo and the container's devices, and do not set NCCL_IB_DISABLE=1"
    assert len(fit_line(ending, 40)) > 1 and "NCCL_IB_DISABLE=1" in fit_line(ending, 40)[-1]
    caution = "best for 1 MiB: NCCL_ALGO=allreduce:Tree NCCL_PROTO=allreduce:LL128 (caution: x)"
    assert fit_line(caution, 40) == [caution]


@pytest.mark.parametrize("width", [0, 1, 5, 19])
def test_a_terminal_too_narrow_to_wrap_into_gets_lines_as_written(width):
    line = "          " + "word " * 30
    assert fit_line(line, width) == [line]
    assert fit_line("a  b  " + "c " * 40, width) == ["a  b  " + "c " * 40]


def test_a_wide_table_moves_as_few_last_cells_below_as_fit():
    """A row too wide even without its last cell moves its last two below, each row alike."""
    header = "strategy  collective  time      algo         what"
    row = "ddp       all_reduce  206.9 ms  ring/simple  gradient all-reduce, 76 MiB buckets"
    assert fit_line(header, 40) == ["strategy  collective  time", "  algo         what"]
    assert fit_line(row, 40) == [
        "ddp       all_reduce  206.9 ms",
        "  ring/simple  gradient all-reduce, 76",
        "  MiB buckets",
    ]


@pytest.mark.parametrize(
    ("argv", "fitted"),
    [
        (["import", "ibstat.txt"], True),
        (["import", "ibstat.txt", "-o", "node.yaml"], True),
        (["import", "ibstat.txt", "-o", "-"], False),
        (["import", "ibstat.txt", "--json"], False),
        (["probe"], True),
        (["export", "-o", "-"], False),
        (["completion", "bash"], False),
    ],
)
def test_text_for_a_person_is_fitted_and_a_spec_to_copy_is_not(argv, fitted):
    """What ``import`` and ``probe`` report is prose and tables fitted to the terminal; the
    YAML ``import -o -`` prints, JSON, diagrams and scripts are printed as written."""
    from fabricui.cli import _fitted, build_parser

    assert _fitted(build_parser().parse_args(argv)) is fitted
