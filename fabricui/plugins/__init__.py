"""The plugin host and what surrounds it: loading and listing (``host``), the rules a
contribution must pass (``checks``), single-file plugins and trusted directories (``files``),
time budgets and call-time guards (``guards``), and the package scaffold (``scaffold``)."""

from __future__ import annotations

from fabricui.plugins.files import unsafe_reason
from fabricui.plugins.host import (
    ENV_DISABLE,
    ENV_LOAD,
    ENV_PLUGINS_DIR,
    ENV_STRICT,
    ENV_TIMEOUT,
    ENV_TRACE,
    KINDS,
    PluginFailure,
    PluginHost,
    PluginInfo,
    PluginTimeout,
    get_host,
)

__all__ = [
    "ENV_DISABLE",
    "ENV_LOAD",
    "ENV_PLUGINS_DIR",
    "ENV_STRICT",
    "ENV_TIMEOUT",
    "ENV_TRACE",
    "KINDS",
    "PluginFailure",
    "PluginHost",
    "PluginInfo",
    "PluginTimeout",
    "get_host",
    "unsafe_reason",
]
