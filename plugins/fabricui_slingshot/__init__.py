"""Built-in plugin: the HPE Slingshot interconnect (scale-out)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

SLINGSHOT = Interconnect(
    name="slingshot",
    families=("slingshot",),
    description="HPE Slingshot",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the slingshot interconnect.

    Args:
        register: The host's callback.
    """
    register(SLINGSHOT)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the slingshot records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=slingshot`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
