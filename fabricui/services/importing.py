"""``import``: read what a machine printed, run the importer for its format (built-in or a
plugin's), check what the importer returned, and turn a parsed node into a topology spec
that is known to load before it is written."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from fabricui.errors import ConfigError, FabricError, HwdbError, exception_line, unknown_id_message
from fabricui.files import check_target, read_bounded
from fabricui.importers.cluster_spec import build_cluster_spec, render_cluster_yaml
from fabricui.importers.common import NodeLayout, ParseError, clean_text, detect
from fabricui.importers.fabric_graph import SwitchGraph
from fabricui.importers.guid_names import apply_names, parse_names
from fabricui.importers.host_listing import HostPart, split_hosts
from fabricui.importers.hostlist import expand
from fabricui.importers.nvlink_domains import MAX_TRAYS, domains_from_trays, parse_domains
from fabricui.importers.reading import read_output
from fabricui.importers.spec import build_spec, parse_net, render_yaml
from fabricui.plugins import get_host
from fabricui.services.importer_plugin import importers_missing
from fabricui.services.requests import CatalogRequest

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost

#: Largest input read [bytes]; topology outputs are a few KiB.
MAX_INPUT_BYTES = 64 * 2**20
#: Largest total of a folder of per-tray ``nvidia-smi -q`` outputs read by ``--domains``
#: [bytes] (a tray's full output is ~100 KB; 10,000 trays fit).
MAX_DOMAIN_BYTES = 2 * 2**30
#: File name endings dropped to get a tray's host name (``gb200-01.txt`` -> ``gb200-01``).
_OUTPUT_SUFFIXES = (".txt", ".log", ".out", ".q", ".nvsmi")
#: Formats whose result is a switch graph (``--names`` and ``--domains`` apply).
_CLUSTER_OPTIONS = "--names and --domains apply to ibnetdiscover, iblinkinfo and slurm-topology"


@dataclass(frozen=True)
class ImportRequest:
    """What ``fabricui import`` was asked."""

    format: str
    """Importer name (``nvidia-smi``, ``ibstat`` ... or a plugin's)."""
    file: str
    """The saved output, or ``-`` for standard input."""
    as_json: bool = False
    """Show the parsed data as JSON instead of a summary."""
    output: str | None = None
    """Write a topology spec here (``-``: standard output)."""
    force: bool = False
    """Let ``output`` replace an existing file."""
    nodes: int | None = None
    """Replicate the node this many times in the spec."""
    net: str | None = None
    """``LINK:GBPS`` of the spec's network."""
    gpu: str | None = None
    """Catalog GPU id of the spec."""
    hwdb_dirs: tuple[Path, ...] = ()
    """User hwdb directories for the spec's catalog."""
    node: str | None = None
    """Cluster formats: what one host is (a topology id or a node spec file)."""
    hosts: str | None = None
    """Cluster formats: the hosts that become nodes (a Slurm hostlist)."""
    names: str | None = None
    """Cluster formats: a GUID-to-hostname map naming unnamed adapters."""
    domains: str | None = None
    """Cluster formats: each tray's NVLink domain (a folder of ``nvidia-smi -q`` outputs,
    pdsh-prefixed ``nvidia-smi -q``, ``HOST CLUSTERUUID [CLIQUEID]`` lines, NMX JSON)."""


@dataclass(frozen=True)
class Imported:
    """What an importer made of the input, checked."""

    origin: str
    """The input's name (path or ``<stdin>``)."""
    result: Any
    """The importer's own result object."""
    warnings: tuple[str, ...]
    """What the input does not say or says oddly."""
    notes: tuple[str, ...]
    """Remarks shown under the summary."""
    shown: str
    """The summary, or the JSON text when asked."""


@dataclass(frozen=True)
class WrittenSpec:
    """A topology spec made from an import."""

    text: str
    """The YAML."""
    summary: str
    """One line saying what it holds."""
    warnings: tuple[str, ...]
    """Guesses the mapping made."""


def importer_table(host: PluginHost | None = None) -> dict[str, Callable[..., Any]]:
    """Importers by format name, as the plugin host has them (built-ins arrive through the
    ``fabricui_importers`` plugin like any other; disabling it removes them).

    Returns:
        Format name -> ``parse(text)``.
    """
    return dict((host or get_host()).importers())


def require_importer(fmt: str, host: PluginHost | None = None) -> None:
    """Raise unless an importer reads ``fmt``.

    Raises:
        ConfigError: Unknown format (names the nearest ones), or the built-in importers
            plugin is not loaded (says so, and where to look).
    """
    table = importer_table(host)
    if fmt in table:
        return
    missing = importers_missing(host)
    if missing is not None:
        raise ConfigError(f"cannot read {fmt!r} output: {missing} (see `fabricui plugins --all`)")
    raise ConfigError(unknown_id_message("import format", fmt, table))


def importer_label(name: str, host: PluginHost | None = None) -> str:
    """``the NAME importer (plugin P)`` for messages."""
    owner = (host or get_host()).contributor("importers", name)
    builtin = owner is None or owner == "importers"
    return f"the {name} importer" + ("" if builtin else f" (plugin {owner})")


def check_request(request: ImportRequest) -> None:
    """Refuse option combinations that cannot work, before reading anything.

    Raises:
        ConfigError: ``-o`` options without ``-o``, ``--json`` with ``-o -``, or an output
            file that exists without ``--force``.
    """
    output = request.output
    if not output and (
        request.force or request.nodes is not None or request.net or request.gpu or request.node
    ):
        raise ConfigError("--force, --nodes, --net, --gpu and --node only apply with -o FILE")
    if request.hosts and not output:
        raise ConfigError("--hosts only applies with -o FILE")
    if request.domains and not output:
        raise ConfigError("--domains only applies with -o FILE")
    if output == "-" and request.as_json:
        raise ConfigError("--json and -o - both write to stdout: give -o a file name")
    if output and output != "-":
        check_target(Path(output), request.force)


def read_input(name: str) -> tuple[str, str]:
    """The text of FILE (``-`` = stdin) and the name to use in messages.

    Raises:
        ParseError: Missing, not a regular file, unreadable, binary, not UTF-8, too large
            or empty.
    """
    return read_output(name, MAX_INPUT_BYTES)


def detected_request(request: ImportRequest, text: str, origin: str) -> ImportRequest:
    """The request with the format the text was recognised as (``import FILE``).

    Raises:
        ParseError: Not recognised, or recognised as something no importer reads.
    """
    try:
        fmt = detect(clean_text(text))
    except ParseError as exc:
        refuse_listing(text, origin)  # many hosts' outputs: say so, not "cannot tell"
        raise ParseError(f"{origin}: {exc.message}") from None
    return dataclasses.replace(request, format=fmt)  # import_text refuses a listing too


def refuse_listing(text: str, origin: str) -> None:
    """Refuse a ``pdsh``/``clush``/``dshbak`` listing of several hosts' outputs, some host's
    part of which is an output an importer reads: ``import`` reads one host's output (read
    whole, the hosts' ports would be taken for one host's).

    Raises:
        ParseError: ``text`` is such a listing (the message says what reads it).
    """
    try:
        parts = split_hosts(clean_text(text))
    except FabricError:
        return
    hosts = list(dict.fromkeys(p.host for p in parts or ()))
    if len(hosts) < 2:
        return
    formats = _part_formats(parts or [])
    if not formats:
        return
    raise ParseError(
        f"{origin}: {len(hosts)} hosts' {' and '.join(formats)} outputs (a pdsh, clush or "
        f"dshbak listing: {', '.join(hosts[:3])}{' ...' if len(hosts) > 3 else ''}): "
        "`--health FILE` reads it host by host; `fabricui import` reads one host's output"
    )


#: Hosts' parts of a listing whose format is looked at to name it.
_PARTS_NAMED = 16


def _part_formats(parts: list[HostPart]) -> list[str]:
    """The formats of the first hosts' parts of a listing that an importer reads (a host the
    shell could not reach printed none); empty when none is."""
    formats: list[str] = []
    looked = 0
    for part in parts:
        if looked >= _PARTS_NAMED and formats:
            break
        looked += 1
        try:
            fmt = detect(clean_text(part.text))
        except FabricError:
            continue
        if fmt not in formats:
            formats.append(fmt)
    return formats


def import_text(
    request: ImportRequest, text: str, origin: str, host: PluginHost | None = None
) -> Imported:
    """Run the request's importer on ``text`` and check what it returned.

    Raises:
        ConfigError: Unknown format (names the nearest ones).
        ParseError: The input is not that format, or a plugin importer broke.
    """
    require_importer(request.format, host)
    refuse_listing(text, origin)
    table = importer_table(host)
    try:
        result = table[request.format](text)
    except ParseError as exc:
        raise ParseError(exc.located(origin)) from None
    except FabricError as exc:
        raise ParseError(f"{origin}: {exc.message}") from None
    except Exception as exc:  # a plugin importer's bug (the plugin host recorded it)
        failed = f"{importer_label(request.format, host)} failed: {exception_line(exc)}"
        raise ParseError(f"{origin}: {failed}") from None
    if request.names:
        _apply_names(result, request.names)
    warnings, notes, shown = _checked_result(result, request.format, request.as_json, host)
    return Imported(origin, result, tuple(warnings), tuple(notes), shown)


def _text_list(value: Any) -> list[str] | None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return [" ".join(v.split()) for v in value]


def _checked_result(
    result: Any, name: str, as_json: bool, host: PluginHost | None
) -> tuple[list[str], list[str], str]:
    """(warnings, notes, what to print) of an importer's result, checked: a plugin importer
    may return anything.

    Raises:
        ParseError: ``warnings``/``notes`` are not lists of text, ``to_json()`` is not JSON
            (NaN included) or ``summary()`` is not text.
    """

    def broken(problem: str) -> ParseError:
        return ParseError(f"{importer_label(name, host)} returned {problem}")

    warnings = _text_list(getattr(result, "warnings", []))
    notes = _text_list(getattr(result, "notes", []))
    if warnings is None or notes is None:
        return_type = type(result).__name__
        raise broken(f"a {return_type} whose warnings or notes are not lists of text")
    try:
        if as_json:
            to_json = getattr(result, "to_json", None)
            data = to_json() if callable(to_json) else result
            return warnings, notes, json.dumps(data, indent=2, allow_nan=False)
        summary = getattr(result, "summary", None)
        if not callable(summary):
            return warnings, notes, json.dumps(result, indent=2, default=str, allow_nan=False)
        text = summary()
    except FabricError:
        raise
    except (TypeError, ValueError) as exc:
        raise broken(f"data that is not JSON ({exception_line(exc)})") from None
    except Exception as exc:  # the result's own method failed
        raise broken(f"a result that fails: {exception_line(exc)}") from None
    if not isinstance(text, str):
        raise broken(f"a summary that is {type(text).__name__}, not text")
    return warnings, notes, text


def spec_id(output: str) -> str:
    """The topology id a spec written to ``output`` gets (its file name, tidied)."""
    if output == "-":
        return "imported"
    stem = re.sub(r"[^a-z0-9._-]+", "-", Path(output).stem.lower()).strip("-.")
    return stem or "imported"


def make_spec(
    request: ImportRequest,
    imported: Imported,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
) -> WrittenSpec:
    """Turn the parsed node into a topology spec, checked by loading and building it.

    Raises:
        ParseError: The input has no GPUs, or a plugin's layout is broken.
        HwdbError: The spec made does not load (a bug in the mapping).
    """
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import parse_yaml

    result, origin = imported.result, imported.origin
    layout_of = getattr(result, "layout", None)
    if not callable(layout_of):
        net = getattr(result, "suggested_net", None)
        suggested = net() if callable(net) else None
        hint = f"; its NICs suggest --net {suggested}" if isinstance(suggested, str) else ""
        raise ParseError(
            f"{origin}: {request.format} output has "
            + ("no GPU link matrix" if getattr(result, "gpus", None) else "no GPUs")
            + ", so it cannot become a topology spec "
            f"(-o needs nvidia-smi, nccl-xml or rocm-smi output){hint}"
        )
    try:
        layout = layout_of()
    except FabricError:
        raise
    except Exception as exc:  # a plugin importer's result
        failed = f"{importer_label(request.format, host)} failed: layout(): {exception_line(exc)}"
        raise ParseError(failed) from None
    if not isinstance(layout, NodeLayout):
        raise ParseError(
            f"{importer_label(request.format, host)} returned a layout() that is "
            f"{type(layout).__name__}, not a NodeLayout"
        )
    if catalog is None:
        from fabricui.services.session import load_catalog

        catalog = load_catalog(CatalogRequest(request.hwdb_dirs), host)
    net = parse_net(request.net, catalog) if request.net else None
    output = request.output or "-"
    try:
        draft = build_spec(
            layout,
            catalog,
            gpu=request.gpu,
            nodes=request.nodes if request.nodes is not None else 1,
            net=net,
            spec_id=spec_id(output),
            origin=origin,
            command=f"fabricui import {request.format} {origin}",
        )
    except ParseError as exc:
        raise ParseError(f"{origin}: {exc.message}") from None
    text = render_yaml(draft, list(imported.warnings))
    name = "<stdout>" if output == "-" else output
    try:
        spec = parse_topology(parse_yaml(text, name), catalog, default_id=spec_id(output))
        build_fabric(spec, catalog)
    except FabricError as exc:  # the mapping produced something the builder refuses: our bug
        raise HwdbError(f"the topology made from {origin} does not load: {exc.message}") from None
    return WrittenSpec(text, draft.summary(), tuple(draft.warnings))


def _apply_names(result: Any, path: str) -> None:
    """Rename a switch graph's unnamed adapters from the ``--names`` map (in place).

    Raises:
        ConfigError: Not a switch graph.
        ParseError: The map cannot be read or names nothing.
    """
    if not isinstance(result, SwitchGraph):
        raise ConfigError(_CLUSTER_OPTIONS)
    data, origin = read_bounded(path, MAX_INPUT_BYTES, ParseError, "a GUID-to-hostname map")
    text = data.decode("utf-8", errors="replace")
    try:
        names = parse_names(text, f"--names {origin}")
    except ParseError as exc:
        raise ParseError(exc.message) from None
    apply_names(result, names, f"--names {Path(origin).name}")


def read_domains(path: str) -> Any:
    """The NVLink domain of every tray from ``--domains PATH``: a folder of per-tray
    ``nvidia-smi -q`` outputs (file name = host name, ``.txt``/``.log``/``.out`` dropped),
    or one file (``importers.nvlink_domains.parse_domains``).

    Returns:
        The ``DomainMap``.

    Raises:
        ParseError: Unreadable, too large, or not a domain source (one line).
    """
    folder = Path(path)
    if not folder.is_dir():
        data, origin = read_bounded(
            path, MAX_DOMAIN_BYTES, ParseError, "an NVLink domain source (file or folder)"
        )
        try:
            return parse_domains(data.decode("utf-8", errors="replace"), origin)
        except ParseError as exc:
            raise ParseError(f"--domains {exc.message}") from None
    outputs: dict[str, str] = {}
    total = 0
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise ParseError(f"--domains {path}: cannot list ({exc.strerror or exc})") from None
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
            continue
        if len(outputs) >= MAX_TRAYS:
            raise ParseError(f"--domains {path}: more than {MAX_TRAYS:,} files")
        data, _ = read_bounded(entry.path, MAX_INPUT_BYTES, ParseError, "nvidia-smi -q output")
        total += len(data)
        if total > MAX_DOMAIN_BYTES:
            raise ParseError(f"--domains {path}: more than {MAX_DOMAIN_BYTES // 2**30} GiB")
        host = entry.name
        for suffix in _OUTPUT_SUFFIXES:
            if host.endswith(suffix) and len(host) > len(suffix):
                host = host[: -len(suffix)]
                break
        outputs[host] = data.decode("utf-8", errors="replace")
    try:
        return domains_from_trays(outputs, f"nvidia-smi -q of {len(outputs)} tray(s) ({path})")
    except ParseError as exc:
        raise ParseError(f"--domains {path}: {exc.message}") from None


def is_cluster(imported: Imported) -> bool:
    """Whether the import is a whole cluster's switch graph (ibnetdiscover, iblinkinfo,
    slurm-topology), which ``-o`` joins with one node's spec."""
    return isinstance(imported.result, SwitchGraph)


def check_cluster_request(request: ImportRequest, imported: Imported) -> None:
    """Refuse options that do not apply to this import, before any slow work.

    Raises:
        ConfigError: ``--nodes`` with a cluster, ``-o`` without ``--node``, or ``--node``/
            ``--hosts`` with a format that is not a cluster's.
    """
    if not is_cluster(imported):
        if request.node or request.hosts:
            raise ConfigError(f"--node and --hosts apply to cluster formats, not {request.format}")
        if request.domains:
            raise ConfigError(_CLUSTER_OPTIONS)
        return
    if request.nodes is not None:
        raise ConfigError(
            f"--nodes does not apply to {request.format}: the cluster's hosts are its nodes"
        )
    if request.output and not request.node:
        raise ConfigError(
            f"-o with {request.format} needs --node NODE: what one host is, a reference "
            "topology (e.g. dgx-a100, see `fabricui topologies`) or a node spec file from "
            "`fabricui import nvidia-smi ... -o` or `fabricui probe`"
        )


def make_cluster_spec(
    request: ImportRequest,
    imported: Imported,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
) -> WrittenSpec:
    """The cluster spec of an imported switch graph and ``--node``: real switch names and
    cables (``importers.cluster_spec``), checked by building it before it is written.

    Raises:
        ConfigError: Bad ``--node``, ``--hosts``, ``--net`` or ``--gpu``.
        ParseError: Nothing in the graph to build a cluster from.
        HwdbError: The spec made does not load (a bug, reported as one line).
    """
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import parse_yaml

    if catalog is None:
        from fabricui.services.session import load_catalog

        catalog = load_catalog(CatalogRequest(request.hwdb_dirs), host)
    origin = imported.origin
    try:
        node = resolve_topology(str(request.node), catalog)
    except FabricError as exc:
        raise ConfigError(f"--node {request.node}: {exc.message}") from None
    if request.gpu is not None and request.gpu not in catalog.gpus:
        raise ConfigError(f"--gpu: {unknown_id_message('gpu', request.gpu, catalog.gpus)}")
    try:
        hosts = expand(request.hosts) if request.hosts else None
    except ParseError as exc:
        raise ConfigError(f"--hosts: {exc.message}") from None
    net = parse_net(request.net, catalog) if request.net else None
    domains = read_domains(request.domains) if request.domains else None
    output = request.output or "-"
    ident = spec_id(output)
    try:
        draft = build_cluster_spec(
            imported.result,
            node,
            catalog,
            spec_id=ident,
            origin=Path(origin).name,
            command=f"fabricui import {request.format} {origin} --node {request.node}",
            hosts=hosts,
            net=net,
            gpu=request.gpu,
            domains=domains,
        )
    except ParseError as exc:
        raise ParseError(f"{origin}: {exc.message}") from None
    text = render_cluster_yaml(draft, list(imported.warnings))
    name = "<stdout>" if output == "-" else output
    try:
        spec = parse_topology(parse_yaml(text, name), catalog, default_id=ident)
        build_fabric(spec, catalog)
    except FabricError as exc:
        raise HwdbError(f"the cluster made from {origin} does not load: {exc.message}") from None
    summary = (
        f"{draft.summary()}; try `fabricui path --topology {output} --src 0 "
        f"--dst {spec.n_gpus - 1}`"
    )
    return WrittenSpec(text, summary, tuple(draft.warnings))
