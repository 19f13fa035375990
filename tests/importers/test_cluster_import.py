"""``fabricui import`` of cluster formats: JSON keys, hostile pastes, ``-o`` specs that build,
and the end-to-end path over real switch names."""

from __future__ import annotations

import contextlib
import json

import pytest
from _fabric_samples import FABRIC, fabric_sample

from fabricui.importers import ibnetdiscover, slurm_topology
from fabricui.importers.common import ParseError

RUFM = "ibnetdiscover/nvidia_rufm_lab_hdr_fdr_small_2021.txt"
SELENE = "ibnetdiscover/nvidia_selene_compute_hdr_superpod_2021.txt"
LINK_KEYS = ["a", "a_port", "b", "b_port", "width", "speed", "gbps"]


def counts(text: str) -> tuple[int, int, int]:
    g = ibnetdiscover.parse(text)
    return len(g.switches), sum(len(h.ports) for h in g.hosts), len(g.links)


# --- hostile pastes --------------------------------------------------------------------------


def test_crlf_and_stripped_tabs_read_the_same():
    """CRLF line ends and tabs turned into single blanks change nothing."""
    text = fabric_sample(RUFM)
    assert counts(text.replace("\n", "\r\n")) == counts(text) == (2, 12, 16)
    assert counts(text.replace("\t", " ")) == (2, 12, 16)


def test_putty_banner_and_stderr_before_the_header():
    """A login banner and ibwarn lines before the dump are skipped and named, not guessed."""
    text = (
        "login as: root\nUsing keyboard-interactive authentication.\n"
        "ibwarn: [12345] mad_rpc_open_port: can't open UMAD port (mlx5_0:1)\n" + fabric_sample(RUFM)
    )
    g = ibnetdiscover.parse(text)
    assert (len(g.switches), len(g.links)) == (2, 16)
    assert any("error output mixed into the dump" in w and "ibwarn" in w for w in g.warnings)
    assert any("2 line(s) not understood" in w and "login as" in w for w in g.warnings)


def test_missing_cable_and_duplicate_record_are_warned():
    """A cable listed by one end only and a record pasted twice are stated."""
    lines = fabric_sample(RUFM).split("\n")
    # Drop the switch side of r-dcs96 HCA-1's cable: the adapter side still lists it.
    cut = [ln for ln in lines if not ln.startswith("[23]\t")]
    g = ibnetdiscover.parse("\n".join(cut))
    assert any("1 cable(s) are listed by one end only" in w for w in g.warnings)
    record = "\n".join(lines[-6:])
    g = ibnetdiscover.parse("\n".join(lines) + "\n\n" + record)
    assert any("appear twice" in w for w in g.warnings) and len(g.links) == 16


def test_guid_named_hosts_in_topology_conf():
    """GUIDs instead of host names in Nodes= are warned, and the nodes kept."""
    g = slurm_topology.parse("SwitchName=s1 Nodes=0x155dfffd33ff7d,0x155dfffd33ffbd\n")
    assert len(g.hosts) == 2 and any("adapter GUIDs" in w for w in g.warnings)


def test_topology_conf_typos_and_commented_lines():
    """An unknown key (typo) and commented-out switch lines are stated; the rest is read."""
    text = (
        "SwitchName=s0 Nodes=n[1-4] LinkSpeeed=10\n"
        "#SwitchName=s1 Nodes=n[5-8]\n"
        "SwitchName=top Switches=s0\n"
    )
    g = slurm_topology.parse(text)
    assert len(g.switches) == 2 and len(g.hosts) == 4
    assert any("LinkSpeeed=" in w and "typo" in w for w in g.warnings)
    assert any("1 commented-out topology line(s)" in w for w in g.warnings)


def test_duplicate_node_assignments():
    """A node under two switches and a node in two blocks are warned."""
    g = slurm_topology.parse("SwitchName=a Nodes=n1,n2\nSwitchName=b Nodes=n2\n")
    assert any("n2 (a, b)" in w for w in g.warnings)
    g = slurm_topology.parse("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[2-3]\n")
    assert any("more than one block" in w for w in g.warnings)


def test_hostlist_bomb_in_topology_conf_is_one_line():
    """A node list standing for billions of names fails fast with the line number."""
    with pytest.raises(ParseError, match="line 1: hostlist .* more than"):
        slurm_topology.parse("SwitchName=s Nodes=n[0-999999999]\n")


def test_long_runs_do_not_take_quadratic_time():
    """Long runs of blanks, quotes and brackets are read in linear time."""
    import time

    hostile = (
        'Switch 36 "S-0001" # "' + '"' * 50_000 + "\n"
        '[1] "H-0002"[1] # ' + " " * 100_000 + "x\n"
        "SW 1 1 0x01 4x EDR - CA 2 1 0x02 ( '" + "' - '" * 20_000 + " )\n"
    )
    start = time.perf_counter()
    with contextlib.suppress(ParseError):
        ibnetdiscover.parse(hostile)
    assert time.perf_counter() - start < 1.0


