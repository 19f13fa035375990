"""What a hardware-database directory holds before it is read: the YAML files a load sees
(record files at its top level, topology files in ``topologies/``), why a directory with
none of them adds nothing, and whether a record's origin lies in it. Imports only ``os``
and ``pathlib``: ``--hwdb`` is checked with it before the catalog code loads."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

#: Other files a directory's listing names at most, in a message.
_SHOWN = 3


def yaml_files(directory: Path) -> list[Path]:
    """The files a catalog load reads from ``directory``: ``*.yaml`` at its top level, then
    ``topologies/*.yaml`` (empty when it cannot be listed)."""
    try:
        return sorted(directory.glob("*.yaml")) + sorted((directory / "topologies").glob("*.yaml"))
    except OSError:
        return []


def nothing_to_read(directory: Path) -> str | None:
    """Why a load of ``directory`` would read no YAML file at all, in words that end a
    ``DIR: holds no records: ...`` line; None when it has one to read.

    Names where the YAML is when it is somewhere a load does not look (a subdirectory,
    ``.yml`` files) and otherwise what the directory holds.
    """
    if yaml_files(directory):
        return None
    try:
        entries = sorted(directory.iterdir())
    except OSError as exc:
        return f"cannot list it ({exc.strerror or exc})"
    if not entries:
        return "the directory is empty"
    yml = [p.name for p in entries if p.suffix == ".yml" and p.is_file()]
    if yml:
        return f"only *.yaml files are read ({', '.join(yml[:_SHOWN])} end in .yml)"
    for sub in (p for p in entries if p.is_dir() and p.name != "topologies"):
        try:
            nested = next(iter(sorted(sub.rglob("*.yaml"))), None)
        except OSError:
            nested = None
        if nested is not None:
            return (
                f"no *.yaml file at its top level ({nested.relative_to(directory)} is in a "
                "subdirectory: record files go at the top level, topology files in topologies/)"
            )
    names = [p.name + ("/" if p.is_dir() else "") for p in entries]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return f"no *.yaml file in it (it holds {', '.join(names[:_SHOWN])}{more})"


def comes_from(origin: str, target: Path) -> bool:
    """True when a record's ``origin`` (``file``, ``file:line`` or ``plugin x``) is
    ``target`` or a file under it."""
    name = str(target)
    if origin == name or origin.startswith(f"{name}:"):
        return True
    return origin.startswith(name.rstrip("/\\") + os.sep)


def adds_no_records(origins: Iterable[str], directories: Iterable[Path]) -> list[Path]:
    """The ``directories`` (each with YAML files to read) that no record's origin comes
    from: their files are empty or hold empty lists, so a load added nothing from them."""
    origins = list(origins)
    return [
        d
        for d in directories
        if yaml_files(d) and not any(comes_from(origin, d) for origin in origins)
    ]
