"""State, counter and Slurm formats as their tools print them (from the tools' sources and
manual pages), beyond the shared samples: each variant a site is likely to paste."""

from __future__ import annotations

import json

import pytest

from fabricui.importers import (
    dcgmi_diag,
    ethtool_stats,
    iblinkinfo,
    ibqueryerrors,
    nvlink_state,
    perfquery,
    rdma_link,
    slurm_jobs,
    slurm_nodes,
)
from fabricui.importers.common import ParseError, clean_text, detect
from fabricui.services.health import findings_of


def test_iblinkinfo_ports_that_are_not_links_are_listed():
    """Ten switch ports Down/Polling (no peer) and one Active link trained at 1X of 4X: the
    fabric keeps its one cable; ``ports`` lists the ten and the degraded one."""
    lines = ["Switch: 0x0002c90300000001 leaf01:"]
    lines.append(
        "           1    1[  ] ==( 1X          25.78125 Gbps Active/  LinkUp)==>       2    3[  ]"
        ' "node01 mlx5_0" ( Could be 4X)'
    )
    for port in range(2, 12):
        down = "==(                Down/ Polling)==>"
        lines.append(f'           1   {port:2d}[  ] {down}             [  ] "" ( )')
    text = "\n".join(lines) + "\n"
    assert detect(clean_text(text)) == "iblinkinfo"
    graph = iblinkinfo.parse(text)
    data = json.loads(json.dumps(graph.to_json()))
    assert len(data["links"]) == 1
    polling = [p for p in data["ports"] if p["state"] == "polling"]
    assert [p["port"] for p in polling] == list(range(2, 12))
    assert all(p["device"] == "leaf01" and not p["degraded"] for p in polling)
    (degraded,) = [p for p in data["ports"] if p["degraded"]]
    assert degraded["width"] == "1X" and degraded["could_be"] == "4X"
    assert degraded["peer"] == "node01 mlx5_0" and degraded["peer_port"] == 3
    assert "ports that are not links: 10 polling" in graph.summary()


IBQUERYERRORS = (
    'Errors for 0x0002c903004b7e40 "SwitchIB Mellanox Technologies"\n'
    "   GUID 0x2c903004b7e40 port 12: [SymbolErrorCounter == 65535]"
    " [LinkErrorRecoveryCounter == 12] [PortXmitWait == 982734 (982.734K)]\n"
    "       Link info:      5   12[  ] ==( 4X       25.78125 Gbps Active/  LinkUp)==>"
    '  0x0002c903004b7e41     9    1[  ] "node07 mlx5_0" ( )\n'
    'Errors for "node07 mlx5_0"\n'
    "   GUID 0x2c903004b7e41 port 1: [PortRcvErrors == 14]\n\n"
    "## Summary: 45 nodes checked, 2 bad nodes found\n"
    "##          1248 ports checked, 2 ports have errors beyond threshold\n"
)


def test_ibqueryerrors_counters_link_info_and_findings():
    """Per-port counters, the Link info's state and peer, the summary; a SymbolErrorCounter
    at 65535 is saturated as well as over its threshold."""
    assert detect(clean_text(IBQUERYERRORS)) == "ibqueryerrors"
    report = ibqueryerrors.parse(IBQUERYERRORS)
    switch, host = report.ports
    # A switch whose description is no name is named by GUID id, as ibnetdiscover names it.
    assert switch.device == "S-0002c903004b7e40" and switch.port == 12
    assert switch.counters == {
        "SymbolErrorCounter": 65535,
        "LinkErrorRecoveryCounter": 12,
        "PortXmitWait": 982734,
    }
    assert switch.state == "up" and switch.rate_gbps == 100.0  # 4X EDR
    assert switch.peer == "node07 mlx5_0" and switch.peer_port == 1
    assert host.counters == {"PortRcvErrors": 14}
    assert report.extra == {"nodes_checked": 45, "bad_nodes": 2}
    codes = {(f.code, f.severity) for f in findings_of(report, "ibqueryerrors")}
    assert codes == {
        ("counter-saturated", "warning"),
        ("ib-symbol-errors", "warning"),
        ("ib-link-error-recovery", "warning"),
        ("ib-transmit-wait", "info"),
        ("ib-receive-errors", "warning"),
    }


def test_perfquery_plain_counters_without_header():
    """A plain perfquery record whose header was cut: read from its PortSelect line."""
    text = "PortSelect:......................3\nSymbolErrorCounter:..............42\n"
    report = perfquery.parse(text)
    (port,) = report.ports
    assert port.port == 3 and port.counters == {"SymbolErrorCounter": 42}
    assert any("header" in w for w in report.warnings)


