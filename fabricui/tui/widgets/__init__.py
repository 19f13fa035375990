"""Widgets of the explorer, one widget (family) per module."""
