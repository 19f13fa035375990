"""Plugins that misbehave: raise, hang, return garbage or clash, at load, in a hook or when the
engine calls what they registered. Each is named, skipped, and the app keeps working."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, ClassVar
from unittest.mock import MagicMock

import numpy as np
import pytest

from fabricui import hookimpl
from fabricui.cli import main
from fabricui.engine.algorithms import core_algorithms
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.types import (
    CollectiveAlgorithm,
    CommOp,
    Interconnect,
    Strategy,
    TopologyBuilder,
)
from fabricui.errors import PluginError
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog
from fabricui.hwdb.resolve import resolve_topology
from fabricui.model.records import LinkGeneration
from fabricui.plugins import PluginHost, PluginTimeout, get_host, unsafe_reason
from fabricui.plugins import files as plugin_files
from fabricui.plugins import host as plugins_module

ENV_VARS = (
    plugins_module.ENV_PLUGINS_DIR,
    plugins_module.ENV_LOAD,
    plugins_module.ENV_DISABLE,
    plugins_module.ENV_STRICT,
    plugins_module.ENV_TRACE,
    plugins_module.ENV_TIMEOUT,
)
#: Time budget the tests give plugins [s]: short, so hanging plugins cost little.
BUDGET = "0.3"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No plugin env vars but a short time budget, a config dir of the test's own, and a
    fresh process-wide host before and after."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(plugins_module.ENV_TIMEOUT, BUDGET)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    get_host.cache_clear()
    yield
    get_host.cache_clear()


# --- throwaway plugins -----------------------------------------------------------------------


class Ring2(CollectiveAlgorithm):
    """A well-behaved plugin algorithm (slower than the core ones, never chosen by auto)."""

    name: ClassVar[str] = "ring2"
    ops: ClassVar[tuple[str, ...]] = ("all_reduce",)

    def applicable(self, group: Any, op: str) -> bool:
        return True

    def time_us(self, group: Any, op: str, size_bytes: Any, protocol: str) -> Any:
        return np.asarray(size_bytes, dtype=float) + 1e9


def algorithm(name: str, **methods: Callable[..., Any]) -> CollectiveAlgorithm:
    """A ``Ring2`` variant named ``name`` with some methods replaced."""
    cls = type(f"Algo_{name}", (Ring2,), {"name": name, **methods})
    return cls()


class Quiet(Strategy):
    """A well-behaved plugin strategy: one small all-reduce on the tp group."""

    name: ClassVar[str] = "quiet"

    def operations(self, model: Any, layout: Any) -> list[CommOp]:
        return [CommOp(self.name, "all_reduce", "tp", 1024.0, 1, False, "toy")]


def strategy(name: str, **methods: Callable[..., Any]) -> Strategy:
    cls = type(f"Strategy_{name}", (Quiet,), {"name": name, **methods})
    return cls()


def link(link_id: str = "toylink1", **changes: Any) -> LinkGeneration:
    fields = {
        "id": link_id,
        "name": "Toy Link",
        "family": "nvlink",
        "tier": "scale-up",
        "bw_GBps": 100.0,
        "lat_us": 0.5,
        "efficiency": 0.9,
        "source": "https://example.com/toylink",
        **changes,
    }
    return LinkGeneration(**fields)


def make_plugin(name: str, **hooks: Callable[..., None]) -> object:
    attrs: dict[str, Any] = {"__name__": name}
    for hook, function in hooks.items():
        attrs[hook] = staticmethod(hookimpl(function))
    return type(name.title().replace("-", ""), (), attrs)()


def registering(*items: Any) -> Callable[[Callable[..., None]], None]:
    def hook(register: Callable[..., None]) -> None:
        for item in items:
            register(*item) if isinstance(item, tuple) else register(item)

    return hook


def make_host(builtins: bool = False, **plugins: object) -> PluginHost:
    host = PluginHost(load_external=False, builtins=builtins)
    for name, plugin in plugins.items():
        host.register(plugin, name=name)
    return host


def status(host: PluginHost, name: str) -> tuple[str, str | None]:
    row = next(r for r in host.describe() if r["name"] == name)
    return row["status"], row["error"]


def sleeper(seconds: float = 30.0) -> Callable[..., Any]:
    def sleep(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)

    return sleep


def raiser(exc: BaseException) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return fail


#: One good contribution per hook: (hook, item to register, facade method).
GOOD = {
    "register_link_generations": (link(), "link_generations"),
    "register_interconnects": (Interconnect("toynet", ("toynet",)), "interconnects"),
    "register_topology_builders": (
        TopologyBuilder("toy-builder", lambda spec, cat: None),
        "topology_builders",
    ),
    "register_collective_algorithms": (Ring2(), "collective_algorithms"),
    "register_strategies": (Quiet(), "strategies"),
    "register_importers": (("toy-format", lambda text: {"text": text}), "importers"),
}


@pytest.fixture(scope="module")
def catalog() -> Any:
    return load_catalog()


@pytest.fixture(scope="module")
def fabric(catalog: Any) -> Any:
    return build_fabric(resolve_topology("dgx-h100", catalog), catalog)


# --- hooks that raise, hang, exit or return garbage ------------------------------------------


@pytest.mark.parametrize("hook", sorted(GOOD) + ["register_hwdb_paths"])
@pytest.mark.parametrize(
    "misdeed",
    ["raises", "exits", "hangs"],
)
def test_every_hook_misbehaving_is_named_and_skipped(hook: str, misdeed: str, tmp_path: Path):
    """A hook that raises, calls exit() or hangs loses its contributions, is named in
    ``fabricui plugins`` and once on stderr; a good plugin on the same hook still counts."""
    body = {
        "raises": raiser(RuntimeError("boom")),
        "exits": raiser(SystemExit(3)),
        "hangs": sleeper(),
    }[misdeed]
    if hook == "register_hwdb_paths":
        good_item, kind = tmp_path, "hwdb_paths"
    else:
        good_item, kind = GOOD[hook]
    start = time.perf_counter()
    host = make_host(
        bad=make_plugin("bad", **{hook: body}),
        good=make_plugin("good", **{hook: registering(good_item)}),
    )
    contributions = getattr(host, kind)()
    assert time.perf_counter() - start < 5
    assert len(contributions) == 1
    state, error = status(host, "bad")
    assert state == "failed" and error.startswith(f"{hook}: ")
    expected = {"raises": "RuntimeError: boom", "exits": "SystemExit: 3", "hangs": "took longer"}
    assert expected[misdeed] in error
    assert status(host, "good") == ("ok", None)
    stream = io.StringIO()
    assert host.report_failures(stream) == 1
    assert stream.getvalue().startswith(f"fabricui: plugin bad skipped: {hook}: ")


def test_registering_after_the_budget_is_ignored():
    """A hook abandoned for taking too long cannot register later from its thread."""

    def slow(register: Callable[..., None]) -> None:
        time.sleep(0.6)
        register(Quiet())

    host = make_host(slow=make_plugin("slow", register_strategies=slow))
    assert host.strategies() == {}
    time.sleep(0.6)
    assert host.strategies() == {}
    assert "took longer" in status(host, "slow")[1]


@pytest.mark.parametrize(
    ("hook", "bad", "message"),
    [
        ("register_link_generations", link(bw_GBps=float("nan")), "bw_GBps must be a finite"),
        ("register_link_generations", link(bw_GBps=-1.0), "bw_GBps must be a finite"),
        ("register_link_generations", link(lat_us=float("inf")), "lat_us must be a finite"),
        ("register_link_generations", link(efficiency=1.5), "efficiency must be in (0, 1]"),
        ("register_link_generations", link(tier="warp"), "tier must be one of"),
        ("register_link_generations", link(bw_GBps="fast"), "bw_GBps must be a number"),
        ("register_collective_algorithms", algorithm("ring"), "one of fabricui's core"),
        (
            "register_collective_algorithms",
            algorithm("proto", protocols="simple"),
            "protocols must be a non-empty tuple",
        ),
        (
            "register_collective_algorithms",
            algorithm("proto2", protocols=("warp",)),
            "protocols must be a non-empty tuple",
        ),
        ("register_strategies", strategy("broken", operations=None), "operations is not callable"),
    ],
)
def test_garbage_contributions_are_rejected(hook: str, bad: Any, message: str):
    """NaN or negative figures, unknown tiers and protocols, a core algorithm's name: refused."""
    host = make_host(bad=make_plugin("bad", **{hook: registering(bad)}))
    kind = hook[len("register_") :]
    assert getattr(host, kind)() == {}
    state, error = status(host, "bad")
    assert state == "failed" and message in error


