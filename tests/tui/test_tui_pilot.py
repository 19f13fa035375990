"""Pilot tests: every interaction of the explorer, driven by keys and the mouse."""

from __future__ import annotations

import io
import time

import pytest
from textual.widgets import DataTable, Input, OptionList

from fabricui.engine.evaluate import evaluate_path
from fabricui.tui.app import settle
from fabricui.tui.screens.collectives import CollectivesScreen
from fabricui.tui.screens.error import ErrorModal
from fabricui.tui.screens.help import HelpModal, key_label
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.strategies import StrategiesScreen
from fabricui.tui.screens.topology import TopologyScreen
from fabricui.tui.textual_private import notifications, press_queued, record_frames
from fabricui.tui.widgets.path_panel import hop_rows
from fabricui.tui.widgets.ring_stepper import RingStepper
from fabricui.tui.widgets.topology_map import TopologyMap

GiB = 2**30


async def answer_prompt(pilot, key: str, text: str, *, typed: bool = False) -> None:
    """Press ``key``, wait for its prompt, put ``text`` in it and press enter.

    The text is set as the input's value (as ``paste_measured`` sets its text: a long path
    typed key by key costs seconds); ``typed`` types it key by key over the selected initial
    value instead, so that the prompt's key handling stays covered.
    """
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(pilot.app.screen, PromptModal)
    if typed:
        await pilot.press(*text, "enter")
        return
    pilot.app.screen.query_one("#prompt-input", Input).value = text
    await pilot.press("enter")


async def paste_measured(pilot, text: str) -> None:
    """Press m, paste ``text`` into the measured modal and submit it."""
    from textual.widgets import TextArea

    from fabricui.tui.screens.measured import MeasuredModal

    await pilot.press("m")
    await pilot.pause()
    assert isinstance(pilot.app.screen, MeasuredModal)
    pilot.app.screen.query_one(TextArea).text = text
    await pilot.press("ctrl+s")
    await settle(pilot)


async def run_from_palette(pilot, text: str) -> None:
    """ctrl+p, type ``text`` and press enter once the palette's search for it is done (it
    runs in a worker and shows its hits in batches)."""
    from textual.command import CommandPalette

    await pilot.press("ctrl+p")
    await settle(pilot)
    assert isinstance(pilot.app.screen, CommandPalette)
    await press_queued(pilot, *text)
    await settle(pilot)
    await pilot.press("enter")


def engine_path(app, src: int, dst: int, size: int):
    """The engine's own report for the same pair (fresh router)."""
    fabric = app.data.fabric
    return evaluate_path(fabric, src, dst, size)


