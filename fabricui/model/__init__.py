"""Typed, frozen records of the hardware database and topology specs. No maths, no I/O."""

from __future__ import annotations

from fabricui.model.choices import RecipeChoices
from fabricui.model.records import (
    FrameworkSpec,
    GpuSpec,
    KernelSpec,
    LinkGeneration,
    ModelShape,
    NicSpec,
    SwitchSpec,
)
from fabricui.model.topology import IntraSpec, NetSpec, TopologySpec

__all__ = [
    "FrameworkSpec",
    "GpuSpec",
    "KernelSpec",
    "IntraSpec",
    "LinkGeneration",
    "ModelShape",
    "NetSpec",
    "NicSpec",
    "RecipeChoices",
    "SwitchSpec",
    "TopologySpec",
]
