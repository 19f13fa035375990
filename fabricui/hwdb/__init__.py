"""Loads and validates the YAML hardware database into typed records.

The package's names are imported on first use, so that reading one YAML file (the
explorer's settings, before its first frame) does not load the whole catalog code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog, default_hwdb_dir, load_catalog, shipped_hwdb_dirs

__all__ = ["Catalog", "default_hwdb_dir", "load_catalog", "shipped_hwdb_dirs"]


def __getattr__(name: str) -> Any:
    """``fabricui.hwdb.Catalog`` and friends, from ``fabricui.hwdb.catalog`` on first use."""
    if name in __all__:
        from fabricui.hwdb import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module 'fabricui.hwdb' has no attribute {name!r}")
