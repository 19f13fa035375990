"""Findings from state and counter outputs: which counters matter, at what value, what they
usually mean and what to do, each threshold with the vendor document it comes from.

Counters are read as the tools print them: totals since the counters were last cleared, not
rates. A threshold here is therefore the count the vendor's own tool treats as worth a
look in its default configuration (infiniband-diags' ``error_thresholds`` that
``ibqueryerrors`` reads, UFM's default event thresholds, DCGM's health watches); the
finding says the count and asks for a rate where only a rate decides (clear, wait, read
again). A counter that sits at the largest value its field holds is reported on its own:
InfiniBand counters stop there instead of wrapping, so the real count is unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

#: Where every threshold comes from (cited in each finding's ``source``).
SOURCES = {
    "ib-thresholds": "infiniband-diags error_thresholds, the defaults ibqueryerrors reads "
    "(linux-rdma/rdma-core infiniband-diags/etc/error_thresholds @691953d8d)",
    "ufm-events": "NVIDIA UFM-SDN Appliance User Manual v4.18.14, Supported Traps and Events "
    "(https://docs.nvidia.com/networking/display/ufmsdnappumv41814/supported-traps-and-events)",
    "ib-widths": "PortCounters field widths (rdma-core libibmad/fields.c) and 'IB semantics is "
    "to cap counters' (rdma-core infiniband-diags/perfquery.c @691953d8d)",
    "could-be": "iblinkinfo's 'Could be' hint: the width/speed both ends support (rdma-core "
    "infiniband-diags/ibdiag_common.c get_max_msg @691953d8d)",
    "dcgm-nvlink": "DCGM health watch: any NVLink replay or recovery error fails, CRC errors "
    "fail above 100 per second (NVIDIA/DCGM common/DcgmGPUHardwareLimits.h and "
    "modules/health/DcgmHealthWatch.cpp MonitorNVLink4Fields @72fa3fe)",
    "dcgm-pcie": "DCGM health watch: PCIe replays above 1e-12 x lane rate per lane per minute "
    "(Gen5 x16: 31/min) fail (NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp "
    "GetExpectedPcieReplayRate @72fa3fe)",
    "mlx5": "mlx5 ethtool counters (Linux Documentation/networking/device_drivers/ethernet/"
    "mellanox/mlx5/counters.rst; commits 827a8cb2dd2b 'Add discard counters per priority', "
    "'Expose PFC stall prevention counters')",
    "fabric-manager": "NVIDIA Fabric Manager User Guide, NVSwitch errors: a fatal error needs "
    "the GPUs and NVSwitches reset (https://docs.nvidia.com/datacenter/tesla/"
    "fabric-manager-user-guide/)",
    "mlxlink": "mlxlink's own troubleshooting recommendation and module flags (NVIDIA MFT "
    "mlxlink user guide)",
    "dcgm-diag": "dcgmi diag verdicts (NVIDIA DCGM user guide, Diagnostics)",
    "ibswinfo": "the switch's own PSU and fan status read by ibswinfo",
    "port-state": "PortState/PortPhysicalState (InfiniBand Architecture Specification; "
    "ibstat, iblinkinfo, rdma link)",
    "nvlink-state": "nvidia-smi nvlink --status / dcgmi nvlink -s link state",
    "nvswitch-fabric": "nvidia-smi -q Fabric State/Status/Health (NVIDIA multi-node NVLink "
    "documentation)",
}


@dataclass(frozen=True)
class CounterRule:
    """When a counter is worth a finding."""

    pattern: str
    """Regex on the counter's printed name (case-insensitive)."""
    code: str
    """Finding code."""
    threshold: int
    """Count from which it is a ``severity`` finding (below it and above 0: ``info``)."""
    severity: str
    """``error``, ``warning`` or ``info`` at or above the threshold."""
    meaning: str
    """What it usually means."""
    fix: str
    """What to do."""
    source: str
    """Key of ``SOURCES``."""


