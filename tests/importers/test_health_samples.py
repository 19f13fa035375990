"""Every state, counter and Slurm sample in ``tests/data/health`` imports with its format
recognised and the content its INDEX.md row describes (one test per sample; the samples
are copies of ``shared/data/health``, INDEX.md names each one's source and quirks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.importers.builtin import builtin_importers
from fabricui.importers.common import clean_text, detect
from fabricui.services.health import findings_of

HEALTH = Path(__file__).resolve().parents[1] / "data" / "health"


def sample(name: str) -> str:
    """A sample without its ``# source:``/``# machine:`` header lines."""
    lines = (HEALTH / name).read_text(encoding="utf-8").split("\n")
    assert lines[0].startswith("# source:") and lines[1].startswith("# machine:"), name
    return "\n".join(lines[2:])


def imported(name: str, fmt: str):
    """(result, JSON) of a sample, after checking its format is recognised as ``fmt``."""
    text = sample(name)
    assert detect(clean_text(text)) == fmt, name
    result = builtin_importers()[fmt](text)
    data = json.loads(json.dumps(result.to_json(), allow_nan=False))
    assert isinstance(result.summary(), str)
    return result, data


def ports(data) -> dict[tuple[str, object], dict]:
    return {(p["device"], p["port"]): p for p in data["ports"]}


def codes(result, fmt: str) -> set[str]:
    return {f.code for f in findings_of(result, fmt)}


def test_every_sample_has_a_test():
    """The 33 samples are all listed below (a new sample needs its own test)."""
    names = sorted(str(p.relative_to(HEALTH)) for p in HEALTH.rglob("*.txt"))
    tested = {
        name
        for fn in globals().values()
        if callable(fn) and getattr(fn, "sample", None)
        for name in [fn.sample]
    }
    assert len(names) == 33
    assert set(names) == tested


def for_sample(name: str):
    """Mark a test as the one for ``name``."""

    def mark(fn):
        fn.sample = name
        return fn

    return mark


# --- infiniband -------------------------------------------------------------------------------


@for_sample("infiniband/ibdiagnet_fabric_summary_ar_dump_15node_lab_3_discovery_warnings.txt")
def test_ibdiagnet_fabric_summary_with_discovery_warnings():
    """Fabric Summary counts (15 nodes: 3 switches, 9 CAs, 3 aggregation nodes; AR on 3) and
    the Discovery stage's 3 warnings as the one item that is not ok."""
    result, data = imported(
        test_ibdiagnet_fabric_summary_with_discovery_warnings.sample, "ibdiagnet"
    )
    summary = data["fabric_summary"]
    assert summary["total_nodes"] == 15 and summary["ib_switches"] == 3
    assert summary["ib_channel_adapters"] == 9 and summary["ib_aggregation_nodes"] == 3
    assert summary["ib_routers"] == 0 and summary["adaptive_routing_switches"] == 3
    stages = {h["device"]: h["status"] for h in data["health"]}
    assert stages == {
        "Discovery": "3 warning(s), 0 error(s)",
        "Virtualization": "0 warning(s), 0 error(s)",
        "Routing": "0 warning(s), 0 error(s)",
    }
    assert [i.device for i in result.health if not i.ok] == ["Discovery"]


@for_sample("infiniband/ibdiagnet_sharp_check_fabric_summary_24node_lab.txt")
def test_ibdiagnet_sharp_check():
    """24 nodes, 4 switches, 16 CAs, 4 aggregation nodes, 2 LL trees; the SHARP check
    finished successfully (ok)."""
    result, data = imported(test_ibdiagnet_sharp_check.sample, "ibdiagnet")
    summary = data["fabric_summary"]
    assert summary["total_nodes"] == 24 and summary["ib_switches"] == 4
    assert summary["ib_channel_adapters"] == 16 and summary["ib_aggregation_nodes"] == 4
    assert summary["number_of_ll_aggregation_trees"] == 2
    assert all(h.ok for h in result.health) and "successfully" in data["health"][0]["detail"]


