"""One place that loads what every view needs: the plugins, the catalog they extend, and the
fabric a topology spec builds (with the plugin builder its ``builder:`` key names)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.engine.evaluate import algorithms_for_env
from fabricui.errors import ConfigError, EngineError, FabricError, PluginError, exception_line
from fabricui.fabric import Fabric, build_fabric, check_fabric, most_nodes
from fabricui.hwdb import Catalog, default_hwdb_dir
from fabricui.hwdb import load_catalog as load_hwdb
from fabricui.hwdb.catalog import unknown_id_message
from fabricui.hwdb.directory import adds_no_records
from fabricui.hwdb.overlay import apply_overlay, overlay_mismatch, read_overlay
from fabricui.hwdb.resolve import resolve_topology
from fabricui.plugins import PluginHost, get_host
from fabricui.services import admission
from fabricui.services.requests import CatalogRequest, TopologyRequest

if TYPE_CHECKING:
    from fabricui.engine.training.pricing import Pricer
    from fabricui.engine.training.table import DecisionTable
    from fabricui.engine.types import CollectiveAlgorithm, TopologyBuilder
    from fabricui.model import TopologySpec


def load_catalog_with_plugins(
    extra_dirs: Iterable[Path] = (),
    host: PluginHost | None = None,
    calibration: Path | str | None = None,
    record_files: Iterable[Path] = (),
) -> Catalog:
    """The built-in hardware database, plus plugin hwdb directories and link generations,
    plus the user's ``--hwdb`` directories (later ones override earlier records), with a
    calibration overlay's link figures applied last.

    Interconnect plugins own the records of their family, so a disabled plugin's link
    generations, NICs and switches are missing; a built-in topology that needs them is
    listed in ``Catalog.unavailable`` with the plugin to enable.

    Args:
        extra_dirs: User directories (``--hwdb DIR``), applied last.
        host: The plugin host (default: the process-wide one).
        calibration: A calibration overlay file (``--calibration FILE``, written by
            ``fabricui calibrate``) whose link efficiencies and latencies replace the
            database's.
        record_files: Single record files (``hwdb validate FILE``), read after the
            directories.

    Returns:
        The catalog.

    Raises:
        HwdbError: A database file or the overlay is malformed, or the overlay names an
            unknown link generation.
    """
    host = host or get_host()
    extra = list(extra_dirs)
    files = list(record_files)
    # Without user directories the plugin host has already loaded exactly this catalog
    # (checking the plugins' hwdb directories): reuse it.
    catalog = None if extra or files else host.hwdb_catalog()
    if catalog is None:
        dirs = [default_hwdb_dir(), *host.hwdb_paths(), *extra]
        links = {
            link_id: (link, f"plugin {host.contributor('link_generations', link_id)}")
            for link_id, link in host.link_generations().items()
        }
        catalog = load_hwdb(
            dirs,
            extra_links=links,
            families=host.link_families(),
            withheld=host.withheld_hwdb(),
            record_files=files,
        )
    for directory in adds_no_records(catalog.origins.values(), extra):
        LOAD_WARNINGS.append(
            f"{directory}: adds nothing to the hardware database: "
            "its *.yaml files are empty or hold empty lists"
        )
    if calibration is not None:
        catalog = apply_overlay(catalog, read_overlay(calibration))
    return catalog


def load_catalog(request: CatalogRequest | None = None, host: PluginHost | None = None) -> Catalog:
    """The catalog a request names (``load_catalog_with_plugins`` of its directories and
    overlay).

    Raises:
        HwdbError: A database file or the overlay is malformed.
    """
    request = request or CatalogRequest()
    return load_catalog_with_plugins(request.hwdb_dirs, host, request.calibration)


def resolve_spec(request: TopologyRequest, catalog: Catalog) -> TopologySpec:
    """The checked spec a topology request names, with its node count and what-if applied.

    Raises:
        FabricError: Unknown topology, bad node count, a malformed file or what-if.
    """
    spec = resolve_topology(request.topology, catalog, request.nodes)
    if request.what_if is not None:
        spec = request.what_if.apply(spec)
        spec = generation_for_rate(spec, catalog)
    return spec


def generation_for_rate(spec: TopologySpec, catalog: Catalog) -> TopologySpec:
    """The spec with its network's link generation swapped for the one of the same family
    that has the port rate asked for (800 Gb/s InfiniBand is XDR, not NDR); unchanged when
    the generation has that rate, or no generation of the family does."""
    net = spec.net
    if net is None or not net.gbps:
        return spec
    link = catalog.links.get(net.link)
    if link is None or not link.rates_Gbps or net.gbps in link.rates_Gbps:
        return spec
    same = [
        g
        for g in catalog.links.values()
        if g.family == link.family and g.rates_Gbps and net.gbps in g.rates_Gbps
    ]
    if not same:
        return spec
    chosen = max(same, key=lambda g: (g.year or 0, g.id))
    return dataclasses.replace(spec, net=dataclasses.replace(net, link=chosen.id))


def load_fabric(
    request: TopologyRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    report_health: bool = True,
) -> Fabric:
    """Resolve and build the fabric a topology request names, with plugin builders.

    Args:
        request: Topology, node count and what-if.
        catalog: The catalog (default: the built-in database with plugins).
        host: The plugin host (default: the process-wide one).
        report_health: The command line says what the request's health files changed.

    Raises:
        FabricError: Unknown topology, bad node count, a malformed file, a builder that
            refuses the spec.
    """
    catalog = catalog or load_catalog(host=host)
    spec = resolve_spec(request, catalog)
    admit_fabric(spec, catalog)
    try:
        fabric = build_fabric_with_plugins(spec, catalog, host)
    except EngineError as exc:
        raise _advised(exc, spec, catalog) from None
    if catalog.calibration is not None:
        warning = overlay_mismatch(catalog.calibration, spec.id, fabric.generations)
        if warning is not None:
            LOAD_WARNINGS.append(warning)
    return with_health(fabric, request, catalog, host, report_health)


def check_request(request: TopologyRequest, catalog: Catalog) -> TopologySpec:
    """The spec of a request, refused as ``load_fabric`` refuses it but without building
    its fabric (tens of milliseconds on thousands of GPUs): an unknown topology or bad node
    count, more GPUs than the memory budget holds, a count or what-if the built-in builder
    refuses, each with the node count that would do. A plugin builder's spec is checked
    when it is built.

    Raises:
        FabricError: The line ``load_fabric`` raises.
    """
    spec = resolve_spec(request, catalog)
    admit_fabric(spec, catalog)
    if spec.builder is None:
        try:
            check_fabric(spec, catalog)
        except EngineError as exc:
            raise _advised(exc, spec, catalog) from None
    return spec


def _advised(error: EngineError, spec: TopologySpec, catalog: Catalog) -> EngineError:
    """The builder's refusal of ``spec`` with the node count that builds, when there is one
    to give (``structural_advice``)."""
    advice = structural_advice(spec, catalog, error.message)
    return error if advice is None else EngineError(f"{error.message}; {advice}", error.title)


#: What loading found suspect but not wrong, since the last ``drain_load_warnings``: a
#: ``--hwdb`` directory whose files hold no records, a calibration overlay applied to a
#: fabric it may not describe (``overlay_mismatch``). Bounded: a long-lived caller that
#: never drains keeps only the last few.
LOAD_WARNINGS: deque[str] = deque(maxlen=8)


def drain_load_warnings() -> list[str]:
    """The load warnings since the last call, each once, oldest first (the command line
    prints them on stderr)."""
    out = list(dict.fromkeys(LOAD_WARNINGS))
    LOAD_WARNINGS.clear()
    return out


def with_health(
    fabric: Fabric,
    request: TopologyRequest,
    catalog: Catalog,
    host: PluginHost | None = None,
    report: bool = True,
) -> Fabric:
    """The fabric as the request's health files say it is (unchanged without any);
    ``report``: the command line says what changed (the explorer says it itself).

    Raises:
        FabricError: A health file cannot be read or is not a recognised output.
    """
    if not request.health:
        return fabric
    from fabricui.services.health import overlay

    return overlay(fabric, request.health, catalog, host, report=report).fabric


def admit_fabric(spec: TopologySpec, catalog: Catalog | None = None) -> None:
    """Refuse a topology whose fabric would not fit the memory budget (one line, with a
    node count that would fit and that the topology's builder accepts).

    Args:
        spec: A checked topology spec.
        catalog: The catalog the spec's ids refer to; without it (or for a plugin
            builder's spec) the advice is the memory budget's count alone.

    Raises:
        ConfigError: Too many GPUs for the budget.
    """
    budget = admission.memory_budget()
    work = admission.Work(f"topology {spec.id}", spec.n_gpus, "GPUs", admission.GPU_BYTES)
    if work.bytes <= budget:
        return
    most = (budget - admission.BASE_BYTES) // admission.GPU_BYTES // spec.gpus_per_node
    if most < 1:
        one_node = admission.BASE_BYTES + spec.gpus_per_node * admission.GPU_BYTES
        admission.admit(work, budget, admission.raise_budget(one_node, "one node's GPUs"))
    admission.admit(work, budget, node_advice(spec, catalog, most))


def node_advice(spec: TopologySpec, catalog: Catalog | None, most: int) -> str:
    """``use --nodes N or fewer``: the largest count up to ``most`` the topology's builder
    accepts (whole scale-up domains, what its switches or torus can join), else ``most``."""
    built = None
    if catalog is not None and spec.builder is None:
        built = most_nodes(spec, catalog, most)
    if built is None:
        return f"use --nodes {most} or fewer"
    return _use_nodes(spec, built, " within the limit")


def structural_advice(spec: TopologySpec, catalog: Catalog, refusal: str) -> str | None:
    """``use --nodes N or fewer`` for a node count the built-in builder refused: the largest
    count below it that the builder accepts (``most_nodes``).

    Args:
        spec: The spec the builder refused.
        catalog: The catalog its ids refer to.
        refusal: The builder's message.

    Returns:
        The advice, or None when no smaller count builds (the refusal is not about the
        count), the spec has no node count to choose (a cluster's own graph, a plugin
        builder), or the refusal already names the fix (whole scale-up domains below the
        count, a count it names).
    """
    if spec.builder is not None:
        return None
    built = most_nodes(spec, catalog, spec.nodes)
    if built is None or built >= spec.nodes or f"--nodes {built}" in refusal:
        return None
    hosts = spec.intra.hosts_per_domain
    if hosts > 1 and spec.nodes > hosts and built == spec.nodes // hosts * hosts:
        return None  # whole domains below the count build: the refusal says to use them
    return _use_nodes(spec, built, f" from {spec.nodes} nodes or fewer")


def _is_torus(spec: TopologySpec) -> bool:
    """Whether the spec's network is a torus of chips (not every count makes one)."""
    return spec.net is not None and spec.net.layout == "torus"


def _use_nodes(spec: TopologySpec, built: int, within: str) -> str:
    """``use --nodes N or fewer`` for ``built``, the largest count the builder accepts
    (``within``: what the count was the largest under); a torus's count exactly, as not
    every smaller one makes a torus."""
    hosts = spec.intra.hosts_per_domain
    if _is_torus(spec):
        return f"use --nodes {built}, the largest torus {spec.id} builds{within}"
    if hosts > 1:
        return f"use --nodes {built} or fewer (a multiple of {hosts})"
    return f"use --nodes {built} or fewer"


def topology_builder(spec: TopologySpec, host: PluginHost | None = None) -> TopologyBuilder | None:
    """The plugin builder a spec's ``builder:`` key names, or None for the built-in builder.

    Args:
        spec: A checked topology spec.
        host: The plugin host (default: the process-wide one).

    Returns:
        The registered builder, or None when the spec names none.

    Raises:
        ConfigError: No loaded plugin registers that name (the message names the spec's
            file, the ``builder`` key and the nearest registered names).
    """
    if spec.builder is None:
        return None

    builders = (host or get_host()).topology_builders()
    builder = builders.get(spec.builder)
    if builder is not None:
        return builder
    where = spec.origin or f"topology {spec.id}"
    if not builders:
        raise ConfigError(
            f"{where}: builder: unknown topology builder {spec.builder!r} (no loaded plugin "
            "registers topology builders; see `fabricui plugins`)"
        )
    message = unknown_id_message("topology builder", spec.builder, builders)
    raise ConfigError(f"{where}: builder: {message}")


def build_fabric_with_plugins(
    spec: TopologySpec, catalog: Catalog, host: PluginHost | None = None
) -> Fabric:
    """Build the fabric of a spec: with the plugin builder its ``builder:`` key names, else
    with the built-in builder.

    Args:
        spec: A checked topology spec.
        catalog: The catalog the spec's ids refer to.
        host: The plugin host (default: the process-wide one).

    Returns:
        The fabric.

    Raises:
        ConfigError: The spec names a builder no loaded plugin registers.
        FabricError: The builder refuses the spec (its own one-line message).
        PluginError: The builder crashed or returned something that is not a fabric.
    """
    host = host or get_host()
    builder = topology_builder(spec, host)
    if builder is None:
        return build_fabric(spec, catalog)
    owner = host.contributor("topology_builders", builder.name) or "?"
    try:
        fabric = builder.build(spec, catalog)
    except FabricError:
        raise
    except Exception as exc:  # a plugin's bug: name it, never a traceback
        raise PluginError(
            f"topology builder {builder.name!r} (plugin {owner}) failed on {spec.id}: "
            f"{exception_line(exc)}"
        ) from exc
    if not isinstance(fabric, Fabric):
        raise PluginError(
            f"topology builder {builder.name!r} (plugin {owner}) returned "
            f"{type(fabric).__name__}, not a Fabric"
        )
    return fabric


def without_failed_strategies(
    table: DecisionTable, host: PluginHost | None = None
) -> DecisionTable:
    """A decision table without the rows of plugin strategies that failed while it was
    computed: their figures would read as "no communication" (the host reports each one)."""
    host = host or get_host()
    rows = tuple(r for r in table.rows if not host.failed_at_call("strategies", r.name))
    return table if len(rows) == len(table.rows) else dataclasses.replace(table, rows=rows)


def collective_algorithms(
    env: dict[str, Any] | None = None, host: PluginHost | None = None
) -> list[CollectiveAlgorithm]:
    """Every candidate collective algorithm: the engine's core ones plus the loaded plugins'
    (NVLS, SHARP ...), minus those an NCCL environment disables.

    Args:
        env: NCCL environment variables of a run (``NCCL_NVLS_ENABLE=0`` ...).
        host: The plugin host (default: the process-wide one).

    Returns:
        The candidates, in the order the engine tries them.
    """
    host = host or get_host()
    return algorithms_for_env(env, host.collective_algorithms().values())


def algorithm_choices(host: PluginHost | None = None, hierarchical: bool = False) -> list[str]:
    """What ``--algo`` takes: ``auto``, every loaded algorithm's name and, for
    ``collective`` (``hierarchical``), a framework's calls per level.

    Args:
        host: The plugin host (default: the process-wide one).
        hierarchical: Add ``hierarchical``.
    """
    from fabricui.engine.hierarchical import HIERARCHICAL

    names = ["auto", *(a.name for a in collective_algorithms(host=host))]
    return [*names, HIERARCHICAL] if hierarchical else names


def pricer(fabric: Fabric, host: PluginHost | None = None) -> Pricer:
    """A collective pricer for strategy operations on ``fabric`` with every loaded algorithm.

    Args:
        fabric: The fabric.
        host: The plugin host (default: the process-wide one).

    Returns:
        A pricer sharing one router and caching per (collective, group, size).
    """
    from fabricui.engine.training.pricing import Pricer

    return Pricer(fabric, algorithms=collective_algorithms(host=host))
