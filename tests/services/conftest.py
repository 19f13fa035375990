"""Fixtures of the service tests: health files several of them read."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def all_down(tmp_path: Path) -> str:
    """n0's ibstat with its eight InfiniBand ports down (n0 is cut off from the network)."""
    lines = []
    for k in range(8):
        lines += [
            f"CA 'mlx5_{k}'",
            "\tNumber of ports: 1",
            "\tPort 1:",
            "\t\tState: Down",
            "\t\tPhysical state: Disabled",
            "\t\tRate: 400",
            "\t\tLink layer: InfiniBand",
        ]
    path = tmp_path / "n0.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)
