"""What the plugin host records of each plugin (found, loaded or failed), and what its
call-time guards need of the host, as types both import (no module imports the host back)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that was skipped, as a whole or for one hook, and why."""

    name: str
    """Plugin name (entry-point name, file stem, or the name it was registered under)."""
    dist: str | None
    """Distribution that declared it, when it came from an entry point."""
    version: str | None
    """Version of that distribution (or the file plugin's ``__version__``)."""
    error: str
    """One line: what went wrong."""


@dataclass(eq=False)
class PluginInfo:
    """What the host knows about one plugin it found."""

    name: str
    """Plugin name (unique among registered plugins)."""
    source: str
    """``builtin``, ``entry point``, ``file`` or ``registered`` (in-process)."""
    dist: str | None = None
    """Distribution that declared it, for entry points."""
    version: str | None = None
    """Distribution version, or a file plugin's ``__version__``."""
    plugin: object | None = None
    """The registered plugin object (None when it failed to load or is blocked)."""
    blocked: bool = False
    load_error: str | None = None
    """Why it was not loaded (import, registration or hookspec validation)."""
    hook_errors: list[str] = field(default_factory=list)
    """Why some of its hooks' contributions were dropped (``register_x: error``)."""
    call_errors: list[str] = field(default_factory=list)
    """Why contributions were skipped when called (``strategy 'x': operations: error``)."""
    origin: str | None = None
    """Where it was found, for messages: a plugin file's path, or ``entry point NAME =
    MODULE`` (None for in-process plugins)."""
    module: str | None = None
    """The module an entry point names: where a plugin that is not loaded keeps its hwdb
    records (found without importing it)."""

    @property
    def errors(self) -> list[str]:
        """Every error recorded for this plugin."""
        load = [self.load_error] if self.load_error else []
        return load + self.hook_errors + self.call_errors


class CallRecorder(Protocol):
    """What a call-time guard needs of the plugin host."""

    timeout_s: float | None
    """Time budget of one guarded call [s] (None: no budget)."""

    def _record_call_failure(self, info: PluginInfo, what: str, exc: BaseException) -> None:
        """Record that ``info``'s contribution failed when called."""
