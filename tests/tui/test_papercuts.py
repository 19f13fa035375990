"""Small keyboard and wording fixes: the find prompt's error, ``[``/``]`` while zoomed,
tab completing the ``:`` prompt, the heat refusal's reason kept on screen (whole), and the group
picker saying what a scale-up domain is on this fabric."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Input, Label, OptionList, Static

from fabricui.tui.app import settle
from fabricui.tui.screens.collectives import group_text
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.widgets.topology_map import TopologyMap


async def test_find_says_nothing_is_named_so(app_factory):
    """``/zzz`` enter: 'nothing named 'zzz'', not a GPU-id syntax error; the prompt stays."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen, PromptModal)
        await pilot.press("z", "z", "z", "enter")
        await pilot.pause()
        said = str(app.screen.query_one("#prompt-error", Label).render())
        assert said.startswith("nothing named 'zzz'") and "invalid GPU id" not in said


async def test_brackets_while_zoomed_zoom_on_the_next_node(app_factory):
    """``z`` on n0 then ``]``: zoomed on n1 with the cursor on the same GPU, and the
    title says n1; ``[`` goes back to n0."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        await pilot.press("right", "right", "z")
        await pilot.pause()
        assert topology_map.zoom == 0 and "zoomed on n0" in app.sub_title
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert topology_map.zoom == 1 and topology_map.cursor == 8 + 2
        assert "zoomed on n1" in app.sub_title
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert topology_map.zoom == 0 and topology_map.cursor == 2
        assert "zoomed on n0" in app.sub_title


async def test_tab_takes_the_command_completion(app_factory):
    """``:topology gb2`` then tab: the prompt reads ``topology gb200-nvl72`` and enter
    opens it."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press(*"topology gb2")
        await pilot.pause()
        await pilot.press("tab")
        await pilot.pause()
        field = app.screen.query_one(Input)
        assert field.value == "topology gb200-nvl72" and field.has_focus
        await pilot.press("enter")
        await settle(pilot)
        await settle(pilot)
        assert app.data.spec.id == "gb200-nvl72"


async def test_a_refused_heat_keeps_its_reason_on_screen(app_factory):
    """4,096 TPU chips: the all-to-all heat is refused on memory; the legend says why
    (the error's notification fades), and how to go on."""
    app = app_factory(topology="tpu-v5p-torus")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        legend = str(app.screen.query_one("#map-legend", Static).render()).replace("\n", " ")
        assert legend.startswith("heat: all_to_all not computed (h: next): heat of all_to_all")
        assert "see the error" not in legend


async def test_a_refused_heat_reason_is_not_cut_at_80_columns(app_factory):
    """At 80 columns the memory refusal wraps to three lines: all of them are on screen
    (the legend's usual two would cut its advice); h again gives the two-line legend back."""
    app = app_factory(topology="tpu-v5p-torus")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        widget = app.screen.query_one("#map-legend", Static)
        text = str(widget.render())
        needed = len(Content(text).wrap(widget.content_size.width))
        assert needed >= 3 and widget.content_size.height == needed
        assert text.rstrip().endswith("choose the ring pattern, or fewer nodes")
        await pilot.press("h")  # ring: a two-line legend again
        await settle(pilot)
        assert widget.content_size.height <= 2


def test_the_domain_group_is_said_as_it_is_on_the_fabric():
    """One host per domain (DGX H100 pod): no 'NVLink rack'; 18 hosts: a rack."""
    assert "rack" not in group_text("domain", 1) and "one host" in group_text("domain", 1)
    assert "18 hosts" in group_text("domain", 18) and "rack" in group_text("domain", 18)


async def test_group_picker_on_the_pod_has_no_rack(app_factory):
    """``g`` in the collectives view of the pod: the domain row names one host."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        options = app.screen.query_one(OptionList)
        lines = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        domain = next(line for line in lines if line.startswith("domain"))
        assert "one host" in domain and "rack" not in domain


async def test_group_picker_says_one_gpu_not_one_gpus(app_factory):
    """dgx-a100 (one host): the per-node group is '1 GPU', its digit under the others'."""
    app = app_factory(topology="dgx-a100", view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        lines = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        per_node = next(line for line in lines if line.startswith("per-node"))
        every = next(line for line in lines if line.startswith("all "))
        assert " 1 GPU  " in per_node and "1 GPUs" not in per_node
        assert per_node.index("1 GPU") == every.index("8 GPUs")
