"""The ``ualink-pod`` topology builder: accelerators on a single stage of UALink switches.

A UALink 1.0 pod is one scale-up domain of at most 1,024 accelerators (their ids are 10
bits). Each accelerator has ``intra.links_per_gpu`` ports of one width (x1, x2 or x4); port
``k`` of every accelerator goes to switch ``k``, so each switch is a *plane* that gives every
accelerator one port and any two accelerators meet in one switch hop on every plane.

fabricui's node is the scale-up domain (a GB200 NVL72 rack is one node), so a spec's
``nodes`` counts pods and ``gpus_per_node`` the accelerators of a pod; ``intra.sockets``
counts the hosts (servers, one CPU each) the accelerators sit in. As for NVSwitch, the planes
are modelled as one logical switch that each accelerator reaches over a bundle of its ports:
the bandwidth is right (traffic spreads over the planes), the chip count is in the switch's
label. A ``net`` joins pods through per-accelerator NICs (``--nodes N``), built by fabricui's
own builder.

Spec keys the builder reads::

    builder: ualink-pod
    gpus_per_node: 128        # accelerators per pod, at most 1,024
    intra:
      link: ualink200-x4      # port width (required)
      links_per_gpu: 4        # ports per accelerator = switch planes (required)
      switch: ualink-switch-100t   # one plane (default)
      sockets: 32             # hosts; accelerators split evenly (default: 4 per host)
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from fabricui.api import (
    ConfigError,
    Fabric,
    IntraSpec,
    LinkGeneration,
    SwitchSpec,
    TopologySpec,
    build_fabric,
)
from fabricui_ualink.links import FAMILY

if TYPE_CHECKING:
    from fabricui.api import Catalog

#: Name of the builder (the ``builder:`` key of a topology spec).
BUILDER_NAME = "ualink-pod"
#: Accelerators one UALink 1.0 pod can address (10-bit accelerator ids).
MAX_ACCELERATORS = 1024
#: Switch model of a plane when the spec names none.
DEFAULT_SWITCH = "ualink-switch-100t"
#: Accelerators per host when ``intra.sockets`` is not given (4 when they divide evenly).
DEFAULT_PER_HOST = 4
#: No link generation has this id: the translated spec uses it so hosts get no
#: socket-to-socket links (hosts are separate servers, unlike the sockets of one server).
_NO_SOCKET_LINK = ""


def _fail(spec: TopologySpec, key: str, problem: str) -> ConfigError:
    where = spec.origin or f"topology {spec.id}"
    return ConfigError(f"{where}: {key}: {problem} ({BUILDER_NAME} builder)")


def _port_link(spec: TopologySpec, catalog: Catalog) -> LinkGeneration:
    intra = spec.intra
    ualink = sorted(k for k, v in catalog.links.items() if v.family == FAMILY)
    if intra.link is None:
        raise _fail(spec, "intra.link", f"required: the port width, one of {', '.join(ualink)}")
    link: LinkGeneration = catalog.links[intra.link]  # the catalog checked the id
    if link.family != FAMILY:
        raise _fail(
            spec,
            "intra.link",
            f"{link.id} is a {link.family} link; a UALink pod needs one of {', '.join(ualink)}",
        )
    return link


def _plane_switch(spec: TopologySpec, catalog: Catalog) -> SwitchSpec:
    switch_id = spec.intra.switch or DEFAULT_SWITCH
    if switch_id not in catalog.switches:
        raise _fail(spec, "intra.switch", f"no switch {switch_id!r} in the hardware database")
    switch: SwitchSpec = catalog.switches[switch_id]
    if switch.family != FAMILY:
        raise _fail(
            spec,
            "intra.switch",
            f"{switch.id} is a {switch.family} switch, not a UALink switch",
        )
    return switch


def check_pod(spec: TopologySpec, catalog: Catalog) -> tuple[LinkGeneration, SwitchSpec, int]:
    """Check a pod spec against UALink 1.0 and its switch.

    Args:
        spec: A topology spec with ``builder: ualink-pod``.
        catalog: The hardware database (with this plugin's link generations and switch).

    Returns:
        (port link generation, plane switch, hosts per pod).

    Raises:
        ConfigError: The pod breaks a UALink 1.0 limit or the switch's port count, naming
            the spec file and key.
    """
    intra = spec.intra
    n = spec.gpus_per_node
    if intra.fabric != "none":
        raise _fail(
            spec,
            "intra.fabric",
            "leave it out: the builder wires the pod through UALink switches "
            f"(got {intra.fabric!r})",
        )
    if n > MAX_ACCELERATORS:
        raise _fail(
            spec,
            "gpus_per_node",
            f"a UALink 1.0 pod holds at most {MAX_ACCELERATORS:,} accelerators (10-bit ids), "
            f"got {n:,}; use more pods (nodes) joined by a net",
        )
    if n < 2:
        raise _fail(spec, "gpus_per_node", f"a pod needs at least 2 accelerators (got {n})")
    link = _port_link(spec, catalog)
    ports = intra.links_per_gpu
    if ports is None or ports < 1:
        raise _fail(
            spec,
            "intra.links_per_gpu",
            f"required, at least 1: UALink ports per accelerator, one per switch plane "
            f"(got {ports})",
        )
    switch = _plane_switch(spec, catalog)
    radix, port_Gbps = switch.radix, switch.port_Gbps
    if radix is None or port_Gbps is None:
        raise _fail(
            spec,
            "intra.switch",
            f"{switch.id} states no port count and speed (radix, port_Gbps): a pod's "
            "planes cannot be sized on it",
        )
    plane_ports = int(radix * port_Gbps // (link.bw_GBps * 8.0))
    if n > plane_ports:
        lanes = link.id.rsplit("-", 1)[-1]
        raise _fail(
            spec,
            "gpus_per_node",
            f"{n:,} accelerators need {n:,} {lanes} ports on every switch plane; "
            f"{switch.id} has {plane_ports:,} ({radix * port_Gbps / 1000:g} Tb/s): "
            "use narrower ports, fewer accelerators or a larger switch (intra.switch)",
        )
    hosts = intra.sockets if intra.sockets is not None else n // math.gcd(n, DEFAULT_PER_HOST)
    if hosts < 1 or n % hosts:
        raise _fail(
            spec,
            "intra.sockets",
            f"{n} accelerators do not split evenly over {hosts} hosts",
        )
    return link, switch, hosts


def build_pod(spec: TopologySpec, catalog: Catalog) -> Fabric:
    """Build the fabric of a UALink pod spec (``builder: ualink-pod``).

    Args:
        spec: The topology spec; the fabric keeps it as its ``spec``.
        catalog: The hardware database.

    Returns:
        One node block per pod: the accelerators, one CPU per host with each accelerator on
        its host's PCIe, and the switch planes as one logical switch that every accelerator
        reaches over ``links_per_gpu`` bundled ports; then the ``net`` between pods.

    Raises:
        ConfigError: The spec breaks a UALink 1.0 limit (see ``check_pod``).
    """
    link, switch, hosts = check_pod(spec, catalog)
    ports = spec.intra.links_per_gpu
    intra = IntraSpec(
        fabric="nvswitch",  # fabricui's builder for "every GPU on one logical switch"
        link=link.id,
        links_per_gpu=ports,
        switch=switch.id,
        sockets=hosts,
        pcie_switches=spec.intra.pcie_switches or 0,
        host_link=spec.intra.host_link,
        socket_link=_NO_SOCKET_LINK,
    )
    fabric = build_fabric(dataclasses.replace(spec, intra=intra, builder=None), catalog)
    label = f"{switch.name}, {ports} plane{'s' if ports != 1 else ''}"
    models = tuple(label if m == switch.name else m for m in fabric.dev_model)
    return dataclasses.replace(fabric, spec=spec, dev_model=models)
