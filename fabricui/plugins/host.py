"""The plugin host: finds and loads plugins, calls hooks one plugin at a time, keeps what
passes ``checks`` and records every failure.

Single-file plugins (where they live, when their directory is trusted) are in
``files``; time budgets in ``budget``; what plugin code may not do to the process (print on
stdout, exit, keep it alive) in ``process``; the guards on what plugins registered in
``guards``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, Callable, TextIO

import pluggy

from fabricui import hookspecs
from fabricui.engine.types import (
    CollectiveAlgorithm,
    Interconnect,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import HwdbError, PluginError, exception_line
from fabricui.hwdb.plugin_dirs import Withheld, builtin_plugin_dirs, package_hwdb_dir
from fabricui.model.records import CORE_FAMILIES, LinkGeneration
from fabricui.plugins.budget import ENV_TIMEOUT as ENV_TIMEOUT
from fabricui.plugins.budget import PluginTimeout as PluginTimeout
from fabricui.plugins.budget import batch, timeout_s
from fabricui.plugins.checks import RULES
from fabricui.plugins.files import ENV_PLUGINS_DIR as ENV_PLUGINS_DIR
from fabricui.plugins.files import PluginFile, import_source, plugin_dirs, read_plugin_files
from fabricui.plugins.guards import _GUARDS, _Guard
from fabricui.plugins.once import Once
from fabricui.plugins.process import as_plugin_error, call_plugin, running, sigints, warn
from fabricui.plugins.records import PluginFailure as PluginFailure
from fabricui.plugins.records import PluginInfo as PluginInfo

#: Entry-point group (and pluggy project name) plugins register under.
GROUP = hookspecs.PROJECT

ENV_LOAD = "FABRICUI_LOAD_PLUGINS"
ENV_DISABLE = "FABRICUI_DISABLE_PLUGINS"
ENV_STRICT = "FABRICUI_STRICT_PLUGINS"
ENV_TRACE = "FABRICUI_TRACE_PLUGINS"


SOURCE_BUILTIN = "builtin"
SOURCE_ENTRY_POINT = "entry point"
SOURCE_FILE = "file"
SOURCE_REGISTERED = "registered"

#: hwdb record kinds a plugin's YAML directory brings, and the ``contributes`` key
#: ``describe()`` lists them under (YAML link records join the hook-registered ones).
RECORD_KEYS = {
    "links": "link_generations",
    "gpus": "gpus",
    "nics": "nics",
    "switches": "switches",
    "models": "models",
    "topologies": "topologies",
}

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
                ep.dist = dist
                found.append(ep)
    return found


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


#: Distribution location -> (name, version): every built-in plugin's entry point names the
#: same distribution, whose metadata (with the README as its description) takes a few
#: milliseconds to parse; parsed once per distribution instead of twice per entry point.
_DIST_CACHE: dict[str, tuple[str | None, str | None]] = {}


def _dist_of(ep: Any) -> tuple[str | None, str | None]:
    """(distribution name, version) of an entry point, or Nones."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    key = str(getattr(dist, "_path", ""))  # empty: a custom finder's, not cached
    found = _DIST_CACHE.get(key) if key else None
    if found is None:
        metadata = dist.metadata
        name, version = metadata["Name"], metadata.get("Version")
        found = (
            name if isinstance(name, str) else None,
            version if isinstance(version, str) else None,
        )
        if key:
            _DIST_CACHE[key] = found
    return found


def _is_builtin(ep: Any, dist: str | None) -> bool:
    module = str(ep.value).partition(":")[0].strip()
    return module.startswith("fabricui_") and _normalize(dist or "") == "fabricui"


def _env_list(name: str) -> set[str] | None:
    """Comma-separated names from ``$name``; None when unset (an empty value is an empty set)."""
    value = os.environ.get(name)
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