#: InfiniBand PMA counters (perfquery, ibqueryerrors, ibdiagnet and UFM names).
_CLEAR = "clear the counters (perfquery -R LID PORT), wait, and read them again for a rate"
IB_RULES = (
    CounterRule(
        r"^SymbolError(Counter)?(Extended)?$|^symbol_error",
        "ib-symbol-errors",
        10,
        "warning",
        "bit errors on the physical lanes: a dirty or damaged connector, a bad cable or "
        "failing optics",
        f"{_CLEAR}; if they keep rising, clean or reseat the connector and replace the cable "
        "or transceiver (mlxlink -d DEV -c shows the BER per lane)",
        "ib-thresholds",
    ),
    CounterRule(
        r"^LinkErrorRecovery(Counter)?(Extended)?$|^link_error_recovery",
        "ib-link-error-recovery",
        10,
        "warning",
        "the link retrained itself after errors; each recovery stalls the traffic on it: a "
        "marginal cable or optics",
        f"{_CLEAR}; replace the cable or transceiver if it keeps rising",
        "ib-thresholds",
    ),
    CounterRule(
        r"^LinkDowned(Counter)?(Extended)?$|^link_down",
        "ib-link-downed",
        10,
        "warning",
        "the link went down and came back (a reboot or reseat counts too; repeats without "
        "one mean a flapping cable or a peer that resets)",
        f"{_CLEAR}; check the peer's uptime and the cable",
        "ib-thresholds",
    ),
    CounterRule(
        r"^PortRcvErrors(Extended)?$|^port_rcv_errors",
        "ib-receive-errors",
        10,
        "warning",
        "packets received with errors (CRC, length): physical errors on the link into this port",
        f"{_CLEAR}; check the cable into this port and its peer's transmitter",
        "ib-thresholds",
    ),
    CounterRule(
        r"^PortRcvRemotePhysicalErrors(Extended)?$",
        "ib-remote-physical-errors",
        100,
        "warning",
        "packets marked bad by an earlier hop: the faulty link is upstream on the path",
        "find the upstream port with PortRcvErrors or symbol errors (ibqueryerrors)",
        "ib-thresholds",
    ),
    CounterRule(
        r"^PortRcvSwitchRelayErrors(Extended)?$",
        "ib-switch-relay-errors",
        100,
        "info",
        "packets the switch could not forward (no route to the destination LID, multicast "
        "to the arrival port)",
        "usually harmless multicast; check the routing (ibdiagnet) if it grows with traffic",
        "ib-thresholds",
    ),
    CounterRule(
        r"^PortXmitDiscards(Extended)?$|^port_xmit_discard",
        "ib-transmit-discards",
        200,
        "warning",
        "packets dropped on the way out: the port went down, was congested longer than the "
        "head-of-queue lifetime, or its peer stopped taking traffic (a dead or stuck peer)",
        "check the peer and the link state; for congestion, find the hot spot "
        "(PortXmitWait) and spread the traffic (adaptive routing, fewer jobs on the uplink)",
        "ufm-events",
    ),
    CounterRule(
        r"^Port(Xmit|Rcv)ConstraintErrors(Extended)?$",
        "ib-constraint-errors",
        100,
        "warning",
        "packets dropped by partition enforcement: a P_Key the port does not hold",
        "check the partitions (P_Keys) of both ends with the subnet manager",
        "ib-thresholds",
    ),
    CounterRule(
        r"^LocalLinkIntegrityErrors(Extended)?$",
        "ib-link-integrity-errors",
        10,
        "warning",
        "physical errors beyond the link's integrity threshold: a bad cable or connector",
        f"{_CLEAR}; replace the cable if it keeps rising",
        "ib-thresholds",
    ),
    CounterRule(
        r"^ExcessiveBufferOverrunErrors(Extended)?$",
        "ib-buffer-overruns",
        100,
        "warning",
        "the peer sent without flow-control credits: a misbehaving peer or errors on the link",
        "check the peer's firmware and the link's error counters",
        "ufm-events",
    ),
    CounterRule(
        r"^VL15Dropped(Extended)?$",
        "ib-vl15-dropped",
        50,
        "info",
        "subnet-management packets dropped (the SM retries them)",
        "harmless in small numbers; many mean the port or SM is overloaded",
        "ufm-events",
    ),
    CounterRule(
        r"^PortXmitWait(Extended)?$|^port_xmit_wait",
        "ib-transmit-wait",
        1000,
        "info",
        "ticks the port had data to send and no credit to send it: congestion at this port or "
        "beyond it (incast, an oversubscribed uplink, a slow receiver)",
        "compare with PortXmitData over an interval; price the jobs that share this link "
        "(`fabricui traffic --hosts`)",
        "ib-thresholds",
    ),
)

