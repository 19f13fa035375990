"""The plugin host: loading, failure isolation, validation, env switches, listing, every hook."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import inspect
import io
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Callable
from unittest.mock import MagicMock

import numpy as np
import pytest

from fabricui import hookimpl, hookspecs
from fabricui.commands import plugins as plugins_command
from fabricui.engine.types import (
    CollectiveAlgorithm,
    CommOp,
    Interconnect,
    Strategy,
    TopologyBuilder,
)
from fabricui.model.records import CORE_FAMILIES, LinkGeneration
from fabricui.plugins import PluginFailure, PluginHost, get_host
from fabricui.plugins import host as plugins_module

BUILTINS = {
    "pcie": ("pcie", "cpu"),
    "nvlink": ("nvlink", "nvlink-c2c"),
    "xgmi": ("xgmi",),
    "infiniband": ("infiniband",),
    "ethernet": ("roce", "ethernet", "tcpxo"),
    "efa": ("efa",),
    "slingshot": ("slingshot",),
    "ici": ("ici",),
    "neuronlink": ("neuronlink",),
}
ENV_VARS = (
    plugins_module.ENV_PLUGINS_DIR,
    plugins_module.ENV_LOAD,
    plugins_module.ENV_DISABLE,
    plugins_module.ENV_STRICT,
    plugins_module.ENV_TRACE,
)
ROW_KEYS = {"name", "version", "source", "dist", "status", "hooks", "contributes", "error"}


# --- throwaway contributions and plugins ---------------------------------------------------


class ToyRing(CollectiveAlgorithm):
    name = "toy-ring"
    ops = ("all_reduce", "all_gather")

    def applicable(self, group: Any, op: str) -> bool:
        return True

    def time_us(self, group: Any, op: str, size_bytes: Any, protocol: str) -> Any:
        return np.asarray(size_bytes, dtype=float) * 0.0


class ToyDdp(Strategy):
    name = "toy-ddp"

    def operations(self, model: Any, layout: Any) -> list[CommOp]:
        return []


class Nameless(Strategy):
    name = ""

    def operations(self, model: Any, layout: Any) -> list[CommOp]:
        return []


def link(link_id: str = "toylink1") -> LinkGeneration:
    return LinkGeneration(
        id=link_id,
        name="Toy Link 1",
        family="nvlink",
        tier="scale-up",
        bw_GBps=100.0,
        lat_us=0.5,
        efficiency=0.9,
        source="https://example.com/toylink",
    )


def parse_toy(text: str) -> dict[str, str]:
    return {"text": text}


def build_toy(spec: Any, catalog: Any) -> Any:
    return None


def make_plugin(name: str, **hooks: Callable[..., None]) -> object:
    """A throwaway class plugin instance named ``name`` whose hookimpls are ``hooks``."""
    attrs: dict[str, Any] = {"__name__": name}
    for hook, function in hooks.items():
        attrs[hook] = staticmethod(hookimpl(function))
    return type(name.title().replace("-", ""), (), attrs)()


def registering(*items: Any) -> Callable[[Callable[..., None]], None]:
    """A hook body that calls ``register(item)`` for each item."""

    def hook(register: Callable[..., None]) -> None:
        for item in items:
            register(item)

    return hook


def make_host(builtins: bool = False, **plugins: object) -> PluginHost:
    """A fresh host without external plugins; ``plugins`` are registered by name, in order."""
    host = PluginHost(load_external=False, builtins=builtins)
    for name, plugin in plugins.items():
        host.register(plugin, name=name)
    return host


def fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> types.ModuleType:
    """A module importable as ``name`` for the duration of the test."""
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def broken_entry_point(name: str, error: Exception) -> MagicMock:
    """An entry point whose ``load()`` raises ``error`` (a vendor package that cannot import)."""
    ep = MagicMock()
    ep.name = name
    ep.value = f"{name}_plugin"
    ep.dist = None
    ep.load.side_effect = error
    return ep


def vendor_entry_point(monkeypatch: pytest.MonkeyPatch, name: str) -> importlib.metadata.EntryPoint:
    """A working third-party entry point contributing interconnect ``name``."""
    module = f"vendor_{name}"
    hook = hookimpl(registering(Interconnect(name, (name,))))
    fake_module(monkeypatch, module, register_interconnects=hook)
    return importlib.metadata.EntryPoint(name=name, value=module, group="fabricui")


def with_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: Any) -> None:
    monkeypatch.setattr(plugins_module, "entry_points", lambda: list(eps))


def row(host: PluginHost, name: str) -> dict[str, Any]:
    return next(r for r in host.describe() if r["name"] == name)


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No plugin env vars, and a config dir of the test's own."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


# --- one test per hook ---------------------------------------------------------------------


def test_hook_register_link_generations():
    """Link generations are keyed by id and attributed to their plugin."""
    host = make_host(toy=make_plugin("toy", register_link_generations=registering(link())))
    assert host.link_generations() == {"toylink1": link()}
    assert host.contributor("link_generations", "toylink1") == "toy"


def test_hook_register_hwdb_paths(tmp_path: Path):
    """hwdb directories come back as paths, in plugin order."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    host = make_host(
        one=make_plugin("one", register_hwdb_paths=registering(first)),
        two=make_plugin("two", register_hwdb_paths=registering(second)),
    )
    assert host.hwdb_paths() == [first, second]


