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

from fabricui.engine.algorithms import Ring, Tree, alpha_beta, network_pipeline_fill_us
from fabricui.engine.bulk import bulk_router
from fabricui.engine.constants import DEFAULT as DEFAULT_CONSTANTS
from fabricui.engine.constants import ModelConstants
from fabricui.engine.group import Group
from fabricui.engine.routing import Router
from fabricui.engine.training.shape import Geometry, geometry
from fabricui.engine.types import (
    CollectiveAlgorithm,
    CommOp,
    FloatArray,
    Interconnect,
    Layout,
    MemoryTerm,
    StateShards,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import ConfigError, EngineError, FabricError, HwdbError, PluginError
from fabricui.fabric import DeviceKind, Fabric, build_fabric
from fabricui.fabric.fabric import NETWORK_SWITCHES
from fabricui.fabric.ids import parse_gpu_id
from fabricui.hookspecs import hookimpl
from fabricui.hwdb import Catalog
from fabricui.hwdb.resolve import resolve_topology as _resolve_topology
from fabricui.importers.builtin import builtin_importers as _builtin_importers
from fabricui.model import (
    GpuSpec,
    IntraSpec,
    LinkGeneration,
    ModelShape,
    NetSpec,
    NicSpec,
    SwitchSpec,
    TopologySpec,
)
from fabricui.services.requests import TopologyRequest

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
    "Geometry",
    "GpuSpec",
    "Group",
    "HwdbError",
    "Interconnect",
    "IntraSpec",
    "Layout",
    "LinkGeneration",
    "MemoryTerm",
    "ModelConstants",
    "ModelShape",
    "NetSpec",
    "NicSpec",
    "PluginError",
    "Ring",
    "StateShards",
    "Strategy",
    "SwitchSpec",
    "TopologyBuilder",
    "TopologySpec",
    "Tree",
    "alpha_beta",
    "build",
    "build_fabric",
    "builtin_importers",
    "collective",
    "geometry",
    "hookimpl",
    "load_catalog",
    "load_fabric",
    "max_min_rates",
    "network_pipeline_fill_us",
    "path",
    "plugin_host",
    "resolve_topology",
    "route_links",
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


def resolve_topology(topology: str, catalog: Catalog, nodes: int | None = None) -> TopologySpec:
    """The checked spec of a built-in topology id or a YAML path (``--nodes`` applied).

    Raises:
        FabricError: Unknown topology, a malformed file, or a node count it cannot take.
    """
    return _resolve_topology(topology, catalog, nodes)


def build(spec: TopologySpec, catalog: Catalog, host: PluginHost | None = None) -> Fabric:
    """Build a spec's fabric the way ``fabricui`` does: with the plugin builder its
    ``builder:`` key names, else the built-in builder.

    Raises:
        FabricError: The builder refuses the spec (one line), or a plugin builder broke.
    """
    from fabricui.services.session import build_fabric_with_plugins

    return build_fabric_with_plugins(spec, catalog, host)


def load_fabric(topology: str, nodes: int | None = None, host: PluginHost | None = None) -> Fabric:
    """Resolve a topology (built-in id or YAML path) and build it, with plugin builders.

    Raises:
        FabricError: Unknown topology, bad node count, or a malformed file.
    """
    from fabricui.services.session import load_fabric as service_load_fabric

    return service_load_fabric(TopologyRequest(topology, nodes), host=host)


def path(fabric: Fabric, src: str, dst: str, size_bytes: int | None = None) -> PathReport:
    """The routed path between two GPUs (``fabricui path``): ``n3.g7``, ``d0.g71`` or a
    global rank, as users type them.

    Raises:
        EngineError: Unknown GPU ids or identical endpoints.
    """
    from fabricui.engine.evaluate import evaluate_path

    return evaluate_path(fabric, parse_gpu_id(fabric, src), parse_gpu_id(fabric, dst), size_bytes)


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


def route_links(fabric: Fabric, src_rank: int, dst_rank: int) -> Any:
    """The link ids (into ``fabric.link_*`` arrays) of the path between two ranks, in order."""
    return Router.for_fabric(fabric).route(src_rank, dst_rank)


def max_min_rates(fabric: Fabric, src: Any, dst: Any) -> Any:
    """Max-min fair rate of every flow ``src[i] -> dst[i]`` (ranks) on an idle fabric [GB/s]."""
    rates, _ = bulk_router(Router.for_fabric(fabric)).max_min_rates(src, dst)
    return rates


def builtin_importers() -> dict[str, Any]:
    """fabricui's own importers by format name (``nvidia-smi``, ``ibnetdiscover`` ...), as
    the built-in ``importers`` plugin registers them."""
    return dict(_builtin_importers())


def run_cli(argv: Sequence[str]) -> int:
    """Run ``fabricui ARGV...`` in this process; returns its exit status (tests)."""
    from fabricui.cli import main

    return main(list(argv))
