"""Topology spec YAML: broken real specs and generated hostile ones load or fail in one line."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml
from _property import (
    DATA,
    MINI_HWDB,
    ROOT,
    check_contract,
    hostile_scalars,
    hostile_values,
    mutated,
    run_cli,
    sample_files,
    small_counts,
    to_yaml,
)
from hypothesis import example, given
from hypothesis import strategies as st

#: Real specs to break: the built-in topologies, the test fixtures and the mini database's.
SPECS = [
    *sample_files(ROOT / "hwdb" / "topologies", "*.yaml"),
    *sample_files(DATA / "topologies", "*.yaml"),
    *sample_files(MINI_HWDB / "topologies", "*.yaml"),
]
SPEC_TEXTS = {path: path.read_text(encoding="utf-8") for path in SPECS}

#: Ids the generated specs mostly use, so that some of them get past the reference checks.
GPUS = ("h100-sxm", "a100-sxm4-80gb", "mi300x", "rtx-4090", "gb200", "tpu-v5p")
LINKS = ("nvlink4", "nvlink5", "ib-ndr", "roce", "efa", "pcie5", "xgmi3", "upi", "ici-v5p")
#: Two H100 nodes on InfiniBand: the base of the explicit examples.
_LARGE: dict[str, Any] = {
    "gpu": "h100-sxm",
    "nodes": 2,
    "gpus_per_node": 8,
    "intra": {"fabric": "nvswitch"},
    "net": {"link": "ib-ndr"},
}


def _commands(path: str) -> list[list[str]]:
    return [
        ["path", "--topology", path, "--src", "0", "--dst", "1", "--json"],
        ["hwdb", "validate", path],
        ["--hwdb", str(MINI_HWDB), "path", "-t", path, "--src", "n0.g0", "--dst", "1"],
    ]


def _check_spec_text(text: str, which: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        argv = _commands(str(path))[which]
        check_contract(run_cli(argv), json_out="--json" in argv)


@given(data=st.data(), which=st.integers(0, 2))
def test_broken_real_specs(data: st.DataObject, which: int) -> None:
    """A real spec with lines deleted, swapped, cut, or values replaced loads or fails cleanly."""
    path = data.draw(st.sampled_from(SPECS), label="spec")
    text = data.draw(mutated(SPEC_TEXTS[path]), label="text")
    _check_spec_text(text, which)


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(values, hostile_values())


@st.composite
def intra_specs(draw: st.DrawFn) -> Any:
    fields = st.fixed_dictionaries(
        {"fabric": _maybe(st.sampled_from(("nvswitch", "mesh", "pcie", "none")))},
        optional={
            "link": _maybe(st.sampled_from(LINKS)),
            "links_per_pair": small_counts(),
            "links_per_gpu": small_counts(),
            "p2p": _maybe(st.booleans()),
            "pcie_switches": small_counts(),
            "sockets": small_counts(),
            "host_link": _maybe(st.sampled_from(LINKS)),
            "socket_link": _maybe(st.sampled_from(LINKS)),
            "switch": _maybe(st.sampled_from(("nvswitch3", "quantum-2"))),
        },
    )
    return draw(st.one_of(fields, st.none(), hostile_scalars()))


@st.composite
def net_specs(draw: st.DrawFn) -> Any:
    fields = st.fixed_dictionaries(
        {"link": _maybe(st.sampled_from(LINKS))},
        optional={
            "gbps": _maybe(st.sampled_from((100, 200, 400, 800))),
            "nics_per_node": small_counts(),
            "nic_map": _maybe(st.lists(st.integers(-1, 9), max_size=9)),
            "layout": _maybe(
                st.sampled_from(
                    ("auto", "single", "leaf-spine", "three-tier", "dragonfly", "torus")
                )
            ),
            "leafs": small_counts(),
            "spines": small_counts(),
            "rail_optimized": _maybe(st.booleans()),
            "oversubscription": _maybe(st.sampled_from((1.0, 2.0, 0.5, 64.0))),
            "spine_oversubscription": _maybe(st.sampled_from((1.0, 2.0))),
            "switch_lat_us": _maybe(st.sampled_from((0.1, 0.6))),
            "sharp": _maybe(st.booleans()),
            "groups": small_counts(),
            "routers_per_group": small_counts(),
            "global_links": small_counts(),
            "torus": _maybe(st.lists(small_counts(), max_size=4)),
        },
    )
    return draw(st.one_of(fields, st.none(), hostile_scalars()))


@st.composite
def topology_specs(draw: st.DrawFn) -> Any:
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "gpu": _maybe(st.sampled_from(GPUS)),
                "nodes": small_counts(),
                "gpus_per_node": small_counts(),
                "intra": intra_specs(),
                "net": net_specs(),
                "id": hostile_scalars(),
                "description": hostile_scalars(),
                "nodes_settable": _maybe(st.booleans()),
                "unknown_key": hostile_values(),
            },
        )
    )
    wrap = draw(st.sampled_from(("bare", "hardware", "list")))
    if wrap == "hardware":
        return {"id": "entry", "hardware": spec}
    return [spec] if wrap == "list" else spec


@given(spec=topology_specs(), which=st.integers(0, 1))
def test_generated_specs(spec: Any, which: int) -> None:
    """Specs with wrong types, missing fields, huge, negative and NaN numbers fail in one line."""
    _check_spec_text(to_yaml(spec), which)


def _base(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(SPEC_TEXTS[path])
    return data.get("hardware", data) if isinstance(data, dict) else {}


#: Valid specs (parsed) to change one or two fields of.
BASES = [
    base
    for path in SPECS
    if path.parent.name == "topologies" and path.parents[1].name in ("hwdb", "mini")
    for base in [_base(path)]
    if base
]
#: Fields per section, with values that are right, wrong or far out of range.
FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "": {
        "nodes": small_counts(),
        "gpus_per_node": small_counts(),
        "gpu": _maybe(st.sampled_from(GPUS)),
        "nodes_settable": _maybe(st.booleans()),
    },
    "intra": {
        "fabric": _maybe(st.sampled_from(("nvswitch", "mesh", "pcie", "none"))),
        "link": _maybe(st.sampled_from(LINKS)),
        "links_per_pair": small_counts(),
        "links_per_gpu": small_counts(),
        "pcie_switches": small_counts(),
        "sockets": small_counts(),
        "host_link": _maybe(st.sampled_from(LINKS)),
        "socket_link": _maybe(st.sampled_from(LINKS)),
    },
    "net": {
        "link": _maybe(st.sampled_from(LINKS)),
        "gbps": _maybe(st.sampled_from((100, 400, 1e-300, 1e300))),
        "nics_per_node": small_counts(),
        "nic_map": _maybe(st.lists(st.integers(-1, 9), max_size=9)),
        "layout": _maybe(
            st.sampled_from(("auto", "single", "leaf-spine", "three-tier", "dragonfly", "torus"))
        ),
        "leafs": small_counts(),
        "spines": small_counts(),
        "rail_optimized": _maybe(st.booleans()),
        "oversubscription": _maybe(st.sampled_from((1.0, 2.0, 64.0))),
        "switch_lat_us": _maybe(st.sampled_from((0.0, 1e-300, 1e300))),
        "groups": small_counts(),
        "routers_per_group": small_counts(),
        "global_links": small_counts(),
        "torus": _maybe(st.lists(small_counts(), min_size=1, max_size=3)),
    },
}


@st.composite
def changed_specs(draw: st.DrawFn) -> Any:
    spec = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 2))):
        section = draw(st.sampled_from(sorted(FIELDS)))
        target = spec if not section else spec.get(section)
        if not isinstance(target, dict):
            target = spec[section] = {}
        key = draw(st.sampled_from(sorted(FIELDS[section])))
        if draw(st.integers(0, 9)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(FIELDS[section][key])
    return spec


@example(spec={**_LARGE, "net": {"link": "ib-ndr", "nics_per_node": 10**9}}, which=0)
@example(spec={**_LARGE, "intra": {"fabric": "nvswitch", "links_per_gpu": 10**12}}, which=0)
@example(spec={**_LARGE, "intra": {"fabric": "nvswitch", "pcie_switches": 10**8}}, which=0)
@example(spec={**_LARGE, "intra": {"fabric": "nvswitch", "sockets": 10**8}}, which=0)
@example(spec={**_LARGE, "net": {"link": "ib-ndr", "leafs": 10**8, "spines": 10**8}}, which=0)
@example(spec={**_LARGE, "net": {"link": "ib-ndr", "leafs": 65536, "spines": 65536}}, which=0)
@example(
    spec={
        **_LARGE,
        "net": {"link": "ib-ndr", "layout": "dragonfly", "groups": 4096, "routers_per_group": 256},
    },
    which=0,
)
@example(spec={**_LARGE, "net": {"link": "ib-ndr", "gbps": 10**400}}, which=1)
@example(
    spec={**_LARGE, "nodes": 1, "gpus_per_node": 100_000, "intra": {"fabric": "mesh"}}, which=0
)
@given(spec=changed_specs(), which=st.integers(0, 1))
def test_changed_specs(spec: Any, which: int) -> None:
    """A valid spec with a field or two set to a wrong, huge or odd value: clean and fast."""
    _check_spec_text(to_yaml(spec), which)


@given(
    topology=st.sampled_from(("dgx-h100-pod", "tpu-v5p-torus", "gh200-quad", "dragonfly-cluster")),
    nodes=st.sampled_from(("0", "-1", "1", "3", "7", "1000000000000", "99999999999999999999")),
)
def test_nodes_option(topology: str, nodes: str) -> None:
    """``--nodes`` of any size is a fabric or one error line, fast (no MemoryError)."""
    outcome = run_cli(["path", "-t", topology, "--nodes", nodes, "--src", "0", "--dst", "1"])
    check_contract(outcome)