async def test_starts_on_default_topology_with_a_path(app_factory):
    """No arguments: dgx-h100-pod, topology view, a cross-node path already routed."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        assert app.data.spec.id == "dgx-h100-pod"
        assert screen.report == engine_path(app, 0, 31, GiB)
        assert "dgx-h100-pod" in app.sub_title


async def test_keys_select_source_and_destination(app_factory):
    """Arrows move the cursor; s and d mark the endpoints; the panel shows the engine's path."""
    messages = []
    app = app_factory()
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("right", "right", "right", "s")
        await pilot.press("right_square_bracket", "right_square_bracket", "down", "d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        assert screen.src == 3
        assert screen.dst not in (None, 3)
        dst = screen.dst
        assert dst // 8 != 0  # another node: the path leaves through the NIC
        report = screen.report
        assert report == engine_path(app, 3, dst, GiB)
        hops = [(h.src, h.dst) for h in report.hops]
        assert any(".nic" in a for a, _ in hops) and any("leaf" in b for _, b in hops)
        assert any(isinstance(m, TopologyScreen.PathComputed) for m in messages)
        marked = screen.map.path_devs
        nic = report.hops[1]
        assert nic.dst_device in marked and app.data.fabric.device_name(nic.dst_device) == nic.dst


async def test_path_panel_numbers_equal_the_engine(app_factory):
    """Every hop's GB/s and us, the bottleneck, latency and transfer time are the engine's."""
    from fabricui.tui.app import screen_text
    from fabricui.units import format_bandwidth, format_time_us

    app = app_factory()
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        report = app.screen.report
        text = screen_text(app)
        for _, a, b, link, bw, lat in hop_rows(report):
            assert a in text and b in text and bw in text and lat in text and link in text
        assert format_bandwidth(report.bottleneck_GBps) in text
        assert format_time_us(report.latency_us) in text
        assert format_time_us(report.transfer_us) in text
        assert report.bottleneck_GBps == 50.0


async def test_mouse_selects_source_then_destination(app_factory):
    """A click picks the source, the next click the destination (as in the seeds)."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        gpu_map = screen.query_one(TopologyMap)
        for rank in (5, 13):
            y, x = gpu_map.layout_lines.gpu_at[rank]
            assert await pilot.click(TopologyMap, offset=(x + 1, y))
            await settle(pilot)
        assert (screen.src, screen.dst) == (5, 13)
        assert gpu_map.cursor == 13
        assert screen.report == engine_path(app, 5, 13, GiB)


async def test_size_keys_and_typed_size_change_the_transfer_time(app_factory):
    """+ doubles, - halves, m asks for a size; the transfer time follows the engine."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("plus")
        await settle(pilot)
        assert app.screen.report == engine_path(app, 0, 31, 2 * GiB)
        await pilot.press("minus", "minus")
        await settle(pilot)
        assert app.screen.report.size_bytes == GiB // 2
        await answer_prompt(pilot, "m", "64K")
        await settle(pilot)
        assert app.screen.report == engine_path(app, 0, 31, 65536)


async def test_bad_input_in_a_prompt_stays_open_with_the_reason(app_factory):
    """A GPU id that does not exist is explained in the prompt, never a traceback."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "g", "n99.g0")
        modal = app.screen
        assert isinstance(modal, PromptModal)
        error = str(modal.query_one("#prompt-error").render())
        assert "no GPU n99.g0" in error
        await pilot.press("escape")
        await answer_prompt(pilot, "g", "n2.g5")
        await settle(pilot)
        assert app.screen.query_one(TopologyMap).cursor == 21


async def test_zoom_into_a_node_and_out(app_factory):
    """z draws the cursor's node alone; z again shows every node."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        gpu_map = app.screen.query_one(TopologyMap)
        await pilot.press("right_square_bracket", "z")
        assert gpu_map.zoom == 1
        assert set(gpu_map.layout_lines.gpu_at) == set(range(8, 16))
        await pilot.press("z")
        assert gpu_map.zoom is None
        assert len(gpu_map.layout_lines.gpu_at) == 32


async def test_switch_views_by_key_and_palette(app_factory):
    """1-5 switch views; the palette's 'view: ...' commands do too."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key, view in (("2", "pyramid"), ("3", "collectives"), ("4", "strategies")):
            await pilot.press(key)
            await settle(pilot)
            assert app.current_mode == view
        await pilot.press("5")
        assert app.current_mode == "plugins"
        await run_from_palette(pilot, "view: Topology")
        await settle(pilot)
        assert app.current_mode == "topology"


async def test_topology_picker_and_palette_switch_topologies(app_factory):
    """t opens the picker (the seeds' regimes tagged); the palette names every topology."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, PickerModal)
        ids = [key for key, _ in picker.choices]
        assert {"pcie-rtx4090x2", "hgx-h200", "gb200-nvl72", "h100-ib-cluster"} <= set(ids)
        picker.query_one(OptionList).highlighted = ids.index("pcie-rtx4090x2")
        await pilot.press("enter")
        await settle(pilot)
        assert app.data.spec.id == "pcie-rtx4090x2"
        assert app.screen.report == engine_path(app, 0, 1, GiB)
        await run_from_palette(pilot, "topology: gb200-nvl72")
        await settle(pilot)
        assert app.data.spec.id == "gb200-nvl72"


async def test_node_count_and_what_if_rebuild_the_fabric(app_factory):
    """N rescales the topology; w changes the NIC rate, and the path follows (both typed key
    by key over the prompt's current value)."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "N", "8", typed=True)
        await settle(pilot)
        assert app.data.fabric.nodes == 8
        await answer_prompt(pilot, "w", "nic=200", typed=True)
        await settle(pilot)
        assert app.data.spec.net.gbps == 200
        assert app.screen.report.bottleneck_GBps == 25.0


async def test_node_prompt_counts_gpus_of_this_topologys_nodes(app_factory):
    """N's hint counts the GPUs of the topology's own nodes (4 per GB200 tray, not 8), and a
    negative count is refused with a line that says why."""
    app = app_factory(topology="gb200-nvl72")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("N")
        await pilot.pause()
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptModal)
        assert prompt.help_text == "e.g. 256 for 1,024 GPUs (4 per node)"
        await pilot.press("ctrl+a", *"-5", "enter")
        await pilot.pause()
        assert pilot.app.screen is prompt


async def test_collectives_table_equals_the_engine(app_factory):
    """Pick an operation, a group and sizes: each row is the engine's prediction."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "e", "1G:4G")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CollectivesScreen)
        expected = app.data.collective("all_reduce", "all", [GiB, 2 * GiB, 4 * GiB])
        got = screen.prediction
        assert list(got.time_us) == list(expected.time_us)
        assert list(got.busbw_GBps) == list(expected.busbw_GBps)
        assert got.algorithm == expected.algorithm
        table = screen.query_one(DataTable)
        assert table.row_count == 3
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        groups = app.screen.query_one(OptionList)
        groups.highlighted = next(
            i for i in range(groups.option_count) if groups.get_option_at_index(i).id == "per-node"
        )
        await pilot.press("enter")
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        app.screen.query_one(OptionList).highlighted = 1  # all_gather
        await pilot.press("enter")
        await settle(pilot)
        assert (screen.op, screen.group) == ("all_gather", "per-node")
        assert screen.prediction.nranks == 4
        assert screen.query_one(RingStepper).op == "all_gather"


async def test_ring_stepper_steps_and_plays_only_when_asked(app_factory):
    """n steps, b goes back, p plays and pauses; no timer runs while paused."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        stepper = app.screen.query_one(RingStepper)
        assert stepper._timer is None and stepper.total == 4  # the first row's tree
        await pilot.press("n", "n", "b")
        assert stepper.step == 1
        await pilot.press("p")
        assert stepper.playing and stepper._timer is not None
        await pilot.press("p")
        assert not stepper.playing and stepper._timer is None
        await pilot.press("r")
        assert stepper.step == 0


async def test_strategies_table_plan_and_search_equal_the_engine(app_factory):
    """The decision table, the plan and the search are the engine's own results."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, StrategiesScreen)
        assert screen.table == app.data.decision_table("llama3-70b")
        verdicts = {row.name: row.inter_verdict for row in screen.table.rows}
        assert verdicts["tp"] == "no" and verdicts["pp"] == "yes"
        await answer_prompt(pilot, "l", "tp4 pp2 fsdp")
        await settle(pilot)
        assert (screen.plan.layout.tp, screen.plan.layout.pp) == (4, 2)
        await pilot.press("f")
        await settle(pilot)
        expected = app.data.search("llama3-70b", "fsdp")
        assert [p.step_us for p in screen.plans] == [p.step_us for p in expected]


async def test_plugins_view_lists_plugins_and_failures(tui_catalog):
    """What each plugin contributes, and a failing plugin with its reason (plus a warning)."""
    from fabricui import hookimpl
    from fabricui.plugins import PluginHost
    from fabricui.tui.app import make_app, screen_text

    class Broken:
        __name__ = "broken_plugin"

        @hookimpl
        def register_strategies(self, register):
            raise RuntimeError("boom: missing dependency")

    host = PluginHost(load_external=False)
    host.register(Broken(), name="broken_plugin")
    app = make_app(view="plugins", catalog=tui_catalog, host=host)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "nvlink" in text and "collective_algorithms: nvls" in text
        assert "broken_plugin" in text and "boom: missing dependency" in text
        assert any("broken_plugin" in str(n.message) for n in notifications(app))


async def test_help_lists_every_key(app_factory):
    """? shows every binding of every view with its description."""
    app = app_factory()
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpModal)
        from rich.console import Console

        from fabricui.tui.screens.help import help_table

        console = Console(width=100, record=True, file=io.StringIO())
        console.print(help_table(app.screen.sections))
        text = console.export_text()
        for _, bindings in app.help_sections():
            for binding in bindings:
                assert binding.description in text, binding
                assert key_label(binding) in text
        # At 80 columns each id follows its explanation instead of taking a column.
        narrow = Console(width=76, record=True, file=io.StringIO())
        narrow.print(help_table(app.screen.sections, narrow=True))
        folded = narrow.export_text()
        assert "Fabric map: s/d route a path (view.topology)" in folded
        assert "(app.help)" in folded
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpModal)