def test_hook_register_interconnects():
    """Interconnects are keyed by name."""
    quantum = Interconnect("quantumlink", ("quantum",), "a made-up link")
    host = make_host(toy=make_plugin("toy", register_interconnects=registering(quantum)))
    assert host.interconnects() == {"quantumlink": quantum}
    assert row(host, "toy")["contributes"] == {"interconnects": ["quantumlink"]}


def test_hook_register_topology_builders():
    """Topology builders are keyed by name."""
    builder = TopologyBuilder("toy-builder", build_toy)
    host = make_host(toy=make_plugin("toy", register_topology_builders=registering(builder)))
    assert host.topology_builders() == {"toy-builder": builder}


def test_hook_register_collective_algorithms():
    """Collective algorithms are instances keyed by their class's name."""
    ring = ToyRing()
    host = make_host(toy=make_plugin("toy", register_collective_algorithms=registering(ring)))
    assert host.collective_algorithms() == {"toy-ring": ring}


def test_hook_register_strategies():
    """Strategies are instances keyed by their class's name."""
    ddp = ToyDdp()
    host = make_host(toy=make_plugin("toy", register_strategies=registering(ddp)))
    assert host.strategies() == {"toy-ddp": ddp}


def test_hook_register_importers():
    """Importers are registered as (name, parse) and returned as parse callables by name."""

    def hook(register: Callable[[str, Callable[..., Any]], None]) -> None:
        register("toy-format", parse_toy)

    host = make_host(toy=make_plugin("toy", register_importers=hook))
    assert host.importers() == {"toy-format": parse_toy}


def test_every_hookspec_has_a_test():
    """Meta-test (datasette): each hookspec has a ``test_hook_<name>`` in this file."""
    specs = [name for name, _ in _hookspecs()]
    assert len(specs) == 7
    missing = [name for name in specs if f"test_hook_{name}" not in globals()]
    assert not missing


def test_hookspecs_are_typed_and_documented():
    """Each spec takes one annotated ``register`` and has a summary line and an Args section."""
    for name, function in _hookspecs():
        parameters = inspect.signature(function).parameters
        assert list(parameters) == ["register"], name
        assert parameters["register"].annotation.startswith("Callable["), name
        doc = inspect.getdoc(function) or ""
        assert doc.splitlines()[0].endswith(".") and "\nArgs:\n    register:" in doc, name


def _hookspecs() -> list[tuple[str, Callable[..., Any]]]:
    return [
        (name, obj)
        for name, obj in vars(hookspecs).items()
        if callable(obj) and hasattr(obj, f"{hookspecs.PROJECT}_spec")
    ]


# --- failure isolation ---------------------------------------------------------------------


def test_broken_entry_point_is_reported_and_skipped(monkeypatch: pytest.MonkeyPatch):
    """An entry point whose import fails is recorded; the plugins around it still load."""
    broken = broken_entry_point("broken", ImportError("No module named 'torch'"))
    with_entry_points(
        monkeypatch,
        vendor_entry_point(monkeypatch, "before"),
        broken,
        vendor_entry_point(monkeypatch, "after"),
    )
    host = PluginHost(builtins=False)
    assert list(host.interconnects()) == ["before", "after"]
    assert host.failures == [
        PluginFailure("broken", None, None, "ImportError: No module named 'torch'")
    ]
    assert row(host, "broken")["status"] == "failed"
    assert row(host, "before") | {"contributes": None} == {
        "name": "before",
        "version": None,
        "source": "entry point",
        "dist": None,
        "status": "ok",
        "hooks": ["register_interconnects"],
        "contributes": None,
        "error": None,
    }


