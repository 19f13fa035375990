"""``fabricui doctor``: parsing every NCCL_DEBUG sample, the findings per sample, the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fabricui.commands import doctor as doctor_command
from fabricui.importers.nccl_log import (
    NcclLogError,
    classify_transport,
    parse_nccl_log,
    read_nccl_log,
)
from fabricui.services.doctor import diagnose, report_json
from fabricui.services.doctor_codes import CODES, SEVERITIES

ROOT = Path(__file__).parents[2]
SAMPLES = Path(__file__).parents[1] / "data" / "topo" / "nccl_debug_logs"
HEALTHY = Path(__file__).parent / "data" / "healthy_h100_nvls_2_24_3.log"

#: Every sample's findings: code -> severity. A new sample without an entry fails.
EXPECTED: dict[str, dict[str, str]] = {
    "aws_ofi_nccl_715_cloudwatch_timestamps_nvls_not_available.txt": {
        "nvls-unavailable": "info",
        "no-transport-lines": "info",
    },
    "ml_engineering_azure_ib_roce_completion_error.txt": {
        "ib-completion-error": "error",
        "mixed-ib-roce": "warning",
        "no-transport-lines": "info",
    },
    "ml_engineering_fastsocket_wrong_plugin_on_ib.txt": {
        "net-socket-fallback": "warning",
        "external-net-plugin": "info",
        "no-transport-lines": "info",
    },
    "nccl_1189_h20_p2p_cumem_and_ib_gdrdma.txt": {},
    "nccl_1197_system_graph_print_pcie_switch_nvswitch_4nic.txt": {
        "no-transport-lines": "info",
    },
    "nccl_1584_h100_nvls_available_prefix_stripped_2_24_3.txt": {
        "external-net-plugin": "info",
        "no-transport-lines": "info",
    },
    "nccl_1609_h800_intranode_via_shm_direct.txt": {"shm-intra-node": "warning"},
    "nccl_300_v2_5_6_docker_loopback_no_ib_ompi_prefix.txt": {
        "loopback-bootstrap": "warning",
        "net-socket-fallback": "warning",
        "no-transport-lines": "info",
    },
    "nccl_302_v2_5_6_mixed_ib_and_roce_hcas.txt": {"mixed-ib-roce": "warning"},
    "nccl_392_v2_5_7_roce_partial_gdr_old_ring_format.txt": {
        "gdr-disabled": "warning",
        "shm-intra-node": "info",
    },
    "nccl_952_ib_no_device_p2p_ipc_plus_net_socket.txt": {"net-socket-fallback": "warning"},
    "nccl_tests_100_hgx_a100_no_libibverbs_socket_over_ipoib_topo_print.txt": {
        "libibverbs-missing": "warning",
        "net-socket-fallback": "warning",
        "no-transport-lines": "info",
    },
    "nccl_tests_133_p2p_direct_pointer_ib_gdrdma.txt": {},
    "nccl_tests_228_nvswitch_box_falls_back_to_shm_part1_net_ib.txt": {
        "no-transport-lines": "info",
    },
    "nccl_tests_373_merged_vnic_roce_p2p_level_loc.txt": {
        "gdr-disabled": "warning",
        "external-net-plugin": "info",
        "p2p-disabled": "info",
    },
    "nv_peer_memory_56_v2_4_7_ib_without_gdr.txt": {"no-transport-lines": "info"},
}

#: Small logs in NCCL's own line shapes for codes no published sample shows by itself.
SYNTHETIC = {
    "ib-disable-ignored": (
        "h1:10:10 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
        "h1:10:10 [0] NCCL INFO P2P plugin IBext_v8\n"
        "h1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
        "h1:10:10 [0] NCCL INFO Using network IBext_v8\n"
    ),
    "nccl-warn": "h1:10:10 [0] init.cc:1234 NCCL WARN Cuda failure 'out of memory'\n",
    "nccl-call-failed": (
        "h1:10:10 [0] NCCL INFO transport/net.cc:1134 -> 6\n"
        "h1:10:10 [0] NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]\n"
    ),
    "gdr-disabled": (
        "h1:10:10 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n"
    ),
    "tuner-plugin": (
        "h1:10:10 [0] NCCL INFO NET/OFI Region base Tuner is chosen for platform: p5en.48xlarge\n"
    ),
}


def sample_text(path: Path) -> str:
    """The log of a sample file, without its ``# source:``/``# machine:`` header."""
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and (lines[0].startswith(("# source:", "# machine:")) or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines)


