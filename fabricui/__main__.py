"""``python -m fabricui`` runs the command-line interface."""

from __future__ import annotations

from fabricui.cli import run

run()
