"""The jobs line above the map (``--jobs``, ``--hosts``): one line that, when its jobs do
not all fit, ends with how many it leaves out."""

from __future__ import annotations

import re
from pathlib import Path

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import screen_text, settle
from fabricui.tui.glyphs import ASCII, use_ascii
from fabricui.tui.widgets.jobs_line import jobs_text

#: 60 running jobs of 2 hosts each (n0-n119): far more than one line at 80 columns names.
MANY_JOBS = "JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n" + "".join(
    f"{100 + i} batch a u R 1:00 2 n[{2 * i}-{2 * i + 1}]\n" for i in range(60)
)


async def test_a_cut_jobs_line_says_how_many_jobs_it_leaves_out(app_factory, tmp_path):
    """At 80x24 the line names the first jobs whole, then ``… and N more jobs``: the jobs
    named and N add up to the 60 running."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(MANY_JOBS)
    request = TopologyRequest("h100-ib-cluster", 128)
    app = app_factory(launch=LaunchRequest(topology=request, options=(("jobs", str(squeue)),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = next(x for x in screen_text(app).splitlines() if "underlined:" in x).rstrip()
        assert len(line) <= 80
        more = re.search(r"… and (\d+) more jobs$", line)
        assert more, line
        shown = re.findall(r"job \d+ n\[\d+-\d+\]", line)
        assert shown and shown[0] == "job 100 n[0-1]"
        assert len(shown) + int(more.group(1)) == 60


def test_jobs_text_keeps_the_lead_and_whole_jobs():
    jobs = ["job 7 n[0-1]", "job 8 n3", "job 9 n[4-7]"]
    assert jobs_text([], jobs) == "job 7 n[0-1] · job 8 n3 · job 9 n[4-7]"
    assert jobs_text([], jobs, 38) == "job 7 n[0-1] · job 8 n3 · job 9 n[4-7]"
    assert jobs_text([], jobs + ["job 10 n8"], 41) == "job 7 n[0-1] · job 8 n3 … and 2 more jobs"
    assert jobs_text([], jobs, 37) == "job 7 n[0-1] … and 2 more jobs"
    assert jobs_text(["--hosts n9"], jobs, 30) == "--hosts n9 … and 3 more jobs"
    # Too narrow for one job and the count: the count alone.
    assert jobs_text([], jobs, 10) == "… and 3 more jobs"


def test_ascii_jobs_line_separates_jobs_with_semicolons():
    """With ``--ascii`` jobs are separated as the path's key line separates figures
    (``; ``): a ``-`` between ``n[0-1]`` and ``job 8 n3`` would read as a host range."""
    jobs = ["job 7 n[0-1]", "job 8 n3", "job 9 n[4-7]"]
    use_ascii(True)
    try:
        whole = jobs_text(["--hosts n9"], jobs)
        cut = jobs_text([], jobs + ["job 10 n8"], 43)  # "..." is 3 columns
    finally:
        use_ascii(False)
    assert whole == "--hosts n9; job 7 n[0-1]; job 8 n3; job 9 n[4-7]"
    assert cut == "job 7 n[0-1]; job 8 n3 ... and 2 more jobs"
    assert ASCII.between_figures == "; "


async def test_a_listing_with_no_job_here_is_said_on_the_line(app_factory, tmp_path):
    """The SchedMD quick-start squeue (adev7, adev8, adev14) on h100-ib-cluster: the line
    above the map says no running job is on its hosts for as long as the view shows (the
    notification fades), on screen and in the saved text."""
    from fabricui.tui.widgets.jobs_line import JobsLine
    from tests.tui.test_jobs_saved import save

    data = Path(__file__).resolve().parents[1] / "data" / "health" / "slurm"
    squeue = data / "squeue_schedmd_quickstart_doc_adev_running_pending_resources.txt"
    said = f"jobs: no running job on h100-ib-cluster's hosts in {squeue}"
    request = TopologyRequest("h100-ib-cluster", 4)
    app = app_factory(launch=LaunchRequest(topology=request, options=(("jobs", str(squeue)),)))
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(JobsLine).display
        assert said in screen_text(app)
        await save(pilot, "txt", tmp_path / "view.txt")
    assert said in (tmp_path / "view.txt").read_text()


async def test_a_listing_with_nothing_running_is_said_after_hosts(app_factory, tmp_path):
    """--hosts and a squeue with only pending jobs: the line names --hosts, then says the
    file has no running job; at 80 columns what it says comes before the cut path."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(
        "JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n"
        "9 batch a u PD 0:00 2 (Resources)\n"
    )
    request = TopologyRequest("h100-ib-cluster", 4)
    options = (("hosts", "n[2-3]"), ("jobs", str(squeue)))
    app = app_factory(launch=LaunchRequest(topology=request, options=options))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = next(x for x in screen_text(app).splitlines() if "underlined:" in x).strip()
        assert line.startswith("underlined: --hosts n[2-3] · jobs: no running job in ")
