"""Per size: the (algorithm, protocol, channels) NCCL picks and the fastest one it could run.

The engine prices every candidate with its physical model; NCCL's own tuner (``tuner.py``)
says which of them NCCL runs. ``choose`` joins the two: the NCCL pick is the cheapest pair
*by NCCL's model* among those the engine can price, timed by the engine; the best pick is
the cheapest *by the engine* among those NCCL can run on this hardware (with the
environment that forces it, and a caution where forcing it is a risk NCCL warns of).

GPUs that do not run NCCL (AMD's RCCL, TPUs, Trainium) have a different tuner, not modelled
here: their library pick is taken as the fastest pick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.issue import issue_floor_us
from fabricui.engine.nccl.env import (
    FUNCTION_NAMES,
    NcclEnv,
    algorithms_enabled,
    protocols_enabled,
    read_env,
)
from fabricui.engine.nccl.p2p import p2p_protocols, pow2_up
from fabricui.engine.nccl.releases import (
    ALGORITHM_ENV_NAMES,
    ALGORITHMS,
    PROTOCOL_ENV_NAMES,
    Release,
    release_for,
)
from fabricui.engine.nccl.search import Graphs, search
from fabricui.engine.nccl.tuner import TUNED_OPS, Tuning, tune
from fabricui.engine.nccl.view import NcclView
from fabricui.errors import EngineError
from fabricui.vocabulary import PROTOCOLS

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The engine algorithm that prices each NCCL algorithm (CollNet chain is priced as the
#: engine's SHARP, which models the direct variant's traffic).
ENGINE_ALGORITHM = {
    "ring": "ring",
    "tree": "tree",
    "nvls": "nvls",
    "nvls_tree": "nvlstree",
    "collnet_direct": "sharp",
    "collnet_chain": "sharp",
    "pat": "pat",
}
#: NCCL's name for an engine algorithm (for NCCL_ALGO).
NCCL_ALGORITHM = {
    "ring": "ring",
    "tree": "tree",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "sharp": "collnet_direct",
    "pat": "pat",
}
#: Point-to-point operations: NCCL does not tune them, LL up to 16 KiB per peer.
P2P_OPS = ("all_to_all", "send_recv")
#: The caution for LL128 where NCCL leaves it off by default (src/graph/tuning.cc: "Other
#: cases are not tested and may cause silent data corruption").
LL128_CAUTION = (
    "LL128 is off by default on this path because NCCL has not validated it there; "
    "forcing it can corrupt data silently"
)
#: Prefix-scoped NCCL_ALGO/NCCL_PROTO values exist from 2.24.
SCOPED_SINCE = (2, 24, 0)
#: A pick is called better than NCCL's only when it saves at least this share of NCCL's
#: time: closer figures are within the model's precision.
BETTER_BY = 0.01


@dataclass(frozen=True)
class NcclSettings:
    """The NCCL release and environment a prediction models."""

    release: Release
    """The tuning model's release."""
    env: NcclEnv = field(default_factory=NcclEnv)
    """The run's NCCL environment."""

    @classmethod
    def of(
        cls,
        version: str | tuple[int, int, int] | None = None,
        env: Mapping[str, object] | None = None,
    ) -> NcclSettings:
        """Settings for NCCL ``version`` (None: the newest modelled) and ``env``.

        Raises:
            EngineError: An unknown or too old version, or a malformed setting.
        """
        return cls(release_for(version), read_env(env))

    @property
    def version(self) -> str:
        """The release's version (``2.30.3``)."""
        return self.release.version


@dataclass(frozen=True)
class Pick:
    """One pick per size."""

    algorithm: tuple[str, ...]
    """Engine algorithm per size (``ring``, ``nvlstree``, ``sharp`` ...)."""
    protocol: tuple[str, ...]
    """Protocol per size (``ll``, ``ll128``, ``simple``)."""
    channels: tuple[int | None, ...]
    """Channels NCCL runs it with per size (None where NCCL's channels are not modelled)."""
    time_us: FloatArray
    """(n_sizes,) time by the engine's physical model [us]."""
    nccl_algorithm: tuple[str, ...] = ()
    """NCCL's own algorithm name per size (``collnet_chain``; empty when not NCCL)."""

    @property
    def labels(self) -> tuple[str, ...]:
        """``algorithm/protocol`` per size."""
        return tuple(map("/".join, zip(self.algorithm, self.protocol)))

    def row(self, i: int) -> dict[str, object]:
        """The JSON object of size ``i``."""
        return {
            "algorithm": self.algorithm[i],
            "protocol": self.protocol[i],
            "channels": self.channels[i],
            "time_us": float(self.time_us[i]),
        }


