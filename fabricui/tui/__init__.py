"""The Textual explorer: the only package that imports ``textual``.

Import ``fabricui.tui.app`` for ``make_app``; this package itself imports nothing heavy.
"""
