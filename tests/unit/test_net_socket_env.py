"""NCCL's own choice of network read from its environment: ``NCCL_IB_DISABLE=1`` or
``NCCL_NET=Socket`` put an InfiniBand or RoCE network on NET/Socket (NVIDIA/nccl
``ncclNetInit``, ``ncclIbInit``), priced as NCCL's sockets drive it: the socket ceiling per
NIC, the socket NIC latency, no Simple pipeline fill, no GPUDirect flush, no CollNet."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import Ring, alpha_beta, step_latency_us
from fabricui.engine.constants import DEFAULT
from fabricui.engine.group import Group
from fabricui.engine.nccl import release_for
from fabricui.engine.nccl.env import read_env, socket_setting
from fabricui.engine.nccl.view import NcclView
from fabricui.engine.net_socket import sends_wait_for_receives, uses_net_socket
from fabricui.errors import EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument

IB_OFF = {"NCCL_IB_DISABLE": "1"}
SOCKET = {"NCCL_NET": "Socket"}


def two_ib_hosts(catalog, env=None, nodes: int = 2, sharp: bool = False) -> Group:
    """One L40S per host, one 400G NDR InfiniBand NIC each."""
    hardware = {
        "gpu": "l40s",
        "nodes": nodes,
        "gpus_per_node": 1,
        "intra": None,
        "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 1, "sharp": sharp},
    }
    spec = parse_topology(YamlDocument(data=hardware, origin="test"), catalog, "t")
    fabric = build_fabric(spec, catalog)
    return Group(fabric, np.arange(fabric.n_gpus), library_version=(2, 27, 3), nccl_env=env)


@pytest.mark.parametrize(
    ("family", "env", "setting"),
    [
        ("infiniband", {}, None),
        ("infiniband", IB_OFF, "NCCL_IB_DISABLE=1"),
        ("infiniband", {"NCCL_IB_DISABLE": "0"}, None),
        ("roce", IB_OFF, "NCCL_IB_DISABLE=1"),
        ("infiniband", SOCKET, "NCCL_NET=Socket"),
        ("roce", {"NCCL_NET": "socket"}, "NCCL_NET=socket"),  # strcasecmp
        ("infiniband", {"NCCL_NET": "IB"}, None),
        # NCCL_NET names a plugin's network: NCCL_IB_DISABLE does not stop it.
        ("roce", {"NCCL_NET": "gIB", **IB_OFF}, None),
        # An external plugin is tried before the IB transport and ignores NCCL_IB_DISABLE.
        ("infiniband", {"NCCL_NET_PLUGIN": "rdma_sharp", **IB_OFF}, None),
        ("infiniband", {"NCCL_NET_PLUGIN": "none", **IB_OFF}, "NCCL_IB_DISABLE=1"),
        ("infiniband", {"NCCL_NET_PLUGIN": "rdma_sharp", **SOCKET}, "NCCL_NET=Socket"),
        # No IB transport to turn off: a TCP network is on sockets already, EFA and
        # Slingshot run aws-ofi-nccl.
        ("ethernet", IB_OFF, None),
        ("efa", IB_OFF, None),
        ("slingshot", SOCKET, None),
        (None, IB_OFF, None),
    ],
)
def test_socket_setting_follows_nccls_network_order(family, env, setting):
    assert socket_setting(read_env(env), family) == setting


def test_env_reads_the_network_settings():
    env = read_env({"NCCL_IB_DISABLE": " 1 ", "NCCL_NET": " Socket ", "NCCL_NET_PLUGIN": "none"})
    assert (env.ib_disable, env.net, env.net_plugin) == (True, "Socket", "none")
    assert read_env({}).ib_disable is False and read_env({}).net is None
    assert read_env({"NCCL_IB_DISABLE": "2"}).ib_disable  # any value but 0 turns it off


def test_ib_named_and_disabled_is_refused():
    """NCCL_NET=IB with NCCL_IB_DISABLE=1 leaves NCCL no network: it fails to start."""
    with pytest.raises(EngineError, match="NCCL_NET=IB with NCCL_IB_DISABLE=1"):
        read_env({"NCCL_NET": "ib", **IB_OFF})
    with pytest.raises(EngineError, match="NCCL_IB_DISABLE='yes' is not an integer"):
        read_env({"NCCL_IB_DISABLE": "yes"})


@pytest.mark.parametrize("env", [None, {"NCCL_IB_DISABLE": "0"}, {"NCCL_NET": "IB"}])
def test_infiniband_keeps_rdma(catalog, env):
    group = two_ib_hosts(catalog, env)
    assert group.net_socket_setting is None
    assert not uses_net_socket(group) and sends_wait_for_receives(group)


@pytest.mark.parametrize("env", [IB_OFF, SOCKET])
def test_infiniband_runs_over_net_socket_when_told(catalog, env):
    group = two_ib_hosts(catalog, env)
    assert group.net_socket_setting is not None
    assert uses_net_socket(group) and not sends_wait_for_receives(group)


def test_one_host_is_not_a_socket_group(catalog):
    group = two_ib_hosts(catalog, IB_OFF, nodes=1)
    assert group.net_socket_setting is None and not uses_net_socket(group)


def test_socket_ceiling_per_nic(catalog):
    """Hand-computed: a 2-rank ring all-reduce sends ``2 (n-1)/n = 1`` byte per message
    byte out of each host's one NIC; over NCCL's sockets that NIC carries at most
    ``socket_max_GBps``, so the time per byte is ``1 / (8 GB/s)`` = 1/8000 us/B. Over RDMA
    the NDR port is not the bottleneck at that rate."""
    rdma, socket = two_ib_hosts(catalog), two_ib_hosts(catalog, IB_OFF)
    expected = 1.0 / (DEFAULT.socket_max_GBps * 1e3)
    assert Ring().spb(socket, "all_reduce") == pytest.approx(expected)
    assert Ring().spb(rdma, "all_reduce") < 0.5 * expected
    fabric = socket.fabric
    nic_links = fabric.link_gen == fabric.generations.index("ib-ndr")
    assert socket.capacity_GBps[nic_links].tolist() == [DEFAULT.socket_max_GBps] * 4
    # The PCIe links to the NIC keep their own capacity.
    pcie = ~nic_links
    assert socket.capacity_GBps[pcie].tolist() == rdma.capacity_GBps[pcie].tolist()


def test_socket_nic_latency(catalog):
    """Hand-computed: a GPU-to-GPU path crosses two NICs, each now adding the socket NIC
    latency (the kernel TCP stack) instead of its RDMA latency."""
    rdma, socket = two_ib_hosts(catalog), two_ib_hosts(catalog, IB_OFF)
    nic = int(rdma.fabric.gpu_nic[0])
    rdma_nic_us = float(rdma.fabric.dev_lat_us[nic])
    assert rdma_nic_us < DEFAULT.socket_nic_lat_us
    extra = 2 * (DEFAULT.socket_nic_lat_us - rdma_nic_us)
    assert socket.path_latency_us(0, 1) == pytest.approx(rdma.path_latency_us(0, 1) + extra)
    # The catalog's fabric itself is left as it is.
    assert float(rdma.fabric.dev_lat_us[nic]) == rdma_nic_us


def test_no_gpudirect_flush_over_sockets(catalog):
    """An Ada GPU's Simple receive over RDMA waits for a flush (two NIC crossings); NCCL's
    sockets receive into host memory (``NCCL_PTR_HOST``) and need none."""
    rdma, socket = two_ib_hosts(catalog), two_ib_hosts(catalog, IB_OFF)
    nic = int(rdma.fabric.gpu_nic[0])
    assert rdma.gdr_flush_us == pytest.approx(2 * float(rdma.fabric.dev_lat_us[nic]))
    assert socket.gdr_flush_us == 0.0


@pytest.mark.parametrize("env", [IB_OFF, SOCKET])
def test_simple_over_sockets_pays_its_steps_only(catalog, env):
    """Hand-computed, as over a TCP network: ``launch + Simple base + 2 network steps +
    S * spb``, no ``NCCL_STEPS`` fill."""
    group = two_ib_hosts(catalog, env)
    sizes = np.array([4096.0, 1048576.0, 1073741824.0])
    spb = Ring().spb(group, "all_reduce")
    step = step_latency_us(group, "simple", True)
    expected = DEFAULT.launch_us + DEFAULT.base_us["simple"] + 2 * step + sizes * spb
    got = Ring().time_us(group, "all_reduce", sizes, "simple")
    assert got.tolist() == pytest.approx(expected.tolist())
    assert alpha_beta(group, sizes, "simple", 0.0, 2.0, spb).tolist() == pytest.approx(
        expected.tolist()
    )


def test_no_collnet_over_sockets(catalog):
    """NCCL's own sockets bring no CollNet: SHARP asked for is off with IB disabled."""
    release = release_for((2, 27, 3))
    asked = {"NCCL_COLLNET_ENABLE": "1"}
    rdma = two_ib_hosts(catalog, asked, sharp=True)
    socket = two_ib_hosts(catalog, {**asked, **IB_OFF}, sharp=True)
    assert NcclView.of(rdma, release, read_env(rdma.nccl_env)).collnet
    assert not NcclView.of(socket, release, read_env(socket.nccl_env)).collnet
