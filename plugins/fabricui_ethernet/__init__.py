"""Built-in plugin: Ethernet interconnects: RoCE, plain TCP and GPUDirect-TCPXO (scale-out)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

ETHERNET = Interconnect(
    name="ethernet",
    families=("roce", "ethernet", "tcpxo"),
    description="Ethernet: RoCE, TCP and GPUDirect-TCPXO",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the ethernet interconnect.

    Args:
        register: The host's callback.
    """
    register(ETHERNET)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the ethernet records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=ethernet`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
