"""Turn a ``--topology`` argument (built-in name or YAML file) into a checked spec."""

from __future__ import annotations

from pathlib import Path

from fabricui.errors import ConfigError
from fabricui.hwdb.catalog import Catalog, unknown_id_message
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import read_yaml
from fabricui.model import TopologySpec
from fabricui.vocabulary import DEFAULT_TOPOLOGY as DEFAULT_TOPOLOGY


def _looks_like_path(text: str) -> bool:
    return "/" in text or text.endswith((".yaml", ".yml")) or Path(text).is_file()


def resolve_topology(name: str, catalog: Catalog, nodes: int | None = None) -> TopologySpec:
    """A topology spec from a built-in name or a YAML file path.

    Args:
        name: Built-in id (``dgx-h100-pod``, also as ``DGX-H100-Pod``) or a path to a
            topology YAML file.
        catalog: The hardware database.
        nodes: Optional node count overriding the spec's (``--nodes N``).

    Returns:
        The checked spec.

    Raises:
        HwdbError: The file is malformed or refers to unknown hardware (a
            ``NeedsPluginError`` when a disabled plugin provides it).
        ConfigError: Unknown built-in name, a built-in that needs a disabled plugin (the
            message names it), or ``nodes`` is invalid for this topology.
    """
    if name in catalog.topologies:
        spec = catalog.topologies[name]
    elif name in catalog.unavailable:
        raise ConfigError(catalog.unavailable[name])
    elif ("topologies", name) in catalog.withheld:
        reason = catalog.withheld[("topologies", name)]
        raise ConfigError(f"topology {name} {reason}; enable that plugin to use it")
    elif _looks_like_path(name):
        path = Path(name)
        spec = parse_topology(read_yaml(path), catalog, default_id=path.stem)
    elif (spelled := catalog.spelled("topologies", name)) is not None:
        spec = catalog.topologies[spelled]  # the id in other case or separators (DGX-H100)
    else:
        raise ConfigError(
            unknown_id_message("topology", name, catalog.topologies) + "; or give a YAML file path"
        )
    if nodes is None:
        return spec
    if nodes < 1:
        raise ConfigError(f"--nodes must be at least 1 (got {nodes})")
    if not spec.nodes_settable:
        raise ConfigError(f"topology {spec.id} has a fixed node count ({spec.nodes})")
    if nodes > 1 and spec.net is None:
        raise ConfigError(
            f"topology {spec.id} has no network (net: null); --nodes {nodes} needs one"
        )
    return spec.with_nodes(nodes)
