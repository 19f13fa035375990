"""What a measured run shown beside a topology's prediction ran on (``hardware_match``),
in the words ``calibrate`` uses: another part of the topology's architecture on its node
is an assumption; another node, network or architecture is a caution with the reason."""

from __future__ import annotations

import pytest

from fabricui.hwdb.resolve import resolve_topology
from fabricui.importers.nccl_tests import EntryNode, ResultRow, ResultRun
from fabricui.services.run_hardware import hardware_match, part_assumed

#: A DGX H100's node as a measurements entry describes it.
DGX_H100_NODE = EntryNode(8, "nvswitch", "nvlink4")
ROWS = (ResultRow(1 << 20, 28.6, None, None),)


def entry(gpu: str, node: EntryNode, nodes: int = 1, net: str | None = None) -> ResultRun:
    """A measurements entry of ``gpu`` on ``nodes`` of ``node``."""
    return ResultRun(
        "m.yaml#box",
        "all_reduce",
        ROWS,
        nranks=nodes * (node.gpus_per_node or 1),
        nodes=nodes,
        entry_id="box",
        hardware_gpu=gpu,
        hardware_net=net,
        hardware_node=node,
    )


def output(gpu: str) -> ResultRun:
    """An nccl-tests output whose rank lines name ``gpu``."""
    return ResultRun("run.txt:3", "all_reduce", ROWS, nranks=8, nodes=1, gpu=gpu)


def test_a_sibling_part_on_the_topologys_node_is_an_assumption(catalog):
    """An H200 entry on the DGX H100's NVSwitch: assumed, in calibrate's words with the
    view's verb, and no caution."""
    match = hardware_match(
        entry("h200-sxm", DGX_H100_NODE), resolve_topology("dgx-h100", catalog), catalog
    )
    assert match.assumed == (
        "ran on h200-sxm, priced as dgx-h100's h100-sxm (the same hopper architecture, "
        "and the same 8-GPU nodes on nvswitch/nvlink4)"
    )
    assert match.caution is None and match.mismatch is None
    assert match.to_json() == {
        "assumed": match.assumed,
        "caution": None,
        "why": None,
        "ran_on": None,
    }


def test_calibrate_and_the_view_share_the_words(catalog):
    """``part_assumed`` says ``fitted`` for calibrate and ``priced`` for the view, the rest
    alike (one function)."""
    spec = resolve_topology("dgx-a100", catalog)
    run = entry("a100-sxm4-40gb", EntryNode(8, "nvswitch"))  # the link left to the GPU's
    fitted = part_assumed(run, spec, catalog)
    assert fitted == (
        "ran on a100-sxm4-40gb, fitted as dgx-a100's a100-sxm4-80gb (the same ampere "
        "architecture, and the same 8-GPU nodes on nvswitch/nvlink3)"
    )
    assert hardware_match(run, spec, catalog).assumed == fitted.replace("fitted", "priced")


@pytest.mark.parametrize(
    ("node", "where"),
    [
        (EntryNode(2, "nvswitch", "nvlink4"), "2 GPUs of the same 8-GPU nodes"),
        (EntryNode(1, "none"), "1 GPU of the same 8-GPU nodes"),  # crosses no NVLink
    ],
)
def test_some_gpus_of_the_topologys_node_are_its_node(catalog, node, where):
    """A run on 2 of a node's 8 GPUs on its switch (the schema counts the GPUs a run
    used), or on one GPU per node, crosses the topology's links: kept, and said so."""
    spec = resolve_topology("dgx-h100", catalog)
    match = hardware_match(entry("h200-sxm", node), spec, catalog)
    assert match.caution is None
    assert match.assumed == (
        "ran on h200-sxm, priced as dgx-h100's h100-sxm (the same hopper architecture, and "
        f"{where} on nvswitch/nvlink4)"
    )


@pytest.mark.parametrize(
    ("topology", "run", "caution"),
    [
        (  # four H200s bridged to each other (an NVL board): no NVSwitch at all
            "dgx-h100",
            entry("h200-sxm", EntryNode(4, "mesh", "nvlink4")),
            "the measured run ran on h200-sxm in 4-GPU nodes on mesh/nvlink4, not dgx-h100's "
            "8-GPU nodes on nvswitch/nvlink4: its errors compare other links",
        ),
        (  # the topology's own part, on a node it states to be another
            "dgx-h100",
            entry("h100-sxm", EntryNode(8, "pcie", "pcie5")),
            "the measured run ran on h100-sxm in 8-GPU nodes on pcie/pcie5, not dgx-h100's "
            "8-GPU nodes on nvswitch/nvlink4: its errors compare other links",
        ),
        (  # an A100 PCIe box against a DGX A100
            "dgx-a100",
            entry("a100-sxm4-40gb", EntryNode(8, "pcie", "pcie4")),
            "the measured run ran on a100-sxm4-40gb in 8-GPU nodes on pcie/pcie4, not "
            "dgx-a100's 8-GPU nodes on nvswitch/nvlink3: its errors compare other links",
        ),
        (  # an entry that does not say its node is not taken for the topology's
            "dgx-h100",
            entry("h200-sxm", EntryNode(None, None)),
            "the measured run ran on h200-sxm in nodes of unstated size on an unstated "
            "intra-node fabric, not dgx-h100's 8-GPU nodes on nvswitch/nvlink4: its errors "
            "compare other links",
        ),
        (
            "dgx-h100",
            entry("a100-sxm4-80gb", EntryNode(8, "nvswitch", "nvlink3")),
            "the measured run's GPUs are a100-sxm4-80gb, not dgx-h100's h100-sxm: its "
            "errors compare other hardware",
        ),
        (
            "dgx-h100",
            output("NVIDIA A100-SXM4-80GB"),
            "the measured run's GPUs are NVIDIA A100-SXM4-80GB, not dgx-h100's h100-sxm: "
            "its errors compare other hardware",
        ),
        (
            "dgx-h100",
            entry("h100-sxm", DGX_H100_NODE, nodes=2, net="roce-400"),
            "the measured run ran over roce-400, not dgx-h100's ib-ndr: its errors compare "
            "other links",
        ),
    ],
)
def test_other_hardware_is_a_caution_with_the_reason(catalog, topology, run, caution):
    """Another node, network or architecture: a caution naming both sides, nothing
    assumed, and calibrate's ``why`` and ``ran_on`` in the JSON."""
    match = hardware_match(run, resolve_topology(topology, catalog), catalog)
    assert match.caution == caution and match.assumed is None
    assert match.mismatch is not None
    assert match.to_json()["why"] == match.mismatch["why"]