@for_sample("infiniband/ibstat_azure_a100_8x_hdr_vf_partial_output_ibpanic_mlx5_8.txt")
def test_ibstat_partial_output_with_ibpanic():
    """8 HDR VFs Active at 200; the ibpanic line for mlx5_8 is a health item and a warning."""
    result, data = imported(test_ibstat_partial_output_with_ibpanic.sample, "ibstat")
    assert len(data["ports"]) == 8
    assert all(p["state"] == "up" and p["rate_gbps"] == 200.0 for p in data["ports"])
    assert [p["device"] for p in data["ports"]] == [f"mlx5_{i}" for i in range(8)]
    assert data["health"][0]["status"] == "error" and "mlx5_8" in data["health"][0]["detail"]
    assert any("mlx5_8 is missing" in w for w in data["warnings"])


@for_sample("infiniband/ibstat_cx3_mlx4_port1_ib_down_polling_port2_eth_disabled.txt")
def test_ibstat_port_polling_and_disabled():
    """ConnectX-3 port 1 (IB) Down/Polling reads as polling, port 2 (Ethernet) as disabled."""
    result, data = imported(test_ibstat_port_polling_and_disabled.sample, "ibstat")
    by = ports(data)
    assert by[("mlx4_0", 1)]["state"] == "polling"
    assert by[("mlx4_0", 1)]["link_layer"] == "InfiniBand"
    assert by[("mlx4_0", 2)]["state"] == "disabled"
    assert by[("mlx4_0", 2)]["link_layer"] == "Ethernet"
    assert "port-down" in codes(result, "ibstat")


@for_sample("infiniband/ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt")
def test_ibstat_h100_three_ethernet_ports_disabled():
    """12 CAs: 8 NDR IB ports up at 400, CX-6 Dx Ethernet mlx5_2/7/8 disabled at 40."""
    result, data = imported(test_ibstat_h100_three_ethernet_ports_disabled.sample, "ibstat")
    assert len(data["hcas"]) == 12
    down = sorted(p["device"] for p in data["ports"] if p["state"] != "up")
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]
    assert all(ports(data)[(d, 1)]["state"] == "disabled" for d in down)
    ib = [p for p in data["ports"] if p["link_layer"] == "InfiniBand"]
    assert len(ib) == 8 and {p["rate_gbps"] for p in ib} == {400.0}
    assert not any(p["degraded"] for p in data["ports"])


@for_sample("infiniband/ibswinfo_hdr_quantum_unmanaged_switch_psu1_dc_power_error.txt")
def test_ibswinfo_psu1_dc_power_and_fan_error():
    """MQM8790: PSU1 DC power and fan status ERROR are the items not ok; temperatures and 9
    fan speeds are readings."""
    result, data = imported(test_ibswinfo_psu1_dc_power_and_fan_error.sample, "ibswinfo")
    bad = [h["device"] for h, item in zip(data["health"], result.health) if not item.ok]
    assert bad == [
        "Jaguar Unmng IB 200 (0x08c0eb0300add20e) PSU1 DC power",
        "Jaguar Unmng IB 200 (0x08c0eb0300add20e) PSU1 fan status",
    ]
    assert data["switch"]["part_number"] == "MQM8790-HS2F" and data["switch"]["ports"] == "80"
    readings = data["readings"]
    assert readings["temperature_c"] == 47 and readings["max_temp_c"] == 52
    assert sum(1 for k in readings if k.startswith("fan_")) == 9
    assert readings["psu0_power_w"] == 287 and "psu1_power_w" not in readings
    assert codes(result, "ibswinfo") == {"switch-hardware"}


@for_sample("infiniband/mlxlink_show_module_cx7_ndr_b2b_fs_dac_rx_los_flags.txt")
def test_mlxlink_rx_los_flags_on_an_active_link():
    """Active IB-NDR 4x (400 Gb/s), no issue recommended, yet Rx LOS on lanes 0, 2, 3 and
    Rx CDR LOL on all four are health items."""
    result, data = imported(test_mlxlink_rx_los_flags_on_an_active_link.sample, "mlxlink")
    (port,) = data["ports"]
    assert port["device"] == "/dev/mst/mt4129_pciconf0"
    assert port["state"] == "up" and port["rate_gbps"] == 400.0 and port["width"] == "4X"
    assert data["host"] == "csegpu1"
    items = {h["status"]: h["detail"] for h in data["health"]}
    assert items["ok"] == "No issue was observed"
    assert items["Rx LOS set"] == "Rx LOS on lane(s) 0, 2, 3 of 4"
    assert items["Rx CDR LOL set"] == "Rx CDR LOL on lane(s) 0, 1, 2, 3 of 4"
    assert codes(result, "mlxlink") == {"link-module-flags"}