def test_register_with_wrong_arguments_fails_the_hook_even_if_swallowed():
    """``register()`` called wrongly fails the hook, even when the plugin catches the error."""

    def hook(register: Callable[..., None]) -> None:
        register(Quiet())
        with contextlib.suppress(Exception):
            register(Quiet(), "extra", colour="red")

    host = make_host(bad=make_plugin("bad", register_strategies=hook))
    assert host.strategies() == {}
    assert "register(...): TypeError" in status(host, "bad")[1]


def test_import_that_exits_is_a_load_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A plugin module calling ``sys.exit()`` at import is skipped, not the end of the app."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "quitter.py").write_text("import sys\nsys.exit(1)\n")
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(extra))
    monkeypatch.setattr(plugins_module, "entry_points", lambda: [])
    host = PluginHost(builtins=False)
    assert status(host, "quitter") == ("failed", "SystemExit: 1")


# --- what plugins registered, failing when called --------------------------------------------


def _predict(host: PluginHost, fabric: Any, algo: str = "auto") -> Any:
    algorithms = list(core_algorithms()) + list(host.collective_algorithms().values())
    return evaluate_collective(
        fabric, "all_reduce", [1024, 2**20], algorithms=algorithms, algo=algo
    )


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        ({"time_us": raiser(ZeroDivisionError("bad maths"))}, "time_us: ZeroDivisionError"),
        ({"time_us": lambda self, g, op, s, p: np.full(np.shape(s), np.nan)}, "us (got nan)"),
        ({"time_us": lambda self, g, op, s, p: -np.ones(np.shape(s))}, "us (got -1)"),
        ({"time_us": lambda self, g, op, s, p: np.ones(7)}, "shape (7,)"),
        ({"time_us": lambda self, g, op, s, p: "fast"}, "not an array of times"),
        ({"time_us": sleeper()}, "took longer"),
        ({"applicable": raiser(KeyError("group"))}, "applicable: KeyError"),
        ({"applicable": lambda self, g, op: "yes"}, "returned str, not bool"),
        ({"applicable": sleeper()}, "took longer"),
    ],
)
def test_algorithm_failing_at_call_time_is_skipped(fabric: Any, methods: dict, message: str):
    """An algorithm that raises, hangs or returns NaN/negative/misshaped times when priced is
    skipped: the core algorithms still price the collective; the plugin is named."""
    host = make_host(
        toy=make_plugin(
            "toy", register_collective_algorithms=registering(algorithm("flaky", **methods))
        )
    )
    reference = evaluate_collective(fabric, "all_reduce", [1024, 2**20])
    first = _predict(host, fabric)
    np.testing.assert_allclose(first.time_us, reference.time_us)
    state, error = status(host, "toy")
    assert state == "failed" and error.startswith("collective algorithm 'flaky': ")
    assert message in error
    start = time.perf_counter()
    np.testing.assert_allclose(_predict(host, fabric).time_us, reference.time_us)
    assert time.perf_counter() - start < 0.25, "a failed algorithm is skipped at once"
    assert len(host.failures) == 1


