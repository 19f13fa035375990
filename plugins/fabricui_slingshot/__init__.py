"""Built-in plugin: the HPE Slingshot interconnect (scale-out)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

SLINGSHOT = Interconnect(
    name="slingshot",
    families=("slingshot",),
    description="HPE Slingshot",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the slingshot interconnect.

    Args:
        register: The host's callback.
    """
    register(SLINGSHOT)
