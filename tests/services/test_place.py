"""``fabricui place N``: free hosts whose traffic stays lowest in the tree, on Selene's real
fabric (ibnetdiscover of the DGX A100 SuperPOD: 20-host scalable units, one leaf per rail)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.services.place import PlaceRequest, place
from fabricui.services.requests import TopologyRequest

SINFO = Path(__file__).resolve().parents[1] / "data" / "health" / "slurm"


def test_place_4_stays_below_the_leaves(selene, run_cli):
    """4 hosts of one scalable unit: every rail's ports on one leaf, max_tier 1; the pick is
    the smallest unit that holds them (best fit) and is priced against a random pick."""
    status, out, err = run_cli("place", "4", "-t", selene, "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["max_tier"] == 1 and len(data["hosts"]) == 4
    assert len(data["leaves"]) == 8 and data["spines"] == []
    assert data["price"]["ops"]["all_reduce"]["gpus"] == 32
    assert data["price"]["random_pick"]["max_tier"] >= 2


def test_place_200_climbs_to_the_spines(selene, catalog):
    """200 hosts are more than a unit holds (20): the traffic crosses spines or cores."""
    result = place(PlaceRequest(TopologyRequest(selene), 200, price=False), catalog)
    assert result.max_tier >= 2 and len(result.hosts) == 200
    assert len(set(result.hosts)) == 200


def test_place_20_fills_a_whole_unit(selene, catalog):
    """20 hosts fit one full unit (luna-0001..0020): tier 1 rather than two half units."""
    result = place(PlaceRequest(TopologyRequest(selene), 20, price=False), catalog)
    assert result.max_tier == 1 and len(result.hosts) == 20 and len(result.leaves) == 8


def test_free_hostlist_and_too_many(selene, catalog):
    """--free as a hostlist limits the choice; asking for more than are free is one line."""
    result = place(
        PlaceRequest(TopologyRequest(selene), 2, free="luna-[0001,0021,0022]", price=False), catalog
    )
    assert result.hosts == ("luna-0021", "luna-0022") and result.max_tier == 1
    from fabricui.errors import ConfigError

    with pytest.raises(ConfigError, match="4 host.*3 free"):
        place(PlaceRequest(TopologyRequest(selene), 4, free="luna-[0001,0021,0022]"), catalog)


def test_degraded_cable_keeps_its_host_out(selene, catalog, tmp_path):
    """A host whose NIC cable trained at 1X is left out of the pick (health overlay)."""
    health = tmp_path / "luna.txt"
    health.write_text(
        "CA: luna-0001 mlx5_0:\n"
        "      0x0000000000000101      1    1[  ] ==( 1X        53.125 Gbps Active/  LinkUp)==>"
        '       2   17[  ] "LG01-01" ( Could be 4X)\n'
    )
    request = PlaceRequest(
        TopologyRequest(selene, health=(str(health),)),
        2,
        free="luna-[0001-0003]",
        price=False,
    )
    result = place(request, catalog)
    assert result.hosts == ("luna-0002", "luna-0003")
    assert result.left_out["link degraded"] == ["luna-0001"]


def test_sinfo_output_names_the_free_nodes(selene, catalog, tmp_path):
    """A sinfo output as --free: only idle nodes that are not drained count."""
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text(
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "batch*       up   infinite      3   idle luna-[0001-0003]\n"
        "batch*       up   infinite      2  drain luna-[0004-0005]\n"
        "batch*       up   infinite      1  alloc luna-0006\n"
    )
    result = place(PlaceRequest(TopologyRequest(selene), 3, free=str(sinfo), price=False), catalog)
    assert result.hosts == ("luna-0001", "luna-0002", "luna-0003") and result.free == 3


def test_a_generated_topologys_hosts_are_placed_by_their_gpu_names(catalog):
    """A reference topology's hosts are n0, n1 ... as its GPUs are named: two of them fit
    under the pod's leaves."""
    result = place(PlaceRequest(TopologyRequest("dgx-h100-pod"), 2, price=False), catalog)
    assert (result.hosts, result.max_tier) == (("n0", "n1"), 1)


def test_a_torus_or_dragonfly_is_not_placed_by_fat_tree_tiers(catalog):
    """Placement ranks hosts by leaf, spine and core: a torus has none, so it says so."""
    from fabricui.errors import ConfigError

    with pytest.raises(ConfigError, match="tpu-v5p-torus's network is a torus: not modelled"):
        place(PlaceRequest(TopologyRequest("tpu-v5p-torus"), 2, price=False), catalog)


TINY = """\
id: tiny
description: "4 DGX A100 on two leaves, one cable each up to one spine"
gpu: a100-sxm4-80gb
nodes: 4
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, link: nvlink3, pcie_switches: 4, sockets: 2}
net: {link: ib-hdr, gbps: 200, nics_per_node: 1, layout: explicit}
cluster:
  hosts_per_node: 1
  switches: [L1 leaf, L2 leaf, S1 spine]
  cables: [L1 S1 1 200, L2 S1 1 200]
  hosts: [h1 L1, h2 L1, h3 L2, h4 L2]
"""


def test_a_running_job_on_the_same_uplinks_halves_the_ring(catalog, tmp_path):
    """Job 7 on h1 and h3 and a pick of h2 and h4 both cross L1-S1 and L2-S1: the pick's
    slowest ring flow (one 200 Gb/s cable at 92% efficiency: 23 GB/s) halves while both run
    (max-min fair on the shared cables)."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY)
    jobs = tmp_path / "squeue.txt"
    jobs.write_text("JOBID ST NODELIST\n7 R h[1,3]\n")
    result = place(PlaceRequest(TopologyRequest(str(spec)), 2, jobs=str(jobs)), catalog)
    assert result.hosts == ("h2", "h4") and result.max_tier == 2
    (shared,) = result.shared
    assert shared["id"] == "7" and shared["links"] == 4
    assert shared["together_GBps"] == pytest.approx(shared["alone_GBps"] / 2)
    assert result.left_out["running jobs"] == ["h1", "h3"]
