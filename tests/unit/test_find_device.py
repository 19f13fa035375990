"""`/` on the map finds switches and NICs too: the cursor stands on GPUs only, so a search
naming another device lands on the first GPU nearest it."""

from __future__ import annotations

import pytest

from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.fabric.ids import find_gpu, gpu_near


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