# --- the command -----------------------------------------------------------------------------


def test_json_keys(run_cli):
    """--json has the documented keys; every link has exactly the documented fields."""
    status, out, _ = run_cli("import", "ibnetdiscover", str(FABRIC / RUFM), "--json")
    data = json.loads(out)
    assert status == 0
    for key in ("format", "switches", "hosts", "links", "blocks", "warnings"):
        assert key in data
    assert data["format"] == "ibnetdiscover" and len(data["links"]) == 16
    assert all(list(link) == LINK_KEYS for link in data["links"])
    status, out, _ = run_cli(
        "import",
        "slurm-topology",
        str(FABRIC / "topology_conf_block/azure_gb200_4x18_blocks_clusteruuid_names.txt"),
        "--json",
    )
    data = json.loads(out)
    assert "nodes" in data and len(data["blocks"]) == 4 and data["switches"] == []


@pytest.mark.parametrize(
    ("fmt", "content", "message"),
    [
        ("ibnetdiscover", b"", "empty input"),
        ("iblinkinfo", b"\x00\x01", "binary"),
        ("slurm-topology", b"hello world\n", "no Slurm"),
        ("nvidia-smi-q", b"GPU0 X NV12\n", "use `fabricui import nvidia-smi FILE`"),
        ("ibnetdiscover", b"SwitchName=s0 Nodes=a\n", "use `fabricui import slurm-topology"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, run_cli, fmt, content, message):
    """Bad input: exit 2, one ``fabricui: error:`` line, no traceback."""
    path = tmp_path / "in.txt"
    path.write_bytes(content)
    status, out, err = run_cli("import", fmt, str(path))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fabricui: error:") and message in err


def test_cluster_options_are_checked(tmp_path, run_cli):
    """-o needs --node; --nodes does not apply to a cluster; --node needs a cluster format."""
    src = str(FABRIC / RUFM)
    status, _, err = run_cli("import", "ibnetdiscover", src, "-o", str(tmp_path / "c.yaml"))
    assert status == 2 and "needs --node NODE" in err
    status, _, err = run_cli(
        "import",
        "ibnetdiscover",
        src,
        "-o",
        str(tmp_path / "c.yaml"),
        "--node",
        "dgx-a100",
        "--nodes",
        "4",
    )
    assert status == 2 and "--nodes does not apply" in err
    topo = tmp_path / "topo.txt"
    topo.write_text("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n")
    status, _, err = run_cli(
        "import", "nvidia-smi", str(topo), "-o", str(tmp_path / "n.yaml"), "--node", "dgx-a100"
    )
    assert status == 2 and "--node and --hosts apply to cluster formats" in err
    status, _, err = run_cli(
        "import", "ibnetdiscover", src, "-o", str(tmp_path / "c.yaml"), "--node", "nope-node"
    )
    assert status == 2 and "--node nope-node" in err and not (tmp_path / "c.yaml").exists()


def test_selene_to_spec_to_path_with_real_names(tmp_path, run_cli, monkeypatch):
    """The SuperPOD dump becomes a spec that builds exactly (666 switches, 458 nodes); a path
    between two hosts of a job crosses the real leaf, spine and core switches; inside a Slurm
    job, ``$SLURM_JOB_NODELIST`` places it."""
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    out = tmp_path / "selene.yaml"
    status, stdout, err = run_cli(
        "import", "ibnetdiscover", str(FABRIC / SELENE), "-o", str(out), "--node", "dgx-a100"
    )
    assert status == 0, err
    assert "wrote" in stdout and "11 host(s) left out as not compute nodes" in err
    text = out.read_text()
    assert "layout: explicit" in text and "    - LG01-01 leaf MQM8700" in text
    assert "measured leaf oversubscription" in text
    status, stdout, err = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "3663")
    assert status == 0, err
    assert "LG01-08" in stdout and "CSPINE" in stdout and "CCORE" in stdout  # PXN: rail 8
    status, stdout, err = run_cli(
        "path",
        "--topology",
        str(out),
        "--hosts",
        "luna-[0001,0002]",
        "--src",
        "luna-0001.g0",
        "--dst",
        "luna-0002.g0",
        "--json",
    )
    assert status == 0, err
    data = json.loads(stdout)
    assert data["job"]["hosts"] == ["luna-0001", "luna-0002"]
    assert {h["to"] for h in data["hops"]} >= {"LG01-01"}
    monkeypatch.setenv("SLURM_JOB_NODELIST", "luna-[0457-0458]")
    status, stdout, err = run_cli("path", "--topology", str(out), "--src", "0", "--dst", "15")
    assert status == 0, err
    assert stdout.startswith("job on 2 host(s) luna-[0457-0458]: 16 GPUs")
    status, _, err = run_cli(
        "import", "ibnetdiscover", str(FABRIC / SELENE), "-o", str(out), "--node", "dgx-a100"
    )
    assert status == 2 and "already exists" in err


def test_hosts_option_picks_the_nodes(tmp_path, run_cli):
    """--hosts makes exactly those hosts nodes; an unknown one names the nearest."""
    out = tmp_path / "lab.yaml"
    status, _, err = run_cli(
        "import",
        "ibnetdiscover",
        str(FABRIC / RUFM),
        "-o",
        str(out),
        "--node",
        "dgx-a100",
        "--hosts",
        "r-dmz-ufm[128,131]",
    )
    assert status == 0, err
    assert "nodes: 2" in out.read_text()
    status, _, err = run_cli(
        "import",
        "ibnetdiscover",
        str(FABRIC / RUFM),
        "-o",
        str(tmp_path / "x.yaml"),
        "--node",
        "dgx-a100",
        "--hosts",
        "r-dmz-ufm999",
    )
    assert status == 2 and "r-dmz-ufm999" in err


def test_gb200_blocks_become_nvlink_domains(tmp_path, run_cli, monkeypatch):
    """Slurm blocks of 18 GB200 trays become 4 NVLink domains of 72 GPUs; two trays of one
    block talk over NVLink, trays of two blocks over the network."""
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    out = tmp_path / "gb.yaml"
    block = FABRIC / "topology_conf_block/azure_gb200_4x18_blocks_clusteruuid_names.txt"
    status, _, err = run_cli(
        "import", "slurm-topology", str(block), "-o", str(out), "--node", "gb200-nvl72"
    )
    assert status == 0, err
    text = out.read_text()
    assert "gpus_per_node: 72" in text and "hosts_per_node: 18" in text
    status, stdout, _ = run_cli(
        "path", "--topology", str(out), "--hosts", "hpcbench-hpc-[1,5]", "--src", "0", "--dst", "4"
    )
    assert status == 0 and "same node" in stdout and "nvlink5" in stdout
    status, stdout, _ = run_cli(
        "path", "--topology", str(out), "--hosts", "hpcbench-hpc-[1-2]", "--src", "0", "--dst", "4"
    )
    assert status == 0 and "different nodes" in stdout and "ib-ndr" in stdout


def test_cluster_importers_import_nothing_heavy():
    """The new importers and the cluster spec writer load without numpy, yaml or textual."""
    import subprocess
    import sys

    code = (
        "import sys; import fabricui.importers.ibnetdiscover, fabricui.importers.iblinkinfo, "
        "fabricui.importers.slurm_topology, fabricui.importers.nvidia_smi_q, "
        "fabricui.importers.hostlist, fabricui.importers.fabric_graph, "
        "fabricui.importers.cluster_spec; "
        "print(sorted({'numpy', 'yaml', 'textual', 'rich'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_nvidia_smi_q_cannot_become_a_spec(tmp_path, run_cli):
    """-o with nvidia-smi -q says it has no GPU link matrix (it lists GPUs, not their links)."""
    src = FABRIC / "nvidia_smi/h100_hgx_8gpu_nvidia_smi_q_full.txt"
    status, _, err = run_cli("import", "nvidia-smi-q", str(src), "-o", str(tmp_path / "q.yaml"))
    assert status == 2 and "has no GPU link matrix" in err and not (tmp_path / "q.yaml").exists()


def test_a_job_on_the_cluster_collective_and_traffic(selene, run_cli, monkeypatch):
    """``collective --hosts`` runs over the job's GPUs and compares them with as many packed
    from rank 0; ``traffic --hosts`` runs the pattern among the job's GPUs (on Selene as
    ``import ibnetdiscover --node dgx-a100`` makes it: the session's ``selene``)."""
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    out = selene
    hosts = "luna-[0001-0002,0421-0422]"
    status, stdout, err = run_cli(
        "collective", "all_reduce", "-t", str(out), "--hosts", hosts, "--size", "1G", "--json"
    )
    assert status == 0, err
    data = json.loads(stdout)
    assert data["nranks"] == 32 and data["job"]["hostlist"] == hosts
    assert len(data["packed_rows"]) == len(data["rows"]) == 1
    status, stdout, err = run_cli("traffic", "-t", str(out), "--hosts", hosts, "--json")
    assert status == 0, err
    flows = json.loads(stdout)["flows"]
    assert len(flows) == 32 * 31 and len({f["src"].split(".")[0] for f in flows}) == 4
    monkeypatch.setenv("SLURM_JOB_NODELIST", "luna-[0001-0002]")
    status, stdout, err = run_cli("collective", "all_reduce", "-t", str(out), "--size", "1G")
    assert status == 0 and "job on 2 host(s) luna-[0001-0002]" in stdout
