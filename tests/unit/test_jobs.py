"""Job placement: a Slurm hostlist on an imported cluster gives the hosts' ranks and the leaves,
spines and blocks the job spans; unknown hosts fail in one line naming the nearest."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.services.jobs import NODELIST_ENV, place_job

HEAD = """\
id: jobs
gpu: h100-sxm
nodes: 4
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, link: nvlink4, sockets: 2, pcie_switches: 4}
net: {link: ib-ndr, gbps: 400, nics_per_node: 2, layout: explicit}
"""
#: Two leaves under two shared spines.
SHARED = (
    HEAD
    + """\
cluster:
  switches: [L1 leaf, L2 leaf, S1 spine, S2 spine]
  hosts: [h1 L1 L1, h2 L1 L1, h3 L2 L2, h4 L2 L2]
  cables: [L1 S1 1 400, L1 S2 1 400, L2 S1 1 400, L2 S2 1 400]
"""
)
#: Two pods (a leaf and a spine each) joined by a core.
PODS = (
    HEAD
    + """\
cluster:
  switches: [L1 leaf, L2 leaf, S1 spine, S2 spine, C1 core]
  hosts: [h1 L1 L1, h2 L1 L1, h3 L2 L2, h4 L2 L2]
  cables: [L1 S1 1 400, L2 S2 1 400, S1 C1 1 400, S2 C1 1 400]
  blocks: [rack1, rack1, rack2, rack2]
"""
)
#: Two NVLink domains of two 4-GPU trays each, on a generated network.
DOMAINS = """\
id: domains
gpu: gb200
nodes: 2
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, link: nvlink5, pcie_switches: 0, sockets: 4, host_link: nvlink-c2c,
        socket_link: nvlink-c2c}
net: {link: ib-ndr, gbps: 400, nics_per_node: 8}
cluster:
  hosts_per_node: 2
  hosts: [t1, t2, t3, "-"]
  blocks: [rackA, rackB]
"""


def fabric_of(text: str, catalog):
    return build_fabric(parse_topology(parse_yaml(text, "jobs.yaml"), catalog), catalog)


@pytest.fixture(scope="module")
def shared(catalog):
    return fabric_of(SHARED, catalog)


def test_one_leaf(shared):
    """Two hosts on one leaf: their 16 ranks in hostlist order, one leaf, traffic stays there."""
    job = place_job(shared, "h[1-2]")
    assert job.ranks.tolist() == list(range(16))
    assert job.leaves == ("L1",) and job.spines == ("S1", "S2")
    assert job.top_tier == "leaf" and len(job.nodes) == 2


def test_hostlist_order_and_spine_tier(shared):
    """Ranks follow the hostlist's order; two leaves under shared spines climb to the spine."""
    job = place_job(shared, "h4,h1")
    assert job.ranks.tolist() == list(range(24, 32)) + list(range(8))
    assert job.leaves == ("L1", "L2") and job.top_tier == "spine"
    assert job.rank_of("8") == 0 and job.rank_of("h1.g3") == 3 and job.rank_of("h4.g0") == 24


def test_single_host_stays_in_the_node(shared):
    """One host: no network needed."""
    assert place_job(shared, "h3").top_tier == "node"


def test_core_and_blocks(catalog):
    """Leaves in two pods climb to the core; blocks are the cluster's names."""
    job = place_job(fabric_of(PODS, catalog), "h[1,3]")
    assert job.top_tier == "core" and job.blocks == ("rack1", "rack2")
    assert job.spines == ("S1", "S2")


def test_trays_of_nvlink_domains(catalog):
    """Hosts are trays of NVLink domains: their GPUs are slices of the domain's ranks."""
    fabric = fabric_of(DOMAINS, catalog)
    job = place_job(fabric, "t[2-3]")
    assert job.ranks.tolist() == [4, 5, 6, 7, 8, 9, 10, 11]
    assert job.gpus_per_host == 4 and job.blocks == ("rackA", "rackB")
    assert place_job(fabric, "t[1-2]").top_tier == "node"


def test_default_is_the_slurm_nodelist(shared):
    """Without --hosts the job is $SLURM_JOB_NODELIST; without either, one line."""
    job = place_job(shared, env={NODELIST_ENV: "h[2-3]"})
    assert job.hosts == ("h2", "h3")
    with pytest.raises(ConfigError, match=r"no --hosts given and \$SLURM_JOB_NODELIST"):
        place_job(shared, env={})


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        ("h9", "1 host(s) not in jobs: h9 (nearest to h9: h4, h3, h2)"),
        ("h[1-2],x[1-5]", "5 host(s) not in jobs: x1, x2, x3 and 2 more"),
        ("h[1-", "--hosts: hostlist 'h[1-': '[' is never closed"),
        ("h[0-99999999]", "stands for more than"),
    ],
)
def test_bad_hosts_are_one_line(shared, hosts, message):
    """Unknown hosts name the nearest known ones; malformed lists say what is wrong."""
    with pytest.raises(ConfigError) as info:
        place_job(shared, hosts)
    assert message in info.value.message and "\n" not in info.value.message


def test_job_ranks_out_of_range(shared):
    """A job rank or HOST.gK outside the job is one line with the valid range."""
    job = place_job(shared, "h1")
    with pytest.raises(ConfigError, match="ranks 0..7"):
        job.rank_of("8")
    with pytest.raises(ConfigError, match="HOST.gK with K < 8"):
        job.rank_of("h2.g0")


