"""Built-in plugin: NVLink, NVSwitch and NVLink-C2C interconnects (scale-up)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

NVLINK = Interconnect(
    name="nvlink",
    families=("nvlink", "nvlink-c2c"),
    description="NVIDIA NVLink, NVSwitch and NVLink-C2C",
)


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
