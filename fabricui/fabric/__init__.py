"""Builders: a topology spec becomes a fabric of device and link arrays."""

from __future__ import annotations

from fabricui.fabric.build import build_fabric, check_fabric, most_nodes
from fabricui.fabric.fabric import DeviceKind, Fabric

__all__ = ["DeviceKind", "Fabric", "build_fabric", "check_fabric", "most_nodes"]
