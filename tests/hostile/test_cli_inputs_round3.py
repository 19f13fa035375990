"""Bad command-line input ends in one clear line and exit status 2, never a traceback: a
negative seed, a node count no fabric of the topology holds, a GPU id the topology does not
have, a file that is no free-host list, an empty or multi-line output name, a group of one
GPU. Each case runs the CLI in this process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _hostile import ROOT, one_error

from fabricui.engine.traffic import pattern_flows
from fabricui.errors import EngineError
from fabricui.fabric import most_nodes
from fabricui.fabric.builder import check_tiled
from fabricui.services.session import load_catalog

CLUSTER = ROOT / "tests" / "doctor" / "topologies" / "cluster_8hosts.yaml"


@pytest.mark.parametrize("seed", ["-1", "-99999999999999999999"])
def test_a_negative_seed_is_refused(run_cli, seed):
    """traffic random-pairs --seed -1: one line, not numpy's ValueError."""
    err = one_error(run_cli, "traffic", "random-pairs", "--seed", seed)
    assert f"--seed must be >= 0 (got {seed})" in err


def test_the_engine_refuses_a_negative_seed_itself():
    """pattern_flows raises its own error, not numpy's."""
    with pytest.raises(EngineError, match="seed must be >= 0"):
        pattern_flows("random-pairs", [0, 1, 2, 3], seed=-1)


@pytest.mark.parametrize(
    ("option", "value"), [("--top", "0"), ("--top", "-5"), ("--gpus", "-3"), ("--gpus", "1")]
)
def test_the_other_integer_options_of_traffic_are_one_line(run_cli, option, value):
    """--top and --gpus out of range: one line naming the option."""
    assert option in one_error(run_cli, "traffic", option, value)


def _advised(err: str) -> int:
    found = re.search(r"use --nodes (\d+)", err)
    assert found, err
    return int(found.group(1))


@pytest.mark.parametrize(
    ("topology", "expected"),
    [
        ("dgx-h100-pod", 8192),  # 64-port switches: 64 pods of a three-tier fat-tree
        ("gb200-nvl72-cluster", None),
        ("tpu-v6e-256", 32),  # a v6e slice is at most 256 chips of 8 per host
        ("tpu-v5p-torus", 1536),  # 16x16x24 chips, 4 per host
        ("dragonfly-cluster", None),
        ("trn2-ultraserver", None),
    ],
)
def test_too_many_nodes_advises_a_count_the_builder_accepts(run_cli, topology, expected):
    """The memory refusal's --nodes N is one the topology's builder accepts (and N + one
    domain is one it refuses or the budget would), for every kind of network."""
    err = one_error(run_cli, "export", "-t", topology, "--nodes", "99999999999999")
    most = _advised(err)
    if expected is not None:
        assert most == expected
    catalog = load_catalog()
    spec = catalog.topologies[topology]
    check_tiled(spec.with_nodes(most), catalog)  # the builder's own checks pass
    hosts = spec.intra.hosts_per_domain
    assert most % hosts == 0
    if hosts > 1:
        assert f"a multiple of {hosts}" in err
    assert most_nodes(spec, catalog, most + hosts) in (most, most + hosts)


def test_the_advised_count_exports(run_cli, tmp_path):
    """export --nodes N with the N the refusal named writes the diagram."""
    most = _advised(one_error(run_cli, "export", "--nodes", "99999999999999"))
    out = tmp_path / "pod.dot"
    status, _, err = run_cli("export", "--nodes", str(most), "-o", str(out))
    assert status == 0 and out.is_file(), err


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["d0.g9"], ["no GPU d0.g9", "(nearest: d0.g7)", "n0.g0 .. n3.g7"]),
        (["n0"], ["invalid GPU id 'n0'", "a node", "(nearest: n0.g0)"]),
        (["n1.nic3"], ["nic3 is no GPU of n1", "(nearest: n1.g3)"]),
        (["gpu3"], ["invalid GPU id 'gpu3'", "(nearest: n0.g3)"]),
        (["d9.g0"], ["(nearest: d3.g0)"]),
    ],
)
def test_unknown_gpus_name_the_nearest_ids(run_cli, argv, wanted):
    """path n0.g0 ID on the default pod: the id, the nearest valid ids, the id forms."""
    err = one_error(run_cli, "path", "n0.g0", *argv)
    for text in wanted:
        assert text in err


