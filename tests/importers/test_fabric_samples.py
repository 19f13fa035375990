"""Every shared fabric sample imports with the counts its INDEX.md entry states, or fails in one
line naming what it is (tests/data/fabric/INDEX.md is the ground truth; sources in README.md)."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from _fabric_samples import FABRIC, fabric_sample, sample_names

from fabricui.importers import (
    iblinkinfo,
    ibnetdiscover,
    nccl_xml,
    nvidia_smi,
    nvidia_smi_q,
    slurm_topology,
)
from fabricui.importers.builtin import builtin_importers
from fabricui.importers.common import ParseError
from fabricui.importers.fabric_graph import SwitchGraph

#: Samples that are not the format of any importer: (the importer a user would try, what
#: the one-line error must say).
NOT_THIS_FORMAT = {
    "ufm_ndt/dsm07_extended_ndt_with_rack_locations.txt": ("ibnetdiscover", "UFM NDT cabling"),
    "ufm_ndt/sat11_switch_to_host.txt": ("ibnetdiscover", "UFM NDT cabling"),
    "ufm_ndt/sat11_switch_to_switch.txt": ("ibnetdiscover", "UFM NDT cabling"),
    "netq_nmx_export/netq_topology_graph_8dgx_2leaf_1spine.txt": ("ibnetdiscover", "NetQ / NMX"),
    "netq_nmx_export/nmx_compute_nodes_gb200_two_trays.txt": ("ibnetdiscover", "NetQ / NMX"),
    "aws_instance_topology/awscli_doc_example_placeholder_ids.txt": (
        "slurm-topology",
        "describe-instance-topology",
    ),
    "aws_instance_topology/p4de_two_instances_same_brick.txt": (
        "slurm-topology",
        "describe-instance-topology",
    ),
    "ibswitches_ibhosts/ibhosts_dualport_mlx4_cn_doc.txt": ("ibnetdiscover", "ibhosts"),
    "ibswitches_ibhosts/sx6036_obsidian_longbow_ibswitches_cn_doc.txt": (
        "ibnetdiscover",
        "ibswitches",
    ),
    "aux_guid_map/azure_gb200_nodes_clusterUUIDs_2.txt": ("slurm-topology", "ClusterUUID map"),
    "aux_guid_map/psmn_x5_guid_to_hostname.txt": ("slurm-topology", "GUID-to-hostname map"),
    "aux_guid_map/psmn_x5_spine_list.txt": ("slurm-topology", "list of switch GUIDs"),
    "other_topology_formats/llnl_sierra_ibtopo_levels_head.txt": (
        "ibnetdiscover",
        "no `ibnetdiscover` output",
    ),
    "lstopo_xml/hwloc_nvidia_dgx2_v3_format.txt": ("nccl-xml", "DOCTYPE"),
    "nvidia_smi/a100_sxm4_8gpu_nvlink_status.txt": ("nvidia-smi-q", "nvlink --status"),
    "nvidia_smi/gb200_tray_nvlink_status_info_issue_excerpt.txt": (
        "nvidia-smi-q",
        "nvlink --status",
    ),
    "block_topology_other/azure_ccw_gb200_51nodes_partial_racks_pr_excerpt.txt": (
        "slurm-topology",
        "azslurm show_topology",
    ),
}


def graph(module, name: str) -> SwitchGraph:
    result = module.parse(fabric_sample(name))
    assert isinstance(result, SwitchGraph)
    return result


def warned(g, text: str) -> bool:
    return any(text in w for w in g.warnings)


def by_name(g: SwitchGraph):
    return {s.name: s for s in g.switches}


def host_ports(g: SwitchGraph) -> dict[str, list[tuple[str, int | None]]]:
    """host -> [(switch, switch port)] of its cables."""
    out: dict[str, list[tuple[str, int | None]]] = {}
    owner = g.port_owner()
    for link in g.links:
        for end, other, other_port in (
            (link.a, link.b, link.b_port),
            (link.b, link.a, link.a_port),
        ):
            if end in owner and other in g.switch_names():
                out.setdefault(owner[end], []).append((other, other_port))
    return out


# --- the inventory ---------------------------------------------------------------------------


def test_every_sample_has_a_test():
    """The 46 samples are all covered: by a test below or by NOT_THIS_FORMAT."""
    covered = set(NOT_THIS_FORMAT) | set(COVERED)
    assert set(sample_names()) == covered
    assert len(sample_names()) == 46


@pytest.mark.parametrize("name", sorted(NOT_THIS_FORMAT))
def test_not_this_format(name):
    """A sample no importer reads fails with one line naming what it is."""
    fmt, expected = NOT_THIS_FORMAT[name]
    with pytest.raises(ParseError) as info:
        builtin_importers()[fmt](fabric_sample(name))
    message = info.value.message
    assert expected in message and "\n" not in message


# --- ibnetdiscover ---------------------------------------------------------------------------


def test_topograph_single_unconnected_hca():
    """Header + one CA record: no switches, no links, the adapter named and warned about."""
    g = graph(ibnetdiscover, "ibnetdiscover/topograph_gb200_single_unconnected_hca.txt")
    assert (len(g.switches), len(g.links)) == (0, 0)
    assert [h.name for h in g.hosts] == ["dgx-gb200-n01-c1"]
    assert warned(g, "no connected port")


def test_psmn_x5_voltaire_qdr_ddr():
    """11 switches, 89 CAs (unnamed, so named by GUID), 159 links (70 switch-switch), 136 QDR
    + 23 DDR; leaves hold every host and the other five are the spine list's switches."""
    g = graph(ibnetdiscover, "ibnetdiscover/psmn_x5_voltaire_qdr_ddr_full.txt")
    assert len(g.switches) == 11 and len(g.hosts) == 89
    assert len(g.links) == 159 and len(g.switch_links()) == 70
    assert Counter(k.speed for k in g.links) == {"QDR": 136, "DDR": 23}
    assert all(not h.named and h.name.startswith("H-") for h in g.hosts)
    assert warned(g, "89 adapter(s) have no host name")
    assert warned(g, "no usable name")  # duplicate "Voltaire 4036 - 36 QDR ports switch"
    tiers = g.tiers()
    leaves = {s for s, t in tiers.items() if t == 0}
    assert len(leaves) == 6 and {sw for _, _, sw, _ in g.host_links()} == leaves
    spine_list = fabric_sample("aux_guid_map/psmn_x5_spine_list.txt").split()
    spines = {line for line in spine_list if line.startswith("S-")}
    assert set(tiers) - leaves == spines
    # S-...86a2 is cabled to two other spines only, so the graph puts it one tier higher.
    assert tiers["S-0008f105001086a2"] == 2


