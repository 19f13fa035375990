"""The doctor with ``--topology``: an NCCL log's rings, NICs and channels against the fabric
the job ran on, on the published logs (each with a topology like its machines) and on
synthetic logs in NCCL's own line shapes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from fabricui.fabric import build_fabric
from fabricui.fabric.explicit import cluster_of
from fabricui.hwdb.resolve import resolve_topology
from fabricui.importers.nccl_log import parse_nccl_log, read_nccl_log
from fabricui.services.doctor_codes import FABRIC_CODES, SEVERITIES
from fabricui.services.doctor_fabric import compare

DATA = Path(__file__).parent / "topologies"
SAMPLES = Path(__file__).parents[1] / "data" / "topo" / "nccl_debug_logs"

#: Published logs, the topology like their machines, and the fabric findings expected.
PUBLISHED = {
    # Hosts by name; no NET/IB list, so NIC k is assumed the fabric's k: notes, not warnings.
    "nccl_1189_h20_p2p_cumem_and_ib_gdrdma.txt": (
        "cluster_h20.yaml",
        {"nic-not-gpu-rail": "info", "pxn-absent": "info"},
    ),
    # Two channels on hosts with eight NICs; bus ids give the GPUs only in address order.
    "nccl_tests_133_p2p_direct_pointer_ib_gdrdma.txt": (
        "cluster_nodeab.yaml",
        {"channels-below-nics": "warning", "nic-not-gpu-rail": "info", "pxn-absent": "info"},
    ),
    # One NIC per node, rings that cross between the nodes once each way: nothing to say.
    "nccl_392_v2_5_7_roce_partial_gdr_old_ring_format.txt": ("two_nodes_one_nic.yaml", {}),
}


def fabric_codes(check) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {f.code: f.severity for f in check.findings}


@pytest.fixture(scope="module")
def rails(catalog):
    """A 16-node rail-optimized H100 cluster written out as an imported one."""
    tree = build_fabric(resolve_topology("h100-ib-cluster", catalog, 16), catalog)
    return build_fabric(cluster_of(tree), catalog)


def topology(catalog, name: str):  # type: ignore[no-untyped-def]
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import read_yaml

    return build_fabric(parse_topology(read_yaml(DATA / name), catalog), catalog)


def line(host: str, dev: int, message: str) -> str:
    """One NCCL INFO line as NCCL prints it."""
    return f"{host}:1234:1234 [{dev}] NCCL INFO {message}"


def init_lines(hosts: list[str], per_host: int = 8) -> list[str]:
    """Each rank's ``comm ... rank R nRanks N nNodes M localRanks L`` and Init COMPLETE."""
    n = len(hosts) * per_host
    out = []
    for h, host in enumerate(hosts):
        for k in range(per_host):
            rank = h * per_host + k
            out.append(
                line(
                    host,
                    k,
                    f"comm 0x1 rank {rank} nRanks {n} nNodes {len(hosts)} localRanks "
                    f"{per_host} localRank {k} MNNVL 0",
                )
            )
            out.append(
                line(
                    host,
                    k,
                    f"comm 0x1 rank {rank} nranks {n} cudaDev {k} nvmlDev {k} busId {k}0000 "
                    "commId 0x5 - Init COMPLETE",
                )
            )
    return out


IB_LIST = (
    "NET/IB : Using "
    + " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(8))
    + " ; OOB eth0:10.0.0.1<0>"
)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_logs(catalog, name):
    """Each published log on a topology like its machines gives exactly its findings."""
    topo, expected = PUBLISHED[name]
    check = compare(read_nccl_log(SAMPLES / name), topology(catalog, topo))
    assert fabric_codes(check) == expected
    assert check.placement.gpu_of