# --- the host ------------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class _Collected:
    """What one collection of a hook category found, kept apart until it is stored whole
    (never when a ``register()`` came since it began: it would lack that plugin)."""

    generation: int
    """The host's ``register()`` count when it began."""
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Contributions by name (by key for ``hwdb_paths``)."""
    owners: dict[str, PluginInfo] = dataclasses.field(default_factory=dict)
    """Contribution name -> the plugin that registered it."""
    failures: list[tuple[PluginInfo, PluginFailure]] = dataclasses.field(default_factory=list)
    """Hook failures, recorded on the host when it is stored."""
    catalog: Any = None
    """``hwdb_paths``: the catalog its directories were checked in (None: no directory)."""
    dropped: list[Withheld] = dataclasses.field(default_factory=list)
    """``hwdb_paths``: directories that did not load (their records are out)."""
    records: dict[int, dict[str, list[str]]] = dataclasses.field(default_factory=dict)
    """``hwdb_paths``: id(PluginInfo) -> hwdb record kind -> ids its directories brought."""


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
        self._results: dict[str, _Collected] = {}
        """Hook category -> what its hooks registered, stored once complete."""
        self._once = Once()
        """Has each category collected once, by the first thread to ask (see ``once``)."""
        self._generation = 0
        """``register()`` calls so far: a collection begun before the last one is stale."""
        self._lock = threading.Lock()
        """Makes storing a collection and ``register()`` forgetting them exclusive."""
        self._names = threading.RLock()
        """Makes taking a plugin name (checked, then registered) one step: plugins loaded
        by two threads at once under one name get one winner and a named refusal."""
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

        What hooks registered is collected again on the next call; a collection running
        meanwhile (in another thread) is not kept.

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
        found = entry_points()
        with batch():  # one watchdog for all the imports, not one per plugin (see budget)
            self._load_each_entry_point(found, builtins, external)

    def _load_each_entry_point(
        self, found: list[importlib.metadata.EntryPoint], builtins: bool, external: bool
    ) -> None:
        for ep in found:
            dist, version = _dist_of(ep)
            module = str(ep.value).partition(":")[0].strip()
            origin = f"entry point {ep.name} = {ep.value}"
            if _is_builtin(ep, dist):
                if builtins:
                    info = self._load(ep.name, SOURCE_BUILTIN, dist, version, ep.load, origin)
                    info.module = module
            elif external and self._allowed(ep.name):
                info = self._load(ep.name, SOURCE_ENTRY_POINT, dist, version, ep.load, origin)
                info.module = module

    def _load_files(self, dirs: list[Path]) -> None:
        """Load the ``*.py`` files of each plugin directory that exists, unless someone else
        than the user could have written the directory, one above it, or the file (see
        ``files``); each file is read through the checked directory's descriptor first."""
        for directory in dirs:
            try:
                found = read_plugin_files(directory, self._allowed)
            except PluginError as exc:
                info = PluginInfo(name=str(directory), source=SOURCE_FILE)
                self._infos.append(info)
                self._fail(info, exc)
                continue
            with batch():
                for plugin_file in found or ():
                    loader = _file_loader(plugin_file)
                    origin = str(plugin_file.path)
                    self._load(plugin_file.stem, SOURCE_FILE, None, None, loader, origin)

    def _allowed(self, name: str) -> bool:
        return self._allow is None or name in self._allow

    def _load(
        self,
        name: str,
        source: str,
        dist: str | None,
        version: str | None,
        loader: Callable[[], object],
        origin: str | None = None,
    ) -> PluginInfo:
        """Import (``loader``) and register one plugin; a failure is recorded, not raised.

        A plugin whose name another plugin already has is skipped before it is imported.
        """
        info = PluginInfo(name=name, source=source, dist=dist, version=version, origin=origin)
        self._infos.append(info)
        if self._pm.is_blocked(name):
            info.blocked = True
            return info
        if self._pm.has_plugin(name):
            owner = self._info_of(self._pm.get_plugin(name))
            self._fail(info, PluginError(f"{_where(info)}the name is taken by {_owner(owner)}"))
            return info
        mark = sigints()
        try:
            with running(name):
                # Importing runs the plugin's module code: under the same budget as hooks.
                plugin = call_plugin(loader, self.timeout_s, name)
                if info.version is None and source == SOURCE_FILE:
                    version = getattr(plugin, "__version__", None)
                    info.version = version if isinstance(version, str) else None
                with self._names:  # the plugin's code ran unlocked: another may have won
                    self._take_name(info, plugin)
                self._reject_specname(plugin)
        except BaseException as exc:  # exit(), os._exit(), KeyboardInterrupt: not the app's end
            error = as_plugin_error(exc, mark)  # the user's Ctrl-C is re-raised
            with self._names:
                if info.plugin is not None and self._pm.is_registered(info.plugin):
                    self._pm.unregister(info.plugin)
            self._fail(info, error)
        return info

    def _take_name(self, info: PluginInfo, plugin: object) -> None:
        """Register ``plugin`` under ``info.name``, or say who has the name or the module."""
        if self._pm.is_registered(plugin):
            owner = self._info_of(plugin)
            raise PluginError(f"{_where(info)}the same module is already loaded as {_owner(owner)}")
        if self._pm.has_plugin(info.name):
            owner = self._info_of(self._pm.get_plugin(info.name))
            raise PluginError(f"{_where(info)}the name is taken by {_owner(owner)}")
        self._pm.register(plugin, name=info.name)
        info.plugin = plugin

    def _info_of(self, plugin: object) -> PluginInfo | None:
        """The record of registered ``plugin``."""
        return next((i for i in self._infos if i.plugin is plugin), None)

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
        with self._names:
            self._unregister_pending()

    def _unregister_pending(self) -> None:
        while True:
            try:
                self._pm.check_pending()
                return
            except pluggy.PluginValidationError as exc:
                name = self._pm.get_name(exc.plugin)
                self._pm.unregister(exc.plugin)
                info = next(i for i in reversed(self._infos) if i.plugin is exc.plugin)
                self._fail(info, exc, name=name)

    def _fail(self, info: PluginInfo, exc: BaseException, name: str | None = None) -> None:
        """Record that ``info`` did not load; re-raise in strict mode."""
        info.load_error = exception_line(exc)
        self._load_failures.append(
            PluginFailure(name or info.name, info.dist, info.version, info.load_error)
        )
        if self.strict:
            raise exc

    def _hook_failed(
        self, collected: _Collected, info: PluginInfo, hook: str, exc: BaseException
    ) -> None:
        """Note in ``collected`` that ``info``'s ``hook`` failed; re-raise in strict mode."""
        error = f"{hook}: {exception_line(exc)}"
        collected.failures.append((info, PluginFailure(info.name, info.dist, info.version, error)))
        if self.strict:
            raise exc

    def _record_call_failure(self, info: PluginInfo, what: str, exc: BaseException) -> None:
        """Record that calling into ``info``'s contribution failed; re-raise in strict mode."""
        error = f"{what}: {exception_line(exc)}"
        info.call_errors.append(error)
        self._call_failures.append(PluginFailure(info.name, info.dist, info.version, error))
        if self.strict:
            raise exc

    # calling hooks

    def _forget_results(self) -> None:
        """Forget every collection, stored or running (see ``_store``)."""
        with self._lock:
            self._generation += 1
            self._results.clear()
            self._hook_failures.clear()
            self._call_failures.clear()
            for info in self._infos:
                info.hook_errors.clear()
                info.call_errors.clear()

    def _store(self, kind: str, collected: _Collected, complete: bool = True) -> None:
        """Keep what a collection found (its failures only, when it did not complete),
        unless a ``register()`` came since it began: the next asker collects again."""
        hook = f"register_{kind}"
        with self._lock:
            if collected.generation != self._generation:
                return
            for info, failure in collected.failures:
                info.hook_errors.append(failure.error)
                self._hook_failures.setdefault(hook, []).append(failure)
            if complete:
                self._results[kind] = collected

    def _registered(self) -> list[PluginInfo]:
        """Registered plugins, in load order (built-ins, entry points, files, in-process)."""
        return [i for i in self._infos if i.plugin is not None and self._pm.is_registered(i.plugin)]

    def _implementers(self, hook: str) -> list[PluginInfo]:
        plugins = {id(impl.plugin) for impl in getattr(self._pm.hook, hook).get_hookimpls()}
        return [i for i in self._registered() if id(i.plugin) in plugins]

    def _collect(self, kind: str) -> _Collected:
        """Call ``register_<kind>`` plugin by plugin, once however many threads ask at the
        same time (``once``); first registration of a name wins."""
        found = self._results.get(kind)
        if found is not None:
            return found
        collected: _Collected = self._once.get(kind, self._results, lambda: self._collect_now(kind))
        return collected

    def _collect_now(self, kind: str) -> _Collected:
        """Call ``register_<kind>``'s hooks, then store what they registered whole (another
        thread may read it as soon as it is stored), unless it is stale (``_store``)."""
        collected = _Collected(self._generation)  # before the plugins are listed
        try:
            with batch():
                for info in self._implementers(f"register_{kind}"):
                    staged = self._call_one(info, kind, collected)
                    if staged is not None:
                        collected.result.update(self._guarded(kind, info, staged))
                        collected.owners.update(dict.fromkeys(staged, info))
            if kind == "link_generations":
                self._drop_hwdb_clashes(collected)
            elif kind == "hwdb_paths":
                self._drop_broken_hwdb(collected)
        except BaseException:  # strict mode, Ctrl-C: the failures so far are kept
            self._store(kind, collected, complete=False)
            raise
        self._store(kind, collected)
        return collected

    def _call_one(
        self, info: PluginInfo, kind: str, collected: _Collected
    ) -> dict[str, Any] | None:
        """One plugin's contributions to ``kind``, or None when its hook failed."""
        hook = f"register_{kind}"
        owners = collected.owners
        pack, check = RULES[kind]
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
                error = PluginError(f"register(...): {exception_line(exc)}")
                errors.append(error)
                raise error from exc
            staged[key] = value

        others = [i.plugin for i in self._registered() if i is not info]
        caller = self._pm.subset_hook_caller(hook, remove_plugins=others)
        mark = sigints()
        try:
            with self._once.hook_thread(functools.partial(caller, register=register)) as call:
                call_plugin(call, self.timeout_s, info.name)
            if errors:
                raise errors[0]
        except BaseException as exc:  # exit(), os._exit(), KeyboardInterrupt: not the app's end
            closed.set()
            error = as_plugin_error(exc, mark)  # the user's Ctrl-C: raised
            self._hook_failed(collected, info, hook, error)
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

    def _drop_hwdb_clashes(self, collected: _Collected) -> None:
        """A link generation the hardware database already has stays the database's."""
        from fabricui.hwdb import load_catalog

        links, owners = collected.result, collected.owners
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
            self._hook_failed(
                collected,
                owner,
                "register_link_generations",
                PluginError(
                    f"link generation {link_id!r} is already in the hardware database ({where})"
                ),
            )

    def _drop_broken_hwdb(self, collected: _Collected) -> None:
        """Load every plugin hwdb directory on top of the built-in one, drop each that does
        not load (naming its plugin), and note which records each plugin brought.

        One catalog load in the common case; an error is pinned on the directory its file
        is in, that directory dropped and the rest loaded again. An error that no one
        directory's file shows (a plugin record that breaks a core topology) falls back
        to adding the directories one at a time.
        """
        from fabricui.hwdb import default_hwdb_dir, load_catalog

        paths, owners = collected.result, collected.owners
        if not paths:
            return
        generations = self._collect("link_generations")
        links = {
            link_id: (link, f"plugin {generations.owners[link_id].name}")
            for link_id, link in generations.result.items()
        }
        families = self.link_families()

        def load(dirs: list[Path]) -> Any:
            withheld = self._not_loaded_hwdb() + collected.dropped
            return load_catalog(
                [default_hwdb_dir(), *dirs], extra_links=links, families=families, withheld=withheld
            )

        def drop(key: str, exc: HwdbError) -> None:
            owner = owners.pop(key)
            path = paths.pop(key)
            collected.dropped.append(
                Withheld(path, f"plugin {owner.name} (its hwdb records did not load)")
            )
            self._hook_failed(collected, owner, "register_hwdb_paths", PluginError(exc.message))

        while paths:
            try:
                catalog = load(list(paths.values()))
            except HwdbError as exc:
                key = _culprit(exc.message, paths)
                if key is None:
                    break  # not pinned on one file: add the directories one at a time
                drop(key, exc)
            else:
                collected.catalog = catalog
                self._attribute_records(collected)
                return
        good: list[str] = []
        for key in list(paths):
            try:
                load([paths[k] for k in good] + [paths[key]])
            except HwdbError as exc:
                drop(key, exc)
            else:
                good.append(key)
        if paths:
            collected.catalog = load(list(paths.values()))
            self._attribute_records(collected)

    def _attribute_records(self, collected: _Collected) -> None:
        """Note, per plugin, the ids of the records its hwdb directories brought."""
        owners, records = collected.owners, collected.records
        dirs = [(str(Path(path)), owners[key]) for key, path in collected.result.items()]
        for (kind, record_id), origin in collected.catalog.origins.items():
            owner = next((info for prefix, info in dirs if _inside(origin, prefix)), None)
            if owner is not None:
                records.setdefault(id(owner), {}).setdefault(kind, []).append(record_id)

    def _not_loaded_hwdb(self) -> list[Withheld]:
        """hwdb directories of entry-point plugins that are disabled or failed to load, and
        of built-ins this host did not load at all (``builtins=False``)."""
        found: list[Withheld] = []
        seen = {i.name for i in self._infos if i.source == SOURCE_BUILTIN}
        for name, path in builtin_plugin_dirs():
            if name not in seen:
                found.append(Withheld(path, f"plugin {name} (not loaded)"))
        for info in self._infos:
            if info.module is None or (
                info.plugin is not None and self._pm.is_registered(info.plugin)
            ):
                continue
            hwdb_dir = package_hwdb_dir(info.module)
            if hwdb_dir is None:
                continue
            why = f"disabled by {ENV_DISABLE}" if info.blocked else "failed to load"
            found.append(Withheld(hwdb_dir, f"plugin {info.name} ({why})"))
        return found

    # the typed facade

    def link_generations(self) -> dict[str, LinkGeneration]:
        """Link generations registered by plugins, by id (ids the database has are dropped)."""
        return self._collect("link_generations").result

    def hwdb_paths(self) -> list[Path]:
        """Directories of hwdb YAML files registered by plugins, in plugin order (each loads
        on top of the built-in database; one that does not is dropped)."""
        return list(self._collect("hwdb_paths").result.values())

    def interconnects(self) -> dict[str, Interconnect]:
        """Interconnects registered by plugins, by name."""
        return self._collect("interconnects").result

    def hwdb_catalog(self) -> Any:
        """A copy of the catalog the plugin hwdb directories were checked in: the built-in
        database, the plugins' directories and link generations (what
        ``fabricui.services.session.load_catalog_with_plugins`` loads without user
        directories), so it need not be loaded twice; None when no plugin registers a
        directory.
        """
        catalog = self._collect("hwdb_paths").catalog
        if catalog is None:
            return None
        tables = ("links", "gpus", "nics", "switches", "models", "topologies", "origins")
        copies = {name: dict(getattr(catalog, name)) for name in tables}
        copies["withheld"] = dict(catalog.withheld)
        copies["unavailable"] = dict(catalog.unavailable)
        return dataclasses.replace(catalog, **copies)

    def link_families(self) -> tuple[str, ...]:
        """Link families a hwdb link record may name: the core's (on-package memory), those
        the loaded plugins' interconnects declare, and those of link generations plugins
        register (the family list comes from the plugins, not a constant)."""
        families = list(CORE_FAMILIES)
        for interconnect in self.interconnects().values():
            families += interconnect.families
        families += [link.family for link in self.link_generations().values()]
        return tuple(dict.fromkeys(families))

    def withheld_hwdb(self) -> list[Withheld]:
        """hwdb directories whose records are out of the catalog: those of plugins that are
        disabled or failed to load (found by the ``hwdb/`` convention, without importing
        them) and those that did not load. The catalog uses their ids to tell which plugin a
        topology needs."""
        return self._not_loaded_hwdb() + self._collect("hwdb_paths").dropped

    def topology_builders(self) -> dict[str, TopologyBuilder]:
        """Topology builders registered by plugins, by name (``build`` guarded)."""
        return self._collect("topology_builders").result

    def collective_algorithms(self) -> dict[str, CollectiveAlgorithm]:
        """Collective algorithm instances registered by plugins, by name (methods guarded)."""
        return self._collect("collective_algorithms").result

    def strategies(self) -> dict[str, Strategy]:
        """Parallelism strategy instances registered by plugins, by name (methods guarded)."""
        return self._collect("strategies").result

    def importers(self) -> dict[str, Callable[..., Any]]:
        """Importer ``parse`` callables registered by plugins, by format name (guarded)."""
        return self._collect("importers").result

    def collect_all(self) -> None:
        """Call every hook once, so that ``failures`` and ``describe()`` are complete."""
        for kind in KINDS:
            self._collect(kind)

    def contributor(self, kind: str, name: str) -> str | None:
        """Name of the plugin that contributed ``name`` to ``kind`` (e.g. ``interconnects``)."""
        owner = self._collect(kind).owners.get(name)
        return owner.name if owner is not None else None

    def failed_at_call(self, kind: str, name: str) -> bool:
        """True when ``name``'s contribution to ``kind`` failed when it was called (and is
        skipped from then on).

        Args:
            kind: ``collective_algorithms``, ``strategies``, ``topology_builders`` or
                ``importers``.
            name: The contribution's name.
        """
        return self.call_failure(kind, name) is not None

    def call_failure(self, kind: str, name: str) -> str | None:
        """Why ``name``'s contribution to ``kind`` failed when it was called, in one line
        naming its plugin (``plugin p: strategy 'x': operations: ...``); None when it did
        not fail (or is not a plugin's).

        Args:
            kind: ``collective_algorithms``, ``strategies``, ``topology_builders`` or
                ``importers``.
            name: The contribution's name.
        """
        collected = self._results.get(kind)
        owner = collected.owners.get(name) if collected is not None else None
        if owner is None or kind not in _GUARDS:
            return None
        label = f"{_GUARDS[kind][0]} {name!r}: "
        error = next((e for e in owner.call_errors if e.startswith(label)), None)
        return None if error is None else f"plugin {owner.name}: {error}"

    # reporting

    @property
    def failures(self) -> list[PluginFailure]:
        """Every failure so far: loading, hook calls (see ``collect_all``), then calls into
        what plugins registered."""
        hooked = [f for kind in KINDS for f in self._hook_failures.get(f"register_{kind}", [])]
        return [*self._load_failures, *hooked, *self._call_failures]

    def describe(self) -> list[dict[str, Any]]:
        """One dict per plugin found: name, version, source, status, hooks, contributes, error."""
        collected = {kind: self._collect(kind) for kind in KINDS}
        return [self._describe_one(info, collected) for info in self._infos]

    def _describe_one(self, info: PluginInfo, collected: dict[str, _Collected]) -> dict[str, Any]:
        errors = info.errors
        status = "blocked" if info.blocked else "failed" if errors else "ok"
        contributes = {
            kind: [key for key, owner in collected[kind].owners.items() if owner is info]
            for kind in KINDS
        }
        for record_kind, ids in collected["hwdb_paths"].records.get(id(info), {}).items():
            key = RECORD_KEYS[record_kind]
            listed = contributes.setdefault(key, [])
            listed += [i for i in ids if i not in listed]
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
        fresh = [f for f in self.failures if f not in self._reported]
        for failure in fresh:
            warn(f"fabricui: plugin {failure.name} skipped: {failure.error}", stream)
            self._reported.add(failure)
        return len(fresh)


