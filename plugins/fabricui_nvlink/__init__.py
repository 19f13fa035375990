"""Built-in plugin: NVLink, NVSwitch and NVLink-C2C interconnects (scale-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

NVLINK = Interconnect(
    name="nvlink",
    families=("nvlink", "nvlink-c2c"),
    description="NVIDIA NVLink, NVSwitch and NVLink-C2C",
)

#: This plugin's hwdb records: the link generations, NICs and switches of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the nvlink interconnect.

    Args:
        register: The host's callback.
    """
    register(NVLINK)


@hookimpl
def register_collective_algorithms(register: Callable[[object], None]) -> None:
    """Register NVLS (one node) and NVLS + trees (several nodes).

    Args:
        register: The host's callback.
    """
    from fabricui_nvlink.nvls import Nvls, NvlsTree

    register(Nvls())
    register(NvlsTree())


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the nvlink records
    only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=nvlink`` removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
