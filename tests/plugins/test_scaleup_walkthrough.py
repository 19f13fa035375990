"""docs/plugins.md's scale-up walkthrough: a directory holding only YAML (FooLink 2.0 link,
switch, accelerator and a `fabric: switch` topology) gives `path`, `collective` and the
explorer a new scale-up fabric, its switch named by its record everywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fabricui.cli import main

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
FOOLINK = ROOT / "plugins" / "examples" / "foolink"


def walkthrough() -> str:
    match = re.search(
        r"^## A scale-up fabric in YAML, without code\n(.*?)(?=^## |\Z)", DOC, re.S | re.M
    )
    assert match, "docs/plugins.md has no scale-up walkthrough"
    return match.group(1)


def test_the_documented_files_are_the_example_directory():
    """Every YAML block of the walkthrough is a file of plugins/examples/foolink, verbatim,
    and the directory holds nothing but YAML and its README."""
    blocks = re.findall(r"```yaml\n# foolink/(\S+)\n(.*?)```", walkthrough(), re.S)
    assert {name for name, _ in blocks} == {
        "links.yaml",
        "switches.yaml",
        "gpus.yaml",
        "topologies/foolink-pod.yaml",
    }
    for name, text in blocks:
        assert (FOOLINK / name).read_text(encoding="utf-8") == text, name
    files = {p.relative_to(FOOLINK).as_posix() for p in FOOLINK.rglob("*") if p.is_file()}
    assert {f for f in files if not f.endswith(".yaml")} == {"README.md"}


def run(capsys, *args: str) -> dict:
    assert main(["--hwdb", str(FOOLINK), *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_path_over_the_new_switch(capsys):
    """n0.g0 -> n0.g7 crosses the FooLink switch: 8 links x 200 GB/s = 1.6 TB/s per
    direction, the switch named from its record (no `nvsw`)."""
    report = run(capsys, "path", "-t", "foolink-pod", "--src", "n0.g0", "--dst", "n0.g7")
    assert [(h["from"], h["to"], h["link"], h["count"]) for h in report["hops"]] == [
        ("n0.g0", "n0.foolinksw0", "foolink-2", 8),
        ("n0.foolinksw0", "n0.g7", "foolink-2", 8),
    ]
    assert report["bottleneck_GBps"] == pytest.approx(1600.0)
    assert report["hops"][0]["to_model"] == "FooLink 2.0 Switch"
    # links 0.25 x 2 + the switch's 0.15
    assert report["latency_us"] == pytest.approx(0.65)
    assert "nvsw" not in json.dumps(report).lower()


def test_collective_on_the_new_fabric(capsys):
    """A large all-reduce rings over FooLink: busbw 1.6 TB/s x 0.8 efficiency (the link
    record's) bounds it, well above any PCIe path."""
    result = run(capsys, "collective", "all_reduce", "-t", "foolink-pod", "--size", "16G")
    row = result["rows"][0]
    assert row["algorithm"].startswith("ring/")
    assert 1000.0 < row["busbw_GBps"] <= 1600.0 * 0.8


def test_the_explorer_draws_a_foolink_row():
    """The map's scale-up row is labelled by the switch record, and the path panel routes
    over it (its switch one end of the bottleneck hop, so marked ``<0>``)."""
    import asyncio

    from fabricui.services.session import load_catalog_with_plugins
    from fabricui.tui.app import make_app

    catalog = load_catalog_with_plugins([FOOLINK])

    async def drive() -> str:
        app = make_app(topology="foolink-pod", src="n0.g0", dst="n0.g7", catalog=catalog)
        async with app.run_test(size=(100, 30)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            return app.screen.query_one("TopologyMap").render_text()

    text = asyncio.run(drive())
    assert "FooLink <0>" in text and "NVSw" not in text