def test_psmn_x5_matches_its_topology_conf():
    """The ibnetdiscover dump and the topology.conf generated from it agree on the leaves."""
    dump = graph(ibnetdiscover, "ibnetdiscover/psmn_x5_voltaire_qdr_ddr_full.txt")
    conf = graph(slurm_topology, "topology_conf/psmn_x5_generated_from_ibnetdiscover.txt")
    dump_leaves = {s for s, t in dump.tiers().items() if t == 0}
    conf_leaves = {s for s, t in conf.tiers().items() if t == 0}
    assert dump_leaves == conf_leaves


def test_manpage_grouped_sdr_dualport():
    """-g output of the man page fabric: 2 switches, 4 unnamed InfiniHost CAs, 7 SDR links,
    two of them 1x from one end (the lower width is kept, with a warning)."""
    g = graph(ibnetdiscover, "ibnetdiscover/manpage_2007_voltaire_sdr_dualport.txt")
    switches = by_name(g)
    assert {(s.ports, s.lid) for s in switches.values()} == {(24, 6), (8, 3)}
    assert len({p.guid for h in g.hosts for p in h.ports}) == 4
    assert len(g.links) == 7 and {k.speed for k in g.links} == {"SDR"}
    assert Counter(k.width for k in g.links) == {"4x": 5, "1x": 2}
    assert warned(g, "2 cable(s) report a different width or speed")
    assert any("-g (grouped)" in n for n in g.notes)
    both = host_ports(g)["H-0008f10403960558"]
    assert sorted(both) == [("S-005442ba00003080", 8), ("S-005442ba00003080", 12)]
    parallel = Counter(tuple(sorted((k.a, k.b))) for k in g.switch_links())
    assert parallel[("S-0008f10400410015", "S-005442ba00003080")] == 2