@dataclass(frozen=True)
class Choice:
    """NCCL's pick and the best pick of every size, and how to get from one to the other."""

    library: str
    """``NCCL 2.30.3`` (the release modelled), or the library whose tuner is not modelled."""
    nccl: Pick
    """What NCCL's tuner runs."""
    best: Pick
    """The fastest pick NCCL can run on this hardware."""
    env: tuple[dict[str, str], ...]
    """Per size: the settings that make NCCL run the best pick (empty when it already does)."""
    caution: tuple[str, ...]
    """Per size: why forcing the best pick is risky ('' when it is not)."""
    nccl_model_us: FloatArray
    """(n_sizes,) NCCL's own estimate of its pick [us] (nan where not modelled)."""


Physical = Mapping[tuple[str, str], FloatArray]
"""Engine times per (engine algorithm, protocol): (n_sizes,) [us]."""


def library_of(group) -> str:
    """The collective library the GPUs run: ``nccl`` on NVIDIA, ``rccl`` on AMD, else the
    vendor's."""
    vendor = group.fabric.gpu.vendor
    return {"nvidia": "nccl", "amd": "rccl"}.get(vendor, vendor)


def _fastest(physical: Physical, keys: Sequence[tuple[str, str]], n: int):
    table = np.vstack([physical[k] for k in keys])
    best = np.argmin(table, axis=0)
    return best, table[best, np.arange(n)]


def _pick_of(keys, index, times, channels=None, nccl_names=None) -> Pick:
    n = len(times)
    return Pick(
        algorithm=tuple(keys[i][0] for i in index),
        protocol=tuple(keys[i][1] for i in index),
        channels=tuple(channels[j] for j in range(n)) if channels is not None else (None,) * n,
        time_us=np.asarray(times, dtype=np.float64),
        nccl_algorithm=tuple(nccl_names) if nccl_names is not None else (),
    )


def sole_choice(library: str, pick: Pick) -> Choice:
    """A choice of one pick, the best as well (no settings to force, no tuner estimate)."""
    n = len(pick.algorithm)
    return Choice(
        library=library,
        nccl=pick,
        best=pick,
        env=({},) * n,
        caution=("",) * n,
        nccl_model_us=np.full(n, np.nan),
    )


def not_modelled(library: str, physical: Physical, n: int, note: str = "") -> Choice:
    """The library's tuner is not modelled: its pick is taken as the fastest (``note``
    follows that in the library's name: ``; NCCL settings do not apply``)."""
    keys = list(physical)
    index, times = _fastest(physical, keys, n)
    pick = _pick_of(keys, index, times)
    name = library.upper() if library in ("rccl", "nccl") else library
    return sole_choice(f"{name} (tuner not modelled: fastest pick{note})", pick)


#: What a one-rank communicator runs for every operation: a copy of its buffer.
ONE_RANK_ALGORITHM = "copy"


def one_rank(library: str, time_us: FloatArray) -> Choice:
    """The pick of a one-rank communicator: NCCL (and RCCL) tune nothing and copy the send
    buffer into the receive buffer (``ncclLaunchOneRank``), whatever NCCL_ALGO says."""
    n = time_us.shape[0]
    pick = Pick(
        algorithm=(ONE_RANK_ALGORITHM,) * n,
        protocol=("simple",) * n,
        channels=(None,) * n,
        time_us=np.asarray(time_us, dtype=np.float64),
    )
    return sole_choice(library, pick)


def _env_key(env: NcclEnv) -> tuple[object, ...]:
    """A hashable key of an environment (its parsed fields and what was given)."""
    parsed = tuple(getattr(env, f.name) for f in fields(env) if f.name != "given")
    return (*parsed, tuple(sorted(env.given.items())))


