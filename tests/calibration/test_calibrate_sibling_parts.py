"""``fabricui calibrate`` on another part of the topology's GPU architecture: a measurements
entry of a sibling part (H200 beside H100) is fitted only on the topology's node (GPUs per
node, intra-node fabric and link), and said under ``assumed:``; an nccl-tests output whose
rank lines name a sibling part is said so too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from _model_outputs import all_reduce_output, hosts_in_blocks, model_times_us, refused

from fabricui.commands.calibrate import render
from fabricui.hwdb.resolve import resolve_topology
from fabricui.importers.nccl_tests import EntryNode, read_results
from fabricui.services.requests import CatalogRequest
from fabricui.services.run_hardware import same_node
from fabricui.services.session import load_catalog

#: Rows of an 8-GPU H100 all_reduce (aws_p5_h100_1node_allreduce_nvls_batch, 1 MiB-1 GiB).
ROWS = [
    [1048576, 28.56, 36.71, 64.24],
    [4194304, 55.44, 75.66, 132.41],
    [16777216, 124.0, 135.33, 236.82],
    [67108864, 326.6, 205.45, 359.54],
    [268435456, 1121.4, 239.38, 418.91],
    [1073741824, 4253.0, 252.47, 441.81],
]
SAID = (
    "#h200_box: ran on h200-sxm, fitted as dgx-h100's h100-sxm (the same hopper "
    "architecture, and the same 8-GPU nodes on nvswitch/nvlink4)"
)


def _entry(entry_id: str, hardware: dict[str, Any]) -> dict[str, Any]:
    """A reference all_reduce entry of ``ROWS`` on ``hardware``."""
    return {
        "id": entry_id,
        "quality": "reference",
        "hardware": hardware,
        "op": "all_reduce",
        "nranks": hardware["nodes"] * hardware["gpus_per_node"],
        "env": None,
        "rows": ROWS,
    }


@pytest.fixture
def siblings(tmp_path, h100_box) -> Path:
    """A measurements YAML of an H100 server, an H200 one on the same NVSwitch, an H200
    PCIe box, a 4-GPU GH200 NVLink mesh (Alps' node) and an A100 server."""
    pcie = {**h100_box, "gpu": "h200-sxm", "intra": {"fabric": "pcie", "link": "pcie5"}}
    quad = {
        **h100_box,
        "gpu": "gh200",
        "gpus_per_node": 4,
        "intra": {"fabric": "mesh", "link": "nvlink4", "links_per_pair": 6},
    }
    a100 = {**h100_box, "gpu": "a100-sxm4-80gb", "intra": {"fabric": "nvswitch", "link": "nvlink3"}}
    entries = [
        _entry("h100_box", h100_box),
        _entry("h200_box", {**h100_box, "gpu": "h200-sxm"}),
        _entry("h200_pcie", pcie),
        _entry("gh200_quad", quad),
        _entry("a100_box", a100),
    ]
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(entries, sort_keys=False))
    return path


