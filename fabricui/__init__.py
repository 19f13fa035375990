"""fabricui: a terminal explorer for GPU cluster fabrics."""

from __future__ import annotations

__version__ = "0.1.0"
