"""Plugin hook specifications and the ``hookspec``/``hookimpl`` markers of project ``fabricui``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pluggy import HookimplMarker, HookspecMarker

if TYPE_CHECKING:
    from pathlib import Path

    from fabricui.engine.types import CollectiveAlgorithm, Interconnect, Strategy, TopologyBuilder
    from fabricui.model.records import LinkGeneration

#: pluggy project name and entry-point group.
PROJECT = "fabricui"

hookspec = HookspecMarker(PROJECT)
hookimpl = HookimplMarker(PROJECT)


@hookspec
def register_link_generations(register: Callable[[LinkGeneration], None]) -> None:
    """Register link generations (NVLink 5, InfiniBand XDR, ...) that are not in an hwdb file.

    Args:
        register: Call ``register(LinkGeneration(...))`` once per generation; ids are unique.
    """


@hookspec
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register directories of hwdb YAML record files that the catalog loads after the built-in one.

    Args:
        register: Call ``register(pathlib.Path(...))`` once per existing directory.
    """


@hookspec
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register interconnect families this plugin provides.

    Args:
        register: Call ``register(Interconnect(...))`` once per interconnect; names are unique.
    """


@hookspec
def register_topology_builders(register: Callable[[TopologyBuilder], None]) -> None:
    """Register named builders that turn a topology spec into a fabric (``builder:`` key).

    Args:
        register: Call ``register(TopologyBuilder(...))`` once per builder; names are unique.
    """


@hookspec
def register_collective_algorithms(register: Callable[[CollectiveAlgorithm], None]) -> None:
    """Register collective algorithms (ring, tree, NVLS, SHARP, ...).

    Args:
        register: Call ``register(MyAlgorithm())`` with an instance of a
            ``CollectiveAlgorithm`` subclass whose ``name`` is unique.
    """


@hookspec
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register parallelism strategies (DDP, FSDP, TP, PP, EP, ...).

    Args:
        register: Call ``register(MyStrategy())`` with an instance of a ``Strategy``
            subclass whose ``name`` is unique.
    """


@hookspec
def register_importers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register importers that read a foreign cluster description into fabricui records.

    Args:
        register: Call ``register(name, parse)`` with a unique format name and a callable.
    """