#: NVLink counters (nvidia-smi nvlink -e, dcgmi nvlink -e).
NVLINK_RULES = (
    CounterRule(
        r"replay",
        "nvlink-replay-errors",
        1,
        "warning",
        "the link resent data after errors: a marginal NVLink (board connector, cable tray, "
        "switch port)",
        "clear (nvidia-smi nvlink -ec), run the job again and read; if it repeats, run "
        "`dcgmi diag -r 3` and report the GPU/baseboard",
        "dcgm-nvlink",
    ),
    CounterRule(
        r"recovery",
        "nvlink-recovery-errors",
        1,
        "warning",
        "the link went through recovery (retraining): traffic stopped on it meanwhile",
        "run `dcgmi diag -r 3`; a repeating link needs the GPU or NVSwitch tray serviced",
        "dcgm-nvlink",
    ),
    CounterRule(
        r"crc",
        "nvlink-crc-errors",
        1,
        "info",
        "CRC errors corrected by replay; they matter at 100 per second or more",
        "read the counter twice a few seconds apart: 100 per second or more is a failing link",
        "dcgm-nvlink",
    ),
)

#: mlx5 Ethernet (RoCE) counters of ``ethtool -S``.
MLX5_RULES = (
    CounterRule(
        r"^rx_discards_phy$|^rx_prio\d_discards$",
        "roce-rx-discards",
        1,
        "warning",
        "packets dropped for lack of receive buffers: the adapter is congested (a slow "
        "receiver, or PFC not enabled on the RoCE priority)",
        "enable PFC/ECN on the RoCE traffic class end to end; check the host is not starved "
        "(CPU, PCIe)",
        "mlx5",
    ),
    CounterRule(
        r"^tx_discards_phy$",
        "roce-tx-discards",
        1,
        "warning",
        "packets dropped on transmit at the port (the link was down or the queue stalled)",
        "check the link state and the switch port",
        "mlx5",
    ),
    CounterRule(
        r"^tx_pause_storm_(warning|error)_events$",
        "roce-pause-storm",
        1,
        "error",
        "the device stalled under PFC pause for longer than the storm watermark (error: pause "
        "transmission was turned off)",
        "find the host or switch port that never drains (a stuck receiver); check PFC "
        "configuration on both ends",
        "mlx5",
    ),
    CounterRule(
        r"^(rx|tx)_(prio\d_)?pause(_ctrl_phy)?$|^(rx|tx)_prio\d_pause$",
        "roce-pause-frames",
        1,
        "info",
        "PFC pause frames: the lossless class is pushing back; many mean congestion",
        "compare pause counts with traffic over an interval; spread the traffic or check ECN",
        "mlx5",
    ),
    CounterRule(
        r"^rx_(crc_errors|symbol_err)_phy$|^rx_corrected_bits_phy$",
        "roce-physical-errors",
        1,
        "warning",
        "physical errors on the Ethernet link: cable, connector or optics",
        "check the BER (mlxlink -c), clean or replace the cable or transceiver",
        "mlx5",
    ),
    CounterRule(
        r"^link_down_events_phy$",
        "roce-link-down",
        1,
        "info",
        "the link went down and came back",
        "check the cable and the switch port's log if it repeats",
        "mlx5",
    ),
)

#: Largest value of each 16-, 8- and 4-bit PortCounters field (they stop there).
SATURATION = {
    "SymbolErrorCounter": 0xFFFF,
    "LinkErrorRecoveryCounter": 0xFF,
    "LinkDownedCounter": 0xFF,
    "PortRcvErrors": 0xFFFF,
    "PortRcvRemotePhysicalErrors": 0xFFFF,
    "PortRcvSwitchRelayErrors": 0xFFFF,
    "PortXmitDiscards": 0xFFFF,
    "PortXmitConstraintErrors": 0xFF,
    "PortRcvConstraintErrors": 0xFF,
    "LocalLinkIntegrityErrors": 0xF,
    "ExcessiveBufferOverrunErrors": 0xF,
    "VL15Dropped": 0xFFFF,
    "PortXmitData": 0xFFFFFFFF,
    "PortRcvData": 0xFFFFFFFF,
    "PortXmitPkts": 0xFFFFFFFF,
    "PortRcvPkts": 0xFFFFFFFF,
    "PortXmitWait": 0xFFFFFFFF,
}


