"""The plugin host: loads plugins, calls hooks one plugin at a time, validates what they give."""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import math
import numbers
import os
import re
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

import numpy as np
import pluggy

from fabricui import hookspecs
from fabricui.engine.collectives import PROTOCOLS
from fabricui.engine.names import OPS
from fabricui.engine.strategies import AXES
from fabricui.engine.types import (
    CollectiveAlgorithm,
    CommOp,
    Interconnect,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import FabricError, HwdbError, PluginError
from fabricui.model.records import TIERS, LinkGeneration

#: Entry-point group (and pluggy project name) plugins register under.
GROUP = hookspecs.PROJECT

ENV_PLUGINS_DIR = "FABRICUI_PLUGINS_DIR"
ENV_LOAD = "FABRICUI_LOAD_PLUGINS"
ENV_DISABLE = "FABRICUI_DISABLE_PLUGINS"
ENV_STRICT = "FABRICUI_STRICT_PLUGINS"
ENV_TRACE = "FABRICUI_TRACE_PLUGINS"
ENV_TIMEOUT = "FABRICUI_PLUGIN_TIMEOUT_S"

#: Time a plugin's hook (or a call into what it registered) may take [s] before it is skipped.
DEFAULT_TIMEOUT_S = 5.0

SOURCE_BUILTIN = "builtin"
SOURCE_ENTRY_POINT = "entry point"
SOURCE_FILE = "file"
SOURCE_REGISTERED = "registered"

#: Contribution kinds, in the order ``describe()`` lists them; each has hook ``register_<kind>``.
KINDS = (
    "link_generations",
    "hwdb_paths",
    "interconnects",
    "topology_builders",
    "collective_algorithms",
    "strategies",
    "importers",
)


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that was skipped, as a whole or for one hook, and why."""

    name: str
    """Plugin name (entry-point name, file stem, or the name it was registered under)."""
    dist: str | None
    """Distribution that declared it, when it came from an entry point."""
    version: str | None
    """Version of that distribution (or the file plugin's ``__version__``)."""
    error: str
    """One line: what went wrong."""


@dataclass(eq=False)
class PluginInfo:
    """What the host knows about one plugin it found."""

    name: str
    """Plugin name (unique among registered plugins)."""
    source: str
    """``builtin``, ``entry point``, ``file`` or ``registered`` (in-process)."""
    dist: str | None = None
    """Distribution that declared it, for entry points."""
    version: str | None = None
    """Distribution version, or a file plugin's ``__version__``."""
    plugin: object | None = None
    """The registered plugin object (None when it failed to load or is blocked)."""
    blocked: bool = False
    load_error: str | None = None
    """Why it was not loaded (import, registration or hookspec validation)."""
    hook_errors: list[str] = field(default_factory=list)
    """Why some of its hooks' contributions were dropped (``register_x: error``)."""
    call_errors: list[str] = field(default_factory=list)
    """Why contributions were skipped when called (``strategy 'x': operations: error``)."""

    @property
    def errors(self) -> list[str]:
        """Every error recorded for this plugin."""
        load = [self.load_error] if self.load_error else []
        return load + self.hook_errors + self.call_errors


# --- validation of registered objects -----------------------------------------------------


def _expect(obj: Any, cls: type) -> None:
    """Raise PluginError unless ``obj`` is an instance of ``cls``."""
    if isinstance(obj, type) and issubclass(obj, cls):
        raise PluginError(f"register an instance of {obj.__name__}, not the class")
    if not isinstance(obj, cls):
        raise PluginError(f"expected {cls.__name__}, got {type(obj).__name__} {obj!r:.60}")


def _name_of(obj: Any, attr: str = "name") -> str:
    """The non-empty str identifier ``obj.<attr>``, else PluginError."""
    name = getattr(obj, attr, None)
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"{type(obj).__name__} needs a non-empty str {attr}, got {name!r}")
    return name


def _finite(value: Any, what: str, positive: bool = False) -> float:
    """``value`` as a float; PluginError unless it is a finite number (> 0 when ``positive``,
    else >= 0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PluginError(f"{what} must be a number, got {type(value).__name__} {value!r:.40}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        bound = "greater than 0" if positive else "at least 0"
        raise PluginError(f"{what} must be a finite number {bound}, got {value!r:.40}")
    return number


def _check_link_generation(obj: Any) -> tuple[str, Any]:
    _expect(obj, LinkGeneration)
    link_id = _name_of(obj, "id")
    what = f"link generation {link_id!r}"
    if not isinstance(obj.family, str) or not obj.family.strip():
        raise PluginError(f"{what}: family must be a non-empty str, got {obj.family!r:.40}")
    if obj.tier not in TIERS:
        raise PluginError(f"{what}: tier must be one of {', '.join(TIERS)}, got {obj.tier!r:.40}")
    _finite(obj.bw_GBps, f"{what}: bw_GBps", positive=True)
    _finite(obj.lat_us, f"{what}: lat_us")
    if not 0 < _finite(obj.efficiency, f"{what}: efficiency", positive=True) <= 1:
        raise PluginError(f"{what}: efficiency must be in (0, 1], got {obj.efficiency!r}")
    if obj.links_per_gpu is not None:
        _finite(obj.links_per_gpu, f"{what}: links_per_gpu", positive=True)
    for rate in obj.rates_Gbps if isinstance(obj.rates_Gbps, tuple) else (obj.rates_Gbps,):
        _finite(rate, f"{what}: rates_Gbps", positive=True)
    return link_id, obj


def _check_hwdb_path(obj: Any) -> tuple[str, Any]:
    if not isinstance(obj, Path):
        raise PluginError(f"expected pathlib.Path, got {type(obj).__name__} {obj!r:.60}")
    if not obj.is_dir():
        raise PluginError(f"hwdb path {obj} is not a directory")
    return str(obj.resolve()), obj


def _check_interconnect(obj: Any) -> tuple[str, Any]:
    _expect(obj, Interconnect)
    name = _name_of(obj)
    families = obj.families
    if not isinstance(families, tuple) or not families:
        raise PluginError(f"interconnect {name!r}: families must be a non-empty tuple of str")
    if not all(isinstance(f, str) and f for f in families):
        raise PluginError(f"interconnect {name!r}: families must be non-empty str")
    return name, obj


def _check_topology_builder(obj: Any) -> tuple[str, Any]:
    _expect(obj, TopologyBuilder)
    name = _name_of(obj)
    if not callable(obj.build):
        raise PluginError(f"topology builder {name!r}: build is not callable")
    return name, obj


def _check_collective_algorithm(obj: Any) -> tuple[str, Any]:
    from fabricui.engine.algorithms import core_algorithms

    _expect(obj, CollectiveAlgorithm)
    name = _name_of(obj)
    if name in {a.name for a in core_algorithms()}:
        raise PluginError(f"algorithm {name!r} is one of fabricui's core algorithms")
    for attr, allowed in (("ops", OPS), ("protocols", PROTOCOLS)):
        value = getattr(obj, attr, None)
        if not isinstance(value, tuple) or not value or not all(v in allowed for v in value):
            raise PluginError(
                f"algorithm {name!r}: {attr} must be a non-empty tuple from {allowed}"
            )
    for method in ("applicable", "time_us"):
        if not callable(getattr(obj, method, None)):
            raise PluginError(f"algorithm {name!r}: {method} is not callable")
    return name, obj


def _check_strategy(obj: Any) -> tuple[str, Any]:
    _expect(obj, Strategy)
    name = _name_of(obj)
    for method in ("applicable", "operations"):
        if not callable(getattr(obj, method, None)):
            raise PluginError(f"strategy {name!r}: {method} is not callable")
    return name, obj


def _check_importer(item: tuple[Any, Any]) -> tuple[str, Any]:
    name, parse = item
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"importer needs a non-empty str name, got {name!r}")
    if not callable(parse):
        raise PluginError(f"importer {name!r}: parse is not callable")
    return name, parse


def _one(item: Any) -> Any:
    return item


def _pair(name: Any, parse: Any) -> tuple[Any, Any]:
    return name, parse


#: kind -> (turns register(...) arguments into one item, validates it into (key, value)).
_RULES: dict[str, tuple[Callable[..., Any], Callable[[Any], tuple[str, Any]]]] = {
    "link_generations": (_one, _check_link_generation),
    "hwdb_paths": (_one, _check_hwdb_path),
    "interconnects": (_one, _check_interconnect),
    "topology_builders": (_one, _check_topology_builder),
    "collective_algorithms": (_one, _check_collective_algorithm),
    "strategies": (_one, _check_strategy),
    "importers": (_pair, _check_importer),
}


# --- discovery -----------------------------------------------------------------------------


def entry_points() -> list[importlib.metadata.EntryPoint]:
    """Entry points of group ``fabricui``, each with ``.dist`` set where known.

    fabricui's own (the built-ins) come first in the order pyproject.toml declares them; the
    others follow sorted by distribution and name, so that which of two plugins registering
    the same id loads first does not depend on the order site-packages lists its files in.
    """
    found = _discover()

    def order(ep: importlib.metadata.EntryPoint) -> tuple[bool, str, str]:
        dist = _normalize(_dist_of(ep)[0] or "")
        ours = dist == "fabricui"  # a stable sort keeps the declared order of ours
        return (not ours, "" if ours else dist, "" if ours else ep.name)

    return sorted(found, key=order)


def _discover() -> list[importlib.metadata.EntryPoint]:
    if sys.version_info >= (3, 10):
        return list(importlib.metadata.entry_points(group=GROUP))
    found: list[importlib.metadata.EntryPoint] = []
    seen: set[str] = set()
    for dist in importlib.metadata.distributions():
        name = _normalize(dist.metadata["Name"] or "")
        if name in seen:
            continue
        seen.add(name)
        for ep in dist.entry_points:
            if ep.group == GROUP:
                ep.dist = dist  # type: ignore[attr-defined]
                found.append(ep)
    return found


def plugin_dirs() -> list[Path]:
    """Directories searched for single-file plugins: the user's config dir, then the env's."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs = [Path(config) / "fabricui" / "plugins"]
    extra = os.environ.get(ENV_PLUGINS_DIR)
    if extra:
        dirs.append(Path(extra).expanduser())
    return dirs


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_of(ep: Any) -> tuple[str | None, str | None]:
    """(distribution name, version) of an entry point, or Nones."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    name, version = dist.metadata["Name"], dist.version
    return (
        name if isinstance(name, str) else None,
        version if isinstance(version, str) else None,
    )


def _is_builtin(ep: Any, dist: str | None) -> bool:
    module = str(ep.value).partition(":")[0].strip()
    return module.startswith("fabricui_") and _normalize(dist or "") == "fabricui"


def _import_file(path: Path) -> object:
    """Import a single-file plugin as module ``fabricui_file_plugin_<stem>``."""
    module_name = "fabricui_file_plugin_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _load_file(path: Path) -> object:
    """Import a single-file plugin unless someone else than the user could have written it."""
    unsafe = unsafe_reason(path)
    if unsafe:
        raise PluginError(f"{path} is {unsafe}: not loaded (make it yours and `chmod go-w {path}`)")
    return _import_file(path)


def _env_list(name: str) -> set[str] | None:
    """Comma-separated names from ``$name``; None when unset (an empty value is an empty set)."""
    value = os.environ.get(name)
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _one_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())


def unsafe_reason(path: Path) -> str | None:
    """Why ``path`` (a plugin directory or file) must not be trusted to hold code, or None.

    Code there runs as the user, so no other user may write it: not writable by others, not
    writable by its group unless that group is the owner's private group (Debian and Ubuntu
    give every user one, with umask 002), and owned by the user or root. Not checked where
    there are no Unix owners (Windows).

    Args:
        path: The directory or file.

    Returns:
        One line, e.g. ``writable by others (mode 0777)``, or None when it is safe.
    """
    if not hasattr(os, "getuid"):
        return None
    try:
        info = path.stat()
    except OSError as exc:
        return f"not readable ({exc.strerror or exc})"
    if info.st_uid not in (0, os.getuid()):
        return f"owned by another user (uid {info.st_uid})"
    mode = stat.S_IMODE(info.st_mode)
    if info.st_mode & stat.S_IWOTH:
        return f"writable by others (mode {mode:04o})"
    if info.st_mode & stat.S_IWGRP and not _private_group(info.st_gid, info.st_uid):
        return f"writable by group {_group_name(info.st_gid)} (mode {mode:04o})"
    return None


def _private_group(gid: int, uid: int) -> bool:
    """True when ``gid`` is the primary group of ``uid`` and has no other members."""
    try:
        import grp
        import pwd
    except ImportError:  # no Unix user database
        return False
    try:
        owner = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    others = [name for name in group.gr_mem if name != owner.pw_name]
    primary_of_others = [
        user.pw_name for user in pwd.getpwall() if user.pw_gid == gid and user.pw_uid != uid
    ]
    return owner.pw_gid == gid and not others and not primary_of_others


def _group_name(gid: int) -> str:
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (ImportError, KeyError):
        return str(gid)


def timeout_s() -> float | None:
    """The time budget of one plugin call, from ``FABRICUI_PLUGIN_TIMEOUT_S`` [s].

    Returns:
        ``DEFAULT_TIMEOUT_S`` when unset or not a number; None (no limit) for 0 or less.
    """
    text = os.environ.get(ENV_TIMEOUT, "").strip()
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S
    if math.isnan(value):
        return DEFAULT_TIMEOUT_S
    return value if 0 < value < math.inf else None


class PluginTimeout(PluginError):
    """A plugin call ran past its time budget (it is abandoned, still running, in a thread)."""


def call_with_budget(function: Callable[[], Any], seconds: float | None) -> Any:
    """``function()``, abandoned when it takes longer than ``seconds``.

    The call runs in a daemon thread, so a hook that sleeps or loops forever cannot hold
    the app (nor its exit); Python cannot stop the thread, so it is left to finish alone.

    Args:
        function: What to call.
        seconds: The budget; None calls ``function`` directly, without a thread.

    Returns:
        What ``function`` returned.

    Raises:
        PluginTimeout: It did not return within ``seconds``.
        BaseException: Whatever ``function`` raised.
    """
    if seconds is None:
        return function()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = function()
        except BaseException as exc:  # handed to the caller's thread as it is
            box["error"] = exc

    thread = threading.Thread(target=target, name="fabricui-plugin-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise PluginTimeout(f"took longer than {seconds:g} s ({ENV_TIMEOUT}); abandoned")
    if "error" in box:
        raise box["error"]
    return box["result"]


# --- guarding what plugins registered --------------------------------------------------------


class _Skipped(Exception):
    """A guarded call failed (already recorded); the caller substitutes a safe result."""


class _Guard:
    """Calls into one registered object for the host: time budget, errors, garbage results.

    The first failure is recorded against the plugin (``fabricui plugins`` shows it, the CLI
    prints it once) and disables the object: later calls are skipped at once. A
    ``FabricError`` (a deliberate one-line error) passes through untouched.
    """

    def __init__(self, host: PluginHost, info: PluginInfo, label: str, timed: bool) -> None:
        self.host = host
        self.info = info
        self.label = label
        """What it is, for messages (``collective algorithm 'toy-ring'``)."""
        self.timed = timed
        """Whether calls get the time budget (external plugins; built-ins are trusted)."""
        self.failed = False

    def call(self, method: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` within the budget; raises ``_Skipped`` on failure."""
        if self.failed:
            raise _Skipped
        budget = self.host.timeout_s if self.timed else None
        try:
            return call_with_budget(functools.partial(function, *args, **kwargs), budget)
        except PluginTimeout as exc:
            self.fail(method, exc)
        except FabricError:  # a deliberate one-line error for the user, not a plugin bug
            raise
        except (Exception, SystemExit) as exc:
            self.fail(method, exc)
        raise _Skipped

    def fail(self, method: str, exc: BaseException) -> None:
        """Record that ``method`` failed with ``exc`` and disable the object."""
        self.failed = True
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
        budget = guard.host.timeout_s if guard.timed else None
        try:
            return call_with_budget(functools.partial(self.__wrapped__, *args, **kwargs), budget)
        except PluginTimeout as exc:
            guard.fail(self.method, exc)
            raise PluginError(f"{prefix}: {self.method} {exc.message}") from None
        except FabricError:  # a deliberate one-line error (the input is not this format)
            raise
        except SystemExit as exc:  # a plugin must not end the app
            guard.fail(self.method, exc)
            raise PluginError(f"{prefix}: {self.method} called exit({exc.code!r})") from None
        except Exception as exc:
            guard.fail(self.method, exc)
            raise

    def __eq__(self, other: object) -> bool:
        inner = other.__wrapped__ if isinstance(other, _GuardedCall) else other
        return bool(self.__wrapped__ == inner)

    def __hash__(self) -> int:
        return hash(self.__wrapped__)

    def __repr__(self) -> str:
        return f"<guarded {self.__wrapped__!r}>"


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
    """``applicable`` answers False and ``time_us`` raises PluginError once either failed,
    hung or returned something that is not a time per size (NaN, negative, wrong shape)."""
    applicable, time_us = _original(algorithm, "applicable"), _original(algorithm, "time_us")

    def guarded_applicable(group: Any, op: str) -> bool:
        try:
            result = guard.call("applicable", applicable, group, op)
            if not isinstance(result, (bool, np.bool_)):
                raise guard.garbage("applicable", f"returned {type(result).__name__}, not bool")
        except _Skipped:
            return False
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
            if not np.isfinite(times).all() or (times < 0).any():
                raise guard.garbage("time_us", "returned NaN, infinite or negative times")
        except _Skipped:
            raise PluginError(
                f"plugin {guard.info.name}: {guard.label} skipped (see `fabricui plugins`)"
            ) from None
        return times

    _install(algorithm, "applicable", guarded_applicable, applicable)
    _install(algorithm, "time_us", guarded_time_us, time_us)
    return algorithm


