"""Where plugins keep their hwdb records, and what a disabled plugin would have brought.

Interconnect plugins ship the records of their family (link generations, NICs, switches)
in a ``hwdb/`` directory inside their package and register it with ``register_hwdb_paths``.
Two things need those directories without the plugin host:

- ``load_catalog()`` called without directories (tests, benchmarks, scripts) means "the
  database fabricui ships", which includes the records of fabricui's own built-in plugins;
- when a plugin is disabled (``FABRICUI_DISABLE_PLUGINS``) its code never runs, yet a
  topology naming one of its links should say which plugin to enable rather than "unknown
  link". Reading the ids in its ``hwdb/`` directory (YAML only, no code) tells which.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricui.errors import HwdbError

#: Entry-point group of fabricui plugins (the same as ``fabricui.hookspecs.PROJECT``).
GROUP = "fabricui"
#: Directory inside a plugin package that holds its hwdb records (a convention: the
#: built-ins and the scaffold follow it; other plugins may register any directory).
HWDB_DIR = "hwdb"
#: Record kinds whose ids a withheld directory is read for, and topology files.
WITHHELD_KINDS = ("links", "gpus", "nics", "switches", "models")


class NeedsPluginError(HwdbError):
    """A record or topology refers to an id that a disabled or failed plugin provides."""


@dataclass(frozen=True)
class Withheld:
    """The hwdb directory of a plugin that is not loaded, and why it is not."""

    path: Path
    """The plugin's hwdb directory."""
    reason: str
    """Who provides its records and why they are missing, e.g. ``plugin nvlink (disabled
    by FABRICUI_DISABLE_PLUGINS)``."""


def package_hwdb_dir(module: str) -> Path | None:
    """The ``hwdb/`` directory of a top-level package, found without importing it.

    Args:
        module: An entry point's module (``fabricui_nvlink``); dotted names are skipped,
            because finding ``a.b`` imports ``a``, which would run a disabled plugin's code.

    Returns:
        The directory, or None when the package has none (or cannot be found).
    """
    name = module.partition(":")[0].strip()
    if not name or "." in name:
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / HWDB_DIR
        if candidate.is_dir():
            return candidate
    return None


@functools.lru_cache(maxsize=1)
def builtin_plugin_dirs() -> tuple[tuple[str, Path], ...]:
    """(plugin name, hwdb directory) of fabricui's built-in plugins, in declared order.

    Read from the installed distribution's entry points (pyproject.toml order, the order
    the plugin host loads them in); in a checkout that is not installed, from
    ``plugins/fabricui_*/hwdb``.
    """
    found: list[tuple[str, Path]] = []
    try:
        dist = importlib.metadata.distribution("fabricui")
        eps = [ep for ep in dist.entry_points if ep.group == GROUP]
    except importlib.metadata.PackageNotFoundError:
        eps = []
    for ep in eps:
        module = str(ep.value).partition(":")[0].strip()
        if not module.startswith("fabricui_"):
            continue
        path = package_hwdb_dir(module)
        if path is not None and all(path != p for _, p in found):
            found.append((ep.name, path))
    if found or eps:
        return tuple(found)
    checkout = Path(__file__).resolve().parents[2] / "plugins"
    return tuple(
        (package.name.removeprefix("fabricui_"), package / HWDB_DIR)
        for package in sorted(checkout.glob("fabricui_*"))
        if (package / HWDB_DIR).is_dir()
    )


def withheld_ids(withheld: list[Withheld]) -> dict[tuple[str, str], str]:
    """(kind, id) -> ``comes from <reason>`` for every record and topology in the withheld
    directories (the phrase messages put after the record's kind and id).

    Only ids are read (``yaml.safe_load``, never code), leniently: a file that does not
    parse is skipped, since the plugin is not loaded and its files are not checked here.
    """
    ids: dict[tuple[str, str], str] = {}
    for item in withheld:
        for path in sorted(item.path.glob("*.yaml")):
            data = _safe_load(path)
            if not isinstance(data, dict):
                continue
            for kind in WITHHELD_KINDS:
                records = data.get(kind)
                for record in records if isinstance(records, list) else ():
                    record_id = record.get("id") if isinstance(record, dict) else None
                    if isinstance(record_id, str):
                        ids.setdefault((kind, record_id), f"comes from {item.reason}")
        for path in sorted((item.path / "topologies").glob("*.yaml")):
            data = _safe_load(path)
            topology_id = data.get("id") if isinstance(data, dict) else None
            key = ("topologies", str(topology_id or path.stem))
            ids.setdefault(key, f"comes from {item.reason}")
    return ids


def _safe_load(path: Path) -> Any:
    from fabricui.hwdb.yamlfile import read_yaml

    try:
        return read_yaml(path).data
    except HwdbError:
        return None
