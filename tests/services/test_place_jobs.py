"""``place N --jobs``: a job listing of another cluster is one error line, as a ``--free``
listing of one is; jobs partly on the cluster keep the hosts that are, said in one warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.services.place import PlaceRequest, place
from fabricui.services.requests import TopologyRequest

DATA = Path(__file__).resolve().parents[1] / "data"
SLURM = DATA / "health" / "slurm"
#: squeue of the Slurm quick-start cluster: jobs running on adev[7-8] and adev14, one pending.
OTHER_SQUEUE = SLURM / "squeue_schedmd_quickstart_doc_adev_running_pending_resources.txt"
#: sacct of UW Hyak without a NodeList column: running jobs whose hosts are unknown.
SACCT_NO_NODES = SLURM / "sacct_default_uw_hyak_klone_timeout_failed_cancelled.txt"
#: A sinfo of the quick-start cluster (adev0 .. adev15).
OTHER_SINFO = SLURM / "sinfo_schedmd_quickstart_doc_adev_down_star.txt"
HEADER = "JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n"


def test_a_job_listing_of_another_cluster_is_refused(selene, run_cli):
    """The quick-start squeue on Selene: one line naming the file, the cluster, the jobs'
    hosts and Selene's own (nothing of Selene's is near adev7)."""
    status, out, err = run_cli("place", "2", "-t", selene, "--jobs", str(OTHER_SQUEUE))
    assert (status, out) == (2, "") and err.count("\n") == 1 and "Traceback" not in err
    assert (
        f"--jobs {OTHER_SQUEUE}: none of the 3 host(s) of its 2 running job(s) is in selene: "
        "adev7, adev8, adev14 (selene's hosts: luna-" in err
    )


def test_the_nearest_cluster_names_are_given_when_there_are(selene, tmp_path, catalog):
    """Job hosts that look like Selene's (a typo of the padding) are refused with the
    nearest of Selene's names."""
    from fabricui.errors import ConfigError

    jobs = tmp_path / "squeue.txt"
    jobs.write_text(HEADER + "7 batch a u R 1:00 2 luna-[00001-00002]\n")
    with pytest.raises(ConfigError, match=r"luna-00001, luna-00002 \(nearest to luna-00001: luna-"):
        place(PlaceRequest(TopologyRequest(selene), 2, jobs=str(jobs), price=False), catalog)


def test_jobs_partly_on_the_cluster_keep_their_hosts_that_are(selene, tmp_path, run_cli):
    """Job 101 on luna-0001, luna-0002 and adev7, job 102 on login[1-2]: luna-[0001-0002]
    are busy; one warning says 3 of the 5 hosts are not in Selene (JSON too)."""
    jobs = tmp_path / "squeue.txt"
    jobs.write_text(
        HEADER + "101 batch a u R 1:00 3 luna-[0001-0002],adev7\n"
        "102 batch b u R 1:00 2 login[1-2]\n"
        "103 batch c u PD 0:00 2 (Resources)\n"
    )
    argv = ["place", "2", "-t", selene, "--free", "luna-[0001-0004]", "--jobs", str(jobs)]
    status, out, err = run_cli(*argv, "--no-price", "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["hosts"] == ["luna-0003", "luna-0004"]
    assert data["left_out"] == {"running jobs": ["luna-0001", "luna-0002"]}
    warning = (
        f"--jobs {jobs}: 3 of the 5 host(s) of its running jobs are not in selene and are "
        "left out: adev7, login1, login2"
    )
    assert data["warnings"] == [warning]
    assert err == f"fabricui: warning: {warning}\n"


def test_a_refusal_says_where_the_hosts_went(selene, tmp_path, run_cli):
    """Three hosts asked of four with two busy: the refusal counts the busy ones and keeps
    the listing's warning (it is not printed when the command fails)."""
    jobs = tmp_path / "squeue.txt"
    jobs.write_text(HEADER + "101 batch a u R 1:00 3 luna-[0001-0002],adev7\n")
    argv = ["place", "3", "-t", selene, "--free", "luna-[0001-0004]", "--jobs", str(jobs)]
    status, out, err = run_cli(*argv, "--no-price")
    assert (status, out) == (2, "")
    assert err == (
        "fabricui: error: 3 host(s) asked for, 2 free (left out: running jobs 2); "
        f"--jobs {jobs}: 1 of the 3 host(s) of its running jobs is not in selene and is "
        "left out: adev7\n"
    )


def test_a_file_with_no_running_job_is_fine(selene, tmp_path, catalog):
    """Only a pending job: nothing is busy, nothing is refused, nothing is warned."""
    jobs = tmp_path / "squeue.txt"
    jobs.write_text(HEADER + "103 batch c u PD 0:00 2 (Resources)\n")
    result = place(
        PlaceRequest(TopologyRequest(selene), 2, free="luna-[0001-0002]", jobs=str(jobs)), catalog
    )
    assert result.hosts == ("luna-0001", "luna-0002") and result.warnings == []


def test_running_jobs_without_hosts_are_warned_of(selene, run_cli):
    """A real sacct without a NodeList column: the pick is made and the listing's gap
    (the jobs' hosts are unknown) is one warning line, not silence."""
    status, out, err = run_cli(
        "place", "2", "-t", selene, "--jobs", str(SACCT_NO_NODES), "--no-price"
    )
    assert status == 0 and "2 host(s) on selene" in out
    assert err.startswith(f"fabricui: warning: --jobs {SACCT_NO_NODES}: no NodeList column")
    assert err.count("\n") == 1


def test_a_free_listing_of_another_cluster_shows_the_clusters_hosts(selene, run_cli):
    """--free with the quick-start sinfo: the refusal puts Selene's hosts beside adev's."""
    status, _, err = run_cli("place", "4", "-t", selene, "--free", str(OTHER_SINFO))
    assert status == 2 and err.count("\n") == 1
    assert "none of its 15 node(s) is in selene: adev1, adev2, adev3 and 12 more (selene's" in err
