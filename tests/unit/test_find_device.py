"""`/` on the map finds switches and NICs too: the cursor stands on GPUs only, so a search
naming another device lands on the first GPU nearest it."""

from __future__ import annotations

import time

import pytest

from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.fabric.ids import _find_device, find_gpu, gpu_near
from fabricui.hwdb.resolve import resolve_topology


@pytest.fixture(scope="module")
def pod(catalog):
    """dgx-h100-pod: 4 DGX H100 nodes, rail-optimized (leaf0 carries NICs 0-3 of every node,
    leaf1 NICs 4-7)."""
    return build_fabric(catalog.topologies["dgx-h100-pod"], catalog)


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("leaf0", "n0.g0"),  # the first GPU whose NIC the leaf serves
        ("leaf1", "n0.g4"),
        ("LEAF1", "n0.g4"),  # names are matched whatever the case
        ("eaf1", "n0.g4"),  # part of a network switch's name
        ("n2.nic5", "n2.g5"),  # the GPU that uses the NIC, not only the nearest
        ("n1.nvsw0", "n1.g0"),  # a host's switch: its first GPU
    ],
)
def test_a_switch_or_nic_finds_the_gpu_nearest_it(pod, text, gpu):
    assert pod.gpu_name(find_gpu(pod, text)) == gpu


def test_gpu_near_a_gpu_is_itself(pod):
    assert gpu_near(pod, int(pod.gpu_dev[13])) == 13


def test_a_name_nothing_holds_is_an_error(pod):
    with pytest.raises(EngineError, match="invalid GPU id 'spine7'"):
        find_gpu(pod, "spine7")


def _scan(fabric, wanted):
    """The search as a plain scan of every device's name (what the index must agree with):
    a non-GPU device by its whole name, else the first network switch holding the text."""
    gpus = set(fabric.gpu_dev.tolist())
    names = {
        fabric.device_name(dev).lower(): dev for dev in range(fabric.n_devices) if dev not in gpus
    }
    if wanted in names:
        return names[wanted]
    network = int(fabric.domains * fabric.node_devices)
    return next((dev for name, dev in names.items() if dev >= network and wanted in name), None)


def test_the_name_index_finds_what_a_scan_of_every_name_finds(pod):
    names = [pod.device_name(dev) for dev in range(pod.n_devices)]
    queries = {name.lower() for name in names}
    queries |= {name.lower()[1:4] for name in names}  # parts of names
    queries |= {"leaf", "af", "1", "nic", "spine7", "n9.nic0", "a\0b", "leaf0\0leaf1"}
    for wanted in sorted(queries):
        assert _find_device(pod, wanted) == _scan(pod, wanted), wanted


@pytest.fixture(scope="module")
def big(catalog):
    """h100-ib-cluster at 2,048 nodes: 48,384 devices (1,280 switches), built in ~40 ms."""
    return build_fabric(resolve_topology("h100-ib-cluster", catalog, nodes=2048), catalog)


def test_a_search_on_a_large_fabric_reads_names_built_once(big):
    """The first search names every device (tens of ms at 48k devices); later ones, one per
    keystroke in the explorer, are a dict lookup or one str.find plus gpu_near: timed
    against a scan of every device's name in the same run (so that a loaded machine does not
    decide), they take a small share of it, and a few ms on an idle one."""
    assert big.n_devices > 48_000
    first = find_gpu(big, "spine3")

    def best_of(search) -> float:
        best_s = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            search()
            best_s = min(best_s, time.perf_counter() - start)
        return best_s

    again = find_gpu(big, "spine3")
    assert again == first
    cached_s = best_of(lambda: find_gpu(big, "spine3"))
    scan_s = best_of(lambda: _scan(big, "spine3"))
    assert cached_s < scan_s / 5
    assert cached_s < 0.05
    for wanted in ("pine12", "n2000.nic5", "router"):
        assert _find_device(big, wanted) == _scan(big, wanted), wanted