def nccl_graphs(group, settings: NcclSettings) -> tuple[NcclView, Graphs]:
    """NCCL's view of ``group`` and the graphs its search builds (cached per group)."""

    def compute() -> tuple[NcclView, Graphs]:
        view = NcclView.of(group, settings.release, settings.env)
        return view, search(view, settings.release, settings.env)

    key = ("nccl-graphs", settings.release.version, _env_key(settings.env))
    return group.memo(key, compute)


def _tunings(group, settings: NcclSettings, op: str) -> tuple[NcclView, Tuning, Tuning]:
    """NCCL's view, its tuning as configured and as the hardware allows (NVLS and CollNet
    on), cached per group."""
    release, env = settings.release, settings.env
    view_now, graphs = nccl_graphs(group, settings)
    tuning = tune(view_now, graphs, release, env, op, policy=True)
    hardware = NcclSettings(release, replace(env, nvls=None, collnet=True))
    view_could = NcclView.of(group, release, hardware.env)
    # The search reads NVLS and CollNet from the view: the same view, the same graphs.
    could_graphs = graphs if view_could == view_now else nccl_graphs(group, hardware)[1]
    could = tune(view_could, could_graphs, release, hardware.env, op, policy=False)
    return view_now, tuning, could


def _nccl_tunings(group, settings: NcclSettings, op: str) -> tuple[NcclView, Tuning, Tuning]:
    """``_tunings`` of ``op``, kept on the group per release and environment.

    Raises:
        EngineError: The settings leave NCCL nothing to run ``op`` with (NCCL would fail).
    """
    release, env = settings.release, settings.env
    return group.memo(
        ("nccl-tuning", op, release.version, _env_key(env)),
        lambda: _tunings(group, settings, op),
    )


def refuse_settings(group, op: str, settings: NcclSettings) -> None:
    """Refuse, before anything is priced, what ``choose`` refuses of the settings alone:
    NCCL's unknown names and prefixes (``refuse_bad_lists``) and settings that leave its
    tuner nothing for ``op``; for a library that reads NCCL's lists (RCCL), their unknown
    names. A one-rank group tunes nothing.

    Args:
        group: The ``Group``.
        op: The collective.
        settings: NCCL release and environment.

    Raises:
        EngineError: The library's refusal, in the line ``choose`` raises.
    """
    if group.n < 2:
        return
    if library_of(group) != "nccl":
        if narrowed_by_nccl_lists(group, op, settings):
            algorithms_enabled(settings.env, op, settings.release)
            protocols_enabled(settings.env, op, settings.release)
        return
    refuse_bad_lists(settings)
    if op not in P2P_OPS:
        _nccl_tunings(group, settings, op)


def narrowed_by_nccl_lists(group, op: str, settings: NcclSettings) -> bool:
    """Whether NCCL_ALGO or NCCL_PROTO narrow what a library whose tuner is not modelled
    runs for ``op`` on ``group`` (RCCL reads them): what they leave it is known only once
    the candidates are priced (``choose`` refuses settings that leave it nothing)."""
    env = settings.env
    return (
        group.n >= 2
        and library_of(group) in READS_NCCL_ENV
        and bool(env.algo or env.proto)
        and op not in P2P_OPS
    )


#: NCCL's collective name (the prefix of a scoped NCCL_ALGO entry) of each operation.
FUNCTION_OF_OP = {op: function for function, op in FUNCTION_NAMES.items()}


def force_env(
    group, settings: NcclSettings, op: str, algorithm: str, protocol: str
) -> dict[str, str]:
    """The settings that make NCCL run ``algorithm/protocol`` (NCCL's names) for ``op`` on
    ``group``, from ``settings``."""
    view_now, _ = nccl_graphs(group, settings)
    return _force_env(settings, op, algorithm, protocol, view_now)


def _force_env(
    settings: NcclSettings, op: str, algorithm: str, protocol: str, view_now: NcclView
) -> dict[str, str]:
    """The settings that make NCCL run ``algorithm/protocol`` for ``op``."""
    algo = ALGORITHM_ENV_NAMES[algorithm]
    proto = PROTOCOL_ENV_NAMES[protocol]
    if settings.release.since >= SCOPED_SINCE:
        function = FUNCTION_OF_OP[op]
        algo, proto = f"{function}:{algo}", f"{function}:{proto}"
    env = {"NCCL_ALGO": algo, "NCCL_PROTO": proto}
    if algorithm.startswith("collnet") and not settings.env.collnet:
        env["NCCL_COLLNET_ENABLE"] = "1"
    if algorithm in ("nvls", "nvls_tree") and not view_now.nvls:
        env["NCCL_NVLS_ENABLE"] = "1"
    if algorithm == "pat" and settings.env.pat == 0:
        env["NCCL_PAT_ENABLE"] = "1"
    return env


