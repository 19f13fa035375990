"""Flags that contradict each other are one-line errors (exit 2) instead of one silently
winning; each flag alone still does what it did."""

from __future__ import annotations

import json

import pytest


def refused(run_cli, *argv: str) -> str:
    """Run ``argv``: exit 2, nothing on stdout, one line on stderr (returned)."""
    status, out, err = run_cli(*argv)
    assert status == 2 and out == "", (status, out)
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    return line


@pytest.mark.parametrize("group", ["per-node", "all", "node"])
def test_collective_group_and_gpus_together_are_refused(run_cli, group):
    """``--group per-node --gpus 4`` priced the first 4 GPUs; now it names both flags."""
    line = refused(run_cli, "collective", "all_reduce", "1G", "--group", group, "--gpus", "4")
    assert "--gpus" in line and "--group" in line and "not allowed with" in line


def test_collective_hosts_and_gpus_together_are_refused(run_cli):
    """--hosts picks the ranks too: with --gpus, --gpus was ignored."""
    line = refused(run_cli, "collective", "all_reduce", "1G", "--hosts", "n[0-1]", "--gpus", "4")
    assert line.endswith("--hosts picks the job's GPUs: give --hosts or --gpus, not both")


def test_collective_group_or_gpus_alone_still_pick_the_ranks(run_cli):
    """Alone, each picks its ranks; no --group is every GPU."""
    for argv, ranks in ((("--group", "per-node"), 4), (("--gpus", "4"), 4), ((), 32)):
        status, out, _ = run_cli("collective", "all_reduce", "1G", *argv, "--json")
        assert status == 0 and json.loads(out)["nranks"] == ranks, argv


@pytest.mark.parametrize("name", ["sp", "dp-overlap", "tp-overlap", "ep-overlap"])
@pytest.mark.parametrize("order", ["on-off", "off-on"])
def test_plan_on_and_off_pairs_are_refused(run_cli, name, order):
    """``--sp --no-sp`` and each ``--X-overlap --no-X-overlap``, in either order."""
    flags = [f"--{name}", f"--no-{name}"]
    if order == "off-on":
        flags.reverse()
    line = refused(run_cli, "plan", *flags)
    assert f"argument {flags[1]}: not allowed with argument {flags[0]}" in line


def test_plan_single_switches_still_work(run_cli):
    """``--no-sp`` alone turns sequence parallelism off, ``--sp`` repeated is fine."""
    for argv in (("--no-sp",), ("--sp", "--sp"), ("--dp-overlap",), ("--no-ep-overlap",)):
        status, _, err = run_cli("plan", *argv, "--json")
        assert status == 0, (argv, err)


def test_export_refuses_a_format_other_than_the_files_suffix(run_cli, tmp_path):
    """``--format svg -o e2.dot`` wrote SVG into a .dot file; now refused like snapshot."""
    target = tmp_path / "e2.dot"
    line = refused(run_cli, "export", "--format", "svg", "-o", str(target))
    assert line.endswith(f"-o {target} is .dot but --format is svg")
    assert not target.exists()


def test_export_format_with_a_matching_or_other_suffix_is_written(run_cli, tmp_path):
    """The same format as the suffix, or a suffix that is no format (Graphviz's .gv)."""
    for name, fmt in (("a.svg", "svg"), ("b.gv", "dot")):
        status, _, _ = run_cli("export", "--format", fmt, "-o", str(tmp_path / name))
        assert status == 0 and (tmp_path / name).stat().st_size > 0
