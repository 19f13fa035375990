"""The NCCL doctor: findings (stable code, severity, one-line fix) from a parsed NCCL log.

Each check reads an ``NcclLog`` (``fabricui.importers.nccl_log``) and reports what the log
itself shows; what a log does not show (an excerpt without connection lines, settings made
outside NCCL) is never guessed, except through the ``env`` hints a caller passes. Codes are
part of the interface: scripts and the TUI key on them, so they never change meaning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.importers.nccl_log import (
    COMPLETION,
    TRANSPORT_LABELS,
    NcclLog,
    decode_and_parse,
    read_log_bytes,
)
from fabricui.services import admission
from fabricui.services.doctor_codes import SEVERITIES

if TYPE_CHECKING:
    from pathlib import Path

#: Memory a log costs to parse, per byte of it [bytes]: the bytes, their text, each line's
#: copies through the prefix and message matches, a ring list's ranks.
LOG_BYTES_PER_BYTE = 9
#: ... plus what each line records (a transport, a ring step), per line, at most
#: ``LOG_RECORD_PER_BYTE`` per byte of the log; a warning line records more (its message
#: twice when it is a completion error, and its finding). Measured 2026-11-27 as peak RSS
#: over logs of one kind of line each: a single 51 MB ring line 4.6 B per byte in all, an
#: 8 MB one of 1.2 million ranks 8.2; connection lines 337 B per line, 25-byte ring steps
#: 160 (11.5 B per byte), warnings 620 to 1,190 B per line. Rounded up: the estimate is
#: 1.1 to 1.9 times the peak.
LOG_BYTES_PER_LINE = 700
LOG_RECORD_PER_BYTE = 8
LOG_BYTES_PER_WARNING = 1300


#: NCCL result codes in error-return traces (``proxy.cc:858 -> 6``).
NCCL_RESULTS = {
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
}

#: ibv_wc_status values seen in ``Got completion ... with error N`` lines.
IBV_WC_STATUS = {
    2: "local QP operation error",
    4: "local protection error",
    5: "work request flushed (the queue pair went to error state)",
    9: "remote invalid request",
    10: "remote access error",
    11: "remote operation error",
    12: "transport retry counter exceeded: the peer's HCA never acknowledged",
    13: "RNR retry counter exceeded: the peer was not ready to receive",
}

#: GPUs whose NVSwitch systems support NVLink SHARP.
NVLS_GPUS = ("H100", "H200", "H800", "H20", "B200", "B300", "GB200", "GB300")


@dataclass(frozen=True)
class Finding:
    """One problem (or noteworthy fact) the doctor found in a log."""

    code: str
    """Stable id, one of ``CODES``."""
    severity: str
    """``error``, ``warning`` or ``info``."""
    message: str
    """What the log shows, one line."""
    fix: str
    """What to do about it, one line."""
    line: int | None = None
    """First line of evidence in the log (1-based), when there is one."""

    def to_json(self) -> dict[str, Any]:
        """The ``findings[]`` object of ``fabricui doctor --json``."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
        }


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def _ranks(devices: list[int]) -> str:
    return ", ".join(str(d) for d in sorted(devices))


def log_memory_bytes(size_bytes: int, lines: int, warnings: int = 0) -> int:
    """Estimated memory of parsing and diagnosing a log of ``size_bytes`` bytes in
    ``lines`` lines, ``warnings`` of them WARN lines, beyond the process's own [bytes]."""
    others = max(0, lines - warnings)
    records = min(LOG_RECORD_PER_BYTE * size_bytes, LOG_BYTES_PER_LINE * others)
    return LOG_BYTES_PER_BYTE * size_bytes + records + LOG_BYTES_PER_WARNING * warnings


