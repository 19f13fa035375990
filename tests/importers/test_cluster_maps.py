"""GUID-to-hostname maps (``--names``) and NVLink domains (``--domains``) on imported
clusters: real map formats, per-tray ``nvidia-smi -q`` with its failure states, partial
racks, and one-line errors."""

from __future__ import annotations

import json
import time

import pytest
from _fabric_samples import FABRIC, fabric_sample
from _synthetic import ibnetdiscover_dump, smi_q

from fabricui.importers import ibnetdiscover, slurm_topology
from fabricui.importers.common import ParseError
from fabricui.importers.guid_names import apply_names, guid_key, parse_names
from fabricui.importers.nvlink_domains import domains_from_trays, parse_domains

PSMN = "ibnetdiscover/psmn_x5_voltaire_qdr_ddr_full.txt"
PSMN_MAP = "aux_guid_map/psmn_x5_guid_to_hostname.txt"
UUID = "dc6e40c4-d722-4357-9ba6-5291dd461278"


@pytest.fixture(autouse=True)
def no_slurm_job(monkeypatch):
    """Tests place jobs with --hosts only."""
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)


# --- GUID-to-hostname maps -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "key"),
    [
        ("H-0002c90300048eba", "0002c90300048eba"),
        ("0x2c90300048eba", "0002c90300048eba"),
        ("0X0002C90300048EBA", "0002c90300048eba"),
        ("0002:c903:0004:8eba", "0002c90300048eba"),
        ("0002c90300048eba", "0002c90300048eba"),
        ("luna-0001", None),
        ("0x", None),
        ("H-12", None),
    ],
)
def test_guid_forms(token, key):
    """Every GUID spelling the tools print compares as 16 hex digits; names are not GUIDs."""
    assert guid_key(token) == key


def test_psmn_map_names_its_adapters():
    """The X5 map names 86 of the 89 unnamed adapters; the 3 it lacks are listed, and the
    importer's 'no host name' warning is replaced."""
    graph = ibnetdiscover.parse(fabric_sample(PSMN))
    names = parse_names(fabric_sample(PSMN_MAP), "X5.map")
    assert len(names.hosts) == 86 and not names.warnings
    apply_names(graph, names, "X5.map")
    named = {h.name for h in graph.hosts if h.named}
    assert len(named) == 86 and {"x5570comp1", "r510gluster1", "sl390lin1"} <= named
    unnamed = [w for w in graph.warnings if "not in X5.map" in w]
    assert len(unnamed) == 1 and unnamed[0].startswith("3 adapter(s)")
    assert "H-78e7d1030024535c" in unnamed[0]
    assert not any("a GUID-to-hostname map names them" in w for w in graph.warnings)
    # Links still join the renamed hosts' ports to their switches.
    assert len(graph.host_links()) == 89


def test_slurm_guid_nodes_and_blocks_follow_the_map():
    """Slurm nodes given as adapter GUIDs get the map's names."""
    graph = slurm_topology.parse(
        fabric_sample("topology_conf/psmn_x5_generated_from_ibnetdiscover.txt")
    )
    apply_names(graph, parse_names("H-78e7d1030024535c node-a\n0x003048c749450000 = node-b\n"))
    names = {h.name for h in graph.hosts}
    assert {"node-a", "node-b"} <= names and "H-003048c74ae20000" in names


def test_adapters_of_one_host_merge():
    """Four unnamed HCAs the map gives one host become one host with four ports."""
    text = ibnetdiscover_dump(["h1", "h2"], hcas=4)
    for k in range(8):
        text = text.replace(f'"h{k // 4 + 1} mlx5_{k % 4}"', '"MT4129 ConnectX-7"')
    graph = ibnetdiscover.parse(text)
    assert len(graph.hosts) == 8 and not any(h.named for h in graph.hosts)
    lines = [f"H-0003c9030000{k:04x}, dgx-{k // 4 + 1:02d}" for k in range(8)]
    apply_names(graph, parse_names("\n".join(lines)))
    assert [(h.name, len(h.ports)) for h in graph.hosts] == [("dgx-01", 4), ("dgx-02", 4)]


def test_names_map_problems():
    """Conflicting and half lines are warned about; a file naming nothing is one line."""
    names = parse_names("H-0002c90300048eba a\nH-0002c90300048eba b\nH-0002c90300048ebb\n:::\n")
    assert names.hosts == {"0002c90300048eba": "a"}
    assert len(names.warnings) == 3
    with pytest.raises(ParseError, match="not a GUID-to-hostname map"):
        parse_names(fabric_sample("aux_guid_map/psmn_x5_spine_list.txt"))


