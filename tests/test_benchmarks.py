"""``benchmarks/run.py --quick`` runs end to end and reports every named figure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
NAMES = {
    "build_100k_s",
    "build_100k_peak_mib",
    "paths_100k_s",
    "paths_speedup_vs_networkx",
    "alltoall_1024_maxmin_s",
    "sweep_1024_ms",
    "sweep_speedup_vs_loop",
    "search_405b_16k_s",
    "tui_start_ratio",
    "tui_key_ms",
    "tui_ready_s",
    "cluster_vs_fat_tree_ratio",
    "cluster_alltoall_1024_s",
    "selene_allreduce_s",
    "selene_speedup_vs_pairwise",
    "dragonfly_alltoall_maxmin_s",
    "dragonfly_allreduce_s",
    "calibration_trials_s",
    "doctor_warnings_90k_s",
    "doctor_ring_line_20mb_s",
    "torus_routes_1024_s",
    "diagram_2048_hosts_s",
    "hwdb_load_s",
    "hwdb_load_vs_safe_load",
}


@pytest.mark.slow
def test_quick_benchmarks_report_every_figure():
    """Every figure of the issue's table (and the TUI's time to a drawn map) is present."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    data = json.loads(proc.stdout)
    assert data["machine"] and set(data["results"]) == NAMES
    # The Selene figures need the full run (the 55,000-line import).
    for name in NAMES - {
        "paths_speedup_vs_networkx",
        "selene_allreduce_s",
        "selene_speedup_vs_pairwise",
    }:
        assert data["results"][name] is not None and data["results"][name] > 0, name
