"""Progress of long work: the bar's text, drawn only on a terminal after a delay, erased at
the end (also on ctrl+c), and the phases a service reports."""

from __future__ import annotations

import io
import time

import pytest

from fabricui.render import progress
from fabricui.render.progress import TerminalProgress, bar_line, terminal_progress
from fabricui.services.command_requests import CollectiveRequest, TrafficRequest
from fabricui.services.progress import NO_PROGRESS
from fabricui.services.requests import TopologyRequest


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Recorder:
    """Records the phases a service reports."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def phase(self, name: str) -> None:
        self.names.append(name)


def test_bar_line_fills_by_phases_done():
    """Two of four phases done fill half the bar; the time has one decimal."""
    line = bar_line("traffic", 2, 4, "routing", 3.14159)
    assert line == "traffic [######------] 2/4 routing 3.1 s"
    assert bar_line("x", 0, 0, "p", 0).startswith("x [------------] 0/0")


def test_nothing_is_drawn_for_quick_work(monkeypatch):
    """Work that ends before the delay leaves the terminal untouched."""
    monkeypatch.setattr(progress, "DELAY_S", 5.0)
    stream = FakeTerminal()
    with TerminalProgress("quick", 2, stream) as bar:
        bar.phase("one")
    assert stream.getvalue() == ""


def test_long_work_is_drawn_then_erased(monkeypatch):
    """The line appears (carriage returns, no escape sequences) and is blanked at the end."""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "REDRAW_S", 0.01)
    stream = FakeTerminal()
    with TerminalProgress("traffic", 2, stream) as bar:
        bar.phase("building")
        bar.phase("routing 12 flows")
        time.sleep(0.1)
    text = stream.getvalue()
    assert "traffic [######------] 1/2 routing 12 flows" in text
    assert "\x1b" not in text
    last_drawn = text.split("\r")[-4]
    assert text.endswith("\r" + " " * len(last_drawn) + "\r") and last_drawn.strip()


def test_erased_on_ctrl_c(monkeypatch):
    """A KeyboardInterrupt inside the work still blanks the line and passes through."""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "REDRAW_S", 0.01)
    stream = FakeTerminal()
    with pytest.raises(KeyboardInterrupt), TerminalProgress("t", 1, stream):
        time.sleep(0.05)
        raise KeyboardInterrupt
    assert stream.getvalue().endswith(" \r")


def test_json_and_pipes_get_no_progress(monkeypatch):
    """``--json`` (quiet) or a standard error that is not a terminal: the no-op reporter."""
    monkeypatch.setattr("sys.stderr", FakeTerminal())
    assert terminal_progress("t", 1, quiet=True) is NO_PROGRESS
    assert isinstance(terminal_progress("t", 1), TerminalProgress)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert terminal_progress("t", 1) is NO_PROGRESS


def test_services_report_their_phases(catalog):
    """traffic and collective report as many phases as they announce."""
    from fabricui.services.collective import COLLECTIVE_PHASES, predict_collective
    from fabricui.services.traffic import TRAFFIC_PHASES, simulate

    recorder = Recorder()
    simulate(TrafficRequest(TopologyRequest("dgx-h100-pod")), catalog, progress=recorder)
    assert len(recorder.names) == TRAFFIC_PHASES
    assert any("flows" in name for name in recorder.names)
    recorder = Recorder()
    request = CollectiveRequest(TopologyRequest("dgx-h100-pod"), "all_reduce", (1 << 20,))
    predict_collective(request, catalog, progress=recorder)
    assert len(recorder.names) == COLLECTIVE_PHASES