def test_ibm_pcm_two_nodes():
    """One 8-port switch (lid 3), compute-00-00 on its HCA port 2, compute-00-01; 2 SDR links."""
    g = graph(ibnetdiscover, "ibnetdiscover/ibm_pcm_2009_two_node_mt43132.txt")
    (switch,) = g.switches
    assert (switch.ports, switch.lid) == (8, 3)
    assert [h.name for h in g.hosts] == ["compute-00-00", "compute-00-01"]
    assert g.hosts[0].ports[0].port == 2
    assert [(k.width, k.speed) for k in g.links] == [("4x", "SDR")] * 2


def test_oracle_dcs36_single_link():
    """A line holding one blank, no blank line after the header: 1 switch (lid 15), nsn33-43
    on its port 2, one 4xQDR link."""
    g = graph(ibnetdiscover, "ibnetdiscover/oracle_sun_dcs36_single_link.txt")
    assert [(s.ports, s.lid) for s in g.switches] == [(36, 15)]
    assert [(h.name, h.ports[0].port) for h in g.hosts] == [("nsn33-43", 2)]
    assert [(k.width, k.speed, k.gbps) for k in g.links] == [("4x", "QDR", 40.0)]


def test_llnl_atlas_commented_elided():
    """Every line commented out and elided: read with warnings; the line board (lid 742) holds
    atlas32/34/35, the CA records atlas132/133 sit on SW12 at 4xSDR."""
    g = graph(ibnetdiscover, "ibnetdiscover/llnl_atlas_2006_voltaire_elided_commented.txt")
    assert warned(g, "commented out") and warned(g, "elides lines")
    assert warned(g, "no record of their own") and warned(g, "director chassis")
    board = by_name(g)["S-0008f104003f1e29"]
    assert board.lid == 742 and "sLB-2024" in board.description
    ports = host_ports(g)
    assert {h for h, p in ports.items() if p[0][0] == board.name} == {
        "atlas32",
        "atlas34",
        "atlas35",
    }
    assert {h for h, p in ports.items() if p[0][0] == "SW12"} == {"atlas132", "atlas133"}
    assert {k.speed for k in g.links if "SW12" in (k.a, k.b)} == {"SDR"}
    assert len(g.links) == 11


def test_selene_compute_superpod():
    """666 MQM8700 (204 leaf = 200 LG + 4 MLG, 322 spine, 140 core), 458 luna hosts x 8 rails,
    666 aggregation nodes, 11 management hosts, 12852 HDR links; imports in well under 3 s
    (~1 s here), or, on a loaded machine, in under 80 times what splitting its 2.8 MB into
    words takes in the same run (~27 times here)."""
    text = fabric_sample("ibnetdiscover/nvidia_selene_compute_hdr_superpod_2021.txt")
    start = time.perf_counter()
    g = ibnetdiscover.parse(text)
    seconds = time.perf_counter() - start
    reference_s = float("inf")
    for _ in range(3):
        begun = time.perf_counter()
        sum(len(line.split()) for line in text.splitlines())
        reference_s = min(reference_s, time.perf_counter() - begun)
    assert seconds < max(3.0, 80 * reference_s), f"{seconds:.2f} s ({reference_s:.3f} s to split)"
    assert len(g.switches) == 666
    assert g.tier_counts() == {"leaf": 204, "spine": 322, "core": 140}
    luna = [h for h in g.hosts if h.name.startswith("luna-")]
    assert len(luna) == 458 and {len(h.ports) for h in luna} == {8}
    assert len(g.hosts) - len(luna) == 11
    assert sum(v == "aggregation node" for v in g.other_endpoints.values()) == 666
    assert len(g.links) == 12852 and {(k.width, k.speed) for k in g.links} == {("4x", "HDR")}
    bundles = Counter(Counter(tuple(sorted((k.a, k.b))) for k in g.switch_links()).values())
    assert bundles[2] == 2003 and bundles[14] == 2
    assert {p.name for h in g.hosts for p in h.ports if p.name.endswith(" ")} == set()


def test_selene_storage_fabric():
    """160 switches (64 SLG, 64 SSPINE, 32 SCORE and tiers to match), 1247 CAs, 3286 links
    (2966 HDR, 320 EDR from the DDN appliances)."""
    g = graph(ibnetdiscover, "ibnetdiscover/nvidia_selene_storage_fabric_2021.txt")
    names = Counter(s.name.split("-")[0].rstrip("0123456789") for s in g.switches)
    assert names == {"SLG": 64, "SSPINE": 64, "SCORE": 32}
    assert g.tier_counts() == {"leaf": 64, "spine": 64, "core": 32}
    assert sum(len(h.ports) for h in g.hosts) == 1247
    assert len(g.links) == 3286
    assert Counter(k.speed for k in g.links) == {"HDR": 2966, "EDR": 320}


