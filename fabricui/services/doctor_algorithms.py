"""The doctor's algorithm check: the algorithm NCCL logged choosing against the best pick.

With ``NCCL_DEBUG_SUBSYS=TUNING`` NCCL logs the algorithm and protocol of every collective
(``AllReduce: 4194304 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}``). On the
fabric the job ran on, the engine prices that choice and every other one NCCL could run:
where another is clearly faster, the doctor says which, by how much, and the settings that
make NCCL run it. It also says where the log's choice is not the one the model of NCCL's
tuner (``fabricui.engine.nccl``) predicts for the release the log names: NCCL then saw a
different topology than the one given (or a setting the log does not print).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.collectives import algorithm_time_us, parse_library_version, predict
from fabricui.engine.group import Group
from fabricui.engine.nccl.picks import ENGINE_ALGORITHM, NcclSettings, force_env
from fabricui.errors import FabricError, PluginError
from fabricui.services.doctor import Finding
from fabricui.units import format_bytes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fabricui.engine.types import CollectiveAlgorithm
    from fabricui.fabric.fabric import Fabric
    from fabricui.importers.nccl_log import AlgoChoice, NcclLog

#: A better pick is reported when it saves at least this share of the logged pick's time.
MARGIN = 0.10
#: Most sizes a finding names.
_SHOW = 3


@dataclass(frozen=True)
class CheckedChoice:
    """One logged choice, priced."""

    line: int
    """Line of the log."""
    op: str
    """Collective."""
    size_bytes: int
    """Size in nccl-tests' convention (the whole buffer for all-gather/reduce-scatter)."""
    logged: str
    """``algorithm/protocol`` NCCL ran (NCCL's names)."""
    predicted: str
    """What the model of NCCL's tuner picks (NCCL's names)."""
    best: str
    """The fastest pick NCCL can run (NCCL's names)."""
    logged_us: float
    """The engine's time of the logged pick [us]."""
    best_us: float
    """The engine's time of the best pick [us]."""
    env: dict[str, str]
    """Settings that make NCCL run the best pick."""
    caution: str = ""
    """Why forcing it is risky, when it is."""

    @property
    def gain(self) -> float:
        """The logged pick's time over the best's, minus one."""
        return self.logged_us / self.best_us - 1.0 if self.best_us > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """One entry of ``fabric.algorithm_choices`` in ``fabricui doctor --json``."""
        return {
            "line": self.line,
            "op": self.op,
            "size_bytes": self.size_bytes,
            "logged": self.logged,
            "predicted": self.predicted,
            "best": self.best,
            "logged_us": self.logged_us,
            "best_us": self.best_us,
            "gain": self.gain,
            "env": dict(self.env),
            "caution": self.caution or None,
        }


def _nccl_label(algorithm: str, protocol: str) -> str:
    return f"{algorithm}/{protocol}"


