"""Built-in plugin: AWS NeuronLink, the chip-to-chip scale-up link of Trainium (a torus)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, hookimpl

NEURONLINK = Interconnect(
    name="neuronlink",
    families=("neuronlink",),
    description="AWS NeuronLink (Trainium chip-to-chip links in a 2D/3D torus)",
)

#: This plugin's hwdb records: the link generations of its family.
HWDB = Path(__file__).resolve().parent / "hwdb"


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the neuronlink interconnect.

    Args:
        register: The host's callback.
    """
    register(NEURONLINK)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register this package's ``hwdb/`` directory, so the catalog holds the neuronlink
    records only while this plugin is loaded (``FABRICUI_DISABLE_PLUGINS=neuronlink``
    removes them).

    Args:
        register: The host's callback.
    """
    register(HWDB)
