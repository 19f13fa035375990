"""Every user error is one clear line naming what is wrong and where, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.errors import ConfigError, EngineError, HwdbError
from fabricui.fabric import build_fabric
from fabricui.fabric.ids import parse_gpu_id
from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
from fabricui.hwdb.resolve import resolve_topology

DATA = Path(__file__).parents[1] / "data"
TOPO = DATA / "topologies"


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_yaml_syntax_error_names_file_and_line(mini):
    """A broken flow mapping is reported at its file and line."""
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(TOPO / "syntax-error.yaml"), mini)
    text = one_line(exc)
    assert "syntax-error.yaml:5" in text and "YAML syntax error" in text


def test_schema_type_error_names_key_path_and_value(mini):
    """``nodes: two`` names the line, the key and the value."""
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(TOPO / "bad-type.yaml"), mini)
    text = one_line(exc)
    assert "bad-type.yaml:2" in text and "nodes" in text and "'two'" in text


def test_a_quoted_number_says_to_drop_the_quotes(catalog, tmp_path):
    """``gpus_per_node: "8"`` is text where a number goes: the line says to write it
    without quotes (a measurements entry's hardware block says the same)."""
    spec = tmp_path / "box.yaml"
    spec.write_text('gpu: h100-sxm\nnodes: 1\ngpus_per_node: "8"\nintra: {fabric: nvswitch}\n')
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(spec), catalog)
    assert one_line(exc) == (
        f"{spec}:3: gpus_per_node: expected a number (int) (got '8'): write it without quotes"
    )


def test_unknown_key_lists_known_keys(mini):
    """A misspelt key is named with its path, the nearest keys first, then every key."""
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(TOPO / "unknown-key.yaml"), mini)
    text = one_line(exc)
    assert "unknown-key.yaml:9" in text and "net.oversubscripton" in text
    assert "unknown key (nearest: oversubscription, spine_oversubscription; known: link," in text


def test_unknown_gpu_names_nearest(mini):
    """An unknown GPU id suggests the nearest valid ids."""
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(TOPO / "unknown-gpu.yaml"), mini)
    text = one_line(exc)
    assert "unknown-gpu.yaml:1" in text and "'h100'" in text and "h100-sxm" in text


def test_wrong_link_family(mini):
    """NVSwitch over a PCIe link is refused with the families that would work."""
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(TOPO / "wrong-link-family.yaml"), mini)
    assert "intra.link" in one_line(exc) and "nvlink" in one_line(exc)


def test_multi_node_needs_a_network(mini):
    """Two nodes with ``net: null`` cannot be built."""
    with pytest.raises(HwdbError, match="net: required when nodes > 1"):
        resolve_topology(str(TOPO / "no-net.yaml"), mini)


def test_missing_file(mini):
    """A path that does not exist is named."""
    with pytest.raises(HwdbError, match="nope.yaml: no such file"):
        resolve_topology("nope.yaml", mini)


def test_unknown_topology_name_suggests(mini):
    """A misspelt built-in name suggests the closest ones."""
    with pytest.raises(ConfigError) as exc:
        resolve_topology("pods", mini)
    assert "unknown topology 'pods'" in one_line(exc) and "pod" in one_line(exc)


def test_hardware_block_and_minimal_forms_load(mini):
    """The measurement ``hardware`` block, bare or wrapped, is a valid topology."""
    for name in ("hardware-block.yaml", "minimal.yaml"):
        spec = resolve_topology(str(TOPO / name), mini)
        assert (spec.nodes, spec.gpus_per_node, spec.gpu) == (2, 8, "h100-sxm")


def test_nodes_override(mini):
    """--nodes rescales a topology; it must be positive and needs a network."""
    assert resolve_topology("pod", mini, nodes=12).nodes == 12
    with pytest.raises(ConfigError, match="at least 1"):
        resolve_topology("pod", mini, nodes=0)
    with pytest.raises(ConfigError, match="no network"):
        resolve_topology("pcie-noP2P", mini, nodes=2)