def test_hook_that_raises_drops_only_that_hook(tmp_path: Path):
    """A raising hook loses what it registered before raising; its other hooks still count."""

    def explode(register: Callable[..., None]) -> None:
        register(ToyDdp())
        raise RuntimeError("boom")

    flaky = make_plugin(
        "flaky",
        register_strategies=explode,
        register_interconnects=registering(Interconnect("flakylink", ("flaky",))),
    )
    good = make_plugin("good", register_strategies=registering(ToyDdp()))
    host = make_host(flaky=flaky, good=good)
    assert list(host.strategies()) == ["toy-ddp"]
    assert host.contributor("strategies", "toy-ddp") == "good"
    assert list(host.interconnects()) == ["flakylink"]
    assert host.failures == [
        PluginFailure("flaky", None, None, "register_strategies: RuntimeError: boom")
    ]
    described = row(host, "flaky")
    assert described["status"] == "failed"
    assert described["contributes"] == {"interconnects": ["flakylink"]}
    assert described["error"] == "register_strategies: RuntimeError: boom"


@pytest.mark.parametrize(
    ("hook", "bad", "message"),
    [
        ("register_interconnects", "nvlink", "expected Interconnect, got str"),
        ("register_interconnects", Interconnect("", ("x",)), "non-empty str name"),
        ("register_interconnects", Interconnect("x", ()), "families must be"),
        ("register_link_generations", {"id": "x"}, "expected LinkGeneration, got dict"),
        ("register_link_generations", link(""), "non-empty str id"),
        ("register_hwdb_paths", "/tmp", "expected pathlib.Path, got str"),
        ("register_hwdb_paths", Path("/nonexistent/hwdb"), "is not a directory"),
        ("register_topology_builders", TopologyBuilder("b", None), "build is not callable"),
        ("register_collective_algorithms", ToyRing, "an instance of ToyRing, not the class"),
        ("register_collective_algorithms", ToyDdp(), "expected CollectiveAlgorithm, got ToyDdp"),
        ("register_strategies", ToyDdp, "an instance of ToyDdp, not the class"),
        ("register_strategies", Nameless(), "non-empty str name, got ''"),
        ("register_strategies", None, "expected Strategy, got NoneType"),
    ],
)
def test_garbage_is_rejected(hook: str, bad: Any, message: str, tmp_path: Path):
    """Registering a wrong object fails that plugin's hook; a good plugin is unaffected."""
    good_items = {
        "register_interconnects": (Interconnect("ok", ("ok",)), "ok"),
        "register_link_generations": (link("ok"), "ok"),
        "register_hwdb_paths": (tmp_path, str(tmp_path.resolve())),
        "register_topology_builders": (TopologyBuilder("ok", build_toy), "ok"),
        "register_collective_algorithms": (ToyRing(), "toy-ring"),
        "register_strategies": (ToyDdp(), "toy-ddp"),
    }
    good_item, key = good_items[hook]
    host = make_host(
        bad=make_plugin("bad", **{hook: registering(good_item, bad)}),
        good=make_plugin("good", **{hook: registering(good_item)}),
    )
    kind = hook[len("register_") :]
    assert list(getattr(host, kind)()) == [good_item if kind == "hwdb_paths" else key]
    assert host.contributor(kind, key) == "good"
    [failure] = host.failures
    assert failure.name == "bad" and failure.error.startswith(f"{hook}: ")
    assert message in failure.error


def test_collective_algorithm_with_unknown_op_is_rejected():
    """An algorithm's ops must come from ``OPS``."""

    class Odd(ToyRing):
        name = "odd"
        ops = ("all_reduce", "teleport")

    host = make_host(odd=make_plugin("odd", register_collective_algorithms=registering(Odd())))
    assert host.collective_algorithms() == {}
    assert "ops must be a non-empty tuple" in host.failures[0].error


