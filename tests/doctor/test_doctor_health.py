"""``fabricui doctor --health``: the health files' findings with their sources, and on a
topology the ranks and hosts of a job that a degraded link slows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    """On 2 DGX H100 nodes, the rings' flows that cross n0.nic0 (1X of 4X) are named: rank
    7 (n0.g7 sends through n0.nic0 by PXN) and rank 15 (n1.g7 to n0.g0); the all-reduce's
    slowdown comes first and names the link."""
    path = tmp_path / "links.txt"
    path.write_text(ONE_X)
    status, out, err = run_cli(
        "doctor", "--health", str(path), "-t", "h100-ib-cluster", "--nodes", "2", "--json"
    )
    assert status == 0, err
    slower, job = json.loads(out)["health"]["job"]
    assert slower["code"] == "job-all-reduce-slower"
    assert "n0.nic0 (n0 mlx5_0) -> leaf0" in slower["message"]
    assert job["code"] == "ring-crosses-degraded-link" and job["severity"] == "warning"
    assert job["ranks"] == [7, 15] and job["hosts"] == ["n0", "n1"]
    assert "25%" in job["message"]


def _busbw(run_cli, *argv: str) -> float:
    """NCCL's pick's bus bandwidth of a 1 GiB all-reduce, as `collective --json` says."""
    status, out, err = run_cli("collective", "all_reduce", "1G", *argv, "--json")
    assert status == 0, err
    return float(json.loads(out)["rows"][0]["busbw_GBps"])


def test_a_nic_off_the_rank_order_ring_agrees_with_collective(run_cli, tmp_path):
    """n0's fifth NIC (mlx5_4, leaf4) at 1X: a ring in rank order never leaves a node by
    it, NCCL's channels do (one per NIC). The doctor's all-reduce figures are collective's,
    as it is and as built, and the link is named with the ranks that cross it."""
    path = tmp_path / "links.txt"
    path.write_text(ONE_X.replace("mlx5_0", "mlx5_4").replace('"leaf0"', '"leaf4"'))
    topology = ("-t", "h100-ib-cluster", "--nodes", "2")
    status, out, err = run_cli("doctor", "--health", str(path), *topology, "--json")
    assert status == 0, err
    health = json.loads(out)["health"]
    priced = health["all_reduce"]
    as_is = _busbw(run_cli, *topology, "--health", str(path))
    as_built = _busbw(run_cli, *topology)
    assert priced["as_is"]["busbw_GBps"] == pytest.approx(as_is, rel=1e-3)
    assert priced["as_built"]["busbw_GBps"] == pytest.approx(as_built, rel=1e-3)
    assert as_is < 0.5 * as_built and priced["slowdown"] > 2
    slower, link = health["job"]
    assert slower["figures"]["as_is"]["busbw_GBps"] == priced["as_is"]["busbw_GBps"]
    assert link["where"] == "n0.nic4 (n0 mlx5_4) -> leaf4" and link["hosts"] == ["n0", "n1"]
    assert link["ranks"] == [3, 11] and link["figures"]["rings_slowdown"] > 3


def test_text_report_prices_the_job_before_the_findings(run_cli, tmp_path):
    """The text report says the all-reduce as it is and as built in one line."""
    path = tmp_path / "links.txt"
    path.write_text(ONE_X)
    status, out, err = run_cli(
        "doctor", "--health", str(path), "-t", "h100-ib-cluster", "--nodes", "2"
    )
    assert status == 0, err
    (line,) = [row for row in out.splitlines() if row.startswith("job: ")]
    assert "GB/s bus bandwidth as it is" in line and "as built" in line
    assert "job-all-reduce-slower: the job's all_reduce of 1 GiB (16 ranks)" in out


def test_no_log_and_no_health_is_one_line(run_cli):
    """The doctor needs something to read."""
    status, _, err = run_cli("doctor")
    assert status == 2 and "--health FILE" in err


#: One host's ibstat whose rate the importer cannot read: a warning about the file.
UNREADABLE_RATE = (
    "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n\t\tRate: 2OO\n\t\tLink layer: InfiniBand\n"
)
H200_TUNING = HEALTH.parent / "nccl_tuning" / "h200_8gpu_nccl_2_30_4_tuning.log"


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("-t", "h100-ib-cluster", "--nodes", "2"),
        (str(H200_TUNING), "-t", "hgx-h200"),
    ],
    ids=["files", "topology", "log"],
)
def test_the_files_warnings_are_printed_once(run_cli, tmp_path, argv):
    """The report on stdout says the file's warning; stderr does not say it again (what
    --health changed still goes there)."""
    path = tmp_path / "n0.txt"
    path.write_text(UNREADABLE_RATE)
    status, out, err = run_cli("doctor", *argv, "--health", str(path))
    assert status == 0, err
    said = f"{path}: line 7: Rate '2OO' is not a rate in Gb/s"
    assert out.count(said) == 1 and f"warning: {said}" in out
    assert said not in err
    if "-t" in argv:
        assert "fabricui: as it is: no change" in err


def test_json_keeps_the_warnings_as_path_json_does(run_cli, tmp_path):
    """``--json`` carries the warning in ``health.warnings`` and stderr says it beside what
    --health changed, as ``path --json`` does."""
    path = tmp_path / "n0.txt"
    path.write_text(UNREADABLE_RATE)
    said = f"fabricui: warning: {path}: line 7: Rate '2OO' is not a rate in Gb/s"
    topology = ("-t", "h100-ib-cluster", "--nodes", "2")
    status, out, err = run_cli("doctor", *topology, "--health", str(path), "--json")
    assert status == 0, err
    assert [w for w in json.loads(out)["health"]["warnings"] if "Rate '2OO'" in w]
    assert err.count(said) == 1
    status, out, path_err = run_cli(
        "path", *topology, "n0.g0", "n1.g0", "--health", str(path), "--json"
    )
    assert status == 0, path_err
    assert [w for w in json.loads(out)["health"]["warnings"] if "Rate '2OO'" in w]
    assert path_err.count(said) == 1


def test_a_log_on_a_topology_reads_the_health_files_once(run_cli, tmp_path, monkeypatch):
    """The fabric check and the health part price one fabric as it is: its files are read
    and overlaid once (the as-built fabric beside it reads none)."""
    import fabricui.services.health as health

    reads: list[tuple[str, ...]] = []
    real = health.read_health

    def counted(paths, *rest, **kwargs):
        reads.append(tuple(str(p) for p in paths))
        return real(paths, *rest, **kwargs)

    monkeypatch.setattr(health, "read_health", counted)
    path = tmp_path / "n0.txt"
    path.write_text(UNREADABLE_RATE)
    status, out, err = run_cli("doctor", str(H200_TUNING), "-t", "hgx-h200", "--health", str(path))
    assert status == 0, err
    assert reads == [(str(path),)]
    assert err.count("fabricui: as it is: no change") == 1
