"""The explorer after a computation it refused (past the memory budget): the error is on
screen and the view says the figures were not computed; no "computing..." stays behind."""

from __future__ import annotations

import pytest

from fabricui.services import admission
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import make_app
from fabricui.tui.offscreen import settle
from fabricui.tui.textual_private import notifications, screen_text


@pytest.fixture
def tiny_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget the 256-GPU cluster fits (120 MiB and its GPUs), but not its all-to-all
    (65,280 flows) nor a collective among all its ranks."""
    monkeypatch.setenv("FABRICUI_LOAD_PLUGINS", "")
    monkeypatch.setenv(admission.ENV_MAX_MEMORY, "121M")
    # The process's own memory as a lone explorer's, whatever the test runner holds.
    monkeypatch.setattr(admission, "resident_bytes", lambda: 100 * 2**20)


def launch(view: str, **options: str) -> LaunchRequest:
    topology = TopologyRequest("h100-ib-cluster")
    return LaunchRequest(topology, view=view, options=tuple(options.items()))


async def test_heat_refused_says_so(tiny_budget, catalog):
    """``h`` (all-to-all heat) refused: the legend says it was not computed."""
    app = make_app(launch=launch("topology"), catalog=catalog)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        text = screen_text(app)
        assert "computing" not in text
        assert "heat: all_to_all not computed" in text
        assert any("heat failed" in str(n.title) for n in notifications(app))


async def test_collectives_refused_says_so(tiny_budget, catalog):
    """The all-to-all on every GPU refused: the controls say the figures were not
    computed and no table of other choices stays."""
    app = make_app(launch=launch("collectives", op="all_to_all"), catalog=catalog)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "computing" not in text
        assert "not computed (see the error)" in text
        assert app.screen.query_one("DataTable").row_count == 0
        assert any("to compute" in str(n.message) for n in notifications(app))
