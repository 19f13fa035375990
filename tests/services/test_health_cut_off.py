"""A host whose every NIC cable is down is cut off from the network: the fabric is still
priced (its GPUs reach their own node), what needs it says so in one line after what
``--health`` changed, and the doctor names it for a job on it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.routing import Router
from fabricui.fabric.health import LinkCondition, apply_health
from fabricui.services.doctor_health import job_health
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

CUT_OFF = (
    "n0 is cut off from the network: every NIC cable is down, so its GPUs reach only their own node"
)


@pytest.fixture(scope="module")
def overlay(catalog):
    """3 DGX H100 nodes on NDR, every NIC cable of n0 down."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 3), catalog)
    down = [
        LinkCondition(f"n0 mlx5_{k}", 1, f"leaf{k}", 1, state="down", source="t") for k in range(8)
    ]
    return apply_health(fabric, down, [], catalog)


def test_the_host_is_named_cut_off_and_the_rest_is_priced(overlay):
    """n0 is cut off (said once); its GPUs still reach each other over NVLink and n1
    reaches n2 over the network."""
    assert overlay.cut_off == (0,)
    assert overlay.warnings == (CUT_OFF,)
    fabric = overlay.fabric
    assert api.path(fabric, "n0.g0", "n0.g1", None).bottleneck_GBps > 0
    assert api.path(fabric, "n1.g0", "n2.g0", None).bottleneck_GBps == pytest.approx(50.0)


def test_the_explorer_starts_on_hosts_still_on_the_network(overlay, catalog):
    """The first path shown runs between GPUs of hosts that are still cabled."""
    fabric = overlay.fabric
    data = LoadedFabric(catalog, fabric.spec, fabric, Router(fabric), TopologyRequest("x"))
    src, dst = data.default_pair()
    g = fabric.gpus_per_node
    assert (src // g, dst // g) == (1, 2)


def test_the_job_on_it_is_told_in_one_finding(overlay):
    """A ring over all 24 GPUs: one error names n0 and the two ring flows that cannot
    run; the rest of the ring is routed (no exception)."""
    findings = job_health(overlay.fabric, np.arange(24, dtype=np.int64))
    cut = [f for f in findings if f.code == "host-lost-a-nic-cable"]
    assert len(cut) == 1 and cut[0].severity == "error" and cut[0].hosts == ("n0",)
    assert "cut off from the network" in cut[0].message and "2 flow(s)" in cut[0].message
    assert cut[0].ranks == tuple(range(8))


def test_a_path_that_needs_the_host_is_one_line_after_the_changes(run_cli, all_down):
    """path n0.g0 -> n1.g0: what --health changed, the cut-off line, then one error."""
    status, _, err = run_cli(
        "path", "-t", "h100-ib-cluster", "--nodes", "2", "--health", all_down, "n0.g0", "n1.g0"
    )
    lines = err.strip().splitlines()
    assert status == 2
    assert lines[0] == "fabricui: as it is: 8 down"
    assert f"fabricui: warning: {CUT_OFF}" in lines
    assert lines[-1].startswith("fabricui: error: h100-ib-cluster: NIC n0.nic")
    assert sum(1 for line in lines if "error" in line) == 1


def test_doctor_names_the_host_instead_of_failing(run_cli, all_down):
    """doctor --health on the topology: status 0 with a host-lost-a-nic-cable error."""
    status, out, err = run_cli(
        "doctor", "--health", all_down, "-t", "h100-ib-cluster", "--nodes", "2", "--json"
    )
    assert status == 0, err
    job = json.loads(out)["health"]["job"]
    assert [(f["code"], f["hosts"]) for f in job] == [("host-lost-a-nic-cable", ["n0"])]


def test_snapshot_topology_draws_the_rest(run_cli, all_down, tmp_path):
    """snapshot topology with n0 cut off is written, not refused."""
    out = tmp_path / "t.svg"
    status, _, err = run_cli(
        "snapshot",
        "topology",
        "-t",
        "h100-ib-cluster",
        "--nodes",
        "2",
        "--health",
        all_down,
        "-o",
        str(out),
    )
    assert status == 0, err
    assert out.stat().st_size > 0


def test_path_json_keeps_the_cut_off_warning_beside_the_files(run_cli, all_down):
    """``health.warnings`` of ``path --json`` holds the overlay's warnings (the host cut off)
    as well as the files' (none here)."""
    status, out, _ = run_cli(
        "path",
        "-t",
        "h100-ib-cluster",
        "--nodes",
        "3",
        "--health",
        all_down,
        "n1.g0",
        "n2.g0",
        "--json",
    )
    assert status == 0
    assert json.loads(out)["health"]["warnings"] == [CUT_OFF]
