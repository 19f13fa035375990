"""The collectives view's ``m`` prompt reads a measurements YAML with the hardware
catalog, as ``calibrate`` does: an entry naming an unknown gpu id is refused in the
prompt, in one line, with the path typed kept to fix."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Label

from fabricui.tui.app import settle
from fabricui.tui.screens.measured import MeasuredModal
from fabricui.tui.textual_private import notifications
from tests.services.test_measured_catalog import measurements


async def test_the_m_prompt_refuses_a_misspelt_gpu_id(app_factory, tmp_path: Path):
    """``m`` with an entry of ``gpu: h100-smx``: the prompt stays open with the path and
    says file, line, entry and field; the file fixed, enter again shows the run beside the
    prediction."""
    wrong = measurements(tmp_path, "h100-smx")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, MeasuredModal)
        field = modal.query_one("#measured-path", Input)
        field.value = wrong
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is modal and field.value == wrong
        said = str(modal.query_one("#measured-error", Label).render())
        assert said == (
            f"{wrong}:5: entry box: hardware.gpu: unknown gpu 'h100-smx' "
            "(nearest: h100-sxm, h200-sxm, v100-sxm2)"
        )
        assert screen.measured is None
        assert measurements(tmp_path) == wrong  # the typo fixed in the file
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and screen.measured is not None
        assert screen.measured.hardware_gpu == "h100-sxm"
        assert not [n for n in notifications(app) if n.severity == "error"]