def test_forcing_a_failed_algorithm_is_one_error(fabric: Any):
    """``--algo`` naming an algorithm that fails: one EngineError naming the plugin."""
    host = make_host(
        toy=make_plugin(
            "toy",
            register_collective_algorithms=registering(
                algorithm("flaky", time_us=raiser(RuntimeError("boom")))
            ),
        )
    )
    with pytest.raises(Exception, match="plugin toy") as exc:
        _predict(host, fabric, algo="flaky")
    assert "\n" not in str(exc.value)


def test_good_plugin_algorithm_still_runs(fabric: Any):
    """Guards change nothing for an algorithm that behaves (and keep its identity)."""
    ring2 = Ring2()
    host = make_host(toy=make_plugin("toy", register_collective_algorithms=registering(ring2)))
    assert host.collective_algorithms()["ring2"] is ring2
    forced = _predict(host, fabric, algo="ring2")
    assert forced.algorithm[0].startswith("ring2/") and forced.time_us[0] > 1e9
    assert host.failures == []


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        ({"operations": raiser(ValueError("no model"))}, "operations: ValueError: no model"),
        ({"operations": lambda self, m, lay: "all_reduce"}, "not a list of CommOp"),
        ({"operations": lambda self, m, lay: [1, 2]}, "int item, not CommOp"),
        (
            {"operations": lambda self, m, lay: [CommOp("x", "teleport", "tp", 1.0, 1, False)]},
            "collective 'teleport'",
        ),
        (
            {"operations": lambda self, m, lay: [CommOp("x", "all_reduce", "tp", -5.0, 1, False)]},
            "size_bytes: size must be a finite number within 0..1e+15 bytes (got -5)",
        ),
        (
            {"operations": lambda self, m, lay: [CommOp("x", "all_reduce", "tp", 1.0, np.nan, 0)]},
            "count: calls per step must be a finite number within 0..1e+12 (got nan)",
        ),
        ({"operations": sleeper()}, "took longer"),
        ({"applicable": raiser(RuntimeError("boom"))}, "applicable: RuntimeError"),
    ],
)
def test_strategy_failing_at_call_time_is_skipped(methods: dict, message: str):
    """A strategy whose operations raise, hang or are garbage contributes none and is named."""
    host = make_host(
        toy=make_plugin("toy", register_strategies=registering(strategy("flaky", **methods)))
    )
    flaky = host.strategies()["flaky"]
    layout = MagicMock(tp=2)
    assert flaky.applicable(MagicMock(), layout) in (True, False)
    assert flaky.operations(MagicMock(), layout) == []
    assert flaky.applicable(MagicMock(), layout) is False
    state, error = status(host, "toy")
    assert state == "failed" and error.startswith("strategy 'flaky': ") and message in error
    assert host.failed_at_call("strategies", "flaky")


