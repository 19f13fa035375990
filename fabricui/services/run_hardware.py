"""Whether a measured run ran on a topology's hardware: its GPU, node and network.

``calibrate`` fits only the runs of the topology's hardware, and the collectives view
compares a measured run with a prediction of the topology: both ask these functions, so
both say the same of a run on another part of the topology's GPU architecture (an H200
beside an H100: said as an assumption on the topology's node, else as other hardware).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fabricui.importers.common import gpu_id_from_name
from fabricui.importers.nccl_tests import EntryNode

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nccl_tests import ResultRun
    from fabricui.model import TopologySpec

#: Kinds of ``other_hardware`` mismatch: (JSON ``why``, verb of the report, noun of the
#: warning's count).
MISMATCHES = (
    ("gpu", "ran on", "GPU"),
    ("intra", "ran on", "intra-node fabric"),
    ("network", "ran over", "network"),
)


def other_hardware(run: ResultRun, spec: TopologySpec, catalog: Catalog) -> dict[str, str] | None:
    """What of a run's hardware differs from the topology's (a measurements entry's GPU,
    or the node it states, hosts per scale-up domain included, which another part of the
    topology's architecture must state; the GPU architecture an nccl-tests output's rank
    lines name; the network of a run over several nodes), or None: link figures fitted to
    other hardware would describe that hardware.

    Returns:
        ``{"source", "why", "ran_on"}``: ``why`` one of ``MISMATCHES``' kinds, ``ran_on``
        what the run ran on (``h200-sxm in 8-GPU nodes on pcie/pcie5``).
    """
    if run.hardware_gpu is not None:
        if run.hardware_gpu != spec.gpu and not sibling_part(run.hardware_gpu, spec.gpu, catalog):
            return {"source": run.source, "why": "gpu", "ran_on": run.hardware_gpu}
        node = run.hardware_node or EntryNode(None, None)
        # The topology's own part is kept on a node it does not state (as it always was);
        # another part only on a node said to be the topology's.
        stated = node.gpus_per_node is not None and node.fabric is not None
        own_part = run.hardware_gpu == spec.gpu
        if (stated or not own_part) and not same_node(
            node, run.hardware_gpu, spec, catalog, run.nodes
        ):
            hosts = domain_hosts(node.hosts_per_domain, run.nodes)
            shown = replace(node, hosts_per_domain=hosts)
            domain = hosts != domain_hosts(spec.intra.hosts_per_domain, run.nodes)
            text = f"{run.hardware_gpu} in {node_text(shown, catalog, run.hardware_gpu, domain)}"
            return {"source": run.source, "why": "intra", "ran_on": text}
    if run.hardware_gpu is None and other_architecture(run.gpu, spec.gpu, catalog):
        return {"source": run.source, "why": "gpu", "ran_on": str(run.gpu)}
    net = spec.net.link if spec.net is not None else None
    spans = (run.nodes or 1) > 1
    if spans and run.hardware_net is not None and run.hardware_net != net:
        return {"source": run.source, "why": "network", "ran_on": run.hardware_net}
    return None


def other_architecture(name: str | None, gpu: str, catalog: Catalog) -> bool:
    """True when a GPU name as nvidia-smi prints it (``NVIDIA A100-SXM4-80GB``) is a part
    of another architecture or vendor than the catalog GPU ``gpu``; False when they match
    or either is unknown. Parts of one architecture (H100 and H200, A100 40 and 80 GB)
    share their links, so their runs fit the same link figures."""
    known, ran_on = gpu_id_from_name(name) if name else (False, None)
    ours, theirs = catalog.gpus.get(gpu), catalog.gpus.get(ran_on or "")
    if not known or ours is None or theirs is None:
        return False
    return (theirs.vendor, theirs.arch) != (ours.vendor, ours.arch)


def sibling_part(part: str, gpu: str, catalog: Catalog) -> bool:
    """Whether catalog GPU ``part`` is another part of the vendor and architecture of
    catalog GPU ``gpu`` (h200-sxm beside h100-sxm); False when either is unknown."""
    ours, theirs = catalog.gpus.get(gpu), catalog.gpus.get(part)
    if ours is None or theirs is None:
        return False
    return (theirs.vendor, theirs.arch) == (ours.vendor, ours.arch)


def topology_node(spec: TopologySpec) -> EntryNode:
    """A node of the topology in the terms of a measurements entry's ``hardware`` block:
    its GPUs per node and intra-node fabric (one GPU per node has none), and the hosts that
    share its scale-up domain as built."""
    if spec.gpus_per_node == 1:
        return EntryNode(1, "none", hosts_per_domain=spec.hosts_per_domain)
    intra = spec.intra
    return EntryNode(
        spec.gpus_per_node,
        intra.fabric,
        intra.link,
        intra.links_per_pair,
        intra.p2p,
        spec.hosts_per_domain,
    )


def domain_hosts(per_domain: int, nodes: int | None) -> int:
    """Hosts of a run on ``nodes`` hosts that share each scale-up domain: ``per_domain``
    (``intra.hosts_per_domain``), or all of them when a domain holds more; 1 for a run on
    one host (or an unstated count), which crosses no link between hosts."""
    return max(1, min(per_domain, nodes or 1))


def _node_key(node: EntryNode, catalog: Catalog, gpu: str) -> tuple[Any, ...]:
    """What of a node decides its intra-node links: GPUs per node, fabric, link (the
    GPU's own when the node names none, as the topology builder takes it), a mesh's links
    per pair, PCIe peer-to-peer."""
    link = node.link
    record = catalog.gpus.get(gpu)
    if link is None and record is not None and node.fabric not in (None, "none"):
        link = record.pcie if node.fabric == "pcie" else record.scaleup_link
    pairs = node.links_per_pair if node.fabric == "mesh" else 1
    p2p = node.p2p if node.fabric == "pcie" else True
    return (node.gpus_per_node, node.fabric, link, pairs, p2p)


def same_node(
    node: EntryNode, part: str, spec: TopologySpec, catalog: Catalog, nodes: int | None = None
) -> bool:
    """Whether a measurements entry's node (its GPUs ``part``) is a node of the topology,
    or some of its GPUs: no more GPUs per node, on the same intra-node fabric and link (and
    a mesh's links per pair, PCIe peer-to-peer); one GPU per node crosses no intra-node
    link. Only there does a run cross the links the fit describes: a measurements file
    spans many systems, and an A100 PCIe box or a 4-GPU GH200 mesh is not a DGX's
    NVSwitch, while 2 of a DGX's 8 GPUs are (the schema's ``gpus_per_node`` counts the
    GPUs the run used). A run over ``nodes`` hosts also shares as many of them per
    scale-up domain as the topology would (``domain_hosts``): two trays of one GB200 NVL72
    talk over NVLink, two DGX B200s over the network. An entry that does not say its node
    is not taken for the topology's."""
    if node.gpus_per_node is None or node.fabric is None:
        return False
    per_node, *links = _node_key(node, catalog, part)
    our_per_node, *our_links = _node_key(topology_node(spec), catalog, spec.gpu)
    if per_node > our_per_node:
        return False
    ours = domain_hosts(spec.intra.hosts_per_domain, nodes)
    if domain_hosts(node.hosts_per_domain, nodes) != ours:
        return False
    return node.fabric == "none" or links == our_links


def node_text(node: EntryNode, catalog: Catalog, gpu: str, domain: bool = False) -> str:
    """``8-GPU nodes on nvswitch/nvlink4`` (``1-GPU nodes``; what the entry leaves out is
    said so; ``, 18 hosts sharing a scale-up domain`` where hosts share one, and with
    ``domain`` ``, each host its own scale-up domain`` where they do not): a node as the
    report names it."""
    per_node, fabric, link, pairs, p2p = _node_key(node, catalog, gpu)
    size = f"{per_node}-GPU nodes" if per_node is not None else "nodes of unstated size"
    hosts = node.hosts_per_domain
    shared = f", {hosts} hosts sharing a scale-up domain" if hosts > 1 else ""
    shared = shared or (", each host its own scale-up domain" if domain else "")
    if fabric == "none":
        return size + shared
    if fabric is None:
        return f"{size} on an unstated intra-node fabric{shared}"
    extra = f" ({pairs} links per pair)" if pairs != 1 else ""
    extra += " (no peer-to-peer)" if not p2p else ""
    return f"{size} on {fabric}/{link or 'an unstated link'}{extra}{shared}"


def part_assumed(
    run: ResultRun, spec: TopologySpec, catalog: Catalog, verb: str = "fitted"
) -> str | None:
    """What is assumed of a run kept on another part of the topology's architecture than
    its GPU (a measurements entry on the same node, the part an nccl-tests output's rank
    lines name), or None: its links are taken for the topology's.

    Args:
        run: The run, kept (``other_hardware`` found nothing).
        spec: The topology.
        catalog: The hardware database.
        verb: What is done with the run as the topology's GPUs: ``fitted`` (calibrate),
            ``priced`` (a measured run beside a prediction).

    Returns:
        ``ran on h200-sxm, fitted as dgx-h100's h100-sxm (the same hopper architecture,
        and the same 8-GPU nodes on nvswitch/nvlink4)``, without the run's name.
    """
    ours = catalog.gpus.get(spec.gpu)
    arch = f"the same {ours.arch} architecture" if ours is not None else "the same architecture"
    if run.hardware_gpu is not None:
        if run.hardware_gpu == spec.gpu:
            return None
        node = node_text(topology_node(spec), catalog, spec.gpu)
        used = run.hardware_node.gpus_per_node if run.hardware_node is not None else None
        where = f"the same {node}"
        if used is not None and used < spec.gpus_per_node:
            where = f"{used} GPU{'s' * (used > 1)} of the same {node}"
        return f"ran on {run.hardware_gpu}, {verb} as {spec.id}'s {spec.gpu} ({arch}, and {where})"
    known, part = gpu_id_from_name(run.gpu) if run.gpu else (False, None)
    if not known or part == spec.gpu:
        return None
    if part is None:
        return (
            f"the rank lines name {run.gpu}, a part the hardware database does not hold; "
            f"{verb} as {spec.id}'s {spec.gpu} (the output does not say its node's "
            "intra-node fabric)"
        )
    return (
        f"the rank lines name {run.gpu} ({part}), {verb} as {spec.id}'s {spec.gpu} "
        f"({arch}; the output does not say its node's intra-node fabric)"
    )


def topology_hardware(spec: TopologySpec, catalog: Catalog) -> dict[str, str | None]:
    """The topology's GPU, node (GPUs per node, intra-node fabric) and network link, as
    the report records them."""
    return {
        "gpu": spec.gpu,
        "network": spec.net.link if spec.net is not None else None,
        "intra": node_text(topology_node(spec), catalog, spec.gpu),
    }


def other_text(topology: str, hardware: dict[str, Any], skipped: list[dict[str, str]]) -> str:
    """``ran on b200, a100-sxm4-40gb, not dgx-h100's h100-sxm`` (and the nodes and
    networks)."""
    parts = []
    for why, word, _ in MISMATCHES:
        seen = list(dict.fromkeys(s["ran_on"] for s in skipped if s["why"] == why))
        if seen:
            ours = hardware.get(why)
            theirs = f"not {topology}'s {ours}" if ours else f"{topology} has none"
            parts.append(f"{word} {', '.join(seen)}, {theirs}")
    return "; ".join(parts)


@dataclass(frozen=True)
class HardwareMatch:
    """What a measured run shown beside a topology's prediction ran on, in the words
    ``calibrate`` uses: an assumption (another part of the topology's architecture on its
    node), or a caution (other hardware: its errors are not the model's)."""

    assumed: str | None = None
    """``ran on h200-sxm, priced as dgx-h100's h100-sxm (...)``, or None."""
    caution: str | None = None
    """``the measured run ran on h200-sxm in 1-GPU nodes, not dgx-h100's ...: its errors
    compare other links``, or None."""
    mismatch: dict[str, str] | None = None
    """``other_hardware``'s record behind the caution (``why``, ``ran_on``), or None."""

    def to_json(self) -> dict[str, Any]:
        """``assumed`` and ``caution`` (null when none), and the mismatch's ``why`` and
        ``ran_on`` (null without one), as ``calibrate --json`` names them."""
        other = self.mismatch or {}
        return {
            "assumed": self.assumed,
            "caution": self.caution,
            "why": other.get("why"),
            "ran_on": other.get("ran_on"),
        }


def hardware_match(run: ResultRun, spec: TopologySpec, catalog: Catalog) -> HardwareMatch:
    """What to say of a measured run compared with a prediction of ``spec``: the
    mismatch ``calibrate`` would leave it out for, as a caution with its reason; else
    the assumption ``calibrate`` would fit it under (``part_assumed``); else nothing."""
    other = other_hardware(run, spec, catalog)
    if other is None:
        return HardwareMatch(assumed=part_assumed(run, spec, catalog, "priced"))
    if other["why"] == "gpu":  # the view's and the report's words for another architecture
        caution = (
            f"the measured run's GPUs are {other['ran_on']}, not {spec.id}'s {spec.gpu}: "
            "its errors compare other hardware"
        )
    else:
        text = other_text(spec.id, topology_hardware(spec, catalog), [other])
        caution = f"the measured run {text}: its errors compare other links"
    return HardwareMatch(caution=caution, mismatch=other)
