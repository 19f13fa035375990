"""fabricui-ualink: UALink 1.0 figures, the pod builder's limits, and the plugin inside fabricui.

Run with the plugin installed (``pip install -e .`` next to this file, then ``pytest``).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from fabricui_ualink import POD_BUILDER, UALINK
from fabricui_ualink.links import LINKS, ualink_port
from fabricui_ualink.pod import MAX_ACCELERATORS

from fabricui import api
from fabricui.api import ConfigError, DeviceKind, TopologySpec


@pytest.fixture(scope="module")
def host():
    """Built-ins plus every installed plugin (this one among them)."""
    return api.plugin_host()


@pytest.fixture(scope="module")
def catalog(host):
    return api.load_catalog(host=host)


@pytest.fixture(scope="module")
def pod(catalog) -> TopologySpec:
    return api.resolve_topology("ualink-pod", catalog)


def with_intra(spec: TopologySpec, **changes) -> TopologySpec:
    """The spec with some ``intra`` keys changed (and no scale-out net)."""
    return dataclasses.replace(spec, intra=dataclasses.replace(spec.intra, **changes), net=None)


def test_port_generations_follow_the_lane_rate():
    """x1, x2, x4 ports move 25, 50, 100 GB/s per direction (200 Gb/s lanes)."""
    assert [(link.id, link.bw_GBps) for link in LINKS] == [
        ("ualink200-x1", 25.0),
        ("ualink200-x2", 50.0),
        ("ualink200-x4", 100.0),
    ]
    for link in LINKS:
        assert link.family == "ualink" and link.tier == "scale-up" and link.year == 2025
        assert link.source.startswith("https://")
        assert set(link.sources) == {"efficiency", "lat_us", "year"}


def test_no_x3_port():
    """UALink 1.0 defines x1, x2 and x4 ports only."""
    with pytest.raises(ValueError, match="x1, x2 or x4"):
        ualink_port(3)


def test_plugin_loads_from_its_entry_point(host):
    """The installed entry point loads and contributes links, interconnect, builder, hwdb."""
    row = next(r for r in host.describe() if r["name"] == "ualink")
    assert row["status"] == "ok" and row["source"] == "entry point"
    assert row["dist"] == "fabricui-ualink" and row["version"] == "0.1.0"
    contributes = row["contributes"]
    assert contributes["link_generations"] == [link.id for link in LINKS]
    assert contributes["interconnects"] == [UALINK.name]
    assert contributes["topology_builders"] == [POD_BUILDER.name]
    assert len(contributes["hwdb_paths"]) == 1


def test_reference_pod_spec(pod, catalog):
    """The shipped pod selects the builder: 128 accelerators, 4 x4 ports, 32 hosts."""
    assert pod.builder == "ualink-pod"
    assert (pod.nodes, pod.gpus_per_node, pod.intra.sockets) == (1, 128, 32)
    assert catalog.switches["ualink-switch-100t"].family == "ualink"


def test_path_crosses_one_switch_on_bundled_ports(pod, catalog, host):
    """Two accelerators of different hosts meet in the switch layer over 4 x4 ports."""
    fabric = api.build(pod, catalog, host)
    report = api.path(fabric, "n0.g0", "n0.g127")
    assert [(h.link, h.count, h.bw_GBps) for h in report.hops] == [
        ("ualink200-x4", 4, 400.0),
        ("ualink200-x4", 4, 400.0),
    ]
    # Two link hops of 0.12 us and one switch traversal of 0.25 us: under half of the
    # specification's < 1 us round trip.
    assert report.latency_us == pytest.approx(0.49)
    switch = int(fabric.link_dst[api.route_links(fabric, 0, 127)[0]])
    assert fabric.model_of(switch).endswith("4 planes")


def test_hosts_are_separate_servers(pod, catalog, host):
    """One CPU per host and no socket-to-socket links between hosts."""
    fabric = api.build(pod, catalog, host)
    cpus = fabric.devices_of_kind(DeviceKind.CPU)
    assert cpus.size == 32
    cpu_to_cpu = (fabric.dev_kind[fabric.link_src] == DeviceKind.CPU) & (
        fabric.dev_kind[fabric.link_dst] == DeviceKind.CPU
    )
    assert not cpu_to_cpu.any()
    assert len(set(fabric.gpu_cpu[:8].tolist())) == 2  # 4 accelerators per host


def test_all_reduce_reaches_the_port_bundle(pod, catalog, host):
    """A large ring all-reduce approaches 4 x 100 GB/s x 0.93 bus bandwidth."""
    fabric = api.build(pod, catalog, host)
    size = 8 * 2**30
    prediction = api.collective(fabric, "all_reduce", [size])
    n = fabric.n_gpus
    busbw = size / prediction.time_us[0] / 1e3 * 2 * (n - 1) / n
    assert 0.95 * 372.0 < busbw <= 372.0


def test_pods_join_over_the_net(catalog, host):
    """--nodes 2: two pods, joined by the spec's 400G RoCE net."""
    spec = api.resolve_topology("ualink-pod", catalog, nodes=2)
    fabric = api.build(spec, catalog, host)
    report = api.path(fabric, "n0.g0", "n1.g0")
    assert "roce" in {h.link for h in report.hops}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"gpus_per_node": MAX_ACCELERATORS + 1},
            "gpus_per_node: a UALink 1.0 pod holds at most 1,024 accelerators",
        ),
        (
            {"gpus_per_node": 256},
            "256 accelerators need 256 x4 ports on every switch plane; ualink-switch-100t has 128",
        ),
        ({"intra": {"link": "nvlink5"}}, "intra.link: nvlink5 is a nvlink link"),
        ({"intra": {"link": None}}, "intra.link: required"),
        ({"intra": {"links_per_gpu": None}}, "intra.links_per_gpu: required"),
        ({"intra": {"fabric": "nvswitch"}}, "intra.fabric: leave it out"),
        ({"intra": {"sockets": 5}}, "intra.sockets: 128 accelerators do not split evenly"),
        ({"intra": {"switch": "quantum-2"}}, "quantum-2 is a infiniband switch"),
    ],
)
def test_bad_pods_are_one_line_errors(pod, catalog, host, changes, message):
    """Each broken limit names the spec file and key in one line."""
    intra = changes.pop("intra", {})
    spec = dataclasses.replace(with_intra(pod, **intra), **changes)
    with pytest.raises(ConfigError) as exc:
        api.build(spec, catalog, host)
    text = str(exc.value)
    assert "\n" not in text and "ualink-pod.yaml" in text and message in text


