"""A prompt's check that takes long (NCCL settings priced on 32,768 GPUs, a large measured
output read) runs off the event loop: the screen keeps drawing and taking keys while it
says "checking...", a refusal keeps the prompt open with the text and the reason, escape
closes it without a change, and a second enter does nothing."""

from __future__ import annotations

import threading

from textual.widgets import Input, Label

from fabricui.errors import ConfigError
from fabricui.tui.app import settle
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens import checked
from fabricui.tui.screens.checked import start_check
from fabricui.tui.screens.measured import MeasuredModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.textual_private import notifications, press_queued

RUN = "tests/data/nccl_tests/h100_2node_degraded_default_all_reduce_perf.txt"


def checking() -> str:
    """What the error line says while the check runs."""
    return f"checking{glyphs().ellipsis}"


def slowed(monkeypatch, module, name: str, refusal: str | None = None):
    """``module.name`` made to wait for the event returned (at most 10 s), then to refuse
    with ``refusal`` (a ``ConfigError``) or do what it does; its calls are counted."""
    release = threading.Event()
    calls: list[tuple[object, ...]] = []
    real = getattr(module, name)

    def slow(*args, **kwargs):
        calls.append(args)
        release.wait(10)
        if refusal is not None:
            raise ConfigError(refusal)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)
    return release, calls


async def ask_nccl(pilot, text: str) -> PromptModal:
    """``v``, then ``text`` typed (key by key) and enter: the prompt, checking."""
    await pilot.press("v")
    await pilot.pause()
    modal = pilot.app.screen
    assert isinstance(modal, PromptModal)
    await press_queued(pilot, *text)
    await pilot.press("enter")
    return modal


def said(modal: PromptModal) -> str:
    return str(modal.query_one("#prompt-error", Label).render())


async def test_the_screen_draws_and_takes_keys_while_a_slow_check_runs(app_factory, monkeypatch):
    """``v NCCL_ALGO=ring`` whose check takes long: the prompt says "checking...", a
    timer ticks and keys reach the field meanwhile (a letter typed and rubbed out); once
    the check answers, the prompt closes with the settings."""
    from fabricui.services import collective

    release, calls = slowed(monkeypatch, collective, "check_view_nccl")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        modal = await ask_nccl(pilot, "NCCL_ALGO=ring")
        await pilot.pause()
        assert app.screen is modal and modal.is_checking and len(calls) == 1
        assert said(modal) == checking()
        assert modal.query_one("#prompt-error").has_class("-checking")
        ticks: list[int] = []
        timer = app.set_interval(0.01, lambda: ticks.append(1))
        await pilot.pause(0.2)
        field = modal.query_one("#prompt-input", Input)
        await press_queued(pilot, "x", "backspace")
        timer.stop()
        assert len(ticks) >= 5 and modal.is_checking
        assert field.value == "NCCL_ALGO=ring"
        release.set()
        await settle(pilot)
        assert app.screen is view and view.nccl == "NCCL_ALGO=ring"
        assert len(calls) == 1 and not [n for n in notifications(app) if n.severity == "error"]


async def test_a_slow_refusal_keeps_the_prompt_open_with_the_text_and_why(app_factory, monkeypatch):
    """The slow check refuses: the prompt stays open with the text typed, the reason in
    the error line (no longer "checking..."); the view keeps its settings."""
    from fabricui.services import collective

    release, _calls = slowed(monkeypatch, collective, "check_view_nccl", "RCCL runs nothing")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        modal = await ask_nccl(pilot, "NCCL_ALGO=nvls")
        await pilot.pause()
        assert modal.is_checking
        release.set()
        await settle(pilot)
        assert app.screen is modal and not modal.is_checking
        assert modal.query_one("#prompt-input", Input).value == "NCCL_ALGO=nvls"
        assert said(modal) == "RCCL runs nothing"
        assert not modal.query_one("#prompt-error").has_class("-checking")
        assert modal.query_one("#prompt-input").has_class("-invalid")
        assert view.nccl == ""


async def test_escape_while_checking_closes_without_a_change(app_factory, monkeypatch):
    """Escape while the check runs closes the prompt at once; the check's answer, when it
    comes, changes nothing."""
    from fabricui.services import collective

    release, _calls = slowed(monkeypatch, collective, "check_view_nccl")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        modal = await ask_nccl(pilot, "NCCL_ALGO=ring")
        await pilot.pause()
        assert modal.is_checking
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is view
        release.set()
        await settle(pilot)
        assert app.screen is view and view.nccl == ""
        assert not [n for n in notifications(app) if n.severity == "error"]


