"""A layout typed in the strategies view (``l``) is refused in the words typed: the check is
``plan``'s (``plan_count``), but ``--tp`` is a flag the explorer's user never typed."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.plan import plan_count
from fabricui.tui.app import settle
from fabricui.tui.screens.prompt import PromptModal
from tests.tui.test_hostile_round import dialog_text
from tests.tui.test_tui_pilot import answer_prompt

HUGE = "99999999999999999999"


async def test_a_huge_degree_is_refused_in_the_prompt_naming_the_word_typed(app_factory):
    """``l tp99999999999999999999``: the prompt stays open and says ``tp999...: tp must be
    at most 2147483648``, without ``--tp``; the plan shown keeps its layout."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        await answer_prompt(pilot, "l", f"tp{HUGE}")
        await pilot.pause()
        assert isinstance(app.screen, PromptModal)
        said = dialog_text(app)
        assert f"tp{HUGE}: tp must be at most 2147483648" in said
        assert "--tp" not in said
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is view and view.choice is not None and view.choice.tp < 100


def test_the_layout_words_and_the_flags_share_one_check():
    """The same range, the name passed in: ``tp0``/``pp=0`` typed, ``--tp`` on the CLI."""
    with pytest.raises(ConfigError, match=r"^pp=0: pp must be at least 1 \(got 0\)$"):
        parse_layout("tp8 pp=0", LayoutChoice())
    with pytest.raises(ConfigError, match=rf"^--tp must be at most 2147483648 \(got {HUGE}\)$"):
        plan_count("--tp", int(HUGE))
