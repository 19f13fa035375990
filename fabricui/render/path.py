"""The routed path as text: a table of hops and its figures (``fabricui path``, the TUI's
path panel)."""

from __future__ import annotations

from fabricui.engine.evaluate import PathReport
from fabricui.engine.paths import Hop
from fabricui.fabric.fabric import Fabric
from fabricui.fabric.ids import placement
from fabricui.render.table import text_table
from fabricui.units import format_bandwidth, format_bytes, format_time_us


def hop_hardware(hop: Hop) -> str:
    """``NVIDIA ConnectX-7 NDR ... -> NVIDIA Quantum-2 QM9700 (NDR)``: the hop's two ends."""
    return f"{hop.src_model or '?'} -> {hop.dst_model or '?'}"


def render_path(report: PathReport, fabric: Fabric) -> str:
    """The routed path as a table of hops followed by its figures."""
    where = placement(fabric, report.src_rank, report.dst_rank)
    n = len(report.hops)
    lines = [f"{report.topology}: {report.src} -> {report.dst} ({where}, {n} hop{'s' * (n != 1)})"]
    rows = [("#", "from", "to", "link", "GB/s", "lat us", "")]
    for i, hop in enumerate(report.hops):
        mark = "<- bottleneck" if i == report.bottleneck_hop else ""
        rows.append(
            (
                str(i + 1),
                hop.src,
                hop.dst,
                hop.label,
                f"{hop.transfer_GBps:.1f}",
                f"{hop.lat_us:.3f}",
                mark,
            )
        )
    lines += text_table(rows, right={0, 4, 5}, indent="  ")
    hop = report.hops[report.bottleneck_hop]
    lines.append(
        f"bottleneck: {format_bandwidth(report.bottleneck_GBps)} per direction, "
        f"hop {report.bottleneck_hop + 1} {hop.src} -> {hop.dst} ({hop.link})"
    )
    if hop.src_model or hop.dst_model:
        lines.append(f"hardware:   {hop_hardware(hop)}")
    lines.append(f"latency:    {format_time_us(report.latency_us)} (links + switches + NICs)")
    if report.transfer_us is not None and report.size_bytes is not None:
        lines.append(
            f"transfer:   {format_bytes(report.size_bytes)} in {format_time_us(report.transfer_us)}"
            f" (latency + size / bottleneck)"
        )
    return "\n".join(lines)
