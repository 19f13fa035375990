"""plugins/examples/fabricui-powersgd, pip-installed into a fresh virtual environment: listed,
priced by ``fabricui plan``, and its own tests pass against the installed packages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "plugins" / "examples" / "fabricui-powersgd"


def test_powersgd_example_is_listed_priced_and_tested(installed_venv):
    """Status ok with both strategies; ``plan --dp-strategy powersgd`` prices P, Q and the rest."""
    installed_venv.pip_install(f"{EXAMPLE}[test]")
    try:
        listed = json.loads(installed_venv.run("fabricui", "plugins", "--json").stdout)
        row = {r["name"]: r for r in listed["plugins"]}["powersgd"]
        assert row["status"] == "ok", row["error"]
        assert row["source"] == "entry point" and row["dist"] == "fabricui-powersgd"
        assert row["contributes"] == {"strategies": ["powersgd", "powersgd-r4"]}

        argv = ("plan", "-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--pp", "2")
        plan = json.loads(
            installed_venv.run("fabricui", *argv, "--dp-strategy", "powersgd", "--json").stdout
        )
        ops = [op for op in plan["operations"] if op["strategy"] == "powersgd"]
        assert [op["note"].split(" (")[0] for op in ops] == [
            "PowerSGD P",
            "PowerSGD Q",
            "uncompressed: norm weights and matrices not worth compressing",
        ]
        assert all(op["group"] == "dp" and op["group_size"] == 2 for op in ops)
        assert all(op["call_us"] > 0 and op["algorithm"] != "-" for op in ops)
        assert "ddp" not in plan["strategies"] and "powersgd" in plan["strategies"]
        text = installed_venv.run("fabricui", *argv, "--dp-strategy", "powersgd-r4").stdout
        assert "PowerSGD P (rank 4)" in text

        # Its own tests, copied out of the checkout so they import the installed package.
        tests = installed_venv.workdir / "powersgd-tests"
        shutil.copytree(EXAMPLE / "tests", tests, dirs_exist_ok=True)
        # The pytest script, not python -m: the working directory stays off sys.path.
        result = installed_venv.run("pytest", "-q", "-p", "no:cacheprovider", tests.name)
        assert "9 passed" in result.stdout, result.stdout
    finally:
        installed_venv.pip("uninstall", "-y", "--quiet", "fabricui-powersgd")
