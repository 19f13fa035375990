"""Synthetic ``ibstat`` outputs for the health tests: one-port InfiniBand adapters
``mlx5_<k>``, some down, each at a chosen rate (the layout ``ibstat`` prints, tabs and all)."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Union

Rate = Union[float, Mapping[int, float]]


def ibstat_text(
    hcas: Iterable[int] = range(8),
    *,
    down: Container[int] = (),
    down_phys: str = "Disabled",
    rate_Gbps: Rate = 400,
    ca_type: str | None = "MT4129",
    guids: bool = False,
) -> str:
    """``ibstat`` of one-port adapters ``mlx5_<k>`` for ``k`` in ``hcas``: those in ``down``
    ``Down`` (physical state ``down_phys``), the others ``Active``; ``rate_Gbps`` one rate
    for all or one per adapter; ``ca_type`` None leaves the line out, ``guids`` adds each
    port's GUID."""
    lines = []
    for k in hcas:
        state, phys = ("Down", down_phys) if k in down else ("Active", "LinkUp")
        rate = rate_Gbps[k] if isinstance(rate_Gbps, Mapping) else rate_Gbps
        lines.append(f"CA 'mlx5_{k}'")
        if ca_type is not None:
            lines.append(f"\tCA type: {ca_type}")
        lines += [
            "\tNumber of ports: 1",
            "\tPort 1:",
            f"\t\tState: {state}",
            f"\t\tPhysical state: {phys}",
            f"\t\tRate: {rate:g}",
        ]
        if guids:
            lines.append(f"\t\tPort GUID: 0x0c42a10300{k:06x}")
        lines.append("\t\tLink layer: InfiniBand")
    return "\n".join(lines) + "\n"