def check_choices(
    log: NcclLog,
    fabric: Fabric,
    ranks: Sequence[int],
    algorithms: Sequence[CollectiveAlgorithm],
) -> tuple[list[Finding], list[CheckedChoice]]:
    """Price every collective the log shows NCCL choosing for, on ``fabric``.

    Args:
        log: The parsed log (its choices, release and NCCL settings).
        fabric: The fabric the job ran on.
        ranks: The job's GPUs on it (global ranks).
        algorithms: Candidate algorithms (the engine's and the plugins').

    Returns:
        Findings (``ALGORITHM_CODES``) and every checked choice.
    """
    choices = [c for c in log.choices if c.op is not None]
    if not choices or len(ranks) < 2:
        return [], []
    group = Group(
        fabric,
        np.asarray(ranks),
        library_version=parse_library_version(log.version),
        nccl_env={k: v for k, v in log.env.items() if k.startswith("NCCL_")},
    )
    settings = NcclSettings.of(group.library_version, group.nccl_env)
    checked: list[CheckedChoice] = []
    by_op: dict[str, list[AlgoChoice]] = {}
    for choice in choices:
        by_op.setdefault(str(choice.op), []).append(choice)
    for op, logged in by_op.items():
        sizes = np.array([_size(c, op, group.n) for c in logged], dtype=np.float64)
        try:
            prediction = predict(group, op, sizes, list(algorithms))
        except FabricError:
            continue
        pick = prediction.choice
        if pick is None:
            continue
        for j, c in enumerate(logged):
            engine = ENGINE_ALGORITHM.get(c.algorithm)
            alg = next((a for a in algorithms if a.name == engine), None)
            try:
                if alg is None or not alg.applicable(group, op):
                    continue
            except PluginError:  # a plugin's algorithm that failed: the host reports it
                continue
            logged_us = float(algorithm_time_us(alg, group, op, sizes[j : j + 1], c.protocol)[0])
            if not np.isfinite(logged_us):
                continue
            best_us = float(pick.best.time_us[j])
            best_label = _nccl_label(pick.best.nccl_algorithm[j], pick.best.protocol[j])
            env = dict(pick.env[j])
            if best_us >= logged_us:
                best_us, best_label, env = logged_us, _nccl_label(c.algorithm, c.protocol), {}
            elif not env:  # the best is the model's pick, which NCCL did not run here
                env = force_env(
                    group,
                    settings,
                    op,
                    pick.best.nccl_algorithm[j],
                    pick.best.protocol[j],
                )
            checked.append(
                CheckedChoice(
                    line=c.line,
                    op=op,
                    size_bytes=int(sizes[j]),
                    logged=_nccl_label(c.algorithm, c.protocol),
                    predicted=_nccl_label(pick.nccl.nccl_algorithm[j], pick.nccl.protocol[j]),
                    best=best_label,
                    logged_us=logged_us,
                    best_us=best_us,
                    env=env,
                    caution=pick.caution[j] if env else "",
                )
            )
    return _findings(checked, fabric.spec.id, log.version, log.tuner_plugins), checked


def _size(choice: AlgoChoice, op: str, nranks: int) -> int:
    """nccl-tests' size of a logged choice: 2.26+ print one rank's bytes."""
    if choice.per_rank and op in ("all_gather", "reduce_scatter"):
        return choice.size_bytes * nranks
    return choice.size_bytes


def _findings(
    checked: list[CheckedChoice],
    topology: str,
    version: str | None,
    tuners: Sequence[str] = (),
) -> list[Finding]:
    findings: list[Finding] = []
    slow = [c for c in checked if c.env and c.gain >= MARGIN]
    if slow:
        worst = max(slow, key=lambda c: c.gain)
        sizes = ", ".join(f"{c.op} {format_bytes(c.size_bytes)}" for c in slow[:_SHOW])
        more = f" and {len(slow) - _SHOW} more" if len(slow) > _SHOW else ""
        setting = " ".join(f"{k}={v}" for k, v in worst.env.items())
        fix = f"set {setting} for those sizes (or a tuner plugin: fabricui collective ... --tuner)"
        if worst.caution:
            fix += f"; caution: {worst.caution}"
        findings.append(
            Finding(
                "nccl-pick-not-best",
                "warning",
                f"NCCL ran {worst.logged} for {worst.op} {format_bytes(worst.size_bytes)} "
                f"where {worst.best} is {100 * worst.gain:.0f}% faster on {topology} "
                f"(slower picks at {sizes}{more})",
                fix,
                worst.line,
            )
        )
    unexpected = [c for c in checked if c.logged != c.predicted]
    if unexpected:
        first = unexpected[0]
        release = f"NCCL {version}" if version else "the newest NCCL"
        findings.append(
            Finding(
                "nccl-pick-unexpected",
                "info",
                f"{len(unexpected)} of {len(checked)} logged choices differ from the model of "
                f"{release}'s tuner on {topology} (first: {first.op} "
                f"{format_bytes(first.size_bytes)} ran {first.logged}, the model picks "
                f"{first.predicted})",
                f"a tuner plugin chose them ({', '.join(tuners)}), not NCCL's own model; "
                "NCCL_TUNER_PLUGIN=none runs the model's choice"
                if tuners
                else "NCCL detected another topology than the one given, or a setting the "
                "log does not print changed its choice: compare the log's topology "
                "(NCCL_DEBUG_SUBSYS=GRAPH) with the topology file",
                first.line,
            )
        )
    return findings