async def test_save_dialog_writes_a_report_and_never_overwrites(app_factory, tmp_path, monkeypatch):
    """S asks for a format and a file: the default Markdown report (with the fabric's
    diagram beside it) takes a free name; a text save holds the whole path panel even at
    80x24."""
    from fabricui.tui.screens.save import SaveModal

    monkeypatch.chdir(tmp_path)
    (tmp_path / "fabricui-topology-fabric.svg").write_text("mine")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, SaveModal)
        await pilot.press("enter")
        await settle(pilot)
        report = (tmp_path / "fabricui-topology-2.md").read_text()
        assert "| # | from | to | link |" in report
        assert "(fabricui-topology-2-fabric.svg)" in report
        diagram = (tmp_path / "fabricui-topology-2-fabric.svg").read_text()
        assert diagram.startswith("<svg") and ">leaf1<" in diagram
        await pilot.press("S")
        await pilot.pause()
        app.screen.query_one("#save-txt").value = True
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
    assert (tmp_path / "fabricui-topology-fabric.svg").read_text() == "mine"
    text = (tmp_path / "fabricui-topology.txt").read_text()
    assert "n0.g0 -> n3.g7" in text and "transfer" in text


async def test_copy_menu_puts_the_path_on_the_clipboard(app_factory):
    """y offers the path as text, the equivalent command and JSON; the choice is copied."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        for key in "command":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot.pause()
        assert app.clipboard.startswith("fabricui path -t dgx-h100-pod --src n0.g0 --dst n3.g7")


async def test_unknown_topology_shows_an_error_modal(app_factory):
    """A bad topology given to the app is an error modal, not a traceback."""
    app = app_factory(topology="no-such-pod")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ErrorModal)
        assert "unknown topology 'no-such-pod'" in app.screen.message


async def test_no_color_keeps_the_path_visible(app_factory, monkeypatch):
    """With NO_COLOR the path is still marked (brackets) and the app works."""
    from fabricui.tui.app import screen_text

    monkeypatch.setenv("NO_COLOR", "1")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.no_color
        text = screen_text(app)
        assert "[0]" in text and "bottleneck" in text


async def test_idle_app_does_not_redraw(app_factory):
    """Once settled, nothing repaints until a key is pressed (no animation when idle)."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        calls = []
        with record_frames(lambda: calls.append(1)):
            await pilot.pause(0.6)
        assert calls == []


