"""A report on the fabric as it is (``snapshot ... --health``) says what the health files
applied: the conditions (link, condition, bandwidth kept, where read), what was not applied
and why (the first few, then how many more), the warnings, and the path's or the pyramid's
figures as built beside as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.render.markdown import render_markdown
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest
from tests.services.test_health_both_facts import DEGRADED, ERRORS

#: One host's ibstat, every port down (a host the fabric lacks, when named so).
DOWN = "".join(
    f"CA 'mlx5_{k}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Down\n"
    "\t\tPhysical state: Disabled\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
    for k in range(8)
)
#: n0's ibstat with every port up at its cable's rate: nothing to apply, nothing to warn.
CLEAN = DOWN.replace("State: Down", "State: Active").replace("Disabled", "LinkUp")


def _report(catalog, view: str, health: list[Path], **launch: str) -> str:
    """The Markdown report of ``view`` on two DGX H100 nodes with ``health``."""
    request = TopologyRequest("h100-ib-cluster", 2, health=tuple(str(p) for p in health))
    report = build_report(LaunchRequest(request, view=view, **launch), catalog)
    return render_markdown(report)


def _section(text: str) -> str:
    """The "As it is" section of a report (empty without one)."""
    if "## As it is" not in text:
        return ""
    return text.split("## As it is", 1)[1].split("## Sources", 1)[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    texts = {"links.txt": DEGRADED, "errors.txt": ERRORS, "n0.txt": CLEAN}
    texts |= {f"luna-000{k}.txt": DOWN for k in range(1, 8)}
    for name, text in texts.items():
        out[name] = tmp_path / name
        out[name].write_text(text)
    return out


def test_the_path_report_says_what_was_applied_and_what_it_costs(catalog, files):
    """The degraded, erroring cable with both files, its 25%, and the path's bottleneck
    50 GB/s as built against 12.5 as it is."""
    text = _report(
        catalog, "topology", [files["links.txt"], files["errors.txt"]], src="n0.g0", dst="n1.g0"
    )
    section = _section(text)
    assert section.startswith(
        "\n\nHealth files: links.txt (iblinkinfo), errors.txt (ibqueryerrors). The figures above "
        "are the fabric as they say it is: 1 degraded (1 also erroring); without --health they "
        "are as built.\n"
    )
    assert (
        "| n0.nic0 (n0 mlx5_0) -> leaf0 | degraded, erroring | 25% | iblinkinfo links.txt; "
        "ibqueryerrors errors.txt |"
    ) in section
    assert "**The path n0.g0 -> n1.g0 as built and as it is**" in section
    assert "| bottleneck | 50.0 GB/s | 12.5 GB/s | x0.25 |" in section
    assert f"Warnings (1):\n\n- {files['links.txt']}: 1 link(s) trained below" in section
    assert "Not applied" not in section
    assert text.index("## As it is") > text.index("Bottleneck: 12.5 GB/s")


def test_a_path_off_the_changed_links_says_it_is_as_built(catalog, tmp_path):
    """n0's sixth NIC degraded: the path n0.g0 -> n1.g0 leaves by n0.nic0, so one line says
    its figures are as built instead of a table of equal figures."""
    path = tmp_path / "links.txt"
    path.write_text(DEGRADED.replace("mlx5_0", "mlx5_5").replace('"leaf0"', '"leaf5"'))
    section = _section(_report(catalog, "topology", [path], src="n0.g0", dst="n1.g0"))
    assert "| n0.nic5 (n0 mlx5_5) -> leaf5 | degraded | 25% |" in section
    assert "\nThe path n0.g0 -> n1.g0 is as built: it crosses no link that changed.\n" in section
    assert "as built and as it is" not in section


def test_conditions_not_applied_are_counted_after_the_first_few(catalog, files):
    """Seven hosts the fabric lacks: five lines, then how many more; the collectives view
    has no figures as built beside it."""
    health = [files["links.txt"], *(files[f"luna-000{k}.txt"] for k in range(1, 8))]
    section = _section(_report(catalog, "collectives", health, options=(("sizes", "1G"),)))
    assert "Not applied (7):\n\n- ibstat luna-0001.txt: the ports' host is not named" in section
    assert section.count("\n- ibstat luna-") == 5
    assert "- ... and 2 more conditions not applied (`fabricui path --json` lists all)" in section
    assert "and 3 more files" in section
    assert "as built and as it is" not in section


def test_the_pyramid_report_shows_the_tier_that_changed(catalog, files):
    """The NIC tier at a quarter; the tiers that did not change are not repeated."""
    section = _section(_report(catalog, "pyramid", [files["links.txt"]]))
    assert "**Pyramid tiers that changed, as built and as it is**" in section
    assert "| tier NIC (InfiniBand NDR) | 50.0 GB/s | 12.5 GB/s | x0.25 |" in section
    assert "HBM" not in section


def test_no_section_on_the_fabric_as_built_and_one_line_when_nothing_is_said(catalog, files):
    """Without --health there is no section; with a file that changes and warns of nothing,
    one line names the files and says the figures are as built (the title says "as it
    is")."""
    assert _section(_report(catalog, "topology", [])) == ""
    clean = _section(_report(catalog, "topology", [files["n0.txt"]]))
    assert "n0.txt" in clean
    assert "They mark nothing on this fabric: the figures above are as built." in clean
    assert "Conditions applied" not in clean and "Warnings" not in clean


def test_snapshot_prints_it(run_cli, files):
    """``fabricui snapshot topology --health`` prints the section in its Markdown."""
    status, out, err = run_cli(
        "snapshot", "topology", "-t", "h100-ib-cluster", "--nodes", "2",
        "--health", str(files["links.txt"]), "--health", str(files["errors.txt"]),
    )  # fmt: skip
    assert status == 0, err
    assert "## As it is" in out and "| degraded, erroring | 25% |" in out
