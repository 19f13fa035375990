"""Typed, frozen records of the hardware database and topology specs. No maths, no I/O."""

from __future__ import annotations

from fabricui.model.records import (
    GpuSpec,
    LinkGeneration,
    ModelShape,
    NicSpec,
    SwitchSpec,
)
from fabricui.model.topology import IntraSpec, NetSpec, TopologySpec

__all__ = [
    "GpuSpec",
    "IntraSpec",
    "LinkGeneration",
    "ModelShape",
    "NetSpec",
    "NicSpec",
    "SwitchSpec",
    "TopologySpec",
]
