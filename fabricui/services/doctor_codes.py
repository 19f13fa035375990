"""The doctor's words: severities and every finding code with what it means (stable, in
``fabricui doctor --help``), kept apart from the checks so that the help costs no import of
them."""

from __future__ import annotations

#: Severities, most severe first.
SEVERITIES = ("error", "warning", "info")

#: The NCCL variables the log's checks read from ``--env`` (the log's own ``set by
#: environment`` lines win); another job variable given there changes nothing, and is said.
ENV_READ = (
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_NVLS_ENABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
)

#: Every finding code and what it means (stable; documented in ``fabricui doctor --help``).
CODES: dict[str, str] = {
    "ib-completion-error": "an InfiniBand/RoCE work request completed with an error",
    "nccl-call-failed": "an NCCL call returned an error (error-return trace lines)",
    "net-socket-fallback": "inter-node traffic uses TCP sockets instead of RDMA",
    "libibverbs-missing": "libibverbs could not be loaded, so NET/IB is unavailable",
    "gdr-disabled": "GPUDirect RDMA is off for an HCA or NET/IB connections lack GDRDMA",
    "shm-intra-node": "GPUs of one node talk through host shared memory instead of P2P",
    "nvls-unavailable": "NVLink SHARP (NVLS) is not available or has 0 channels",
    "mixed-ib-roce": "InfiniBand and RoCE ports are mixed in one NET/IB list",
    "ib-disable-ignored": "NCCL_IB_DISABLE=1 is set but an IB transport is still used",
    "loopback-bootstrap": "NCCL bootstraps or sends over the loopback interface",
    "p2p-disabled": "peer-to-peer between GPUs is disabled by NCCL_P2P_DISABLE/LEVEL",
    "nccl-warn": "another NCCL WARN line",
    "external-net-plugin": "an external network plugin carries the traffic",
    "tuner-plugin": "a tuner plugin, not NCCL's own model, picks algorithms and protocols",
    "no-transport-lines": "the log shows no connection lines to check transports with",
}

#: Every code the algorithm check reports (stable).
ALGORITHM_CODES: dict[str, str] = {
    "nccl-pick-not-best": "a collective NCCL logged runs an algorithm/protocol that is "
    "clearly slower on this fabric than another NCCL could run",
    "nccl-pick-unexpected": "NCCL logged an algorithm other than the one the model of its "
    "tuner predicts for this fabric and release",
}

#: Every code the fabric comparison reports (stable; in ``fabricui doctor --help``): the log
#: against the fabric, and each collective's algorithm.
FABRIC_CODES: dict[str, str] = {
    "log-host-unknown": "a host of the log is not a host of the topology",
    "log-fabric-mismatch": "the log's GPUs or NICs per host do not fit the topology",
    "ring-extra-crossings": "a ring climbs to spines or cores more often than the job's "
    "placement needs",
    "tree-extra-crossings": "a tree's edges climb to spines or cores more often than the same "
    "tree over the nodes in switch order",
    "nic-not-gpu-rail": "a rank moves its network traffic through a NIC other than its GPU's",
    "pxn-absent": "cross-rail traffic that PXN would keep on one rail goes over the spines",
    "cross-rail-traffic": "a connection leaves on one rail and arrives on another",
    "channels-below-nics": "fewer channels than the job's nodes have NICs: some NICs idle",
    **ALGORITHM_CODES,
}