async def test_1024_gpu_fabric_starts_and_answers_keys(app_factory):
    """h100-ib-cluster --nodes 128: the overview draws, keys move and route quickly."""
    app = app_factory(topology="h100-ib-cluster", nodes=128)
    started = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.data.fabric.n_gpus == 1024
        await pilot.press("right", "s", "end", "d")
        await settle(pilot)
        screen = app.screen
        assert (screen.src, screen.dst) == (1, 1023)
        assert screen.report == engine_path(app, 1, 1023, GiB)
        await pilot.press("down", "down", "left_square_bracket", "z")
        await settle(pilot)
        assert screen.map.zoom is not None
    assert time.perf_counter() - started < 30


async def test_open_nccl_log_shows_the_doctors_findings(app_factory):
    """o asks for an NCCL_DEBUG log and shows its findings (codes and fixes) beside the map."""
    from pathlib import Path

    from fabricui.tui.widgets.findings_panel import FindingsPanel

    logs = Path(__file__).parents[1] / "data" / "topo" / "nccl_debug_logs"
    sample = logs / "nccl_952_ib_no_device_p2p_ipc_plus_net_socket.txt"
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "o", "/no/such/log.txt")
        assert isinstance(app.screen, PromptModal)  # a missing file keeps the prompt open
        await pilot.press("escape")
        await answer_prompt(pilot, "o", str(sample))
        await settle(pilot)
        text = str(app.screen.query_one(FindingsPanel).render())
        assert "net-socket-fallback" in text and "fix:" in text


async def test_an_nccl_log_is_also_checked_against_the_fabric_on_screen(app_factory):
    """On the cluster a job ran on, o also compares the log's rings, NICs and channels with
    the fabric, as `doctor LOG --topology` does: two channels on hosts with eight NICs."""
    from pathlib import Path

    from fabricui.tui.widgets.findings_panel import FindingsPanel

    tests = Path(__file__).parents[1]
    sample = (
        tests
        / "data"
        / "topo"
        / "nccl_debug_logs"
        / "nccl_tests_133_p2p_direct_pointer_ib_gdrdma.txt"
    )
    cluster = tests / "doctor" / "topologies" / "cluster_nodeab.yaml"
    app = app_factory(topology=str(cluster))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "o", str(sample))
        await settle(pilot)
        text = str(app.screen.query_one(FindingsPanel).render())
        assert "channels-below-nics" in text and "fix:" in text


async def test_plugin_that_breaks_later_is_named_when_it_breaks(tui_catalog, monkeypatch):
    """An algorithm plugin that raises when the collectives view prices it: the view still
    fills (without it) and a notification names the plugin."""
    import fabricui.plugins.host as plugins_module
    from fabricui import hookimpl
    from fabricui.engine.types import CollectiveAlgorithm
    from fabricui.plugins import PluginHost
    from fabricui.tui.app import make_app

    class Flaky(CollectiveAlgorithm):
        name = "flaky"
        ops = ("all_reduce",)

        def applicable(self, group, op):
            return True

        def time_us(self, group, op, size_bytes, protocol):
            raise RuntimeError("lost its calibration table")

    class FlakyPlugin:
        @hookimpl
        def register_collective_algorithms(self, register):
            register(Flaky())

    host = PluginHost(load_external=False)
    host.register(FlakyPlugin(), name="flaky_plugin")
    monkeypatch.setattr(plugins_module, "get_host", lambda: host)
    monkeypatch.setattr("fabricui.services.session.get_host", lambda: host)
    app = make_app(view="collectives", catalog=tui_catalog, host=host)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        assert table.row_count > 0
        notes = [str(n.message) for n in notifications(app)]
        assert any("flaky_plugin" in note and "plugins view" in note for note in notes), notes


async def test_a_failing_view_computation_is_reported(app_factory, monkeypatch):
    """A view's worker that fails (here the collective prediction) shows a notification
    instead of leaving an empty table without a word."""
    from fabricui.errors import EngineError
    from fabricui.services.loaded import LoadedFabric

    def fail(self, op, group, sizes, **settings):
        raise EngineError("no route between n0.g0 and n1.g0")

    monkeypatch.setattr(LoadedFabric, "collective", fail)
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        notes = [(str(n.title), str(n.message)) for n in notifications(app)]
        assert ("collective failed", "no route between n0.g0 and n1.g0") in notes, notes


async def test_user_keymap_remaps_a_binding(app_factory, monkeypatch, tmp_path):
    """A keymap in the settings file moves a binding to another key; an unknown binding id
    is named in a notification with the nearest ids, and the explorer runs anyway."""
    config = tmp_path / "config.yaml"
    config.write_text("keymap:\n  view.collectives: f3\n  view.colectives: f4\n")
    monkeypatch.setenv("FABRICUI_CONFIG", str(config))
    app = app_factory(view="pyramid")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f3")
        await settle(pilot)
        assert app.current_mode == "collectives"
        notes = [str(n.message) for n in notifications(app)]
        assert any("unknown binding id 'view.colectives'" in n for n in notes), notes


