"""The options every command shares, declared once: the topology (``--topology/-t``,
``--nodes``), the global options (``--hwdb``, ``--calibration``, ``--max-memory``, accepted
before or after the command) and ``--json``; and the service requests they become."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.bounds import NIC_PORT_GBPS, checked
from fabricui.errors import ConfigError
from fabricui.files import output_name
from fabricui.services.admission import DEFAULT_BUDGET_BYTES, ENV_MAX_MEMORY
from fabricui.services.requests import CatalogRequest, TopologyRequest, WhatIf
from fabricui.services.settings import (
    ENV_HWDB,
    empty_hwdb_dirs,
    env_hwdb_dirs,
    read_settings,
)
from fabricui.units import format_bytes, parse_bandwidth_GBps
from fabricui.vocabulary import DEFAULT_TOPOLOGY

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog


#: The attribute naming where a command's parser gathers the words argparse left over
#: (``take_free_words``; read by ``cli._Parser``).
FREE_WORDS = "free_words_dest"


def take_free_words(parser: argparse.ArgumentParser, dest: str) -> None:
    """Gather the words argparse leaves over into ``dest`` (a list): positional words split
    by options, as in ``path n0.g3 --nodes 16 n12.g5`` or ``collective all_reduce -t pod 1G``.
    """
    setattr(parser, FREE_WORDS, dest)
    parser.set_defaults(**{dest: []})


def output_path(text: str) -> str:
    """The argparse type of every output option (``-o``, ``--tuner``): the name as typed,
    an empty one refused in the option's one-line error (``files.output_name``).

    Raises:
        argparse.ArgumentTypeError: ``text`` is empty or only blanks.
    """
    try:
        return output_name(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def output_file(text: str) -> Path:
    """``written_path`` as a ``Path`` (for options a command reads as one).

    Raises:
        argparse.ArgumentTypeError: ``text`` is empty, only blanks, or ``-``.
    """
    return Path(written_path(text))


def written_path(text: str) -> str:
    """``output_path`` of an option that writes a file or folder beside the report it prints
    (``calibrate -o``, ``collective --tuner``, ``probe -o``): ``-`` is no name there, not
    a file called '-' in the current directory (``./-`` is one).

    Raises:
        argparse.ArgumentTypeError: ``text`` is empty, only blanks, or ``-``.
    """
    name = output_path(text)
    if name.strip() == "-":
        raise argparse.ArgumentTypeError(
            "'-' is not standard output here (the report is printed there): give a path"
        )
    return name


def port_gbps(text: str) -> float:
    """A NIC port rate in Gb/s as people write it: ``400``, ``400G``, ``400Gb/s``,
    ``400Gbps`` or in bytes ``50GB/s`` (the range is checked later, in ``bounds``)."""
    stripped = text.strip()
    try:
        return float(stripped[:-1] if stripped.endswith(("G", "g")) else stripped)
    except ValueError:
        pass
    try:
        return parse_bandwidth_GBps(stripped) * 8.0
    except ConfigError:
        raise argparse.ArgumentTypeError(
            f"a port rate in Gb/s such as 400 or 400Gb/s (got {text!r})"
        ) from None


def topology_name(text: str) -> str:
    """``--topology``'s value: a built-in id or a file path, never empty (``-t ''`` from an
    unset shell variable must not quietly price the default topology)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"empty topology id {text!r}: give a built-in id (see `fabricui topologies`) "
            "or a YAML file path"
        )
    return text


def add_topology_options(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """Add ``--topology/-t ID|FILE``, ``--nodes N`` and the what-if links (``--nic-gbps``,
    ``--scale-up-links``).

    The same options exist before the command (``fabricui -t X path ...``, and bare
    ``fabricui -t X`` for the explorer): a command's own copy leaves what was given before
    it alone unless given again (argparse's SUPPRESS default).

    Args:
        parser: The command's parser (or the top-level one, ``top_level=True``).
        top_level: Declare the defaults (None) that the commands' copies keep.
    """
    unset = None if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--topology",
        "-t",
        type=topology_name,
        default=unset,
        help="built-in topology id (see `fabricui topologies`) or a YAML file path "
        f"(default: {DEFAULT_TOPOLOGY})",
    )
    parser.add_argument("--nodes", type=int, default=unset, help="rescale the topology to N nodes")
    parser.add_argument(
        "--nic-gbps",
        type=port_gbps,
        default=unset,
        metavar="GBPS",
        help="what if every NIC port ran at GBPS Gb/s",
    )
    parser.add_argument(
        "--scale-up-links",
        type=int,
        default=unset,
        metavar="N",
        help="what if each GPU (NVSwitch) or GPU pair (mesh) had N scale-up links",
    )
    parser.add_argument(
        "--health",
        action="append",
        default=unset,
        metavar="FILE",
        help="price the fabric as it is: a state or counter output (iblinkinfo, ibstat, "
        "nvidia-smi nvlink -s, dcgmi, perfquery ...; repeatable) whose down links are "
        "removed, degraded links run at their trained rate, inactive NVLinks leave their GPU",
    )


