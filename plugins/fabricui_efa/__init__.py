"""Built-in plugin: the AWS Elastic Fabric Adapter interconnect (scale-out)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

EFA = Interconnect(
    name="efa",
    families=("efa",),
    description="AWS Elastic Fabric Adapter",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the efa interconnect.

    Args:
        register: The host's callback.
    """
    register(EFA)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the efa records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=efa`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
