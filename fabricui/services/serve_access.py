"""Who may use a served explorer: the per-run token, and the origins and host names the
server answers to. Pure checks over a request's headers, so that the web server
(``fabricui.tui.serve``) only asks and answers.

Why each check: a page on another site can open a websocket to any address the browser
reaches, loopback included, and browsers do not apply the same-origin policy to websockets;
the ``Origin`` header they always send is how the server tells its own page from another
site's. The ``Host`` header stops DNS rebinding (another site's name pointed at 127.0.0.1).
The token stops everyone else who can reach the port: other users of a shared login node,
or the network when bound beyond loopback (Jupyter's answer to the same problem).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from fabricui.errors import ConfigError

#: Ports a URL leaves out, by scheme.
DEFAULT_PORTS = {"http": 80, "https": 443}
#: Query parameter carrying the token (as Jupyter's ``?token=``).
TOKEN_PARAMETER = "token"
#: Host names that always mean this machine.
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
#: The names a browser on this machine (or at the near end of an SSH tunnel) may give a
#: server bound to loopback, each accepted wherever another of them is.
LOOPBACK_ALIASES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1 or localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh random token for one run of the server (192 bits, hex)."""
    return secrets.token_hex(24)


def normalize_origin(text: str, what: str = "--allow-origin") -> str:
    """An origin as browsers send it: ``scheme://host[:port]``, lower case, default port
    left out.

    Args:
        text: ``http://host``, ``https://host:8443`` (a trailing ``/`` is accepted).
        what: Where it came from (for the error).

    Raises:
        ConfigError: Not an http(s) origin, or with a path, query or user name.
    """
    parts = urlsplit(text.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme not in DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
        or port == -1
    ):
        raise ConfigError(
            f"{what} {text!r} is not an origin: use scheme://host[:port] such as "
            "https://proxy.example.org"
        )
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


def host_of(origin: str) -> str:
    """The ``Host`` header a browser sends to ``origin`` (``host[:port]``)."""
    return origin.split("://", 1)[1]


@dataclass(frozen=True)
class ServeAccess:
    """What a request must show to reach the server.

    Build it with ``ServeAccess.of``; ask ``refusal`` for each request.
    """

    token: str | None
    """The per-run token every request carries, or None when not required (loopback with
    ``--no-token``)."""
    origins: frozenset[str]
    """Origins whose pages may use the server (normalized)."""
    hosts: frozenset[str]
    """``Host`` headers the server answers to (lower case)."""
    aliases: frozenset[str] = frozenset()
    """Further ``Host`` headers it answers to when bound to loopback: the other loopback
    names of a loopback host in ``hosts`` (``localhost:8000`` for ``127.0.0.1:8000``).
    Only loopback names: every other name stays refused (DNS rebinding)."""
    alias_origins: frozenset[str] = frozenset()
    """Further origins whose pages may use it when bound to loopback, by the same rule."""

    @classmethod
    def of(
        cls,
        served_url: str,
        bind: tuple[str, int],
        allowed_origins: tuple[str, ...] = (),
        token: str | None = None,
    ) -> ServeAccess:
        """The access rules of a server reached at ``served_url``.

        Args:
            served_url: The base URL its page points browsers at.
            bind: Address and port it listens on (a proxy may pass those as ``Host``).
            allowed_origins: Other origins the user allowed (``--allow-origin``).
            token: The run's token, or None for none.
        """
        origins = {normalize_origin(served_url, "the served URL")}
        origins.update(normalize_origin(o) for o in allowed_origins)
        address, port = bind
        if ":" in address:
            address = f"[{address}]"
        hosts = {host_of(o) for o in origins} | {f"{address}:{port}".lower()}
        aliases: set[str] = set()
        alias_origins: set[str] = set()
        if is_loopback(bind[0]):
            aliases = {alias for h in hosts for alias in _loopback_aliases(h)} - hosts
            alias_origins = {a for o in origins for a in _loopback_aliases(o)} - origins
        return cls(
            token=token,
            origins=frozenset(origins),
            hosts=frozenset(hosts),
            aliases=frozenset(aliases),
            alias_origins=frozenset(alias_origins),
        )

    @property
    def cookie_name(self) -> str:
        """The cookie that carries the token after the first page: named after the token,
        so that two servers on one host (other ports, other tunnels) keep theirs apart."""
        digest = hashlib.sha256((self.token or "").encode()).hexdigest()[:12]
        return f"fabricui-{digest}"

    def refusal(
        self,
        host: str | None,
        origin: str | None,
        tokens: tuple[str | None, ...],
    ) -> str | None:
        """Why a request is refused, in one line, or None when it may pass.

        Args:
            host: Its ``Host`` header.
            origin: Its ``Origin`` header (None: not sent, as for a typed URL).
            tokens: Tokens it carries (query parameter, cookie, ``Authorization``).
        """
        if (host or "").strip().lower() not in self.hosts | self.aliases:
            return (
                f"this server answers to {', '.join(sorted(self.hosts))}, not "
                f"{host!r} (a proxy's host name is added with fabricui serve --public-url or "
                "--allow-origin, as part of its URL)"
            )
        if origin is not None and origin != "null":
            with contextlib.suppress(ConfigError):  # not an origin: compared as sent
                origin = normalize_origin(origin, "Origin")
        if origin is not None and origin not in self.origins | self.alias_origins:
            return (
                f"pages from {origin} may not use this server "
                "(fabricui serve --allow-origin adds an origin)"
            )
        if self.token is not None and not any(
            t is not None and hmac.compare_digest(t.encode(), self.token.encode()) for t in tokens
        ):
            return "a token is needed: open the URL with ?token= that fabricui serve printed"
        return None


def _loopback_aliases(address: str) -> list[str]:
    """``address`` (``[scheme://]host[:port]``) under each loopback name when its host is
    a loopback one, else nothing."""
    scheme, _, rest = address.rpartition("://")
    host, port = rest, ""
    if rest.startswith("["):  # [IPv6]:port
        host, _, port = rest[1:].partition("]")
    elif rest.count(":") == 1:
        host, port = rest.split(":")
        port = f":{port}"
    if not is_loopback(host):
        return []
    prefix = f"{scheme}://" if scheme else ""
    return [f"{prefix}{name}{port}" for name in LOOPBACK_ALIASES]
