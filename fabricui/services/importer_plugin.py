"""Whether the built-in importers plugin is loaded, for messages about a missing format
(``import`` and ``--health`` both ask; a module of its own keeps them free of a cycle)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricui.plugins import ENV_DISABLE, get_host

if TYPE_CHECKING:
    from fabricui.plugins import PluginHost

#: The built-in plugin that registers every built-in format (its entry-point name).
BUILTIN_IMPORTERS = "importers"


def importers_missing(host: PluginHost | None = None) -> str | None:
    """Why the built-in formats are not there (the plugin that brings them is disabled or
    failed to load), or None when it is loaded: an empty list of valid formats alone does
    not tell a user to look at the plugins."""
    for entry in (host or get_host()).describe():
        if entry["name"] == BUILTIN_IMPORTERS:
            if entry["status"] == "blocked":
                return f"the built-in importers plugin is disabled by {ENV_DISABLE}"
            if entry["status"] == "failed":
                return f"the built-in importers plugin failed to load ({entry['error']})"
            return None
    return "the built-in importers plugin is not loaded"
