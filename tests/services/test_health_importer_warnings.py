"""What an importer says it could not read in a ``--health`` file (a rate that is no number,
a counter wider than its field) is said under ``--health`` too, named by its file, as
``fabricui import`` says it: a port left at an unknown rate is never silent."""

from __future__ import annotations

from pathlib import Path

from fabricui.services.health import read_health

IBSTAT = """\
CA 'mlx5_0'
\tCA type: MT4129
\tNumber of ports: 1
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: {rate}
\t\tLink layer: InfiniBand
"""


def test_an_unreadable_rate_is_a_warning_naming_the_file(tmp_path: Path):
    path = tmp_path / "node-1.txt"
    path.write_text(IBSTAT.format(rate="1,000"))
    report = read_health([str(path)])
    said = [w for w in report.warnings if "Rate '1,000'" in w]
    assert len(said) == 1 and said[0].startswith(f"{path}: line 7: ")


def test_a_clean_file_adds_no_warning(tmp_path: Path):
    path = tmp_path / "node-1.txt"
    path.write_text(IBSTAT.format(rate="400"))
    assert read_health([str(path)]).warnings == []


def test_the_cli_prints_it_with_the_other_health_lines(run_cli, tmp_path: Path):
    path = tmp_path / "node-1.txt"
    path.write_text(IBSTAT.format(rate="2OO"))
    status, _, err = run_cli("path", "n0.g0", "n1.g0", "--health", str(path))
    assert status == 0
    assert f"fabricui: warning: {path}: line 7: Rate '2OO' is not a rate in Gb/s" in err