@for_sample("infiniband/perfquery_E_rcv_error_details_edr_switch_port1.txt")
def test_perfquery_rcv_error_details_all_zero():
    """perfquery -E of LID 2052 port 1: the six details, all zero, no finding."""
    result, data = imported(test_perfquery_rcv_error_details_all_zero.sample, "perfquery")
    assert data["source"] == "perfquery -E"
    (port,) = data["ports"]
    assert port["device"] == "lid 2052" and port["port"] == 1
    assert len(port["counters"]) == 6 and set(port["counters"].values()) == {0}
    assert "PortLocalPhysicalErrors" in port["counters"]
    assert findings_of(result, "perfquery") == []


@for_sample("infiniband/perfquery_x_edr_switch_two_ports_xmitwait.txt")
def test_perfquery_extended_two_ports_xmit_wait():
    """Two -x records of LID 1719 (ports 1, 2): error counters 0, PortXmitWait 22730501 and
    36510964, found as congestion (info)."""
    result, data = imported(test_perfquery_extended_two_ports_xmit_wait.sample, "perfquery")
    assert data["source"] == "perfquery -x"
    by = ports(data)
    assert by[("lid 1719", 1)]["counters"]["PortXmitWait"] == 22730501
    assert by[("lid 1719", 2)]["counters"]["PortXmitWait"] == 36510964
    assert by[("lid 1719", 1)]["counters"]["PortXmitData"] == 36298026860928
    assert by[("lid 1719", 2)]["counters"]["SymbolErrorCounter"] == 0
    found = findings_of(result, "perfquery")
    assert [(f.code, f.severity) for f in found] == [("ib-transmit-wait", "info")] * 2


# --- nvlink ----------------------------------------------------------------------------------


@for_sample("nvlink/dcgmi_diag_r2_a100_pcie_fail_nvlink_links_down_warning_excerpt.txt")
def test_dcgmi_diag_pcie_fail_with_wrapped_warning():
    """PCIe 'Fail - All'; the warning's words split over cells are joined again, and the
    links it names down (GPU 0 links 0-4 before the cut) are ports."""
    result, data = imported(test_dcgmi_diag_pcie_fail_with_wrapped_warning.sample, "dcgmi-diag")
    (item,) = data["health"]
    assert item["device"] == "Integration: PCIe" and item["status"] == "Fail - All"
    assert "Run a field diagnostic on the GPU" in item["detail"]
    assert "fie ld" not in item["detail"] and "NvLin k" not in item["detail"]
    assert [(p["device"], p["port"], p["state"]) for p in data["ports"]] == [
        ("GPU 0", link, "down") for link in range(5)
    ]
    assert any("cut" in w for w in data["warnings"])
    assert "dcgm-diag-failed" in codes(result, "dcgmi-diag")


@for_sample("nvlink/dcgmi_nvlink_s_h100_8gpu_all_up.txt")
def test_dcgmi_nvlink_status_all_up():
    """8 GPUs x 18 links, all U; no NVSwitch listed."""
    result, data = imported(test_dcgmi_nvlink_status_all_up.sample, "nvlink")
    assert data["source"] == "dcgmi nvlink -s"
    assert data["links_per_gpu"] == {f"GPU {g}": 18 for g in range(8)}
    assert {p["state"] for p in data["ports"]} == {"up"}
    assert findings_of(result, "nvlink") == []


@for_sample("nvlink/fabricmanager_log_hgx_nvswitch_nonfatal_error_port61.txt")
def test_fabric_manager_log_nonfatal_error():
    """The NVSwitch non-fatal error 12028 on physical id 3 port 61 is a port counter and the
    one error record; the multicast chatter is INFO."""
    result, data = imported(test_fabric_manager_log_nonfatal_error.sample, "fabric-manager")
    (port,) = data["ports"]
    assert port["device"] == "NVSwitch 3 (00000000:86:00.0)" and port["port"] == 61
    assert port["counters"] == {"non-fatal errors": 1} and port["state"] == "unknown"
    (item,) = data["health"]
    assert item["status"] == "error" and "12028" in item["detail"]
    assert data["levels"]["ERROR"] == 1 and data["levels"]["INFO"] > 40
    assert {(f.code, f.severity) for f in findings_of(result, "fabric-manager")} == {
        ("fabric-manager-error", "warning")
    }


