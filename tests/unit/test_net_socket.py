"""NCCL's NET/Socket transport: a send goes into the TCP stream without waiting for the
receiver's posted buffer, so a Simple call across it has no ``NCCL_STEPS`` pipeline fill;
NCCL's RDMA transports keep theirs."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import (
    NCCL_STEPS,
    Ring,
    alpha_beta,
    network_fill_us,
    network_pipeline_fill_us,
    step_latency_us,
)
from fabricui.engine.constants import DEFAULT
from fabricui.engine.group import Group
from fabricui.engine.net_socket import sends_wait_for_receives, uses_net_socket
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument


def two_hosts(catalog, link: str, gbps: int, nodes: int = 2) -> Group:
    """One L40S per host, one NIC each (the shape of the socket runs measured)."""
    hardware = {
        "gpu": "l40s",
        "nodes": nodes,
        "gpus_per_node": 1,
        "intra": None,
        "net": {"link": link, "gbps": gbps, "nics_per_node": 1},
    }
    spec = parse_topology(YamlDocument(data=hardware, origin="test"), catalog, "t")
    fabric = build_fabric(spec, catalog)
    return Group(fabric, np.arange(fabric.n_gpus), library_version=(2, 27, 3))


def test_tcp_runs_over_net_socket(catalog):
    group = two_hosts(catalog, "tcp", 400)
    assert uses_net_socket(group)
    assert not sends_wait_for_receives(group)


def test_rdma_sends_wait_for_receives(catalog):
    group = two_hosts(catalog, "ib-ndr", 400)
    assert not uses_net_socket(group)
    assert sends_wait_for_receives(group)


def test_one_host_is_not_a_socket_group(catalog):
    """Nothing crosses the network on one host, whatever its NIC."""
    group = two_hosts(catalog, "tcp", 400, nodes=1)
    assert not uses_net_socket(group)


def test_simple_over_tcp_pays_its_steps_only(catalog):
    """Hand-computed: a 2-rank ring all-reduce has 2 network steps and none within a node,
    so over NET/Socket ``launch + Simple base + 2 network steps + S * spb``."""
    group = two_hosts(catalog, "tcp", 400)
    sizes = np.array([4096.0, 1048576.0, 1073741824.0])
    spb = Ring().spb(group, "all_reduce")
    step = step_latency_us(group, "simple", True)
    expected = DEFAULT.launch_us + DEFAULT.base_us["simple"] + 2 * step + sizes * spb
    got = alpha_beta(group, sizes, "simple", 0.0, 2.0, spb)
    assert got.tolist() == pytest.approx(expected.tolist())
    assert Ring().time_us(group, "all_reduce", sizes, "simple").tolist() == pytest.approx(
        expected.tolist()
    )


def test_simple_over_rdma_keeps_its_fill(catalog):
    """The same call over InfiniBand adds ``NCCL_STEPS`` network steps' fill."""
    group = two_hosts(catalog, "ib-ndr", 400)
    sizes = np.array([1048576.0, 1073741824.0])
    spb = Ring().spb(group, "all_reduce")
    step = step_latency_us(group, "simple", True)
    fill = network_fill_us(sizes, group.nccl_channels, step)
    expected = DEFAULT.launch_us + DEFAULT.base_us["simple"] + 2 * step + fill + sizes * spb
    got = alpha_beta(group, sizes, "simple", 0.0, 2.0, spb)
    assert got.tolist() == pytest.approx(expected.tolist())
    assert fill[-1] == pytest.approx(NCCL_STEPS * step)


def test_pipeline_fill_for_plugins(catalog):
    """``network_pipeline_fill_us`` (what plugin algorithms add) follows the transport."""
    assert network_pipeline_fill_us(two_hosts(catalog, "tcp", 400)) == 0.0
    ib = two_hosts(catalog, "ib-ndr", 400)
    assert network_pipeline_fill_us(ib) == pytest.approx(
        NCCL_STEPS * step_latency_us(ib, "simple", True)
    )


def test_ll_over_tcp_is_unchanged(catalog):
    """Only Simple fills a pipeline: LL's time has no fill on any transport."""
    group = two_hosts(catalog, "tcp", 400)
    sizes = np.array([8.0])
    step = step_latency_us(group, "ll", True)
    got = alpha_beta(group, sizes, "ll", 0.0, 2.0, 0.0)
    expected = DEFAULT.launch_us + DEFAULT.base_us["ll"] + 2 * step
    assert got.tolist() == pytest.approx([expected])