def test_names_cli(tmp_path, run_cli):
    """``--names`` names adapters in the summary and the spec; a bad map is exit 2."""
    out = tmp_path / "x5.yaml"
    status, stdout, err = run_cli(
        "import", "ibnetdiscover", str(FABRIC / PSMN), "--names", str(FABRIC / PSMN_MAP),
        "-o", str(out), "--node", "dgx-a100",
    )  # fmt: skip
    assert status == 0, err
    assert "x5570comp[1-2]" in stdout and "3 adapter(s) are not in --names" in err
    status, stdout, _ = run_cli(
        "path", "-t", str(out), "--hosts", "x5570comp1,sl390lin1", "--src", "0", "--dst", "8"
    )
    assert status == 0 and "different nodes" in stdout
    status, _, err = run_cli(
        "import", "ibnetdiscover", str(FABRIC / PSMN), "--names",
        str(FABRIC / "aux_guid_map/psmn_x5_spine_list.txt"),
    )  # fmt: skip
    assert status == 2 and err.count("\n") == 1 and "not a GUID-to-hostname map" in err
    status, _, err = run_cli(
        "import", "nvidia-smi-q", str(FABRIC / "nvidia_smi/h100_hgx_8gpu_nvidia_smi_q_full.txt"),
        "--names", str(FABRIC / PSMN_MAP),
    )  # fmt: skip
    assert status == 2 and "--names and --domains apply to" in err


# --- NVLink domains ----------------------------------------------------------------------------


def trays(count: int = 38) -> list[str]:
    return [f"gb200-{i:02d}" for i in range(1, count + 1)]


def tray_outputs(hosts: list[str]) -> dict[str, str]:
    """Two racks of 18, one tray still registering, one without resources, one unhealthy."""
    out = {}
    for i, host in enumerate(hosts):
        if i == 36:
            out[host] = smi_q(state="In Progress", status="N/A", clique="N/A", uuid="N/A")
        elif i == 37:
            out[host] = smi_q(
                status="Insufficient Resources",
                clique="0",
                uuid="0" * 8 + "-0000" * 3 + "-" + "0" * 12,
            )
        else:
            uuid = f"aaaaaaaa-0000-0000-0000-00000000000{i // 18}"
            out[host] = smi_q(uuid=uuid, health="Unhealthy" if i == 5 else "Healthy")
    return out


def test_trays_group_by_cluster_uuid_and_clique():
    """Trays sharing ClusterUUID and CliqueId form a domain; registering, failed and
    unreadable trays are left out with their reasons; unhealthy ones are grouped, warned."""
    outputs = tray_outputs(trays())
    outputs["gb200-40"] = "GPU 00000000:01:00.0\n    Product Name : NVIDIA GB200\n"
    domains = domains_from_trays(outputs)
    assert [len(v) for v in domains.domains().values()] == [18, 18]
    assert set(domains.left_out) == {"gb200-37", "gb200-38", "gb200-40"}
    text = "\n".join(domains.warnings)
    assert "State 'In Progress'" in text and "Status 'Insufficient Resources'" in text
    assert "no Fabric section" in text and "fabric health 'Unhealthy': gb200-06" in text


def test_a_tray_split_over_two_domains_is_left_out():
    """GPUs of one tray in two domains: no domain, and the reason says so."""
    text = smi_q(gpus=2) + "\n" + smi_q(gpus=2, clique="3")
    domains = domains_from_trays({"t1": text})
    assert domains.left_out == {"t1": "its GPUs report different domains"}


def test_pdsh_column_and_nmx_sources():
    """One file of pdsh-prefixed ``nvidia-smi -q``, the Azure column file and NMX JSON."""
    pdsh = "\n".join(
        f"{host}: {line}" for host in ("gb-1", "gb-2") for line in smi_q(clique="7").split("\n")
    )
    assert parse_domains(pdsh).domains() == {f"{UUID}/7": ["gb-1", "gb-2"]}
    azure = parse_domains(fabric_sample("aux_guid_map/azure_gb200_nodes_clusterUUIDs_2.txt"))
    assert sorted(len(v) for v in azure.domains().values()) == [14, 18, 18, 18]
    nmx = parse_domains(fabric_sample("netq_nmx_export/nmx_compute_nodes_gb200_two_trays.txt"))
    assert nmx.domains() == {"3fbfc98b-7f95-4749-ab11-bd351a2aab3e": ["node1", "node2"]}
    with pytest.raises(ParseError, match="not an NVLink domain source"):
        parse_domains("hello world this is not it\n")