@pytest.mark.parametrize(
    ("gpu", "wanted"),
    [
        ("h8.g9", ["no GPU h8.g9", "h8 has g0..g7", "(nearest: h8.g7)"]),
        ("h8", ["invalid GPU id 'h8'", "h8 is a host", "(nearest: h8.g0)"]),
        ("h8.nic0", ["invalid GPU id 'h8.nic0'", "(nearest: h8.g0)"]),
        ("h9.g2", ["unknown host 'h9'", "(nearest: h8.g2,"]),
        ("n8.g0", ["no GPU n8.g0", "(nearest: n7.g0)"]),
        ("64", ["no GPU rank 64", "nearest: 63, h8.g7"]),
    ],
)
def test_an_imported_cluster_speaks_of_its_hosts(run_cli, gpu, wanted):
    """On a cluster whose GPUs are HOST.gK: the nearest ids, and that form described."""
    err = one_error(run_cli, "path", "-t", str(CLUSTER), "h1.g0", gpu)
    for text in wanted:
        assert text in err
    assert "HOST.gK (h1.g0) with K 0..7 on the 8 hosts h1 .. h8" in err


def test_place_free_names_what_it_reads(run_cli, tmp_path):
    """--free FILE that no tool printed: advice for a free-host list, not `import ibstat`."""
    notes = tmp_path / "passwd"
    notes.write_text("root:x:0:0:root:/root:/bin/bash\n")
    err = one_error(run_cli, "place", "2", "-t", str(CLUSTER), "--free", str(notes))
    assert "sinfo" in err and "scontrol show node" in err and "--free h[1-4]" in err
    assert "import ibstat" not in err
    err = one_error(run_cli, "place", "2", "-t", str(CLUSTER), "--jobs", str(notes))
    assert "squeue" in err and "import ibstat" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "-o", ""],
        ["export", "-o", "  "],
        ["snapshot", "topology", "-o", ""],
        ["import", "ibstat", "-", "-o", ""],
        ["probe", "-o", ""],
        ["calibrate", "x.txt", "-t", "dgx-h100-pod", "-o", ""],
        ["collective", "all_reduce", "1G", "--tuner", ""],
    ],
)
def test_an_empty_output_path_is_refused(run_cli, argv):
    """-o '' is refused, never standard output, a default name or the current folder."""
    assert "an empty output path" in one_error(run_cli, *argv)


def test_a_control_character_in_an_output_name_stays_on_one_line(run_cli, tmp_path):
    """The `wrote` line and the refusal quote a name holding a newline."""
    out = tmp_path / "a\nb.dot"
    status, stdout, err = run_cli("export", "-o", str(out))
    assert status == 0 and stdout == "" and Path(out).is_file()
    assert err == f"wrote {str(out)!r}\n"
    err = one_error(run_cli, "export", "-o", str(out))
    assert f"{str(out)!r}: already exists" in err


@pytest.mark.parametrize("group", ["gpus:0", "gpus:1", "gpus:x"])
def test_a_group_of_fewer_than_two_gpus_says_at_least_2(run_cli, group):
    """--group gpus:N needs N >= 2, and says so."""
    err = one_error(run_cli, "snapshot", "collectives", "--group", group)
    assert "at least 2" in err


def test_place_refuses_a_negative_seed_too(run_cli):
    """place --seed -1: Python's random would pick as for --seed 1, a pick not asked for."""
    err = one_error(run_cli, "place", "2", "-t", "h100-ib-cluster", "--seed", "-1")
    assert "--seed must be >= 0 (got -1)" in err