@pytest.mark.parametrize(
    ("parse", "message"),
    [(raiser(RuntimeError("bad parse")), "RuntimeError: bad parse"), (sleeper(), "took longer")],
)
def test_importer_failing_is_named(parse: Callable[..., Any], message: str):
    """An importer that raises or hangs: recorded, and its caller gets the error."""
    host = make_host(toy=make_plugin("toy", register_importers=registering(("toy", parse))))
    with pytest.raises((RuntimeError, PluginError)):
        host.importers()["toy"]("text")
    state, error = status(host, "toy")
    assert state == "failed" and error.startswith("importer 'toy': parse: ") and message in error
    with pytest.raises(PluginError, match="skipped: it failed earlier"):
        host.importers()["toy"]("text")


@pytest.mark.parametrize(
    ("build", "message"),
    [(raiser(RuntimeError("no")), "RuntimeError: no"), (sleeper(), "took longer")],
)
def test_builder_failing_is_named(build: Callable[..., Any], message: str):
    """A topology builder that raises or hangs is recorded against its plugin."""
    builder = TopologyBuilder("toy-star", build)
    host = make_host(toy=make_plugin("toy", register_topology_builders=registering(builder)))
    with pytest.raises((RuntimeError, PluginError)):
        host.topology_builders()["toy-star"].build(MagicMock(), MagicMock())
    assert message in status(host, "toy")[1]
    assert host.topology_builders() == {"toy-star": builder}


def test_strict_mode_reraises_call_time_errors(monkeypatch: pytest.MonkeyPatch, fabric: Any):
    """FABRICUI_STRICT_PLUGINS=1: a plugin author sees the exception (and the timeout)."""
    monkeypatch.setenv(plugins_module.ENV_STRICT, "1")
    host = make_host(
        toy=make_plugin(
            "toy",
            register_collective_algorithms=registering(
                algorithm("flaky", time_us=raiser(ZeroDivisionError("bad maths")))
            ),
        )
    )
    with pytest.raises(ZeroDivisionError, match="bad maths"):
        _predict(host, fabric)
    slow = make_host(
        toy=make_plugin(
            "toy", register_strategies=registering(strategy("slow", operations=sleeper()))
        )
    )
    with pytest.raises(PluginTimeout, match="took longer"):
        slow.strategies()["slow"].operations(MagicMock(), MagicMock())


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", 5.0),
        ("2.5", 2.5),
        ("0", None),
        ("-1", None),
        ("soon", 5.0),
        ("inf", None),
        ("86400", 86400.0),
        ("1e10", None),
    ],
)
def test_timeout_setting(monkeypatch: pytest.MonkeyPatch, value: str, expected: float | None):
    """FABRICUI_PLUGIN_TIMEOUT_S: seconds; 0 or less, or more than a day (inf, 1e10),
    means no limit; junk the default."""
    monkeypatch.setenv(plugins_module.ENV_TIMEOUT, value)
    assert plugins_module.timeout_s() == expected


