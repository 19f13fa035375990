"""Built-in plugin: PCIe and CPU-socket interconnects (host tier)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

PCIE = Interconnect(
    name="pcie",
    families=("pcie", "cpu"),
    description="PCI Express and CPU socket links",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the pcie interconnect.

    Args:
        register: The host's callback.
    """
    register(PCIE)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the pcie records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=pcie`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