@for_sample("nvlink/h100_pcie_2gpu_nvlink_bridge_nvlink_R_remote_link_map.txt")
def test_nvidia_smi_nvlink_remote_map():
    """Two H100 PCIe GPUs, 12 links each; remote link ids skip 4, 5, 10, 11."""
    result, data = imported(test_nvidia_smi_nvlink_remote_map.sample, "nvlink")
    assert data["source"] == "nvidia-smi nvlink -R" and data["host"] == "dl380ag11"
    by = ports(data)
    assert len(data["ports"]) == 24
    assert by[("GPU 0", 4)]["peer"] == "00000000:D5:00.0" and by[("GPU 0", 4)]["peer_port"] == 6
    assert by[("GPU 1", 11)]["peer"] == "00000000:C2:00.0" and by[("GPU 1", 11)]["peer_port"] == 15
    remote = sorted(by[("GPU 0", k)]["peer_port"] for k in range(12))
    assert remote == [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]


@for_sample("nvlink/mlxlink_b200_gpu7_nvlink_xdr_port_from_nvidia_bug_report.txt")
def test_mlxlink_b200_nvlink_port():
    """A B200 GPU's NVLink port via mlxlink: Active, NVLink-XDR 2x (400 Gb/s), no issue."""
    result, data = imported(test_mlxlink_b200_nvlink_port.sample, "mlxlink")
    (port,) = data["ports"]
    assert port["device"] == "/dev/mst/netir10497_00.cc.00_gpu7"
    assert port["state"] == "up" and port["rate_gbps"] == 400.0 and port["width"] == "2X"
    assert "NVLink-XDR" in port["detail"]
    assert findings_of(result, "mlxlink") == []


@for_sample("nvlink/nvidia_smi_nvlink_gt_d_r_h800_gpu0_idle_vs_llama13b_training.txt")
def test_nvidia_smi_nvlink_throughput_counters():
    """H800 GPU 0, 8 links: data and raw Tx/Rx counters in KiB (the training snapshot is
    the last data one read), no error finding."""
    result, data = imported(test_nvidia_smi_nvlink_throughput_counters.sample, "nvlink")
    assert "nvidia-smi nvlink -gt" in data["source"]
    by = ports(data)
    assert len(data["ports"]) == 8
    assert by[("GPU 0", 0)]["counters"]["Data Tx [KiB]"] == 1390774681
    assert by[("GPU 0", 7)]["counters"]["Raw Rx [KiB]"] == 1957241622
    assert data["gpus"]["GPU 0"] == "NVIDIA H800"
    assert findings_of(result, "nvlink") == []


@for_sample("nvlink/nvidia_smi_nvlink_s_gb200_18_links_53gbs_excerpt.txt")
def test_nvidia_smi_nvlink_status_gb200_excerpt():
    """GB200: 18 links at 53.125 GB/s on GPU 0, the excerpt cut after GPU 1 link 1."""
    result, data = imported(test_nvidia_smi_nvlink_status_gb200_excerpt.sample, "nvlink")
    assert data["links_per_gpu"] == {"GPU 0": 18, "GPU 1": 2}
    assert {p["rate_gbps"] for p in data["ports"]} == {425.0}
    assert any("cut" in w for w in data["warnings"])


@for_sample("nvlink/nvidia_smi_nvlink_status_a100_sxm4_8gpu_12_links_25gbs.txt")
def test_nvidia_smi_nvlink_status_a100():
    """8 A100 SXM4, 12 links each at 25 GB/s, all active."""
    result, data = imported(test_nvidia_smi_nvlink_status_a100.sample, "nvlink")
    assert data["links_per_gpu"] == {f"GPU {g}": 12 for g in range(8)}
    assert {(p["state"], p["rate_gbps"], p["degraded"]) for p in data["ports"]} == {
        ("up", 200.0, False)
    }


@for_sample("nvlink/nvidia_smi_q_fabric_insufficient_resources_clique0_azure.txt")
def test_nvidia_smi_q_fabric_insufficient_resources():
    """Fabric Completed with Status Insufficient Resources, CliqueId 0, all-zero
    ClusterUUID: not ok, an NVLink-fabric finding."""
    result, data = imported(test_nvidia_smi_q_fabric_insufficient_resources.sample, "nvidia-smi-q")
    (item,) = data["health"]
    assert item["status"] == "Completed/Insufficient Resources"
    assert "CliqueId 0" in item["detail"] and "00000000-0000" in item["detail"]
    assert {(f.code, f.severity) for f in findings_of(result, "nvidia-smi-q")} == {
        ("nvlink-fabric-unhealthy", "error")
    }