def read_log(path: Path | str) -> NcclLog:
    """Read and parse an NCCL log (``-``: standard input), once admitted: a log that would
    take more memory to parse than the budget allows is refused before parsing.

    Raises:
        NcclLogError: The file cannot be read, is binary, or is not an NCCL log.
        ConfigError: Parsing it would not fit the memory budget.
    """
    data, source = read_log_bytes(path)
    size = max(1, len(data))
    cost = log_memory_bytes(size, data.count(b"\n") + 1, data.count(b" WARN "))
    admission.admit(
        admission.Work(  # the bytes read are in the resident memory and in the cost
            f"the log {source}", size, "bytes", -(-cost // size), admission.resident_bytes() - size
        ),
        admission.memory_budget(),
        "keep the NCCL lines (grep NCCL) and read those, or raise --max-memory",
    )
    return decode_and_parse(data, source)


def diagnose(log: NcclLog, env: Mapping[str, str] | None = None) -> list[Finding]:
    """Every finding for one log, most severe first.

    Args:
        log: The parsed log.
        env: NCCL settings the user knows were set but the log may not print (``--env``);
            the log's own ``set by environment`` lines win on conflict.

    Returns:
        Findings sorted by severity, then code.
    """
    settings = {**dict(env or {}), **log.env}
    findings: list[Finding] = []
    for check in (
        _completion_errors,
        _socket_fallback,
        _ibverbs,
        _gdr,
        _shm,
        _nvls,
        _mixed_ib_roce,
        _ib_disable_ignored,
        _loopback,
        _p2p_disabled,
        _other_warnings,
        _external_plugin,
        _tuner_plugin,
        _no_transports,
    ):
        findings.extend(check(log, settings))
    if log.error_returns and not any(f.severity == "error" for f in findings):
        line, where, code = log.error_returns[0]
        name = NCCL_RESULTS.get(code, f"error {code}")
        findings.append(
            Finding(
                "nccl-call-failed",
                "error",
                f"an NCCL call failed with {name} ({code}), first reported at {where}",
                "read the NCCL WARN line just before it (rerun with NCCL_DEBUG=INFO "
                "NCCL_DEBUG_SUBSYS=INIT,NET if there is none)",
                line,
            )
        )
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (order[f.severity], f.code, f.line or 0))


