"""What a ``fabricui probe`` folder holds: the tools probe runs, the files it writes, and the
``probe.json`` that lists them and names the host (read back by ``--health`` to tell whose
outputs they are, and by a probe run with ``--force`` to know its own files).

Light on purpose: reading a folder runs nothing and imports no importer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricui.errors import ConfigError
from fabricui.files import read_bounded


@dataclass(frozen=True)
class Tool:
    """A command the probe runs."""

    name: str
    """File stem of its output (``nvidia-smi-topo-m``)."""
    argv: tuple[str, ...]
    """The command line (the program is looked up on PATH)."""
    importer: str | None
    """Importer format that reads its output, None when none does."""
    needs_allow: bool = False
    """True for tools run only when asked (``ibnetdiscover`` talks to the fabric)."""


#: Every tool, in the order they run.
TOOLS = (
    Tool("nvidia-smi-topo-m", ("nvidia-smi", "topo", "-m"), "nvidia-smi"),
    Tool("nvidia-smi-q", ("nvidia-smi", "-q"), "nvidia-smi-q"),
    Tool("ibstat", ("ibstat",), "ibstat"),
    Tool("ibv_devinfo", ("ibv_devinfo", "-v"), "ibstat"),
    Tool("rocm-smi-showtopo", ("rocm-smi", "--showtopo"), "rocm-smi"),
    Tool("lspci-tv", ("lspci", "-tv"), None),
    Tool("ibnetdiscover", ("ibnetdiscover",), "ibnetdiscover", needs_allow=True),
)
#: The node spec's file name in the folder.
NODE_SPEC = "node.yaml"
#: Every file name probe writes besides ``probe.json``: a tool's stdout and stderr, the spec.
OUTPUT_NAMES = (
    *(f"{tool.name}{suffix}" for tool in TOOLS for suffix in (".txt", ".stderr.txt")),
    NODE_SPEC,
)
#: Largest earlier ``probe.json`` read for the files it lists [bytes].
MAX_REPORT_BYTES = 2**20
#: A host name as ``probe.json`` may give it (what ``socket.gethostname`` returns).
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
#: The folder probe writes to unless told (``fabricui-probe-HOST``).
_DEFAULT_FOLDER = re.compile(r"fabricui-probe-(.+)")


def read_report(folder: Path) -> dict[str, Any] | None:
    """The ``probe.json`` in ``folder`` as a dict.

    Args:
        folder: A probe's folder.

    Returns:
        The report, or None when there is none or it is not one (never raises).
    """
    try:
        data, _ = read_bounded(
            str(folder / "probe.json"), MAX_REPORT_BYTES, ConfigError, "a probe report"
        )
        report = json.loads(data)
    except (ConfigError, ValueError, RecursionError):
        return None
    return report if isinstance(report, dict) else None


def listed_outputs(report: dict[str, Any]) -> set[str]:
    """The raw output files a probe report lists: plain ``.txt`` names in its folder (never
    a path out of it).

    Args:
        report: A ``probe.json`` as read by ``read_report``.
    """
    names = set()
    runs = report.get("runs")
    for run in runs if isinstance(runs, list) else ():
        files = run.get("files") if isinstance(run, dict) else None
        for name in files if isinstance(files, list) else ():
            if (
                isinstance(name, str)
                and name == Path(name).name
                and name.endswith(".txt")
                and not name.startswith(".")
            ):
                names.add(name)
    return names


def host_of_output(path: str | Path) -> str | None:
    """The host that printed ``path`` when it is an output a probe wrote: the ``host`` of
    the ``probe.json`` beside it, which lists the file (``fabricui-probe-luna-0001/
    ibstat.txt`` -> ``luna-0001``); without a ``probe.json``, the host in the folder's
    default name (``fabricui-probe-HOST``) for a file of probe's own name; None for any
    other file.

    Args:
        path: A file as given on the command line.
    """
    path = Path(path)
    report = read_report(path.parent)
    if report is None:
        named = _DEFAULT_FOLDER.fullmatch(path.resolve().parent.name)
        if named and path.name in OUTPUT_NAMES and _HOST_NAME.fullmatch(named.group(1)):
            return named.group(1)
        return None
    if path.name not in listed_outputs(report):
        return None
    host = report.get("host")
    return host if isinstance(host, str) and _HOST_NAME.fullmatch(host) else None


def outputs_in(folder: str | Path) -> list[str] | None:
    """The raw outputs (stdout only) in a probe folder, sorted: those its ``probe.json``
    lists, or, without one, those of probe's own names in a folder of its default name;
    None for any other folder.

    Args:
        folder: A folder as given on the command line.
    """
    folder = Path(folder)
    report = read_report(folder)
    if report is not None:
        listed = listed_outputs(report)
    elif _DEFAULT_FOLDER.fullmatch(folder.resolve().name):
        listed = set(OUTPUT_NAMES)
    else:
        return None
    return sorted(
        n
        for n in listed
        if n.endswith(".txt") and not n.endswith(".stderr.txt") and (folder / n).is_file()
    )
