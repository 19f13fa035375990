"""With the built-in importers plugin disabled, ``import`` and ``--health`` say so instead
of listing no valid format."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.plugins import get_host

SAMPLE = (
    Path(__file__).parents[1]
    / "data"
    / "fabric"
    / "nvidia_smi"
    / "a100_sxm4_8gpu_nvlink_status.txt"
)
DISABLED = "the built-in importers plugin is disabled by FABRICUI_DISABLE_PLUGINS"


@pytest.fixture
def importers_disabled(monkeypatch):
    """FABRICUI_DISABLE_PLUGINS=importers on a fresh process-wide host."""
    monkeypatch.setenv("FABRICUI_DISABLE_PLUGINS", "importers")
    get_host.cache_clear()
    yield
    monkeypatch.delenv("FABRICUI_DISABLE_PLUGINS")
    get_host.cache_clear()


@pytest.mark.parametrize(
    "argv",
    [("import", str(SAMPLE)), ("import", "nvidia-smi", str(SAMPLE)), ("import", "nvlink", "x")],
    ids=["detected", "named", "named-missing-file"],
)
def test_import_names_the_disabled_plugin(importers_disabled, run_cli, argv):
    """The reviewer's case: no '(valid: )', but the plugin and where to look."""
    status, out, err = run_cli(*argv)
    assert status == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and DISABLED in line and "fabricui plugins --all" in line
    assert "valid: )" not in line and "choose from )" not in line


def test_health_names_the_disabled_plugin(importers_disabled, run_cli):
    """``--health FILE`` has no importer either, and says why."""
    status, _, err = run_cli("path", "0", "1", "-t", "dgx-a100", "--health", str(SAMPLE))
    assert status == 2 and err.strip().endswith(f"no importer for this output ({DISABLED})")


def test_with_the_plugin_loaded_an_unknown_format_is_still_named(run_cli):
    """The plugin on: the usual list of formats, nothing about plugins."""
    from fabricui.errors import ConfigError
    from fabricui.services.importer_plugin import importers_missing
    from fabricui.services.importing import require_importer

    get_host.cache_clear()
    assert importers_missing() is None
    with pytest.raises(ConfigError, match=r"unknown import format 'nvidia-sm' \(nearest: "):
        require_importer("nvidia-sm")
