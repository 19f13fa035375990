"""``fabricui serve``: options, the explorer command each browser session runs, and the
checks made before anything listens (the real browser test is tests/browser/)."""

from __future__ import annotations

import shlex
import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fabricui.cli import build_parser
from fabricui.commands.explore import launch_request
from fabricui.commands.serve import launch_actions, serve_request
from fabricui.errors import ConfigError
from fabricui.services.command_requests import ServeRequest
from fabricui.tui import launch as tui_launch
from fabricui.tui import serve as tui_serve
from fabricui.tui.serve_guard import SessionLimits

DATA = Path(__file__).parents[1] / "data"


class FakeServer:
    """Stands in for textual-serve's ``Server``: records what it was given, serves nothing."""

    made: list[FakeServer] = []

    def __init__(self, command: str, **options: Any) -> None:
        self.command = command
        self.options = options
        self.served = False
        FakeServer.made.append(self)

    def serve(self) -> None:
        self.served = True


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> type[FakeServer]:
    """textual-serve replaced by ``FakeServer`` (whether or not it is installed)."""
    FakeServer.made = []
    monkeypatch.setattr(tui_serve, "_server_class", lambda: FakeServer)
    return FakeServer


def request_of(*argv: str) -> ServeRequest:
    return serve_request(build_parser().parse_args(list(argv)))


def test_defaults_bind_to_loopback_port_8000():
    """Without options: 127.0.0.1:8000, and each session runs plain ``explore``."""
    request = request_of("serve")
    assert (request.host, request.port, request.public_url) == ("127.0.0.1", 8000, None)
    assert request.explore_args == ("explore",)
    assert request.launch.is_default()


def test_explore_args_carry_every_launch_option(monkeypatch: pytest.MonkeyPatch):
    """The explorer gets the same launch options, file paths made absolute."""
    monkeypatch.chdir(DATA.parent)
    topology = "data/hwdb/mini/topologies/pod.yaml"  # relative to tests/
    argv = [
        "--hwdb",
        "data/hwdb/mini",
        "serve",
        "-t",
        topology,
        "--nodes",
        "2",
        "--nic-gbps",
        "200",
        "--scale-up-links",
        "9",
        "--src",
        "n0.g0",
        "--dst",
        "n1.g1",
        "--size",
        "64K",
        "--view",
        "pyramid",
        "--hosts",
        "gpu[01-02]",
        "--health",
        "data/health/infiniband/ibstat_cx3_mlx4_port1_ib_down_polling_port2_eth_disabled.txt",
        "--jobs",
        "data/health/slurm/squeue_schedmd_quickstart_doc_adev_running_pending_resources.txt",
        "--ascii",
        "--port",
        "8123",
    ]
    request = request_of(*argv)
    args = list(request.explore_args)
    assert args[:3] == ["--hwdb", str((DATA / "hwdb" / "mini").resolve()), "explore"]
    assert args[args.index("--topology") + 1] == str(Path(topology).resolve())
    # Parsed again, the explorer's own options ask for exactly what serve was asked.
    again = build_parser().parse_args(args)
    assert again.command == "explore"
    health = tuple(str(Path(h).resolve()) for h in request.launch.topology.health)
    absolute = replace(
        request.launch.topology, topology=str(Path(topology).resolve()), health=health
    )
    jobs = str(Path(dict(request.launch.options)["jobs"]).resolve())
    options = tuple((k, jobs if k == "jobs" else v) for k, v in request.launch.options)
    assert launch_request(again) == replace(request.launch, topology=absolute, options=options)
    assert request.launch.message_size == 64 * 1024 and request.launch.view == "pyramid"
    assert request.launch.ascii is True and "--ascii" in args
    # Every option the explorer takes was given above, so none can be dropped unnoticed.
    parsed = build_parser().parse_args(argv)
    missing = [a.dest for a in launch_actions() if getattr(parsed, a.dest, None) in (None, False)]
    assert not missing, f"launch options this test does not give: {missing}"


def test_options_before_the_command_pass_through():
    """``fabricui -t X serve`` serves X, as ``fabricui -t X explore`` would open it."""
    request = request_of("-t", "h100-ib-cluster", "--src", "n0.g0", "serve")
    assert request.explore_args == ("explore", "--topology", "h100-ib-cluster", "--src", "n0.g0")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "0"], "--port must be within 1..65535 (got 0)"),
        (["--port", "70000"], "--port must be within 1..65535"),
        (["--port", "http"], "invalid int value"),
        (["--host", " "], "--host must name an address"),
        (["--public-url", "example.org"], "--public-url must start with http://"),
        (["--view", "nope"], "unknown view 'nope'"),
        (["--size", "12XB"], "invalid size '12XB'"),
    ],
)
def test_bad_options_are_one_line(run_cli, fake_server, argv, message):
    """A bad option: one line on stderr, exit status 2, nothing served."""
    status, out, err = run_cli("serve", *argv)
    assert status == 2 and out == ""
    assert err.startswith("fabricui: error: ") and message in err
    assert err.count("\n") == 1
    assert fake_server.made == []


def test_launch_typos_fail_before_listening(run_cli, fake_server):
    """An unknown GPU is reported before the server starts, not in every browser tab."""
    status, _, err = run_cli("serve", "--src", "n9.g0", "--dst", "n0.g1")
    assert status == 2 and "no GPU n9.g0 in dgx-h100-pod" in err
    assert err.count("\n") == 1
    assert fake_server.made == []


def test_missing_textual_serve_names_the_extra(run_cli, monkeypatch):
    """Without textual-serve: one line naming ``fabricui[serve]``, exit status 2."""
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    status, out, err = run_cli("serve")
    assert status == 2 and out == ""
    assert err.startswith("fabricui: error: fabricui serve needs the serve extra")
    assert "pip install 'fabricui[serve]'" in err and err.count("\n") == 1


