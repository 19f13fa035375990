"""``place N --free FILE`` reads a file of host names, one per line, as ``scontrol show
hostnames`` prints them (hostlists, comments and blank lines allowed); a file that is not
one keeps the one-line refusal, which names this form among those read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: An imported cluster of 8 hosts, h1 .. h8, on two leaves.
CLUSTER = str(ROOT / "tests" / "doctor" / "topologies" / "cluster_8hosts.yaml")


def picked(run_cli, tmp_path: Path, text: str, count: int = 2) -> dict:
    """The JSON of ``place COUNT --free FILE`` (FILE holding ``text``), which must succeed."""
    path = tmp_path / "hosts.txt"
    path.write_text(text, encoding="utf-8")
    status, out, err = run_cli(
        "place", str(count), "-t", CLUSTER, "--free", str(path), "--no-price", "--json"
    )
    assert status == 0, err
    return json.loads(out)


def one_error(run_cli, tmp_path: Path, text: str) -> str:
    """The one error line of ``place 2 --free FILE`` (FILE holding ``text``)."""
    path = tmp_path / "hosts.txt"
    path.write_text(text, encoding="utf-8")
    status, out, err = run_cli("place", "2", "-t", CLUSTER, "--free", str(path), "--no-price")
    assert (status, out) == (2, ""), err
    assert err.startswith("fabricui: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err.strip().removeprefix("fabricui: error: ").replace(str(path), "FILE")


def test_scontrol_show_hostnames_output_is_the_free_hosts(run_cli, tmp_path):
    """Only the listed hosts are picked from."""
    result = picked(run_cli, tmp_path, "h5\nh6\nh7\n")
    assert result["free"] == 3 and set(result["hosts"]) <= {"h5", "h6", "h7"}


@pytest.mark.parametrize(
    "text",
    [
        "h[5-7]\n",
        "# free after the drain\nh5\n\n  h6  \nh7 # rebooted\n",
        "h5\r\nh6\r\nh7",
        "\ufeffh5\nh5\nh6,h7\n",
    ],
    ids=["hostlist", "comments-and-blanks", "crlf-no-final-newline", "bom-repeat-commas"],
)
def test_hostlists_comments_and_blank_lines(run_cli, tmp_path, text):
    """A hostlist line, comments, blank lines, CR line ends, a name twice: h5, h6, h7."""
    assert picked(run_cli, tmp_path, text)["free"] == 3


def test_hosts_the_cluster_lacks_are_left_out(run_cli, tmp_path):
    """Other partitions' hosts (login nodes) are left out and named, as a sinfo's are."""
    path = tmp_path / "hosts.txt"
    path.write_text("h1\nh2\nlogin[1-2]\n", encoding="utf-8")
    status, out, err = run_cli("place", "2", "-t", CLUSTER, "--free", str(path), "--no-price")
    assert status == 0, err
    assert "left out (not in the fabric): login[1-2]" in out
    assert "4 free host(s) listed in hosts.txt" in out


def test_a_file_of_another_clusters_hosts_is_refused(run_cli, tmp_path):
    """None of the names on the cluster: one line naming them, not "2 asked for, 0 free"."""
    assert one_error(run_cli, tmp_path, "node1\nnode2\n").startswith(
        "--free FILE: none of its 2 host name(s) is in "
    )


def test_a_malformed_hostlist_line_names_its_line(run_cli, tmp_path):
    """A line that is a broken hostlist: the file and line, and what is wrong."""
    assert one_error(run_cli, tmp_path, "h1\n# h2\nh[3-\n") == (
        "--free FILE:3: hostlist 'h[3-': '[' is never closed"
    )


@pytest.mark.parametrize(
    "text",
    ["h1 h2\n", "h1\nh2 idle\n", "h1\nState=IDLE\n", "root:x:0:0:root:/root:/bin/sh\n"],
    ids=["two-on-a-line", "a-state-column", "key-value", "passwd"],
)
def test_anything_else_keeps_the_refusal_that_names_the_forms(run_cli, tmp_path, text):
    """A line that is not one name: the existing refusal, naming every form --free reads."""
    err = one_error(run_cli, tmp_path, text)
    assert err.startswith("--free FILE: ")
    assert "sinfo" in err and "scontrol show node" in err and "--free h[1-4]" in err
    assert "a file of host names one per line (`scontrol show hostnames`)" in err


def test_a_file_of_comments_only_is_no_host_list(run_cli, tmp_path):
    """Nothing but comments and blanks names no host: refused, not "0 free"."""
    err = one_error(run_cli, tmp_path, "# nothing free\n\n")
    assert "asked for" not in err and err.startswith("--free FILE: ")


def test_the_help_names_the_host_name_file(capsys):
    """``place --help`` lists the file of host names among --free's inputs."""
    from fabricui.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["place", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert exc.value.code == 0 and "a file of host names one per line" in out