def test_domains_cli_builds_racks(tmp_path, run_cli):
    """``--domains FOLDER``: two NVLink racks of the real fabric; trays of one rack talk over
    NVLink, of two racks over InfiniBand; a partial rack keeps empty slots that no group,
    traffic or job uses; left-out trays are warned about and unknown to --hosts."""
    folder = tmp_path / "q"
    folder.mkdir()
    outputs = tray_outputs(trays())
    del outputs["gb200-21"]  # no output for it: not in the domains
    for host, text in outputs.items():
        (folder / f"{host}.txt").write_text(text)
    dump = tmp_path / "fabric.topo"
    dump.write_text(ibnetdiscover_dump(trays(), hcas=4, leaves=4, spines=4))
    out = tmp_path / "c.yaml"
    status, stdout, err = run_cli(
        "import", "ibnetdiscover", str(dump), "-o", str(out), "--node", "gb200-nvl72",
        "--domains", str(folder),
    )  # fmt: skip
    assert status == 0, err
    assert "35 trays in 2 NVLink domains of 18" in stdout
    assert "gb200-37" in err and "gb200-38" in err and "gb200-21" in err
    text = out.read_text()
    assert "hosts_per_domain: 18" in text and "nodes: 36" in text and '- "-"' in text
    status, stdout, _ = run_cli(
        "path", "-t", str(out), "--hosts", "gb200-[01-02]", "--src", "0", "--dst", "4"
    )
    assert status == 0 and "same domain d0" in stdout and "nvlink5" in stdout
    assert "1 block(s)" in stdout
    status, stdout, _ = run_cli(
        "path", "-t", str(out), "--hosts", "gb200-01,gb200-19", "--src", "0", "--dst", "4"
    )
    assert status == 0 and "different nodes" in stdout and "ib-ndr" in stdout
    status, stdout, err = run_cli(
        "collective", "all_reduce", "-t", str(out), "--size", "1G", "--json"
    )
    assert status == 0, err
    assert json.loads(stdout)["nranks"] == 35 * 4
    status, stdout, err = run_cli("traffic", "-t", str(out), "--pattern", "ring", "--json")
    assert status == 0 and json.loads(stdout)["gpus"] == 140, err
    status, _, err = run_cli(
        "path", "-t", str(out), "--hosts", "gb200-37", "--src", "0", "--dst", "1"
    )
    assert status == 2 and "not in c" in err


def test_domains_need_a_switched_node_and_a_cluster_format(tmp_path, run_cli):
    """A node spec without a scale-up switch, or a non-cluster format, is one line."""
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "h1").write_text(smi_q())
    dump = tmp_path / "fabric.topo"
    dump.write_text(ibnetdiscover_dump(["h1", "h2"], hcas=2))
    status, _, err = run_cli(
        "import", "ibnetdiscover", str(dump), "-o", str(tmp_path / "x.yaml"),
        "--node", "pcie-rtx4090x2", "--domains", str(folder),
    )  # fmt: skip
    assert status == 2 and "need a node spec with a scale-up switch" in err
    status, _, err = run_cli("import", "ibnetdiscover", str(dump), "--domains", str(folder))
    assert status == 2 and "--domains only applies with -o" in err
    block = FABRIC / "topology_conf_block/azure_gb200_4x18_blocks_clusteruuid_names.txt"
    status, _, err = run_cli(
        "import", "slurm-topology", str(block), "-o", str(tmp_path / "b.yaml"),
        "--node", "gb200-nvl72", "--domains", str(folder),
    )  # fmt: skip
    assert status == 2 and "Slurm blocks are NVLink domains already" in err


def test_large_domain_files_read_in_linear_time():
    """20,000 column lines and 2,000 pdsh trays read in well under a second or two."""
    lines = "\n".join(f"host{i:05d} {UUID[:-3]}{i // 18:03d} {i % 3}" for i in range(20000))
    start = time.perf_counter()
    assert len(parse_domains(lines).domain_of) == 20000
    one = smi_q()
    pdsh = "\n".join(f"t{i}: {line}" for i in range(2000) for line in one.split("\n"))
    assert len(parse_domains(pdsh).domain_of) == 2000
    assert time.perf_counter() - start < 10.0
