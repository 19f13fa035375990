"""The settings given for each size's best pick, applied, make NCCL's pick that best pick
at that time: over every operation, several releases and fabrics (a property of
``picks.choose``, checked on a fixed grid)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.collectives import OPS, predict
from fabricui.engine.group import Group
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.session import collective_algorithms

SIZES = 2.0 ** np.arange(3, 31, 4)


@pytest.fixture(scope="module")
def fabrics(catalog):
    return {
        name: build_fabric(resolve_topology(name, catalog), catalog)
        for name in ("dgx-h100", "dgx-h100-pod", "dgx-b200")
    }


@pytest.mark.parametrize("version", [(2, 18, 3), (2, 22, 3), (2, 26, 2), (2, 30, 7)])
@pytest.mark.parametrize("topology", ["dgx-h100", "dgx-h100-pod", "dgx-b200"])
def test_the_settings_for_the_best_pick_reproduce_it(fabrics, topology, version):
    algorithms = collective_algorithms()
    fabric = fabrics[topology]
    ranks = np.arange(fabric.n_gpus)
    checked = 0
    for op in OPS:
        first = predict(Group(fabric, ranks, library_version=version), op, SIZES, algorithms)
        choice = first.choice
        for j, env in enumerate(choice.env):
            if not env:
                continue
            group = Group(fabric, ranks, library_version=version, nccl_env=env)
            again = predict(group, op, SIZES[j : j + 1], algorithms).choice.nccl
            best = (choice.best.algorithm[j], choice.best.protocol[j])
            assert (again.algorithm[0], again.protocol[0]) == best, (op, SIZES[j], env)
            assert again.time_us[0] == pytest.approx(choice.best.time_us[j]), (op, SIZES[j])
            checked += 1
    assert checked  # every fabric and release here has sizes where NCCL's pick is not best
