"""Saving over an existing file asks "Overwrite? y/n" in the explorer: no answers keep the
file, yes replaces it; nothing tells the user to pass a command-line flag."""

from __future__ import annotations

from textual.widgets import Input, Label

from fabricui.tui.app import settle
from fabricui.tui.screens.confirm import ConfirmModal
from fabricui.tui.screens.save import SaveModal


async def save_as_text(pilot, path) -> None:
    """``S``, the text format, ``path``, enter."""
    await pilot.press("S")
    await pilot.pause()
    assert isinstance(pilot.app.screen, SaveModal)
    pilot.app.screen.query_one("#save-txt").value = True
    await pilot.pause()
    pilot.app.screen.query_one("#save-path", Input).value = str(path)
    await pilot.press("enter")
    await pilot.pause()


async def test_an_existing_file_is_replaced_only_after_yes(app_factory, tmp_path):
    """n (or escape) keeps the file and the dialog, saying so; y writes the view."""
    target = tmp_path / "topo.txt"
    target.write_text("mine")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await save_as_text(pilot, target)
        modal = app.screen
        assert isinstance(modal, ConfirmModal)
        assert modal.question == f"{target} already exists. Overwrite it? y/n"
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, SaveModal)
        said = str(app.screen.query_one("#save-error", Label).render())
        assert "not saved" in said and "--force" not in said
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("escape")
        await pilot.pause()
        assert target.read_text() == "mine"
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(app.screen, (SaveModal, ConfirmModal))
    assert "n0.g0 -> n3.g7" in target.read_text()


async def test_a_directory_is_refused_without_a_question(app_factory, tmp_path):
    """A directory is never a target: the dialog says so and asks nothing."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await save_as_text(pilot, tmp_path)
        assert isinstance(app.screen, SaveModal)
        said = str(app.screen.query_one("#save-error", Label).render())
        assert "is a directory" in said


async def test_a_name_with_a_formats_suffix_chooses_that_format(app_factory, tmp_path):
    """Markdown chosen, ``view.svg`` typed: the svg button takes the dot and the file is
    the screen as SVG, not a Markdown report under an .svg name; the dialog says so."""
    target = tmp_path / "view.svg"
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, SaveModal) and modal.format == "md"
        hint = str(modal.query_one("#save-keys", Label).render())
        assert "name.svg (or shift+tab) picks the format" in hint  # said, not only done
        modal.query_one("#save-path", Input).value = str(target)
        await pilot.pause()
        assert modal.format == "svg" and modal.query_one("#save-svg").value
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, SaveModal)
    assert target.read_text().startswith("<svg") and not (tmp_path / "view-fabric.svg").exists()
