"""What loading or a computation would refuse of a prompt's value is refused in the prompt,
in the command line's words, with the text typed kept to fix; never after it closes."""

from __future__ import annotations

from textual.widgets import Input, Label

from fabricui.tui.app import settle
from fabricui.tui.screens.error import ErrorModal
from fabricui.tui.screens.prompt import PromptModal
from tests.tui.test_hostile_round import dialog_text


async def refused(pilot, key: str, text: str) -> str:
    """Press ``key``, submit ``text`` in its prompt; the prompt stays open with the text
    typed: its error line."""
    await pilot.press(key)
    await pilot.pause()
    modal = pilot.app.screen
    assert isinstance(modal, PromptModal)
    field = modal.query_one("#prompt-input", Input)
    field.value = text
    await pilot.press("enter")
    await pilot.pause()
    assert pilot.app.screen is modal and field.value == text
    return str(modal.query_one("#prompt-error", Label).render())


async def test_a_node_count_past_the_memory_budget_is_refused_in_the_prompt(app_factory):
    """``N 99999999``: the prompt says what ``--nodes 99999999`` says (GPUs, memory, the
    count that fits); no error dialog after it, the fabric unchanged."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = await refused(pilot, "N", "99999999")
        assert said.startswith("topology dgx-h100-pod is 799,999,992 GPUs, about ")
        assert said.endswith(": use --nodes 8192 or fewer")
        assert "FABRICUI_MAX_MEMORY): use --nodes 8192 or fewer" in dialog_text(app)  # whole
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ErrorModal) and app.data.fabric.nodes == 4


async def test_a_node_count_the_builder_refuses_is_refused_in_the_prompt(app_factory):
    """``N 20`` on an NVL72 rack of 18 trays (not whole scale-up domains) and ``:nodes``
    alike: the builder's line, in the prompt."""
    app = app_factory(topology="gb200-nvl72")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = await refused(pilot, "N", "20")
        assert "20 nodes do not fill whole scale-up domains of 18 hosts" in said
        await pilot.press("escape")
        await pilot.pause()
        said = await refused(pilot, "colon", "nodes 20")
        assert "20 nodes do not fill whole scale-up domains of 18 hosts" in said


async def test_what_if_links_the_gpu_lacks_are_refused_in_the_prompt(app_factory):
    """``w links=1024``: the builder's refusal (an H100 has 18 NVLinks) in the prompt;
    ``links=2.5`` is refused, not built with 2 links unsaid."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = await refused(pilot, "w", "links=1024")
        assert "1024 nvlink4 links per GPU, but a h100-sxm has 18" in said
        await pilot.press("escape")
        await pilot.pause()
        said = await refused(pilot, "w", "links=2.5")
        assert said == "links=N takes a whole number of links (got 'links=2.5')"
        await pilot.press("escape")
        await settle(pilot)
        assert app.data.what_if is None and not isinstance(app.screen, ErrorModal)
