"""Collective cost model: alpha-beta per algorithm and protocol, derived from the fabric.

For one algorithm and protocol the time of a collective of ``S`` bytes (nccl-tests size
convention) is

    t(S) = alpha + S * spb / protocol_efficiency

``spb`` (microseconds per message byte) comes from the algorithm's flows routed on the fabric
(``Group.seconds_per_byte``); ``alpha`` is a launch cost plus a per-step cost for every
step of the algorithm (a protocol overhead plus the routed path's latency). ``auto`` takes,
per size, the fastest enabled (algorithm, protocol), as NCCL does.

nccl-tests' definitions are used for reporting: ``algbw = S / t`` and ``busbw = algbw *
bus_factor(op, n)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.types import CollectiveAlgorithm
from fabricui.errors import EngineError, FabricError, PluginError
from fabricui.fabric.kinds import DeviceKind
from fabricui.vocabulary import OPS, PROTOCOLS

FloatArray = npt.NDArray[np.float64]


def bus_factor(op: str, nranks: int) -> float:
    """nccl-tests' busbw / algbw factor for ``op`` on ``nranks`` ranks.

    Notes:
        all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast,
        reduce, send_recv 1.
    """
    if op not in OPS:
        raise EngineError(f"unknown collective {op!r} (one of {', '.join(OPS)})")
    n = max(1, nranks)
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def algbw_GBps(size_bytes: npt.ArrayLike, time_us: npt.ArrayLike) -> FloatArray:
    """nccl-tests algorithm bandwidth: size / time [GB/s] (bytes/us / 1000)."""
    size = np.asarray(size_bytes, dtype=np.float64)
    time = np.asarray(time_us, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(time > 0, size / time / 1e3, 0.0)


def ideal_time_us(op: str, size_bytes: npt.ArrayLike, nranks: int, bw_GBps: float) -> FloatArray:
    """Textbook bandwidth-only time: ``bus_factor * S / BW`` (e.g. ring all-reduce
    ``2(N-1)/N * M / BW``) [us].

    Args:
        op: Collective name.
        size_bytes: Message size(s) in nccl-tests' convention [bytes].
        nranks: Number of ranks.
        bw_GBps: Per-rank link bandwidth [GB/s].
    """
    if bw_GBps <= 0:
        raise EngineError(f"bandwidth must be positive (got {bw_GBps})")
    size = np.asarray(size_bytes, dtype=np.float64)
    return bus_factor(op, nranks) * size / (bw_GBps * 1e3)


@dataclass(frozen=True)
class Prediction:
    """Per-size results of one collective."""

    op: str
    """Operation."""
    nranks: int
    """Ranks in the group."""
    size_bytes: FloatArray
    """(n_sizes,) sizes [bytes]."""
    time_us: FloatArray
    """(n_sizes,) predicted time [us]."""
    algorithm: tuple[str, ...]
    """Chosen ``algorithm/protocol`` per size."""

    @property
    def algbw_GBps(self) -> FloatArray:
        """(n_sizes,) size / time [GB/s]."""
        return algbw_GBps(self.size_bytes, self.time_us)

    @property
    def busbw_GBps(self) -> FloatArray:
        """(n_sizes,) algbw times nccl-tests' bus factor [GB/s]."""
        return self.algbw_GBps * bus_factor(self.op, self.nranks)


#: First NCCL release that keeps LL128 on a NIC reached through a Grace CPU's NVLink-C2C
#: (its ``P2C`` path type and ``NCCL_LL128_C2C=1``; src/graph/tuning.cc of v2.27.3).
LL128_OVER_C2C_SINCE = (2, 27, 0)


def parse_library_version(text: object) -> tuple[int, int, int] | None:
    """The ``(major, minor, patch)`` release a version string names, or None.

    Args:
        text: ``"2.23.4-1 (uenv ...)"``, ``"2.29.2+cuda13.1"``, ``"not printed"`` or None.

    Returns:
        The first ``major.minor.patch`` found, or None when there is none.
    """
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", str(text or ""))
    if match is None:
        return None
    major, minor, patch = (int(v) for v in match.groups())
    return major, minor, patch


def nic_path(group) -> str:  # type: ignore[no-untyped-def]
    """How a GPU of the group reaches its NIC, in NCCL's path classes.

    Returns:
        ``pci`` (through PCIe switches only: NCCL's PIX/PXB), ``c2c`` (through a CPU the GPU
        joins over NVLink-C2C, a Grace: NCCL's P2C) or ``host`` (through a CPU's root
        complex over PCIe: NCCL's PHB); ``pci`` without a NIC.
    """
    fabric = group.fabric
    try:
        links = group.router.to_leaf(int(group.ranks[0]))
    except FabricError:
        return "pci"
    hops = fabric.link_dst[links[:-1]]
    cpu = np.flatnonzero(fabric.dev_kind[hops] == DeviceKind.CPU)
    if cpu.size == 0:
        return "pci"
    first = int(links[cpu[0]])  # the link into the CPU
    return "c2c" if fabric.generations[int(fabric.link_gen[first])] == "nvlink-c2c" else "host"