def test_a_switch_without_its_ports_is_a_one_line_error(pod, catalog, host):
    """A UALink switch record that leaves out its port count cannot size a plane: the
    spec's ``intra.switch`` is named, in one line."""
    switch = catalog.switches["ualink-switch-100t"]
    portless = dataclasses.replace(switch, id="ualink-switch-portless", radix=None)
    bare = dataclasses.replace(catalog, switches={**catalog.switches, portless.id: portless})
    with pytest.raises(ConfigError) as exc:
        api.build(with_intra(pod, switch=portless.id), bare, host)
    text = str(exc.value)
    assert "\n" not in text and "intra.switch" in text and "radix, port_Gbps" in text


def test_x1_ports_fill_a_512_accelerator_plane(pod, catalog, host):
    """With x1 ports the 512-lane switch holds 512 accelerators per plane."""
    spec = dataclasses.replace(
        with_intra(pod, link="ualink200-x1", links_per_gpu=8, sockets=None), gpus_per_node=512
    )
    fabric = api.build(spec, catalog, host)
    assert fabric.n_gpus == 512
    assert api.path(fabric, 0, 511).bottleneck_GBps == pytest.approx(8 * 25.0)


def test_cli_path_and_collective(capsys):
    """The commands use the installed plugin's topology, builder and links."""
    assert (
        api.run_cli(["path", "--topology", "ualink-pod", "--src", "n0.g0", "--dst", "n0.g5"]) == 0
    )
    assert "ualink200-x4 x4" in capsys.readouterr().out
    status = api.run_cli(
        ["collective", "all_reduce", "--topology", "ualink-pod", "--size", "1G", "--json"]
    )
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert result["topology"] == "ualink-pod" and result["nranks"] == 128
