"""One place that loads what every view needs: the plugins and the catalog they extend."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fabricui.hwdb import Catalog, default_hwdb_dir, load_catalog
from fabricui.plugins import PluginHost, get_host


def load_catalog_with_plugins(
    extra_dirs: Iterable[Path] = (),
    host: PluginHost | None = None,
    calibration: Path | str | None = None,
) -> Catalog:
    """The built-in hardware database, plus plugin hwdb directories and link generations,
    plus the user's ``--hwdb`` directories (later ones override earlier records), with a
    calibration overlay's link figures applied last.

    Args:
        extra_dirs: User directories (``--hwdb DIR``), applied last.
        host: The plugin host (default: the process-wide one).
        calibration: A calibration overlay file (``--calibration FILE``, written by
            ``fabricui calibrate``) whose link efficiencies and latencies replace the
            database's.

    Returns:
        The catalog.

    Raises:
        HwdbError: A database file or the overlay is malformed, or the overlay names an
            unknown link generation.
    """
    host = host or get_host()
    dirs = [default_hwdb_dir(), *host.hwdb_paths(), *extra_dirs]
    links = {
        link_id: (link, f"plugin {host.contributor('link_generations', link_id)}")
        for link_id, link in host.link_generations().items()
    }
    catalog = load_catalog(dirs, extra_links=links)
    if calibration is not None:
        from fabricui.calibration_file import apply_overlay, read_overlay

        catalog = apply_overlay(catalog, read_overlay(calibration))
    return catalog
