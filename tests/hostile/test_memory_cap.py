"""Under a memory cap (address space limited to 2 GiB, as on a shared login node with
``ulimit -v``), commands over the biggest built-in topologies finish or refuse with one line
(status 2), never a ``MemoryError`` traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _hostile import command, no_traceback, run

resource = pytest.importorskip("resource")

#: The cap [bytes].
CAP = 2 * 2**30

#: A torus as big as the cap allows, of links without a slice limit.
TORUS_800K = Path(__file__).resolve().parents[1] / "data" / "topologies" / "torus-800k.yaml"

#: (arguments, whether they fit under the cap)
CASES = [
    (("path", "-t", "h100-ib-cluster", "--nodes", "1024", "--src", "n0.g0", "--dst",
      "n1023.g7", "--json"), True),
    (("collective", "all_reduce", "-t", "h100-ib-cluster", "--nodes", "1024", "--size", "1G",
      "--json"), True),
    pytest.param(
        # 800,000 chips in a torus (a TPU v5p slice stops at 6,144: direct RoCE links here).
        ("path", "-t", str(TORUS_800K), "--src", "0", "--dst", "100", "--json"),
        True,
        marks=pytest.mark.slow,
    ),
    pytest.param(
        ("path", "-t", "dragonfly-cluster", "--nodes", "250000", "--src", "0", "--dst", "1000"),
        False,
        marks=pytest.mark.slow,
    ),
    pytest.param(
        ("path", "-t", "gb200-nvl72-cluster", "--nodes", "27000", "--src", "n0.g0", "--dst",
         "n26999.g71"),
        False,
        marks=pytest.mark.slow,
    ),
]  # fmt: skip


def cap_memory() -> None:
    """In the child, before exec: limit its address space to ``CAP``."""
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
@pytest.mark.parametrize(
    ("argv", "fits"),
    CASES,
    ids=lambda v: Path(v[v.index("-t") + 1]).stem if isinstance(v, tuple) else str(v),
)
def test_biggest_topologies_under_a_memory_cap(env, argv: tuple[str, ...], fits: bool):
    """Finish with valid output, or refuse with one line that says how to ask for less."""
    try:
        result = run(command(*argv), env, timeout=60, preexec_fn=cap_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"fabricui {' '.join(argv)} still running after 60 s under the cap")
    no_traceback(result)
    if fits:
        assert result.status == 0, result.err
        assert json.loads(result.out)
    else:
        # Refused up front (admission control or the switch radix, each saying how to ask
        # for less), or caught as the one-line out-of-memory error.
        assert result.status == 2
        assert len(result.err_lines) == 1, result.err
        line = result.err_lines[0]
        assert line.startswith("fabricui: error: ")
        assert "fewer" in line
