"""``fabricui serve`` against pages of other sites and greedy clients: a raw websocket
client (aiohttp) talks to the guarded textual-serve app in this process, whose sessions
run a stand-in explorer that reports the terminal size it was given (milliseconds, no
Textual start). The real server in a real browser is tests/browser/."""

from __future__ import annotations

import asyncio
import json
import shlex
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")

from aiohttp.test_utils import TestServer  # noqa: E402

from fabricui.services.serve_access import ServeAccess  # noqa: E402
from fabricui.tui.serve_guard import SessionLimits, guarded_server_class  # noqa: E402

TOKEN = "0123456789abcdef" * 3
FOREIGN = "http://evil.example"

#: A stand-in for ``fabricui explore`` under textual-serve: the prelude, then one data
#: packet per terminal size it is given (at start from the environment, then per resize).
FAKE_EXPLORER = r"""
import json, os, sys
out, inp = sys.stdout.buffer, sys.stdin.buffer
def packet(kind, payload):
    out.write(kind + len(payload).to_bytes(4, "big") + payload)
    out.flush()
out.write(b"__GANGLION__\n")
packet(b"D", f"size {os.environ['COLUMNS']}x{os.environ['ROWS']}".encode())
while kind := inp.read(1):
    payload = inp.read(int.from_bytes(inp.read(4), "big"))
    meta = json.loads(payload) if kind == b"M" else {}
    if meta.get("type") == "resize":
        packet(b"D", f"size {meta['width']}x{meta['height']}".encode())
    elif meta.get("type") == "quit":
        break
"""


class Served:
    """A guarded server on a loopback port, and how to reach it."""

    def __init__(self, server: TestServer, port: int) -> None:
        self.server = server
        self.base = f"http://127.0.0.1:{port}"
        # unsafe: keep cookies of an IP address, as browsers do
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))

    def ws(self, query: str = f"token={TOKEN}", origin: str | None = None, **headers: str):
        """Open ``/ws?QUERY`` with the served origin unless told otherwise."""
        headers["Origin"] = origin or self.base
        return self.http.ws_connect(f"{self.base}/ws?{query}", headers=headers)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """The guarded app with a 100x30 terminal cap and one session at a time."""
    script = tmp_path / "explorer.py"
    script.write_text(FAKE_EXPLORER)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = guarded_server_class()(
        shlex.join([sys.executable, str(script)]),
        host="127.0.0.1",
        port=port,
        public_url=url,
        access=ServeAccess.of(url, ("127.0.0.1", port), ("https://proxy.example",), TOKEN),
        limits=SessionLimits(max_sessions=1, max_columns=100, max_rows=30),
    )
    test_server = TestServer(await server._make_app(), host="127.0.0.1", port=port)
    await test_server.start_server()
    served = Served(test_server, port)
    try:
        yield served
    finally:
        await served.http.close()
        await test_server.close()


async def refused(connecting) -> tuple[int, str]:
    """The status and one-line body of a refused websocket handshake."""
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        async with connecting:
            pass
    return caught.value.status, caught.value.message


async def test_a_foreign_origin_cannot_open_a_session(served: Served):
    """The issue's attack: another site's page opens /ws (even knowing the token): 403."""
    status, _ = await refused(served.ws(origin=FOREIGN))
    assert status == 403
    async with served.http.get(
        f"{served.base}/?token={TOKEN}", headers={"Origin": FOREIGN}
    ) as response:
        assert response.status == 403
        body = await response.text()
    assert body == (
        f"fabricui serve: pages from {FOREIGN} may not use this server "
        "(fabricui serve --allow-origin adds an origin)\n"
    )


async def test_an_allowed_origin_may(served: Served):
    """``--allow-origin https://proxy.example``: its pages may open a session."""
    async with served.ws(origin="https://proxy.example") as ws:
        assert (await ws.receive(timeout=10)).data == b"size 80x24"


async def test_every_request_needs_the_token(served: Served):
    """No token: the page, a static file and the websocket are refused in one line."""
    for path in ("/", "/static/js/textual.js", "/download/x"):
        async with served.http.get(served.base + path) as response:
            assert response.status == 403
            assert (await response.text()).count("\n") == 1
    assert (await refused(served.ws(query="width=80&height=24")))[0] == 403
    assert (await refused(served.ws(query="token=wrong")))[0] == 403


async def test_the_token_url_sets_a_cookie_the_page_then_uses(served: Served):
    """The printed URL opens the page and leaves an HttpOnly, SameSite=Strict cookie that
    its scripts and websocket carry."""
    async with served.http.get(f"{served.base}/?token={TOKEN}") as response:
        assert response.status == 200
        cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    async with served.http.get(f"{served.base}/static/js/textual.js") as response:
        assert response.status == 200
    async with served.ws(query="width=80&height=24") as ws:
        assert (await ws.receive(timeout=10)).data == b"size 80x24"


async def test_another_host_name_is_refused(served: Served):
    """DNS rebinding (another site's name resolving to 127.0.0.1): refused by Host."""
    async with served.http.get(
        f"{served.base}/?token={TOKEN}", headers={"Host": "evil.example:80"}
    ) as response:
        assert response.status == 403
        assert "not 'evil.example:80'" in await response.text()


@pytest.mark.parametrize("path", ["/static", "/static/", "/static/css", "/static/css/"])
async def test_static_directories_are_not_listed(served: Served, path: str):
    """Files under /static/ are served; their directories are not listed."""
    async with served.http.get(f"{served.base}{path}?token={TOKEN}") as response:
        assert response.status == 404
        assert "xterm" not in await response.text()


async def test_terminal_size_is_capped(served: Served):
    """``/ws?width=10000&height=10000`` and a huge resize run at the cap (100x30)."""
    async with served.ws(query=f"token={TOKEN}&width=10000&height=10000") as ws:
        assert (await ws.receive(timeout=10)).data == b"size 100x30"
        await ws.send_str(json.dumps(["resize", {"width": 99999, "height": 12}]))
        assert (await ws.receive(timeout=10)).data == b"size 100x12"
        await ws.send_str(json.dumps(["resize", {"width": "wide", "height": -5}]))
        assert (await ws.receive(timeout=10)).data == b"size 1x1"


async def test_sessions_are_capped_with_one_line(served: Served):
    """One session at a time: a second gets one line on its terminal and is closed; once
    the first ends, a new one runs."""
    async with served.ws() as first:
        assert (await first.receive(timeout=10)).data == b"size 80x24"
        async with served.ws() as second:
            line = (await second.receive(timeout=10)).data
            assert line == (
                b"fabricui serve: 1 session already open (--max-sessions 1); "
                b"close a tab and reload this one\r\n"
            )
    # The first session ends once its explorer has quit, a moment after its socket.
    for _ in range(100):
        async with served.ws() as third:
            if (await third.receive(timeout=10)).data == b"size 80x24":
                return
        await asyncio.sleep(0.05)
    pytest.fail("the session slot was never freed")
