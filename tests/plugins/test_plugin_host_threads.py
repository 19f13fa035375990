"""The plugin host collects each hook category once, however many threads ask for it at
the same time (the explorer's workers do): each hook called once, a broken plugin's
failure recorded once; a hook that asks the host for another category is answered, and
one that asks for a category waiting on it is refused, not left waiting; a hook abandoned
past its budget is waited on no longer."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from fabricui import api
from fabricui.plugins import PluginHost
from tests.plugins.test_plugin_host import ToyDdp, link, make_host, make_plugin

#: Threads asking at once.
THREADS = 8


def at_once(call: Callable[[], Any]) -> list[Any]:
    """``call()`` in ``THREADS`` threads started together (a barrier); what each returned."""
    barrier = threading.Barrier(THREADS)

    def run() -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(run) for _ in range(THREADS)]
        return [future.result(timeout=30) for future in futures]


def counted(calls: list[str], name: str, body: Callable[..., None]) -> Callable[..., None]:
    """A hook that notes each call of it in ``calls``, sleeps a little, then runs ``body``."""

    def hook(register: Callable[..., None]) -> None:
        calls.append(name)
        time.sleep(0.05)  # the other threads arrive while it runs
        body(register)

    return hook


def test_threads_collecting_one_category_call_each_hook_once():
    """Eight threads ask for the strategies at once: each hook called once, one failure
    recorded for the broken plugin, and every thread gets the same strategies."""
    calls: list[str] = []

    def broken(register: Callable[..., None]) -> None:
        raise RuntimeError("boom")

    host = make_host(
        good=make_plugin("good", register_strategies=counted(calls, "good", lambda r: r(ToyDdp()))),
        bad=make_plugin("bad", register_strategies=counted(calls, "bad", broken)),
    )
    found = at_once(host.strategies)
    assert sorted(calls) == ["bad", "good"]
    assert all(result is found[0] for result in found) and list(found[0]) == ["toy-ddp"]
    assert [(f.name, f.error) for f in host.failures] == [
        ("bad", "register_strategies: RuntimeError: boom")
    ]
    assert host.describe()[1]["error"] == "register_strategies: RuntimeError: boom"


def test_threads_collecting_every_category_call_each_hook_once():
    """``collect_all`` from eight threads at once (``describe`` does it): each category's
    hook called once, whichever thread collects it."""
    calls: list[str] = []
    host = make_host(
        toy=make_plugin(
            "toy",
            register_strategies=counted(calls, "strategies", lambda r: r(ToyDdp())),
            register_link_generations=counted(calls, "links", lambda r: r(link())),
        )
    )
    at_once(host.collect_all)
    assert sorted(calls) == ["links", "strategies"] and not host.failures


def test_a_hook_may_ask_the_host_for_another_category():
    """A strategies hook that asks for the link generations, while other threads ask for
    both: answered (no category is locked while another is collected), each hook once."""
    calls: list[str] = []
    host: PluginHost

    def strategies(register: Callable[..., None]) -> None:
        if "toylink1" in host.link_generations():
            register(ToyDdp())

    host = make_host(
        toy=make_plugin(
            "toy",
            register_strategies=counted(calls, "strategies", strategies),
            register_link_generations=counted(calls, "links", lambda r: r(link())),
        )
    )
    found = at_once(lambda: (host.strategies(), host.link_generations()))
    assert sorted(calls) == ["links", "strategies"] and not host.failures
    assert all(list(strategies) == ["toy-ddp"] for strategies, _ in found)


def test_a_hook_asking_for_a_category_that_waits_on_it_is_refused():
    """A strategies hook asking for the strategies (its own category), and a link
    generations hook asking for the strategies whose hook asks for the link generations:
    each refused at once, recorded once, where they would wait on each other for ever."""
    host: PluginHost

    def own(register: Callable[..., None]) -> None:
        host.strategies()

    host = make_host(toy=make_plugin("toy", register_strategies=own))
    at_once(host.strategies)
    assert [f.error for f in host.failures] == [
        "register_strategies: asked the plugin host for strategies, whose collection waits "
        "on this call (a cycle)"
    ]

    def strategies(register: Callable[..., None]) -> None:
        host.link_generations()
        register(ToyDdp())

    def links(register: Callable[..., None]) -> None:
        host.strategies()
        register(link())

    host = make_host(
        toy=make_plugin("toy", register_strategies=strategies, register_link_generations=links)
    )
    at_once(host.strategies)
    assert [f.error for f in host.failures] == [
        "register_link_generations: asked the plugin host for strategies, whose collection "
        "waits on this call (a cycle)"
    ]
    assert list(host.strategies()) == ["toy-ddp"] and host.link_generations() == {}


class LateDdp(ToyDdp):
    name = "late-ddp"


def in_thread(call: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``call()`` in a daemon thread (a deadlock fails the test instead of hanging
    it); returns what waits for its result (at most 10 s) and returns it."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result() -> Any:
        thread.join(10)
        assert not thread.is_alive(), "still waiting after 10 s (a deadlock)"
        if "error" in box:
            raise box["error"]
        return box["result"]

    return result


def test_a_hook_abandoned_while_it_waits_is_waited_on_no_longer():
    """A strategies hook asks for the link generations, whose hook is slow, and is abandoned
    past its budget; the link generations hook then asks for the strategies, still being
    collected (the next plugin's hook runs): it waits for them instead of being refused as
    a cycle (nothing waits on the abandoned hook any more), and nothing waits for ever."""
    host: PluginHost
    abandoned = threading.Event()  # the next strategies hook runs: the first was abandoned
    asking = threading.Event()  # the link generations hook asks for the strategies
    seen: list[list[str]] = []

    def first(register: Callable[..., None]) -> None:
        host.timeout_s = None  # the hooks called from here on have no budget
        host.link_generations()

    def second(register: Callable[..., None]) -> None:
        abandoned.set()
        asking.wait(5)
        time.sleep(0.05)  # the link generations hook asks while the strategies are collected
        register(ToyDdp())

    def links(register: Callable[..., None]) -> None:
        abandoned.wait(5)
        asking.set()
        seen.append(list(host.strategies()))
        register(link())

    host = make_host(
        first=make_plugin("first", register_strategies=first),
        second=make_plugin("second", register_strategies=second),
        links=make_plugin("links", register_link_generations=links),
    )
    host.timeout_s = 0.2
    strategies = in_thread(host.strategies)
    assert list(strategies()) == ["toy-ddp"]
    assert list(in_thread(host.link_generations)()) == ["toylink1"]
    assert seen == [["toy-ddp"]]
    assert [(f.name, f.error) for f in host.failures] == [
        (
            "first",
            "register_strategies: took longer than 0.2 s (FABRICUI_PLUGIN_TIMEOUT_S); abandoned",
        )
    ]


def test_a_hook_abandoned_while_it_collects_still_waits_on_that_collection():
    """A strategies hook abandoned past its budget while it collects the link generations
    still waits for their hook: that hook asking for the link generations is refused (a
    cycle), and the link generations are collected without it."""
    host: PluginHost
    abandoned = threading.Event()

    def first(register: Callable[..., None]) -> None:
        host.timeout_s = None
        host.link_generations()

    def second(register: Callable[..., None]) -> None:
        abandoned.set()
        register(ToyDdp())

    def links(register: Callable[..., None]) -> None:
        abandoned.wait(5)
        host.link_generations()

    host = make_host(
        first=make_plugin("first", register_strategies=first),
        second=make_plugin("second", register_strategies=second),
        links=make_plugin("links", register_link_generations=links),
        good=make_plugin("good", register_link_generations=lambda register: register(link())),
    )
    host.timeout_s = 0.2
    assert list(in_thread(host.strategies)()) == ["toy-ddp"]
    assert list(in_thread(host.link_generations)()) == ["toylink1"]
    assert [(f.name, f.error) for f in host.failures] == [
        (
            "links",
            "register_link_generations: asked the plugin host for link_generations, "
            "whose collection waits on this call (a cycle)",
        ),
        (
            "first",
            "register_strategies: took longer than 0.2 s (FABRICUI_PLUGIN_TIMEOUT_S); abandoned",
        ),
    ]


def test_register_while_a_thread_collects_keeps_no_stale_result():
    """``register()`` while a thread collects the strategies: that collection's result (made
    without the new plugin) is what that thread gets but is not kept; a thread waiting for
    it and the next call collect again, the new plugin's strategy in; a broken plugin's
    failure is recorded once."""
    entered, proceed = threading.Event(), threading.Event()

    def slow(register: Callable[..., None]) -> None:
        entered.set()
        proceed.wait(5)
        register(ToyDdp())

    def broken(register: Callable[..., None]) -> None:
        raise RuntimeError("boom")

    host = make_host(
        slow=make_plugin("slow", register_strategies=slow),
        bad=make_plugin("bad", register_strategies=broken),
    )
    first = in_thread(host.strategies)
    assert entered.wait(5)
    host.register(make_plugin("late", register_strategies=lambda register: register(LateDdp())))
    waiting = in_thread(host.strategies)
    proceed.set()
    assert list(first()) == ["toy-ddp"]  # the plugins there were when it asked
    assert list(waiting()) == list(host.strategies()) == ["toy-ddp", "late-ddp"]
    assert [(f.name, f.error) for f in host.failures] == [
        ("bad", "register_strategies: RuntimeError: boom")
    ]
    assert [r["error"] for r in host.describe()] == [
        None,
        "register_strategies: RuntimeError: boom",
        None,
    ]


def test_a_hook_loading_the_catalog_is_answered_or_refused_with_no_budget():
    """Third-party hooks re-enter the host through ``fabricui.api`` (``load_catalog`` collects
    the plugins' hwdb paths, which need the link generations): from a strategies hook it is
    answered; from a link generations hook it is a cycle, refused at once even with no time
    budget (where it would wait for ever)."""
    host: PluginHost
    seen: list[bool] = []

    def strategies(register: Callable[..., None]) -> None:
        seen.append("toylink1" in api.load_catalog(host=host).links)
        register(ToyDdp())

    def links(register: Callable[..., None]) -> None:
        register(link())
        api.load_catalog(host=host)

    host = make_host(
        toy=make_plugin("toy", register_strategies=strategies),
        links=make_plugin("links", register_link_generations=links),
    )
    host.timeout_s = None
    assert list(in_thread(host.strategies)()) == ["toy-ddp"]
    assert seen == [False]  # the links hook failed, so its link is out
    assert [(f.name, f.error) for f in host.failures] == [
        (
            "links",
            "register_link_generations: asked the plugin host for link_generations, whose "
            "collection waits on this call (a cycle)",
        )
    ]


def register_from_threads(host: PluginHost) -> list[tuple[bool, bool]]:
    """Each of ``THREADS`` threads at once registers a plugin named ``same`` and one under a
    name of its own; what each ``register()`` returned, per thread."""
    slots = iter(range(THREADS))
    slot_lock = threading.Lock()

    def register_both() -> tuple[bool, bool]:
        with slot_lock:
            slot = next(slots)
        return (
            host.register(make_plugin("same"), name="same"),
            host.register(make_plugin(f"own-{slot}"), name=f"own-{slot}"),
        )

    return at_once(register_both)


def test_threads_registering_one_name_at_once_get_one_winner_and_named_refusals():
    """``register()`` from several threads at once under one name: one plugin holds it, each
    other is refused in the host's own words (not pluggy's), and plugins under their own
    names all load (repeated: the race is in the time between checking and taking a name)."""
    for _ in range(10):
        host = make_host()
        results = register_from_threads(host)
        assert sum(won for won, _ in results) == 1
        assert all(loaded for _, loaded in results)
        assert [f.error for f in host.failures] == ["the name is taken by plugin same"] * (
            THREADS - 1
        )