async def test_prompt_validators_keep_bad_input_open(app_factory):
    """The go-to prompt validates when submitted: a bad id keeps it open with the reason."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, PromptModal)
        for key in "n99.g0":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PromptModal)
        assert "no GPU n99.g0" in str(app.screen.query_one("#prompt-error").render())


def test_log_path_check_never_reads_the_file(tmp_path):
    """The log prompt checks with a stat: a FIFO is refused at once, never opened."""
    import os

    from fabricui.tui.screens.topology import check_log_path

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert check_log_path(str(fifo)) == f"{fifo}: not a regular file"
    assert "no such file" in check_log_path(str(tmp_path / "nope"))


async def test_topology_picker_filters_as_you_type(app_factory):
    """Typing in the topology picker narrows the list (it never opens another dialog);
    enter picks the first row left; the columns line up."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        options = app.screen.query_one(OptionList)
        total = options.option_count
        await press_queued(pilot, *"nvl72 cluster")
        assert isinstance(app.screen, PickerModal)
        assert 0 < options.option_count < total
        first = options.get_option_at_index(0).id
        assert "nvl72" in first and "cluster" in first
        lines = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert len({line.index("GPUs") for line in lines}) == 1  # aligned columns
        await pilot.press("enter")
        await settle(pilot)
        assert app.data is not None and app.data.spec.id == first


@pytest.mark.parametrize("typed", ["dgxb200", "DGX_B200", "dgx b2"])
async def test_the_picker_finds_an_id_as_people_spell_it(app_factory, typed):
    """The picker's filter takes the spellings the command line does (dgx_b200, DGXB200):
    the row left is dgx-b200."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        for key in typed:
            await pilot.press({" ": "space", "_": "underscore"}.get(key, key))
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == [
            "dgx-b200"
        ]


async def test_what_if_keeps_the_chosen_gpus(app_factory):
    """w with a new NIC rate rebuilds the fabric and keeps the source and destination."""
    app = app_factory(src="n1.g2", dst="n2.g5")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "w", "nic=800")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        assert screen.report is not None
        assert (screen.report.src, screen.report.dst) == ("n1.g2", "n2.g5")
        assert "ib-xdr" in app.sub_title


async def test_a_session_remembers_topology_size_and_theme(app_factory, monkeypatch, tmp_path):
    """An interactive session keeps its topology, message size and theme for the next
    bare ``fabricui`` (not when a topology is named, even the default one); a remembered
    topology that is gone reopens the default one."""
    from fabricui.services.requests import LaunchRequest, TopologyRequest
    from fabricui.services.settings import load_state
    from fabricui.tui.launch import with_remembered

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("FABRICUI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    app = app_factory(topology="dgx-h100")
    app.interactive = True
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("plus")
        await settle(pilot)
        app.theme = "nord"
        await pilot.pause()
    state = load_state()
    assert state["topology"] == "dgx-h100" and state["message_size"] == 2**31
    assert state["theme"] == "nord"
    again = with_remembered(LaunchRequest())
    assert again.topology == TopologyRequest("dgx-h100") and again.message_size == 2**31
    named = with_remembered(LaunchRequest(TopologyRequest()))  # -t dgx-h100-pod: the default
    assert named.topology == TopologyRequest() and named.message_size == 2**31
    other = with_remembered(LaunchRequest(TopologyRequest("dgx-a100")))  # -t dgx-a100
    assert other.topology == TopologyRequest("dgx-a100")

    gone = app_factory(launch=LaunchRequest(TopologyRequest("no-such-pod")))
    gone.fallback = TopologyRequest()
    async with gone.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert gone.data is not None and gone.data.spec.id == "dgx-h100-pod"
        assert any("could not reopen no-such-pod" in str(n.message) for n in notifications(gone))


async def test_ascii_mode_draws_without_unicode(app_factory, monkeypatch):
    """With a locale that is not UTF-8 the explorer draws with ASCII only (title, key
    bar, borders of the dialogs); ``--ascii`` asks for the same."""
    from fabricui.tui.textual_private import screen_text

    monkeypatch.setenv("LC_ALL", "C")
    texts = []
    for topology, view in (("dgx-h100-pod", "collectives"), ("gb200-nvl72", "topology")):
        app = app_factory(topology=topology, view=view)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("o")  # a dialog: the operation picker, or the log prompt
            await pilot.pause()
            texts.append(screen_text(app))
        assert app.ascii_only
    for text in texts:
        assert all(ord(ch) < 128 for ch in text), sorted({ch for ch in text if ord(ch) >= 128})


async def test_tables_filter_and_sort(app_factory):
    """/ filters the collectives table to rows holding the words; > and I sort by the next
    column, descending; the plot still follows the cursor's size."""
    from textual.widgets import DataTable

    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        total = table.row_count
        await pilot.press("slash", "n", "v", "l", "s", "enter")
        await pilot.pause()
        shown = [str(table.get_row_at(i)[4]) for i in range(table.row_count)]
        rows = [" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
        assert 0 < len(shown) < total and all("nvls" in row for row in rows)
        await pilot.press("greater_than_sign", "I")
        await pilot.pause()
        times = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert times[0].endswith("ms") and "sorted by time, descending" in str(
            app.screen.query_one("#coll-controls").render()
        )


async def test_compare_before_and_after_a_what_if(app_factory):
    """c after a what-if compares the fabric before and after: the NIC-bound path and the
    all-reduce busbw of NCCL's NIC-bound pick (NVLS+tree at 64 MiB) go up with 800 Gb/s
    NICs, side by side."""
    from fabricui.tui.screens.compare import CompareModal

    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "w", "nic=800")
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        await pilot.press("enter")  # the previous fabric is the first choice
        await settle(pilot)
        assert isinstance(app.screen, CompareModal)
        figures = {f.name: f for f in app.screen.figures}
        path = figures["path n0.g0 -> n3.g7: bottleneck"]
        assert (path.a, path.b) == (50.0, 63.0)
        assert figures["all_reduce 64 MiB: busbw"].better is True