# --- clashes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", sorted(GOOD))
def test_clash_keeps_the_first_and_names_both(hook: str):
    """Two plugins registering one id: the first keeps it; the second is skipped, naming the
    first."""
    item, kind = GOOD[hook]
    host = make_host(
        first=make_plugin("first", **{hook: registering(item)}),
        second=make_plugin("second", **{hook: registering(item)}),
    )
    (key,) = getattr(host, kind)()
    assert host.contributor(kind, key) == "first"
    assert status(host, "second") == (
        "failed",
        f"{hook}: {key!r} is already registered by plugin first",
    )


def test_link_generation_the_database_has_stays_the_databases():
    """A plugin's ``nvlink4`` does not replace the hardware database's; it is named."""
    host = make_host(
        toy=make_plugin(
            "toy", register_link_generations=registering(link("nvlink4"), link("toylink9"))
        )
    )
    assert list(host.link_generations()) == ["toylink9"]
    state, error = status(host, "toy")
    assert state == "failed" and "'nvlink4' is already in the hardware database" in error
    assert "links.yaml:" in error


def test_broken_hwdb_directory_is_dropped(tmp_path: Path):
    """A plugin hwdb directory that does not load is dropped, naming file and line."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "links.yaml").write_text("links:\n  - {id: x, name: X}\n")
    host = make_host(toy=make_plugin("toy", register_hwdb_paths=registering(bad)))
    assert host.hwdb_paths() == []
    state, error = status(host, "toy")
    assert state == "failed" and "links.yaml:2" in error and "missing required key" in error


def test_builtin_wins_a_clash(installed: None):
    """A plugin registering a built-in strategy's name (``ddp``) loses to the built-in."""
    impostor = strategy("ddp")
    host = make_host(
        builtins=True, impostor=make_plugin("impostor", register_strategies=registering(impostor))
    )
    assert host.contributor("strategies", "ddp") == "ddp"
    assert host.strategies()["ddp"] is not impostor
    assert "'ddp' is already registered by plugin ddp" in status(host, "impostor")[1]


def test_external_entry_points_load_in_a_fixed_order(monkeypatch: pytest.MonkeyPatch):
    """Built-ins first as declared, then other distributions' entry points sorted by
    distribution and name: who wins a clash does not depend on site-packages order."""

    def ep(name: str, dist: str) -> MagicMock:
        entry = MagicMock()
        entry.name, entry.value = name, f"{dist}_plugin"
        entry.dist.metadata = {"Name": dist}
        entry.dist.version = "1"
        return entry

    found = [
        ep("zz", "vendor-b"),
        ep("pcie", "fabricui"),
        ep("aa", "vendor-b"),
        ep("nvlink", "fabricui"),
        ep("mm", "vendor-a"),
    ]
    monkeypatch.setattr(plugins_module, "_discover", lambda: list(found))
    names = [e.name for e in plugins_module.entry_points()]
    assert names == ["pcie", "nvlink", "mm", "aa", "zz"]


def test_disable_list_blocks_named_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """FABRICUI_DISABLE_PLUGINS=a,b: neither is imported (not even a broken one)."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "alpha.py").write_text("raise RuntimeError('never imported')\n")
    (extra / "beta.py").write_text("import sys\nsys.exit(1)\n")
    (extra / "gamma.py").write_text(GOOD_FILE.format(name="gamma"))
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(extra))
    monkeypatch.setenv(plugins_module.ENV_DISABLE, "alpha, beta")
    monkeypatch.setattr(plugins_module, "entry_points", lambda: [])
    host = PluginHost(builtins=False)
    assert host.failures == []
    assert [(r["name"], r["status"]) for r in host.describe()] == [
        ("alpha", "blocked"),
        ("beta", "blocked"),
        ("gamma", "ok"),
    ]


# --- the plugin directory must be the user's -------------------------------------------------

GOOD_FILE = """\
from fabricui import hookimpl
from fabricui.engine.types import Interconnect


@hookimpl
def register_interconnects(register):
    register(Interconnect("{name}", ("{name}",)))