@dataclass(frozen=True)
class HealthFinding:
    """One thing a state or counter output shows that is worth acting on."""

    code: str
    """Stable id (``ib-symbol-errors``, ``port-down``, ``nvlink-inactive`` ...)."""
    severity: str
    """``error``, ``warning`` or ``info``."""
    where: str
    """The port or device (``LG01-01 port 3``, ``GPU 2 link 7``, ``PSU1``)."""
    message: str
    """What the output shows and what it usually means, one line."""
    fix: str
    """What to do, one line."""
    source: str
    """The document the threshold or meaning comes from."""
    origin: str = ""
    """The file it was read from."""

    def to_json(self) -> dict[str, Any]:
        """Every field."""
        return {
            "code": self.code,
            "severity": self.severity,
            "where": self.where,
            "message": self.message,
            "fix": self.fix,
            "source": self.source,
            "origin": self.origin,
        }


def _rules_for(name: str, fmt: str) -> tuple[CounterRule, ...]:
    if fmt in ("nvlink",):
        return NVLINK_RULES
    if fmt == "ethtool":
        return MLX5_RULES
    if fmt == "nvidia-smi-q":
        return ()
    return IB_RULES


def counter_findings(
    where: str, counters: dict[str, int], fmt: str, origin: str = ""
) -> list[HealthFinding]:
    """Findings for one port's counters.

    Args:
        where: The port as findings name it.
        counters: Its counters by printed name.
        fmt: The importer that read them (picks the rule set).
        origin: The file, for the finding.

    Returns:
        One finding per counter above 0 that a rule knows (``info`` below the rule's
        threshold), and one per counter stuck at its field's largest value.
    """
    out: list[HealthFinding] = []
    rules = _rules_for(where, fmt)
    for name, value in counters.items():
        if value <= 0:
            continue
        top = SATURATION.get(name)
        extended = fmt in ("perfquery",) and "Extended" in name
        if top is not None and value == top and not extended:
            out.append(
                HealthFinding(
                    "counter-saturated",
                    "warning",
                    where,
                    f"{name} = {value:,} is the largest value its field holds: the counter "
                    "stopped there, so the real count (and any rate from it) is unknown",
                    "clear it (perfquery -R LID PORT) and read it again after a known interval",
                    SOURCES["ib-widths"],
                    origin,
                )
            )
        rule = next((r for r in rules if re.search(r.pattern, name, re.IGNORECASE)), None)
        if rule is None:
            continue
        severity = rule.severity if value >= rule.threshold else "info"
        out.append(
            HealthFinding(
                rule.code,
                severity,
                where,
                f"{name} = {value:,} (threshold {rule.threshold:,}): {rule.meaning}",
                rule.fix,
                SOURCES[rule.source],
                origin,
            )
        )
    return out


#: Codes of the findings on a port's state, not on its counters: a port down, inactive or
#: degraded is not erroring for them (``services.health.conditions``).
STATE_CODES = frozenset({"port-down", "nvlink-inactive", "link-degraded"})

#: What a port finding's fix says ``--health`` does with the port (its last clause).
PRICED_DOWN = "the fabric is priced without it (--health)"
PRICED_DEGRADED = "priced at its trained rate (--health)"
PRICED_NVLINK = "the GPU's scale-up bandwidth is priced without it (--health)"


def not_applied(finding: HealthFinding, why: str) -> HealthFinding:
    """``finding`` saying that ``--health`` does not apply its port, and why, where its fix
    said how the fabric is priced without it (a finding that claims nothing, or already
    says why, is returned as it is).

    Args:
        finding: A port's finding.
        why: Why its condition changed nothing (``LG01-05 is not a switch of selene``).
    """
    for claim in (PRICED_DOWN, PRICED_DEGRADED, PRICED_NVLINK):
        if finding.fix.endswith(claim):
            fix = finding.fix[: -len(claim)] + f"--health does not apply it: {why}"
            return replace(finding, fix=fix)
    return finding


#: What a port that is not up usually means, by state.
STATE_MEANING = {
    "down": "the port is down: no cable, a cable or transceiver that failed, or its peer is off",
    "polling": "the port is polling for a peer: nothing answers on the cable (unplugged, a "
    "dead transceiver, or the peer port is down or disabled)",
    "disabled": "the port is disabled (administratively, or by the peer or firmware)",
    "inactive": "the link is not active",
    "init": "the link trained but the subnet manager has not configured it (no SM, or the SM "
    "does not reach it)",
    "armed": "the link is configured but not yet activated by the subnet manager",
}


