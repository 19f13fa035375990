"""docs/hwdb.md documents every record kind with an example that loads, and every field."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.model import (
    FrameworkSpec,
    GpuSpec,
    KernelSpec,
    LinkGeneration,
    ModelShape,
    NicSpec,
    SwitchSpec,
)
from fabricui.model.topology import IntraSpec, NetSpec, TopologySpec

DOC = Path(__file__).parents[2] / "docs" / "hwdb.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
RECORDS = {
    "links": LinkGeneration,
    "gpus": GpuSpec,
    "nics": NicSpec,
    "switches": SwitchSpec,
    "models": ModelShape,
    "frameworks": FrameworkSpec,
    "kernels": KernelSpec,
}


def block(start: str) -> str:
    return next(b for b in BLOCKS if b.startswith(start))


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_every_record_kind_has_an_example_with_every_field(kind):
    """Each record kind has a YAML example naming every field of its dataclass."""
    text = block(f"{kind}:\n")
    for f in dataclasses.fields(RECORDS[kind]):
        assert re.search(rf"^\s*-?\s*{f.name}:", text, re.M), f"{kind}: {f.name} undocumented"


def test_the_record_examples_load(tmp_path):
    """The examples are valid records, checked against the shipped database."""
    for kind in RECORDS:
        (tmp_path / f"{kind}.yaml").write_text(block(f"{kind}:\n"))
    catalog = load_catalog([*shipped_hwdb_dirs(), tmp_path])
    assert catalog.links["nvlink4"].per_gpu_bw_GBps == 450.0


def test_the_topology_examples_document_every_key_and_parse(catalog):
    """The full topology example names every spec, intra and net field, and parses."""
    full = block("id: my-cluster")
    for cls, indent in ((TopologySpec, ""), (IntraSpec, "  "), (NetSpec, "  ")):
        for f in dataclasses.fields(cls):
            if f.name == "origin":
                continue  # set by the loader, not a YAML key
            assert re.search(rf"^{indent}{f.name}:", full, re.M), f"{cls.__name__}.{f.name}"
    spec = parse_topology(parse_yaml(full, "docs/hwdb.md"), catalog)
    assert spec.id == "my-cluster" and spec.net is not None and spec.net.layout == "leaf-spine"
    small = parse_topology(parse_yaml(block("gpu: h100-sxm"), "docs/hwdb.md"), catalog)
    assert small.nodes == 2