def test_server_runs_this_fabricui_explore(run_cli, fake_server):
    """The server runs ``python -m fabricui explore ...`` of this interpreter, on loopback,
    without a warning."""
    pair = ("-t", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7")
    port = free_port()
    status, _, err = run_cli("serve", "--port", str(port), *pair)
    assert status == 0 and err == ""
    (server,) = fake_server.made
    assert server.served
    assert shlex.split(server.command) == [
        sys.executable,
        "-m",
        "fabricui",
        "explore",
        "--topology",
        "dgx-h100-pod",
        "--src",
        "n0.g0",
        "--dst",
        "n3.g7",
    ]
    access = server.options.pop("access")
    assert server.options == {
        "host": "127.0.0.1",
        "port": port,
        "title": "fabricui",
        "public_url": f"http://127.0.0.1:{port}",
        "limits": SessionLimits(max_sessions=4, max_columns=500, max_rows=200),
    }
    assert len(access.token) == 48 and access.origins == {f"http://127.0.0.1:{port}"}
    assert access.hosts == {f"127.0.0.1:{port}"}


def test_serve_access_options(run_cli, fake_server):
    """--allow-origin, --max-sessions and --max-terminal reach the server; --no-token on
    loopback serves without a token; each run has a token of its own."""
    port = str(free_port())
    status, _, err = run_cli(
        "serve", "--port", port, "--allow-origin", "HTTPS://Proxy.example:443/",
        "--max-sessions", "2", "--max-terminal", "200x60",
    )  # fmt: skip
    assert status == 0 and err == ""
    assert run_cli("serve", "--port", port)[0] == 0
    assert run_cli("serve", "--port", port, "--no-token")[0] == 0
    first, second, untokened = fake_server.made
    assert first.options["access"].origins == {f"http://127.0.0.1:{port}", "https://proxy.example"}
    assert "proxy.example" in first.options["access"].hosts
    assert first.options["limits"] == SessionLimits(2, 200, 60)
    assert first.options["access"].token != second.options["access"].token
    assert untokened.options["access"].token is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--allow-origin", "evil.example"], "--allow-origin 'evil.example' is not an origin"),
        (["--allow-origin", "http://a.example/path"], "is not an origin"),
        (["--allow-origin", "ftp://a.example"], "is not an origin"),
        (["--host", "0.0.0.0", "--no-token"], "--no-token is for loopback only"),
        (["--max-sessions", "0"], "--max-sessions must be at least 1 (got 0)"),
        (["--max-terminal", "big"], "invalid --max-terminal 'big'"),
        (["--max-terminal", "5000x10"], "--max-terminal 5000x10 is out of range"),
    ],
)
def test_bad_access_options_are_one_line(run_cli, fake_server, argv, message):
    """A bad access option: one line, exit status 2, nothing served."""
    status, out, err = run_cli("serve", *argv)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("fabricui: error: ") and message in err
    assert fake_server.made == []


def test_other_hosts_warn_in_one_line(run_cli, fake_server):
    """``--host 0.0.0.0``: one warning line; the page points browsers at this machine's name."""
    port = free_port()
    status, out, err = run_cli("serve", "--host", "0.0.0.0", "--port", str(port))
    assert status == 0 and out == ""
    assert err.startswith(f"fabricui: warning: serving on 0.0.0.0:{port}, not loopback")
    assert err.count("\n") == 1
    (server,) = fake_server.made
    assert server.options["public_url"] == f"http://{socket.getfqdn()}:{port}"


def test_public_url_is_passed_as_given(run_cli, fake_server):
    """``--public-url`` (an SSH tunnel to another local port) is what the page uses."""
    status, _, _ = run_cli("serve", "--port", str(free_port()), "--public-url", "http://x:9/")
    assert status == 0
    assert fake_server.made[0].options["public_url"] == "http://x:9"


def test_a_taken_port_is_one_line(run_cli, fake_server):
    """A port another program listens on: one line naming it, exit status 2."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status, _, err = run_cli("serve", "--port", str(port))
    assert status == 2
    assert err == f"fabricui: error: cannot serve on 127.0.0.1:{port}: address already in use\n"
    assert fake_server.made == []


def test_an_unresolvable_host_is_one_line(run_cli, fake_server):
    """A host name that does not resolve (here: an empty label) is one line too."""
    status, _, err = run_cli("serve", "--host", "bad..name", "--port", str(free_port()))
    assert status == 2 and err.startswith("fabricui: error: cannot serve on bad..name:")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("login1.example.org", False),
    ],
)
def test_is_loopback(host, loopback):
    """Only 127.0.0.0/8, ::1 and localhost count as this machine only."""
    assert tui_serve.is_loopback(host) is loopback


def test_ipv6_public_url_is_bracketed():
    """An IPv6 literal is written in brackets in the URL."""
    assert tui_serve.public_url(ServeRequest(host="::1", port=8001)) == "http://[::1]:8001"


def test_web_driver_needs_no_terminal(monkeypatch):
    """Under textual-serve (Textual's web driver over pipes) the explorer starts without a
    terminal; anywhere else, pipes are refused."""
    monkeypatch.setattr(sys, "stdin", open(__file__, encoding="utf-8"))  # noqa: SIM115
    try:
        monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
        with pytest.raises(ConfigError, match="needs a terminal"):
            tui_launch.check_terminal()
        monkeypatch.setenv("TEXTUAL_DRIVER", tui_launch.WEB_DRIVER)
        tui_launch.check_terminal()
    finally:
        sys.stdin.close()


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