def ll128_over_network(group) -> bool:  # type: ignore[no-untyped-def]
    """Whether NCCL keeps LL128 for a group whose traffic crosses the network.

    NCCL enables LL128 only where it has been validated: on Hopper and newer for NIC paths
    up to PXN (a PCIe switch, or PXN over NVLink), and since 2.27 through a Grace's
    NVLink-C2C (P2C); a NIC on a CPU's root complex (PHB) disables it, as does a Grace's
    NIC before 2.27 (src/graph/tuning.cc: ``typeInter <= PATH_PXB || (minCompCap >= 90
    && typeInter <= PATH_PXN)`` in v2.23.4-v2.26.2, ``<= (LL128_C2C ? PATH_P2C :
    PATH_PXN)`` from v2.27.3). An unknown release is taken as the current one.

    Args:
        group: A group spanning nodes.

    Returns:
        False when the GPU-to-NIC path disables LL128.
    """
    path = nic_path(group)
    if path == "pci":
        return True
    if path == "host":
        return False
    version = group.library_version
    return version is None or version >= LL128_OVER_C2C_SINCE


def network_protocols(group, protocols: tuple[str, ...]) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    """``protocols`` minus those the network path cannot carry, when the group crosses
    nodes: the NICs' transport (EFA's first generation, without in-order delivery, carries
    only Simple) and LL128 where NCCL disables it for the GPU-to-NIC path
    (``ll128_over_network``)."""
    if group.n_nodes < 2:
        return protocols
    allowed = group.fabric.net_protocols
    if allowed:
        protocols = tuple(p for p in protocols if p in allowed)
    if "ll128" in protocols and not group.memo("ll128-network", lambda: ll128_over_network(group)):
        protocols = tuple(p for p in protocols if p != "ll128")
    return protocols


def link_protocols(group, protocols: tuple[str, ...]) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    """``protocols`` minus those a link generation between the group's GPUs cannot carry
    (its hwdb ``protocols``: a vendor link without LL128 says so instead of losing it
    silently)."""
    allowed = group.link_protocols
    if allowed is None:
        return protocols
    return tuple(p for p in protocols if p in allowed)


def predict(
    group,  # type: ignore[no-untyped-def]
    op: str,
    size_bytes: npt.ArrayLike,
    algorithms: list[CollectiveAlgorithm],
    algo: str = "auto",
    protocols: tuple[str, ...] = PROTOCOLS,
) -> Prediction:
    """Predict a collective on a group for every size, choosing the fastest algorithm.

    Args:
        group: The ``Group`` of ranks.
        op: Collective name (``OPS``).
        size_bytes: (n_sizes,) sizes [bytes], nccl-tests convention.
        algorithms: Candidate algorithms (core and plugin ones).
        algo: ``auto`` or one algorithm name.
        protocols: Protocols allowed.

    Returns:
        Per-size time and the algorithm/protocol chosen.

    Raises:
        EngineError: Unknown op or algorithm, or none applies.
    """
    if op not in OPS:
        raise EngineError(f"unknown collective {op!r} (one of {', '.join(OPS)})")
    sizes = np.atleast_1d(np.asarray(size_bytes, dtype=np.float64))
    if (sizes < 0).any() or not np.isfinite(sizes).all():
        raise EngineError("sizes must be finite and not negative")
    if sizes.shape[0] == 0:
        return Prediction(
            op=op, nranks=group.n, size_bytes=sizes, time_us=sizes.copy(), algorithm=()
        )
    known = {a.name for a in algorithms}
    if algo != "auto" and algo not in known:
        raise EngineError(f"unknown algorithm {algo!r} (available: {', '.join(sorted(known))})")
    protocols = link_protocols(group, network_protocols(group, protocols))
    candidates = [a for a in algorithms if (algo in ("auto", a.name)) and op in a.ops]
    usable = [a for a in candidates if a.applicable(group, op)]
    if not usable:
        names = ", ".join(a.name for a in candidates) or "none"
        raise EngineError(f"no algorithm can run {op} on this group (tried: {names})")
    times, labels, skipped = [], [], []
    for alg in usable:
        for proto in alg.protocols:
            if proto not in protocols:
                continue
            try:
                t = np.asarray(alg.time_us(group, op, sizes, proto), dtype=np.float64)
            except PluginError as exc:
                # A plugin's algorithm failed; the plugin host recorded and reports it, and
                # the other algorithms still price the collective.
                skipped.append(exc.message)
                break
            times.append(t)
            labels.append(f"{alg.name}/{proto}")
    if not times and skipped:
        raise EngineError(f"no algorithm could run {op}: {skipped[0]}")
    if not times:
        raise EngineError(f"no protocol of {', '.join(a.name for a in usable)} is allowed")
    table = np.vstack(times)
    best = np.argmin(table, axis=0)
    return Prediction(
        op=op,
        nranks=group.n,
        size_bytes=sizes,
        time_us=table[best, np.arange(sizes.shape[0])],
        algorithm=tuple(labels[i] for i in best),
    )
