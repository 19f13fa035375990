"""``:layout`` typed while the strategies view still computes its default layout: the
layout checked is the layout run, whatever the computation does between the two."""

from __future__ import annotations

import threading
import time

from textual.widgets import Input

from fabricui.services.loaded import LoadedFabric
from fabricui.tui.app import settle
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.strategies import StrategiesScreen


async def test_layout_words_checked_while_the_default_is_computing_are_the_ones_run(
    app_factory, monkeypatch
):
    """The default layout (``tp8 ... fsdp`` for llama3-70b on 32 H100) ends between the
    check of ``:layout pp2`` and its run: the view plans the layout checked (its words on
    the layout the check built on), not the same words on the default computed since."""
    release, computed = threading.Event(), threading.Event()
    default_layout = LoadedFabric._default_layout  # the search, once per model

    def slow_default(self, model_id):
        release.wait(10)
        try:
            return default_layout(self, model_id)
        finally:
            computed.set()

    checked = []
    check_layout = LoadedFabric.check_layout

    def check_and_finish_default(self, model_id, choice):
        checked.append(choice)
        check_layout(self, model_id, choice)
        # The default computation ends now and its plan reaches the view before the run.
        release.set()
        computed.wait(10)
        time.sleep(0.3)

    monkeypatch.setattr(LoadedFabric, "_default_layout", slow_default)
    monkeypatch.setattr(LoadedFabric, "check_layout", check_and_finish_default)
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        while app.data is None or app.screen.data is not app.data:
            await pilot.pause(0.01)
        view = app.screen
        assert isinstance(view, StrategiesScreen) and view.choice is None  # computing
        await pilot.press("colon")
        await pilot.pause()
        assert isinstance(app.screen, PromptModal)
        app.screen.query_one(Input).value = "layout pp2"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is view and len(checked) == 1
        assert view.choice == checked[0] and view.layout_typed
        assert view.plan is not None and view.plan.layout.pp == 2
        assert not app.failures