def port_findings(
    where: str,
    state: str,
    degraded: bool,
    detail: str,
    fmt: str,
    origin: str = "",
) -> list[HealthFinding]:
    """Findings for a port's state: down, polling, disabled ... or degraded.

    Args:
        where: The port as findings name it.
        state: Its state (``port_health.STATES``).
        degraded: It runs below its width or speed.
        detail: What it trained at and could be (``1X, could be 4X``).
        fmt: The importer that read it.
        origin: The file.
    """
    out: list[HealthFinding] = []
    nvlink = fmt in ("nvlink", "dcgmi-diag")
    if state in STATE_MEANING:
        code = "nvlink-inactive" if nvlink else "port-down"
        fix = (
            "run `dcgmi diag -r 2`; an NVLink that stays inactive needs the GPU or baseboard "
            f"serviced; {PRICED_NVLINK}"
            if nvlink
            else "check the cable and the peer (iblinkinfo shows the peer; ibportstate LID PORT "
            f"enable re-enables a disabled port); {PRICED_DOWN}"
        )
        out.append(
            HealthFinding(
                code,
                "warning",
                where,
                f"{state}: {STATE_MEANING[state]}" + (f" ({detail})" if detail else ""),
                fix,
                SOURCES["nvlink-state" if nvlink else "port-state"],
                origin,
            )
        )
    if degraded:
        out.append(
            HealthFinding(
                "link-degraded",
                "warning",
                where,
                f"runs below what both ends support ({detail}): lanes that failed to train (a "
                "bad cable, connector or transceiver) or a speed fallback",
                "reseat or replace the cable/transceiver and let the link retrain (mlxlink -d "
                f"DEV --port_state / ibportstate reset); {PRICED_DEGRADED}",
                SOURCES["could-be"],
                origin,
            )
        )
    return out


def health_item_finding(
    device: str, status: str, detail: str, fmt: str, origin: str = ""
) -> HealthFinding:
    """The finding for a health item that is not ok (a PSU, a test, a log error ...)."""
    text = f"{status}" + (f": {detail}" if detail else "")
    if fmt == "ibswinfo":
        return HealthFinding(
            "switch-hardware",
            "warning",
            device,
            f"{text}: the switch runs without redundancy (a failed supply or fan)",
            "replace the PSU or fan tray; the switch keeps running on the others",
            SOURCES["ibswinfo"],
            origin,
        )
    if fmt == "fabric-manager":
        fatal = status == "fatal" or "fatal error" in detail and "non-fatal" not in detail
        return HealthFinding(
            "fabric-manager-error",
            "error" if fatal else "warning",
            device,
            text,
            "a fatal NVSwitch error needs the GPUs and NVSwitches reset (drain the node, "
            "nvidia-smi -r or reboot); non-fatal errors that repeat on one port point at that "
            "NVLink",
            SOURCES["fabric-manager"],
            origin,
        )
    if fmt == "dcgmi-diag":
        return HealthFinding(
            "dcgm-diag-failed",
            "error" if status.lower().startswith("fail") else "warning",
            device,
            text,
            "read the test's message; rerun the diagnostic at a deeper level (-r 3) before "
            "returning the node to service",
            SOURCES["dcgm-diag"],
            origin,
        )
    if fmt == "mlxlink":
        return HealthFinding(
            "link-module-flags",
            "warning",
            device,
            f"{text}: the receiver lost signal or lock on those lanes (a bad cable or "
            "transceiver; on a passive copper cable whose diagnostics read all zeros the flags "
            "may not be meaningful)",
            "compare with the link's BER (mlxlink -c); reseat or replace the cable",
            SOURCES["mlxlink"],
            origin,
        )
    if fmt == "nvidia-smi-q":
        return HealthFinding(
            "nvlink-fabric-unhealthy",
            "error" if "Success" not in status else "warning",
            device,
            f"NVLink fabric {text}: the GPU is not a healthy member of its NVLink domain "
            "(multi-node NVLink collectives fall back or fail)",
            "check the fabric manager / NMX controller and the IMEX service; drain the node "
            "until the GPU registers with Status Success and Health Healthy",
            SOURCES["nvswitch-fabric"],
            origin,
        )
    return HealthFinding(
        "health-item", "warning", device, text, "see the tool's own documentation", fmt, origin
    )