async def test_heat_colours_the_map_by_link_load(app_factory):
    """h colours devices by their busiest link under all-to-all traffic, then ring, then
    off; the legend names the busiest link. The levels are marked in text too (NO_COLOR):
    a device's marker is the one its level gives, and none is left when the heat is off."""
    from fabricui.tui.widgets.topology_map import HEAT_MARKERS, TopologyMap, heat_level

    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = app.screen.query_one(TopologyMap).render_text()
        await pilot.press("h")
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        heat = topology_map.heat
        assert heat is not None and 0 < float(heat.max()) <= 1.0 + 1e-9
        assert "heat: all_to_all" in str(app.screen.query_one("#map-legend").render())
        busiest = HEAT_MARKERS[heat_level(float(heat.max()))]
        assert busiest in topology_map.render_text().replace(before, "")
        assert topology_map.render_text() != before
        await pilot.press("h")
        await settle(pilot)
        assert "heat: ring" in str(app.screen.query_one("#map-legend").render())
        await pilot.press("h")
        await settle(pilot)
        assert app.screen.query_one(TopologyMap).heat is None
        assert app.screen.query_one(TopologyMap).render_text() == before
    assert [heat_level(u) for u in (0.0, 0.3, 0.7, 0.9, 1.0)] == [
        "dim",
        "heat-low",
        "heat-mid",
        "heat-high",
        "heat-full",
    ]