def test_a_sibling_entry_on_the_same_node_is_fitted_and_said(run_calibrate, siblings):
    """On dgx-h100 the H200 entry on the same 8-GPU NVSwitch is fitted beside the H100 one
    and said under assumed (JSON assumptions, the run's too); the H200 PCIe box and the
    GH200 mesh are left out for their intra-node fabric, the A100 for its GPU, and the
    warning line says each."""
    status, out, err = run_calibrate(str(siblings), "-t", "dgx-h100", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert [run["entry"] for run in report["runs"]] == ["h100_box", "h200_box"]
    h100, h200 = report["runs"]
    assert not any("h100_box" in text for text in report["assumptions"])
    assert [text for text in report["assumptions"] if text.endswith(SAID)]
    assert h200["assumptions"][0].endswith(SAID) and not h100["assumptions"]
    assert f"assumed:\n  - {h200['assumptions'][0]}" in render(report)
    why = {
        s["source"].rpartition("#")[2]: (s["why"], s["ran_on"]) for s in report["skipped_entries"]
    }
    assert why == {
        "h200_pcie": ("intra", "h200-sxm in 8-GPU nodes on pcie/pcie5"),
        "gh200_quad": ("intra", "gh200 in 4-GPU nodes on mesh/nvlink4 (6 links per pair)"),
        "a100_box": ("gpu", "a100-sxm4-80gb"),
    }
    assert report["hardware"]["intra"] == "8-GPU nodes on nvswitch/nvlink4"
    (warning,) = [line for line in err.splitlines() if "skipped" in line]
    assert "skipped 3 measurements entries (1 on another GPU and 2 on another intra-node " in (
        warning
    )
    assert (
        "ran on h200-sxm in 8-GPU nodes on pcie/pcie5, gh200 in 4-GPU nodes on mesh/nvlink4 "
        "(6 links per pair), not dgx-h100's 8-GPU nodes on nvswitch/nvlink4"
    ) in warning


def test_a_named_sibling_entry_on_another_node_isrefused(run_calibrate, siblings):
    """--entry naming the H200 PCIe box on dgx-h100: one line naming both nodes."""
    err = refused(run_calibrate(str(siblings), "-t", "dgx-h100", "--entry", "h200_pcie"))
    assert (
        "#h200_pcie: ran on h200-sxm in 8-GPU nodes on pcie/pcie5, not dgx-h100's 8-GPU "
        "nodes on nvswitch/nvlink4 (give -t a topology of that hardware)"
    ) in err


@pytest.mark.parametrize(
    ("topology", "gpu", "hardware", "same"),
    [
        # A100 40 GB SXM on the DGX A100's (80 GB) NVSwitch, its link unstated: the GPU's.
        ("dgx-a100", "a100-sxm4-40gb", {"fabric": "nvswitch"}, True),
        ("dgx-a100", "a100-sxm4-40gb", {"fabric": "nvswitch", "link": "nvlink3"}, True),
        ("dgx-a100", "a100-sxm4-40gb", {"fabric": "nvswitch", "link": "nvlink4"}, False),
        ("gh200-quad", "h100-sxm", {"fabric": "nvswitch", "link": "nvlink4"}, False),
        ("pcie-rtx4090x8", "rtx-4090", {"fabric": "pcie", "link": "pcie4", "p2p": True}, False),
        ("pcie-rtx4090x8", "rtx-4090", {"fabric": "pcie", "link": "pcie4", "p2p": False}, True),
    ],
)
def test_same_node_compares_fabric_link_and_gpus_per_node(topology, gpu, hardware, same):
    """Sibling parts share the topology's links only on its node: 8 GPUs on its fabric and
    link (the GPU's own when unstated), PCIe peer-to-peer as it is."""
    catalog = load_catalog(CatalogRequest())
    spec = resolve_topology(topology, catalog)
    node = EntryNode(8, hardware["fabric"], hardware.get("link"), p2p=hardware.get("p2p", True))
    assert same_node(node, gpu, spec, catalog) is same


def test_an_entrys_node_is_read_from_its_hardware_block(siblings):
    """The measurements reader keeps each entry's GPUs per node and intra-node fabric."""
    nodes = {run.entry_id: run.hardware_node for run in read_results(siblings)}
    assert nodes["h200_box"] == EntryNode(8, "nvswitch", "nvlink4")
    assert nodes["gh200_quad"] == EntryNode(4, "mesh", "nvlink4", links_per_pair=6)


def test_an_output_on_a_sibling_part_is_said(run_calibrate, tmp_path):
    """An all_reduce output whose rank lines name H200s, on dgx-h100: fitted, and said
    under assumed (the output does not say its node, so that is said too)."""
    sizes = 4.0 ** np.arange(10, 14)
    times = model_times_us("dgx-h100", 1, {}, sizes)
    path = tmp_path / "all_reduce_perf.txt"
    placement = hosts_in_blocks(["node0"], 8)
    path.write_text(all_reduce_output(sizes, times, placement, gpu="NVIDIA H200"))
    status, out, err = run_calibrate(str(path), "-t", "dgx-h100", "--json")
    assert status == 0, err
    (said,) = json.loads(out)["assumptions"]
    assert said.endswith(
        "the rank lines name NVIDIA H200 (h200-sxm), fitted as dgx-h100's h100-sxm (the "
        "same hopper architecture; the output does not say its node's intra-node fabric)"
    )


def test_trays_sharing_a_domain_otherwise_than_the_topologys_are_skipped(run_calibrate, tmp_path):
    """gb200-nvl72 fits an entry of 2 trays in one NVLink domain (its ``hosts_per_domain``
    read as a topology spec says it) and skips one of 2 trays each their own domain, over
    the network: JSON ``why`` intra, naming the hosts per domain of both."""
    trays = {"gpu": "gb200", "nodes": 2, "gpus_per_node": 4}
    rack = {**trays, "intra": {"fabric": "nvswitch", "link": "nvlink5", "hosts_per_domain": 18}}
    apart = {
        **trays,
        "intra": {"fabric": "nvswitch", "link": "nvlink5"},
        "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 4},
    }
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump([_entry("rack", rack), _entry("apart", apart)], sort_keys=False))
    status, out, err = run_calibrate(str(path), "-t", "gb200-nvl72", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert [run["entry"] for run in report["runs"]] == ["rack"]
    (skipped,) = report["skipped_entries"]
    assert (skipped["why"], skipped["ran_on"]) == (
        "intra",
        "gb200 in 4-GPU nodes on nvswitch/nvlink5, each host its own scale-up domain",
    )
    assert report["hardware"]["intra"] == (
        "4-GPU nodes on nvswitch/nvlink5, 18 hosts sharing a scale-up domain"
    )