@pytest.mark.parametrize(
    ("name", "parse", "message"),
    [("", parse_toy, "non-empty str name"), ("toy", "not callable", "parse is not callable")],
)
def test_bad_importer_is_rejected(name: Any, parse: Any, message: str):
    """Importers need a str name and a callable parse."""

    def hook(register: Callable[..., None]) -> None:
        register(name, parse)

    host = make_host(bad=make_plugin("bad", register_importers=hook))
    assert host.importers() == {}
    assert message in host.failures[0].error


def test_name_clash_first_plugin_wins():
    """A second plugin registering a taken name fails that hook; the first keeps the name."""
    first, second = ToyDdp(), ToyDdp()
    host = make_host(
        first=make_plugin("first", register_strategies=registering(first)),
        second=make_plugin("second", register_strategies=registering(second)),
    )
    assert host.strategies()["toy-ddp"] is first
    assert host.failures == [
        PluginFailure(
            "second",
            None,
            None,
            "register_strategies: 'toy-ddp' is already registered by plugin first",
        )
    ]
    assert [r["status"] for r in host.describe()] == ["ok", "failed"]


def test_swallowed_validation_error_still_fails_the_hook():
    """A plugin that catches the host's error cannot sneak garbage past it."""

    def sneaky(register: Callable[..., None]) -> None:
        register(ToyDdp())
        with contextlib.suppress(Exception):
            register("garbage")

    host = make_host(sneaky=make_plugin("sneaky", register_strategies=sneaky))
    assert host.strategies() == {}
    assert "expected Strategy, got str" in host.failures[0].error


def test_unknown_hook_fails_validation():
    """A hookimpl matching no hookspec (typo) unregisters that plugin, not the others."""
    typo = make_plugin("typo", register_strategys=registering(ToyDdp()))
    good = make_plugin("good", register_strategies=registering(ToyDdp()))
    host = make_host(typo=typo, good=good)
    assert host.contributor("strategies", "toy-ddp") == "good"
    assert row(host, "typo")["status"] == "failed"
    assert "register_strategys" in host.failures[0].error


def test_hookimpl_with_unknown_argument_fails():
    """A hookimpl asking for an argument the spec lacks is rejected at registration."""

    def hook(register: Callable[..., None], extra: int) -> None:
        register(ToyDdp())

    host = make_host(bad=make_plugin("bad", register_strategies=hook))
    assert host.strategies() == {}
    assert "extra" in host.failures[0].error


def test_hookimpl_specname_is_rejected():
    """``specname`` would defeat per-plugin isolation, so the host refuses it."""

    class Renamed:
        __name__ = "renamed"

        @hookimpl(specname="register_strategies")
        def strategies(self, register: Callable[..., None]) -> None:
            register(ToyDdp())

    host = make_host(renamed=Renamed(), good=make_plugin("good"))
    assert host.strategies() == {}
    assert "specname is not supported" in host.failures[0].error


def test_duplicate_plugin_name_is_a_failure():
    """Two plugins under one name: the second is reported and skipped."""
    host = make_host(toy=make_plugin("toy", register_strategies=registering(ToyDdp())))
    assert not host.register(make_plugin("toy2"), name="toy")
    assert list(host.strategies()) == ["toy-ddp"]
    assert host.failures[0].name == "toy"


def test_register_after_a_call_refreshes_results():
    """Results are cached per host, and registering a plugin later invalidates the cache."""
    host = make_host()
    assert host.strategies() == {}
    assert host.strategies() is host.strategies()
    host.register(make_plugin("late", register_strategies=registering(ToyDdp())), name="late")
    assert list(host.strategies()) == ["toy-ddp"]


def test_report_failures_prints_one_line_each_once():
    """CLI mode: one ``fabricui: plugin <name> skipped: <error>`` line per failure, once."""

    def explode(register: Callable[..., None]) -> None:
        raise ValueError("bad\nthing")

    host = make_host(bad=make_plugin("bad", register_strategies=explode))
    host.collect_all()
    stream = io.StringIO()
    assert host.report_failures(stream) == 1
    assert host.report_failures(stream) == 0
    assert stream.getvalue() == (
        "fabricui: plugin bad skipped: register_strategies: ValueError: bad thing\n"
    )


# --- single-file plugins and environment switches ------------------------------------------

