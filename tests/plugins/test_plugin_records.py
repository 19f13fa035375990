"""Interconnect plugins own their hwdb records: they list them, disabling one withholds them,
and a topology that needs them names the plugin to enable. The link-family list comes from
the loaded plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from fabricui import hookimpl
from fabricui.commands import plugins as plugins_command
from fabricui.engine.types import Interconnect
from fabricui.errors import ConfigError, HwdbError
from fabricui.hwdb.plugin_dirs import NeedsPluginError
from fabricui.hwdb.resolve import resolve_topology
from fabricui.plugins import PluginHost
from fabricui.plugins import host as plugins_module
from fabricui.services.session import load_catalog_with_plugins

ENV_VARS = (
    plugins_module.ENV_PLUGINS_DIR,
    plugins_module.ENV_LOAD,
    plugins_module.ENV_DISABLE,
    plugins_module.ENV_STRICT,
)


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, installed: None) -> None:
    """No plugin env vars, a config dir of the test's own, and fabricui installed."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def builtins_host(disable: str | None = None, monkeypatch: Any = None) -> PluginHost:
    if disable is not None:
        monkeypatch.setenv(plugins_module.ENV_DISABLE, disable)
    return PluginHost(load_external=False, builtins=True)


def test_plugins_all_json_lists_generations_nics_switches_and_algorithms(capsys):
    """`plugins --all --json`: ethernet brings roce, tcp, tcpxo; nvlink nvlink1-6 and NVLS."""
    host = builtins_host()
    assert plugins_command.run(Namespace(all=True, json=True), host=host) == 0
    rows = {r["name"]: r["contributes"] for r in json.loads(capsys.readouterr().out)["plugins"]}
    assert {"roce", "tcp", "tcpxo"} <= set(rows["ethernet"]["link_generations"])
    assert {f"nvlink{n}" for n in range(1, 7)} <= set(rows["nvlink"]["link_generations"])
    assert "nvls" in rows["nvlink"]["collective_algorithms"]
    assert {"cx7-ndr", "cx8-xdr"} <= set(rows["infiniband"]["nics"])
    assert "quantum-x800" in rows["infiniband"]["switches"]
    assert {"efa-v1", "efa-v2", "efa-v3", "efa-v4"} <= set(rows["efa"]["nics"])
    assert all("link_generations" not in c for n, c in rows.items() if n in {"ddp", "tp"})


def test_plugins_table_names_what_each_plugin_brings(capsys):
    """The table labels generations, NICs and switches, and shows the hwdb directory short."""
    plugins_command.run(Namespace(all=True, json=False), host=builtins_host())
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("infiniband"))
    assert "generations: ib-hdr, ib-ndr, ib-xdr" in line
    assert "NICs: " in line and "switches: " in line and "algorithms: sharp" in line
    assert line.endswith("hwdb: fabricui_infiniband/hwdb")


def test_disabling_a_plugin_withholds_its_records(monkeypatch):
    """FABRICUI_DISABLE_PLUGINS=nvlink: no NVLink generation or NVSwitch in the catalog, the
    topologies that need them are unavailable with the plugin named, the others still work."""
    host = builtins_host("nvlink", monkeypatch)
    catalog = load_catalog_with_plugins(host=host)
    assert not [i for i in catalog.links if i.startswith("nvlink")]
    assert not [i for i, s in catalog.switches.items() if s.family == "nvswitch"]
    assert "nvlink" not in host.link_families() and "xgmi" in host.link_families()
    with pytest.raises(ConfigError) as exc:
        resolve_topology("dgx-h100", catalog)
    message = exc.value.message
    assert "nvlink4" in message and "plugin nvlink" in message and "FABRICUI_DISABLE" in message
    assert "\n" not in message
    assert resolve_topology("mi300x-node", catalog).gpu == "mi300x"
    with pytest.raises(NeedsPluginError, match="link nvlink5 comes from plugin nvlink"):
        catalog.find("nvlink5")


def test_a_record_that_needs_a_disabled_plugin_is_withheld_too(monkeypatch):
    """Without the pcie plugin every GPU loses its host link: the GPU records are withheld
    and a user's topology file is refused naming the link and the plugin (one line)."""
    catalog = load_catalog_with_plugins(host=builtins_host("pcie", monkeypatch))
    assert "h100-sxm" not in catalog.gpus
    with pytest.raises(NeedsPluginError) as exc:
        catalog.get("gpus", "h100-sxm")
    assert "needs link pcie5, which comes from plugin pcie" in exc.value.message


def test_user_file_needing_a_disabled_plugin_names_it(monkeypatch, tmp_path):
    """A topology file whose implied scale-up link belongs to a disabled plugin: one line
    with the file, line and key, the link and the plugin to enable."""
    catalog = load_catalog_with_plugins(host=builtins_host("nvlink", monkeypatch))
    spec = tmp_path / "h100.yaml"
    spec.write_text("gpu: h100-sxm\nnodes: 1\ngpus_per_node: 8\nintra: {fabric: nvswitch}\n")
    with pytest.raises(HwdbError) as exc:
        resolve_topology(str(spec), catalog)
    assert exc.value.message.startswith(f"{spec}:4: intra.fabric: h100-sxm's scale-up link")
    assert "plugin nvlink (disabled by FABRICUI_DISABLE_PLUGINS)" in exc.value.message


