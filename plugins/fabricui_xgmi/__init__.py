"""Built-in plugin: the AMD xGMI (Infinity Fabric) interconnect (scale-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

XGMI = Interconnect(
    name="xgmi",
    families=("xgmi",),
    description="AMD Infinity Fabric (xGMI) GPU links",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the xgmi interconnect.

    Args:
        register: The host's callback.
    """
    register(XGMI)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the xgmi records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=xgmi`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
