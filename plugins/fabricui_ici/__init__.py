"""Built-in plugin: TPU-style inter-chip interconnect (ICI) for direct 3D-torus fabrics."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

ICI = Interconnect(
    name="ici",
    families=("ici",),
    description="Google TPU inter-chip interconnect (direct links in a 3D torus)",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the ici interconnect.

    Args:
        register: The host's callback.
    """
    register(ICI)


@hookimpl
def register_collective_algorithms(register: Callable[[object], None]) -> None:
    """Register per-dimension torus rings.

    Args:
        register: The host's callback.
    """
    from fabricui_ici.torus import TorusRings

    register(TorusRings())


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the ici records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=ici`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