def test_rufm_lab_self_loops():
    """2 switches (lids 13 and 19), 13 CAs (12 host ports + 1 aggregation node), 16 links of
    which 2 are self-loops (warned) and one runs FDR10."""
    g = graph(ibnetdiscover, "ibnetdiscover/nvidia_rufm_lab_hdr_fdr_small_2021.txt")
    assert {s.name: s.lid for s in g.switches} == {"r-ufm-sw95": 13, "r-ufm-sw226": 19}
    assert sum(len(h.ports) for h in g.hosts) + len(g.other_endpoints) == 13
    assert len(g.links) == 16 and sum(k.a == k.b for k in g.links) == 2
    assert warned(g, "2 self-loop cable(s)") and "FDR10" in {k.speed for k in g.links}
    assert len(host_ports(g)["r-dcs96"]) == 4


# --- ibnetdiscover -p ------------------------------------------------------------------------


def test_osc_ports_report():
    """4 switches with their LIDs, o0001/o0002 on ib-i1l1s01 ports 10/11, p0001 on ib-i4l1s01
    port 35, one ISL 1<->1, all EDR; the '4x ???' port is a warning, not a link."""
    g = graph(ibnetdiscover, "ibnetdiscover_ports/osc_owens_pitzer_excerpt_split_mode.txt")
    assert g.source == "ibnetdiscover -p"
    assert {s.name: s.lid for s in g.switches} == {
        "ib-i1l1s01": 1719,
        "ib-i1l2s01": 1516,
        "ib-i4l1s01": 2052,
        "ib-i7l2s01": 1781,
    }
    assert host_ports(g) == {
        "o0001": [("ib-i1l1s01", 10)],
        "o0002": [("ib-i1l1s01", 11)],
        "p0001": [("ib-i4l1s01", 35)],
    }
    isl = g.switch_links()
    assert [(k.a_port, k.b_port) for k in isl] == [(1, 1)]
    assert len(g.links) == 4 and {k.speed for k in g.links} == {"EDR"}
    assert warned(g, "'???'")


def test_single_unconnected_port_unquoted():
    """One unquoted, unconnected port line: one switch (lid 479), no links."""
    g = graph(ibnetdiscover, "ibnetdiscover_ports/single_unconnected_qdr_port_unquoted.txt")
    assert [(s.lid, s.description) for s in g.switches] == [
        (479, "Infiniscale-IV Mellanox Technologies")
    ]
    assert g.links == [] and g.hosts == []


# --- iblinkinfo ------------------------------------------------------------------------------


def test_fau_bladecenter_two_rails_html():
    """HTML-escaped, two runs: rail 1 IBM HSSM (lid 4, 36 ports) with mixed 2.5/5/10 Gbps lanes,
    rail 2 Topspin (lid 10, 24 ports) at 2.5 Gbps on each host's HCA port 2."""
    g = graph(iblinkinfo, "iblinkinfo/fau_erlangen_bladecenter_hssm_topspin_dualrail_html.txt")
    assert any("HTML-escaped" in n for n in g.notes)
    switches = {s.model: s for s in g.switches}
    assert (switches["IBM HSSM"].lid, switches["IBM HSSM"].ports) == (4, 36)
    assert (switches["Topspin Switch"].lid, switches["Topspin Switch"].ports) == (10, 24)
    hssm, topspin = switches["IBM HSSM"].name, switches["Topspin Switch"].name
    rate = {}  # (host port, switch port) -> lane rate [Gb/s]
    for k in g.links:
        host, switch_port = (k.a, k.b_port) if k.b in (hssm, topspin) else (k.b, k.a_port)
        rate[(host, switch_port)] = k.gbps / 4
    assert rate[("faui36a HCA-1", 1)] == 5.0 and rate[("faui36b HCA-1", 17)] == 10.0
    assert rate[("faui36c HCA-1", 18)] == 10.0
    assert all(rate[(f"faui36{x} HCA-1", p)] == 5.0 for x, p in (("d", 19), ("e", 20), ("f", 21)))
    assert rate[("lid9@run1", 2)] == 2.5
    rail2 = host_ports(g)
    assert sorted((h, p) for h, ports in rail2.items() for s, p in ports if s == topspin) == [
        ("faui36a", 17),
        ("faui36b", 1),
        ("faui36c", 2),
        ("faui36d", 3),
        ("faui36e", 4),
        ("faui36f", 5),
    ]
    assert {k.gbps for k in g.links if topspin in (k.a, k.b)} == {10.0}
    assert len(g.links) == 13


