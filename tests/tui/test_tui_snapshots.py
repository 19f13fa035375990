"""Snapshot tests: each view at 80x24 and 120x40 (review the SVGs before --snapshot-update)."""

from __future__ import annotations

import pytest

from fabricui.tui.app import settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.mark.parametrize("size", SIZES)
class TestTopology:
    def test_cross_node_path(self, snap_compare, app_factory, size):
        """dgx-h100-pod: four node boxes (GPU, NVSwitch, PCIe, CPU, NIC rows) and the leafs;
        n0.g0 -> n3.g7 crosses rails, so PXN brackets n0.nvsw0, n0.g7, n0.pcie3, n0.nic7,
        leaf1, n3.nic7, n3.pcie3; the side panel lists 8 hops with the ib-ndr bottleneck
        (50 GB/s, n0.nic7 -> leaf1) marked '<-' (and '<7>', '<1>' on the map), 3.23 us,
        1 GiB, the hardware at the bottleneck whole at 80x24, PgDn on the key bar."""
        assert snap_compare(app_factory(), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
class TestPyramid:
    def test_h100_tiers(self, snap_compare, app_factory, size):
        """SMEM, HBM3, NVLink 4.0 peer and NIC (InfiniBand NDR) tiers as log-scaled bars with
        GB/s and latency, a ratio between each pair of tiers (no leaf-to-leaf tier: with PXN
        no GPU path of the pod climbs above its leaf)."""
        assert snap_compare(app_factory(view="pyramid"), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
class TestCollectives:
    def test_all_reduce_sweep(self, snap_compare, app_factory, size):
        """all_reduce on 32 GPUs from 8 B to 16 GiB: time, algbw, busbw, NCCL 2.30.7's pick
        and its channels, the best pick and its gain per row, the line saying NCCL already
        runs the best pick at 8 B, the stepper at its start drawing the algorithm of the row
        under the cursor, and the busbw columns rising with size."""
        assert snap_compare(app_factory(view="collectives"), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
class TestStrategies:
    def test_llama3_70b_on_the_pod(self, snap_compare, app_factory, size):
        """Titled 'decision table: each strategy alone on 4 GPUs': intra and inter bars per
        strategy against the compute of the whole model on one GPU (FSDP and TP inter past
        it, in red), each ending in its verdict with the exposed share (no (120%)), EP
        marked as not applying to the dense model, the table with its compute basis; then
        'chosen layout: tp 8 x pp 1 x dp 4' with its batch, the step breakdown and the
        operations (FSDP's gathers forward and backward), one column below the other at
        both sizes, no cell cut."""
        assert snap_compare(app_factory(view="strategies"), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
class TestPlugins:
    def test_builtin_plugins(self, snap_compare, app_factory, size):
        """Every built-in plugin with version, source, status ok and what it contributes."""
        assert snap_compare(app_factory(view="plugins"), terminal_size=size, run_before=settle)
