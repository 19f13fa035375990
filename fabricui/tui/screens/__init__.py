"""Screens: one per view, plus one modal per module."""