GOOD_FILE = '''\
"""A single-file plugin."""
from fabricui import hookimpl
from fabricui.engine.types import Interconnect

__version__ = "1.2"


@hookimpl
def register_interconnects(register):
    register(Interconnect("{name}", ("{name}",)))
'''


def write_plugin(directory: Path, name: str, text: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.py"
    path.write_text(GOOD_FILE.format(name=name) if text is None else text)
    return path


def test_single_file_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Files load from the user's config dir and $FABRICUI_PLUGINS_DIR; a broken one is skipped."""
    with_entry_points(monkeypatch)
    write_plugin(tmp_path / "config" / "fabricui" / "plugins", "homelink")
    extra = tmp_path / "extra"
    write_plugin(extra, "extralink")
    write_plugin(extra, "broken", "def register_interconnects(:\n")
    write_plugin(extra, "_private", "raise SystemExit('never imported')\n")
    monkeypatch.setenv("FABRICUI_PLUGINS_DIR", str(extra))
    host = PluginHost(builtins=False)
    assert list(host.interconnects()) == ["homelink", "extralink"]
    rows = {r["name"]: r for r in host.describe()}
    assert set(rows) == {"homelink", "extralink", "broken"}
    assert rows["extralink"]["source"] == "file" and rows["extralink"]["version"] == "1.2"
    assert rows["broken"]["status"] == "failed"
    assert rows["broken"]["error"].startswith("SyntaxError: ")
    assert "fabricui_file_plugin_broken" not in sys.modules


def test_allow_list_loads_only_named_external_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """$FABRICUI_LOAD_PLUGINS=a,b loads only those external plugins (files too)."""
    broken = broken_entry_point("broken", ImportError("nope"))
    with_entry_points(monkeypatch, vendor_entry_point(monkeypatch, "alpha"), broken)
    write_plugin(tmp_path / "extra", "filelink")
    monkeypatch.setenv("FABRICUI_PLUGINS_DIR", str(tmp_path / "extra"))
    monkeypatch.setenv("FABRICUI_LOAD_PLUGINS", "alpha, filelink")
    host = PluginHost(builtins=False)
    assert list(host.interconnects()) == ["alpha", "filelink"]
    assert host.failures == []
    broken.load.assert_not_called()


def test_empty_allow_list_loads_no_external_plugins(
    monkeypatch: pytest.MonkeyPatch, installed: None
):
    """An empty $FABRICUI_LOAD_PLUGINS loads no external plugins; built-ins still load."""
    builtin = importlib.metadata.EntryPoint(name="pcie", value="fabricui_pcie", group="fabricui")
    monkeypatch.setattr(plugins_module, "_dist_of", lambda ep: ("fabricui", "0.1.0"))
    with_entry_points(monkeypatch, vendor_entry_point(monkeypatch, "alpha"), builtin)
    monkeypatch.setenv("FABRICUI_LOAD_PLUGINS", "")
    host = PluginHost()
    assert [(r["name"], r["source"]) for r in host.describe()] == [("pcie", "builtin")]


def test_block_list(monkeypatch: pytest.MonkeyPatch):
    """$FABRICUI_DISABLE_PLUGINS blocks plugins before they are imported."""
    broken = broken_entry_point("broken", ImportError("nope"))
    with_entry_points(monkeypatch, vendor_entry_point(monkeypatch, "alpha"), broken)
    monkeypatch.setenv("FABRICUI_DISABLE_PLUGINS", "broken,toy")
    host = PluginHost(builtins=False)
    broken.load.assert_not_called()
    assert not host.register(make_plugin("toy"), name="toy")
    assert host.failures == []
    assert [(r["name"], r["status"]) for r in host.describe()] == [
        ("alpha", "ok"),
        ("broken", "blocked"),
        ("toy", "blocked"),
    ]


def test_strict_mode_reraises(monkeypatch: pytest.MonkeyPatch):
    """FABRICUI_STRICT_PLUGINS=1 re-raises import errors and hook errors."""
    monkeypatch.setenv("FABRICUI_STRICT_PLUGINS", "1")
    with_entry_points(monkeypatch, broken_entry_point("broken", ImportError("nope")))
    with pytest.raises(ImportError, match="nope"):
        PluginHost(builtins=False)

    def explode(register: Callable[..., None]) -> None:
        raise RuntimeError("boom")

    host = make_host(bad=make_plugin("bad", register_strategies=explode))
    with pytest.raises(RuntimeError, match="boom"):
        host.strategies()
    with pytest.raises(Exception, match="expected Strategy"):
        make_host(bad=make_plugin("bad", register_strategies=registering("x"))).strategies()


def test_get_host_is_cached(monkeypatch: pytest.MonkeyPatch):
    """``get_host()`` builds one process-wide host."""
    with_entry_points(monkeypatch)
    get_host.cache_clear()
    try:
        assert get_host() is get_host()
    finally:
        get_host.cache_clear()


# --- built-ins -----------------------------------------------------------------------------


#: Built-in strategy plugins and what each registers.
BUILTIN_STRATEGIES = {
    "ddp": ["ddp"],
    "zero": ["zero1", "zero2", "fsdp"],
    "hsdp": ["hsdp"],
    "tp": ["tp", "tp-sp"],
    "pp": ["pp"],
    "ep": ["ep"],
    "cp": ["cp"],
}
#: Built-in importer plugins and the formats each registers.
BUILTIN_IMPORTERS = {
    "importers": [
        "nvidia-smi",
        "nccl-xml",
        "ibstat",
        "rocm-smi",
        "ibnetdiscover",
        "iblinkinfo",
        "slurm-topology",
        "nvidia-smi-q",
        "perfquery",
        "ibqueryerrors",
        "ibdiagnet",
        "ibswinfo",
        "mlxlink",
        "nvlink",
        "dcgmi-diag",
        "fabric-manager",
        "rdma-link",
        "show-gids",
        "ethtool",
        "sinfo",
        "scontrol-node",
        "squeue",
        "scontrol-job",
        "sacct",
    ]
}
#: Collective algorithms that exist only on one interconnect.
BUILTIN_ALGORITHMS = {
    "nvlink": {"collective_algorithms": ["nvls", "nvlstree"]},
    "infiniband": {"collective_algorithms": ["sharp"]},
    "ici": {"collective_algorithms": ["torus"]},
}
#: hwdb records each built-in interconnect brings from its package's hwdb/ (at least these:
#: a new generation joins the list without breaking the test).
BUILTIN_RECORDS = {
    "pcie": {
        "link_generations": {"pcie3", "pcie4", "pcie5", "pcie6", "upi"},
        "switches": {"pcie-gen4-switch", "pcie-gen5-switch", "pcie-gen6-switch"},
    },
    "nvlink": {
        "link_generations": {f"nvlink{n}" for n in range(1, 7)} | {"nvlink-c2c"},
        "switches": {"nvswitch1", "nvswitch2", "nvswitch3", "nvswitch4", "nvlink6-switch"},
    },
    "xgmi": {"link_generations": {"xgmi2", "xgmi3", "xgmi4"}},
    "infiniband": {
        "link_generations": {"ib-hdr", "ib-ndr", "ib-xdr"},
        "nics": {"cx6-hdr", "cx7-ndr", "cx8-xdr", "cx9-xdr"},
        "switches": {"quantum", "quantum-2", "quantum-x800"},
    },
    "ethernet": {
        "link_generations": {"roce", "tcp", "tcpxo", "gaudi3-roce"},
        "nics": {"cx7-roce", "cx8-roce", "bf3", "pollara-400", "thor2", "gaudi3-nic"},
        "switches": {"spectrum-4", "generic-ethernet"},
    },
    "efa": {"link_generations": {"efa"}, "nics": {"efa-v1", "efa-v2", "efa-v3", "efa-v4"}},
    "slingshot": {
        "link_generations": {"slingshot"},
        "nics": {"cassini"},
        "switches": {"rosetta"},
    },
    "ici": {"link_generations": {"ici-v5p", "ici-v6e", "ici-v7"}},
    "neuronlink": {"link_generations": {"neuronlink-v3"}},
}


def test_builtins_load_through_entry_points(installed: None):
    """Every built-in loads from the ``fabricui`` group as source builtin, ok, one interconnect."""
    host = make_host(builtins=True)
    rows = {r["name"]: r for r in host.describe()}
    assert set(rows) == set(BUILTINS) | set(BUILTIN_STRATEGIES) | set(BUILTIN_IMPORTERS)
    for name, described in rows.items():
        assert described["source"] == "builtin" and described["status"] == "ok", described
        assert described["dist"] == "fabricui" and described["version"]
        if name in BUILTINS:
            expected = {"interconnects": [name], **BUILTIN_ALGORITHMS.get(name, {})}
            contributes = described["contributes"]
            (hwdb,) = contributes.pop("hwdb_paths")
            assert Path(hwdb).parts[-2:] == (f"fabricui_{name}", "hwdb")
            for key, ids in BUILTIN_RECORDS[name].items():
                assert ids <= set(contributes.pop(key)), (name, key)
            assert contributes == expected, name
            continue
        if name in BUILTIN_IMPORTERS:
            expected = {"importers": BUILTIN_IMPORTERS[name]}
        else:
            expected = {"strategies": BUILTIN_STRATEGIES[name]}
        assert described["contributes"] == expected
    assert {n: i.families for n, i in host.interconnects().items()} == BUILTINS
    assert host.failures == []


def test_builtin_families_cover_the_link_families(installed: None, catalog):
    """Every family of a shipped link record but on-package memory belongs to exactly one
    built-in interconnect, and each plugin's records are of the families it declares."""
    families = [f for fams in BUILTINS.values() for f in fams]
    assert len(families) == len(set(families))
    shipped = {link.family for link in catalog.links.values()}
    assert set(families) == shipped - set(CORE_FAMILIES)
    host = make_host(builtins=True)
    assert set(host.link_families()) == set(families) | set(CORE_FAMILIES)
    for row in host.describe():
        for link_id in row["contributes"].get("link_generations", []):
            assert catalog.links[link_id].family in BUILTINS[row["name"]], link_id


def test_builtin_plugins_are_top_level_packages(installed: None):
    """The wheel/editable install exposes ``fabricui_<name>`` packages, not ``plugins``."""
    for name in BUILTINS:
        module = __import__(f"fabricui_{name}")
        assert Path(module.__file__).parent.name == f"fabricui_{name}"


# --- the `fabricui plugins` command --------------------------------------------------------


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fabricui")
    plugins_command.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["plugins", *argv])


