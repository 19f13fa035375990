"""Two fabrics side by side (a topology before and after a what-if, or two topologies): the
figures a user weighs, each with its change, computed the same way for both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.errors import FabricError
from fabricui.units import format_bytes

if TYPE_CHECKING:
    from fabricui.engine.evaluate import PathReport
    from fabricui.services.loaded import LoadedFabric

#: All-reduce sizes compared [bytes]: latency-bound, middle, bandwidth-bound.
ALL_REDUCE_SIZES = (2**20, 2**26, 2**30)


@dataclass(frozen=True)
class ComparedFigure:
    """One figure on both fabrics."""

    name: str
    """What it is (``path bottleneck n0.g0 -> n3.g7``)."""
    unit: str
    """``GB/s``, ``us`` ..."""
    a: float | None
    """On the first fabric (None: does not apply there)."""
    b: float | None
    """On the second fabric."""
    higher_is_better: bool = True
    """Bandwidths: higher is better; times: lower."""

    @property
    def ratio(self) -> float | None:
        """``b / a`` (None when either is missing or ``a`` is 0)."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return self.b / self.a

    @property
    def better(self) -> bool | None:
        """Whether ``b`` is better than ``a`` (None: equal or not comparable)."""
        ratio = self.ratio
        if ratio is None or abs(ratio - 1) < 1e-9:
            return None
        return (ratio > 1) == self.higher_is_better


def compare(
    a: LoadedFabric, b: LoadedFabric, src: str | None = None, dst: str | None = None
) -> list[ComparedFigure]:
    """The figures of ``a`` and ``b``: the path between ``src`` and ``dst`` (when both
    fabrics have those GPUs), all-reduce over every GPU at three sizes, and each pyramid
    tier both have.

    Raises:
        FabricError: A computation one of the fabrics cannot make (named by the engine).
    """
    figures = path_figures(a, b, src, dst) if src and dst else []
    predictions = [data.collective("all_reduce", "all", list(ALL_REDUCE_SIZES)) for data in (a, b)]
    for i, size in enumerate(ALL_REDUCE_SIZES):
        pa, pb = (float(p.busbw_GBps[i]) for p in predictions)
        figures.append(ComparedFigure(f"all_reduce {format_bytes(size)}: busbw", "GB/s", pa, pb))
    return figures + tier_figures(a, b)


def path_figures(a: LoadedFabric, b: LoadedFabric, src: str, dst: str) -> list[ComparedFigure]:
    """The path between ``src`` and ``dst`` on both fabrics: bottleneck, latency and a
    1 GiB transfer (a side without those GPUs, or without a route, has None)."""
    reports: list[PathReport | None] = []
    for data in (a, b):
        try:
            reports.append(data.path(data.parse_gpu(src), data.parse_gpu(dst), 2**30))
        except FabricError:
            reports.append(None)
    ra, rb = reports
    label = f"{src} -> {dst}"
    return [
        ComparedFigure(
            f"path {label}: bottleneck",
            "GB/s",
            ra.bottleneck_GBps if ra else None,
            rb.bottleneck_GBps if rb else None,
        ),
        ComparedFigure(
            f"path {label}: latency",
            "us",
            ra.latency_us if ra else None,
            rb.latency_us if rb else None,
            higher_is_better=False,
        ),
        ComparedFigure(
            f"path {label}: 1 GiB transfer",
            "us",
            ra.transfer_us if ra else None,
            rb.transfer_us if rb else None,
            higher_is_better=False,
        ),
    ]


def tier_figures(a: LoadedFabric, b: LoadedFabric) -> list[ComparedFigure]:
    """Each bandwidth pyramid tier both fabrics have, paired by what it is (a faster NIC,
    the newer memory): ``tier NIC (InfiniBand NDR) / NIC (InfiniBand XDR)``."""
    tiers_b = {t.kind: t for t in b.pyramid()}
    figures = []
    for tier in a.pyramid():
        other = tiers_b.get(tier.kind)
        if other is not None:
            name = tier.name if other.name == tier.name else f"{tier.name} / {other.name}"
            figures.append(ComparedFigure(f"tier {name}", "GB/s", tier.bw_GBps, other.bw_GBps))
    return figures