def test_nvidia_smi_nvlink_status_with_inactive_links_and_error_counters():
    """-s with two links <inactive> (the GPU keeps 10 of 12), then -e counters."""
    text = (
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n"
        + "".join(f"\t Link {i}: 25 GB/s\n" for i in range(10))
        + "\t Link 10: <inactive>\n\t Link 11: <inactive>\n"
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n"
        "\t Link 0: Replay Errors: 3\n\t Link 0: Recovery Errors: 1\n\t Link 0: CRC Errors: 0\n"
    )
    assert detect(clean_text(text)) == "nvlink"
    report = nvlink_state.parse(text)
    states = [p.state for p in report.ports]
    assert states.count("up") == 10 and states.count("inactive") == 2
    assert report.ports[0].counters == {"Replay Errors": 3, "Recovery Errors": 1, "CRC Errors": 0}
    codes = {f.code for f in findings_of(report, "nvlink")}
    assert codes == {"nvlink-inactive", "nvlink-replay-errors", "nvlink-recovery-errors"}


def test_dcgmi_nvlink_error_counts_box():
    """``dcgmi nvlink -e -g 0``: the box of per-link counters."""
    text = (
        "+----------------------------+-------------------------------------+\n"
        "| GPU ID: 0                  | NVLINK Error Counts                 |\n"
        "+============================+=====================================+\n"
        "| Link 0                     | CRC FLIT Error: 0                   |\n"
        "|                            | CRC Data Error: 0                   |\n"
        "|                            | Replay Error: 2                     |\n"
        "|                            | Recovery Error: 0                   |\n"
        "| Link 1                     | CRC FLIT Error: 7                   |\n"
        "+----------------------------+-------------------------------------+\n"
    )
    assert detect(clean_text(text)) == "nvlink"
    report = nvlink_state.parse(text)
    by = {(p.device, p.port): p.counters for p in report.ports}
    assert by[("GPU 0", 0)]["Replay Error"] == 2 and by[("GPU 0", 1)] == {"CRC FLIT Error": 7}


def test_dcgmi_diag_pass_and_fail_rows():
    """A full table: Deployment passes, a memory test fails with its message."""
    text = (
        "+---------------------------+------------------------------------------------+\n"
        "| Diagnostic                | Result                                         |\n"
        "+===========================+================================================+\n"
        "|-----  Deployment  --------+------------------------------------------------|\n"
        "| Denylist                  | Pass                                           |\n"
        "| NVML Library              | Pass                                           |\n"
        "+-----  Hardware  ----------+------------------------------------------------+\n"
        "| GPU Memory                | Fail - GPU: 3                                  |\n"
        "| Warning                   | GPU 3 Error using CUDA API cudaMalloc          |\n"
        "+---------------------------+------------------------------------------------+\n"
    )
    assert detect(clean_text(text)) == "dcgmi-diag"
    report = dcgmi_diag.parse(text)
    bad = [(h.device, h.status, h.detail) for h in report.health if not h.ok]
    assert bad == [
        ("Hardware: GPU Memory", "Fail - GPU: 3", "Warning: GPU 3 Error using CUDA API cudaMalloc")
    ]


def test_ethtool_mlx5_discards_and_pause_storm():
    """``ethtool -S ens1f0np0`` with discards and a pause storm: the port and its findings."""
    text = (
        "$ ethtool -S ens1f0np0\nNIC statistics:\n     rx_packets: 100\n"
        "     rx_discards_phy: 17\n     rx_prio3_pause: 2000\n"
        "     tx_pause_storm_warning_events: 1\n"
    )
    assert detect(clean_text(text)) == "ethtool"
    report = ethtool_stats.parse(text)
    (port,) = report.ports
    assert port.device == "ens1f0np0" and port.counters["rx_discards_phy"] == 17
    codes = {(f.code, f.severity) for f in findings_of(report, "ethtool")}
    assert codes == {
        ("roce-rx-discards", "warning"),
        ("roce-pause-frames", "info"),
        ("roce-pause-storm", "error"),
    }


def test_rdma_link_down_and_json():
    """A RoCE port DOWN/DISABLED in text, and ``rdma -j link`` JSON."""
    text = "link mlx5_1/1 state DOWN physical_state DISABLED netdev ens2f1np1\n"
    (port,) = rdma_link.parse(text).ports
    assert port.state == "disabled" and port.peer == "netdev ens2f1np1"
    js = (
        '[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE",'
        '"physical_state":"LINK_UP","lid":5}]'
    )
    report = rdma_link.parse(js)
    assert report.source == "rdma -j link"
    assert [(p.device, p.port, p.state, p.link_layer) for p in report.ports] == [
        ("mlx5_0", 1, "up", "InfiniBand")
    ]


