"""A Markdown report of the topology view with ``--jobs`` or ``--hosts`` names the jobs
they place (with their hosts and GPUs), as the explorer's line above the map does: the
report does not keep them only in its command."""

from __future__ import annotations

from fabricui.render.markdown import render_markdown
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest
from tests.tui.test_jobs_saved import SQUEUE


def _report(catalog, **options: str) -> str:
    request = TopologyRequest("h100-ib-cluster", 4)
    launch = LaunchRequest(topology=request, view="topology", options=tuple(options.items()))
    return render_markdown(build_report(launch, catalog))


def test_the_report_names_the_jobs(catalog, tmp_path):
    """Jobs 7 (n0, n1) and 8 (n3) of a squeue file, after the path's figures; --hosts
    first when both are given."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(SQUEUE)
    text = _report(catalog, jobs=str(squeue))
    assert "\nJobs: job 7 n[0-1] (16 GPUs); job 8 n3 (8 GPUs).\n" in text
    assert text.index("Jobs: ") > text.index("Latency: ")
    both = _report(catalog, hosts="n[2-3]", jobs=str(squeue))
    assert "\nJobs: --hosts n[2-3] (16 GPUs); job 7 n[0-1] (16 GPUs); job 8 n3 (8 GPUs).\n" in both


def test_a_listing_with_nothing_running_here_is_said(catalog, tmp_path):
    """A listing whose running jobs are on other hosts: said, not silently nothing."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(SQUEUE.replace(" n[0-1]", " x[0-1]").replace(" n3", " x3"))
    said = f"\nJobs: no running job on h100-ib-cluster's hosts in {squeue}.\n"
    assert said in _report(catalog, jobs=str(squeue))


def test_no_line_without_jobs(catalog):
    """Without --jobs or --hosts the report has no such line."""
    assert "Jobs: " not in _report(catalog)
