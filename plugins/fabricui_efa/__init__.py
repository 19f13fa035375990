"""Built-in plugin: the AWS Elastic Fabric Adapter interconnect (scale-out)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

EFA = Interconnect(
    name="efa",
    families=("efa",),
    description="AWS Elastic Fabric Adapter",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the efa interconnect.

    Args:
        register: The host's callback.
    """
    register(EFA)