def sample_files() -> list[Path]:
    return sorted(SAMPLES.glob("*.txt")) if SAMPLES.is_dir() else []


def codes(findings) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {f.code: f.severity for f in findings}


@pytest.fixture
def run_doctor(command_runner):
    """Run ``doctor`` through its own parser; returns (status, stdout, stderr)."""
    return command_runner("doctor", doctor_command)


@pytest.mark.parametrize("path", sample_files(), ids=lambda p: p.stem)
def test_sample_findings(path: Path):
    """Each published sample gives exactly its expected codes and severities."""
    assert path.name in EXPECTED, f"add the expected findings of new sample {path.name}"
    log = parse_nccl_log(sample_text(path), path.name)
    assert codes(diagnose(log)) == EXPECTED[path.name]


def test_expectations_name_existing_samples():
    """No expectation is left for a sample that is gone (renamed files are noticed)."""
    assert set(EXPECTED) == {p.name for p in sample_files()}


@pytest.mark.parametrize("path", sample_files(), ids=lambda p: p.stem)
def test_sample_file_reads_with_header(path: Path):
    """The CLI path reads a sample file as is (header lines included) to the same codes."""
    log = read_nccl_log(path)
    assert codes(diagnose(log)) == EXPECTED[path.name]


def test_every_code_is_exercised():
    """Every documented code comes out of a published sample or an NCCL-shaped snippet."""
    seen = set()
    for path in sample_files():
        seen |= set(EXPECTED[path.name])
    for text in SYNTHETIC.values():
        seen |= {f.code for f in diagnose(parse_nccl_log(text))}
    assert seen == set(CODES)


@pytest.mark.parametrize("code", sorted(SYNTHETIC))
def test_synthetic_snippets(code: str):
    """Each snippet triggers its code."""
    assert code in codes(diagnose(parse_nccl_log(SYNTHETIC[code])))


def test_healthy_log_has_no_warning_or_error():
    """The healthy H100 fixture (prefix restored) reports facts and only notes."""
    log = read_nccl_log(HEALTHY)
    findings = diagnose(log)
    assert all(f.severity == "info" for f in findings)
    assert (log.version, log.cuda, log.network) == ("2.24.3", "12.2", "IBext_v8")
    assert len(log.ib_devices) == 8 and all(d.sharp for d in log.ib_devices)
    assert log.nvls_support == {0: True}
    assert log.hosts == {"gpu-node-0"}


@pytest.mark.parametrize(
    "name",
    [
        "nccl_1189_h20_p2p_cumem_and_ib_gdrdma.txt",
        "nccl_tests_133_p2p_direct_pointer_ib_gdrdma.txt",
        "nccl_1584_h100_nvls_available_prefix_stripped_2_24_3.txt",
    ],
)
def test_healthy_samples_have_no_warning_or_error(name: str):
    """Clean published samples give notes at most."""
    findings = diagnose(parse_nccl_log(sample_text(SAMPLES / name)))
    assert not [f for f in findings if f.severity != "info"]


# --- what the parser reads -----------------------------------------------------------------


def parse_sample(name: str):  # type: ignore[no-untyped-def]
    return parse_nccl_log(sample_text(SAMPLES / name), name)


def test_ompi_prefix_version_and_loopback():
    """``[1,0]<stdout>:`` prefixes, the bare banner, ``No device found`` and ``lo``."""
    log = parse_sample("nccl_300_v2_5_6_docker_loopback_no_ib_ompi_prefix.txt")
    assert (log.version, log.cuda, log.network) == ("2.5.6", "10.2", "Socket")
    assert log.ib_no_device and log.bootstrap == [("lo", "127.0.0.1")]
    assert log.hosts == {"5873af64cf59"}


def test_launcher_rank_prefix_and_mixed_list():
    """``[155] `` before the prefix; the IB list keeps order and link layers."""
    log = parse_sample("nccl_302_v2_5_6_mixed_ib_and_roce_hcas.txt")
    assert [(d.name, d.link_layer) for d in log.ib_devices] == [
        ("mlx5_1", "IB"),
        ("mlx5_3", "IB"),
        ("mlx5_0", "IB"),
        ("mlx5_2", "RoCE"),
        ("mlx5_4", "IB"),
    ]
    assert log.transport_counts() == {"p2p_ipc": 3}
    assert log.hosts == {"crow-ib-new-nccl-256-info-19"}


