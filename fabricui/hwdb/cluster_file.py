"""Read the ``cluster`` section of a topology spec: a real cluster's switches, cables and hosts.

The section is written for size and speed: one short text line per switch, host and cable
(a 4,000-switch fabric has tens of thousands of cables, and YAML reads lists of strings
an order of magnitude faster than lists of mappings)::

    cluster:
      hosts_per_node: 1           # hosts in one node (trays of an NVLink domain)
      switches:                   # NAME TIER [MODEL ...]
        - LG01-01 leaf MQM8700
        - CSPINE1-01 spine MQM8700
      hosts:                      # HOST then the switch of each NIC port, in NIC order
        - luna-0001 LG01-01 LG02-01
        - luna-0002 LG01-01 -      # '-': that port has no cable
        - luna-0003 LG01-01@100 LG02-01   # SWITCH@GBPS: a cable slower than net.gbps
      cables:                     # SWITCH SWITCH CABLES GBPS (a bundle)
        - LG01-01 CSPINE1-01 2 200
      blocks: [rack1, rack2]      # optional: each node's block / NVLink domain

A host line ``-`` alone is an empty slot (a domain position without a host). Every name and
count is checked here, against the spec's nodes, GPUs and NICs, so a broken file fails on
load with its line number, never later in the builder.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fabricui.errors import HwdbError, unknown_key_message
from fabricui.hwdb.yamlfile import KeyPath, YamlDocument, format_path
from fabricui.model.cluster import (
    CLUSTER_TIERS,
    ClusterCable,
    ClusterHost,
    ClusterSpec,
    ClusterSwitch,
)

if TYPE_CHECKING:
    from fabricui.model.topology import TopologySpec

#: Keys of the ``cluster`` mapping.
_KEYS = ("hosts_per_node", "switches", "cables", "hosts", "blocks")
#: Most switches, hosts and cables a cluster section may list (beyond any real fabric).
MAX_SWITCHES = 65_536
MAX_HOSTS = 262_144
MAX_CABLES = 4_000_000
#: Most parallel cables in one bundle (the fabric stores counts as 16-bit integers).
MAX_BUNDLE = 32_767


def _fail(doc: YamlDocument, path: KeyPath, problem: str) -> HwdbError:
    return HwdbError(f"{doc.where(path)}: {format_path(path)}: {problem}")


def _lines(doc: YamlDocument, path: KeyPath, value: Any, limit: int) -> list[str]:
    """A list of text lines (or an empty list)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(doc, path, f"expected a list of text lines (got {type(value).__name__})")
    if len(value) > limit:
        raise _fail(doc, path, f"at most {limit:,} entries (got {len(value):,})")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise _fail(doc, (*path, i), f"expected a non-empty text line (got {item!r:.40})")
    return value


def _rate(doc: YamlDocument, path: KeyPath, text: str) -> float:
    try:
        gbps = float(text)
    except ValueError:
        gbps = math.nan
    if not (math.isfinite(gbps) and 0 < gbps <= 1e6):
        raise _fail(doc, path, f"rate {text[:20]!r} is not a positive number of Gb/s")
    return gbps


def parse_cluster(doc: YamlDocument, path: KeyPath, data: Any, spec: TopologySpec) -> ClusterSpec:
    """Turn the ``cluster`` mapping into a checked ``ClusterSpec`` for ``spec``.

    Args:
        doc: The document (for line numbers).
        path: Key path of the section.
        data: The mapping read from YAML.
        spec: The rest of the topology spec (nodes, GPUs, network).

    Returns:
        The cluster.

    Raises:
        HwdbError: Naming the line and key of the first problem: a malformed line, an
            unknown or duplicate name, counts that do not match the spec's nodes, GPUs per
            node or NICs per node.
    """
    if data is None:
        raise _fail(
            doc, path, "net.layout explicit needs a cluster section (switches, cables, hosts)"
        )
    if not isinstance(data, dict):
        raise _fail(doc, path, "expected a mapping with switches, cables, hosts, blocks")
    for key in data:
        if key not in _KEYS:
            raise _fail(doc, (*path, str(key)), unknown_key_message(str(key), _KEYS))
    per_node = data.get("hosts_per_node", 1)
    if isinstance(per_node, bool) or not isinstance(per_node, int) or not 1 <= per_node <= 1024:
        raise _fail(doc, (*path, "hosts_per_node"), f"expected 1 to 1024 (got {per_node!r:.20})")
    if spec.gpus_per_node % per_node:
        raise _fail(
            doc,
            (*path, "hosts_per_node"),
            f"{per_node} does not divide gpus_per_node ({spec.gpus_per_node})",
        )
    explicit = spec.net is not None and spec.net.layout == "explicit"
    switches = _switches(doc, (*path, "switches"), data.get("switches"))
    if explicit and not switches:
        raise _fail(doc, (*path, "switches"), "net.layout explicit needs the cluster's switches")
    if switches and not explicit:
        raise _fail(doc, (*path, "switches"), "only used with net.layout: explicit")
    names = {s.name for s in switches}
    cables = _cables(doc, (*path, "cables"), data.get("cables"), names)
    nics = 0
    if explicit:
        assert spec.net is not None
        if spec.net.nics_per_node % per_node:
            raise _fail(
                doc,
                (*path, "hosts_per_node"),
                f"{per_node} does not divide net.nics_per_node ({spec.net.nics_per_node})",
            )
        nics = spec.net.nics_per_node // per_node
    hosts = _hosts(doc, (*path, "hosts"), data.get("hosts"), names, nics)
    if len(hosts) != spec.nodes * per_node:
        raise _fail(
            doc,
            (*path, "hosts"),
            f"needs nodes x hosts_per_node = {spec.nodes} x {per_node} = "
            f"{spec.nodes * per_node} hosts (got {len(hosts)})",
        )
    blocks = _lines(doc, (*path, "blocks"), data.get("blocks"), MAX_HOSTS)
    if blocks and len(blocks) != spec.nodes:
        raise _fail(
            doc, (*path, "blocks"), f"needs one name per node ({spec.nodes}), got {len(blocks)}"
        )
    return ClusterSpec(
        hosts_per_node=per_node,
        switches=tuple(switches),
        cables=tuple(cables),
        hosts=tuple(hosts),
        blocks=tuple(b.strip() for b in blocks),
    )