def test_plugins_all_json(capsys: pytest.CaptureFixture[str], installed: None):
    """``fabricui plugins --all --json`` is {"plugins": [row, ...]} with every documented key."""

    def explode(register: Callable[..., None]) -> None:
        raise RuntimeError("boom")

    host = make_host(builtins=True, bad=make_plugin("bad", register_strategies=explode))
    assert plugins_command.run(parse("--all", "--json"), host=host) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["plugins"]
    assert all(set(r) == ROW_KEYS for r in data["plugins"])
    names = [r["name"] for r in data["plugins"]]
    assert set(names) == {*BUILTINS, *BUILTIN_STRATEGIES, *BUILTIN_IMPORTERS, "bad"}
    bad = data["plugins"][-1]
    assert bad["status"] == "failed" and bad["error"] == "register_strategies: RuntimeError: boom"
    assert bad["source"] == "registered"


def test_plugins_table_hides_builtins(capsys: pytest.CaptureFixture[str], installed: None):
    """Without --all the table lists external plugins only, failures with their error."""
    host = make_host(builtins=True)
    assert plugins_command.run(parse(), host=host) == 0
    assert capsys.readouterr().out.startswith("no plugins installed")

    def explode(register: Callable[..., None]) -> None:
        raise RuntimeError("boom")

    host.register(make_plugin("bad", register_strategies=explode), name="bad")
    host.register(make_plugin("ok", register_strategies=registering(ToyDdp())), name="ok")
    plugins_command.run(parse(), host=host)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "version", "source", "status", "contributes"]
    assert lines[1].split()[:4] == ["bad", "-", "registered", "failed"]
    assert lines[2] == "  error: register_strategies: RuntimeError: boom"
    assert lines[3].split() == ["ok", "-", "registered", "ok", "strategies:", "toy-ddp"]
    plugins_command.run(parse("--all"), host=host)
    assert "nvlink" in capsys.readouterr().out


# --- import hygiene ------------------------------------------------------------------------


def test_import_fabricui_is_light():
    """``import fabricui`` (for ``hookimpl``) loads pluggy only: no numpy, yaml or textual."""
    code = "import sys, fabricui, fabricui.hookspecs; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "pluggy" in loaded
    assert not {"numpy", "yaml", "textual", "rich"} & loaded
