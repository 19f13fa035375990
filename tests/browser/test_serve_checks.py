"""``fabricui serve`` checks what every session would be given before it listens, and
answers a plain request of its websocket path in one line rather than dropping it."""

from __future__ import annotations

import shlex
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")

from aiohttp.test_utils import TestServer  # noqa: E402

from fabricui.services.serve_access import ServeAccess  # noqa: E402
from fabricui.tui import serve as tui_serve  # noqa: E402
from fabricui.tui.serve_guard import SessionLimits, guarded_server_class  # noqa: E402

TOKEN = "fedcba9876543210" * 3
SQUEUE = (
    Path(__file__).parents[1]
    / "data"
    / "health"
    / "slurm"
    / "squeue_schedmd_quickstart_doc_adev_running_pending_resources.txt"
)


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NeverServed:
    """Stands in for textual-serve's ``Server``: records that one was made."""

    made: list[Any] = []

    def __init__(self, command: str, **options: Any) -> None:
        NeverServed.made.append(self)

    def serve(self) -> None:
        """Serve nothing."""


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> type[NeverServed]:
    NeverServed.made = []
    monkeypatch.setattr(tui_serve, "_server_class", lambda: NeverServed)
    return NeverServed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--jobs", "nonexist.txt"], "nonexist.txt: no such file"),
        (["--jobs", "README.md"], "--jobs README.md: cannot tell which tool printed this"),
        (["--health", "nonexist"], "nonexist: no such file"),
    ],
)
def test_session_files_are_checked_before_listening(run_cli, fake_server, argv, message):
    """A --jobs file that is missing or no job listing is refused up front, as --health
    is: one line, exit status 2, no server made."""
    status, out, err = run_cli("serve", "--port", str(free_port()), *argv)
    assert status == 2 and out == ""
    assert message in err and err.count("\n") == 1
    assert fake_server.made == []


def test_a_job_listing_is_served(run_cli, fake_server):
    """A readable squeue output passes the check."""
    status, _, err = run_cli("serve", "--port", str(free_port()), "--jobs", str(SQUEUE))
    assert status == 0, err
    assert len(fake_server.made) == 1


@pytest.fixture
async def base_url() -> AsyncIterator[str]:
    """The guarded app on a loopback port (its sessions would run ``true``)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = guarded_server_class()(
        shlex.join([sys.executable, "-c", "pass"]),
        host="127.0.0.1",
        port=port,
        public_url=url,
        access=ServeAccess.of(url, ("127.0.0.1", port), (), TOKEN),
        limits=SessionLimits(max_sessions=1, max_columns=100, max_rows=30),
    )
    test_server = TestServer(await server._make_app(), host="127.0.0.1", port=port)
    await test_server.start_server()
    try:
        yield url
    finally:
        await test_server.close()


async def test_a_plain_get_of_the_websocket_is_400_in_one_line(base_url):
    """``GET /ws?token=VALID`` without Upgrade headers: 400 and one line, not an empty
    reply; without the token or from another origin it is still 403."""
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base_url}/ws?token={TOKEN}") as response:
            assert response.status == 400
            body = await response.text()
        assert body.count("\n") == 1 and body.startswith("fabricui serve: /ws is the page's")
        async with http.get(f"{base_url}/ws?token=wrong") as response:
            assert response.status == 403
        foreign = {"Origin": "http://evil.example"}
        async with http.get(f"{base_url}/ws?token={TOKEN}", headers=foreign) as response:
            assert response.status == 403
