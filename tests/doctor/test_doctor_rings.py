"""The doctor names the links NCCL's rings cross over every NIC (one ring per channel, as
the engine prices them), and says what each costs: a link with room slows nothing, a link
that carries nothing as it is is named from the rings as built."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricui.fabric.health import GpuLinkCondition, LinkCondition, apply_health
from fabricui.services.doctor_health import job_health
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

#: iblinkinfo of Selene's leaf LG01-05 (rail 5 of the first unit): luna-0001's cable at 1X
#: of 4X, and one of its two cables up to CSPINE1-41 at 1X.
SELENE_LINKS = """\
Switch: 0x0c42a1030060abd0 MF0;LG01-05:MQM8700/U1:
        3179    1[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       5128    1[  ] \
"luna-0001 mlx5_6" ( Could be 4X 50.0 Gbps)
        3179   21[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3185    1[  ] \
"MF0;CSPINE1-41:MQM8700/U1" ( Could be 4X 50.0 Gbps)
"""


def test_a_leaf_uplink_with_room_is_crossed_but_slows_nothing(catalog):
    """On a 64-node fat-tree, one of leaf0's four cables to spine0 at 1X: the rings of a job
    on n0 and n32 (another unit) cross it through leaf0's uplinks, which have room: info,
    ranks and hosts named, rings no slower."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 64), catalog)
    overlay = apply_health(
        fabric, [LinkCondition("leaf0", 33, "spine0", 1, fraction=0.25, source="t")], [], catalog
    )
    ranks = np.r_[np.arange(8), np.arange(256, 264)]
    (finding,) = job_health(overlay.fabric, ranks, built=fabric)
    assert finding.code == "ring-crosses-degraded-link" and finding.severity == "info"
    assert finding.hosts == ("n0", "n32") and finding.ranks == (7, 15)
    assert finding.figures is not None and finding.figures["rings_slowdown"] == 1.0
    assert "does not slow them" in finding.message


def test_a_gpu_whose_nvlinks_are_all_down_is_named_from_the_rings_as_built(catalog):
    """n0.g3 with no NVLink left carries nothing over them: the ranks whose ring flows
    crossed them as built (n0.g2 into it, n0.g3 out of it) are named, with the rings'
    slowdown."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)
    overlay = apply_health(fabric, [], [GpuLinkCondition("n0", 3, 18, 18, source="t")], catalog)
    (finding,) = job_health(overlay.fabric, np.arange(16, dtype=np.int64), built=fabric)
    assert finding.code == "ring-crosses-lost-nvlinks" and finding.severity == "warning"
    assert finding.ranks == (2, 3) and finding.hosts == ("n0",)
    assert "as built" in finding.message
    assert finding.figures is not None and finding.figures["rings_slowdown"] > 2


def test_selene_rail_five_cable_slows_the_job_and_is_named(selene, run_cli, tmp_path):
    """luna-0001's rail-5 cable at 1X: a ring in rank order never leaves luna-0001 by
    mlx5_6, NCCL's channels do. The job luna-[0001-0004] runs its all-reduce at about a
    quarter of its built bus bandwidth, the figure `collective` gives, and the cable is
    what slows it; the leaf's uplink at 1X is not on the job's routes."""
    links = tmp_path / "links.txt"
    links.write_text(SELENE_LINKS)
    job = ("-t", selene, "--hosts", "luna-[0001-0004]", "--health", str(links))
    status, out, err = run_cli("doctor", *job, "--json")
    assert status == 0, err
    health = json.loads(out)["health"]
    status, out, err = run_cli("collective", "all_reduce", "1G", *job, "--json")
    assert status == 0, err
    busbw = json.loads(out)["rows"][0]["busbw_GBps"]
    priced = health["all_reduce"]
    assert priced["as_is"]["busbw_GBps"] == pytest.approx(busbw, rel=1e-3)
    assert priced["as_is"]["busbw_GBps"] < 0.3 * priced["as_built"]["busbw_GBps"]
    slower, cable = health["job"]
    assert slower["code"] == "job-all-reduce-slower"
    assert cable["where"] == "luna-0001.nic4 (luna-0001 mlx5_6) -> LG01-05"
    assert cable["severity"] == "warning" and cable["hosts"] == ["luna-0001", "luna-0004"]
    assert cable["where"] in slower["message"]
