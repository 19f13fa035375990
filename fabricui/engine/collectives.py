"""Collective cost model: alpha-beta per algorithm and protocol, derived from the fabric.

For one algorithm and protocol the time of a collective of ``S`` bytes (nccl-tests size
convention) is

    t(S) = alpha + S * spb / protocol_efficiency

``spb`` (microseconds per message byte) comes from the algorithm's flows routed on the fabric
(``Group.seconds_per_byte``); ``alpha`` is a launch cost plus a per-step cost for every
step of the algorithm (a protocol overhead plus the routed path's latency). ``auto`` takes,
per size, the (algorithm, protocol) NCCL's own tuner picks (``fabricui.engine.nccl``), and
reports the fastest one beside it.

nccl-tests' definitions are used for reporting: ``algbw = S / t`` and ``busbw = algbw *
bus_factor(op, n)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.constants import DEFAULT, DEFAULT_HBM_EFFICIENCY, ModelConstants
from fabricui.engine.hierarchical import HIERARCHICAL, hierarchical_choice
from fabricui.engine.issue import issue_floor_us
from fabricui.engine.nccl.picks import Choice, NcclSettings, choose, library_of, one_rank
from fabricui.engine.types import CollectiveAlgorithm
from fabricui.errors import EngineError, PluginError
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


def algorithm_time_us(
    alg: CollectiveAlgorithm, group, op: str, sizes: FloatArray, protocol: str
) -> FloatArray:
    """``alg``'s time for every size as a job sees it [us]: the algorithm's own, and no
    less than the process's issue of the call (``issue_floor_us``)."""
    t = np.asarray(alg.time_us(group, op, sizes, protocol), dtype=np.float64)
    return np.maximum(t, issue_floor_us(group, op))


def one_rank_time_us(
    group, op: str, sizes: FloatArray, constants: ModelConstants = DEFAULT
) -> FloatArray:
    """Time of a collective on one rank [us]: NCCL runs no algorithm but copies the send
    buffer into the receive buffer, device to device (``ncclLaunchOneRank``,
    src/device/onerank.cu; a send to itself is a copy too), reading and writing each byte
    once at the GPU's memory bandwidth. nccl-tests times the out-of-place call first."""
    gpu = group.fabric.gpu
    efficiency = gpu.hbm_efficiency or DEFAULT_HBM_EFFICIENCY
    copy_GBps = gpu.hbm_bw_GBps * efficiency / 2.0
    transfer = sizes / (copy_GBps * 1e3) if copy_GBps > 0 else np.zeros_like(sizes)
    return np.maximum(constants.launch_us + transfer, issue_floor_us(group, op, constants))


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
    """Per-size results of one collective.

    ``time_us`` and ``algorithm`` are the pick a job runs: NCCL's own choice on NVIDIA GPUs
    (its tuner modelled per release), the fastest pick where the library's tuner is not
    modelled. ``choice`` holds both picks, the environment that forces the faster one and
    NCCL's channels.
    """

    op: str
    """Operation."""
    nranks: int
    """Ranks in the group."""
    size_bytes: FloatArray
    """(n_sizes,) sizes [bytes]."""
    time_us: FloatArray
    """(n_sizes,) predicted time of the pick a job runs [us]."""
    algorithm: tuple[str, ...]
    """That pick's ``algorithm/protocol`` per size."""
    choice: Choice | None = None
    """NCCL's pick and the best pick per size (None for an empty sweep)."""

    @classmethod
    def of(cls, op: str, nranks: int, size_bytes: FloatArray, choice: Choice) -> Prediction:
        """The prediction whose pick a job runs is ``choice``'s first (NCCL's)."""
        return cls(
            op=op,
            nranks=nranks,
            size_bytes=size_bytes,
            time_us=choice.nccl.time_us,
            algorithm=choice.nccl.labels,
            choice=choice,
        )

    @property
    def algbw_GBps(self) -> FloatArray:
        """(n_sizes,) size / time [GB/s]."""
        return algbw_GBps(self.size_bytes, self.time_us)

    @property
    def busbw_GBps(self) -> FloatArray:
        """(n_sizes,) algbw times nccl-tests' bus factor [GB/s]."""
        return self.algbw_GBps * bus_factor(self.op, self.nranks)

    @property
    def best_time_us(self) -> FloatArray:
        """(n_sizes,) time of the fastest pick [us] (the pick itself without a choice)."""
        return self.choice.best.time_us if self.choice is not None else self.time_us

    @property
    def best_algorithm(self) -> tuple[str, ...]:
        """The fastest pick's ``algorithm/protocol`` per size."""
        return self.choice.best.labels if self.choice is not None else self.algorithm


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


def nic_path(group) -> str:
    """How a GPU of the group reaches its NIC (``Group.nic_path``): ``pci``, ``c2c`` or
    ``host``."""
    return str(group.nic_path)


def network_protocols(group, protocols: tuple[str, ...]) -> tuple[str, ...]:
    """``protocols`` minus those the NICs' transport cannot carry when the group crosses
    nodes (EFA's first generation, without in-order delivery, carries only Simple).

    Where NCCL merely leaves a protocol off by default (LL128 on GPU-to-NIC paths it has not
    validated) the protocol stays priceable: NCCL's own rules decide its pick
    (``fabricui.engine.nccl``), and forcing it is reported with a caution.
    """
    if group.n_nodes < 2:
        return protocols
    allowed = group.fabric.net_protocols
    if allowed:
        protocols = tuple(p for p in protocols if p in allowed)
    return protocols