# --- Slurm -----------------------------------------------------------------------------------


def leaf_nodes(g: SwitchGraph) -> dict[str, int]:
    """Nodes per switch (direct attachments)."""
    names = g.switch_names()
    return dict(Counter(k.a for k in g.links if k.a in names and k.b not in names))


def test_psmn_topology_conf_guids_and_cycle():
    """11 switches named by GUID, 6 leaves with 89 nodes (3 of them raw HCA GUIDs, lines 1
    and 7; INDEX.md's '2 GUIDs' undercounts), spines listing spines: no single root."""
    g = graph(slurm_topology, "topology_conf/psmn_x5_generated_from_ibnetdiscover.txt")
    assert len(g.switches) == 11 and len(g.hosts) == 89
    assert sum(leaf_nodes(g).values()) == 89 and len(leaf_nodes(g)) == 6
    assert sum(not h.named for h in g.hosts) == 3 and warned(g, "adapter GUIDs")
    assert warned(g, "list each other as children")


def test_cu_boulder_commented_opa():
    """Every line commented: read with a warning; 8 cores over OPAEDGE1..16, 17 edges, 508
    nodes; OPAEDGE17 hangs under no core."""
    g = graph(slurm_topology, "topology_conf/cu_boulder_rmacc_summit_opa_commented.txt")
    assert warned(g, "every topology line is commented out")
    assert len(g.switches) == 25 and len(g.hosts) == 508
    assert len(leaf_nodes(g)) == 17
    assert g.tier_counts() == {"leaf": 17, "spine": 8}
    assert warned(g, "root switches") and any("OPAEDGE17" in w for w in g.warnings)


def test_bnl_flat_plus_singletons():
    """4 roots without a parent; s0 holds 36 nodes, s1..s3 one each."""
    g = graph(slurm_topology, "topology_conf/bnl_nsls2_puppet_flat_plus_singletons.txt")
    assert leaf_nodes(g) == {"s0": 36, "s1": 1, "s2": 1, "s3": 1}
    assert warned(g, "4 root switches")


def test_unsw_trailing_space():
    """A trailing blank after a node list: s1000000 over s0 (16 nodes) and s1 (16); 32 nodes."""
    g = graph(slurm_topology, "topology_conf/unsw_rocks_compute_trailing_space.txt")
    assert leaf_nodes(g) == {"s0": 16, "s1": 16}
    assert g.tiers()["s1000000"] == 1 and g.warnings == []


def test_azure_sharp_guid_nodes_cycle():
    """49 switches: 40 leaves with 128 port GUIDs, 9 upper; ibsw47 and its children list each
    other (a cycle, warned); no trailing newline."""
    g = graph(slurm_topology, "topology_conf/azure_ndv5_sharp_cmd_topology_guid_nodes.txt")
    assert len(g.switches) == 49 and len(leaf_nodes(g)) == 40 and len(g.hosts) == 128
    assert sum(v > 0 for v in g.tiers().values()) == 9
    assert warned(g, "128 node name(s) are adapter GUIDs")
    assert warned(g, "8 switch pair(s) list each other") and warned(g, "no root switch")


def test_azure_hpcbench_tree():
    """sw05 over sw00..sw04 holding 3/6/3/2/2 hosts (16)."""
    g = graph(slurm_topology, "topology_conf/azure_hpcbench_tree_from_sharp_hostnames.txt")
    assert leaf_nodes(g) == {"sw00": 3, "sw01": 6, "sw02": 3, "sw03": 2, "sw04": 2}
    assert g.tiers()["sw05"] == 1 and len(g.hosts) == 16


