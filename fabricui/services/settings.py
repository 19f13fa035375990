"""The user's settings file (``$XDG_CONFIG_HOME/fabricui/config.yaml``, or the file
``FABRICUI_CONFIG`` names): the keymap (binding id -> keys, as posting does), the theme and
extra hardware-database directories::

    keymap:
      view.topology: f1
      path.source: ctrl+s,s
    hwdb: [~/vendor-hwdb, ./more]    # relative to this file's directory

Read only when the file exists (the explorer's start-up pays one ``stat`` otherwise); a
malformed file is one line naming the file, line and key, and the explorer starts anyway,
except for a wrong ``hwdb:`` (see ``read_settings``), which is an error for every command.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricui.errors import ConfigError, FabricError, format_path, unknown_id_message
from fabricui.files import exists, read_bounded, write_text

#: Environment variable naming another settings file.
ENV_CONFIG = "FABRICUI_CONFIG"
#: Environment variable naming extra hardware-database directories (``os.pathsep``-separated).
ENV_HWDB = "FABRICUI_HWDB"
#: Largest settings file read [bytes].
MAX_SETTINGS_BYTES = 256 * 1024
#: Top-level keys a settings file may hold.
KEYS = ("keymap", "theme", "hwdb")
KEY_LIST = ", ".join(KEYS)
#: What the explorer remembers between runs (its own file, never the user's settings).
STATE_KEYS = ("topology", "nodes", "message_size", "theme")


@dataclass(frozen=True)
class Settings:
    """What the settings file says (empty when there is none)."""

    keymap: dict[str, str] = field(default_factory=dict)
    """Binding id -> comma-separated keys."""
    theme: str | None = None
    """Textual theme to start with (``textual-dark``, ``nord`` ...)."""
    hwdb_dirs: tuple[Path, ...] = ()
    """Extra hardware-database directories (``hwdb:``), before ``$FABRICUI_HWDB`` and
    ``--hwdb``."""
    hwdb_where: tuple[str, ...] = ()
    """Where each of ``hwdb_dirs`` is written, for messages (``FILE:LINE: hwdb[1]``)."""
    origin: str | None = None
    """The file read, or None."""


def settings_path() -> Path:
    """Where the settings file is: ``$FABRICUI_CONFIG``, else
    ``$XDG_CONFIG_HOME/fabricui/config.yaml`` (``~/.config`` when unset)."""
    named = os.environ.get(ENV_CONFIG)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "fabricui" / "config.yaml"


def load_settings(path: Path | None = None) -> Settings:
    """The settings file's contents (defaults when it does not exist).

    Raises:
        ConfigError: Unreadable, not YAML, an unknown key, a keymap that is not a mapping
            of binding ids to key names, or a wrong ``hwdb:`` (file, line and key named).
    """
    settings, problem = read_settings(path)
    if problem is not None:
        raise ConfigError(problem)
    return settings


def read_settings(path: Path | None = None) -> tuple[Settings, str | None]:
    """The settings file's contents and the first problem in the explorer's own settings.

    The ``hwdb:`` directories change what every command computes, so a wrong ``hwdb:`` is
    an error; anything else wrong (unreadable, not YAML, an unknown key, a bad keymap or
    theme) is returned as one line, with the defaults in place of the explorer's settings
    and the ``hwdb:`` directories still read when the file parsed.

    Returns:
        (settings, problem or None).

    Raises:
        HwdbSettingError: ``hwdb:`` is not a directory name or a list of them (file, line
            and key named).
    """
    path = path or settings_path()
    try:
        if not exists(path, ConfigError):  # a name too long or a closed directory: one line
            return Settings(), None
        doc = _parse(path)
    except ConfigError as exc:
        return Settings(), exc.message
    origin = doc.origin
    if doc.data is None:
        return Settings(origin=origin), None
    if not isinstance(doc.data, dict):
        return Settings(origin=origin), f"{origin}: expected a mapping of settings ({KEY_LIST})"
    hwdb = _hwdb_dirs(doc, path.parent)
    only_hwdb = Settings(hwdb_dirs=hwdb[0], hwdb_where=hwdb[1], origin=origin)
    try:
        keymap, theme = _explorer_settings(doc)
    except ConfigError as exc:
        return only_hwdb, exc.message
    return dataclasses.replace(only_hwdb, keymap=keymap, theme=theme), None


class HwdbSettingError(ConfigError):
    """The settings file's ``hwdb:`` is not a directory name or a list of them."""


def _parse(path: Path) -> Any:
    """The settings file's YAML document.

    Raises:
        ConfigError: Unreadable, not UTF-8 or not YAML.
    """
    from fabricui.hwdb.yamlfile import parse_yaml

    data, origin = read_bounded(path, MAX_SETTINGS_BYTES, ConfigError, "a YAML settings file")
    try:
        return parse_yaml(data.decode("utf-8"), origin)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{origin}: not UTF-8 text (byte {exc.start})") from None
    except FabricError as exc:
        raise ConfigError(exc.message) from None