def link_protocols(group, protocols: tuple[str, ...]) -> tuple[str, ...]:
    """``protocols`` minus those a link generation between the group's GPUs cannot carry
    (its hwdb ``protocols``: a vendor link without LL128 says so instead of losing it
    silently)."""
    allowed = group.link_protocols
    if allowed is None:
        return protocols
    return tuple(p for p in protocols if p in allowed)


def _applicable(
    candidates: list[CollectiveAlgorithm], group, op: str
) -> tuple[list[CollectiveAlgorithm], list[str]]:
    """The candidates that run ``op`` on ``group``, and why each plugin algorithm whose
    ``applicable`` failed could not say (its plugin is named; the host reports it)."""
    usable: list[CollectiveAlgorithm] = []
    failed: list[str] = []
    for algorithm in candidates:
        try:
            if algorithm.applicable(group, op):
                usable.append(algorithm)
        except PluginError as exc:
            failed.append(exc.message)
    return usable, failed


def predict(
    group,
    op: str,
    size_bytes: npt.ArrayLike,
    algorithms: list[CollectiveAlgorithm],
    algo: str = "auto",
    protocols: tuple[str, ...] = PROTOCOLS,
    nccl: NcclSettings | None = None,
) -> Prediction:
    """Predict a collective on a group for every size: NCCL's pick and the fastest one.

    Every candidate (algorithm, protocol) is priced with the engine's physical model; NCCL's
    tuner (``fabricui.engine.nccl``) says which of them NCCL runs.

    Args:
        group: The ``Group`` of ranks.
        op: Collective name (``OPS``).
        size_bytes: (n_sizes,) sizes [bytes], nccl-tests convention.
        algorithms: Candidate algorithms (core and plugin ones).
        algo: ``auto`` (NCCL chooses), or one algorithm name (as ``NCCL_ALGO`` would force;
            NCCL still chooses the protocol).
        protocols: Protocols allowed.
        nccl: NCCL release and environment (default: the group's ``library_version``, or
            the newest release modelled, and its ``nccl_env``).

    Returns:
        Per-size time of the pick a job runs, and both picks (``Prediction.choice``); on
        one rank, the copy NCCL runs instead of any algorithm (``one_rank_time_us``).

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
    known = {a.name for a in algorithms} | {HIERARCHICAL}
    if algo != "auto" and algo not in known:
        raise EngineError(f"unknown algorithm {algo!r} (available: {', '.join(sorted(known))})")
    if group.n == 1:  # no algorithm runs, whatever was asked for
        settings = nccl or NcclSettings.of(group.library_version, group.nccl_env)
        library = library_of(group)
        name = {"nccl": f"NCCL {settings.version}", "rccl": "RCCL"}.get(library, library)
        return Prediction.of(op, 1, sizes, one_rank(name, one_rank_time_us(group, op, sizes)))
    if algo == HIERARCHICAL:  # a framework's calls per level, each NCCL's own pick

        def call(on, call_op: str, call_sizes, inner: list[CollectiveAlgorithm]) -> Choice:
            part = predict(on, call_op, call_sizes, inner, protocols=protocols, nccl=nccl)
            assert part.choice is not None
            return part.choice

        return Prediction.of(
            op, group.n, sizes, hierarchical_choice(group, op, sizes, algorithms, call)
        )
    protocols = link_protocols(group, network_protocols(group, protocols))
    candidates = [a for a in algorithms if (algo in ("auto", a.name)) and op in a.ops]
    if not candidates and algo != "auto":
        runs = sorted(a.name for a in algorithms if op in a.ops)
        raise EngineError(f"algorithm {algo} does not run {op} (those that do: {', '.join(runs)})")
    usable, failed = _applicable(candidates, group, op)
    if not usable:
        if failed:  # a plugin's applicable() failed: name it and why
            raise EngineError(f"no algorithm can run {op} on this group: {failed[0]}")
        names = ", ".join(a.name for a in candidates) or "none"
        raise EngineError(f"no algorithm can run {op} on this group (tried: {names})")
    physical: dict[tuple[str, str], FloatArray] = {}
    skipped = []
    for alg in usable:
        for proto in alg.protocols:
            if proto not in protocols:
                continue
            try:
                t = algorithm_time_us(alg, group, op, sizes, proto)
            except PluginError as exc:
                # A plugin's algorithm failed; the plugin host recorded and reports it, and
                # the other algorithms still price the collective.
                skipped.append(exc.message)
                break
            if np.isfinite(t).any():
                physical[(alg.name, proto)] = np.broadcast_to(t, sizes.shape).astype(np.float64)
    if not physical and skipped:
        raise EngineError(f"no algorithm could run {op}: {skipped[0]}")
    if not physical:
        raise EngineError(f"no protocol of {', '.join(a.name for a in usable)} is allowed")
    settings = nccl or NcclSettings.of(group.library_version, group.nccl_env)
    choice = choose(group, op, sizes, physical, settings, forced=None if algo == "auto" else algo)
    return Prediction.of(op, group.n, sizes, choice)
