"""The explorer's message-size prompt starts from the exact size and refuses fractional
bytes (the rule every command follows)."""

from __future__ import annotations

from textual.widgets import Input

from fabricui.tui.app import settle
from fabricui.tui.screens.prompt import PromptModal


async def test_the_explorers_size_prompt_starts_from_the_exact_size(app_factory):
    """The prompt offers ``1000000``, not a rounded ``977K`` that would change the size, and
    refuses a fractional size in the prompt."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.size_bytes = 1_000_000
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PromptModal)
        field = modal.query_one("#prompt-input", Input)
        assert field.value == "1000000"
        field.value = "1.5"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is modal
        assert "not a whole number of bytes" in str(modal.query_one("#prompt-error").render())