async def test_a_second_enter_while_checking_does_nothing(app_factory, monkeypatch):
    """Enter again while the check runs: no second check, and one answer."""
    from fabricui.services import collective

    release, calls = slowed(monkeypatch, collective, "check_view_nccl")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        modal = await ask_nccl(pilot, "NCCL_ALGO=ring")
        await pilot.pause()
        await pilot.press("enter", "enter")
        assert app.screen is modal and modal.is_checking and len(calls) == 1
        release.set()
        await settle(pilot)
        assert app.screen is view and view.nccl == "NCCL_ALGO=ring" and len(calls) == 1


async def test_text_changed_while_checking_is_checked_on_the_next_enter(app_factory, monkeypatch):
    """The text edited while its check runs: that check's answer neither closes the
    prompt nor refuses the new text; the next enter checks and takes the new text."""
    from fabricui.services import collective

    release, calls = slowed(monkeypatch, collective, "check_view_nccl")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        modal = await ask_nccl(pilot, "NCCL_ALGO=ring")
        await pilot.pause()
        await press_queued(pilot, "backspace", "backspace", "backspace", "backspace", *"tree")
        release.set()
        await settle(pilot)
        assert app.screen is modal and not modal.is_checking and said(modal) == ""
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is view and view.nccl == "NCCL_ALGO=tree" and len(calls) == 2


async def test_a_slow_command_line_check_leaves_the_screen_free(app_factory, monkeypatch):
    """``:nodes 8`` whose check (the node count as loading would take it) takes long: the
    command line says "checking...", a timer ticks; then the topology is rebuilt."""
    from fabricui.services import session

    release, calls = slowed(monkeypatch, session, "check_request")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("colon")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PromptModal)
        await press_queued(pilot, *"nodes 8")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is modal and said(modal) == checking() and len(calls) == 1
        ticks: list[int] = []
        timer = app.set_interval(0.01, lambda: ticks.append(1))
        await pilot.pause(0.2)
        timer.stop()
        assert len(ticks) >= 5 and modal.is_checking
        release.set()
        await settle(pilot)
        assert app.screen is not modal and app.data.fabric.nodes == 8


async def test_a_slow_measured_output_is_read_once_off_the_event_loop(app_factory, monkeypatch):
    """``m`` and a path whose reading takes long: "checking..." meanwhile, then the run
    beside the prediction, read once (the view takes the run the check read)."""
    from fabricui.services import collective

    release, calls = slowed(monkeypatch, collective, "measured_run")
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, MeasuredModal)
        modal.query_one("#measured-path", Input).value = RUN
        await pilot.press("enter")
        await pilot.pause()
        error = modal.query_one("#measured-error", Label)
        assert app.screen is modal and str(error.render()) == checking()
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is view and view.measured is None
        release.set()
        await settle(pilot)
        assert view.measured is None
        await pilot.press("m")
        await pilot.pause()
        app.screen.query_one("#measured-path", Input).value = RUN
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is view and view.measured is not None and len(calls) == 2


def test_a_check_that_raises_answers_in_one_line(caplog):
    """A ``FabricError`` a check raises is its message; any other error is one line (and
    logged), never a traceback on the screen."""

    def refuses(text: str) -> str | None:
        raise ConfigError(f"no {text}")

    def breaks(text: str) -> str | None:
        raise KeyError(text)

    assert start_check(refuses, "x").result(5) == "no x"
    assert start_check(breaks, "x").result(5) == "cannot check it: KeyError: 'x'"
    assert "prompt check of 'x' failed" in caplog.text
    assert start_check(lambda text: None, "x").result(5) is None


async def test_a_quick_check_answers_in_the_same_key_press(app_factory, monkeypatch):
    """A check answering within ``CHECK_WAIT_S`` never says "checking...": its answer
    comes with the key, as a check run on the event loop answers."""
    import time

    from fabricui.tui.screens import topology

    real = topology.check_size

    def check_size(text: str) -> str | None:
        time.sleep(0.2)
        return real(text)

    monkeypatch.setattr(topology, "check_size", check_size)
    monkeypatch.setattr(checked, "CHECK_WAIT_S", 30.0)
    shown: list[str] = []
    monkeypatch.setattr(PromptModal, "show_checking", lambda self, line: shown.append(line))
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        modal = app.screen
        modal.query_one("#prompt-input", Input).value = "2P"
        await pilot.press("enter")
        assert said(modal) == "size 2P: a message size from 1 byte to 1 PiB" and not shown
        assert not modal.is_checking