def test_fused_virtual_nics():
    """``[0]={[0] mlx5_2:1/RoCE, ...}`` gives four ports in two virtual NICs."""
    log = parse_sample("nccl_tests_373_merged_vnic_roce_p2p_level_loc.txt")
    assert [(d.name, d.vnic) for d in log.ib_devices] == [
        ("mlx5_2", 0),
        ("mlx5_3", 0),
        ("mlx5_0", 1),
        ("mlx5_1", 1),
    ]
    assert (log.nranks, log.nnodes, log.local_ranks) == (3, 3, 1)
    assert log.env == {"NCCL_P2P_LEVEL": "LOC"}
    assert log.transport_counts() == {"net_ib": 3}


def test_old_ring_format_and_host_less_prefix():
    """`` [0] NCCL INFO``, ``Ring NN :``, ``direct shared memory`` and ring lists."""
    log = parse_sample("nccl_392_v2_5_7_roce_partial_gdr_old_ring_format.txt")
    assert log.transport_counts() == {"p2p_ipc": 2, "shm": 1, "net_ib": 2}
    assert log.channels == 2
    assert log.env["NCCL_IB_GID_INDEX"] == "3"
    assert log.version == "2.5.7"


def test_cloudwatch_timestamp_lines():
    """A timestamp line before every log line is skipped; NVLS support is per device."""
    log = parse_sample("aws_ofi_nccl_715_cloudwatch_timestamps_nvls_not_available.txt")
    assert log.nvls_support == {d: False for d in (1, 2, 3, 5, 6, 7)}
    assert log.hosts == {"algo-1"}


def test_completion_error_and_prose_between_blocks():
    """The markdown fence and prose lines are ignored; the WARN and traces are read."""
    log = parse_sample("ml_engineering_azure_ib_roce_completion_error.txt")
    assert len(log.completion_errors) == 1
    assert [code for _line, _where, code in log.error_returns] == [6, 6, 6]
    finding = next(f for f in diagnose(log) if f.code == "ib-completion-error")
    assert "status 12" in finding.message and "10.2.0.5" in finding.message


def test_topology_print_without_prefixes():
    """The GRAPH system print alone is an NCCL log; its NVSwitch is noticed."""
    log = parse_sample("nccl_1197_system_graph_print_pcie_switch_nvswitch_4nic.txt")
    assert log.system_print and log.nvswitch_seen


def test_redacted_host_and_channels_with_suffix():
    """``<cluster_name>`` hosts; ``Channel 01/0 : 8[0] -> 15[7]``."""
    log = parse_sample("nccl_952_ib_no_device_p2p_ipc_plus_net_socket.txt")
    assert log.hosts == {"<cluster_name>"}
    assert log.transport_counts() == {"p2p_ipc": 14, "net_socket": 2}


@pytest.mark.parametrize(
    ("line", "host"),
    [
        ("node1:12:34 [3] NCCL INFO NET/IB : No device found.", "node1"),
        ("[1,3]<stdout>:node1:12:34 [3] NCCL INFO NET/IB : No device found.", "node1"),
        ("[12] node1:12:34 [3] NCCL INFO NET/IB : No device found.", "node1"),
        ("2024-12-04T05:27:44.078Z node1:12:34 [3] NCCL INFO NET/IB : No device found.", "node1"),
        (" [3] NCCL INFO NET/IB : No device found.", None),
        ("NCCL INFO NET/IB : No device found.", None),
        ("NET/IB : No device found.", None),
    ],
)
def test_prefix_styles(line: str, host: str | None):
    """Every prefix style reduces to the same message."""
    log = parse_nccl_log(line)
    assert log.ib_no_device
    assert log.hosts == ({host} if host else set())


@pytest.mark.parametrize(
    ("via", "kind"),
    [
        ("P2P/IPC", "p2p_ipc"),
        ("P2P/IPC/read", "p2p_ipc"),
        ("P2P/CUMEM/read", "p2p_cumem"),
        ("P2P/direct pointer/read", "p2p_direct"),
        ("SHM/direct/direct", "shm"),
        ("direct shared memory", "shm"),
        ("NET/IB/0", "net_ib"),
        ("NET/IB/3/GDRDMA", "net_ib_gdr"),
        ("NET/IBext_v8/1", "net_ib"),
        ("NET/IBext_v8/1/GDRDMA", "net_ib_gdr"),
        ("NET/Socket/3", "net_socket"),
        ("NET/AWS Libfabric/0/GDRDMA", "net_other_gdr"),
        ("NVLS", "nvls"),
        ("CollNet/0", "collnet"),
        ("something new", "other"),
    ],
)
def test_transport_kinds(via: str, kind: str):
    """Every transport string of the samples (and NCCL's others) has its kind."""
    assert classify_transport(via) == kind


