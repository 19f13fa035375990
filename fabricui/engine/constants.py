"""Model constants: the same for every fabric and every measurement (no per-entry knobs).

They describe the communication library's overheads (launch, per-step synchronisation,
protocol wire efficiency), not the hardware: hardware figures live in hwdb. Values start
from the structure of NCCL's own tuning model (see shared/data/nccl/nccl_model_facts.md)
and are kept few, so the model predicts machines it has not seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelConstants:
    """Overheads and efficiencies of the collective library."""

    launch_us: float = 4.0
    """Fixed cost of one collective call, kernel launch and completion [us]."""
    single_process_us_per_gpu: float = 2.5
    """Extra launch cost per GPU when one process drives every GPU of a node [us]."""
    base_us: dict[str, float] = field(
        default_factory=lambda: {"ll": 2.0, "ll128": 6.0, "simple": 6.0}
    )
    """Per-call setup of each protocol [us]."""
    step_us: dict[str, float] = field(
        default_factory=lambda: {"ll": 0.4, "ll128": 1.2, "simple": 2.5}
    )
    """Synchronisation cost of one algorithm step within a node, per protocol [us]
    (added to the routed path's latency)."""
    net_step_us: dict[str, float] = field(
        default_factory=lambda: {"ll": 2.5, "ll128": 4.0, "simple": 8.0}
    )
    """Cost of one step that crosses the network, per protocol, beyond the path latency [us]."""
    protocol_efficiency: dict[str, float] = field(
        default_factory=lambda: {"ll": 0.5, "ll128": 0.92, "simple": 1.0}
    )
    """Fraction of the wire carrying data: LL sends 4 data bytes per 8, LL128 120 per 128."""
    ll_cap_GBps: tuple[float, ...] = (39.0, 87.7, 141.0, 282.0)
    """Ceiling of LL bus bandwidth on one node, by architecture (Volta, Ampere, Hopper,
    Blackwell) [GB/s]: LL's flag polling cannot drive faster links."""
    ll_cap_multinode_GBps: float = 35.0
    """Ceiling of LL bus bandwidth across nodes [GB/s]."""
    tree_efficiency: float = 0.9
    """Tree pipelines reach this fraction of the flows' bandwidth (fan-in/fan-out stalls)."""
    p2p_efficiency: float = 0.85
    """Point-to-point transfers (send/recv, all-to-all) reach this fraction of the flows'
    bandwidth (fewer channels per peer than collectives)."""
    nvls_efficiency: float = 0.74
    """NVLink SHARP reductions reach this fraction of the NVLink capacity."""
    pcie_no_p2p_efficiency: float = 0.5
    """Staging through host memory copies every byte twice (device to host, host to device)."""


DEFAULT = ModelConstants()