def refuse_bad_lists(settings: NcclSettings) -> None:
    """Refuse what NCCL refuses when it tunes a communicator of two or more ranks, whatever
    runs on it: from 2.24 an unknown name or collective prefix in NCCL_ALGO or NCCL_PROTO,
    for any collective, fails its initialisation (a one-rank communicator tunes nothing).

    Raises:
        EngineError: The first such entry, in one line.
    """
    for tuned in TUNED_OPS:
        algorithms_enabled(settings.env, tuned, settings.release)
        protocols_enabled(settings.env, tuned, settings.release)


#: Libraries other than NCCL that read NCCL_ALGO and NCCL_PROTO as NCCL does (RCCL keeps
#: NCCL's environment: https://rocm.docs.amd.com/projects/rccl/en/latest/api-reference/env-variables.html).
READS_NCCL_ENV = ("rccl",)


def _other_library(
    library: str, op: str, physical: Physical, settings: NcclSettings, n: int
) -> Choice:
    """The fastest pick of a library whose tuner is not modelled, among what NCCL_ALGO and
    NCCL_PROTO leave it where it reads them (RCCL); elsewhere the settings are named as not
    applying.

    Raises:
        EngineError: The settings leave the library nothing it runs here.
    """
    env = settings.env
    if not (env.algo or env.proto) or op in P2P_OPS:
        return not_modelled(library, physical, n)
    if library not in READS_NCCL_ENV:
        return not_modelled(library, physical, n, note="; NCCL settings do not apply")
    algos = algorithms_enabled(env, op, settings.release)
    protos = protocols_enabled(env, op, settings.release)
    kept = {
        key: times
        for key, times in physical.items()
        if (algos is None or algos.get(NCCL_ALGORITHM.get(key[0], key[0]), 0))
        and (protos is None or protos.get(key[1], 0))
    }
    if not kept:
        runs = ", ".join(sorted({f"{a}/{p}" for a, p in physical}))
        raise EngineError(
            f"{library.upper()} runs nothing NCCL_ALGO/NCCL_PROTO allow for {op} here (it "
            f"runs {runs})"
        )
    return not_modelled(library, kept, n)


