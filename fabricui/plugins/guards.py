"""Guards on what plugins registered: a plugin that raises, hangs or returns garbage when the
engine calls it is recorded and skipped. Each call runs as the plugin's code
(``budget.call_plugin``: time budget, stdout and exit contained)."""

from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from fabricui.bounds import BYTES, CALLS, OPERATION_TIME_US, problem, within
from fabricui.engine.training.groups import AXES
from fabricui.engine.types import (
    CollectiveAlgorithm,
    CommOp,
    MemoryTerm,
    StateShards,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import FabricError, PluginError, exception_line
from fabricui.plugins.budget import PluginTimeout
from fabricui.plugins.process import (
    PluginAborted,
    PluginExit,
    as_plugin_error,
    call_plugin,
    sigints,
)
from fabricui.vocabulary import OPS

if TYPE_CHECKING:
    from fabricui.plugins.records import CallRecorder, PluginInfo


class _Skipped(Exception):
    """A guarded call failed (already recorded); the caller substitutes a safe result."""


class _Guard:
    """Calls into one registered object for the host: time budget, errors, garbage results.

    The first failure is recorded against the plugin (``fabricui plugins`` shows it, the CLI
    prints it once) and disables the object: later calls are skipped at once. A
    ``FabricError`` (a deliberate one-line error) passes through untouched.
    """

    def __init__(self, host: CallRecorder, info: PluginInfo, label: str, timed: bool) -> None:
        self.host = host
        self.info = info
        self.label = label
        """What it is, for messages (``collective algorithm 'toy-ring'``)."""
        self.timed = timed
        """Whether calls get the time budget (external plugins; built-ins are trusted)."""
        self.failed = False
        self.error: str | None = None
        """The first failure, ``<label>: <method>: <error>`` (None while it works)."""

    def call(self, method: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` within the budget; raises ``_Skipped`` on failure.

        Whatever the plugin raises fails it, ``BaseException`` included, except a
        ``FabricError`` (passed through) and the user's Ctrl-C (re-raised).
        """
        if self.failed:
            raise _Skipped
        mark = sigints()
        try:
            return self.run(function, *args, **kwargs)
        except (PluginTimeout, PluginAborted) as exc:
            self.fail(method, exc)
        except FabricError:  # a deliberate one-line error for the user, not a plugin bug
            raise
        except BaseException as exc:
            self.fail(method, as_plugin_error(exc, mark))
        raise _Skipped

    def run(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)``: an external plugin's as its code (``call_plugin``:
        budget, own thread, stdout and exits contained); a built-in's directly, as these
        calls sit on the engine's hot paths and built-ins are fabricui's own code."""
        if not self.timed:
            return function(*args, **kwargs)
        call = functools.partial(function, *args, **kwargs)
        return call_plugin(call, self.host.timeout_s, self.info.name)

    def fail(self, method: str, exc: BaseException) -> None:
        """Record that ``method`` failed with ``exc`` and disable the object."""
        self.failed = True
        self.error = f"{self.label}: {method}: {exception_line(exc)}"
        self.host._record_call_failure(self.info, f"{self.label}: {method}", exc)

    def garbage(self, method: str, problem: str) -> _Skipped:
        """Record a result that is not what the method promises; returns ``_Skipped``."""
        self.fail(method, PluginError(problem))
        return _Skipped()


class _GuardedCall:
    """A registered callable (importer ``parse``, builder ``build``) called through a guard.

    Compares equal to the callable it wraps. A failure is recorded against the plugin and
    then raised as it was, for the caller to add what it was doing (the import and build
    paths name the format or builder); a timeout raises ``PluginError`` naming the plugin,
    and so does any call after a failure. A ``FabricError`` (a parse error) passes through.
    """

    def __init__(self, function: Callable[..., Any], guard: _Guard, method: str) -> None:
        self.__wrapped__ = function
        self.guard = guard
        self.method = method
        self.__name__ = getattr(function, "__name__", method)
        self.__doc__ = getattr(function, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        guard = self.guard
        prefix = f"plugin {guard.info.name}: {guard.label}"
        if guard.failed:
            raise PluginError(f"{prefix} is skipped: it failed earlier (see `fabricui plugins`)")
        mark = sigints()
        try:
            return guard.run(self.__wrapped__, *args, **kwargs)
        except PluginTimeout as exc:
            guard.fail(self.method, exc)
            raise PluginError(f"{prefix}: {self.method} {exc.message}") from None
        except FabricError:  # a deliberate one-line error (the input is not this format)
            raise
        except Exception as exc:
            guard.fail(self.method, exc)
            raise
        except BaseException as exc:  # exit(), os._exit(), its own KeyboardInterrupt ...
            error = as_plugin_error(exc, mark)  # re-raises the user's Ctrl-C
            guard.fail(self.method, error)
            raise PluginError(f"{prefix}: {self.method} {_aborted(exc)}") from None

    def __eq__(self, other: object) -> bool:
        inner = other.__wrapped__ if isinstance(other, _GuardedCall) else other
        return bool(self.__wrapped__ == inner)

    def __hash__(self) -> int:
        return hash(self.__wrapped__)

    def __repr__(self) -> str:
        return f"<guarded {self.__wrapped__!r}>"


def _aborted(exc: BaseException) -> str:
    """How plugin code that raised ``exc`` (not an ``Exception``) ended, for a message."""
    if isinstance(exc, PluginExit):
        return str(exc)
    if isinstance(exc, SystemExit):
        return f"called exit({exc.code!r})"
    return f"raised {exception_line(exc)}"


def _original(obj: Any, method: str) -> Callable[..., Any]:
    """The plugin's own ``obj.<method>``, under any guard an earlier host put on it."""
    current = getattr(obj, method)
    return getattr(current, "_fabricui_original", current)


def _install(
    obj: Any, method: str, guarded: Callable[..., Any], original: Callable[..., Any]
) -> None:
    """Put ``guarded`` on the instance in place of ``original`` (identity and equality of the
    registered object stay as they were)."""
    guarded._fabricui_original = original  # type: ignore[attr-defined]
    object.__setattr__(obj, method, guarded)


def _guard_algorithm(guard: _Guard, algorithm: CollectiveAlgorithm) -> CollectiveAlgorithm:
    """``applicable`` and ``time_us`` raise PluginError once either failed, hung or returned
    something that is not a yes or no, or a time per size (NaN, negative, faster than a
    nanosecond, wrong shape); ``applicable``'s names the plugin and the first failure, for
    the engine to say why an algorithm asked for cannot run."""
    applicable, time_us = _original(algorithm, "applicable"), _original(algorithm, "time_us")

    def guarded_applicable(group: Any, op: str) -> bool:
        try:
            result = guard.call("applicable", applicable, group, op)
            if not isinstance(result, (bool, np.bool_)):
                raise guard.garbage("applicable", f"returned {type(result).__name__}, not bool")
        except _Skipped:
            raise PluginError(f"plugin {guard.info.name}: {guard.error}") from None
        return bool(result)

    def guarded_time_us(group: Any, op: str, size_bytes: Any, protocol: str) -> Any:
        try:
            result = guard.call("time_us", time_us, group, op, size_bytes, protocol)
            try:
                times = np.asarray(result, dtype=np.float64)
            except (TypeError, ValueError):
                raise guard.garbage(
                    "time_us", f"returned {type(result).__name__}, not an array of times"
                ) from None
            shape = np.shape(size_bytes)
            if times.shape != shape:
                raise guard.garbage("time_us", f"returned shape {times.shape} for sizes {shape}")
            possible = within(times, OPERATION_TIME_US) | (times == 0)  # 0: nothing to do
            if not possible.all():
                wrong = problem(times[~possible].flat[0], OPERATION_TIME_US)
                raise guard.garbage("time_us", f"returned an impossible time: {wrong}")
        except _Skipped:
            raise PluginError(
                f"plugin {guard.info.name}: {guard.label} skipped (see `fabricui plugins`)"
            ) from None
        return times

    _install(algorithm, "applicable", guarded_applicable, applicable)
    _install(algorithm, "time_us", guarded_time_us, time_us)
    return algorithm


def _check_items(result: Any, kind: type, check: Callable[[Any], str | None]) -> str | None:
    """What is wrong with a list of ``kind`` items a strategy returned, or None."""
    if not isinstance(result, (list, tuple)):
        return f"returned {type(result).__name__}, not a list of {kind.__name__}"
    for item in result:
        if not isinstance(item, kind):
            return f"returned a {type(item).__name__} item, not {kind.__name__}"
        wrong = check(item)
        if wrong:
            return wrong
    return None


def _check_operation(op: CommOp) -> str | None:
    """What is wrong with one of a strategy's operations, or None."""
    if op.collective not in OPS:
        return f"collective {op.collective!r} is not one of {', '.join(OPS)}"
    if op.group not in AXES:
        return f"group {op.group!r} is not one of {', '.join(AXES)}"
    for attr, bound in (("size_bytes", BYTES), ("count", CALLS)):
        value = getattr(op, attr)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return f"{attr} {value!r:.40} is not a number"
        wrong = problem(value, bound)
        if wrong:
            return f"{attr}: {wrong}"
    return None


def _check_memory_term(term: MemoryTerm) -> str | None:
    """What is wrong with one of a strategy's memory terms, or None."""
    wrong = problem(term.size_bytes, BYTES)
    return f"{term.what!r:.40}: {wrong}" if wrong else None


def _check_shards(result: Any) -> str | None:
    """What is wrong with a strategy's ``state_shards()`` result, or None."""
    if not isinstance(result, StateShards):
        return f"returned {type(result).__name__}, not StateShards"
    for attr in ("weights", "grads", "optimizer"):
        value = getattr(result, attr)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            return f"{attr} {value!r:.40} is not a whole number of ranks >= 1"
    return None


def _guard_strategy(guard: _Guard, strategy: Strategy) -> Strategy:
    """Once ``applicable``, ``operations``, ``memory`` or ``state_shards`` failed, hung or
    returned garbage (an impossible size or count), the strategy is skipped: ``applicable``
    answers False, ``operations`` and ``memory`` return nothing, ``state_shards`` no
    sharding."""
    applicable, operations = _original(strategy, "applicable"), _original(strategy, "operations")

    def guarded_applicable(model: Any, layout: Any) -> bool:
        try:
            result = guard.call("applicable", applicable, model, layout)
            if not isinstance(result, (bool, np.bool_)):
                raise guard.garbage("applicable", f"returned {type(result).__name__}, not bool")
        except _Skipped:
            return False
        return bool(result)

    def checked(
        method: str,
        function: Callable[..., Any],
        check: Callable[[Any], str | None],
        skipped: Callable[[], Any],
    ) -> Callable[[Any, Any], Any]:
        """``function(model, layout)`` through the guard, its result checked; what
        ``skipped()`` returns once the strategy failed."""

        def guarded(model: Any, layout: Any) -> Any:
            try:
                result = guard.call(method, function, model, layout)
                wrong = check(result)
                if wrong:
                    raise guard.garbage(method, wrong)
            except _Skipped:
                return skipped()
            return list(result) if isinstance(result, (list, tuple)) else result

        return guarded

    memory, state_shards = _original(strategy, "memory"), _original(strategy, "state_shards")
    _install(strategy, "applicable", guarded_applicable, applicable)
    for method, function, check, skipped in (
        ("operations", operations, lambda r: _check_items(r, CommOp, _check_operation), list),
        ("memory", memory, lambda r: _check_items(r, MemoryTerm, _check_memory_term), list),
        ("state_shards", state_shards, _check_shards, StateShards),
    ):
        _install(strategy, method, checked(method, function, check, skipped), function)
    return strategy


def _guard_builder(guard: _Guard, builder: TopologyBuilder) -> TopologyBuilder:
    build = builder.build
    build = build.__wrapped__ if isinstance(build, _GuardedCall) else build
    return dataclasses.replace(builder, build=_GuardedCall(build, guard, "build"))


def _guard_importer(guard: _Guard, parse: Callable[..., Any]) -> Callable[..., Any]:
    parse = parse.__wrapped__ if isinstance(parse, _GuardedCall) else parse
    return _GuardedCall(parse, guard, "parse")


#: kind -> (label of one contribution, guard installer) for what plugins register code in.
_GUARDS: dict[str, tuple[str, Callable[[_Guard, Any], Any]]] = {
    "collective_algorithms": ("collective algorithm", _guard_algorithm),
    "strategies": ("strategy", _guard_strategy),
    "topology_builders": ("topology builder", _guard_builder),
    "importers": ("importer", _guard_importer),
}
