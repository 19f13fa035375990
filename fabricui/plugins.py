"""The plugin host: loads plugins, calls hooks one plugin at a time, validates what they give."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

import pluggy

from fabricui import hookspecs
from fabricui.engine.names import OPS
from fabricui.engine.types import (
    CollectiveAlgorithm,
    Interconnect,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import PluginError
from fabricui.model.records import LinkGeneration

#: Entry-point group (and pluggy project name) plugins register under.
GROUP = hookspecs.PROJECT

ENV_PLUGINS_DIR = "FABRICUI_PLUGINS_DIR"
ENV_LOAD = "FABRICUI_LOAD_PLUGINS"
ENV_DISABLE = "FABRICUI_DISABLE_PLUGINS"
ENV_STRICT = "FABRICUI_STRICT_PLUGINS"
ENV_TRACE = "FABRICUI_TRACE_PLUGINS"

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

    @property
    def errors(self) -> list[str]:
        """Every error recorded for this plugin."""
        return ([self.load_error] if self.load_error else []) + self.hook_errors


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


def _check_link_generation(obj: Any) -> tuple[str, Any]:
    _expect(obj, LinkGeneration)
    return _name_of(obj, "id"), obj


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
    _expect(obj, CollectiveAlgorithm)
    name = _name_of(obj)
    ops = getattr(obj, "ops", None)
    if not isinstance(ops, tuple) or not ops or not set(ops) <= set(OPS):
        raise PluginError(f"algorithm {name!r}: ops must be a non-empty tuple from {OPS}")
    return name, obj


def _check_strategy(obj: Any) -> tuple[str, Any]:
    _expect(obj, Strategy)
    return _name_of(obj), obj


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
    """Entry points of group ``fabricui``, each with ``.dist`` set where known."""
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


# --- the host ------------------------------------------------------------------------------


class PluginHost:
    """Finds, loads and calls plugins; a failing plugin is recorded and skipped, never fatal.

    Built-ins come from entry points of distribution ``fabricui``; external plugins are other
    distributions' entry points and single-file plugins (see ``plugin_dirs``). Environment:
    ``FABRICUI_LOAD_PLUGINS`` (allow-list of external plugins), ``FABRICUI_DISABLE_PLUGINS``
    (block-list), ``FABRICUI_STRICT_PLUGINS=1`` (re-raise the first error) and
    ``FABRICUI_TRACE_PLUGINS=1`` (trace hook calls to stderr).

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
        self._results: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, dict[str, PluginInfo]] = {}
        self._reported: set[PluginFailure] = set()
        self.strict = _env_flag(ENV_STRICT)
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
        for directory in dirs:
            if not directory.is_dir():
                continue
            for path in sorted(directory.glob("*.py")):
                if path.name.startswith("_") or not self._allowed(path.stem):
                    continue
                self._load(
                    path.stem, SOURCE_FILE, None, None, functools.partial(_import_file, path)
                )

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
            plugin = loader()
            if info.version is None and source == SOURCE_FILE:
                info.version = getattr(plugin, "__version__", None)
            self._pm.register(plugin, name=name)
            info.plugin = plugin
            self._reject_specname(plugin)
        except Exception as exc:
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

    # calling hooks

    def _forget_results(self) -> None:
        self._results.clear()
        self._owners.clear()
        self._hook_failures.clear()
        for info in self._infos:
            info.hook_errors.clear()

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
                result.update(staged)
                owners.update(dict.fromkeys(staged, info))
        self._results[kind] = result
        self._owners[kind] = owners
        return result

    def _call_one(
        self, info: PluginInfo, kind: str, owners: dict[str, PluginInfo]
    ) -> dict[str, Any] | None:
        """One plugin's contributions to ``kind``, or None when its hook failed."""
        hook = f"register_{kind}"
        pack, check = _RULES[kind]
        staged: dict[str, Any] = {}
        errors: list[PluginError] = []

        def register(*args: Any, **kwargs: Any) -> None:
            try:
                key, value = check(pack(*args, **kwargs))
                if key in staged or key in owners:
                    by = owners[key].name if key in owners else info.name
                    raise PluginError(f"{key!r} is already registered by plugin {by}")
            except PluginError as exc:
                errors.append(exc)
                raise
            staged[key] = value

        others = [i.plugin for i in self._registered() if i is not info]
        caller = self._pm.subset_hook_caller(hook, remove_plugins=others)
        try:
            caller(register=register)
            if errors:
                raise errors[0]
        except Exception as exc:
            self._fail(info, exc, hook=hook)
            return None
        return staged

    # the typed facade

    def link_generations(self) -> dict[str, LinkGeneration]:
        """Link generations registered by plugins, by id."""
        return self._collect("link_generations")

    def hwdb_paths(self) -> list[Path]:
        """Directories of hwdb YAML files registered by plugins, in plugin order."""
        return list(self._collect("hwdb_paths").values())

    def interconnects(self) -> dict[str, Interconnect]:
        """Interconnects registered by plugins, by name."""
        return self._collect("interconnects")

    def topology_builders(self) -> dict[str, TopologyBuilder]:
        """Topology builders registered by plugins, by name."""
        return self._collect("topology_builders")

    def collective_algorithms(self) -> dict[str, CollectiveAlgorithm]:
        """Collective algorithm instances registered by plugins, by name."""
        return self._collect("collective_algorithms")

    def strategies(self) -> dict[str, Strategy]:
        """Parallelism strategy instances registered by plugins, by name."""
        return self._collect("strategies")

    def importers(self) -> dict[str, Callable[..., Any]]:
        """Importer ``parse`` callables registered by plugins, by format name."""
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

    # reporting

    @property
    def failures(self) -> list[PluginFailure]:
        """Every failure so far: loading first, then hook calls (see ``collect_all``)."""
        hooked = [f for kind in KINDS for f in self._hook_failures.get(f"register_{kind}", [])]
        return [*self._load_failures, *hooked]

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