def _check_operations(result: Any) -> str | None:
    """What is wrong with a strategy's ``operations()`` result, or None."""
    if not isinstance(result, (list, tuple)):
        return f"returned {type(result).__name__}, not a list of CommOp"
    for op in result:
        if not isinstance(op, CommOp):
            return f"returned a {type(op).__name__} item, not CommOp"
        if op.collective not in OPS:
            return f"collective {op.collective!r} is not one of {', '.join(OPS)}"
        if op.group not in AXES:
            return f"group {op.group!r} is not one of {', '.join(AXES)}"
        for attr in ("size_bytes", "count"):
            value = getattr(op, attr)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                return f"{attr} {value!r:.40} is not a number"
            if not math.isfinite(value) or value < 0:
                return f"{attr} {value!r} is not a finite number >= 0"
    return None


def _guard_strategy(guard: _Guard, strategy: Strategy) -> Strategy:
    """Once ``applicable`` or ``operations`` failed, hung or returned garbage, the strategy
    is skipped: ``applicable`` answers False and ``operations`` returns no operations."""
    applicable, operations = _original(strategy, "applicable"), _original(strategy, "operations")

    def guarded_applicable(model: Any, layout: Any) -> bool:
        try:
            result = guard.call("applicable", applicable, model, layout)
            if not isinstance(result, (bool, np.bool_)):
                raise guard.garbage("applicable", f"returned {type(result).__name__}, not bool")
        except _Skipped:
            return False
        return bool(result)

    def guarded_operations(model: Any, layout: Any) -> list[CommOp]:
        try:
            result = guard.call("operations", operations, model, layout)
            problem = _check_operations(result)
            if problem:
                raise guard.garbage("operations", problem)
        except _Skipped:
            return []
        return list(result)

    _install(strategy, "applicable", guarded_applicable, applicable)
    _install(strategy, "operations", guarded_operations, operations)
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