def choose(
    group,
    op: str,
    size_bytes: FloatArray,
    physical: Physical,
    settings: NcclSettings,
    forced: str | None = None,
) -> Choice:
    """NCCL's pick and the best pick per size.

    Args:
        group: The ``Group``.
        op: The collective.
        size_bytes: (n_sizes,) sizes [bytes], nccl-tests' convention.
        physical: Engine times of every candidate (engine algorithm, protocol).
        settings: NCCL release and environment.
        forced: An engine algorithm the caller insists on (``--algo``), or None.

    Returns:
        The two picks per size, the settings that force the best, and cautions.
    """
    sizes = np.asarray(size_bytes, dtype=np.float64)
    n = sizes.shape[0]
    library = library_of(group)
    if library != "nccl":
        return _other_library(library, op, physical, settings, n)
    refuse_bad_lists(settings)
    if op in P2P_OPS:
        return _p2p_choice(group, op, sizes, physical, settings)
    release = settings.release
    view_now, tuning, could = _nccl_tunings(group, settings, op)
    pairs = _nccl_pairs(tuning, physical, forced)
    if not pairs and forced in ENGINE_ALGORITHM.values() and any(k[0] == forced for k in physical):
        # Forcing an algorithm NCCL has but does not run here fails as NCCL_ALGO does.
        runs = sorted(
            {ENGINE_ALGORITHM[a] for i, a in enumerate(ALGORITHMS) if tuning.bw_GBps[i].max() > 0}
        )
        raise EngineError(
            f"NCCL {release.version} does not run {forced} for {op} on these {group.n} GPUs "
            f"(not available here, or turned off by the settings); it runs "
            f"{', '.join(runs) or 'nothing'}"
        )
    if not pairs:  # nothing NCCL would run can be priced: fall back to the fastest
        return replace(not_modelled("NCCL", physical, n), library=f"NCCL {release.version}")
    nccl_times = tuning.times_us(sizes)
    rows = np.vstack([nccl_times[a, p] for a, p, _ in pairs])
    nccl_table = tuning.channels(sizes)
    priced = _issue_floors(group, op, nccl_table, pairs, physical)
    chosen = np.argmin(rows, axis=0)
    if forced is None:
        # Where NCCL's own pick is one the caller cannot price (a plugin's algorithm that is
        # not loaded), the fastest pick it can price stands in, not NCCL's next choice.
        unpriced = rows[chosen, np.arange(n)] > np.min(nccl_times, axis=(0, 1))
        if unpriced.any():
            fastest = np.argmin(np.vstack([priced[key] for _, _, key in pairs]), axis=0)
            chosen = np.where(unpriced, fastest, chosen)
    columns = np.arange(n)
    nccl_physical = np.vstack([priced[key] for _, _, key in pairs])[chosen, columns]
    nccl_channels = _channels(nccl_table, pairs, chosen)
    nccl = _pick_per_size(pairs, chosen, nccl_channels, nccl_physical)
    model_us = rows[chosen, columns]

    runnable = _nccl_pairs(could, physical, forced, allow_disabled=False)
    best_pairs = runnable or pairs
    best_table = could.channels(sizes) if runnable else nccl_table
    could_priced = _issue_floors(group, op, best_table, best_pairs, physical)
    table = np.vstack([could_priced[key] for _, _, key in best_pairs])
    fastest = np.argmin(table, axis=0)
    best_times = table[fastest, columns]
    # Never call a pick better than NCCL's when it is not clearly faster.
    keep = best_times >= nccl_physical * (1.0 - BETTER_BY)
    # The best pick indexes NCCL's pairs where it keeps NCCL's pick, the runnable ones after.
    best = _pick_per_size(
        pairs + best_pairs,
        np.where(keep, chosen, len(pairs) + fastest),
        np.where(keep, nccl_channels, _channels(best_table, best_pairs, fastest)),
        np.where(keep, nccl_physical, best_times),
    )
    # The settings that force each size's best pick: one per distinct pick, not per size.
    distinct = np.unique(fastest[~keep])
    none: tuple[dict[str, str], str] = ({}, "")
    forcing = [none] + [
        (
            _force_env(settings, op, ALGORITHMS[a], PROTOCOLS[p], view_now),
            LL128_CAUTION if could.default_off[a, p] else "",
        )
        for a, p, _ in (best_pairs[f] for f in distinct.tolist())
    ]
    at = np.where(keep, 0, 1 + np.searchsorted(distinct, fastest)).tolist()
    envs = [env for env, _ in forcing]
    cautions = [caution for _, caution in forcing]
    return Choice(
        library=f"NCCL {release.version}",
        nccl=nccl,
        best=best,
        env=tuple(map(envs.__getitem__, at)),
        caution=tuple(map(cautions.__getitem__, at)),
        nccl_model_us=model_us,
    )


def _nccl_pairs(
    tuning: Tuning, physical: Physical, forced: str | None, allow_disabled: bool = False
) -> list[tuple[int, int, tuple[str, str]]]:
    """(NCCL algorithm, protocol, engine key) for every pair NCCL runs that the engine prices."""
    pairs = []
    for a, algorithm in enumerate(ALGORITHMS):
        engine = ENGINE_ALGORITHM[algorithm]
        if forced is not None and engine != forced:
            continue
        for p, protocol in enumerate(PROTOCOLS):
            if tuning.bw_GBps[a, p] <= 0 and not allow_disabled:
                continue
            key = (engine, protocol)
            if key in physical and np.isfinite(physical[key]).any():
                pairs.append((a, p, key))
    return pairs


def _issue_floors(group, op: str, table: IntArray, pairs, physical: Physical) -> Physical:
    """``physical`` with each pair no faster than one thread can issue it on the channels
    NCCL runs it with at each size (``table``, ``Tuning.channels``; ``issue.issue_floor_us``):
    with one process driving several GPUs a pair on more channels takes longer to issue.
    Unchanged with a process per GPU."""
    if not group.single_process:
        return physical
    out = dict(physical)
    for a, p, key in pairs:
        out[key] = np.maximum(physical[key], issue_floor_us(group, op, channels=table[a, p]))
    return out


