"""What a collective prediction says when the NCCL environment puts an InfiniBand or RoCE
network on NCCL's NET/Socket transport (``NCCL_IB_DISABLE=1``, ``NCCL_NET=Socket``)."""

from __future__ import annotations

import json

import pytest

from fabricui.services.collective import view_notes
from fabricui.services.loaded import LoadedFabric
from fabricui.services.net_transport import net_socket_note, net_socket_setting
from fabricui.services.requests import TopologyRequest


@pytest.mark.parametrize(
    ("family", "domains", "env", "said"),
    [
        ("infiniband", 2, {"NCCL_IB_DISABLE": "1"}, "NCCL_IB_DISABLE=1 turns off"),
        ("infiniband", 2, {"NCCL_NET": "Socket"}, "NCCL_NET=Socket puts NCCL on"),
        ("roce", 2, {"NCCL_IB_DISABLE": "1"}, "TCP over the Ethernet port"),
        ("infiniband", 2, {}, None),
        ("infiniband", 1, {"NCCL_IB_DISABLE": "1"}, None),  # nothing crosses the network
        ("ethernet", 2, {"NCCL_IB_DISABLE": "1"}, None),  # on sockets whatever the env
        ("infiniband", 2, {"NCCL_IB_DISABLE": "x"}, None),  # the prediction reports it
    ],
)
def test_note_says_sockets_because_of_the_env(family, domains, env, said):
    note = net_socket_note(family, domains, env)
    assert (note is None) == (said is None)
    if note is not None:
        assert said in note and "NET/Socket" in note and "8 GB/s per NIC" in note
        assert net_socket_setting(family, domains, env) in note


def test_collective_json_says_sockets(run_cli):
    args = ("collective", "all_reduce", "-t", "dgx-h100-pod", "--nodes", "2", "--size", "1G")
    status, out, _ = run_cli(*args, "--json")
    assert status == 0
    rdma = json.loads(out)
    assert rdma["net_socket_setting"] is None
    assert not any("NET/Socket" in note for note in rdma["notes"])
    status, out, _ = run_cli(*args, "--env", "NCCL_IB_DISABLE=1", "--json")
    assert status == 0
    socket = json.loads(out)
    assert socket["net_socket_setting"] == "NCCL_IB_DISABLE=1"
    assert any("NET/Socket" in note for note in socket["notes"])
    # Eight NICs a node at the socket ceiling, not eight NDR ports.
    assert socket["rows"][0]["time_us"] > 3 * rdma["rows"][0]["time_us"]
    status, out, _ = run_cli(*args, "--env", "NCCL_NET=Socket")
    assert status == 0 and "NCCL_NET=Socket puts NCCL on its NET/Socket transport" in out


def test_ib_named_and_disabled_is_one_clear_error(run_cli):
    status, out, err = run_cli(
        "collective", "all_reduce", "-t", "dgx-h100-pod", "--nodes", "2", "--size", "1M",
        "--env", "NCCL_NET=IB", "--env", "NCCL_IB_DISABLE=1",
    )  # fmt: skip
    assert status != 0 and "Traceback" not in err
    assert "NCCL_NET=IB with NCCL_IB_DISABLE=1" in err


def test_the_views_note_follows_its_prompt():
    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod", nodes=2))
    assert not any("NET/Socket" in n for n in view_notes(data, "all", ""))
    assert any("NET/Socket" in n for n in view_notes(data, "all", "NCCL_IB_DISABLE=1"))
    assert not any("NET/Socket" in n for n in view_notes(data, "node", "NCCL_IB_DISABLE=1"))
