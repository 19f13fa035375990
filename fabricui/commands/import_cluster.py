"""``fabricui import FORMAT FILE -o cluster.yaml --node NODE``: a whole cluster as a topology spec.

For the cluster formats (``ibnetdiscover``, ``iblinkinfo``, ``slurm-topology``) ``-o`` joins
the imported switch graph with one node's spec (``--node``: a reference topology id or a
topology file) into a spec with the real switches and cables (``importers.cluster_spec``).
The spec is parsed and built before it is written, so a file that exists loads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fabricui.errors import ConfigError, FabricError, HwdbError
from fabricui.importers.fabric_graph import SwitchGraph


def check_cluster_args(args: argparse.Namespace, graph: SwitchGraph) -> None:
    """Refuse options that do not apply to a cluster import, before any slow work.

    Raises:
        ConfigError: ``--nodes`` given, or ``-o`` without ``--node``.
    """
    if args.nodes is not None:
        raise ConfigError(
            f"--nodes does not apply to {args.format}: the cluster's hosts are its nodes"
        )
    if args.output and not args.node:
        raise ConfigError(
            f"-o with {args.format} needs --node NODE: what one host is, a reference topology "
            "(e.g. dgx-a100, see `fabricui topologies`) or a node spec file from "
            "`fabricui import nvidia-smi ... -o` or `fabricui probe`"
        )


def write_cluster_spec(
    args: argparse.Namespace, graph: SwitchGraph, origin: str, gaps: list[str], spec_id: str
) -> None:
    """Build the cluster spec of ``graph`` and ``--node``, check that it builds, write it.

    Args:
        args: The parsed ``import`` arguments (``node``, ``hosts``, ``net``, ``gpu``,
            ``output``, ``force``, ``hwdb``).
        graph: The imported switch graph.
        origin: Input name, for messages and the description.
        gaps: The import's warnings (written into the file).
        spec_id: The spec's id.

    Raises:
        ConfigError: Bad ``--node``, ``--hosts``, ``--net`` or ``--gpu``.
        ParseError: Nothing in the graph to build a cluster from.
        HwdbError: The spec made does not load (a bug, reported as one line).
    """
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.catalog import unknown_id_message
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import parse_yaml
    from fabricui.importers.cluster_spec import build_cluster_spec, render_cluster_yaml
    from fabricui.importers.common import ParseError
    from fabricui.importers.hostlist import expand
    from fabricui.importers.spec import parse_net, write_spec
    from fabricui.services.session import load_catalog_with_plugins

    catalog = load_catalog_with_plugins(getattr(args, "hwdb", []) or [])
    try:
        node = resolve_topology(args.node, catalog)
    except FabricError as exc:
        raise ConfigError(f"--node {args.node}: {exc.message}") from None
    if args.gpu is not None and args.gpu not in catalog.gpus:
        raise ConfigError(f"--gpu: {unknown_id_message('gpu', args.gpu, catalog.gpus)}")
    try:
        hosts = expand(args.hosts) if args.hosts else None
    except ParseError as exc:
        raise ConfigError(f"--hosts: {exc.message}") from None
    net = parse_net(args.net, catalog) if args.net else None
    output = args.output
    command = f"fabricui import {args.format} {origin} --node {args.node}"
    try:
        draft = build_cluster_spec(
            graph,
            node,
            catalog,
            spec_id=spec_id,
            origin=Path(origin).name,
            command=command,
            hosts=hosts,
            net=net,
            gpu=args.gpu,
        )
    except ParseError as exc:
        raise ParseError(f"{origin}: {exc.message}") from None
    text = render_cluster_yaml(draft, gaps)
    name = "<stdout>" if output == "-" else output
    try:
        spec = parse_topology(parse_yaml(text, name), catalog, default_id=spec_id)
        build_fabric(spec, catalog)
    except FabricError as exc:
        raise HwdbError(f"the cluster made from {origin} does not load: {exc.message}") from None
    for line in draft.warnings:
        print(f"fabricui: warning: {line}", file=sys.stderr)
    if output == "-":
        sys.stdout.write(text)
        return
    write_spec(Path(output), text, force=args.force)
    stream = sys.stderr if args.json else sys.stdout
    print(
        f"wrote {output}: {draft.summary()}; try `fabricui path --topology {output} --src 0 "
        f"--dst {spec.n_gpus - 1}`",
        file=stream,
    )