def test_newer_plugin_and_gdr_wording():
    """``P2P plugin v9 IBext_v9``, ``GPU Direct RDMA (nvidia-peermem) enabled`` and a
    ``/Shared`` connection (no GDRDMA) point at the GPU-NIC distance."""
    text = (
        "h:1:1 [0] NCCL INFO P2P plugin v9 IBext_v9\n"
        "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 0 'mlx5_0\n"
        "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0\n"
        "h:1:1 [0] NCCL INFO Channel 03/0 : 11[3] -> 3[3] [send] via NET/IBext_v9/2/Shared\n"
    )
    log = parse_nccl_log(text)
    assert log.plugins == ["IBext_v9"] and len(log.gdr_enabled) == 2
    finding = next(f for f in diagnose(log) if f.code == "gdr-disabled")
    assert "NCCL_NET_GDR_LEVEL" in finding.message


def test_not_an_nccl_log():
    """Text without a single NCCL line is refused with a one-line error."""
    with pytest.raises(NcclLogError, match="not an NCCL_DEBUG log"):
        parse_nccl_log("hello\nworld\n# NCCL is great\n", "notes.txt")


def test_nvls_zero_channels_on_nvls_system_warns():
    """0 NVLS channels where NVLS multicast is available is a warning."""
    text = (
        "h:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
        "h:1:1 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, "
        "32 p2p channels, 32 p2p channels per peer\n"
    )
    log = parse_nccl_log(text)
    assert (log.coll_channels, log.nvls_channels) == (24, 0)
    assert codes(diagnose(log))["nvls-unavailable"] == "warning"
    disabled = text + "h:1:1 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\n"
    assert codes(diagnose(parse_nccl_log(disabled)))["nvls-unavailable"] == "info"


def test_env_hint_flags_ignored_ib_disable():
    """``--env NCCL_IB_DISABLE=1`` turns the external IB plugin into a warning."""
    log = parse_sample("nccl_tests_373_merged_vnic_roce_p2p_level_loc.txt")
    assert "ib-disable-ignored" not in codes(diagnose(log))
    finding = next(f for f in diagnose(log, {"NCCL_IB_DISABLE": "1"}) if f.code.startswith("ib-"))
    assert (finding.code, finding.severity) == ("ib-disable-ignored", "warning")
    assert "NCCL_NET=Socket" in finding.fix


def test_socket_on_purpose_is_a_note():
    """Sockets with NCCL_IB_DISABLE=1 seen in the log are a note, not a warning."""
    text = (
        "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n"
        "h:1:1 [0] NCCL INFO Using network Socket\n"
    )
    assert codes(diagnose(parse_nccl_log(text))) == {
        "net-socket-fallback": "info",
        "no-transport-lines": "info",
    }


def test_findings_sorted_and_well_formed():
    """Findings come most severe first, each with one-line message and fix."""
    log = parse_sample("ml_engineering_azure_ib_roce_completion_error.txt")
    findings = diagnose(log)
    order = [SEVERITIES.index(f.severity) for f in findings]
    assert order == sorted(order)
    for finding in findings:
        assert finding.code in CODES
        assert "\n" not in finding.message and "\n" not in finding.fix
        assert finding.message and finding.fix


# --- the command ---------------------------------------------------------------------------


def test_cli_json_shape(run_doctor):
    """--json prints version, network, transports and findings with the documented keys."""
    status, out, err = run_doctor(str(HEALTHY), "--json")
    assert status == 0, err
    data = json.loads(out)
    assert {"nccl_version", "network", "transports", "findings"} <= set(data)
    assert data["nccl_version"] == "2.24.3" and data["network"] == "IBext_v8"
    for finding in data["findings"]:
        assert set(finding) == {"code", "severity", "message", "fix"}


def test_cli_text_with_findings_exits_zero(run_doctor):
    """Findings do not change the exit status; the text names codes, fixes and transports."""
    path = SAMPLES / "nccl_952_ib_no_device_p2p_ipc_plus_net_socket.txt"
    status, out, _ = run_doctor(str(path))
    assert status == 0
    assert "net-socket-fallback" in out and "fix:" in out
    assert "P2P/IPC" in out and "NET/Socket" in out


def test_cli_json_transports(run_doctor):
    """Transport counts per connection type in JSON."""
    path = SAMPLES / "nccl_1189_h20_p2p_cumem_and_ib_gdrdma.txt"
    status, out, _ = run_doctor(str(path), "--json")
    data = json.loads(out)
    assert status == 0
    assert data["transports"] == {"p2p_cumem": 5, "net_ib_gdr": 9}
    assert data["findings"] == []