def _completion_errors(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if not log.completion_errors:
        return []
    first = log.completion_errors[0]
    match = COMPLETION.search(first.text)
    peer, status = (match.group(1), int(match.group(2))) if match else ("?", -1)
    meaning = IBV_WC_STATUS.get(status, "see ibv_wc_status")
    more = f" ({len(log.completion_errors)} such lines)" if len(log.completion_errors) > 1 else ""
    return [
        Finding(
            "ib-completion-error",
            "error",
            f"IB completion error from peer {peer}: status {status}, {meaning}{more}",
            "the hosts cannot reach each other over this HCA: check both are on the same IB "
            "fabric/partition (ibstat, ib_write_bw host to host), exclude unconnected HCAs "
            "with NCCL_IB_HCA, and on RoCE check NCCL_IB_GID_INDEX",
            first.line,
        )
    ]


def _socket_fallback(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if not log.socket_network:
        return []
    network = log.network or "Socket"
    interfaces = log.net_lists.get(network) or log.net_lists.get("Socket") or []
    reasons = []
    if _truthy(settings.get("NCCL_IB_DISABLE")):
        reasons.append("NCCL_IB_DISABLE=1 turns off NCCL's IB transport")
    elif settings.get("NCCL_NET", "").lower() == network.lower():
        reasons.append(f"NCCL_NET={settings['NCCL_NET']} chooses it")
    if log.ib_no_device:
        reasons.append("NET/IB found no device")
    if log.ibverbs_missing:
        reasons.append("libibverbs is missing")
    ipoib = [i for i in interfaces if i.startswith("ib")]
    if ipoib:
        reasons.append(f"{', '.join(ipoib[:4])} are IPoIB interfaces of RDMA NICs")
    socket_lines = log.transport_counts().get("net_socket", 0)
    if socket_lines:
        reasons.append(f"{socket_lines} inter-node connection lines use NET/Socket")
    intentional = _truthy(settings.get("NCCL_IB_DISABLE")) or (
        settings.get("NCCL_NET", "").lower() == network.lower()
    )
    severity = "info" if intentional or log.nnodes == 1 else "warning"
    over = f" over {', '.join(interfaces[:4])}" if interfaces else ""
    why = f" ({'; '.join(reasons)})" if reasons else ""
    if network == "FastSocket":
        fix = (
            "FastSocket is meant for TCP NICs: on an InfiniBand/RoCE fabric remove the "
            "nccl-fastsocket plugin (NCCL_NET_PLUGIN) so NCCL uses NET/IB"
        )
    else:
        fix = (
            "make the RDMA NICs usable: install rdma-core (libibverbs) and the OFED/DOCA "
            "driver, pass /dev/infiniband into the container, check ibv_devinfo, and do not "
            "set NCCL_IB_DISABLE=1"
        )
    return [
        Finding(
            "net-socket-fallback",
            severity,
            f"network is {network}: TCP sockets{over}, not RDMA{why}",
            fix,
        )
    ]


def _ibverbs(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if not log.ibverbs_missing:
        return []
    first = log.ibverbs_missing[0]
    return [
        Finding(
            "libibverbs-missing",
            "warning",
            f"libibverbs could not be loaded ({first.text}), so NCCL cannot use InfiniBand/RoCE",
            "install rdma-core / libibverbs1 and ibverbs-providers where the job runs (inside "
            "the container image too) so libibverbs.so.1 loads",
            first.line,
        )
    ]


def _gdr(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    counts = log.transport_counts()
    without, with_gdr = counts.get("net_ib", 0), counts.get("net_ib_gdr", 0)
    if not without and not log.gdr_disabled:
        return []
    if without:
        first = next(t for t in log.transports if t.kind == "net_ib")
        message = (
            f"GPUDirect RDMA is off: {without} of {without + with_gdr} NET/IB connection lines "
            f"lack /GDRDMA (e.g. '{first.text}'), so data is staged through host memory"
        )
        line = first.line
        if log.gdr_enabled:
            message += (
                "; the HCAs do support it, so the GPU-NIC PCIe distance is above NCCL_NET_GDR_LEVEL"
            )
    else:
        first_msg = log.gdr_disabled[0]
        message = f"{first_msg.text} ({len(log.gdr_disabled)} such lines)"
        line = first_msg.line
    return [
        Finding(
            "gdr-disabled",
            "warning",
            message,
            "load the nvidia-peermem (nv_peer_mem) kernel module or use DMA-BUF (NCCL >= "
            "2.13, Linux >= 5.12), keep GPU and NIC under one PCIe switch, and check "
            "NCCL_NET_GDR_LEVEL is not lowering it",
            line,
        )
    ]


def _shm(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    counts = log.transport_counts()
    shm = counts.get("shm", 0)
    if not shm:
        return []
    p2p = sum(counts.get(k, 0) for k in ("p2p_ipc", "p2p_cumem", "p2p_direct", "p2p"))
    first = next(t for t in log.transports if t.kind == "shm")
    if p2p:
        message = (
            f"{shm} intra-node connection lines use host shared memory while {p2p} use P2P "
            f"(e.g. {first.src} -> {first.dst} '{first.text}'): usual only across CPU sockets "
            "of a PCIe machine"
        )
        severity = "info"
    else:
        message = (
            f"GPUs of one node talk through host shared memory: {shm} connection lines use "
            f"SHM (e.g. {first.src} -> {first.dst} '{first.text}') and none use P2P/NVLink"
        )
        severity = "warning"
    return [
        Finding(
            "shm-intra-node",
            severity,
            message,
            "unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL, run containers with --ipc=host and every "
            "GPU of the node visible, and check nvidia-smi topo -m and PCIe ACS/IOMMU settings",
            first.line,
        )
    ]


def _nvls(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    missing = [dev for dev, ok in log.nvls_support.items() if not ok]
    zero = log.nvls_channels == 0
    if not missing and not zero:
        return []
    available = any(log.nvls_support.values())
    evidence = log.nvswitch_seen or available or any(g in NVLS_GPUS for g in log.gpu_names)
    disabled = settings.get("NCCL_NVLS_ENABLE", "").strip() == "0"
    parts = []
    if missing:
        parts.append(
            f"NVLS multicast is not available on dev {_ranks(missing)} ({len(missing)} GPUs)"
        )
    if zero:
        parts.append("the communicator has 0 NVLS channels")
    if disabled:
        parts.append("NCCL_NVLS_ENABLE=0 is set")
    severity = "warning" if evidence and not disabled else "info"
    return [
        Finding(
            "nvls-unavailable",
            severity,
            "; ".join(parts),
            "on NVSwitch systems (H100/H200/B200) NVLS needs nvidia-fabricmanager running, "
            "driver >= 530, CUDA >= 12.1, NCCL >= 2.17 and NCCL_NVLS_ENABLE unset; A100 and "
            "older GPUs have no NVLS",
        )
    ]


def _mixed_ib_roce(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    for devices in log.ib_lists:
        layers = {d.link_layer for d in devices}
        if len(layers) > 1:
            ib = ", ".join(d.name for d in devices if d.link_layer == "IB")
            roce = ", ".join(d.name for d in devices if d.link_layer == "RoCE")
            return [
                Finding(
                    "mixed-ib-roce",
                    "warning",
                    f"NET/IB uses InfiniBand ({ib}) and RoCE ({roce}) ports together",
                    "restrict NCCL to the ports of one fabric with NCCL_IB_HCA (e.g. "
                    f"NCCL_IB_HCA={ib.replace(' ', '')}); ports that cannot reach the peers' "
                    "ports stall or fail connections",
                )
            ]
    return []


def _ib_disable_ignored(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if not _truthy(settings.get("NCCL_IB_DISABLE")):
        return []
    counts = log.transport_counts()
    ib_lines = counts.get("net_ib", 0) + counts.get("net_ib_gdr", 0)
    if not (log.ib_network or ib_lines):
        return []
    network = log.network or "IB"
    plugin = f" (plugin {log.plugin_path})" if log.plugin_path else ""
    return [
        Finding(
            "ib-disable-ignored",
            "warning",
            f"NCCL_IB_DISABLE=1 is set but the network is still {network}{plugin}",
            "an external net plugin (e.g. HPC-X nccl_rdma_sharp_plugin) ignores "
            "NCCL_IB_DISABLE: choose sockets with NCCL_NET=Socket or drop the plugin with "
            "NCCL_NET_PLUGIN=none",
        )
    ]


def _loopback(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    interfaces = list(log.bootstrap) + list(log.oob)
    loop = [(i, a) for i, a in interfaces if i == "lo" or a.startswith("127.")]
    if not loop and "lo" in log.net_lists.get("Socket", []):
        loop = [("lo", "")]
    if not loop:
        return []
    iface, address = loop[0]
    where = f"{iface}:{address}" if address else iface
    return [
        Finding(
            "loopback-bootstrap",
            "info" if log.nnodes == 1 else "warning",
            f"NCCL bootstraps over the loopback interface {where}: other nodes cannot connect",
            "set NCCL_SOCKET_IFNAME to the interface that reaches the other nodes (e.g. eth0, "
            "ib0); in containers use host networking",
        )
    ]


def _p2p_disabled(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    disable = _truthy(settings.get("NCCL_P2P_DISABLE"))
    level = settings.get("NCCL_P2P_LEVEL", "").strip().upper()
    if not disable and level not in ("LOC", "0"):
        return []
    what = "NCCL_P2P_DISABLE=1" if disable else f"NCCL_P2P_LEVEL={level}"
    alone = log.local_ranks == 1
    tail = " (harmless here: one rank per node)" if alone else ""
    return [
        Finding(
            "p2p-disabled",
            "info" if alone else "warning",
            f"{what} turns off GPU peer-to-peer, so GPUs of a node go through host memory{tail}",
            "unset it unless it works around a broken P2P path, and then fix that path (PCIe "
            "ACS/IOMMU, driver) instead",
        )
    ]


def _other_warnings(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    explained = {m.line for m in log.ibverbs_missing} | {m.line for m in log.completion_errors}
    seen: set[str] = set()
    findings = []
    for warning in log.warnings:
        if warning.line in explained or warning.text in seen:
            continue
        seen.add(warning.text)
        findings.append(
            Finding(
                "nccl-warn",
                "warning",
                f"NCCL WARN: {warning.text}",
                "look the message up in the NCCL troubleshooting guide; rerun with "
                "NCCL_DEBUG_SUBSYS=INIT,NET for context",
                warning.line,
            )
        )
    return findings


def _external_plugin(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if not log.plugins:
        return []
    where = f" from {log.plugin_path}" if log.plugin_path else ""
    return [
        Finding(
            "external-net-plugin",
            "info",
            f"an external network plugin carries the traffic: {', '.join(log.plugins)}{where}",
            "nothing to fix if intended; the plugin reads its own settings (some NCCL_IB_* "
            "ones may not apply) and NCCL_NET_PLUGIN=none falls back to the built-in transports",
        )
    ]


def _tuner_plugin(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if not log.tuner_plugins:
        return []
    aws = any(name.startswith("aws-ofi-nccl") for name in log.tuner_plugins)
    internal = "OFI_NCCL_TUNER_TYPE=Internal or " if aws else ""
    return [
        Finding(
            "tuner-plugin",
            "info",
            f"a tuner plugin picks the collectives' algorithms and protocols, not NCCL's "
            f"own model: {', '.join(log.tuner_plugins)}",
            f"nothing to fix if intended; {internal}NCCL_TUNER_PLUGIN=none runs NCCL's own "
            "choice, the one fabricui predicts",
        )
    ]


def _no_transports(log: NcclLog, settings: dict[str, str]) -> list[Finding]:
    if log.transports:
        return []
    return [
        Finding(
            "no-transport-lines",
            "info",
            "no 'Channel ... via ...' connection lines: P2P/SHM/NET transports and GPUDirect "
            "RDMA cannot be checked",
            "capture the whole log from init through the first collective with "
            "NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH)",
        )
    ]


def report_json(log: NcclLog, findings: list[Finding]) -> dict[str, Any]:
    """The ``fabricui doctor --json`` object.

    Args:
        log: The parsed log.
        findings: ``diagnose(log)``.

    Returns:
        ``nccl_version``, ``network``, ``transports`` (connection lines per kind) and
        ``findings``, plus what else the log told (CUDA, plugins, NICs, channels, ranks).
    """
    return {
        "source": log.source,
        "nccl_version": log.version,
        "cuda_version": log.cuda,
        "network": log.network,
        "plugins": list(log.plugins),
        "ib_devices": [
            {
                "name": d.name,
                "port": d.port,
                "link_layer": d.link_layer,
                "sharp": d.sharp,
                "vnic": d.vnic,
            }
            for d in log.ib_devices
        ],
        "transports": log.transport_counts(),
        "channels": log.channels,
        "nvls_channels": log.nvls_channels,
        "nvls_support": {str(dev): ok for dev, ok in sorted(log.nvls_support.items())},
        "nranks": log.nranks,
        "nnodes": log.nnodes,
        "hosts": sorted(log.hosts),
        "env": dict(sorted(log.env.items())),
        "findings": [f.to_json() for f in findings],
    }


def transport_label(kind: str) -> str:
    """Display label of a transport kind (``net_ib_gdr`` -> ``NET/IB + GDRDMA``)."""
    return TRANSPORT_LABELS.get(kind, kind)
