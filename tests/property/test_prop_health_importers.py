"""State, counter and Slurm importers under hypothesis: damaged real samples parse or raise a
one-line ParseError (never another exception), fast; ``import FILE`` without a format keeps
the CLI contract; long runs of blanks and brackets are read in linear time."""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import pytest
from _property import check_contract, mutated, run_cli
from hypothesis import given
from hypothesis import strategies as st

from fabricui.importers.builtin import builtin_importers
from fabricui.importers.common import ParseError

HEALTH = Path(__file__).resolve().parents[1] / "data" / "health"
#: Format -> its samples (the 73 KB nvidia-smi -q and 31 KB sacct are cut to their first
#: 200 lines: hypothesis edits lines, not sizes).
SAMPLES: dict[str, list[str]] = {}
for _path in sorted(HEALTH.rglob("*.txt")):
    _text = "\n".join(_path.read_text(encoding="utf-8").split("\n")[2:202])
    _name = _path.name
    _fmt = {
        "ibdiagnet": "ibdiagnet",
        "ibstat": "ibstat",
        "ibv_devinfo": "ibstat",
        "ibswinfo": "ibswinfo",
        "mlxlink": "mlxlink",
        "perfquery": "perfquery",
        "dcgmi_diag": "dcgmi-diag",
        "dcgmi_nvlink": "nvlink",
        "fabricmanager": "fabric-manager",
        "h100_pcie": "nvlink",
        "nvidia_smi_nvlink": "nvlink",
        "nvidia_smi_q": "nvidia-smi-q",
        "rdma_link": "rdma-link",
        "show_gids": "show-gids",
        "psnode": "sinfo",
        "sinfo": "sinfo",
        "sacct": "sacct",
        "scontrol_show_node": "scontrol-node",
        "squeue": "squeue",
    }
    _key = next(k for k in sorted(_fmt, key=len, reverse=True) if _name.startswith(k))
    SAMPLES.setdefault(_fmt[_key], []).append(_text)
FORMATS = sorted(SAMPLES)


@st.composite
def pastes(draw: st.DrawFn) -> tuple[str, str]:
    """(format, a real sample of it with a few edits)."""
    fmt = draw(st.sampled_from(FORMATS))
    return fmt, draw(mutated(draw(st.sampled_from(SAMPLES[fmt]))))


@given(paste=pastes())
def test_damaged_samples_parse_or_fail_in_one_line(paste: tuple[str, str]) -> None:
    """The parser returns a result with JSON and a summary, or a one-line ParseError."""
    fmt, text = paste
    started = time.perf_counter()
    try:
        result = builtin_importers()[fmt](text)
    except ParseError as exc:
        assert exc.message and "\n" not in exc.message
        return
    assert isinstance(result.summary(), str)
    assert isinstance(result.to_json(), dict)
    assert all("\n" not in w for w in result.warnings)
    assert time.perf_counter() - started < 2.0


@given(paste=pastes(), as_json=st.booleans())
def test_cli_without_a_format(paste: tuple[str, str], as_json: bool) -> None:
    """``fabricui import FILE [--json]`` on a damaged paste: output, or exit 2 in one line."""
    _, text = paste
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paste.txt"
        path.write_text(text, encoding="utf-8")
        argv = ["import", str(path)] + (["--json"] if as_json else [])
        check_contract(run_cli(argv), json_out=as_json)


@pytest.mark.parametrize("fmt", FORMATS)
def test_long_runs_are_read_in_linear_time(fmt: str) -> None:
    """Long runs of blanks, pipes, brackets and colons in one line (and many short lines)
    are answered within a second by every importer (quadratic reading would take minutes)."""
    parse = builtin_importers()[fmt]
    hostile = [
        "x" + " " * 50_000 + "y",
        "|" + " |" * 50_000,
        "[" * 50_000 + "link 0/1 state " + "=" * 50_000,
        "GPU 0: x\n" + "Link 1: " + " " * 50_000 + "GB/s\n",
        "State : " + " " * 50_000 + "x\n",
        "part number | " + " " * 50_000 + "x\n",
        "# Port counters: " + " " * 50_000 + "\n",
        "NodeName=a " + "State=" * 20_000,
        ("JOBID ST NODELIST\n" + "1 R n[1-2]\n" * 5_000),
        ("GPU 0: x\n" + "Link 1: 25 GB/s\n" * 5_000),
    ]
    for text in hostile:
        started = time.perf_counter()
        with contextlib.suppress(ParseError):
            parse(text)
        assert time.perf_counter() - started < 1.5, (fmt, text[:40])