def test_spartan_scontrol_show_topology():
    """sp-266-p16-1 over four leaves with 14/39/20/14 of 87 nodes; no trailing newline."""
    g = graph(slurm_topology, "scontrol_show_topology/unimelb_spartan_physical_cpu.txt")
    assert g.source == "scontrol show topology"
    assert leaf_nodes(g) == {
        "le-266-q11-1-res": 14,
        "le-266-q14-1-res": 39,
        "le-266-r17-1-res": 20,
        "le-266-r19-1-res": 14,
    }
    assert {s.name: s.level for s in g.switches}["sp-266-p16-1"] == 1


def test_nebius_root_and_unknown():
    """Upper switches repeat their subtree's nodes; each node hangs from its lowest switch:
    4 nodes, 2 of them under the 'unknown' pseudo-switch (warned); Go lines skipped."""
    g = graph(
        slurm_topology, "scontrol_show_topology/nebius_soperator_tree_root_unknown_fixture.txt"
    )
    assert len(g.hosts) == 4
    nodes = leaf_nodes(g)
    assert nodes["unknown"] == 2 and sum(nodes.values()) == 4
    assert warned(g, "'unknown' holds 2 node(s)") and warned(g, "not understood")


def test_azure_gb200_blocks():
    """4 blocks x 18 nodes, block k holding the nodes numbered k mod 4; BlockSizes=1."""
    g = graph(slurm_topology, "topology_conf_block/azure_gb200_4x18_blocks_clusteruuid_names.txt")
    assert [len(b.nodes) for b in g.blocks] == [18] * 4 and len(g.hosts) == 72
    for k, block in enumerate(g.blocks, 1):
        assert {int(n.rsplit("-", 1)[1]) % 4 for n in block.nodes} == {k % 4}
    assert "BlockSizes=1" in g.notes


def test_topology_yaml_manpage_example():
    """topo1's tree (sw_root over s1, s2; node[01-04]), topo2's 4 blocks of 4 with block_sizes
    [4, 16]; flat, ring and torus3d topologies named in a note."""
    g = graph(slurm_topology, "topology_yaml/slurm_manpage_multi_topology_example.txt")
    assert leaf_nodes(g) == {"s1": 2, "s2": 2}
    assert g.tiers()["sw_root"] == 1
    assert [(b.name, len(b.nodes)) for b in g.blocks] == [(f"b{i}", 4) for i in range(1, 5)]
    assert "BlockSizes=4,16" in g.notes
    assert any("topo5 (torus3d)" in n for n in g.notes)


# --- nvidia-smi ------------------------------------------------------------------------------


def test_h100_nvidia_smi_q_full():
    """8 GPUs, Fabric Completed/Success, no ClusterUUID/CliqueId (driver 535): no domain."""
    result = nvidia_smi_q.parse(fabric_sample("nvidia_smi/h100_hgx_8gpu_nvidia_smi_q_full.txt"))
    assert len(result.gpus) == 8 and result.driver == "535.183.01"
    assert {(g.state, g.status) for g in result.gpus} == {("Completed", "Success")}
    assert result.domains() == {} and any("without ClusterUUID" in w for w in result.warnings)
    assert result.gpus[0].product == "NVIDIA H100 80GB HBM3"


def test_gb200_unhealthy_clique():
    """CliqueId 2 of ClusterUUID dc6e40c4-...: a domain, with Health Unhealthy warned."""
    result = nvidia_smi_q.parse(
        fabric_sample("nvidia_smi/gb200_fabric_unhealthy_clique2_issue_excerpt.txt")
    )
    assert list(result.domains()) == ["dc6e40c4-d722-4357-9ba6-5291dd461278/2"]
    assert any("'Unhealthy'" in w for w in result.warnings)


def test_azure_insufficient_resources_not_grouped():
    """Completed with Status Insufficient Resources, CliqueId 0, zero UUID: no domain."""
    result = nvidia_smi_q.parse(
        fabric_sample("nvidia_smi/azure_nvlink_fabric_insufficient_resources_pr_excerpt.txt")
    )
    assert result.domains() == {}
    assert any("Insufficient Resources" in w for w in result.warnings)
    assert any("all-zero ClusterUUID" in w for w in result.warnings)


def test_fabric_in_progress():
    """State In Progress with every field N/A: no domain yet, warned."""
    result = nvidia_smi_q.parse(
        fabric_sample("nvidia_smi/fabric_in_progress_580_driver_issue_excerpt.txt")
    )
    assert result.domains() == {} and any("'In Progress'" in w for w in result.warnings)
    assert result.gpus[0].health["Partition Assigned"] == "N/A"