def test_cli_exits_2_with_one_line_naming_the_plugin(tmp_path):
    """The command line: exit status 2 and one stderr line, no traceback."""
    env = {**os.environ, "FABRICUI_DISABLE_PLUGINS": "nvlink", "HOME": str(tmp_path)}
    env.pop("FABRICUI_PLUGINS_DIR", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "fabricui",
            "path",
            "-t",
            "dgx-h100-pod",
            "--src",
            "0",
            "--dst",
            "9",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "enable that plugin" in lines[0] and "plugin nvlink" in lines[0]


def test_a_host_without_builtins_names_them_as_not_loaded():
    """A host that loads no built-ins (tests, embedding apps) still loads the core database:
    the core topologies are unavailable and say which plugin would bring their links."""
    host = PluginHost(load_external=False, builtins=False)
    catalog = load_catalog_with_plugins(host=host)
    assert "dgx-h100" in catalog.unavailable and not catalog.topologies
    assert "(not loaded)" in catalog.unavailable["dgx-h100"]
    assert "h100-sxm" not in catalog.gpus  # its PCIe host link is the pcie plugin's


class FooFamily:
    """A plugin declaring link family ``foolink`` and shipping a YAML link of that family."""

    __name__ = "foo"

    def __init__(self, hwdb: Path) -> None:
        self.hwdb = hwdb

    @hookimpl
    def register_interconnects(self, register: Any) -> None:
        register(Interconnect("foolink", ("foolink",), "FooLink scale-up"))

    @hookimpl
    def register_hwdb_paths(self, register: Any) -> None:
        register(self.hwdb)


FOO_LINK = """links:
- id: foolink-2
  name: FooLink 2.0
  family: foolink
  tier: scale-up
  bw_GBps: 200.0
  links_per_gpu: 8
  lat_us: 0.3
  efficiency: 0.8
  protocols: [ll, simple]
  source: https://example.com/foolink.pdf
"""


def test_family_list_comes_from_the_plugins(tmp_path):
    """A family is declared by a plugin's interconnect, or by the YAML of a plugin's or
    user's own directory (a vendor's link needs no code); a name that cannot be a family
    is refused; the records a plugin's directory brings are listed as its contributions."""
    hwdb = tmp_path / "foo"
    hwdb.mkdir()
    (hwdb / "links.yaml").write_text(FOO_LINK)
    host = builtins_host()
    assert load_catalog_with_plugins([hwdb], host=host).links["foolink-2"].family == "foolink"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "links.yaml").write_text(FOO_LINK.replace("family: foolink", "family: Foo Link!"))
    with pytest.raises(HwdbError, match="'Foo Link!' is not declared by any loaded plugin"):
        load_catalog_with_plugins([bad], host=host)
    host.register(FooFamily(hwdb), name="foo")
    catalog = load_catalog_with_plugins(host=host)
    assert catalog.links["foolink-2"].protocols == ("ll", "simple")
    row = next(r for r in host.describe() if r["name"] == "foo")
    assert row["status"] == "ok"
    assert row["contributes"]["link_generations"] == ["foolink-2"]
    assert row["contributes"]["interconnects"] == ["foolink"]


def test_a_mesh_of_any_registered_scale_up_generation(tmp_path):
    """`intra: {fabric: mesh, link: foolink-2}` builds for a plugin's own generation."""
    from fabricui import api
    from fabricui.fabric import build_fabric

    hwdb = tmp_path / "foo"
    hwdb.mkdir()
    (hwdb / "links.yaml").write_text(FOO_LINK)
    host = builtins_host()
    host.register(FooFamily(hwdb), name="foo")
    catalog = load_catalog_with_plugins(host=host)
    spec = tmp_path / "foo.yaml"
    spec.write_text(
        "gpu: b200\nnodes: 1\ngpus_per_node: 4\n"
        "intra: {fabric: mesh, link: foolink-2, links_per_pair: 2}\n"
    )
    fabric = build_fabric(resolve_topology(str(spec), catalog), catalog)
    report = api.path(fabric, "n0.g0", "n0.g3")
    assert [(h.link, h.bw_GBps) for h in report.hops] == [("foolink-2", 400.0)]


def test_a_broken_plugin_directory_is_dropped_and_named(tmp_path):
    """A plugin whose YAML is broken loses its records (named, one line); the built-ins'
    records and topologies stay."""
    hwdb = tmp_path / "foo"
    hwdb.mkdir()
    (hwdb / "links.yaml").write_text(FOO_LINK.replace("bw_GBps: 200.0", "bw_GBps: -1"))
    host = builtins_host()
    host.register(FooFamily(hwdb), name="foo")
    catalog = load_catalog_with_plugins(host=host)
    assert "foolink-2" not in catalog.links and "dgx-h100" in catalog.topologies
    failure = next(f for f in host.failures if f.name == "foo")
    assert "links.yaml" in failure.error and "bw_GBps" in failure.error