def test_a_generated_topologys_hosts_are_named_as_its_gpus(catalog):
    """A generated topology's hosts are n0, n1 ... (its GPUs are n1.g0 ...): a job on
    n[1-2] holds ranks 8..23 and stays below its leaves (one a rail, PXN); a name it lacks
    is one line with the nearest ones."""
    from fabricui.hwdb.resolve import resolve_topology

    fabric = build_fabric(resolve_topology("h100-ib-cluster", catalog), catalog)
    job = place_job(fabric, "n[1-2]")
    assert job.ranks.tolist() == list(range(8, 24))
    assert (job.hosts, job.top_tier) == (("n1", "n2"), "leaf")
    with pytest.raises(ConfigError, match=r"1 host\(s\) not in h100-ib-cluster: node1"):
        place_job(fabric, "node1")


@pytest.mark.parametrize(
    ("hosts", "tier"), [("n[0-1]", "router"), ("n[0-63]", "group"), ("n[0,300]", "global")]
)
def test_a_dragonflys_tiers_are_its_routers_groups_and_global_links(catalog, hosts, tier):
    """On a dragonfly a job's traffic stays on one router, inside one group (its local
    links) or crosses groups (global links), not on leaves and spines."""
    from fabricui.hwdb.resolve import resolve_topology

    fabric = build_fabric(resolve_topology("dragonfly-cluster", catalog), catalog)
    assert place_job(fabric, hosts).top_tier == tier


def test_json_and_summary(shared):
    """JSON has the hostlist, ranks and what the job spans; the summary is one line."""
    job = place_job(shared, "h[1-2]")
    data = job.to_json()
    assert data["hostlist"] == "h[1-2]" and data["ranks"][:3] == [0, 1, 2]
    assert data["leaves"] == ["L1"] and data["top_tier"] == "leaf"
    assert "\n" not in job.summary() and "16 GPUs" in job.summary()


def test_plan_runs_a_layout_on_the_jobs_gpus(tmp_path, run_cli, monkeypatch):
    """`plan --hosts` prices the layout on the job's hosts: DP over h1 and h3 crosses the
    spines where h1 and h2 share a leaf, so the same layout's DP costs more there; the JSON
    says where the job ran."""
    import json

    monkeypatch.delenv(NODELIST_ENV, raising=False)
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED)
    common = ("plan", "-t", str(path), "-m", "llama3-8b", "--tp", "8", "--json")
    status, out, err = run_cli(*common, "--hosts", "h[1-2]")
    assert status == 0, err
    packed = json.loads(out)
    assert packed["job"]["hosts"] == ["h1", "h2"] and packed["layout"]["dp"] == 2
    status, out, err = run_cli(*common, "--hosts", "h1,h3")
    assert status == 0, err
    spread = json.loads(out)
    assert spread["job"]["hosts"] == ["h1", "h3"]
    assert spread["comm_us"] > packed["comm_us"]
    status, out, err = run_cli(*common[:-1], "--hosts", "h1,h9")
    assert status == 2 and "h9" in err and len(err.strip().splitlines()) == 1
    status, out, err = run_cli(*common[:-1], "--hosts", "h[1-2]")
    assert status == 0 and out.startswith("job on 2 host(s) h[1-2]: 16 GPUs")


def test_search_ranks_layouts_on_the_jobs_gpus(tmp_path, run_cli, monkeypatch):
    """`plan --search --hosts` ranks the layouts of the job's 16 GPUs, each priced on its
    hosts exactly as `plan --hosts` prices that layout."""
    import json

    monkeypatch.delenv(NODELIST_ENV, raising=False)
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED)
    base = ("plan", "-t", str(path), "-m", "llama3-8b", "--hosts", "h1,h3", "--json")
    status, out, err = run_cli(*base, "--search", "--top", "3")
    assert status == 0, err
    found = json.loads(out)
    assert found["job"]["hosts"] == ["h1", "h3"] and found["global_batch"] == 16
    best = found["plans"][0]
    lay = best["layout"]
    assert lay["tp"] * lay["cp"] * lay["pp"] * lay["dp"] == 16
    degrees = [f"--{k}={lay[k]}" for k in ("tp", "cp", "pp", "dp", "ep", "vpp", "microbatches")]
    flavour = next(s for s in best["strategies"] if s in ("ddp", "zero1", "zero2", "fsdp"))
    status, out, err = run_cli(
        *base,
        *degrees,
        f"--global-batch={lay['global_batch']}",
        f"--dp-strategy={flavour}",
        f"--recompute={best['recipe']['recompute']}",
    )
    assert status == 0, err
    assert json.loads(out)["step_us"] == pytest.approx(best["step_us"], rel=1e-9)


def test_a_named_group_wins_over_the_slurm_nodelist(tmp_path, run_cli, monkeypatch):
    """Inside a job ($SLURM_JOB_NODELIST set) `collective` prices the job's GPUs; a group the
    user names (--gpus, --group) is priced as named, not replaced by the job."""
    import json

    monkeypatch.setenv(NODELIST_ENV, "h[1-2]")
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED)
    common = ("collective", "all_reduce", "1M", "-t", str(path), "--json")
    status, out, err = run_cli(*common)
    assert status == 0, err
    assert json.loads(out)["nranks"] == 16
    status, out, err = run_cli(*common, "--gpus", "8")
    assert status == 0, err
    assert json.loads(out)["nranks"] == 8
    status, out, err = run_cli(*common, "--group", "per-node")
    assert status == 0, err
    assert json.loads(out)["nranks"] == 4