# --- the host ------------------------------------------------------------------------------


class PluginHost:
    """Finds, loads and calls plugins; a failing plugin is recorded and skipped, never fatal.

    Built-ins come from entry points of distribution ``fabricui``; external plugins are other
    distributions' entry points and single-file plugins (see ``plugin_dirs``). Environment:
    ``FABRICUI_LOAD_PLUGINS`` (allow-list of external plugins), ``FABRICUI_DISABLE_PLUGINS``
    (block-list), ``FABRICUI_STRICT_PLUGINS=1`` (re-raise the first error),
    ``FABRICUI_PLUGIN_TIMEOUT_S`` (time budget of a hook or plugin call, default 5 s) and
    ``FABRICUI_TRACE_PLUGINS=1`` (trace hook calls to stderr).

    What plugins register is validated; what they register code in (algorithms, strategies,
    builders, importers) is called through a guard, so a contribution that raises, hangs or
    returns garbage at call time is recorded against its plugin and skipped. When two
    plugins register the same id the first keeps it (built-ins load first) and the second's
    hook is reported as skipped, naming both.

    Args:
        load_external: Load third-party entry points and single-file plugins.
        builtins: Load the built-in plugins shipped with fabricui.
    """

    def __init__(self, load_external: bool = True, builtins: bool = True) -> None:
        self._pm = pluggy.PluginManager(GROUP)
        self._pm.add_hookspecs(hookspecs)
        self._infos: list[PluginInfo] = []
        self._load_failures: list[PluginFailure] = []
        self._hook_failures: dict[str, list[PluginFailure]] = {}
        self._call_failures: list[PluginFailure] = []
        self._results: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, dict[str, PluginInfo]] = {}
        self._reported: set[PluginFailure] = set()
        self.strict = _env_flag(ENV_STRICT)
        self.timeout_s = timeout_s()
        """Time budget of one hook or plugin call [s] (None: no limit)."""
        self._allow = _env_list(ENV_LOAD)
        for name in sorted(_env_list(ENV_DISABLE) or ()):
            self._pm.set_blocked(name)
        if _env_flag(ENV_TRACE):
            self._pm.trace.root.setwriter(sys.stderr.write)
            self._pm.enable_tracing()
        self._load_entry_points(builtins=builtins, external=load_external)
        if load_external:
            self._load_files(plugin_dirs())
        self._check_pending()

    # loading

    def register(self, plugin: object, name: str | None = None) -> bool:
        """Register an in-process plugin (tests, embedding apps); False when it was skipped.

        Args:
            plugin: A module, class instance or class with ``@hookimpl`` functions.
            name: Plugin name; defaults to pluggy's canonical name (``__name__``).
        """
        name = name or self._pm.get_canonical_name(plugin)
        info = self._load(name, SOURCE_REGISTERED, None, None, lambda: plugin)
        self._check_pending()
        self._forget_results()
        return info.plugin is not None and self._pm.is_registered(info.plugin)

    def _load_entry_points(self, builtins: bool, external: bool) -> None:
        for ep in entry_points():
            dist, version = _dist_of(ep)
            if _is_builtin(ep, dist):
                if builtins:
                    self._load(ep.name, SOURCE_BUILTIN, dist, version, ep.load)
            elif external and self._allowed(ep.name):
                self._load(ep.name, SOURCE_ENTRY_POINT, dist, version, ep.load)

    def _load_files(self, dirs: list[Path]) -> None:
        """Load ``*.py`` files of each directory that exists, unless it (or the file) could
        have been written by someone else than the user (see ``unsafe_reason``)."""
        for directory in dirs:
            if not directory.is_dir():
                continue
            unsafe = unsafe_reason(directory)
            if unsafe:
                info = PluginInfo(name=str(directory), source=SOURCE_FILE)
                self._infos.append(info)
                self._fail(
                    info,
                    PluginError(
                        f"plugin directory {unsafe}: none of its plugins loaded "
                        f"(make it yours and `chmod go-w {directory}`)"
                    ),
                )
                continue
            for path in sorted(directory.glob("*.py")):
                if path.name.startswith("_") or not self._allowed(path.stem):
                    continue
                self._load(path.stem, SOURCE_FILE, None, None, functools.partial(_load_file, path))

    def _allowed(self, name: str) -> bool:
        return self._allow is None or name in self._allow

    def _load(
        self,
        name: str,
        source: str,
        dist: str | None,
        version: str | None,
        loader: Callable[[], object],
    ) -> PluginInfo:
        """Import (``loader``) and register one plugin; a failure is recorded, not raised."""
        info = PluginInfo(name=name, source=source, dist=dist, version=version)
        self._infos.append(info)
        if self._pm.is_blocked(name):
            info.blocked = True
            return info
        try:
            # Importing runs the plugin's module code: under the same time budget as hooks.
            plugin = call_with_budget(loader, self.timeout_s)
            if info.version is None and source == SOURCE_FILE:
                version = getattr(plugin, "__version__", None)
                info.version = version if isinstance(version, str) else None
            self._pm.register(plugin, name=name)
            info.plugin = plugin
            self._reject_specname(plugin)
        except (Exception, SystemExit) as exc:  # SystemExit: a plugin must not end the app
            if info.plugin is not None and self._pm.is_registered(info.plugin):
                self._pm.unregister(info.plugin)
            self._fail(info, exc)
        return info

    def _reject_specname(self, plugin: object) -> None:
        for caller in self._pm.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin and impl.opts.get("specname"):
                    raise PluginError(
                        f"{impl.function.__name__}: name the function {caller.name} "
                        "(hookimpl specname is not supported)"
                    )

    def _check_pending(self) -> None:
        """Unregister and record every plugin with a hookimpl that matches no hookspec."""
        while True:
            try:
                self._pm.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self._pm.get_name(exc.plugin)
                self._pm.unregister(exc.plugin)
                info = next(i for i in reversed(self._infos) if i.plugin is exc.plugin)
                self._fail(info, exc, name=name)

    def _fail(
        self,
        info: PluginInfo,
        exc: BaseException,
        hook: str | None = None,
        name: str | None = None,
    ) -> None:
        """Record ``exc`` against ``info`` (for ``hook``, when given); re-raise in strict mode."""
        error = _one_line(exc)
        if hook is None:
            info.load_error = error
        else:
            error = f"{hook}: {error}"
            info.hook_errors.append(error)
        failure = PluginFailure(name or info.name, info.dist, info.version, error)
        if hook is None:
            self._load_failures.append(failure)
        else:
            self._hook_failures.setdefault(hook, []).append(failure)
        if self.strict:
            raise exc

    def _record_call_failure(self, info: PluginInfo, what: str, exc: BaseException) -> None:
        """Record that calling into ``info``'s contribution failed; re-raise in strict mode."""
        error = f"{what}: {_one_line(exc)}"
        info.call_errors.append(error)
        self._call_failures.append(PluginFailure(info.name, info.dist, info.version, error))
        if self.strict:
            raise exc

    # calling hooks

    def _forget_results(self) -> None:
        self._results.clear()
        self._owners.clear()
        self._hook_failures.clear()
        self._call_failures.clear()
        for info in self._infos:
            info.hook_errors.clear()
            info.call_errors.clear()

    def _registered(self) -> list[PluginInfo]:
        """Registered plugins, in load order (built-ins, entry points, files, in-process)."""
        return [i for i in self._infos if i.plugin is not None and self._pm.is_registered(i.plugin)]

    def _implementers(self, hook: str) -> list[PluginInfo]:
        plugins = {id(impl.plugin) for impl in getattr(self._pm.hook, hook).get_hookimpls()}
        return [i for i in self._registered() if id(i.plugin) in plugins]

    def _collect(self, kind: str) -> dict[str, Any]:
        """Call ``register_<kind>`` plugin by plugin; first registration of a name wins."""
        if kind in self._results:
            return self._results[kind]
        hook = f"register_{kind}"
        result: dict[str, Any] = {}
        owners: dict[str, PluginInfo] = {}
        for info in self._implementers(hook):
            staged = self._call_one(info, kind, owners)
            if staged is not None:
                result.update(self._guarded(kind, info, staged))
                owners.update(dict.fromkeys(staged, info))
        self._results[kind] = result
        self._owners[kind] = owners
        if kind == "link_generations":
            self._drop_hwdb_clashes(result, owners)
        elif kind == "hwdb_paths":
            self._drop_broken_hwdb(result, owners)
        return result

    def _call_one(
        self, info: PluginInfo, kind: str, owners: dict[str, PluginInfo]
    ) -> dict[str, Any] | None:
        """One plugin's contributions to ``kind``, or None when its hook failed."""
        hook = f"register_{kind}"
        pack, check = _RULES[kind]
        staged: dict[str, Any] = {}
        errors: list[PluginError] = []
        closed = threading.Event()

        def register(*args: Any, **kwargs: Any) -> None:
            if closed.is_set():
                raise PluginError(f"{hook}: register() called after the hook was abandoned")
            try:
                key, value = check(pack(*args, **kwargs))
                if key in staged or key in owners:
                    by = owners[key].name if key in owners else info.name
                    raise PluginError(f"{key!r} is already registered by plugin {by}")
            except PluginError as exc:
                errors.append(exc)
                raise
            except Exception as exc:  # garbage that broke a check (or wrong arguments)
                error = PluginError(f"register(...): {_one_line(exc)}")
                errors.append(error)
                raise error from exc
            staged[key] = value

        others = [i.plugin for i in self._registered() if i is not info]
        caller = self._pm.subset_hook_caller(hook, remove_plugins=others)
        try:
            call_with_budget(functools.partial(caller, register=register), self.timeout_s)
            if errors:
                raise errors[0]
        except (Exception, SystemExit) as exc:
            closed.set()
            self._fail(info, exc, hook=hook)
            return None
        closed.set()
        return staged

    def _guarded(self, kind: str, info: PluginInfo, staged: dict[str, Any]) -> dict[str, Any]:
        """``staged`` with every code-carrying contribution wrapped in a guard."""
        if kind not in _GUARDS:
            return staged
        label, install = _GUARDS[kind]
        timed = info.source != SOURCE_BUILTIN
        return {
            key: install(_Guard(self, info, f"{label} {key!r}", timed), value)
            for key, value in staged.items()
        }

    def _drop_hwdb_clashes(self, links: dict[str, Any], owners: dict[str, PluginInfo]) -> None:
        """A link generation the hardware database already has stays the database's."""
        from fabricui.hwdb import load_catalog

        if not links:
            return
        try:
            catalog = load_catalog()
        except HwdbError:  # the database itself is broken: that error is reported elsewhere
            return
        for link_id in [i for i in links if i in catalog.links]:
            owner = owners.pop(link_id)
            del links[link_id]
            where = catalog.origins.get(("links", link_id), "the hardware database")
            self._fail(
                owner,
                PluginError(
                    f"link generation {link_id!r} is already in the hardware database ({where})"
                ),
                hook="register_link_generations",
            )

    def _drop_broken_hwdb(self, paths: dict[str, Any], owners: dict[str, PluginInfo]) -> None:
        """Drop each plugin hwdb directory that does not load on top of the built-in one."""
        from fabricui.hwdb import default_hwdb_dir, load_catalog

        if not paths:
            return
        links = {
            link_id: (link, f"plugin {self.contributor('link_generations', link_id)}")
            for link_id, link in self.link_generations().items()
        }
        good: list[Path] = []
        for key, path in list(paths.items()):
            try:
                load_catalog([default_hwdb_dir(), *good, path], extra_links=links)
            except HwdbError as exc:
                owner = owners.pop(key)
                del paths[key]
                self._fail(owner, PluginError(exc.message), hook="register_hwdb_paths")
            else:
                good.append(path)

    # the typed facade

    def link_generations(self) -> dict[str, LinkGeneration]:
        """Link generations registered by plugins, by id (ids the database has are dropped)."""
        return self._collect("link_generations")

    def hwdb_paths(self) -> list[Path]:
        """Directories of hwdb YAML files registered by plugins, in plugin order (each loads
        on top of the built-in database; one that does not is dropped)."""
        return list(self._collect("hwdb_paths").values())

    def interconnects(self) -> dict[str, Interconnect]:
        """Interconnects registered by plugins, by name."""
        return self._collect("interconnects")

    def topology_builders(self) -> dict[str, TopologyBuilder]:
        """Topology builders registered by plugins, by name (``build`` guarded)."""
        return self._collect("topology_builders")

    def collective_algorithms(self) -> dict[str, CollectiveAlgorithm]:
        """Collective algorithm instances registered by plugins, by name (methods guarded)."""
        return self._collect("collective_algorithms")

    def strategies(self) -> dict[str, Strategy]:
        """Parallelism strategy instances registered by plugins, by name (methods guarded)."""
        return self._collect("strategies")

    def importers(self) -> dict[str, Callable[..., Any]]:
        """Importer ``parse`` callables registered by plugins, by format name (guarded)."""
        return self._collect("importers")

    def collect_all(self) -> None:
        """Call every hook once, so that ``failures`` and ``describe()`` are complete."""
        for kind in KINDS:
            self._collect(kind)

    def contributor(self, kind: str, name: str) -> str | None:
        """Name of the plugin that contributed ``name`` to ``kind`` (e.g. ``interconnects``)."""
        self._collect(kind)
        owner = self._owners[kind].get(name)
        return owner.name if owner is not None else None

    def failed_at_call(self, kind: str, name: str) -> bool:
        """True when ``name``'s contribution to ``kind`` failed when it was called (and is
        skipped from then on).

        Args:
            kind: ``collective_algorithms``, ``strategies``, ``topology_builders`` or
                ``importers``.
            name: The contribution's name.
        """
        owner = self._owners.get(kind, {}).get(name)
        if owner is None or kind not in _GUARDS:
            return False
        label = f"{_GUARDS[kind][0]} {name!r}: "
        return any(error.startswith(label) for error in owner.call_errors)

    # reporting

    @property
    def failures(self) -> list[PluginFailure]:
        """Every failure so far: loading, hook calls (see ``collect_all``), then calls into
        what plugins registered."""
        hooked = [f for kind in KINDS for f in self._hook_failures.get(f"register_{kind}", [])]
        return [*self._load_failures, *hooked, *self._call_failures]

    def describe(self) -> list[dict[str, Any]]:
        """One dict per plugin found: name, version, source, status, hooks, contributes, error."""
        self.collect_all()
        return [self._describe_one(info) for info in self._infos]

    def _describe_one(self, info: PluginInfo) -> dict[str, Any]:
        errors = info.errors
        status = "blocked" if info.blocked else "failed" if errors else "ok"
        contributes = {
            kind: [key for key, owner in self._owners[kind].items() if owner is info]
            for kind in KINDS
        }
        return {
            "name": info.name,
            "version": info.version,
            "source": info.source,
            "dist": info.dist,
            "status": status,
            "hooks": self._hooks_of(info),
            "contributes": {kind: keys for kind, keys in contributes.items() if keys},
            "error": "; ".join(errors) or None,
        }

    def _hooks_of(self, info: PluginInfo) -> list[str]:
        if info.plugin is None or not self._pm.is_registered(info.plugin):
            return []
        return sorted(caller.name for caller in self._pm.get_hookcallers(info.plugin) or ())

    def report_failures(self, stream: TextIO | None = None) -> int:
        """Print each not yet reported failure as one line; returns how many were printed.

        Args:
            stream: Where to print (default ``sys.stderr``).
        """
        out = stream if stream is not None else sys.stderr
        fresh = [f for f in self.failures if f not in self._reported]
        for failure in fresh:
            print(f"fabricui: plugin {failure.name} skipped: {failure.error}", file=out)
            self._reported.add(failure)
        return len(fresh)


@functools.cache
def get_host() -> PluginHost:
    """The process-wide plugin host, created (and plugins loaded) on first use."""
    return PluginHost()
