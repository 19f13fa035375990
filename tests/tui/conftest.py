"""TUI fixtures: one plugin host and catalog per session, an app factory, a settle helper."""

from __future__ import annotations

import pytest

from fabricui.plugins import PluginHost
from fabricui.services.session import load_catalog_with_plugins
from fabricui.tui.app import FabricApp, make_app


@pytest.fixture(scope="session")
def tui_host() -> PluginHost:
    """Built-in plugins only (no third-party entry points or plugin directories)."""
    return PluginHost(load_external=False)


@pytest.fixture(scope="session")
def tui_catalog(tui_host):
    """The built-in database with the built-in plugins' records."""
    return load_catalog_with_plugins(host=tui_host)


@pytest.fixture
def app_factory(tui_host, tui_catalog):
    """``app_factory(topology=..., view=...)`` -> a FabricApp on the fixed catalog."""

    def build(**kwargs) -> FabricApp:
        kwargs.setdefault("catalog", tui_catalog)
        kwargs.setdefault("host", tui_host)
        return make_app(**kwargs)

    return build
