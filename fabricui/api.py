"""The one module plugin authors import: the hook marker, the record and contract types a
plugin registers, the engine pieces an algorithm or a strategy builds on, and the calls a
plugin's own tests use to check it end to end.

Everything else in ``fabricui`` is internal and may change between releases; what is named
here keeps its name (a rename keeps the old name as an alias for a release)::

    from fabricui.api import CommOp, Layout, Strategy, hookimpl

The CLI and the service calls at the bottom are imported when first called, so importing
this module costs what loading any plugin costs (numpy), not the explorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.engine.algorithms import Ring, Tree, alpha_beta
from fabricui.engine.constants import DEFAULT as DEFAULT_CONSTANTS
from fabricui.engine.constants import ModelConstants
from fabricui.engine.group import Group
from fabricui.engine.types import (
    CollectiveAlgorithm,
    CommOp,
    FloatArray,
    Interconnect,
    Layout,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import ConfigError, EngineError, FabricError, HwdbError, PluginError
from fabricui.fabric import DeviceKind, Fabric, build_fabric
from fabricui.fabric.fabric import NETWORK_SWITCHES
from fabricui.hookspecs import hookimpl
from fabricui.hwdb import Catalog
from fabricui.model import (
    GpuSpec,
    IntraSpec,
    LinkGeneration,
    ModelShape,
    NetSpec,
    NicSpec,
    SwitchSpec,
)

if TYPE_CHECKING:
    from fabricui.engine.collectives import Prediction
    from fabricui.engine.evaluate import PathReport
    from fabricui.plugins import PluginHost

__all__ = [
    "DEFAULT_CONSTANTS",
    "NETWORK_SWITCHES",
    "Catalog",
    "CollectiveAlgorithm",
    "CommOp",
    "ConfigError",
    "DeviceKind",
    "EngineError",
    "Fabric",
    "FabricError",
    "FloatArray",
    "GpuSpec",
    "Group",
    "HwdbError",
    "Interconnect",
    "IntraSpec",
    "Layout",
    "LinkGeneration",
    "ModelConstants",
    "ModelShape",
    "NetSpec",
    "NicSpec",
    "PluginError",
    "Ring",
    "Strategy",
    "SwitchSpec",
    "TopologyBuilder",
    "Tree",
    "alpha_beta",
    "build_fabric",
    "collective",
    "hookimpl",
    "load_catalog",
    "load_fabric",
    "path",
    "plugin_host",
    "run_cli",
]


def plugin_host(load_external: bool = True) -> PluginHost:
    """A new plugin host (``load_external=False``: only plugins a test registers itself).

    Args:
        load_external: Load entry-point and drop-in plugins as ``fabricui`` does.

    Returns:
        The host; ``host.register(plugin, name=...)`` adds a plugin object.
    """
    from fabricui.plugins import PluginHost

    return PluginHost(load_external=load_external)


def load_catalog(hwdb_dirs: Sequence[Path] = (), host: PluginHost | None = None) -> Catalog:
    """The hardware database as ``fabricui`` sees it: built-in records, the plugins', then
    ``hwdb_dirs`` (later ones override earlier records).

    Raises:
        HwdbError: A malformed file (named with its line and key).
    """
    from fabricui.services.session import load_catalog_with_plugins

    return load_catalog_with_plugins(hwdb_dirs, host=host)


def load_fabric(topology: str, nodes: int | None = None, host: PluginHost | None = None) -> Fabric:
    """Resolve a topology (built-in id or YAML path) and build it, with plugin builders.

    Raises:
        FabricError: Unknown topology, bad node count, or a malformed file.
    """
    from fabricui.services.requests import TopologyRequest
    from fabricui.services.session import load_fabric as service_load_fabric

    return service_load_fabric(TopologyRequest(topology, nodes), host=host)


def path(fabric: Fabric, src: str, dst: str, size_bytes: int | None = None) -> PathReport:
    """The routed path between two GPUs (``fabricui path``).

    Raises:
        EngineError: Unknown GPU ids or identical endpoints.
    """
    from fabricui.engine.evaluate import evaluate_path

    return evaluate_path(fabric, src, dst, size_bytes)


def collective(
    fabric: Fabric,
    op: str,
    size_bytes: Any,
    ranks: Any = None,
    algo: str = "auto",
    host: PluginHost | None = None,
) -> Prediction:
    """Predict a collective with every loaded algorithm (``fabricui collective``).

    Args:
        fabric: The fabric.
        op: Collective name (``all_reduce`` ...).
        size_bytes: One size or an array of sizes [bytes].
        ranks: Global ranks of the group (default: every GPU).
        algo: ``auto`` or an algorithm name.
        host: The plugin host whose algorithms take part (default: the process-wide one).

    Raises:
        EngineError: Unknown op or algorithm, or none that can run.
    """
    from fabricui.engine.evaluate import evaluate_collective
    from fabricui.services.session import collective_algorithms

    return evaluate_collective(
        fabric, op, size_bytes, ranks, algorithms=collective_algorithms(host=host), algo=algo
    )


def run_cli(argv: Sequence[str]) -> int:
    """Run ``fabricui ARGV...`` in this process; returns its exit status (tests)."""
    from fabricui.cli import main

    return main(list(argv))
