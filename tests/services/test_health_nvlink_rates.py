"""NVLinks that run below their rate (``nvidia-smi nvlink -s`` prints each link's): a
GPU's scale-up bandwidth is the sum of its links' rates over the nominal, and it is
labelled degraded, not merely erroring."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui import api
from fabricui.fabric.health import GpuLinkCondition, apply_health, health_of
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric


def _nvlink(path: Path, slow: dict[tuple[int, int], str]) -> str:
    """``nvidia-smi nvlink -s`` of a DGX A100 (12 links at 25 GB/s a GPU), links in
    ``slow`` ((gpu, link) -> rate text) as given."""
    lines = []
    for gpu in range(8):
        lines.append(f"GPU {gpu}: NVIDIA A100-SXM4-80GB (UUID: GPU-{gpu:08d}-0000-0000-0000)")
        lines += [f"\t Link {k}: {slow.get((gpu, k), '25 GB/s')}" for k in range(12)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def dgx(catalog):
    """One DGX A100: 300 GB/s of NVLink a GPU."""
    return load_fabric(TopologyRequest("dgx-a100"), catalog)


def test_a_link_at_half_rate_costs_half_a_link(catalog, dgx, tmp_path):
    """GPU 4's link 0 at 12.5 of 25 GB/s: GPU 4 keeps 287.5 of 300 GB/s, labelled
    degraded; a path between two other GPUs keeps 300."""
    health = (_nvlink(tmp_path / "n0.txt", {(4, 0): "12.5 GB/s"}),)
    fabric = load_fabric(TopologyRequest("dgx-a100", health=health), catalog)
    overlay = health_of(fabric)
    assert overlay is not None
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("degraded", "n0.g4 NVLinks (12 of 12 active, 287.5 of 300 GB/s)")
    ]
    assert overlay.changes[0].factor == pytest.approx(287.5 / 300)
    assert api.path(fabric, "n0.g4", "n0.g5", None).bottleneck_GBps == pytest.approx(287.5)
    assert api.path(fabric, "n0.g1", "n0.g5", None).bottleneck_GBps == pytest.approx(300.0)


def test_links_at_their_rate_change_nothing(catalog, tmp_path):
    """Every link at 25 GB/s: no change."""
    health = (_nvlink(tmp_path / "n0.txt", {}),)
    overlay = health_of(load_fabric(TopologyRequest("dgx-a100", health=health), catalog))
    assert overlay is not None and overlay.changes == () and overlay.unmatched == ()


def test_inactive_and_slow_links_add_up(catalog, tmp_path):
    """GPU 2: 6 links inactive and 2 at 12.5 GB/s: (4 * 25 + 2 * 12.5) / 300 kept."""
    slow = {(2, k): "<inactive>" for k in range(6)}
    slow.update({(2, 6): "12.5 GB/s", (2, 7): "12.5 GB/s"})
    health = (_nvlink(tmp_path / "n0.txt", slow),)
    overlay = health_of(load_fabric(TopologyRequest("dgx-a100", health=health), catalog))
    assert overlay is not None
    assert [(c.kind, round(c.factor, 4)) for c in overlay.changes] == [
        ("degraded", round(125 / 300, 4))
    ]


def test_every_link_at_half_rate_halves_the_gpu(dgx):
    """The condition itself: 12 links at 100 Gb/s (12.5 GB/s) keep half of 300 GB/s."""
    condition = GpuLinkCondition(None, 0, 0, 12, rates_gbps=(100.0,) * 12, source="t")
    overlay = apply_health(dgx, [], [condition])
    assert [(c.kind, c.factor) for c in overlay.changes] == [("degraded", 0.5)]
    assert api.path(overlay.fabric, "n0.g0", "n0.g1", None).bottleneck_GBps == pytest.approx(150.0)