def test_the_392_rings_are_checked(catalog):
    """Rank 0's ring lists are placed rank by rank (no host names: rank order on 8-GPU
    nodes) and each crosses between the nodes twice, at the leaf."""
    check = compare(
        read_nccl_log(SAMPLES / "nccl_392_v2_5_7_roce_partial_gdr_old_ring_format.txt"),
        topology(catalog, "two_nodes_one_nic.yaml"),
    )
    assert [r["edges"] for r in check.rings] == [
        {"domain": 14, "leaf": 2, "spine": 0, "core": 0}
    ] * 2
    assert any("rank r is GPU r % 8" in note for note in check.placement.assumptions)


def test_ring_across_leaves_in_the_wrong_order(catalog):
    """h1, h2 share leaf L1 and h3, h4 leaf L2: a ring h1 h3 h2 h4 climbs to the spine four
    times where two do."""
    hosts = ["h1", "h3", "h2", "h4"]
    order = " ".join(str(r) for r in range(32))
    text = "\n".join(
        [*init_lines(hosts), line("h1", 0, f"Channel 00/02 :    {order}"),
         line("h1", 0, f"Channel 01/02 :    {order}")]
    )  # fmt: skip
    check = compare(parse_nccl_log(text), topology(catalog, "cluster_4hosts.yaml"))
    codes = fabric_codes(check)
    assert codes == {"ring-extra-crossings": "warning"}
    finding = check.findings[0]
    assert "4 times" in finding.message and "needs 2 and 0" in finding.message
    assert check.rings[0]["edges"]["spine"] == 4 and check.rings[0]["needed"]["above_leaf"] == 2
    # The same ring in switch order: nothing to say.
    ordered = text.replace("h3", "hX").replace("h2", "h3").replace("hX", "h2")
    assert not compare(parse_nccl_log(ordered), topology(catalog, "cluster_4hosts.yaml")).findings