def _switches(doc: YamlDocument, path: KeyPath, value: Any) -> list[ClusterSwitch]:
    out: list[ClusterSwitch] = []
    seen: set[str] = set()
    for i, line in enumerate(_lines(doc, path, value, MAX_SWITCHES)):
        parts = line.split(None, 2)
        if len(parts) < 2 or parts[1] not in CLUSTER_TIERS:
            raise _fail(
                doc,
                (*path, i),
                f"expected 'NAME TIER [MODEL]' with TIER {'/'.join(CLUSTER_TIERS)} "
                f"(got {line[:60]!r})",
            )
        name = parts[0]
        if name in seen or name == "-":
            raise _fail(doc, (*path, i), f"switch {name} is listed twice (or named '-')")
        seen.add(name)
        out.append(ClusterSwitch(name, parts[1], parts[2].strip() if len(parts) > 2 else ""))
    return out


def _cables(doc: YamlDocument, path: KeyPath, value: Any, names: set[str]) -> list[ClusterCable]:
    out: list[ClusterCable] = []
    for i, line in enumerate(_lines(doc, path, value, MAX_CABLES)):
        parts = line.split()
        if len(parts) != 4 or not parts[2].isdigit() or len(parts[2]) > 6:
            raise _fail(
                doc, (*path, i), f"expected 'SWITCH SWITCH CABLES GBPS' (got {line[:60]!r})"
            )
        a, b, count = parts[0], parts[1], int(parts[2])
        for end in (a, b):
            if end not in names:
                raise _fail(doc, (*path, i), f"switch {end} is not in cluster.switches")
        if a == b:
            raise _fail(doc, (*path, i), f"a cable from {a} to itself (a self-loop) joins nothing")
        if not 1 <= count <= MAX_BUNDLE:
            raise _fail(doc, (*path, i), f"cable count must be 1 to {MAX_BUNDLE} (got {count})")
        out.append(ClusterCable(a, b, count, _rate(doc, (*path, i), parts[3])))
    return out


def _hosts(
    doc: YamlDocument, path: KeyPath, value: Any, names: set[str], nics: int
) -> list[ClusterHost]:
    out: list[ClusterHost] = []
    seen: set[str] = set()
    for i, line in enumerate(_lines(doc, path, value, MAX_HOSTS)):
        parts = line.split()
        if parts == ["-"]:
            out.append(ClusterHost(None, (None,) * nics, (None,) * nics))
            continue
        host, ports = parts[0], parts[1:]
        if host in seen:
            raise _fail(doc, (*path, i), f"host {host} is listed twice")
        seen.add(host)
        if len(ports) != nics:
            what = f"{nics} NIC port(s) per host" if nics else "no NIC ports (net is not explicit)"
            raise _fail(
                doc, (*path, i), f"host {host}: expected {what}, got {len(ports)} switch name(s)"
            )
        switch_of: list[str | None] = []
        gbps: list[float | None] = []
        for token in ports:
            switch, _, rate = token.partition("@")
            if switch == "-":
                switch_of.append(None)
                gbps.append(None)
                continue
            if switch not in names:
                raise _fail(doc, (*path, i), f"host {host}: switch {switch} is not in switches")
            switch_of.append(switch)
            gbps.append(_rate(doc, (*path, i), rate) if rate else None)
        out.append(ClusterHost(host, tuple(switch_of), tuple(gbps)))
    return out
