"""fabricui: a terminal explorer for GPU cluster fabrics."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    """``fabricui.hookimpl`` on first use: the explorer starts without importing pluggy."""
    if name == "hookimpl":
        from fabricui.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'fabricui' has no attribute {name!r}")