def _explorer_settings(doc: Any) -> tuple[dict[str, str], str | None]:
    """The keymap and theme, after checking every key is known.

    Raises:
        ConfigError: An unknown key, a keymap that is not binding-id: keys pairs, or a
            theme that is not a name.
    """
    for key in doc.data:
        if key not in KEYS:
            message = unknown_id_message("setting", str(key), KEYS)
            raise ConfigError(f"{doc.where((key,))}: {message}")
    keymap = doc.data.get("keymap") or {}
    if not isinstance(keymap, dict):
        raise ConfigError(f"{doc.where(('keymap',))}: keymap: expected binding-id: keys pairs")
    for binding_id, keys in keymap.items():
        if not isinstance(binding_id, str) or not isinstance(keys, str) or not keys.strip():
            where = doc.where(("keymap", binding_id))
            raise ConfigError(
                f"{where}: {format_path(('keymap', binding_id))}: expected keys such as "
                "'f1' or 'ctrl+s,s'"
            )
    theme = doc.data.get("theme")
    if theme is not None and not isinstance(theme, str):
        raise ConfigError(f"{doc.where(('theme',))}: theme: expected a theme name")
    return {k: v.strip() for k, v in keymap.items()}, theme


def _hwdb_dirs(doc: Any, base: Path) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """``hwdb:``: one directory or a list of them (``~`` expanded, relative to ``base``),
    and where each is written (``file:line: hwdb`` or ``file:line: hwdb[i]``).

    Raises:
        HwdbSettingError: Not a directory name or a list of them (file, line and key named).
    """
    value = doc.data.get("hwdb")
    if value is None:
        return (), ()
    paths: list[tuple[str | int, ...]]
    if isinstance(value, str):
        entries, paths = [value], [("hwdb",)]
    elif isinstance(value, list):
        entries, paths = value, [("hwdb", i) for i in range(len(value))]
    else:
        raise HwdbSettingError(
            f"{doc.where(('hwdb',))}: hwdb: expected a directory or a list of them "
            f"(got {_shown(value)})"
        )
    dirs, where = [], []
    for entry, key in zip(entries, paths):
        name = "hwdb" if len(key) == 1 else f"hwdb[{key[1]}]"
        if not isinstance(entry, str) or not entry.strip():
            raise HwdbSettingError(
                f"{doc.where(key)}: {name}: expected a directory name (got {_shown(entry)})"
            )
        dirs.append(base / Path(entry.strip()).expanduser())
        where.append(f"{doc.where(key)}: {name}")
    return tuple(dirs), tuple(where)


def _shown(value: object) -> str:
    """A wrong value as a message shows it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def env_hwdb_dirs() -> tuple[Path, ...]:
    """The directories ``$FABRICUI_HWDB`` names (separated by ``os.pathsep``, empty parts
    skipped)."""
    value = os.environ.get(ENV_HWDB, "")
    return tuple(Path(part).expanduser() for part in value.split(os.pathsep) if part.strip())


def empty_hwdb_dirs(dirs: Iterable[Path]) -> list[tuple[Path, str]]:
    """The hardware-database directories among ``dirs`` that hold no YAML file a load
    reads, each with why (empty, a readme only, the files in a subdirectory ...); a path
    that is not a directory is left to the loader's own error."""
    dirs = [d for d in dirs if d.is_dir()]
    if not dirs:
        return []
    from fabricui.hwdb.directory import nothing_to_read

    found = [(d, nothing_to_read(d)) for d in dirs]
    return [(d, problem) for d, problem in found if problem is not None]


def state_path() -> Path:
    """Where the explorer keeps what it remembers: ``$XDG_STATE_HOME/fabricui/state.yaml``
    (``~/.local/state`` when unset). fabricui writes this file; the user's settings file
    is only ever read."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "fabricui" / "state.yaml"


def load_state(path: Path | None = None) -> dict[str, object]:
    """What the explorer remembered (empty when nothing, or when the file is unreadable:
    remembered state is a convenience, never a reason to stop).

    Read without a YAML parser: the file is the few ``key: value`` lines ``save_state``
    writes, and it is read before the explorer's first frame, where loading the YAML
    stack would cost a returning user about 0.1 s of start-up."""
    path = path or state_path()
    if not path.exists():
        return {}

    try:
        data, _ = read_bounded(path, MAX_SETTINGS_BYTES, ConfigError, "a state file")
        text = data.decode("utf-8")
    except (FabricError, UnicodeDecodeError):
        return {}
    return parse_state(text)


def parse_state(text: str) -> dict[str, object]:
    """The ``STATE_KEYS`` of ``save_state``'s lines: ``key: 123`` (an integer), ``key:
    "text"`` (a JSON string) or ``key: text``; any other line is skipped."""
    state: dict[str, object] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in STATE_KEYS or not value:
            continue
        if value.startswith('"'):
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            if isinstance(decoded, str):
                state[key] = decoded
        elif value.lstrip("-").isdigit():
            state[key] = int(value)
        elif value[0] not in "'[{&*!|>%@`#":  # a plain scalar, not other YAML
            state[key] = value
    return state


def save_state(state: dict[str, object], path: Path | None = None) -> None:
    """Remember ``state`` (only ``STATE_KEYS``), atomically; failures are silent (a
    read-only home must not break the explorer)."""
    path = path or state_path()
    lines = ["# What fabricui's explorer remembers between runs (rewritten by it)."]
    for key in STATE_KEYS:
        value = state.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            text = str(value)
            lines.append(
                f"{key}: {text}" if isinstance(value, int) else f"{key}: {json.dumps(text)}"
            )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, "\n".join(lines) + "\n", force=True)
    except (OSError, FabricError):
        pass