def test_scontrol_show_job_and_array_task():
    """Running job with a NodeList; a pending array task without one."""
    text = (
        "JobId=1234 JobName=train\n   UserId=ann(1000) GroupId=ann(1000)\n"
        "   JobState=RUNNING Reason=None Dependency=(null)\n   Partition=gpu\n"
        "   NodeList=dgx[001-004]\n   BatchHost=dgx001\n\n"
        "JobId=1301 ArrayJobId=1300 ArrayTaskId=1 JobName=sweep\n"
        "   JobState=PENDING Reason=Priority\n   NodeList=(null)\n"
    )
    assert detect(clean_text(text)) == "scontrol-job"
    jobs = slurm_jobs.parse(text).jobs
    assert [(j.id, j.state, j.nodes, j.reason) for j in jobs] == [
        ("1234", "running", ["dgx001", "dgx002", "dgx003", "dgx004"], None),
        ("1300_1", "pending", [], "Priority"),
    ]
    assert jobs[0].user == "ann" and jobs[0].partition == "gpu"


@pytest.mark.parametrize(
    "text",
    [
        "JobID|JobName|State|NodeList|\n77|train|RUNNING|gpu[01-02]|\n77.batch|batch|RUNNING|gpu01|\n",
        "       JobID    JobName      State        NodeList \n"
        "------------ ---------- ---------- --------------- \n"
        "77                train    RUNNING       gpu[01-02] \n"
        "77.batch          batch    RUNNING           gpu01 \n",
    ],
)
def test_sacct_with_nodelist_parsable_and_fixed(text):
    """sacct -P and fixed-width with a NodeList column: the job and its hosts, steps folded."""
    assert detect(clean_text(text)) == "sacct"
    (job,) = slurm_jobs.parse(text).jobs
    assert (job.id, job.state, job.nodes) == ("77", "running", ["gpu01", "gpu02"])


def test_sinfo_states_and_flags():
    """sinfo's short names and suffixes, and scontrol's + parts, as long names and flags."""
    assert slurm_nodes.node_state("drng@") == ("draining", ["reboot_requested", "drain"])
    assert slurm_nodes.node_state("mix-") == ("mixed", ["planned"])
    assert slurm_nodes.node_state("ALLOCATED+DRAIN") == ("draining", ["drain"])
    assert slurm_nodes.node_state("IDLE+POWERED_DOWN") == ("idle", ["powered_down"])
    text = "NODELIST STATE REASON\nn[1-2] idle~ none\nn3 idle none\n"
    assert slurm_nodes.parse(text).free() == ["n3"]


def test_a_hostlist_bomb_is_one_line():
    """A node list standing for billions of names fails fast, naming its line."""
    with pytest.raises(ParseError, match="line 2: hostlist"):
        slurm_nodes.parse(
            "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\nb up 1 9 idle n[0-999999999]\n"
        )
    with pytest.raises(ParseError, match="hostlist"):
        slurm_jobs.parse("JOBID ST NODELIST\n1 R n[0-999999999]\n")


def test_unknown_text_is_one_line():
    """Text no importer reads says how to name the format."""
    with pytest.raises(ParseError, match="give the format"):
        detect("hello\nworld\n")


def test_iblinkinfo_port_not_active_keeps_the_peer_it_prints():
    """A port in Initialize (trained, not yet activated by the subnet manager) prints its
    peer: it is kept, named as switches are, so the port can be placed on its cable."""
    text = (
        "Switch: 0x0c42a1030060abd0 MF0;LG01-05:MQM8700/U1:\n"
        "        3179    3[  ] ==( 4X          50.0 Gbps Initialize/  LinkUp)==>       4519"
        '    1[  ] "luna-0003 mlx5_6" ( )\n'
        '        3179    4[  ] ==(                Down/ Polling)==>             [  ] "" ( )\n'
    )
    graph = iblinkinfo.parse(text)
    ports = {p.port: (p.device, p.state, p.peer, p.peer_port) for p in graph.ports}
    assert ports == {
        3: ("LG01-05", "init", "luna-0003 mlx5_6", 1),
        4: ("LG01-05", "polling", None, None),
    }
    assert graph.links == []


def test_iblinkinfo_degraded_warning_counts_a_cable_once():
    """A 1X cable between two switches is printed (with its 'Could be' hint) from both
    ends: the warning counts and lists it once."""
    text = (
        "Switch: 0x0c42a1030060abd0 MF0;LG01-05:MQM8700/U1:\n"
        "        3179   21[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3185    1[  ]"
        ' "MF0;CSPINE1-41:MQM8700/U1" ( Could be 4X 50.0 Gbps)\n'
        "Switch: 0x0c42a103005899b0 MF0;CSPINE1-41:MQM8700/U1:\n"
        "        3185    1[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3179   21[  ]"
        ' "MF0;LG01-05:MQM8700/U1" ( Could be 4X 50.0 Gbps)\n'
    )
    graph = iblinkinfo.parse(text)
    (line,) = [w for w in graph.warnings if "trained below" in w]
    assert line.startswith("1 link(s) trained below what both ends support")
    assert line.endswith(": LG01-05 port 21 1X")