def test_gb200_tray_topo_m_truncated():
    """A GB200 tray's topo -m (the nvidia-smi importer's format): 4 GPUs all-to-all NV18."""
    topo = nvidia_smi.parse(
        fabric_sample("nvidia_smi/gb200_tray_topo_m_issue_excerpt_truncated.txt")
    )
    assert topo.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert {topo.link(f"GPU{i}", f"GPU{j}") for i in range(4) for j in range(i + 1, 4)} == {"NV18"}


# --- NCCL topology XML -----------------------------------------------------------------------


def test_azure_ndv5_nccl_topo():
    """2 sockets x 4 PCIe switches, each with one GPU and one IB NIC."""
    xml = nccl_xml.parse(fabric_sample("nccl_topo_xml/azure_ndv5_h100_nccl_topo.txt"))
    assert xml.summary().startswith(
        "NCCL topology XML: 2 CPUs/NUMA nodes, 8 GPUs, 8 NIC ports, 8 PCIe switches"
    )


def test_azure_ndv4_nccl_topo():
    """4 NUMA nodes x (2 GPUs + 2 NICs) behind one PCIe bridge each."""
    xml = nccl_xml.parse(fabric_sample("nccl_topo_xml/azure_ndv4_a100_nccl_topo.txt"))
    assert xml.summary().startswith(
        "NCCL topology XML: 4 CPUs/NUMA nodes, 8 GPUs, 8 NIC ports, 4 PCIe switches"
    )


#: Samples with a test of their own above.
COVERED = {
    "ibnetdiscover/topograph_gb200_single_unconnected_hca.txt",
    "ibnetdiscover/psmn_x5_voltaire_qdr_ddr_full.txt",
    "ibnetdiscover/manpage_2007_voltaire_sdr_dualport.txt",
    "ibnetdiscover/ibm_pcm_2009_two_node_mt43132.txt",
    "ibnetdiscover/oracle_sun_dcs36_single_link.txt",
    "ibnetdiscover/llnl_atlas_2006_voltaire_elided_commented.txt",
    "ibnetdiscover/nvidia_selene_compute_hdr_superpod_2021.txt",
    "ibnetdiscover/nvidia_selene_storage_fabric_2021.txt",
    "ibnetdiscover/nvidia_rufm_lab_hdr_fdr_small_2021.txt",
    "ibnetdiscover_ports/osc_owens_pitzer_excerpt_split_mode.txt",
    "ibnetdiscover_ports/single_unconnected_qdr_port_unquoted.txt",
    "iblinkinfo/fau_erlangen_bladecenter_hssm_topspin_dualrail_html.txt",
    "topology_conf/psmn_x5_generated_from_ibnetdiscover.txt",
    "topology_conf/cu_boulder_rmacc_summit_opa_commented.txt",
    "topology_conf/bnl_nsls2_puppet_flat_plus_singletons.txt",
    "topology_conf/unsw_rocks_compute_trailing_space.txt",
    "topology_conf/azure_ndv5_sharp_cmd_topology_guid_nodes.txt",
    "topology_conf/azure_hpcbench_tree_from_sharp_hostnames.txt",
    "scontrol_show_topology/unimelb_spartan_physical_cpu.txt",
    "scontrol_show_topology/nebius_soperator_tree_root_unknown_fixture.txt",
    "topology_conf_block/azure_gb200_4x18_blocks_clusteruuid_names.txt",
    "topology_yaml/slurm_manpage_multi_topology_example.txt",
    "nvidia_smi/h100_hgx_8gpu_nvidia_smi_q_full.txt",
    "nvidia_smi/gb200_fabric_unhealthy_clique2_issue_excerpt.txt",
    "nvidia_smi/azure_nvlink_fabric_insufficient_resources_pr_excerpt.txt",
    "nvidia_smi/fabric_in_progress_580_driver_issue_excerpt.txt",
    "nvidia_smi/gb200_tray_topo_m_issue_excerpt_truncated.txt",
    "nccl_topo_xml/azure_ndv5_h100_nccl_topo.txt",
    "nccl_topo_xml/azure_ndv4_a100_nccl_topo.txt",
}
assert FABRIC.is_dir()
