"""Saving a view renders it off-screen on the fabric the explorer loaded, with the figures
its view computed: nothing is loaded or priced again, and the file is what ``fabricui
snapshot`` writes of the same view."""

from __future__ import annotations

import asyncio

import pytest

import fabricui.services.loaded as loaded_module
from fabricui.services.loaded import LoadedFabric
from fabricui.tui.app import settle
from fabricui.tui.snapshot import render_view


@pytest.fixture
def engine_calls(monkeypatch):
    """Names of the engine's planning entry points and of fabric loads, as they are called."""
    calls: list[str] = []
    for name in ("decision_table_on", "plan_on"):
        real = getattr(loaded_module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(loaded_module, name, spy)
    load = LoadedFabric.load.__func__

    def spy_load(cls, *args, **kwargs):
        calls.append("load")
        return load(cls, *args, **kwargs)

    monkeypatch.setattr(LoadedFabric, "load", classmethod(spy_load))
    return calls


@pytest.mark.parametrize("fmt", ["svg", "txt", "md"])
async def test_saving_the_strategies_view_prices_nothing_again(
    app_factory, tui_catalog, tui_host, tmp_path, engine_calls, fmt
):
    """The decision table, the default layout's search and its plan were computed for the
    view: the save (SVG, text or report) loads no fabric and plans nothing; the SVG and the
    text are the screen ``fabricui snapshot`` renders at the save's size."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "decision_table_on" in engine_calls and "plan_on" in engine_calls
        engine_calls.clear()
        launch = app.current_launch()
        target = tmp_path / f"strategies.{fmt}"
        await app._save(launch, fmt, target).wait()
        await settle(pilot)
        assert engine_calls == []
        assert not app.failures
    saved = target.read_text()
    if fmt == "md":
        assert "Strategies" in saved
        return
    # as the save does, off the test's event loop
    shot = await asyncio.to_thread(render_view, launch, tui_catalog, tui_host, (160, 60))
    assert saved == (shot.svg if fmt == "svg" else shot.text)