@for_sample("nvlink/nvidia_smi_q_fabric_mnnvl_health_unhealthy_grep_excerpt.txt")
def test_nvidia_smi_q_fabric_unhealthy():
    """Completed/Success in clique 2 but Health Summary Unhealthy (Bandwidth Full)."""
    result, data = imported(test_nvidia_smi_q_fabric_unhealthy.sample, "nvidia-smi-q")
    (item,) = data["health"]
    assert item["status"] == "Completed/Success"
    assert "Summary Unhealthy" in item["detail"] and "Bandwidth Full" in item["detail"]
    assert not result.health_items()[0].ok
    assert data["blocks"][0]["name"].endswith("/2")


@for_sample("nvlink/nvidia_smi_q_h100_8gpu_535_fabric_completed_pcie_replays.txt")
def test_nvidia_smi_q_h100_fabric_and_pcie_replays():
    """8 H100: every Fabric Completed/Success (ok); PCIe Gen5 x16 replays 120, 111, 58, 60,
    63, 93, 69, 78 as counters and info findings."""
    result, data = imported(test_nvidia_smi_q_h100_fabric_and_pcie_replays.sample, "nvidia-smi-q")
    assert [h["status"] for h in data["health"]] == ["Completed/Success"] * 8
    assert all(item.ok for item in result.health_items())
    replays = [p["counters"]["Replays Since Reset"] for p in data["ports"]]
    assert replays == [120, 111, 58, 60, 63, 93, 69, 78]
    assert {p["detail"] for p in data["ports"]} == {"Gen5 x16"}
    assert {f.code for f in findings_of(result, "nvidia-smi-q")} == {"pcie-replays"}


# --- roce_ethernet ---------------------------------------------------------------------------


@for_sample("roce_ethernet/ibstat_roce_mlx5_cx4lx_25g_cx6dx_100g_tabs_kept.txt")
def test_ibstat_roce_ports_all_up():
    """4 mlx5 Ethernet ports up: two at 25, two at 100 (different adapters: not degraded)."""
    result, data = imported(test_ibstat_roce_ports_all_up.sample, "ibstat")
    assert [(p["device"], p["rate_gbps"]) for p in data["ports"]] == [
        ("mlx5_0", 25.0),
        ("mlx5_1", 25.0),
        ("mlx5_2", 100.0),
        ("mlx5_3", 100.0),
    ]
    assert {(p["state"], p["link_layer"], p["degraded"]) for p in data["ports"]} == {
        ("up", "Ethernet", False)
    }
    assert data["host"] == "rhel-storage-105"


@for_sample("roce_ethernet/ibv_devinfo_ibstatus_cx3_port2_eth_port_down_teaker.txt")
def test_ibv_devinfo_and_ibstatus_port2_down():
    """mlx4_0 port 1 IB active 4X QDR (40), port 2 Ethernet down, 1X QDR (10 Gb/s)."""
    result, data = imported(test_ibv_devinfo_and_ibstatus_port2_down.sample, "ibstat")
    assert data["source"] == "ibv_devinfo+ibstatus"
    by = ports(data)
    assert by[("mlx4_0", 1)]["state"] == "up" and by[("mlx4_0", 1)]["rate_gbps"] == 40.0
    assert by[("mlx4_0", 1)]["width"] == "4X"
    assert by[("mlx4_0", 2)]["state"] == "disabled" and by[("mlx4_0", 2)]["rate_gbps"] == 10.0
    assert by[("mlx4_0", 2)]["link_layer"] == "Ethernet"


@for_sample("roce_ethernet/rdma_link_show_cx6dx_2ports_active_p1p1_p1p2.txt")
def test_rdma_link_two_roce_ports_up():
    """mlx5_0/1 and mlx5_1/1 ACTIVE/LINK_UP on netdevs p1p1 and p1p2."""
    result, data = imported(test_rdma_link_two_roce_ports_up.sample, "rdma-link")
    assert [(p["device"], p["port"], p["state"], p["peer"]) for p in data["ports"]] == [
        ("mlx5_0", 1, "up", "netdev p1p1"),
        ("mlx5_1", 1, "up", "netdev p1p2"),
    ]
    assert data["host"] == "node75" and findings_of(result, "rdma-link") == []


