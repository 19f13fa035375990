"""Back-to-back ring all-reduce of small messages: NCCL's parts, the empty ones LL skips, and
the shorter steady-state cycle that follows (``fabricui.engine.ring_overlap``)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import Ring, step_latency_us
from fabricui.engine.group import Group
from fabricui.engine.ring_overlap import (
    back_to_back_steps,
    cycle_steps,
    filled_parts,
    network_share,
    part_granularity_bytes,
)
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology


@pytest.mark.parametrize(
    ("size", "parts"),
    # 8 ranks, 16-byte granules: 8 B -> one part of 16 B; 32 B -> parts of 16 B, two full;
    # 64 B -> four; 128 B -> all eight; 144 B = 36 floats -> parts of ceil(36/8) = 5 -> 8
    # floats (32 B) -> five parts; 1 MiB -> all.
    [(8, 1), (16, 1), (32, 2), (64, 4), (128, 8), (144, 5), (2**20, 8)],
)
def test_filled_parts_follow_runRing_from_2_22(size, parts):
    granule = part_granularity_bytes(np.array([size], float), 8, None)
    assert granule[0] == 16
    assert filled_parts(np.array([size], float), 8, granule)[0] == parts


def test_parts_before_2_22_are_eight_bytes_a_thread():
    """2.21 on 8 ranks: LL's 512 threads halve while the message is under threads x 8 x 8 B
    and the threads are a multiple of 128, then the kernel gets at least 96: 8 B and 2 KiB
    -> 64 -> 96 threads (768 B parts); 16 KiB -> 256 (2 KiB); 32 KiB keeps 512 (4 KiB).
    2 KiB -> parts of ceil(2048 / 6144) x 768 = 768 B -> three hold data."""
    sizes = np.array([8.0, 2048.0, 16384.0, 32768.0])
    granule = part_granularity_bytes(sizes, 8, (2, 21, 5))
    np.testing.assert_array_equal(granule, [768, 768, 2048, 4096])
    np.testing.assert_array_equal(filled_parts(sizes, 8, granule), [1, 3, 8, 8])


@pytest.mark.parametrize("n", [3, 4, 8, 16, 72])
def test_one_full_part_cycles_in_one_lap(n):
    """Hand-derived: the rank that sends part 0 at step 0 gets it back, reduced, at step n
    and has nothing else to do; every other rank is done before part 0 comes round
    again, so back to back an operation costs one lap, n steps (not 2(n - 1))."""
    assert back_to_back_steps(n, 1) == pytest.approx(n)
    assert back_to_back_steps(n, n) == 2 * (n - 1)


def test_cycle_grows_with_the_filled_parts_up_to_every_step():
    """8 ranks: 8 steps for one or two parts (the second trails the first by one rank),
    12 for four, 14 for all; never more than 2(n - 1), never fewer than a lap."""
    assert [back_to_back_steps(8, m) for m in (1, 2, 4, 8)] == pytest.approx([8, 8, 12, 14])
    for n in (5, 8, 24):
        steps = [back_to_back_steps(n, m) for m in range(1, n + 1)]
        assert all(n - 1e-9 <= s <= 2 * (n - 1) + 1e-9 for s in steps)
        assert all(b >= a - 0.05 for a, b in zip(steps, steps[1:]))  # up to averaging


def test_two_ranks_and_huge_rings_keep_every_step():
    assert cycle_steps(np.array([8.0]), 2, None)[0] == 2
    assert back_to_back_steps(1024, 1) == 2 * 1023


def test_a_two_node_cycle_keeps_both_crossings():
    """16 ranks on 2 nodes: a lap of 16 steps crosses 2 node boundaries, as a full
    operation's 30 steps do; 4 nodes of 4: a lap crosses 4, the full 30 steps cross 6."""
    np.testing.assert_allclose(network_share(np.array([16.0, 30.0]), 16, 2, 2), [2, 2])
    np.testing.assert_allclose(network_share(np.array([16.0, 30.0]), 16, 4, 6), [4, 6])


@pytest.fixture(scope="module")
def h100_node(catalog):
    return build_fabric(resolve_topology("dgx-h100", catalog), catalog)


def test_an_8_byte_ring_ll_all_reduce_costs_eight_steps_of_fourteen(h100_node):
    """8x H100 on LL: 128 B fills all eight parts (14 steps), 8 B one (8 steps), 64 B four
    (12): the times differ by 6 and 2 intra-node steps; Simple and all-gather keep every
    step (Simple waits on empty slices; all-gather's parts are the ranks' own)."""
    group = Group(h100_node, np.arange(8))
    step = step_latency_us(group, "ll", False)
    sizes = np.array([8.0, 64.0, 128.0])
    ll = Ring().time_us(group, "all_reduce", sizes, "ll")
    assert ll[2] - ll[0] == pytest.approx(6 * step, rel=1e-3)
    assert ll[2] - ll[1] == pytest.approx(2 * step, rel=1e-3)
    simple = Ring().time_us(group, "all_reduce", sizes, "simple")
    assert simple[2] - simple[0] == pytest.approx(0.0, abs=0.01)
    gather = Ring().time_us(group, "all_gather", sizes, "ll")
    assert gather[2] - gather[0] == pytest.approx(0.0, abs=0.01)


def test_older_nccl_keeps_one_part_up_to_512_bytes(catalog, h100_node):
    """2.21: 512 B is still one part on 8 ranks (768 B granules), so it costs what 8 B does;
    the newest release fills all eight parts at 128 B."""
    sizes = np.array([8.0, 512.0])
    old = Ring().time_us(
        Group(h100_node, np.arange(8), library_version=(2, 21, 5)), "all_reduce", sizes, "ll"
    )
    new = Ring().time_us(Group(h100_node, np.arange(8)), "all_reduce", sizes, "ll")
    assert old[1] - old[0] == pytest.approx(0.0, abs=0.05)
    assert new[1] - new[0] > 5.0
