"""The stylesheet parses each CSS source once per theme (Textual parses every source again
for each screen shown first)."""

from __future__ import annotations

import textual.css.stylesheet

from fabricui.tui.app import settle

SIZE = (80, 24)


async def test_css_is_parsed_again_only_when_the_theme_changes(app_factory, monkeypatch):
    """A CSS refresh (each screen shown first) re-parses no source; a theme changes the
    variables, so every source is parsed again."""
    parsed = []
    parse = textual.css.stylesheet.parse

    def counting(*args, **kwargs):
        parsed.append(args[2])  # where the source was read from
        return parse(*args, **kwargs)

    monkeypatch.setattr(textual.css.stylesheet, "parse", counting)
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        parsed.clear()
        app.refresh_css()
        assert parsed == []
        app.theme = "nord" if app.theme != "nord" else "gruvbox"
        await pilot.pause()
        assert len(parsed) >= len(app.stylesheet.source)
