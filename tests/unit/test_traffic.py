"""``fabricui traffic``: patterns, max-min rates and the busiest links."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricui.engine.traffic import pattern_flows, simulate_traffic
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric


def test_patterns():
    """all_to_all is every ordered pair, ring each to the next, random-pairs a matching."""
    a, b = pattern_flows("all_to_all", range(4))
    assert a.size == 12 and not np.any(a == b)
    a, b = pattern_flows("ring", range(4))
    assert list(zip(a, b)) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    a, b = pattern_flows("random-pairs", range(8), seed=3)
    assert sorted(a) == list(range(8)) and sorted(b) == list(range(8))
    with pytest.raises(EngineError, match="at least two"):
        pattern_flows("ring", [0])


def test_all_to_all_on_shared_nics_by_hand(mini):
    """2 nodes x 8 GPUs, 2 NICs per node: each NIC carries 4 GPUs x 8 remote peers = 32 flows,
    so each cross-node flow gets 50 x 0.95 / 32 GB/s and the NIC links are the busiest."""
    fabric = build_fabric(mini.topologies["shared-nic"], mini)
    report = simulate_traffic(fabric, *pattern_flows("all_to_all", range(16)))
    remote = (report.src // 8) != (report.dst // 8)
    np.testing.assert_allclose(report.rate_GBps[remote], 47.5 / 32)
    nic_to_leaf = [
        k
        for k in range(fabric.n_links)
        if fabric.device_name(int(fabric.link_src[k])).endswith(("nic0", "nic1"))
        and fabric.device_name(int(fabric.link_dst[k])).startswith("leaf")
    ]
    np.testing.assert_allclose(report.link_load_GBps[nic_to_leaf], 47.5)


def test_traffic_cli(run_cli):
    """Text and JSON output; bad --gpus is one line, exit 2."""
    status, out, _ = run_cli("traffic", "-t", "dgx-h100-pod", "--pattern", "ring", "--gpus", "16")
    assert status == 0 and "busiest links" in out and "16 flows" in out
    status, out, _ = run_cli("traffic", "-t", "dgx-h100-pod", "--pattern", "random-pairs", "--json")
    data = json.loads(out)
    assert len(data["flows"]) == 32 and set(data["rates"]) >= {"min_GBps", "max_GBps"}
    assert all(
        set(x) >= {"link", "load_GBps", "capacity_GBps", "utilization"}
        for x in data["busiest_links"]
    )
    status, out, err = run_cli("traffic", "--gpus", "1")
    assert status == 2 and "--gpus must be within 2..32" in err
    for spelling in ("alltoall", "All-to-All"):  # as collective takes it
        status, out, _ = run_cli("traffic", "-t", "dgx-h100", "--pattern", spelling)
        assert status == 0 and out.startswith("all_to_all among 8 GPUs")


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["ring"], "ring"),
        (["--gpus", "4", "Random_Pairs"], "random-pairs"),
        (["alltoall", "--pattern", "all_to_all"], "all_to_all"),
        ([], "all_to_all"),
    ],
)
def test_the_pattern_is_a_word_too(run_cli, argv, pattern):
    """`traffic ring` is `traffic --pattern ring`, in any spelling and place."""
    status, out, err = run_cli("traffic", "-t", "dgx-h100", *argv)
    assert status == 0, err
    assert out.startswith(f"{pattern} among")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["rings"], "unknown pattern 'rings' (nearest: ring)"),
        (["ring", "random-pairs"], "one pattern, not ring, random-pairs"),
        (["ring", "--pattern", "all_to_all"], "one pattern, not ring and --pattern all_to_all"),
    ],
)
def test_pattern_words_that_cannot_be_one_pattern_are_one_line(run_cli, argv, expected):
    status, out, err = run_cli("traffic", "-t", "dgx-h100", *argv)
    assert (status, out) == (2, "") and expected in err and err.count("\n") == 1