def _channels(table: IntArray, pairs, index: IntArray) -> IntArray:
    """Channels of the pair ``pairs[index[j]]`` at each size ``j``, from the (7, 3, n)
    ``table`` of ``Tuning.channels``."""
    algorithms = np.array([a for a, _, _ in pairs], dtype=np.int64)
    protocols = np.array([p for _, p, _ in pairs], dtype=np.int64)
    return table[algorithms[index], protocols[index], np.arange(index.shape[0])]


def _pick_per_size(pairs, index: IntArray, channels: IntArray, times: FloatArray) -> Pick:
    """The pick of pair ``pairs[index[j]]`` at each size ``j``: each field looked up in the
    few pairs' values, not built per size."""
    at = index.tolist()

    def per_size(values: list[Any]) -> tuple[Any, ...]:
        return tuple(map(values.__getitem__, at))

    return Pick(
        algorithm=per_size([key[0] for _, _, key in pairs]),
        protocol=per_size([key[1] for _, _, key in pairs]),
        channels=tuple(channels.tolist()),
        time_us=times,
        nccl_algorithm=per_size([ALGORITHMS[a] for a, _, _ in pairs]),
    )


def _p2p_choice(
    group, op: str, sizes: FloatArray, physical: Physical, settings: NcclSettings
) -> Choice:
    """All-to-all and send/recv: NCCL runs LL for small operations, Simple above, by the
    release's rule (``p2p.p2p_protocols``); forcing the other protocol moves
    NCCL_P2P_LL_THRESHOLD (and lets LL cross the network)."""
    n = sizes.shape[0]
    keys = [k for k in physical if k[0] == "p2p"] or list(physical)
    view, graphs = nccl_graphs(group, settings)
    wanted = p2p_protocols(op, view, graphs, settings.release, settings.env, sizes)
    nccl_keys = [("p2p", proto) if ("p2p", proto) in physical else keys[0] for proto in wanted]
    nccl_times = np.array([physical[k][j] for j, k in enumerate(nccl_keys)])
    index, best_times = _fastest(physical, keys, n)
    keep = best_times >= nccl_times * (1.0 - BETTER_BY)
    best_keys = [nccl_keys[j] if keep[j] else keys[index[j]] for j in range(n)]
    envs: list[dict[str, str]] = []
    per_peer = sizes / (group.n if op == "all_to_all" else 1)
    # With LL buffers across the network, which sizes the current threshold already covers.
    with_buffers = replace(settings.env, p2p_net_ll_buffers=True)
    covered = p2p_protocols(op, view, graphs, settings.release, with_buffers, sizes)
    for j in range(n):
        if keep[j] or best_keys[j][1] == nccl_keys[j][1]:
            envs.append({})
        elif best_keys[j][1] == "ll":
            env = {"NCCL_ALLOC_P2P_NET_LL_BUFFERS": "1"} if view.n_nodes > 1 else {}
            if covered[j] != "ll":
                # A power of two at least the operation: one setting serves a range of sizes.
                threshold = pow2_up(per_peer[j])
                env = {"NCCL_P2P_LL_THRESHOLD": str(threshold), **env}
            envs.append(env)
        else:
            envs.append({"NCCL_P2P_LL_THRESHOLD": "0"})
    nccl = Pick(
        algorithm=tuple(k[0] for k in nccl_keys),
        protocol=tuple(k[1] for k in nccl_keys),
        channels=(None,) * n,
        time_us=nccl_times,
        nccl_algorithm=("p2p",) * n,
    )
    best = Pick(
        algorithm=tuple(k[0] for k in best_keys),
        protocol=tuple(k[1] for k in best_keys),
        channels=(None,) * n,
        time_us=np.where(keep, nccl_times, best_times),
        nccl_algorithm=("p2p",) * n,
    )
    return Choice(
        library=f"NCCL {settings.version}",
        nccl=nccl,
        best=best,
        env=tuple(envs),
        caution=("",) * n,
        nccl_model_us=np.full(n, np.nan),
    )


__all__ = [
    "ENGINE_ALGORITHM",
    "NCCL_ALGORITHM",
    "TUNED_OPS",
    "Choice",
    "NcclSettings",
    "Pick",
    "choose",
    "library_of",
    "narrowed_by_nccl_lists",
    "refuse_settings",
]
