"""What plugins register, checked before the host accepts it: types, finite figures, names.

Each check turns one registered object into ``(key, value)`` or raises a one-line
``PluginError``; ``RULES`` maps every contribution kind to its check.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any, Callable

from fabricui.engine.types import (
    CollectiveAlgorithm,
    Interconnect,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import PluginError
from fabricui.model.records import TIERS, LinkGeneration
from fabricui.vocabulary import OPS, PROTOCOLS


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
RULES: dict[str, tuple[Callable[..., Any], Callable[[Any], tuple[str, Any]]]] = {
    "link_generations": (_one, _check_link_generation),
    "hwdb_paths": (_one, _check_hwdb_path),
    "interconnects": (_one, _check_interconnect),
    "topology_builders": (_one, _check_topology_builder),
    "collective_algorithms": (_one, _check_collective_algorithm),
    "strategies": (_one, _check_strategy),
    "importers": (_pair, _check_importer),
}
