"""Property tests: the shared hypothesis profile and a plugin-free, isolated environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _property import PROFILE
from hypothesis import settings

settings.load_profile(os.environ.get("FABRICUI_HYPOTHESIS_PROFILE", PROFILE))


@pytest.fixture(scope="session", autouse=True)
def no_user_plugins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Built-in plugins only (no user config dir, no external plugins), a fresh host."""
    from fabricui.plugins import get_host

    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(Path(home) / "config"))
        mp.setenv("FABRICUI_LOAD_PLUGINS", "")
        for name in ("FABRICUI_PLUGINS_DIR", "FABRICUI_DISABLE_PLUGINS", "FABRICUI_STRICT_PLUGINS"):
            mp.delenv(name, raising=False)
        get_host.cache_clear()
        yield
    get_host.cache_clear()