def _file_loader(plugin_file: PluginFile) -> Callable[[], object]:
    """What imports a single-file plugin from the bytes already read (or raises why not)."""
    if plugin_file.source is None:
        error = plugin_file.error or PluginError(f"{plugin_file.path}: not loaded")

        def refuse() -> object:
            raise error

        return refuse
    return functools.partial(import_source, plugin_file.stem, plugin_file.source, plugin_file.path)


def _where(info: PluginInfo) -> str:
    """``PATH: `` or ``entry point NAME = MODULE: ``, the start of a message about ``info``."""
    return f"{info.origin}: " if info.origin else ""


def _owner(info: PluginInfo | None) -> str:
    """Which plugin holds a name, for messages: ``the built-in plugin nvlink``,
    ``plugin x (entry point x = mod, dist 1.0)``, ``plugin x (/path/x.py)``."""
    if info is None:
        return "another plugin"
    if info.source == SOURCE_BUILTIN:
        return f"the built-in plugin {info.name}"
    dist = " ".join(part for part in (info.dist, info.version) if part)
    found = ", ".join(part for part in (info.origin, dist) if part)
    return f"plugin {info.name} ({found})" if found else f"plugin {info.name}"


def _inside(origin: str, directory: str) -> bool:
    """True when ``origin`` (``file`` or ``file:line``) is a file under ``directory``."""
    prefix = directory.rstrip("/\\") + os.sep
    return origin.startswith(prefix)


def _culprit(message: str, paths: dict[str, Any]) -> str | None:
    """The key of the hwdb directory whose file a catalog error message starts with."""
    for key, path in paths.items():
        for directory in {str(Path(path)), key}:
            if message.startswith(directory.rstrip("/\\") + os.sep) or message.startswith(
                f"{directory}:"
            ):
                return key
    return None


@functools.cache
def get_host() -> PluginHost:
    """The process-wide plugin host, created (and plugins loaded) on first use."""
    return PluginHost()