"""

needs_unix = pytest.mark.skipif(not hasattr(os, "getuid"), reason="no Unix owners and modes")


def _plugin_dir(tmp_path: Path, mode: int = 0o755) -> Path:
    directory = tmp_path / "plugins"
    directory.mkdir()
    (directory / "homelink.py").write_text(GOOD_FILE.format(name="homelink"))
    (directory / "homelink.py").chmod(0o644)
    directory.chmod(mode)
    return directory


def _load_from(monkeypatch: pytest.MonkeyPatch, directory: Path) -> PluginHost:
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    monkeypatch.setattr(plugins_module, "entry_points", lambda: [])
    return PluginHost(builtins=False)


@needs_unix
def test_private_plugin_directory_loads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """0755 directory, 0644 file, owned by the user: loaded."""
    host = _load_from(monkeypatch, _plugin_dir(tmp_path))
    assert list(host.interconnects()) == ["homelink"]
    assert host.failures == []


@needs_unix
@pytest.mark.parametrize(
    ("mode", "reason"),
    [(0o777, "writable by others"), (0o757, "writable by others"), (0o775, "writable by group")],
)
def test_writable_plugin_directory_is_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: int, reason: str
):
    """A directory others can write to: none of its files is imported; one line names it."""
    monkeypatch.setattr(plugin_files, "_private_group", lambda gid, uid: False)
    directory = _plugin_dir(tmp_path, mode)
    (directory / "trap.py").write_text("raise SystemExit('must not be imported')\n")
    host = _load_from(monkeypatch, directory)
    assert host.interconnects() == {}
    [failure] = host.failures
    assert failure.name == str(directory)
    assert reason in failure.error and f"(mode {mode:04o})" in failure.error
    assert "chmod go-w" in failure.error
    stream = io.StringIO()
    host.report_failures(stream)
    assert stream.getvalue().count("\n") == 1
    assert "fabricui_file_plugin_trap" not in sys.modules


@needs_unix
@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646])
def test_writable_plugin_file_is_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: int
):
    """A plugin file others can write to is skipped; its neighbours still load."""
    monkeypatch.setattr(plugin_files, "_private_group", lambda gid, uid: False)
    directory = _plugin_dir(tmp_path)
    trap = directory / "trap.py"
    trap.write_text("raise SystemExit('must not be imported')\n")
    trap.chmod(mode)
    host = _load_from(monkeypatch, directory)
    assert list(host.interconnects()) == ["homelink"]
    state, error = status(host, "trap")
    assert state == "failed" and f"mode {mode:04o}" in error and "not loaded" in error


@needs_unix
def test_group_writable_directory_of_a_private_group_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """umask 002 with a user-private group (Debian, Ubuntu): no other user can write it."""
    monkeypatch.setattr(plugin_files, "_private_group", lambda gid, uid: True)
    host = _load_from(monkeypatch, _plugin_dir(tmp_path, 0o775))
    assert list(host.interconnects()) == ["homelink"]
    assert host.failures == []


@needs_unix
@pytest.mark.parametrize(
    ("members", "others_primary", "private"),
    [((), (), True), (("ann",), (), True), (("bob",), (), False), ((), ("bob",), False)],
)
def test_private_group_means_no_other_user_is_in_it(
    monkeypatch: pytest.MonkeyPatch, members, others_primary, private
):
    import grp
    import pwd
    from types import SimpleNamespace as NS

    users = [NS(pw_name="ann", pw_uid=1000, pw_gid=1000)]
    users += [
        NS(pw_name=name, pw_uid=2000 + i, pw_gid=1000) for i, name in enumerate(others_primary)
    ]
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: users[0])
    monkeypatch.setattr(pwd, "getpwall", lambda: users)
    monkeypatch.setattr(grp, "getgrgid", lambda gid: NS(gr_name="ann", gr_mem=list(members)))
    assert plugin_files._private_group(1000, 1000) is private
    assert plugin_files._private_group(1001, 1000) is False  # not the owner's primary group


@needs_unix
def test_plugin_file_of_another_user_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A plugin file owned by someone else (not root) is skipped."""
    directory = _plugin_dir(tmp_path)
    trap = directory / "trap.py"
    trap.write_text("raise SystemExit('must not be imported')\n")
    if os.getuid() == 0:
        os.chown(trap, 4242, -1)
        stranger = 4242
    else:  # we own the file: pretend to be someone else, who trusts root and themselves
        stranger = os.getuid()
        monkeypatch.setattr(plugins_module.os, "getuid", lambda: stranger + 1)
    assert unsafe_reason(trap) == f"owned by another user (uid {stranger})"
    host = _load_from(monkeypatch, directory)
    state, error = status(host, "trap")
    assert state == "failed" and "owned by another user" in error


# --- the CLI with a misbehaving plugin installed ---------------------------------------------