def test_an_output_naming_a_sibling_part_is_an_assumption(catalog):
    """Rank lines naming H200s on dgx-h100: assumed (the output does not say its node)."""
    match = hardware_match(output("NVIDIA H200"), resolve_topology("dgx-h100", catalog), catalog)
    assert match.assumed == (
        "the rank lines name NVIDIA H200 (h200-sxm), priced as dgx-h100's h100-sxm (the "
        "same hopper architecture; the output does not say its node's intra-node fabric)"
    )
    assert match.caution is None


@pytest.mark.parametrize(
    "run", [entry("h100-sxm", DGX_H100_NODE), output("NVIDIA H100 80GB HBM3"), output("")]
)
def test_the_topologys_own_hardware_says_nothing(catalog, run):
    """The topology's own GPU on its node, or an output naming no GPU: nothing to say."""
    match = hardware_match(run, resolve_topology("dgx-h100", catalog), catalog)
    assert match.assumed is None and match.caution is None


def _trays(hosts_per_domain: int) -> EntryNode:
    """GB200 compute trays of 4 GPUs on NVLink 5, ``hosts_per_domain`` to a domain."""
    return EntryNode(4, "nvswitch", "nvlink5", hosts_per_domain=hosts_per_domain)


@pytest.mark.parametrize(
    ("topology", "run", "ran_on", "ours"),
    [
        (  # two trays of one NVL72 rack talk over NVLink; two DGX B200s over the network
            "dgx-b200",
            entry("gb200", _trays(18), nodes=2),
            "gb200 in 4-GPU nodes on nvswitch/nvlink5, 2 hosts sharing a scale-up domain",
            "dgx-b200's 8-GPU nodes on nvswitch/nvlink5",
        ),
        (  # trays that are each their own domain, priced as one rack's
            "gb200-nvl72",
            entry("gb200", _trays(1), nodes=2, net="ib-ndr"),
            "gb200 in 4-GPU nodes on nvswitch/nvlink5, each host its own scale-up domain",
            "gb200-nvl72's 4-GPU nodes on nvswitch/nvlink5, 18 hosts sharing a scale-up domain",
        ),
        (  # another domain size: 4 trays as 2 domains of 2, not one rack
            "gb200-nvl72",
            entry("gb200", _trays(2), nodes=4, net="ib-ndr"),
            "gb200 in 4-GPU nodes on nvswitch/nvlink5, 2 hosts sharing a scale-up domain",
            "gb200-nvl72's 4-GPU nodes on nvswitch/nvlink5, 18 hosts sharing a scale-up domain",
        ),
    ],
)
def test_hosts_per_domain_of_a_run_over_several_hosts_must_match(
    catalog, topology, run, ran_on, ours
):
    """An entry over several hosts whose hosts share a scale-up domain otherwise than the
    topology's would cross other links between them: left out for its intra-node fabric,
    naming both."""
    match = hardware_match(run, resolve_topology(topology, catalog), catalog)
    assert match.mismatch is not None
    assert (match.mismatch["why"], match.mismatch["ran_on"]) == ("intra", ran_on)
    assert match.caution == (
        f"the measured run ran on {ran_on}, not {ours}: its errors compare other links"
    )


@pytest.mark.parametrize(
    "run",
    [
        entry("gb200", _trays(18), nodes=2),  # the rack's 18, of which the run used 2
        entry("gb200", _trays(2), nodes=2),
        entry("gb200", _trays(1), nodes=1),  # one host crosses no link between hosts
    ],
)
def test_hosts_sharing_the_topologys_domain_are_its_hosts(catalog, run):
    """Trays sharing a domain as gb200-nvl72's do, or a run on one tray: nothing to say."""
    match = hardware_match(run, resolve_topology("gb200-nvl72", catalog), catalog)
    assert match.mismatch is None and match.assumed is None
