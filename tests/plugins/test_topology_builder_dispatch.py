"""A spec's ``builder:`` key picks a plugin topology builder; a bad name fails in one line."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import pytest

from fabricui import api, hookimpl
from fabricui.engine.types import TopologyBuilder
from fabricui.errors import ConfigError, EngineError, HwdbError, PluginError
from fabricui.fabric import Fabric, build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.model import IntraSpec, TopologySpec
from fabricui.plugins import PluginHost
from fabricui.services import session as session_module
from fabricui.services.session import build_fabric_with_plugins, topology_builder

#: A spec only a plugin builder understands: four GPUs and no intra-node fabric of its own.
STAR_SPEC = """\
id: toy-star
builder: toy-star
gpu: h100-sxm
nodes: 1
gpus_per_node: 4
intra: {link: nvlink4, links_per_gpu: 2}
net: null
"""


def build_star(spec: TopologySpec, catalog: Any) -> Fabric:
    """Every GPU on one switch over ``intra.links_per_gpu`` links (the built-in NVSwitch
    block), keeping the caller's spec."""
    intra = IntraSpec(
        fabric="nvswitch", link=spec.intra.link, links_per_gpu=spec.intra.links_per_gpu
    )
    fabric = build_fabric(dataclasses.replace(spec, intra=intra, builder=None), catalog)
    return dataclasses.replace(fabric, spec=spec)


def builder_plugin(*builders: TopologyBuilder) -> object:
    """A throwaway class plugin registering ``builders``."""

    def register_topology_builders(register: Callable[[TopologyBuilder], None]) -> None:
        for builder in builders:
            register(builder)

    attrs = {
        "__name__": "toy-builders",
        "register_topology_builders": staticmethod(hookimpl(register_topology_builders)),
    }
    return type("ToyBuilders", (), attrs)()


def make_host(*builders: TopologyBuilder) -> PluginHost:
    """A fresh host (no built-ins, no external plugins) with the given builders."""
    host = PluginHost(load_external=False, builtins=False)
    if builders:
        host.register(builder_plugin(*builders), name="toy-builders")
    return host


@pytest.fixture
def star_file(tmp_path: Path) -> Path:
    path = tmp_path / "toy-star.yaml"
    path.write_text(STAR_SPEC)
    return path


def test_builder_key_is_read_and_intra_left_to_the_builder(catalog, star_file):
    """``builder:`` is kept on the spec; four GPUs without an intra fabric are not refused."""
    spec = resolve_topology(str(star_file), catalog)
    assert spec.builder == "toy-star"
    assert spec.intra.fabric == "none" and spec.gpus_per_node == 4


def test_builtin_spec_has_no_builder(catalog):
    """Specs without the key use the built-in builder."""
    spec = catalog.topologies["dgx-h100"]
    assert spec.builder is None
    assert topology_builder(spec, make_host()) is None
    fabric = build_fabric_with_plugins(spec, catalog, make_host())
    assert fabric.n_gpus == 8


def test_builder_spec_still_checks_link_ids(catalog, tmp_path):
    """A plugin builder's spec still refers to real link generations."""
    path = tmp_path / "bad-link.yaml"
    path.write_text(STAR_SPEC.replace("link: nvlink4", "link: nvlink44"))
    with pytest.raises(HwdbError, match=r"bad-link\.yaml:6: intra\.link: unknown link 'nvlink44'"):
        resolve_topology(str(path), catalog)


def test_empty_builder_name_is_refused(catalog, tmp_path):
    """``builder: ""`` names its file and key."""
    path = tmp_path / "empty.yaml"
    path.write_text(STAR_SPEC.replace("builder: toy-star", 'builder: ""'))
    with pytest.raises(HwdbError, match=r"empty\.yaml:2: builder: must name a topology builder"):
        resolve_topology(str(path), catalog)


def test_registered_builder_builds_the_fabric(catalog, star_file):
    """The named plugin builder receives (spec, catalog) and its fabric is used."""
    calls: list[tuple[TopologySpec, Any]] = []

    def build(spec: TopologySpec, cat: Any) -> Fabric:
        calls.append((spec, cat))
        return build_star(spec, cat)

    host = make_host(TopologyBuilder("toy-star", build))
    spec = resolve_topology(str(star_file), catalog)
    fabric = build_fabric_with_plugins(spec, catalog, host)
    assert calls == [(spec, catalog)]
    assert fabric.spec is spec and fabric.n_gpus == 4
    report = api.path(fabric, "n0.g0", "n0.g3")
    assert [hop.link for hop in report.hops] == ["nvlink4", "nvlink4"]
    assert report.bottleneck_GBps == pytest.approx(2 * 25.0)


