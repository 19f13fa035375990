"""A --nodes count within the memory limit that the topology's builder cannot build (more
pods than its core switches join, more chips than a torus slice holds, more GPUs than any
fabric) is refused in one line that keeps the builder's reason and names the largest count
it builds; a refusal a smaller count would not cure names none."""

from __future__ import annotations

import re

import pytest
from _hostile import one_error

from fabricui.errors import EngineError
from fabricui.fabric import most_nodes
from fabricui.fabric.builder import check_tiled
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_catalog, load_fabric, structural_advice


def advised(err: str) -> int:
    """The N of ``use --nodes N`` in a refusal."""
    found = re.search(r"use --nodes (\d+)", err)
    assert found, err
    return int(found.group(1))


@pytest.mark.parametrize(
    "argv",
    [
        ("path", "n0.g0", "n1.g0", "--nodes", "8193"),
        ("export", "--nodes", "8193", "-o", "pod.dot"),
    ],
    ids=["path", "export"],
)
def test_one_pod_too_many_names_the_largest_count(run_cli, tmp_path, monkeypatch, argv):
    """dgx-h100-pod at 8193 nodes: the fat-tree's reason, then ``use --nodes 8192 or fewer``."""
    monkeypatch.chdir(tmp_path)
    err = one_error(run_cli, *argv)
    assert err.startswith(
        "fabricui: error: 8193 nodes need 65 pods, more than a 64-port core switch can join"
    )
    assert err.endswith("or fewer nodes); use --nodes 8192 or fewer")
    assert not (tmp_path / "pod.dot").exists()


@pytest.mark.parametrize(
    ("topology", "nodes", "reason", "advice"),
    [
        ("h100-ib-cluster", "30000", "30000 nodes need 235 pods", "use --nodes 8192 or fewer"),
        (
            "trn2-ultraserver",
            "30000",
            "30000 nodes need 118 pods",
            "use --nodes 16384 or fewer (a multiple of 4)",
        ),
        (
            "gb200-nvl72-cluster",
            "30000",
            "gb200-nvl72-cluster: 30000 nodes do not fill whole scale-up domains of 18",
            "use --nodes 16380 or fewer (a multiple of 18)",
        ),
        (
            "tpu-v5p-torus",
            "8193",
            "tpu-v5p-torus: 32,772 chips exceed the largest Google Cloud TPU v5p slice",
            "use --nodes 1536, the largest torus tpu-v5p-torus builds from 8193 nodes or fewer",
        ),
        (
            "tpu-v6e-256",
            "33",
            "tpu-v6e-256: 264 chips exceed the largest Google Cloud TPU v6e",
            "use --nodes 32, the largest torus tpu-v6e-256 builds from 33 nodes or fewer",
        ),
    ],
)
def test_every_kind_names_a_count_its_builder_accepts(run_cli, topology, nodes, reason, advice):
    """Fat-trees (with and without scale-up domains), whole domains past the fat-tree, tori:
    the builder's line first, then a count the builder's own checks pass."""
    err = one_error(run_cli, "path", "0", "1", "-t", topology, "--nodes", nodes)
    assert err.startswith(f"fabricui: error: {reason}")
    assert err.endswith(f"; {advice}")
    catalog = load_catalog()
    check_tiled(catalog.topologies[topology].with_nodes(advised(err)), catalog)


def test_more_gpus_than_any_fabric_names_the_count(run_cli):
    """Past the builder's GPU ceiling (with memory to spare): the ceiling, then the count."""
    err = one_error(
        run_cli, "path", "0", "1", "-t", "dgx-h100", "--nodes", "300000", "--max-memory", "64G"
    )
    assert err == (
        "fabricui: error: dgx-h100: 2400000 GPUs exceeds 2000000; use --nodes 8192 or fewer"
    )


@pytest.mark.parametrize(
    ("topology", "nodes", "reason"),
    [
        ("gb200-nvl72", "20", "20 nodes do not fill whole scale-up domains of 18 hosts"),
        ("trn2-ultraserver", "8193", "8193 nodes do not fill whole scale-up domains of 4"),
        ("dragonfly-cluster", "100000", "(up to --nodes 32832); use fewer nodes"),
    ],
    ids=["whole-domains-below", "whole-domains-below-large", "count-already-named"],
)
def test_a_refusal_that_names_its_fix_is_left_as_it_is(run_cli, topology, nodes, reason):
    """Whole domains below the count build (the refusal says to use them), or the
    refusal names the count itself: nothing is added."""
    err = one_error(run_cli, "path", "0", "1", "-t", topology, "--nodes", nodes)
    assert reason in err
    assert err.endswith(")") or err.endswith("net.routers_per_group"), err
    assert "or fewer (a multiple" not in err and "; use --nodes" not in err


def test_the_advice_is_none_when_no_smaller_count_builds():
    """A spec no count of builds, or one no larger than the largest that builds: None."""
    catalog = load_catalog()
    spec = catalog.topologies["dgx-h100-pod"]
    assert structural_advice(spec.with_nodes(8192), catalog, "x") is None
    assert structural_advice(spec.with_nodes(8193), catalog, "x") == "use --nodes 8192 or fewer"
    assert structural_advice(spec.with_nodes(8193), catalog, "up to --nodes 8192") is None
    assert most_nodes(spec.with_nodes(8193), catalog, 8193) == 8192


def test_the_library_raises_the_same_line():
    """load_fabric (what every command and the explorer build with) raises it."""
    with pytest.raises(EngineError, match=r"or fewer nodes\); use --nodes 8192 or fewer$"):
        load_fabric(TopologyRequest("dgx-h100-pod", nodes=8193))
