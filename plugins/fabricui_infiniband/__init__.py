"""Built-in plugin: the InfiniBand interconnect (scale-out)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

INFINIBAND = Interconnect(
    name="infiniband",
    families=("infiniband",),
    description="NVIDIA InfiniBand",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the infiniband interconnect.

    Args:
        register: The host's callback.
    """
    register(INFINIBAND)


@hookimpl
def register_collective_algorithms(register: Callable[[object], None]) -> None:
    """Register SHARP in-network all-reduce.

    Args:
        register: The host's callback.
    """
    from fabricui_infiniband.sharp import Sharp

    register(Sharp())


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the infiniband records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=infiniband`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