@for_sample("roce_ethernet/show_gids_bnxt_cxgb4_hfi1_mlx5_vlan_gids_wrapped_nbsp.txt")
def test_show_gids_wrapped_rows_and_nbsp():
    """19 GIDs over bnxt_re0/1, cxgb4_0 (2 ports), hfi1_0, mlx5_0; wrapped rows joined; the
    repeated link-local GID is warned about."""
    result, data = imported(test_show_gids_wrapped_rows_and_nbsp.sample, "show-gids")
    gids = data["gids"]
    assert len(gids) == 19 and not data["warnings"][0].startswith("n_gids_found")
    row = next(g for g in gids if g["device"] == "bnxt_re0" and g["index"] == 11)
    assert row["ipv4"] == "172.31.43.187" and row["version"] == "v2"
    assert row["netdev"] == "bnxt_roce.43"
    assert {(p["device"], p["port"]) for p in data["ports"]} == {
        ("bnxt_re0", 1),
        ("bnxt_re1", 1),
        ("cxgb4_0", 1),
        ("cxgb4_0", 2),
        ("hfi1_0", 1),
        ("mlx5_0", 1),
    }
    assert any("more than once" in w for w in data["warnings"])


@for_sample("roce_ethernet/show_gids_cx6_mlx5_0_roce_v1_v2_ipv6_ipv4_gids.txt")
def test_show_gids_roce_v2_ipv4_index():
    """6 GIDs on mlx5_0 port 1; RoCE v2 over 172.19.0.60 is index 5."""
    result, data = imported(test_show_gids_roce_v2_ipv4_index.sample, "show-gids")
    assert len(data["gids"]) == 6
    assert data["ports"][0]["detail"] == "RoCE v2 IPv4 172.19.0.60 at GID index 5"
    assert any("NCCL_IB_GID_INDEX=5" in n for n in result.notes)


# --- slurm -----------------------------------------------------------------------------------


def nodes(data) -> dict[str, dict]:
    return {n["name"]: n for n in data["nodes"]}


@for_sample("slurm/psnode_dtu_niflheim_node_d064_sinfo_lines_and_ps.txt")
def test_psnode_sinfo_rows():
    """d064 is mixed in two partitions; the ps listing after the table is skipped."""
    result, data = imported(test_psnode_sinfo_rows.sample, "sinfo")
    assert list(nodes(data)) == ["d064"]
    assert nodes(data)["d064"]["state"] == "mixed"
    assert nodes(data)["d064"]["partitions"] == ["xeon8", "xeon8_48"]


@for_sample("slurm/sacct_default_uw_hyak_klone_timeout_failed_cancelled.txt")
def test_sacct_default_format_without_nodelist():
    """Default sacct: jobs with their steps folded in; RUNNING, COMPLETED, TIMEOUT, FAILED,
    CANCELLED (and 'CANCELLED+'); no NodeList column is said, hosts empty."""
    result, data = imported(test_sacct_default_format_without_nodelist.sample, "sacct")
    jobs = {j["id"]: j for j in data["jobs"]}
    assert jobs["16261988"]["state"] == "running"
    assert jobs["16290213"]["state"] == "timeout"
    assert {j["state"] for j in data["jobs"]} >= {
        "running",
        "completed",
        "timeout",
        "failed",
        "cancelled",
    }
    assert not any("." in j for j in jobs)
    assert all(j["nodes"] == [] for j in data["jobs"])
    assert any("no NodeList column" in w for w in data["warnings"])


@for_sample("slurm/scontrol_show_node_csc_puhti_rack_r10_down_not_responding.txt")
def test_scontrol_show_node_down_not_responding():
    """r10c05 DOWN+RESERVED+NOT_RESPONDING with its reason; the other nine reserved."""
    result, data = imported(test_scontrol_show_node_down_not_responding.sample, "scontrol-node")
    by = nodes(data)
    assert len(by) == 10
    assert by["r10c05"]["state"] == "down"
    assert by["r10c05"]["flags"] == ["reserved", "not_responding"]
    assert by["r10c05"]["reason"] == "Not responding [slurm@2022-09-07T14:26:15]"
    assert {by[f"r10c{i:02d}"]["state"] for i in (1, 2, 3, 4, 6, 7, 8, 9, 10)} == {"reserved"}
    assert result.free() == []