def test_unknown_builder_names_file_key_and_nearest(catalog, star_file):
    """A misspelt builder: one line with the spec file, the key and the nearest names."""
    host = make_host(TopologyBuilder("toy-star", build_star), TopologyBuilder("ring", build_star))
    spec = dataclasses.replace(resolve_topology(str(star_file), catalog), builder="toy-strar")
    with pytest.raises(ConfigError) as exc:
        build_fabric_with_plugins(spec, catalog, host)
    text = str(exc.value)
    assert "\n" not in text
    assert text.startswith(f"{star_file}: builder: unknown topology builder 'toy-strar'")
    assert "nearest: toy-star" in text


def test_unknown_builder_without_any_registered(catalog, star_file):
    """With no plugin builders loaded the message says so."""
    spec = resolve_topology(str(star_file), catalog)
    with pytest.raises(ConfigError, match="no loaded plugin registers topology builders"):
        topology_builder(spec, make_host())


def test_builder_refusal_passes_through(catalog, star_file):
    """A builder's own FabricError (e.g. a size limit) reaches the user unchanged."""

    def refuse(spec: TopologySpec, cat: Any) -> Fabric:
        raise EngineError("toy-star: at most 2 GPUs")

    host = make_host(TopologyBuilder("toy-star", refuse))
    with pytest.raises(EngineError, match="toy-star: at most 2 GPUs"):
        build_fabric_with_plugins(resolve_topology(str(star_file), catalog), catalog, host)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda spec, cat: 1 / 0, r"'toy-star' \(plugin toy-builders\) failed on toy-star: Zero"),
        (lambda spec, cat: "fabric", r"'toy-star' \(plugin toy-builders\) returned str, not a"),
    ],
)
def test_broken_builder_is_a_plugin_error(catalog, star_file, build, message):
    """A builder that crashes or returns the wrong type is named in one line."""
    host = make_host(TopologyBuilder("toy-star", build))
    with pytest.raises(PluginError, match=message) as exc:
        build_fabric_with_plugins(resolve_topology(str(star_file), catalog), catalog, host)
    assert "\n" not in str(exc.value)


@pytest.fixture
def cli_host(monkeypatch) -> PluginHost:
    """The CLI's plugin host: built-ins plus the toy builder, no external plugins."""
    host = PluginHost(load_external=False)
    host.register(builder_plugin(TopologyBuilder("toy-star", build_star)), name="toy-builders")
    monkeypatch.setattr(session_module, "get_host", lambda: host)
    return host


def test_cli_path_uses_the_builder(cli_host, star_file, run_cli):
    """``fabricui path`` on a builder spec routes over the plugin-built fabric."""
    status, out, err = run_cli("path", "--topology", str(star_file), "--src", "0", "--dst", "3")
    assert status == 0, err
    assert "n0.g0 -> n0.g3" in out and "nvlink4 x2" in out


def test_cli_unknown_builder_exits_2_in_one_line(cli_host, tmp_path, run_cli):
    """An unknown builder is exit status 2 and one stderr line, no traceback."""
    path = tmp_path / "typo.yaml"
    path.write_text(STAR_SPEC.replace("builder: toy-star", "builder: toy-starr"))
    status, out, err = run_cli("path", "--topology", str(path), "--src", "0", "--dst", "1")
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "typo.yaml: builder: unknown topology builder 'toy-starr' (nearest: toy-star)" in err


def test_cli_hwdb_validate_checks_the_builder_name(cli_host, tmp_path, star_file, run_cli):
    """``hwdb validate FILE`` accepts a registered builder and refuses an unknown one."""
    assert run_cli("hwdb", "validate", str(star_file))[0] == 0
    path = tmp_path / "typo.yaml"
    path.write_text(STAR_SPEC.replace("builder: toy-star", "builder: nope"))
    status, _, err = run_cli("hwdb", "validate", str(path))
    assert status == 2 and "builder: unknown topology builder 'nope'" in err
