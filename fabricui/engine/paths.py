"""Path metrics: bottleneck bandwidth, latency and transfer time of a routed path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.fabric.fabric import Fabric, FloatArray, IntArray


@dataclass(frozen=True)
class Hop:
    """One link of a path, as shown to users."""

    src: str
    """Device the hop leaves (``n0.g3``)."""
    dst: str
    """Device the hop enters."""
    link: str
    """Link generation id (``nvlink4``)."""
    count: int
    """Parallel links aggregated in this hop (18 NVLinks, 4 NIC ports)."""
    bw_GBps: float
    """Bandwidth per direction [GB/s]."""
    lat_us: float
    """Link latency plus the latency of ``dst`` when it forwards the traffic [us]."""
    src_model: str = ""
    """Hardware of ``src`` (``NVIDIA ConnectX-7 NDR (400 Gb/s InfiniBand)``)."""
    dst_model: str = ""
    """Hardware of ``dst``."""
    routes: int = 1
    """Equal links a transfer spreads over at this hop (a leaf's uplinks to its spines,
    ECMP and adaptive routing over NCCL's channels); this hop's link is one of them."""
    spread_GBps: float = 0.0
    """What a transfer gets at this hop: ``bw_GBps`` over the share of the transfer this
    link carries (``bw_GBps * routes`` for an even spread) [GB/s]; 0: ``bw_GBps``."""
    src_device: int = -1
    """Device id of ``src`` in its fabric (what views mark on the map)."""
    dst_device: int = -1
    """Device id of ``dst``."""

    @property
    def transfer_GBps(self) -> float:
        """Bandwidth a transfer gets at this hop [GB/s] (``spread_GBps``, else the link's)."""
        return self.spread_GBps or self.bw_GBps

    @property
    def label(self) -> str:
        """``nvlink5 x18`` (parallel links in the hop), ``ib-xdr, 32 routes`` (equal links
        the transfer spreads over), as the path table shows it."""
        text = self.link + (f" x{self.count}" if self.count > 1 else "")
        return text + (f", {self.routes} routes" if self.routes > 1 else "")


def hop_latencies_us(fabric: Fabric, links: IntArray) -> FloatArray:
    """Per-hop latency: link latency plus the forwarding latency of the device entered.

    Args:
        fabric: The fabric.
        links: (n_hops,) link ids of a path.

    Returns:
        (n_hops,) latencies [us]; the last hop enters the destination, which adds nothing.
    """
    lat = fabric.link_lat_us[links].astype(np.float64)
    if links.shape[0] > 1:
        lat[:-1] += fabric.dev_lat_us[fabric.link_dst[links[:-1]]]
    return lat


def path_latency_us(fabric: Fabric, links: IntArray) -> float:
    """Latency of a path: link latencies plus switch and NIC forwarding latencies [us]."""
    return float(hop_latencies_us(fabric, links).sum())


def path_bottleneck(fabric: Fabric, links: IntArray) -> tuple[float, int]:
    """Narrowest link of a path.

    Returns:
        (bandwidth [GB/s], link id); (inf, -1) for an empty path.
    """
    if links.shape[0] == 0:
        return float("inf"), -1
    position = int(np.argmin(fabric.link_bw_GBps[links]))
    return float(fabric.link_bw_GBps[links[position]]), int(links[position])


def transfer_time_us(size_bytes, lat_us, bw_GBps):
    """Time to move a message over a path: ``lat + size / bw``.

    Args:
        size_bytes: Message size(s) [bytes]; scalar or array.
        lat_us: Path latency [us].
        bw_GBps: Bottleneck bandwidth [GB/s] (1 GB/s = 1000 bytes/us).

    Returns:
        Transfer time(s) [us], same shape as ``size_bytes``.

    Notes:
        ``t = lat_us + size_bytes / (1000 * bw_GBps)``.
    """
    size = np.asarray(size_bytes, dtype=np.float64)
    result = lat_us + size / (1000.0 * bw_GBps)
    return float(result) if result.ndim == 0 else result


def spread_bandwidth_GBps(
    fabric: Fabric, links: IntArray, shares: FloatArray | None
) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """What a transfer gets at each hop when it spreads over equal links.

    Args:
        fabric: The fabric.
        links: (n_hops,) link ids of the path as routed.
        shares: (n_links,) fraction of the transfer every link carries
            (``BulkRouter.link_shares``); None: the path's own links carry all of it.

    Returns:
        (n_hops,) bandwidth [GB/s] ``bw / share`` and (n_hops,) the number of equal links
        spread over (``round(1 / share)``).

    Notes:
        A hop whose link carries a share ``f`` of the transfer runs at ``bw / f``: a leaf
        spreading a flow over 32 equal uplinks gives it 32 cables' worth.
    """
    bw = fabric.link_bw_GBps[links].astype(np.float64)
    if shares is None:
        return bw, np.ones(links.shape[0], dtype=np.int64)
    share = shares[links]
    # A hop outside the spread (never expected) keeps its own link: the route crosses it.
    share = np.where((share > 0) & (share < 1), share, 1.0)
    return bw / share, np.maximum(1, np.rint(1.0 / share)).astype(np.int64)


def describe_hops(fabric: Fabric, links: IntArray, shares: FloatArray | None = None) -> list[Hop]:
    """The hops of a path with names, generations and per-hop figures.

    Args:
        fabric: The fabric.
        links: (n_hops,) link ids of the path.
        shares: (n_links,) fraction of a transfer every link carries (see
            ``spread_bandwidth_GBps``); None: one route carries all of it.
    """
    lat = hop_latencies_us(fabric, links)
    spread, routes = spread_bandwidth_GBps(fabric, links, shares)
    return [
        Hop(
            src=fabric.device_name(int(fabric.link_src[k])),
            dst=fabric.device_name(int(fabric.link_dst[k])),
            link=fabric.generations[int(fabric.link_gen[k])],
            count=int(fabric.link_count[k]),
            bw_GBps=float(fabric.link_bw_GBps[k]),
            lat_us=float(lat[i]),
            src_model=fabric.model_of(int(fabric.link_src[k])),
            dst_model=fabric.model_of(int(fabric.link_dst[k])),
            routes=int(routes[i]),
            spread_GBps=float(spread[i]),
            src_device=int(fabric.link_src[k]),
            dst_device=int(fabric.link_dst[k]),
        )
        for i, k in enumerate(links)
    ]
