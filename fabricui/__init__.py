"""fabricui: a terminal explorer for GPU cluster fabrics."""

from __future__ import annotations

from fabricui.hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]
