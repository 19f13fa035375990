"""The user's settings file (``$XDG_CONFIG_HOME/fabricui/config.yaml``, or the file
``FABRICUI_CONFIG`` names): the keymap (binding id -> keys, as posting does), the theme and
extra hardware-database directories::

    keymap:
      view.topology: f1
      path.source: ctrl+s,s
    hwdb: [~/vendor-hwdb, ./more]    # relative to this file's directory

Read only when the file exists (the explorer's start-up pays one ``stat`` otherwise); a
malformed file is one line naming the file, line and key, and the explorer starts anyway.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricui.errors import ConfigError, FabricError, unknown_id_message
from fabricui.files import exists, read_bounded, write_text

#: Environment variable naming another settings file.
ENV_CONFIG = "FABRICUI_CONFIG"
#: Environment variable naming extra hardware-database directories (``os.pathsep``-separated).
ENV_HWDB = "FABRICUI_HWDB"
#: Largest settings file read [bytes].
MAX_SETTINGS_BYTES = 256 * 1024
#: Top-level keys a settings file may hold.
KEYS = ("keymap", "theme", "hwdb")
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
        ConfigError: Unreadable, not YAML, an unknown key, or a keymap that is not a
            mapping of binding ids to key names (file, line and key named).
    """
    path = path or settings_path()
    if not exists(path, ConfigError):  # a name too long or a closed directory: one line
        return Settings()
    from fabricui.hwdb.yamlfile import format_path, parse_yaml

    data, origin = read_bounded(path, MAX_SETTINGS_BYTES, ConfigError, "a YAML settings file")
    try:
        doc = parse_yaml(data.decode("utf-8"), origin)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{origin}: not UTF-8 text (byte {exc.start})") from None
    except FabricError as exc:
        raise ConfigError(exc.message) from None
    if doc.data is None:
        return Settings(origin=origin)
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{origin}: expected a mapping of settings ({', '.join(KEYS)})")
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
    return Settings(
        keymap={k: v.strip() for k, v in keymap.items()},
        theme=theme,
        hwdb_dirs=_hwdb_dirs(doc, path.parent),
        origin=origin,
    )


def _hwdb_dirs(doc: Any, base: Path) -> tuple[Path, ...]:
    """``hwdb:``: one directory or a list of them (``~`` expanded, relative to ``base``).

    Raises:
        ConfigError: Not a directory name or a list of them (file, line and key named).
    """
    value = doc.data.get("hwdb")
    if value is None:
        return ()
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list):
        raise ConfigError(f"{doc.where(('hwdb',))}: hwdb: expected a directory or a list of them")
    dirs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(f"{doc.where(('hwdb', i))}: hwdb[{i}]: expected a directory name")
        dirs.append(base / Path(entry.strip()).expanduser())
    return tuple(dirs)


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
