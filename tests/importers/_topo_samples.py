"""Where the real-world topology samples live and how to read one as it was published."""

from __future__ import annotations

import os
from pathlib import Path

#: ``tests/data/topo``: the published samples, each with its source line (INDEX.md there);
#: FABRICUI_TOPO_SAMPLES points at another copy.
SAMPLES = Path(
    os.environ.get("FABRICUI_TOPO_SAMPLES", Path(__file__).resolve().parents[1] / "data" / "topo")
)


def listing(folder: str) -> list[str]:
    """File names in one sample folder (empty when the samples are not there)."""
    path = SAMPLES / folder
    return sorted(p.name for p in path.iterdir() if p.is_file()) if path.is_dir() else []


def sample_text(folder: str, name: str) -> str:
    """The sample as published: the ``# source:``/``# machine:`` lines and the blank line
    after them are the collector's notes, not part of the output, and are dropped."""
    lines = (SAMPLES / folder / name).read_text(encoding="utf-8").split("\n")
    start = 0
    while start < len(lines) and lines[start].startswith(("# source:", "# machine:")):
        start += 1
    assert start >= 1 and lines[start] == "", f"{name}: unexpected sample header"
    return "\n".join(lines[start + 1 :])