FLAKY_ALGORITHM = """\
import numpy as np
from fabricui import hookimpl
from fabricui.engine.types import CollectiveAlgorithm


class Flaky(CollectiveAlgorithm):
    name = "flaky"
    ops = ("all_reduce",)

    def applicable(self, group, op):
        return True

    def time_us(self, group, op, size_bytes, protocol):
        return np.full(np.shape(size_bytes), float("nan"))


@hookimpl
def register_collective_algorithms(register):
    register(Flaky())
"""

SLEEPY_IMPORTER = """\
import time
from fabricui import hookimpl


def parse(text):
    time.sleep(30)


@hookimpl
def register_importers(register):
    register("sleepy", parse)
"""

RAISING_STRATEGY = """\
from fabricui import hookimpl
from fabricui.engine.types import Strategy


class Boom(Strategy):
    name = "boom"

    def operations(self, model, layout):
        raise RuntimeError("kaboom")


@hookimpl
def register_strategies(register):
    register(Boom())
"""


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def installed_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    directory = tmp_path / "plugins"
    directory.mkdir()
    for name, text in (
        ("flaky", FLAKY_ALGORITHM),
        ("sleepy", SLEEPY_IMPORTER),
        ("boom", RAISING_STRATEGY),
    ):
        (directory / f"{name}.py").write_text(text)
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    return directory


def test_cli_keeps_working_and_names_the_plugin(installed_plugins: Path):
    """``collective`` with a plugin algorithm returning NaN: valid JSON from the core
    algorithms, and one stderr line naming the plugin; ``plugins`` lists it as failed."""
    code, out, err = cli("collective", "all_reduce", "-t", "dgx-h100", "--size", "1M", "--json")
    assert code == 0
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert "flaky" not in json.dumps(data)
    lines = err.splitlines()
    assert lines == [
        "fabricui: plugin flaky skipped: collective algorithm 'flaky': time_us: returned an "
        "impossible time: time must be a finite number within 0.001..1e+15 us (got nan)"
    ]
    code, out, _ = cli("plugins", "--json")
    row = next(r for r in json.loads(out)["plugins"] if r["name"] == "flaky")
    assert row["status"] == "failed" and "time_us: returned an impossible time" in row["error"]


def test_cli_importer_that_hangs_is_one_error_line(installed_plugins: Path, tmp_path: Path):
    """``import sleepy FILE``: abandoned after the budget, one error line naming the plugin."""
    source = tmp_path / "input.txt"
    source.write_text("anything\n")
    start = time.perf_counter()
    code, out, err = cli("import", "sleepy", str(source))
    assert time.perf_counter() - start < 5
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "plugin sleepy" in err and "took longer than 0.3 s" in err


def test_cli_strategy_that_raises_is_named(installed_plugins: Path):
    """``plan --strategy boom``: asked for by name, its failure is the command's one error
    line naming the plugin and the exception."""
    code, out, err = cli(
        "plan", "-m", "llama3-8b", "-t", "dgx-h100", "--tp", "2", "--strategy", "boom", "--json"
    )
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "fabricui: error: --strategy boom: plugin boom: strategy 'boom': operations: "
        "RuntimeError: kaboom"
    ]


def test_cli_unsafe_plugin_directory_warns_once(installed_plugins: Path):
    """A world-writable plugin directory: nothing from it loads, one warning line."""
    installed_plugins.chmod(0o777)
    code, out, err = cli("path", "-t", "dgx-h100", "--src", "0", "--dst", "1")
    assert code == 0 and out
    assert err.splitlines() == [
        f"fabricui: plugin {installed_plugins} skipped: plugin directory writable by "
        f"others (mode 0777): none of its plugins loaded (make it yours and "
        f"`chmod go-w {installed_plugins}`)"
    ]


def test_import_that_hangs_is_abandoned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A plugin module that sleeps at import is skipped after the budget; the rest loads."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "asleep.py").write_text("import time\ntime.sleep(30)\n")
    (extra / "awake.py").write_text(GOOD_FILE.format(name="awake"))
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(extra))
    monkeypatch.setattr(plugins_module, "entry_points", lambda: [])
    start = time.perf_counter()
    host = PluginHost(builtins=False)
    assert time.perf_counter() - start < 5
    assert list(host.interconnects()) == ["awake"]
    state, error = status(host, "asleep")
    assert state == "failed" and "took longer than 0.3 s" in error
