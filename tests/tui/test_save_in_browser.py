"""In a browser (`fabricui serve`), a saved view also downloads: the files go to the
server's directory and, through Textual's delivery, to the browser."""

from __future__ import annotations

from fabricui.tui.app import FabricApp, settle
from fabricui.tui.screens.save import SaveModal


async def test_saved_files_are_delivered_to_the_browser(app_factory, tmp_path, monkeypatch):
    """S then enter in a web session: the report and its diagram are delivered; in a
    terminal nothing is (the file is already where the user chose)."""
    monkeypatch.chdir(tmp_path)
    delivered: list[str] = []
    monkeypatch.setattr(
        FabricApp, "deliver_text", lambda self, path, **kw: delivered.append(kw["save_filename"])
    )
    for web in (False, True):
        monkeypatch.setattr(FabricApp, "is_web", property(lambda self, web=web: web))
        app = app_factory()
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("S")
            await pilot.pause()
            assert isinstance(app.screen, SaveModal)
            await pilot.press("enter")
            await settle(pilot)
            await pilot.pause()
        if not web:
            assert delivered == []
    assert delivered == ["fabricui-topology-2-fabric.svg", "fabricui-topology-2.md"]