def test_ring_rebuilt_from_each_ranks_ring_line(catalog):
    """Without rank 0's lists, each rank's ``Ring 00 : prev -> rank -> next`` rebuilds it."""
    hosts = ["h1", "h3", "h2", "h4"]
    lines = init_lines(hosts)
    for r in range(32):
        lines.append(
            line(hosts[r // 8], r % 8, f"Ring 00 : {(r - 1) % 32} -> {r} -> {(r + 1) % 32}")
        )
    check = compare(parse_nccl_log("\n".join(lines)), topology(catalog, "cluster_4hosts.yaml"))
    assert "ring-extra-crossings" in fabric_codes(check)


#: NCCL's binary tree over 8 nodes (position -> parent position, -1 at the root).
BTREE_8 = {0: -1, 4: 0, 2: 4, 6: 4, 1: 2, 3: 2, 5: 6, 7: 6}


def tree_log(hosts: list[str]) -> str:
    """Each node's first rank prints its place in channel 0's and 1's inter-node tree."""
    lines = init_lines(hosts)
    for pos, up in BTREE_8.items():
        parent = -1 if up < 0 else up * 8
        entry = f"-1/-1/-1->{pos * 8}->{parent}"
        lines.append(line(hosts[pos], 0, f"Trees [0] {entry} [1] {entry}"))
    return "\n".join(lines)


def test_tree_across_leaves_in_the_wrong_order(catalog):
    """Hosts given leaf by leaf alternately (h1 h3 h5 h7 h2 h4 h6 h8): NCCL's tree over the
    nodes in that order climbs to the spine 6 times where the same tree over the nodes in
    switch order does 5; in switch order the doctor says nothing."""
    cluster = topology(catalog, "cluster_8hosts.yaml")
    log = parse_nccl_log(tree_log(["h1", "h3", "h5", "h7", "h2", "h4", "h6", "h8"]))
    assert log.tree_up[(0, 8)] == 16 and log.tree_up[(1, 0)] == -1
    check = compare(log, cluster)
    assert fabric_codes(check) == {"tree-extra-crossings": "warning"}
    message = check.findings[0].message
    assert "above the leaves 6 times" in message and "needs 5 and 0" in message
    assert "2 of 2 trees" in message
    ordered = parse_nccl_log(tree_log([f"h{i}" for i in range(1, 9)]))
    assert "tree-extra-crossings" not in fabric_codes(compare(ordered, cluster))


def test_trees_of_both_nccl_formats_are_read():
    """NCCL 2.5's ``down|up`` halves and today's single entries, three children or none."""
    old = parse_nccl_log(line("h1", 3, "Trees [0] 154/-1/-1->155->153|153->155->154/-1/-1"))
    assert old.tree_up == {(0, 155): 153}
    new = parse_nccl_log(line("h1", 0, "Trees [0] 1/2/3->0->-1 [1] -1/-1/-1->0->4"))
    assert new.tree_up == {(0, 0): -1, (1, 0): 4}


def test_pxn_absent_and_with_pxn(catalog, rails):
    """Rank 0 (host00000 GPU 0) sends to rank 9 (host00001 GPU 1) on NIC 0 and it arrives on
    NIC 1: across rails, which PXN avoids on this NVSwitch fabric; with PXN (``NET/IB/1(1)``)
    there is nothing to say."""
    hosts = ["host00000", "host00001"]
    base = [*init_lines(hosts), line("host00000", 0, IB_LIST)]
    text = "\n".join(
        [*base,
         line("host00000", 0, "Channel 00/0 : 0[0] -> 9[1] [send] via NET/IB/0/GDRDMA"),
         line("host00001", 1, "Channel 00/0 : 0[0] -> 9[1] [receive] via NET/IB/1/GDRDMA"),
         line("host00000", 0, "NCCL version 2.21.5+cuda12.4")]
    )  # fmt: skip
    check = compare(parse_nccl_log(text), rails)
    assert fabric_codes(check) == {"pxn-absent": "warning", "channels-below-nics": "warning"}
    pxn = "\n".join(
        [*base,
         line("host00000", 0, "Channel 00/0 : 0[0] -> 9[1] [send] via NET/IB/1(1)/GDRDMA"),
         line("host00001", 1, "Channel 00/0 : 0[0] -> 9[1] [receive] via NET/IB/1/GDRDMA")]
    )  # fmt: skip
    assert "pxn-absent" not in fabric_codes(compare(parse_nccl_log(pxn), rails))


def test_cross_rail_without_nvlink(catalog):
    """On PCIe hosts (no NVLink to reach a proxy GPU) the same rail change is cross-rail
    traffic, not missing PXN."""
    spec = resolve_topology("h100-ib-cluster", catalog, 16)
    spec = replace(spec, intra=replace(spec.intra, fabric="pcie", link=None))
    fabric = build_fabric(cluster_of(build_fabric(spec, catalog)), catalog)
    text = "\n".join(
        [*init_lines(["host00000", "host00001"]), line("host00000", 0, IB_LIST),
         line("host00000", 0, "Channel 00/0 : 0[0] -> 9[1] [send] via NET/IB/0"),
         line("host00001", 1, "Channel 00/0 : 0[0] -> 9[1] [receive] via NET/IB/1")]
    )  # fmt: skip
    assert "cross-rail-traffic" in fabric_codes(compare(parse_nccl_log(text), fabric))


def test_nic_not_the_gpus_rail(rails):
    """Rank 3 (GPU 3) sends on mlx5_5 while its GPU's NIC is 3: a warning (the log names
    the NICs and the devices)."""
    text = "\n".join(
        [*init_lines(["host00000", "host00001"]), line("host00000", 3, IB_LIST),
         line("host00000", 3, "Channel 00/0 : 3[3] -> 13[5] [send] via NET/IB/5/GDRDMA"),
         line("host00001", 5, "Channel 00/0 : 3[3] -> 13[5] [receive] via NET/IB/5/GDRDMA")]
    )  # fmt: skip
    check = compare(parse_nccl_log(text), rails)
    assert fabric_codes(check)["nic-not-gpu-rail"] == "warning"
    assert "rank 3 on NIC 5 (its GPU's is 3)" in check.findings[-1].message or any(
        "rank 3 on NIC 5" in f.message for f in check.findings
    )


def test_unknown_host_and_impossible_device(rails):
    """A host the cluster lacks is an error; a rank on GPU 9 of an 8-GPU host a mismatch."""
    lines = init_lines(["host00000", "ghost-01"])
    text = "\n".join(lines).replace(
        "rank 7 nranks 16 cudaDev 7 nvmlDev 7", "rank 7 nranks 16 cudaDev 7 nvmlDev 9"
    )
    check = compare(parse_nccl_log(text), rails)
    codes = fabric_codes(check)
    assert codes["log-host-unknown"] == "error" and codes["log-fabric-mismatch"] == "warning"
    assert "ghost-01" in check.findings[0].message


def test_hosts_map_log_hosts_in_order(rails):
    """Log hosts that are not cluster names map to ``--hosts`` in order of first rank."""
    text = "\n".join(init_lines(["a", "b"]))
    check = compare(parse_nccl_log(text), rails, ["host00003", "host00007"])
    assert check.placement.host_of == {"a": "host00003", "b": "host00007"}
    assert check.placement.gpu_of[8] == 7 * 8


def test_every_fabric_code_is_exercised(catalog, rails):
    """Every documented fabric code comes out of a test here, with a known severity."""
    assert set(FABRIC_CODES) == {
        "log-host-unknown",
        "log-fabric-mismatch",
        "ring-extra-crossings",
        "tree-extra-crossings",
        "nic-not-gpu-rail",
        "pxn-absent",
        "cross-rail-traffic",
        "channels-below-nics",
        "nccl-pick-not-best",
        "nccl-pick-unexpected",
    }
    assert {"error", "warning", "info"} <= set(SEVERITIES)


#: NCCL 2.30.4's own choices on an 8x H200 node (rank 0's TUNING lines).
H200_TUNING = (
    Path(__file__).parents[1] / "data" / "nccl_tuning" / "h200_8gpu_nccl_2_30_4_tuning.log"
)


def test_algorithm_check_on_nccls_own_choices(run_cli):
    """NCCL's logged choices on the machine they ran on are what the model of its tuner
    picks: each is priced (logged, predicted and best pick per size) and none is unexpected."""
    status, out, err = run_cli("doctor", str(H200_TUNING), "-t", "hgx-h200", "--json")
    assert status == 0, err
    data = json.loads(out)
    choices = data["fabric"]["algorithm_choices"]
    assert [(c["size_bytes"], c["logged"]) for c in choices] == [
        (4, "ring/ll"),
        (4194304, "nvls/simple"),
    ]
    assert all(c["logged"] == c["predicted"] for c in choices)
    assert all(c["best_us"] <= c["logged_us"] for c in choices)
    codes = {f["code"] for f in data["findings"]}
    assert "nccl-pick-unexpected" not in codes


def test_algorithm_check_says_when_nccl_chose_slower(tmp_path, run_cli):
    """A log whose 4 MiB all-reduce ran ring/LL128 (as under NCCL_PROTO=LL128): the doctor
    says the model of NCCL's tuner picks NVLS there, that NVLS is faster by more than the
    margin, and the settings that restore it."""
    text = H200_TUNING.read_text(encoding="utf-8").replace(
        "4194304 Bytes -> Algo NVLS proto SIMPLE", "4194304 Bytes -> Algo RING proto LL128"
    )
    log = tmp_path / "ring.log"
    log.write_text(text, encoding="utf-8")
    status, out, err = run_cli("doctor", str(log), "-t", "hgx-h200", "--json")
    assert status == 0, err
    data = json.loads(out)
    slow = next(c for c in data["fabric"]["algorithm_choices"] if c["size_bytes"] == 4194304)
    assert (slow["logged"], slow["predicted"]) == ("ring/ll128", "nvls/simple")
    assert slow["best"] == "nvls/simple" and slow["gain"] >= 0.10
    assert slow["env"]["NCCL_ALGO"] == "allreduce:NVLS"
    findings = {f["code"]: f for f in data["findings"]}
    assert findings["nccl-pick-unexpected"]["severity"] == "info"
    assert findings["nccl-pick-not-best"]["severity"] == "warning"
    assert "NCCL_ALGO=allreduce:NVLS" in findings["nccl-pick-not-best"]["fix"]


def test_cli_json_and_errors(tmp_path, run_cli):
    """``doctor LOG --topology T --json`` adds the fabric section and its findings;
    ``--hosts`` without a topology and a bad hostlist are one line, exit 2."""
    log = SAMPLES / "nccl_tests_133_p2p_direct_pointer_ib_gdrdma.txt"
    status, out, err = run_cli(
        "doctor", str(log), "--topology", str(DATA / "cluster_nodeab.yaml"), "--json"
    )
    assert status == 0, err
    data = json.loads(out)
    assert data["fabric"]["topology"] == "cluster-nodeab"
    assert data["fabric"]["hosts"] == {"nodeb": "nodeb", "nodea": "nodea"}
    assert "channels-below-nics" in {f["code"] for f in data["findings"]}
    status, out, _ = run_cli("doctor", str(log), "-t", str(DATA / "cluster_nodeab.yaml"))
    assert status == 0 and "fabric         cluster-nodeab" in out
    status, _, err = run_cli("doctor", str(log), "--hosts", "a[1-2]")
    assert status == 2 and "--hosts applies with --topology" in err
    status, _, err = run_cli(
        "doctor", str(log), "-t", str(DATA / "cluster_nodeab.yaml"), "--hosts", "a[1-"
    )
    assert status == 2 and err.count("\n") == 1
    status, _, err = run_cli(
        "doctor", str(log), "-t", str(DATA / "cluster_nodeab.yaml"), "--hosts", "x,y"
    )
    assert status == 2 and "not in cluster-nodeab" in err


def test_a_one_nic_roce_log_does_not_fit_an_infiniband_cluster(rails):
    """The log of a box with one RoCE HCA, checked against a cluster of eight InfiniBand
    NICs per host (as Selene): log-fabric-mismatch names the link layer and the count."""
    log = read_nccl_log(SAMPLES / "nccl_392_v2_5_7_roce_partial_gdr_old_ring_format.txt")
    check = compare(log, rails, ["host00000", "host00001"])
    mismatch = [f for f in check.findings if f.code == "log-fabric-mismatch"]
    assert mismatch and mismatch[0].severity == "warning"
    assert "the log's NICs are RoCE (mlx5_0:1/RoCE)" in mismatch[0].message
    assert "1 NIC(s) in NET/IB (mlx5_0:1/RoCE), 8 per host" in mismatch[0].message


def test_hosts_place_a_log_on_a_reference_topologys_nodes(run_cli):
    """``--hosts n[2-3]`` on a reference topology puts the log's two hosts on its nodes n2
    and n3 (named as its GPUs are), in the order of their first rank; a name it lacks is
    one line."""
    log = SAMPLES / "nccl_tests_133_p2p_direct_pointer_ib_gdrdma.txt"
    status, out, err = run_cli(
        "doctor", str(log), "-t", "h100-ib-cluster", "--hosts", "n[2-3]", "--json"
    )
    assert status == 0, err
    assert sorted(json.loads(out)["fabric"]["hosts"].values()) == ["n2", "n3"]
    status, _, err = run_cli("doctor", str(log), "-t", "h100-ib-cluster", "--hosts", "n[40-41]")
    assert status == 2 and "2 host(s) not in h100-ib-cluster: n40, n41" in err
