"""TUI fixtures: one plugin host and catalog per session, an app factory, a settle helper."""

from __future__ import annotations

import pytest

from fabricui.plugins import PluginHost
from fabricui.services.session import load_catalog_with_plugins
from fabricui.tui.app import FabricApp, make_app


@pytest.fixture(scope="session")
def tui_host() -> PluginHost:
    """Built-in plugins only (no third-party entry points or plugin directories).

    The built-ins carry fabricui's own version; it is fixed here so that the plugins view's
    snapshots do not change with every release."""
    from fabricui.plugins.host import SOURCE_BUILTIN

    host = PluginHost(load_external=False)
    for info in host._infos:
        if info.source == SOURCE_BUILTIN:
            info.version = "X.Y.Z"
    return host


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
