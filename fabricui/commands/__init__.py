"""Subcommands that live in their own modules (``add_parser(subparsers)`` and ``run(args)``)."""

from __future__ import annotations
