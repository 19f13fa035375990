"""``fabricui doctor --health``: the health files' findings with their sources, and on a
topology the ranks and hosts of a job that a degraded link slows."""

from __future__ import annotations

import json
from pathlib import Path

HEALTH = Path(__file__).resolve().parents[1] / "data" / "health"
ONE_X = (
    "CA: n0 mlx5_0:\n"
    "      0x0000000000000101      1    1[  ] ==( 1X        106.25 Gbps Active/  LinkUp)==>"
    '       2   17[  ] "leaf0" ( Could be 4X)\n'
)


def test_health_without_a_log_lists_findings_with_sources(run_cli):
    """The switch's PSU error and the ports' transmit waits, each with its source."""
    status, out, err = run_cli(
        "doctor",
        "--health",
        str(HEALTH / "infiniband/ibswinfo_hdr_quantum_unmanaged_switch_psu1_dc_power_error.txt"),
        "--health",
        str(HEALTH / "infiniband/perfquery_x_edr_switch_two_ports_xmitwait.txt"),
        "--json",
    )
    assert status == 0, err
    findings = json.loads(out)["health"]["findings"]
    assert [f["code"] for f in findings] == ["switch-hardware"] * 2 + ["ib-transmit-wait"] * 2
    assert "error_thresholds" in findings[2]["source"]


def test_fail_on_warning_for_ci(run_cli):
    """--fail-on warning exits 1 when a health file shows a warning."""
    status, _, _ = run_cli(
        "doctor",
        "--health",
        str(HEALTH / "infiniband/ibstat_cx3_mlx4_port1_ib_down_polling_port2_eth_disabled.txt"),
        "--fail-on",
        "warning",
    )
    assert status == 1


def test_job_ranks_and_hosts_on_the_degraded_link(run_cli, tmp_path):
    """On 2 DGX H100 nodes, the ring's flows that cross n0.nic0 (1X of 4X) are named: rank
    7 (n0.g7 sends through n0.nic0 by PXN) and rank 15 (n1.g7 to n0.g0)."""
    path = tmp_path / "links.txt"
    path.write_text(ONE_X)
    status, out, err = run_cli(
        "doctor", "--health", str(path), "-t", "h100-ib-cluster", "--nodes", "2", "--json"
    )
    assert status == 0, err
    (job,) = json.loads(out)["health"]["job"]
    assert job["code"] == "ring-crosses-degraded-link"
    assert job["ranks"] == [7, 15] and job["hosts"] == ["n0", "n1"]
    assert "25%" in job["message"]


def test_no_log_and_no_health_is_one_line(run_cli):
    """The doctor needs something to read."""
    status, _, err = run_cli("doctor")
    assert status == 2 and "--health FILE" in err
