"""Price strategy operations on the fabric: one collective call on a representative group."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Union

import numpy as np

from fabricui.engine.collectives import predict
from fabricui.engine.evaluate import algorithms_for_env
from fabricui.engine.group import Group
from fabricui.engine.routing import Router
from fabricui.engine.training.groups import AXES, Groups
from fabricui.engine.types import CollectiveAlgorithm, CommOp
from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.engine.collectives import Prediction
    from fabricui.fabric.fabric import Fabric

Evaluate = Callable[..., "Prediction"]


@dataclass(frozen=True)
class PricedOp:
    """One communication operation priced on its group."""

    op: CommOp
    """The operation as the strategy issued it."""
    ranks: tuple[int, ...]
    """Representative group it was priced on (first group of its axis)."""
    call_us: float
    """Predicted time of one call [us]."""
    algorithm: str
    """Algorithm/protocol the engine chose (``-`` for a one-rank group)."""
    exposed_us: float = 0.0
    """Part of ``time_us`` not hidden behind compute [us]."""
    count: float | None = None
    """Calls per step when the engine changed the strategy's count (full recomputation
    repeats forward collectives); None: the operation's own ``count``."""

    @property
    def group_size(self) -> int:
        """Ranks in the group."""
        return len(self.ranks)

    @property
    def calls(self) -> float:
        """Calls per step."""
        return self.op.count if self.count is None else self.count

    @property
    def time_us(self) -> float:
        """Time per step: one call times the calls [us]."""
        return self.call_us * self.calls

    def to_json(self) -> dict[str, Any]:
        """One row of ``plan --json``'s ``operations``."""
        return {
            "strategy": self.op.strategy,
            "collective": self.op.collective,
            "group": self.op.group,
            "group_size": self.group_size,
            "size_bytes": self.op.size_bytes,
            "count": self.calls,
            "overlappable": self.op.overlappable,
            "scope": self.op.resolved_scope,
            "algorithm": self.algorithm,
            "call_us": self.call_us,
            "time_us": self.time_us,
            "exposed_us": self.exposed_us,
            "note": self.op.note,
        }


class Pricer:
    """Prices (collective, group, size) with an evaluate function, caching results.

    Args:
        fabric: The fabric.
        evaluate: ``evaluate(fabric, op, size_bytes, ranks=...)`` returning a Prediction
            (default: ``evaluate_collective`` over ``algorithms`` sharing one router).
        algorithms: Candidate collective algorithms for the default ``evaluate`` (default:
            the core ones; the service layer adds the plugins').
    """

    def __init__(
        self,
        fabric: Fabric,
        evaluate: Evaluate | None = None,
        algorithms: Sequence[CollectiveAlgorithm] | None = None,
    ) -> None:
        self.fabric = fabric
        self.evaluate = evaluate or _default_evaluate(fabric, algorithms)
        self._cache: dict[tuple[str, tuple[int, ...]], dict[float, tuple[float, str]]] = {}

    def __call__(
        self, collective: str, ranks: tuple[int, ...], size_bytes: float
    ) -> tuple[float, str]:
        """(time of one call [us], algorithm) of ``collective`` on ``ranks``."""
        if len(ranks) < 2 or size_bytes <= 0:
            return 0.0, "-"
        sizes = self._cache.get((collective, ranks))
        size = float(size_bytes)
        if sizes is None or size not in sizes:
            self.prime(collective, ranks, [size])
            sizes = self._cache[(collective, ranks)]
        return sizes[size]

    def group(self, ranks: tuple[int, ...]) -> Group:
        """The engine group on ``ranks``: the default evaluate's own (routed once), else a
        new one."""
        if isinstance(self.evaluate, _GroupEvaluate):
            return self.evaluate.group(self.fabric, ranks)
        return Group(self.fabric, np.asarray(ranks))

    def prime(self, collective: str, ranks: tuple[int, ...], sizes: Sequence[float]) -> None:
        """Price many sizes of one collective on one group in a single engine call."""
        known = self._cache.setdefault((collective, ranks), {})
        todo = sorted({float(s) for s in sizes if s > 0} - set(known))
        if len(ranks) < 2 or not todo:
            return
        pred = self.evaluate(self.fabric, collective, todo, ranks=np.asarray(ranks))
        for size, time_us, algo in zip(todo, pred.time_us, pred.algorithm):
            known[size] = (float(time_us), str(algo))


