"""NCCL's protocol for send/recv and all-to-all, per release (``fabricui.engine.nccl.p2p``)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.collectives import predict
from fabricui.engine.group import Group
from fabricui.engine.nccl.env import read_env
from fabricui.engine.nccl.p2p import p2p_channels, p2p_protocols
from fabricui.engine.nccl.picks import NcclSettings, nccl_graphs
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.session import collective_algorithms

KIB = 1024.0


@pytest.fixture(scope="module")
def dgx(catalog):
    return build_fabric(resolve_topology("dgx-h100", catalog), catalog)


@pytest.fixture(scope="module")
def pod(catalog):
    return build_fabric(resolve_topology("dgx-h100-pod", catalog), catalog)


def protocols(fabric, ranks, version, per_peer_kib, env=None):
    settings = NcclSettings.of(version, env or {})
    view, graphs = nccl_graphs(Group(fabric, np.arange(ranks)), settings)
    sizes = np.asarray(per_peer_kib, dtype=np.float64) * KIB * ranks
    return p2p_protocols("all_to_all", view, graphs, settings.release, settings.env, sizes)


def test_a_peer_on_an_nvswitch_may_use_every_p2p_channel(dgx):
    """8x H100: the search's 24 channels round up to 32 point-to-point channels; a peer over
    NVLink may use 2 x 18 (its 18 NVLinks at NCCL's 20.6 GB/s each), capped at 32."""
    settings = NcclSettings.of("2.26", {})
    view, graphs = nccl_graphs(Group(dgx, np.arange(8)), settings)
    assert graphs.channels == 24
    assert p2p_channels(view, graphs, settings.release) == (32, 32)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        # up to 2.21: LL while an operation carries at most 16 KiB
        ("2.21", ["ll", "simple", "simple", "simple"]),
        # 2.22-2.28: at most 32 channels x 16 KiB = 512 KiB per peer
        ("2.26", ["ll", "ll", "ll", "simple"]),
        # 2.29+: parts of 64 KiB (512 KiB NVLink chunk / 8): one channel up to 64 KiB
        ("2.30", ["ll", "simple", "simple", "simple"]),
    ],
)
def test_all_to_all_runs_ll_up_to_the_releases_threshold(dgx, version, expected):
    """Per peer 16 KiB, 32 KiB, 512 KiB and 1 MiB on one 8x H100 node."""
    assert protocols(dgx, 8, version, [16, 32, 512, 1024]) == expected


def test_the_threshold_is_read_from_the_environment(dgx):
    """NCCL_P2P_LL_THRESHOLD moves the line (2.30: 64 KiB per channel, and a 512 KiB
    operation takes at most 4 channels: 32 per peer halved until 8 peers fit in 32); 0
    leaves LL to empty operations only."""
    env = {"NCCL_P2P_LL_THRESHOLD": "65536"}
    assert protocols(dgx, 8, "2.30", [32, 64, 128, 512], env) == ["ll", "ll", "ll", "simple"]
    assert protocols(dgx, 8, "2.30", [0, 1], {"NCCL_P2P_LL_THRESHOLD": "0"}) == ["ll", "simple"]
    with pytest.raises(EngineError, match="NCCL_P2P_LL_THRESHOLD"):
        read_env({"NCCL_P2P_LL_THRESHOLD": "big"})


def test_across_nodes_point_to_point_is_simple_unless_ll_buffers_are_allocated(pod):
    """A peer over the network has no LL buffer (shared point-to-point buffers) unless
    NCCL_ALLOC_P2P_NET_LL_BUFFERS=1; with it, 2 channels per network peer: 32 KiB on
    2.22-2.28."""
    assert protocols(pod, 16, "2.26", [1, 16]) == ["simple", "simple"]
    env = {"NCCL_ALLOC_P2P_NET_LL_BUFFERS": "1"}
    assert protocols(pod, 16, "2.26", [16, 32, 64], env) == ["ll", "ll", "simple"]


def test_the_env_given_for_the_best_protocol_makes_nccl_run_it(dgx, pod):
    """Where LL beats NCCL's Simple, the settings given for it, applied, make NCCL's pick
    that LL at that time (on one node, and across nodes with LL buffers)."""
    algorithms = collective_algorithms()
    for fabric, ranks in ((dgx, 2), (pod, 16)):
        sizes = [32 * KIB]
        first = predict(Group(fabric, np.arange(ranks)), "send_recv", sizes, algorithms)
        assert first.choice.nccl.protocol[0] == "simple"
        assert first.choice.best.protocol[0] == "ll"
        env = first.choice.env[0]
        again = predict(
            Group(fabric, np.arange(ranks), nccl_env=env), "send_recv", sizes, algorithms
        )
        assert again.choice.nccl.protocol[0] == "ll"
        assert again.choice.nccl.time_us[0] == pytest.approx(first.choice.best.time_us[0])


def test_small_operations_across_nodes_need_only_ll_buffers(pod):
    """Below the threshold NCCL already has, LL across nodes needs only its buffers; above
    it, a power-of-two threshold at least the operation, one setting for a range."""
    algorithms = collective_algorithms()
    result = predict(Group(pod, np.arange(16)), "all_to_all", [8.0, 16 * 64 * KIB], algorithms)
    assert result.choice.env[0] == {"NCCL_ALLOC_P2P_NET_LL_BUFFERS": "1"}
    assert result.choice.env[1] == {
        "NCCL_P2P_LL_THRESHOLD": "65536",
        "NCCL_ALLOC_P2P_NET_LL_BUFFERS": "1",
    }
