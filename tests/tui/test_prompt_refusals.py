"""What loading or a computation would refuse of a prompt's value is refused in the prompt,
in the command line's words, with the text typed kept to fix; never after it closes."""

from __future__ import annotations

from textual.widgets import Input, Label

from fabricui.services.layouts import LayoutChoice
from fabricui.tui.app import settle
from fabricui.tui.screens.error import ErrorModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.strategies import StrategiesScreen
from fabricui.tui.textual_private import notifications
from tests.tui.test_hostile_round import dialog_text
from tests.tui.test_navigation import command


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


async def test_nccl_settings_the_prediction_refuses_are_refused_in_the_prompt(app_factory):
    """``v NCCL_ALGO=nvls`` on H100s across nodes (NVLS needs CollNet there) and an unknown
    ``NCCL_ALGO`` name: the prompt says what ``collective --env`` says; the view keeps its
    settings and its table, with no "collective failed" after."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        said = await refused(pilot, "v", "NCCL_ALGO=nvls")
        assert said == (
            "NCCL 2.30.7: no algorithm/protocol left for all_reduce (NCCL_ALGO=nvls, "
            "NCCL_PROTO=-); NCCL would fail"
        )
        await pilot.press("escape")
        await pilot.pause()
        said = await refused(pilot, "v", "NCCL_ALGO=foo")
        assert said.startswith("NCCL_ALGO='foo': unknown name 'foo' (Tree, Ring,")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is view and view.nccl == "" and view.prediction is not None
        assert not [n for n in notifications(app) if n.severity == "error"]


async def test_nccl_settings_are_checked_for_the_group_shown(app_factory):
    """``NCCL_ALGO=nvls`` runs on one node's NVSwitch: accepted for the node group."""
    app = app_factory(view="collectives", options={"group": "node"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        await pilot.press("v")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "NCCL_ALGO=nvls"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is view and view.nccl == "NCCL_ALGO=nvls"
        assert view.prediction is not None and view.prediction.choice is not None


async def test_a_layout_the_fabric_cannot_run_is_refused_in_the_prompt(app_factory):
    """``l tp64`` on 32 GPUs and ``l ep8`` on a dense model: ``plan``'s line in the prompt."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = await refused(pilot, "l", "tp64")
        assert said == "layout needs 64 GPUs, more than dgx-h100-pod's 32"
        await pilot.press("escape")
        await pilot.pause()
        said = await refused(pilot, "l", "ep8")
        assert said == "llama3-70b is dense (no experts): ep must be 1 (got 8)"


async def test_a_message_size_past_1_pib_is_refused_in_the_prompt(app_factory):
    """``m 2P``: refused as ``path --message-size 2P`` is, not priced as 1 PiB unsaid."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        said = await refused(pilot, "m", "2P")
        assert said == "size 2P: a message size from 1 byte to 1 PiB"
        await pilot.press("escape")
        await settle(pilot)
        assert view.size_bytes == 2**30


async def test_a_layout_the_fabric_cannot_run_is_refused_on_the_command_line(app_factory):
    """``:layout tp64`` on 32 GPUs and ``:layout ep8`` on the dense model the strategies view
    will plan, from another view: ``plan``'s line, as ``l`` says it, the text kept; a
    layout that runs shows the strategies view planning it."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = await refused(pilot, "colon", "layout tp64")
        assert said == "layout needs 64 GPUs, more than dgx-h100-pod's 32"
        await pilot.press("escape")
        await pilot.pause()
        said = await refused(pilot, "colon", "layout ep8")
        assert said == "llama3-70b is dense (no experts): ep must be 1 (got 8)"
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, StrategiesScreen)
        await command(pilot, "layout tp8 pp4")
        view = app.screen
        assert isinstance(view, StrategiesScreen) and view.choice == LayoutChoice(tp=8, pp=4)
        assert view.plan is not None and not isinstance(app.screen, ErrorModal)


async def test_command_line_layout_words_change_the_layout_shown_as_l_does(app_factory):
    """On the strategies view, ``:layout`` changes the layout shown as ``l`` does: ``tp16``
    on ``tp8 pp4`` (64 GPUs) is refused on 32, ``fsdp`` keeps the degrees."""
    app = app_factory(view="strategies", options={"layout": "tp8 pp4"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        said = await refused(pilot, "colon", "layout tp16")
        assert said == "layout needs 64 GPUs, more than dgx-h100-pod's 32"
        await pilot.press("escape")
        await pilot.pause()
        await command(pilot, "layout fsdp")
        assert app.screen is view
        assert view.choice == LayoutChoice(tp=8, pp=4, dp_strategy="fsdp")


async def test_command_line_layout_is_checked_for_the_model_given_at_start(app_factory):
    """``--model mixtral-8x7b`` not shown yet (the topology view is): ``:layout ep8`` is
    checked for Mixtral (8 experts), not the default dense model, and planned for it."""
    app = app_factory(options={"model": "mixtral-8x7b"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await command(pilot, "layout ep8")
        view = app.screen
        assert isinstance(view, StrategiesScreen) and view.model_id == "mixtral-8x7b"
        assert view.choice == LayoutChoice(ep=8) and view.plan is not None


async def test_nccl_settings_rccl_runs_nothing_of_are_refused_in_the_prompt(app_factory):
    """On MI300X (RCCL): ``v NCCL_ALGO=nvls`` leaves RCCL nothing it runs, refused in the
    prompt in ``collective --env``'s line with the text kept, the view's settings and table
    unchanged; ``NCCL_ALGO=tree`` is taken and priced."""
    app = app_factory(topology="mi300x-node", view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        said = await refused(pilot, "v", "NCCL_ALGO=nvls")
        assert said.startswith(
            "RCCL runs nothing NCCL_ALGO/NCCL_PROTO allow for all_reduce here (it runs ring/"
        )
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is view and view.nccl == "" and view.prediction is not None
        assert not [n for n in notifications(app) if n.severity == "error"]
        await pilot.press("v")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "NCCL_ALGO=tree"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is view and view.nccl == "NCCL_ALGO=tree"
        choice = view.prediction.choice
        assert choice is not None and set(choice.nccl.algorithm) == {"tree"}
