"""One place that loads what every view needs: the plugins and the catalog they extend."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fabricui.hwdb import Catalog, default_hwdb_dir, load_catalog
from fabricui.plugins import PluginHost, get_host


def load_catalog_with_plugins(
    extra_dirs: Iterable[Path] = (), host: PluginHost | None = None
) -> Catalog:
    """The built-in hardware database, plus plugin hwdb directories and link generations,
    plus the user's ``--hwdb`` directories (later ones override earlier records).

    Args:
        extra_dirs: User directories (``--hwdb DIR``), applied last.
        host: The plugin host (default: the process-wide one).

    Returns:
        The catalog.
    """
    host = host or get_host()
    dirs = [default_hwdb_dir(), *host.hwdb_paths(), *extra_dirs]
    links = {
        link_id: (link, f"plugin {host.contributor('link_generations', link_id)}")
        for link_id, link in host.link_generations().items()
    }
    return load_catalog(dirs, extra_links=links)