@for_sample("slurm/scontrol_show_node_huji_4nodes_one_idle_drain_memory_issues.txt")
def test_scontrol_show_node_drained_with_reason():
    """Two allocated GPU nodes, oxygen-04 drained ('memory issues?'), cricket idle and free."""
    result, data = imported(test_scontrol_show_node_drained_with_reason.sample, "scontrol-node")
    by = nodes(data)
    assert by["cortex-01"]["state"] == "allocated" and by["dumfries-002"]["state"] == "allocated"
    assert by["oxygen-04"]["state"] == "drained" and by["oxygen-04"]["flags"] == ["drain"]
    assert by["oxygen-04"]["reason"].startswith("memory issues?")
    assert by["cricket"]["state"] == "idle"
    assert result.free() == ["cricket"]


@for_sample("slurm/sinfo_Nl_trigger_mail_dtu_niflheim_node_down_unexpectedly_rebooted.txt")
def test_sinfo_long_node_down_reason_cut():
    """b028 down, REASON cut at 20 characters (said in a note)."""
    result, data = imported(test_sinfo_long_node_down_reason_cut.sample, "sinfo")
    assert data["source"] == "sinfo -N -l"
    assert nodes(data)["b028"]["state"] == "down"
    assert nodes(data)["b028"]["reason"] == "Node unexpectedly re"
    assert any("column width" in n for n in result.notes)


@for_sample("slurm/sinfo_commercial_grid_large_drain_star_lists_canu_excerpt.txt")
def test_sinfo_large_drained_not_responding_lists():
    """drain* (306 nodes: drained and not responding), drain 3, alloc 40, idle 33."""
    result, data = imported(test_sinfo_large_drained_not_responding_lists.sample, "sinfo")
    states: dict[tuple[str, bool], int] = {}
    for node in data["nodes"]:
        key = (node["state"], "not_responding" in node["flags"])
        states[key] = states.get(key, 0) + 1
    assert states == {
        ("drained", True): 306,
        ("drained", False): 3,
        ("allocated", False): 40,
        ("idle", False): 33,
    }
    assert "cn9216" in nodes(data) and len(result.free()) == 33


@for_sample("slurm/sinfo_schedmd_quickstart_doc_adev_down_star.txt")
def test_sinfo_quickstart_down_star():
    """adev[1-2,6,13,15] down and not responding, adev[7-8,14] allocated, 7 idle."""
    result, data = imported(test_sinfo_quickstart_down_star.sample, "sinfo")
    by = nodes(data)
    assert [n for n in by if by[n]["state"] == "down"] == [
        "adev1",
        "adev2",
        "adev6",
        "adev13",
        "adev15",
    ]
    assert all("not_responding" in by[n]["flags"] for n in ("adev1", "adev15"))
    assert sorted(n for n in by if by[n]["state"] == "allocated") == ["adev14", "adev7", "adev8"]
    assert len(result.free()) == 7 and by["adev3"]["partitions"] == ["debug"]
    assert data["source"] == "sinfo"


@for_sample("slurm/squeue_schedmd_quickstart_doc_adev_running_pending_resources.txt")
def test_squeue_running_and_pending():
    """65646 running on adev7, adev8; 65647 on adev14; 65648 pending on Resources."""
    result, data = imported(test_squeue_running_and_pending.sample, "squeue")
    assert data["jobs"] == [
        {"id": "65646", "state": "running", "nodes": ["adev7", "adev8"], "name": "chem",
         "user": "mike", "partition": "batch"},
        {"id": "65647", "state": "running", "nodes": ["adev14"], "name": "bio", "user": "joan",
         "partition": "batch"},
        {"id": "65648", "state": "pending", "nodes": [], "name": "math", "user": "phil",
         "partition": "batch", "reason": "Resources"},
    ]  # fmt: skip
    assert [j.id for j in result.running()] == ["65646", "65647"]


@pytest.mark.parametrize(
    "name",
    sorted(str(p.relative_to(HEALTH)) for p in HEALTH.rglob("*.txt")),
)
def test_import_without_a_format_on_the_command_line(name, run_cli):
    """``fabricui import FILE --json`` recognises every sample and prints the common keys."""
    status, out, err = run_cli("import", str(HEALTH / name), "--json")
    assert status == 0, err
    data = json.loads(out)
    keys = {"ports", "health", "warnings"} if "slurm/" not in name else {"warnings"}
    assert keys <= set(data) and data["format"]
    if "slurm/" in name:
        assert ("nodes" in data) != ("jobs" in data)