@pytest.mark.parametrize(
    ("gpu_id", "expected"),
    [
        ("n9.g0", "no GPU n9.g0 in pod: pod has 4 nodes (nearest: n3.g0)"),
        ("n0.g8", "8 GPUs per node (nearest: n0.g7)"),
        ("40", "no GPU rank 40 in pod (32 GPUs; nearest: 31, n3.g7)"),
        ("gpu3", "invalid GPU id 'gpu3'"),
    ],
)
def test_gpu_id_errors_give_range_and_nearest(mini, gpu_id, expected):
    """Out-of-range GPU ids say the valid range and the nearest id."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    with pytest.raises(EngineError) as exc:
        parse_gpu_id(fabric, gpu_id)
    text = one_line(exc)
    assert expected in text
    assert "n0.g0 .. n3.g7" in text


def test_gpu_ids_parse(mini):
    """``n<node>.g<gpu>`` and bare ranks both work."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    assert parse_gpu_id(fabric, "n3.g7") == 31
    assert parse_gpu_id(fabric, "12") == 12


@pytest.mark.parametrize("spelling", ["n3g7", "n3:g7", "n3/g7", "n3-g7", "N3.G7", "node3.gpu7"])
def test_gpu_ids_take_the_spellings_people_type(mini, spelling):
    """``n3g7``, ``n3:g7`` or ``node3.gpu7`` name the GPU ``n3.g7`` names, and their
    mistakes are the same one-line errors."""
    fabric = build_fabric(mini.topologies["pod"], mini)
    assert parse_gpu_id(fabric, spelling) == 31
    with pytest.raises(EngineError) as exc:
        parse_gpu_id(fabric, "n9g0")
    assert "no GPU n9g0 in pod: pod has 4 nodes (nearest: n3.g0)" in one_line(exc)


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("dup-id", "links.yaml:3: links[1].id: duplicate id 'x1' (first defined at"),
        ("bad-record", "links.yaml:6: links[0].bw_GBps: must not be negative (got -3)"),
        ("missing-source", "gpus.yaml:2: gpus[0]: missing required key 'source'"),
    ],
)
def test_hwdb_record_errors(folder, expected):
    """Database errors name file, line, key path and value."""
    with pytest.raises(HwdbError) as exc:
        load_catalog([DATA / "hwdb" / folder])
    assert expected in one_line(exc)


@pytest.mark.parametrize(
    ("nic", "expected"),
    [
        ("efa-v9", "spec.yaml:5: net.nic: unknown NIC 'efa-v9'"),
        ("cx7-ndr", "spec.yaml:5: net.nic: cx7-ndr speaks ib-ndr, not efa"),
    ],
)
def test_net_nic_must_exist_and_speak_the_link(catalog, tmp_path, nic, expected):
    """``net.nic`` names a NIC record of the same link; else one line with file and line."""
    path = tmp_path / "spec.yaml"
    path.write_text(
        "gpu: a100-sxm4-80gb\nnodes: 2\ngpus_per_node: 8\n"
        "intra: {fabric: nvswitch, link: nvlink3}\n"
        f"net: {{link: efa, gbps: 100, nics_per_node: 4, nic: {nic}}}\n"
    )
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(path), catalog)
    assert expected in one_line(exc)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  protocols: [lll]", "nics.bad.protocols: unknown protocol 'lll'"),
        ("  gpus: [a100]", "nics.bad.gpus: unknown GPU 'a100'"),
    ],
)
def test_nic_record_protocols_and_gpus_are_checked(tmp_path, line, expected):
    (tmp_path / "nics.yaml").write_text(
        "nics:\n- id: bad\n  name: Bad NIC\n  link: efa\n  ports: 1\n  rate_Gbps: 100\n"
        f"  pcie: pcie4\n  lat_us: 1.0\n  source: https://example.com\n{line}\n"
    )
    with pytest.raises(HwdbError) as exc:
        load_catalog([*shipped_hwdb_dirs(), tmp_path])
    assert expected in one_line(exc)


def test_model_spellings_name_one_model_or_none():
    """A model's name as people write it is its id when exactly one id is spelled so."""
    from fabricui.hwdb.tables import spelled_id

    ids = ["llama3-70b", "llama3-8b", "qwen3-235b-a22b", "x-1", "x1"]
    assert spelled_id("Llama-3-70B", ids) == "llama3-70b"
    assert spelled_id("meta-llama/LLAMA3_8B", ids) == "llama3-8b"
    assert spelled_id("Qwen3-235B-A22B", ids) == "qwen3-235b-a22b"
    assert spelled_id("X.1", ids) is None  # two ids spelled so: neither is guessed
    assert spelled_id("llama3-405b", ids) is None
    assert spelled_id("--", ids) is None