async def test_a_job_is_underlined_on_an_imported_cluster(app_factory, selene):
    """explore --hosts on an imported cluster (Selene from its ibnetdiscover dump, the
    session's ``selene``): the job's GPUs are marked on the map and the path runs between
    its first and last GPU."""
    from fabricui.services.requests import LaunchRequest, TopologyRequest
    from fabricui.tui.widgets.topology_map import TopologyMap

    launch = LaunchRequest(TopologyRequest(selene), options=(("hosts", "luna-[0001-0002]"),))
    app = app_factory(launch=launch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert len(app.screen.query_one(TopologyMap).job_ranks) == 16
        report = app.screen.report
        assert report is not None and (report.src, report.dst) == ("luna-0001.g0", "luna-0002.g7")
        assert any("job on 2 host(s)" in str(n.message) for n in notifications(app))


async def test_collectives_nccl_settings_and_the_advice_line(app_factory):
    """v takes an NCCL release and settings: the table is that release's pick under them,
    and the line under the table says how to force the cursor size's best pick."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "e", "8:1G")
        await settle(pilot)
        await answer_prompt(pilot, "v", "2.21 NCCL_ALGO=ring")
        await settle(pilot)
        screen = app.screen
        choice = screen.prediction.choice
        assert screen.nccl == "2.21 NCCL_ALGO=ring" and choice.library == "NCCL 2.21.5"
        assert set(choice.nccl.algorithm) == {"ring"}
        assert "NCCL 2.21.5 NCCL_ALGO=ring [v]" in str(screen.query_one("#coll-controls").render())
        table = screen.query_one(DataTable)
        differing = [i for i, env in enumerate(choice.env) if env]
        assert differing
        size = str(int(screen.prediction.size_bytes[differing[0]]))
        table.move_cursor(row=table.get_row_index(size))
        await pilot.pause()
        advice = str(screen.query_one("#coll-advice").render())
        assert "NCCL_ALGO=" in advice and ": best " in advice


async def test_collectives_on_slingshot_say_which_receive_matching_they_priced(
    app_factory, monkeypatch
):
    """Across Slingshot nodes with FI_CXI_RX_MATCH_MODE unset, the view says that it priced
    libfabric's default matching and how to price a site's software matching, once: a new
    prediction (here with the setting typed at the NCCL prompt) does not repeat it."""
    monkeypatch.delenv("FI_CXI_RX_MATCH_MODE", raising=False)
    app = app_factory(topology="gh200-quad", nodes=4, view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        said = [n for n in notifications(app) if "FI_CXI_RX_MATCH_MODE" in str(n.message)]
        assert len(said) == 1 and "FI_CXI_RX_MATCH_MODE=software" in str(said[0].message)
        await answer_prompt(pilot, "v", "FI_CXI_RX_MATCH_MODE=software")
        await settle(pilot)
        said = [n for n in notifications(app) if "FI_CXI_RX_MATCH_MODE" in str(n.message)]
        assert len(said) == 1


#: A pasted all_reduce_perf table of two sizes (out-of-place figures only).
PASTED = """# Collective test starting: all_reduce_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   20.32      0
  1073741824     268435456     float     sum      -1   5000.0  214.75  416.07      0
"""


async def test_measured_output_beside_the_prediction(app_factory):
    """m then a pasted all_reduce_perf output: the view predicts at its sizes and shows the
    measured time and the error per size, and the plot draws both; m again drops it."""

    from fabricui.tui.widgets.size_plot import SizePlot

    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await paste_measured(pilot, PASTED)
        screen = app.screen
        assert screen.measured is not None and screen.measured_name == "pasted"
        assert list(screen.prediction.size_bytes) == [2**20, 2**30]
        table = screen.query_one(DataTable)
        assert "meas" in table.columns and table.row_count == 2
        row = table.get_row(str(2**30))
        predicted = float(screen.prediction.time_us[1])
        assert str(row[-1]) == f"{round(100 * (predicted / 5000.0 - 1)):+d}%"
        assert len(screen.query_one(SizePlot).second) == 2
        await pilot.press("m")
        await settle(pilot)
        assert screen.measured is None and "meas" not in table.columns


async def test_collectives_table_fits_80_columns_and_sorts_by_the_header_clicked(app_factory):
    """At 80 columns the table leaves out algbw so the best pick and its gain show whole,
    and with a measured run the best pick and gain so the measured time and error do (the
    line under the table names the best pick); wider, every column is back; a click on a
    header sorts by that column in either layout, and a click on the measured columns
    leaves the order alone."""
    from fabricui.tui.screens.collectives import SORT_NAMES

    app = app_factory(view="collectives", options={"group": "host"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one(DataTable)
        keys = [str(c.key.value) for c in table.ordered_columns]
        assert "algbw" not in keys and keys[-2:] == ["best", "gain"]
        assert sum(c.get_render_width(table) for c in table.ordered_columns) <= 80 - 2
        row = table.get_row_at(0)
        assert (
            len(row) == len(keys) and str(row[keys.index("algo")]) == screen.prediction.algorithm[0]
        )

        def click(key: str) -> None:
            column = table.columns[key]
            index = keys.index(key)
            screen.on_data_table_header_selected(
                DataTable.HeaderSelected(table, column.key, index, column.label)
            )

        click("busbw")
        assert SORT_NAMES[screen.sort_column] == "busbw"
        await paste_measured(pilot, PASTED)
        keys = [str(c.key.value) for c in table.ordered_columns]
        assert keys == ["size", "time", "busbw", "algo", "ch", "meas", "err"]
        assert sum(c.get_render_width(table) for c in table.ordered_columns) <= 80 - 2
        assert len(table.get_row_at(0)) == len(keys)
        click("err")
        assert SORT_NAMES[screen.sort_column] == "busbw" and not screen.reverse
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        keys = [str(c.key.value) for c in table.ordered_columns]
        assert keys[:4] == ["size", "time", "algbw", "busbw"]
        assert keys[-4:] == ["best", "gain", "meas", "err"]
        assert len(table.get_row_at(0)) == len(keys)
        click("algbw")
        assert SORT_NAMES[screen.sort_column] == "algbw"


async def test_measured_single_process_run_is_priced_as_it_ran(app_factory):
    """A pasted run whose one process drove 8 GPUs (nccl-tests -g 8) is predicted so: a
    small all-reduce takes at least the thread's issue on its GPUs, a large one what one
    process per GPU takes, and the controls say how the run was launched."""

    header = "# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor)\n"
    rows = PASTED.replace("     1048576        262144", "           8             2")
    rows = rows.replace("20.32", "18.36").replace("416.07", "375.81")  # 8 ranks
    app = app_factory(view="collectives", options={"group": "host"})
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await paste_measured(pilot, header + rows)
        screen = app.screen
        assert screen.measured.single_process
        pred = screen.prediction
        plain = screen.data.collective(screen.op, screen.group, [8, 2**30])
        assert pred.time_us[0] > plain.time_us[0]
        assert abs(pred.time_us[1] / plain.time_us[1] - 1) < 1e-9
        controls = str(screen.query_one("#coll-controls").render())
        assert "each thread drove 8 GPUs" in controls


async def test_saved_and_revisited_collectives_keep_nccl_settings_and_measured_run(
    app_factory, tui_catalog, tui_host
):
    """The view's NCCL settings (v) and measured run (m) are part of its state: the app a
    save renders from that state shows both, and going back to a state without them
    drops them."""

    from fabricui.tui.app import make_app

    app = app_factory(view="collectives", options={"group": "host"})
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await answer_prompt(pilot, "v", "2.21 NCCL_ALGO=ring")
        await settle(pilot)
        await paste_measured(pilot, PASTED)
        launch = app.current_launch()
        options = dict(launch.options)
        assert options["nccl"] == "2.21 NCCL_ALGO=ring" and options["measured"] == PASTED
        command = dict(app.screen.copy_items())["command: fabricui collective ..."]
        assert command.endswith(" --nccl 2.21 --env NCCL_ALGO=ring")
        screen = app.screen
        screen.restore_state({"op": "all_reduce", "group": "host", "sizes": "8:1G"})
        await settle(pilot)
        assert screen.nccl == "" and screen.measured is None
        screen.restore_state(dict(options))
        await settle(pilot)
        assert screen.nccl == "2.21 NCCL_ALGO=ring" and screen.measured is not None
    saved = make_app(catalog=tui_catalog, host=tui_host, launch=launch)
    async with saved.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = saved.screen
        assert screen.nccl == "2.21 NCCL_ALGO=ring" and screen.measured_name == "pasted"
        assert screen.prediction.choice.library == "NCCL 2.21.5"
        assert list(screen.prediction.size_bytes) == [2**20, 2**30]


async def test_measured_run_of_one_host_shows_the_host_group(app_factory):
    """A pasted run of 8 ranks (busbw / algbw = 1.75) on the 32-GPU pod: the view shows the
    group of 8 GPUs it can be compared with, and says so."""

    eight = PASTED.replace("20.32", "18.36").replace("416.07", "375.81")
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.group == "all"
        await paste_measured(pilot, eight)
        screen = app.screen
        assert screen.measured.nranks == 8 and screen.group == "host"
        assert screen.prediction.nranks == 8


async def test_measured_run_no_named_group_has_shows_its_first_gpus(app_factory):
    """A pasted run of 16 ranks (busbw / algbw = 1.875) on the 32-GPU pod, where no named
    group has 16 GPUs: the view predicts for the first 16 (``gpus:16``, two hosts), says so
    in its controls, offers it in the group picker, copies it as ``--gpus 16``, and a saved
    view keeps it."""
    from fabricui.tui.screens.picker import PickerModal

    sixteen = PASTED.replace("20.32", "19.67").replace("416.07", "402.66")
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await paste_measured(pilot, sixteen)
        screen = app.screen
        assert screen.measured.nranks == 16 and screen.group == "gpus:16"
        assert screen.prediction.nranks == 16
        controls = str(screen.query_one("#coll-controls").render())
        assert "group first 16 GPUs [g]" in controls and "ranks, not" not in controls
        command = dict(screen.copy_items())["command: fabricui collective ..."]
        assert " --gpus 16" in command and "--group" not in command
        assert dict(app.current_launch().options)["group"] == "gpus:16"
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        assert [key for key, _ in app.screen.choices][-1] == "gpus:16"
        assert app.screen.current == "gpus:16"
        await pilot.press("escape")
        await settle(pilot)
        screen.restore_state({"op": "all_reduce", "group": "gpus:64", "sizes": "8:1G"})
        await settle(pilot)
        assert screen.group == "all"  # 64 GPUs do not fit the pod: said, and all shown


async def test_measured_modal_says_why_it_cannot_read(app_factory, tmp_path):
    """A path that is not an nccl-tests output keeps the modal open with the reason."""
    from fabricui.tui.screens.measured import MeasuredModal

    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        await press_queued(pilot, *str(junk), "enter")
        assert isinstance(app.screen, MeasuredModal)
        assert str(app.screen.query_one("#measured-error").render())


def test_naming_the_default_topology_is_naming_one():
    """``fabricui -t dgx-h100-pod`` (the default's id) opens it, not the last session's:
    its launch request names a topology; options that name none leave it None (reopen)."""
    from fabricui.cli import build_parser
    from fabricui.commands.explore import launch_request
    from fabricui.services.requests import TopologyRequest

    parser = build_parser()

    def named(*argv: str) -> TopologyRequest | None:
        return launch_request(parser.parse_args(list(argv))).topology

    assert named("-t", "dgx-h100-pod") == TopologyRequest()
    assert named("explore", "-t", "dgx-h100-pod") == TopologyRequest()
    assert named("-t", "dgx-a100") == TopologyRequest("dgx-a100")
    assert named("--nodes", "4") == TopologyRequest(nodes=4)
    assert named() is None
    assert named("explore") is None
    assert named("--view", "collectives") is None


def test_clearing_the_selection_before_any_screen_is_up(app_factory):
    """The first view's filter bar clears the selection as it mounts, before the screen
    stack holds that view on Python 3.13: nothing is raised (the explorer started in the
    plugins, collectives or strategies view crashed there)."""
    app = app_factory(view="plugins")
    app.clear_selection()
