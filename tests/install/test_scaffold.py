"""``fabricui plugins new`` from the installed wheel: the scaffold installs, loads and passes its
own tests in a fresh virtual environment, outside the checkout."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

NAME = "acme-link"


def test_scaffolded_plugin_installs_loads_and_passes_its_tests(installed_venv):
    """Scaffold, pip install (with pytest), listed with status ok, its tests pass."""
    work = installed_venv.workdir / "scaffold"
    work.mkdir()
    out = installed_venv.run("fabricui", "plugins", "new", NAME, "--dir", str(work)).stdout
    target = work / f"fabricui-{NAME}"
    assert out.startswith(f"created {target.as_posix()}/")
    again = installed_venv.run("fabricui", "plugins", "new", NAME, "--dir", str(work), check=False)
    assert again.returncode == 2 and "already exists" in again.stderr

    installed_venv.pip_install(f"{target}[test]")
    try:
        listed = json.loads(installed_venv.run("fabricui", "plugins", "--json").stdout)
        row = {r["name"]: r for r in listed["plugins"]}[NAME]
        assert row["status"] == "ok", row["error"]
        assert (row["source"], row["dist"], row["version"]) == (
            "entry point",
            f"fabricui-{NAME}",
            "0.1.0",
        )
        assert row["contributes"]["strategies"] == [f"{NAME}-grad-norm"]

        # The pytest script, not python -m, so the package is imported from the install.
        tests = installed_venv.run("pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=target)
        assert "4 passed" in tests.stdout, tests.stdout
    finally:
        installed_venv.pip("uninstall", "-y", "--quiet", f"fabricui-{NAME}")
