"""Loads and validates the YAML hardware database into typed records."""

from __future__ import annotations

from fabricui.hwdb.catalog import Catalog, default_hwdb_dir, load_catalog, shipped_hwdb_dirs

__all__ = ["Catalog", "default_hwdb_dir", "load_catalog", "shipped_hwdb_dirs"]
