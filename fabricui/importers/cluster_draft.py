"""A cluster topology spec being written: its keys and cluster lines, the choices made on
the way, and its YAML text (the lines YAML reads back exactly as written)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.spec import comment_block, yaml_keys
from fabricui.model import IntraSpec

#: Intra-node fields written when they differ from their defaults.
_INTRA_FIELDS = (
    "fabric",
    "link",
    "links_per_pair",
    "links_per_gpu",
    "p2p",
    "pcie_switches",
    "sockets",
    "host_link",
    "socket_link",
    "switch",
)
#: A text line YAML reads as the same string without quotes: blank-separated tokens of
#: plain characters (a blank inside means it is never a number, boolean or null).
_PLAIN_LINE = re.compile(r"[A-Za-z0-9_][\w.@/+=;,()-]*(?: [\w.@/+=;,()-]+)+")


@dataclass
@dataclass
class ClusterDraft:
    """A cluster topology spec ready to be rendered, with what was decided on the way."""

    data: dict[str, Any]
    """Top-level keys before ``cluster``, in the order they are written."""
    cluster: dict[str, Any]
    """``hosts_per_node`` and the ``switches``/``hosts``/``cables``/``blocks`` lines."""
    warnings: list[str] = field(default_factory=list)
    """Choices and assumptions (also written as YAML comments)."""
    comments: list[str] = field(default_factory=list)
    """Facts worth keeping next to the spec (tiers, oversubscription, left-out hosts)."""

    def summary(self) -> str:
        """One line: nodes, GPUs, switches, cables."""
        d, c = self.data, self.cluster
        per = c["hosts_per_node"]
        hosts = sum(1 for line in c["hosts"] if line.split()[0].strip('"') != "-")
        domain = (d.get("intra") or {}).get("hosts_per_domain", 1)
        nodes = f"{d['nodes']} nodes" + (f" ({hosts} hosts)" if per > 1 else "")
        if domain > 1:
            nodes += f" ({hosts} trays in {d['nodes'] // domain} NVLink domains of {domain})"
        net = d.get("net") or {}
        return (
            f"{nodes} x {d['gpus_per_node']} {d['gpu']}, {len(c['switches'])} switches, "
            f"{len(c['cables'])} switch-to-switch bundles, {net.get('layout', 'no')} network"
        )


def intra_dict(intra: IntraSpec) -> dict[str, Any]:
    """The intra-node spec as YAML keys, defaults left out."""
    defaults = IntraSpec()
    out: dict[str, Any] = {}
    for name in _INTRA_FIELDS:
        value = getattr(intra, name)
        if name == "fabric" or value != getattr(defaults, name):
            out[name] = value
    return out


def yaml_text(text: str) -> str:
    """A text line as a YAML scalar: plain when YAML reads it back unchanged, else quoted."""
    return text if _PLAIN_LINE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def token(name: str) -> str:
    """A name usable as one token of a cluster line (no blanks or ``@``; never ``-``)."""
    token = re.sub(r"[\s@]+", "_", name.strip()) or "_"
    return "_" + token if token in ("-", "#") or token.startswith("#") else token


def render_cluster_yaml(draft: ClusterDraft, gaps: list[str] | tuple[str, ...] = ()) -> str:
    """The spec as YAML text: comments (gaps, choices, facts), the keys, the cluster lines.

    Args:
        draft: The spec to render.
        gaps: The import's own warnings, written before the spec's.
    """
    out = comment_block(
        "Cluster topology written by `fabricui import` (format: docs/hwdb.md, cluster).",
        ("Gaps in the input and choices made (check them)", [*gaps, *draft.warnings]),
        ("Measured", draft.comments),
    )
    out += yaml_keys(draft.data)
    cluster = draft.cluster
    out.append("cluster:")
    out.append(f"  hosts_per_node: {cluster['hosts_per_node']}")
    sections = (
        ("switches", "NAME TIER [MODEL]"),
        ("hosts", "HOST then the switch of each NIC port ('-': no cable, SWITCH@GBPS: rate)"),
        ("cables", "SWITCH SWITCH CABLES GBPS"),
        ("blocks", "NVLink domain / Slurm block of each node"),
    )
    for key, what in sections:
        lines = cluster.get(key)
        if key == "blocks" and not lines:
            continue
        if not lines:
            out.append(f"  {key}: []")
            continue
        out.append(f"  {key}:  # {what}")
        out += [f"    - {line}" for line in lines]
    return "\n".join(out) + "\n"
