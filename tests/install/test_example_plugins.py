"""plugins/examples/fabricui-ualink and fabricui-ultraethernet, pip-installed into a fresh virtual
environment: listed by ``fabricui plugins``, their reference topologies routed and priced on
their own link generations, bad specs refused in one line, and their own tests passing."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import InstalledVenv  # tests/install/conftest.py (fixture installed_venv)

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "plugins" / "examples"
UALINK = EXAMPLES / "fabricui-ualink"
ULTRAETHERNET = EXAMPLES / "fabricui-ultraethernet"
DISTS = ("fabricui-ualink", "fabricui-ultraethernet")

#: UALink x4 port bundle of the reference pod: 4 ports x 100 GB/s x efficiency 0.93.
UALINK_POD_GBPS = 4 * 100.0 * 0.93
#: Two UEC nodes on a ring: the slower of 8 NICs x 100 GB/s x efficiency 0.92 (736) and a
#: B300's NVLink 5 port, 900 GB/s x 0.76 (684), which carries the whole ring volume because
#: the ring leaves each node through its entry GPU's NIC (PXN).
UEC_NODE_GBPS = min(8 * 100.0 * 0.92, 900.0 * 0.76)


@pytest.fixture(scope="module")
def venv(installed_venv: InstalledVenv) -> Iterator[InstalledVenv]:
    """The shared venv with both examples (and pytest) installed; removed afterwards."""
    installed_venv.pip_install(f"{UALINK}[test]", f"{ULTRAETHERNET}[test]")
    try:
        yield installed_venv
    finally:
        installed_venv.pip("uninstall", "-y", "--quiet", *DISTS)


def run_json(venv: InstalledVenv, *args: str) -> Any:
    return json.loads(venv.run("fabricui", *args, "--json").stdout)


def busbw_of(result: dict[str, Any], size: int) -> float:
    (row,) = [r for r in result["rows"] if r["size_bytes"] == size]
    return float(row["busbw_GBps"])


def test_plugins_lists_both_examples(venv: InstalledVenv) -> None:
    """Each example: status ok, its version and distribution, and what it contributes."""
    listed = json.loads(venv.run("fabricui", "plugins", "--json").stdout)
    rows = {r["name"]: r for r in (listed["plugins"] if isinstance(listed, dict) else listed)}
    ualink, uec = rows["ualink"], rows["ultraethernet"]
    for row, dist in ((ualink, DISTS[0]), (uec, DISTS[1])):
        assert row["status"] == "ok", row["error"]
        assert (row["source"], row["dist"], row["version"]) == ("entry point", dist, "0.1.0")
        (hwdb,) = row["contributes"]["hwdb_paths"]
        assert venv.root.resolve() in Path(hwdb).resolve().parents, hwdb
    assert ualink["contributes"]["link_generations"] == [
        "ualink200-x1",
        "ualink200-x2",
        "ualink200-x4",
    ]
    assert ualink["contributes"]["interconnects"] == ["ualink"]
    assert ualink["contributes"]["topology_builders"] == ["ualink-pod"]
    assert uec["contributes"]["link_generations"] == ["uec-800g"]
    assert uec["contributes"]["interconnects"] == ["ultraethernet"]


def test_ualink_pod_path_and_all_reduce(venv: InstalledVenv) -> None:
    """ualink-pod is built by the plugin's builder: one switch hop over 4 bundled x4 ports,
    and a large all-reduce runs at the bundle's achievable rate."""
    report = run_json(venv, "path", "-t", "ualink-pod", "--src", "n0.g0", "--dst", "n0.g127")
    assert [(h["link"], h["count"], h["bw_GBps"]) for h in report["hops"]] == [
        ("ualink200-x4", 4, 400.0),
        ("ualink200-x4", 4, 400.0),
    ]
    assert report["bottleneck_generation"] == "ualink200-x4"
    assert report["latency_us"] == pytest.approx(0.49)
    args = ("collective", "all_reduce", "-t", "ualink-pod", "--size", "1G", "8G")
    result = run_json(venv, *args)
    assert result["topology"] == "ualink-pod" and result["nranks"] == 128
    assert 0.95 * UALINK_POD_GBPS < busbw_of(result, 8 * 2**30) <= UALINK_POD_GBPS


def test_uec_cluster_path_and_all_reduce(venv: InstalledVenv) -> None:
    """uec-800g-cluster crosses the network on the plugin's 800G link; a two-node ring
    all-reduce is bound by the slower of the nodes' eight UEC NICs and a GPU's NVLink."""
    report = run_json(venv, "path", "-t", "uec-800g-cluster", "--src", "n0.g0", "--dst", "n31.g3")
    assert report["topology"] == "uec-800g-cluster"
    assert report["bottleneck_generation"] == "uec-800g"
    assert report["bottleneck_GBps"] == 100.0
    args = ("collective", "all_reduce", "-t", "uec-800g-cluster", "--nodes", "2", "--algo", "ring")
    result = run_json(venv, *args, "--size", "8G")
    assert result["topology"] == "uec-800g-cluster" and result["nranks"] == 16
    assert 0.95 * UEC_NODE_GBPS < busbw_of(result, 8 * 2**30) <= UEC_NODE_GBPS


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("builder: ualink-pod", "builder: ualink-pdo"),
            "builder: unknown topology builder 'ualink-pdo' (nearest: ualink-pod)",
        ),
        (
            # fabricui's own bound on a node's size answers before the builder's (same limit)
            ("gpus_per_node: 128", "gpus_per_node: 2048"),
            "gpus_per_node: at most 1024 (got 2048)",
        ),
    ],
)
def test_bad_pod_spec_is_one_line(venv: InstalledVenv, change: tuple[str, str], message: str):
    """A misspelt builder or an oversized pod: exit status 2, one stderr line, no traceback."""
    spec = (UALINK / "fabricui_ualink" / "hwdb" / "topologies" / "ualink-pod.yaml").read_text()
    assert change[0] in spec
    path = venv.workdir / "bad-pod.yaml"
    path.write_text(spec.replace(*change))
    proc = venv.run("fabricui", "path", "-t", path.name, "--src", "0", "--dst", "1", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "bad-pod.yaml" in proc.stderr and message in proc.stderr


@pytest.mark.parametrize(("example", "passed"), [(UALINK, 18), (ULTRAETHERNET, 8)])
def test_example_own_tests_pass(venv: InstalledVenv, example: Path, passed: int) -> None:
    """The example's tests (at least ``passed`` of them), copied out of the checkout, pass
    against the installed packages."""
    tests = venv.workdir / f"{example.name}-tests"
    shutil.copytree(example / "tests", tests, dirs_exist_ok=True)
    # The pytest script, not python -m: the working directory stays off sys.path.
    result = venv.run("pytest", "-q", "-p", "no:cacheprovider", tests.name)
    count = re.search(r"(\d+) passed", result.stdout)
    assert count and int(count.group(1)) >= passed, result.stdout