class _GroupEvaluate:
    """``evaluate_collective`` that keeps each group it builds: routing a large group is
    the expensive part, and a plan prices several collectives on the same group."""

    def __init__(self, fabric: Fabric, algorithms: Sequence[CollectiveAlgorithm] | None) -> None:
        self.router = Router(fabric)
        self.algorithms = list(algorithms) if algorithms else algorithms_for_env()
        self.groups: dict[bytes, Any] = {}

    def group(self, fabric: Fabric, ranks: Any) -> Group:
        """The group on ``ranks``, built (and routed) once."""
        members = np.asarray(ranks)
        key = members.astype(np.int64).tobytes()
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(fabric, members, router=self.router)
        return group

    def __call__(
        self, fabric: Fabric, op: str, size_bytes: Sequence[float], ranks: Any = None
    ) -> Prediction:
        members = ranks if ranks is not None else np.arange(fabric.n_gpus)
        return predict(self.group(fabric, members), op, size_bytes, self.algorithms)


def _default_evaluate(
    fabric: Fabric, algorithms: Sequence[CollectiveAlgorithm] | None = None
) -> Evaluate:
    return _GroupEvaluate(fabric, algorithms)


PricerLike = Union[Evaluate, Pricer, None]


def as_pricer(fabric: Fabric, evaluate: PricerLike) -> Pricer:
    """``evaluate`` itself when it is a Pricer, else a new Pricer around it."""
    return evaluate if isinstance(evaluate, Pricer) else Pricer(fabric, evaluate)


def representative(groups: Groups, op: CommOp) -> tuple[int, ...]:
    """The first group of an operation's axis, as a tuple of global ranks.

    Raises:
        EngineError: The axis is not one of ``AXES``.
    """
    if op.group not in groups or len(groups[op.group]) == 0:
        raise EngineError(f"{op.strategy}: unknown process group {op.group!r} ({', '.join(AXES)})")
    return tuple(np.asarray(groups[op.group][0]).tolist())


def price_calls(
    fabric: Fabric, ops: Sequence[CommOp], groups: Groups, pricer: Pricer
) -> list[PricedOp]:
    """Each operation with the time of one call on its representative group (no exposure).

    Raises:
        EngineError: An operation names an axis ``groups`` does not have.
    """
    priced = []
    ranks_of: dict[str, tuple[int, ...]] = {}
    wanted: dict[tuple[str, tuple[int, ...]], list[float]] = {}
    for op in ops:
        if op.group not in ranks_of:
            ranks_of[op.group] = representative(groups, op)
        wanted.setdefault((op.collective, ranks_of[op.group]), []).append(op.size_bytes)
    for (collective, ranks), sizes in wanted.items():
        pricer.prime(collective, ranks, sizes)
    for op in ops:
        ranks = ranks_of[op.group]
        call_us, algorithm = pricer(op.collective, ranks, op.size_bytes)
        priced.append(PricedOp(op, ranks, call_us, algorithm))
    return priced


def price_operations(
    fabric: Fabric,
    ops: Sequence[CommOp],
    groups: Groups,
    evaluate: PricerLike = None,
    overlap_us: float = 0.0,
) -> list[PricedOp]:
    """Price each operation on the first group of its axis and split off the exposed part.

    The one-window rule of the decision table: overlappable operations share ``overlap_us``
    of compute to hide behind; their exposed time is ``max(0, sum(their times) -
    overlap_us)``, split in proportion to their times. Non-overlappable operations are
    exposed in full. (Plans use the per-scope windows of ``comm.expose``.)

    Args:
        fabric: The fabric.
        ops: Operations from the strategies.
        groups: Groups per axis (``layout_groups``).
        evaluate: ``evaluate_collective``-like function, or a ``Pricer`` to share a cache.
        overlap_us: Compute time overlappable operations can hide behind [us].

    Returns:
        The priced operations, in the order given.

    Raises:
        EngineError: An operation names an axis ``groups`` does not have.
    """
    priced = price_calls(fabric, ops, groups, as_pricer(fabric, evaluate))
    return with_shared_window(priced, overlap_us)


def with_shared_window(priced: list[PricedOp], overlap_us: float) -> list[PricedOp]:
    """Overlappable operations hide behind one shared window; the rest are exposed."""
    hidden_total = sum(p.time_us for p in priced if p.op.overlappable)
    left = max(0.0, hidden_total - max(0.0, overlap_us))
    share = left / hidden_total if hidden_total > 0 else 0.0
    return [
        dataclasses.replace(p, exposed_us=p.time_us * share if p.op.overlappable else p.time_us)
        for p in priced
    ]