def add_global_options(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """Add the options every command takes, before or after its name: ``--hwdb DIR``
    (repeatable), ``--calibration FILE`` and ``--max-memory SIZE``.

    A command's copy keeps what was given before the command unless given again
    (argparse's SUPPRESS default); ``--hwdb`` after the command collects into its own list
    (``hwdb_after``), which ``catalog_request`` adds after the first one.

    Args:
        parser: The top-level parser, or a command's (``top_level=False``).
        top_level: Declare the defaults the commands' copies keep.
    """
    unset = None if top_level else argparse.SUPPRESS
    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument(
        "--hwdb",
        action="append",
        type=Path,
        default=[] if top_level else argparse.SUPPRESS,
        dest="hwdb" if top_level else "hwdb_after",
        metavar="DIR",
        help=f"extra hardware-database directory whose records add to or override the "
        f"built-in ones (repeatable; also ${ENV_HWDB} and the settings file's hwdb:)",
    )
    group.add_argument(
        "--calibration",
        type=Path,
        default=unset,
        metavar="FILE",
        help="calibration overlay from `fabricui calibrate`: fitted link efficiency and "
        "latency applied to every command and the TUI",
    )
    group.add_argument(
        "--max-memory",
        default=unset,
        metavar="SIZE",
        help=f"memory a request may use, e.g. 8G (default {format_bytes(DEFAULT_BUDGET_BYTES)}, "
        f"or ${ENV_MAX_MEMORY}); larger work is refused up front with what would fit",
    )


def completes(action: argparse.Action, words: tuple[str, ...] | str) -> None:
    """Say what an argument completes to in the shell (``fabricui completion``): fixed
    ``words``, or ``model`` / ``topology`` for the catalog's ids; argparse ignores it, so
    the spellings it accepts beyond those stay accepted."""
    action.completes = words  # type: ignore[attr-defined]


def add_hosts_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--hosts HOSTLIST``: a Slurm job's hosts on an imported cluster.

    Args:
        parser: The command's parser.
        what: What the job's GPUs become (``the group``).
    """
    parser.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help=f"a job's hosts on an imported cluster (Slurm hostlist, e.g. 'node[001-064]'; "
        f"default $SLURM_JOB_NODELIST on such a cluster): {what}",
    )


def add_json_option(parser: argparse.ArgumentParser, help_text: str = "print JSON") -> None:
    """Add ``--json`` (also accepted before the command: ``fabricui --json path ...``)."""
    parser.add_argument("--json", action="store_true", help=help_text)


def topology_request(args: argparse.Namespace) -> TopologyRequest:
    """The topology the options name (the default topology when they name none), with
    the what-if links they ask for."""
    nic_gbps = getattr(args, "nic_gbps", None)
    if nic_gbps is not None:
        nic_gbps = checked(nic_gbps, NIC_PORT_GBPS, "--nic-gbps")
    links = getattr(args, "scale_up_links", None)
    what_if = WhatIf(nic_gbps, links) if nic_gbps is not None or links is not None else None
    return TopologyRequest(
        getattr(args, "topology", None) or DEFAULT_TOPOLOGY,
        getattr(args, "nodes", None),
        what_if,
        tuple(getattr(args, "health", None) or ()),
    )


def command_line_hwdb(args: argparse.Namespace) -> tuple[Path, ...]:
    """The ``--hwdb`` directories typed, before the command then after it."""
    return (*(getattr(args, "hwdb", None) or ()), *(getattr(args, "hwdb_after", None) or ()))


def catalog_request(args: argparse.Namespace) -> CatalogRequest:
    """The hardware database the global options name: the settings file's ``hwdb:``
    directories, then ``$FABRICUI_HWDB``'s, then ``--hwdb``'s (a later directory's records
    override an earlier one's).

    A problem in the explorer's settings (keymap, theme, an unknown key) is a warning; a
    settings file that cannot be read at all is a warning and not used.

    Raises:
        ConfigError: The settings file's ``hwdb:`` is not a directory name or a list of
            them, or a directory it or ``$FABRICUI_HWDB`` names is not one.
    """
    settings, problem = read_settings()
    if problem is not None:  # a broken keymap must not stop `fabricui path`
        used = "only its hwdb: used" if settings.hwdb_dirs else "settings not used"
        print(f"fabricui: warning: {problem} ({used})", file=sys.stderr)
    configured = list(zip(settings.hwdb_dirs, settings.hwdb_where))
    configured += [(d, f"${ENV_HWDB}") for d in env_hwdb_dirs()]
    for directory, source in configured:
        if not directory.is_dir():
            raise ConfigError(f"{source}: {directory} is not a directory")
    dirs = (*(d for d, _ in configured), *command_line_hwdb(args))
    _warn_empty_hwdb(dirs)
    return CatalogRequest(tuple(dirs), getattr(args, "calibration", None))


#: Hardware-database directories already warned about as holding nothing to read.
_WARNED_EMPTY: set[Path] = set()


def _warn_empty_hwdb(dirs: tuple[Path, ...]) -> None:
    """One warning per directory that holds no YAML file a load reads (empty, a mistyped
    path, the files in a subdirectory): it adds nothing to the database."""
    for directory, problem in empty_hwdb_dirs([d for d in dirs if d not in _WARNED_EMPTY]):
        _WARNED_EMPTY.add(directory)
        print(
            f"fabricui: warning: {directory}: adds nothing to the hardware database: {problem}",
            file=sys.stderr,
        )


def catalog(args: argparse.Namespace) -> Catalog:
    """The catalog the global options name, loaded with the plugins.

    Raises:
        HwdbError: A database file or the calibration overlay is malformed.
    """
    from fabricui.services.session import load_catalog

    return load_catalog(catalog_request(args))
