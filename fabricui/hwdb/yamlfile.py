"""Read YAML safely and remember the line of every key, so errors can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import yaml

from fabricui.errors import HwdbError

KeyPath = tuple[Union[str, int], ...]

#: libyaml's safe loader when available (several times faster), else the pure-Python one.
_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class YamlDocument:
    """Parsed YAML data plus the 1-based line of every mapping key and list item."""

    data: Any
    """The ``yaml.safe_load`` result."""
    origin: str
    """File name (or ``<stdin>``) for messages."""
    text: str = ""
    """The source text; line numbers are composed from it only when a message needs one."""
    _lines: dict[KeyPath, int] | None = field(default=None, repr=False)

    @property
    def lines(self) -> dict[KeyPath, int]:
        """Key path -> 1-based line number (computed on first use)."""
        if self._lines is None:
            self._lines = {}
            root = yaml.compose(self.text, Loader=_SafeLoader)
            if root is not None:
                _record_lines(root, (), self._lines)
        return self._lines

    def line_of(self, path: KeyPath) -> int | None:
        """Line of ``path`` or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def where(self, path: KeyPath) -> str:
        """``file:line`` prefix for a message about ``path``."""
        line = self.line_of(path)
        return f"{self.origin}:{line}" if line else self.origin


def format_path(path: KeyPath) -> str:
    """Render a key path as ``links[3].bw_GBps``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _record_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            child = (*path, key)
            lines[child] = key_node.start_mark.line + 1
            _record_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _record_lines(item, child, lines)


def parse_yaml(text: str, origin: str) -> YamlDocument:
    """Parse YAML text with ``safe_load`` and record line numbers.

    Args:
        text: The YAML source.
        origin: File name for messages.

    Returns:
        The parsed document.

    Raises:
        HwdbError: Syntax error, naming the file and line.
    """
    try:
        data = yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - a SafeLoader, never unsafe
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise HwdbError(f"{origin}{line}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:  # pragma: no cover - non-marked errors are rare
        raise HwdbError(f"{origin}: YAML syntax error: {exc}") from None
    return YamlDocument(data=data, origin=origin, text=text)


def read_yaml(path: Path) -> YamlDocument:
    """Read and parse a YAML file.

    Raises:
        HwdbError: The file cannot be read, is not UTF-8, or is not valid YAML.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HwdbError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise HwdbError(f"{path}: is a directory, expected a YAML file") from None
    except UnicodeDecodeError as exc:
        raise HwdbError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise HwdbError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_yaml(text, str(path))
