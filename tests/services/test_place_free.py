"""``place N --free``: a path that is not a readable file, hosts the cluster lacks, and a
Slurm listing of another cluster are one-line errors, never "N asked for, 0 free"."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
#: A sinfo of the Slurm quick-start cluster (nodes adev0..adev14: none of them on Selene).
OTHER_SINFO = DATA / "health" / "slurm" / "sinfo_schedmd_quickstart_doc_adev_down_star.txt"


def error_of(run_cli, *argv: str) -> str:
    """The one error line of a command that must fail with status 2."""
    status, out, err = run_cli(*argv)
    assert status == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "asked for" not in err
    return err


def test_a_mistyped_path_is_no_such_file(selene, tmp_path, run_cli):
    """A value with a '/' that names nothing is a missing file, not a host."""
    err = error_of(run_cli, "place", "4", "-t", selene, "--free", str(tmp_path / "sinfo.txt"))
    assert f"--free {tmp_path / 'sinfo.txt'}: no such file" in err


def test_a_directory_is_refused(selene, tmp_path, run_cli, monkeypatch):
    """A folder, named with or without a '/', is refused as a folder."""
    (tmp_path / "outputs").mkdir()
    err = error_of(run_cli, "place", "4", "-t", selene, "--free", str(tmp_path / "outputs"))
    assert "is a directory" in err
    monkeypatch.chdir(tmp_path)
    err = error_of(run_cli, "place", "4", "-t", selene, "--free", "outputs")
    assert "--free outputs: is a directory" in err


def test_hosts_not_in_the_cluster_are_named_as_hosts_does(selene, run_cli):
    """Unknown hosts of a hostlist are listed as --hosts lists them, with the nearest."""
    err = error_of(run_cli, "place", "2", "-t", selene, "--free", "node[1-4]")
    assert "--free: 4 host(s) not in selene: node1, node2, node3 and 1 more" in err
    err = error_of(run_cli, "place", "1", "-t", selene, "--free", "luna-0001,luna-9999")
    assert "--free: 1 host(s) not in selene: luna-9999 (nearest to luna-9999: luna-0560" in err
    _, _, hosts_err = run_cli("path", "-t", selene, "--hosts", "node[1-4]", "0", "1")
    assert "4 host(s) not in selene: node1, node2, node3 and 1 more" in hosts_err


def test_a_missing_file_name_without_slash_says_so(selene, tmp_path, run_cli, monkeypatch):
    """A bare name that is neither a host nor a file: both are said."""
    monkeypatch.chdir(tmp_path)
    err = error_of(run_cli, "place", "4", "-t", selene, "--free", "sinfo.txt")
    assert "1 host(s) not in selene: sinfo.txt (and no file of that name)" in err


def test_a_listing_of_another_cluster_is_refused(selene, run_cli):
    """A sinfo none of whose nodes is on the topology: an error saying so."""
    err = error_of(run_cli, "place", "4", "-t", selene, "--free", str(OTHER_SINFO))
    assert f"--free {OTHER_SINFO}: none of its 15 node(s) is in selene: adev" in err


def test_read_errors_name_the_flag(selene, tmp_path, run_cli):
    """A file that is no Slurm listing names --free (and --jobs), not --health."""
    text = tmp_path / "notes.txt"
    text.write_text("nothing a tool printed\n")
    for flag in ("--free", "--jobs"):
        err = error_of(run_cli, "place", "4", "-t", selene, flag, str(text))
        assert f"{flag} {text}: cannot tell which tool printed this" in err


def test_a_listing_that_shares_some_hosts_still_places(selene, tmp_path, run_cli):
    """A sinfo with other partitions' nodes too: those are left out, the pick is made."""
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text(
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "batch*       up   infinite      2   idle luna-[0001-0002]\n"
        "login        up   infinite      2   idle login[1-2]\n"
    )
    status, out, err = run_cli("place", "2", "-t", selene, "--free", str(sinfo), "--no-price")
    assert status == 0, err
    assert "luna-[0001-0002]" in out and "left out (not in the fabric): login[1-2]" in out


def test_a_refusal_counts_the_hosts_the_listing_gives_as_busy(selene, tmp_path, run_cli):
    """Most of the cluster allocated in the sinfo: the refusal says so, and counts every
    host of the listing the cluster lacks (not the first fifty)."""
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text(
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "batch*       up   infinite    450   alloc luna-[0001-0450]\n"
        "batch*       up   infinite    110    idle luna-[0451-0560]\n"
        "batch*       up   infinite    100    idle gpu-[001-100]\n"
    )
    err = error_of_refusal(run_cli, "place", "100", "-t", selene, "--free", str(sinfo))
    assert err == (
        "fabricui: error: 100 host(s) asked for, 95 free (left out: not free in sinfo.txt 363, "
        "not in the fabric 115)\n"
    )
    status, out, _ = run_cli("place", "2", "-t", selene, "--free", str(sinfo), "--json")
    assert status == 0 and len(json.loads(out)["left_out"]["not in the fabric"]) == 115


def error_of_refusal(run_cli, *argv: str) -> str:
    """The one error line of a pick that cannot be made."""
    status, out, err = run_cli(*argv, "--no-price")
    assert status == 2 and out == "" and err.count("\n") == 1
    return err
