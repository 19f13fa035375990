"""The switch-level fabric samples in ``tests/data/fabric`` and how to read one as published."""

from __future__ import annotations

from pathlib import Path

#: The copied samples (each file: two collector header lines, then the output as published).
FABRIC = Path(__file__).resolve().parents[1] / "data" / "fabric"


def sample_names() -> list[str]:
    """Every sample, as a path relative to ``FABRIC`` (``ibnetdiscover/x.txt``)."""
    return sorted(str(p.relative_to(FABRIC)) for p in FABRIC.rglob("*.txt"))


def fabric_sample(name: str) -> str:
    """A sample without its ``# source:``/``# machine:`` header lines."""
    lines = (FABRIC / name).read_text(encoding="utf-8").split("\n")
    assert lines[0].startswith("# source:") and lines[1].startswith("# machine:"), name
    return "\n".join(lines[2:])