def test_cli_stdin(run_doctor, monkeypatch):
    """``-`` reads the log from standard input."""
    monkeypatch.setattr("sys.stdin", io.StringIO(SYNTHETIC["nccl-warn"]))
    status, out, _ = run_doctor("-", "--json")
    assert status == 0
    assert json.loads(out)["findings"][0]["code"] == "nccl-warn"


def test_cli_env_hint(run_doctor):
    """``--env`` hints reach the checks; a malformed one is a one-line error (as collective's)."""
    text_log = HEALTHY
    status, out, _ = run_doctor(str(text_log), "--env", "NCCL_IB_DISABLE=1", "--json")
    assert status == 0
    assert "ib-disable-ignored" in {f["code"] for f in json.loads(out)["findings"]}
    status, _, err = run_doctor(str(text_log), "--env", "NCCL_IB_DISABLE")
    assert status == 2 and "NCCL_NAME=value" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), ("just prose\n", "not an NCCL_DEBUG log"), (b"\x00\x01", "binary")],
)
def test_cli_bad_input(run_doctor, tmp_path, content, message):
    """Missing, non-NCCL and binary files exit 2 with one line on stderr."""
    path = tmp_path / "log.txt"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    status, out, err = run_doctor(str(path))
    assert status == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_report_json_lists_devices_and_env():
    """The JSON report carries the IB devices and NCCL settings the log printed."""
    log = read_nccl_log(HEALTHY)
    data = report_json(log, diagnose(log))
    assert data["ib_devices"][0] == {
        "name": "ibp0",
        "port": 1,
        "link_layer": "IB",
        "sharp": True,
        "vnic": None,
    }
    assert data["env"]["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"
    assert data["nranks"] == 8


def test_a_128k_interface_line_answers_at_once():
    """``Bootstrap : Using a:a:a:...`` (128 KiB) parses in well under a second (no
    regular-expression backtracking over the line)."""
    import time

    line = "host:1:1 [0] NCCL INFO Bootstrap : Using " + "a:" * 65536 + "\n"
    started = time.perf_counter()
    log = parse_nccl_log("NCCL INFO NCCL version 2.18.1+cuda12.1\n" + line, "bomb")
    assert time.perf_counter() - started < 2.0
    assert log.version == "2.18.1"


# --- tuner plugins ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("Using tuner plugin: 'Example'", "Example"),  # 2.19-2.20
        ("TUNER/Plugin: Using tuner plugin Example", "Example"),  # 2.21-2.26
        ("TUNER/Plugin: Using Example (v5)", "Example"),  # 2.27 on
        (
            "Successfully loaded external tuner plugin libnccl-tuner-example.so",
            "libnccl-tuner-example.so",
        ),
        (
            "NET/OFI Region base Tuner is chosen for platform: p5en.48xlarge",
            "aws-ofi-nccl's region tuner (p5en.48xlarge)",
        ),
        ("TUNER/Plugin: Using internal tuner plugin.", None),
    ],
)
def test_a_tuner_plugin_in_use_is_read_in_every_releases_words(line: str, name: str | None):
    """NCCL's and aws-ofi-nccl's lines naming the tuner plugin in use; NCCL's internal
    tuner is none."""
    log = parse_nccl_log(f"h1:10:10 [0] NCCL INFO {line}\n")
    assert log.tuner_plugins == ([name] if name else [])
    assert ("tuner-plugin" in codes(diagnose(log))) == (name is not None)


def test_the_tuner_finding_says_how_to_run_nccls_own_choice():
    """aws-ofi-nccl's tuner is turned off by its own setting too; any plugin by
    NCCL_TUNER_PLUGIN=none."""
    aws = diagnose(parse_nccl_log(SYNTHETIC["tuner-plugin"]))
    (finding,) = [f for f in aws if f.code == "tuner-plugin"]
    assert "p5en.48xlarge" in finding.message
    assert "OFI_NCCL_TUNER_TYPE=Internal" in finding.fix and "NCCL_TUNER_PLUGIN=none" in finding.fix
    other = diagnose(parse_nccl_log("h [0] NCCL INFO TUNER/Plugin: Using Example (v5)\n"))
    (finding,) = [f for f in other if f.code == "tuner-plugin"]
    assert "OFI_NCCL" not in finding.fix and "NCCL_TUNER_PLUGIN=none" in finding.fix
