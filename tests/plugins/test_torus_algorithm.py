"""Torus collectives (ici plugin): bidirectional rings on all dimensions at once,
hand-computed."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.group import Group
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.session import collective_algorithms


def test_torus_rings_bandwidth_by_hand(catalog):
    """16x16x16 chips, ICI 100 GB/s x 0.8 per link. A third of the data per dimension, all
    three at once: at each stage every link carries (15/16) x (data left) x 1/3 x 1/2, and
    data left shrinks 16-fold per stage: a third of reducing x, then y, then z with the
    whole buffer (15/16 x left / 2 per link)."""
    from fabricui_ici.torus import TorusRings

    fabric = build_fabric(resolve_topology("tpu-v5p-torus", catalog), catalog)
    spb, steps = TorusRings()._stages(Group(fabric, np.arange(fabric.n_gpus)))
    capacity = 100 * 0.8 * 1e3  # bytes per us
    expected = sum(15 / 16 * left / 3 * 0.5 / capacity for left in (1, 1 / 16, 1 / 256))
    assert spb == pytest.approx(expected)
    one_axis_at_a_time = sum(15 / 16 * left * 0.5 / capacity for left in (1, 1 / 16, 1 / 256))
    assert one_axis_at_a_time / spb == pytest.approx(3.0)
    assert steps == 3 * 15


def test_torus_all_reduce_uses_it(catalog):
    """On the whole torus, large all-reduces take the dimension rings, not one giant ring."""
    fabric = build_fabric(resolve_topology("tpu-v5p-torus", catalog), catalog)
    pred = evaluate_collective(fabric, "all_reduce", [2.0**30], algorithms=collective_algorithms())
    assert pred.algorithm[0] == "torus/simple"
    ring = evaluate_collective(fabric, "all_reduce", [2.0**30], algo="ring")
    assert pred.time_us[0] < ring.time_us[0]
