"""Read YAML safely and remember the line of every key, so errors can point at it."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import yaml

from fabricui.errors import HwdbError, format_path, one_line
from fabricui.files import read_bounded

KeyPath = tuple[Union[str, int], ...]

#: libyaml's safe loader when available (several times faster), else the pure-Python one.
_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping repeats a key (a plain ``safe_load`` would silently keep the last value)."""

    def __init__(self, key_node: yaml.ScalarNode, first_node: yaml.ScalarNode) -> None:
        super().__init__(problem="duplicate key", problem_mark=key_node.start_mark)
        self.key_node = key_node
        self.first_line = first_node.start_mark.line + 1


class YamlFloat(float):
    """A number written in a YAML 1.2 exponent form PyYAML's YAML 1.1 rules read as text
    (``1e3``, ``1E-3``, ``+1e3``, ``.5e2``); it keeps the text, so a text field (an id, a
    name) reads it as written."""

    __slots__ = ("text",)
    text: str
    """The scalar as written."""


#: YAML 1.2 (core schema) floats with an exponent that YAML 1.1 reads as strings: no dot
#: needed before the exponent, no sign needed in it. Those YAML 1.1 already reads
#: (``1.0e+3``) are claimed by its own rule first.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")
_FLOAT_TAG = "tag:yaml.org,2002:float"
#: YAML 1.1's own float rule (what PyYAML reads as a float without ours).
_YAML11_FLOAT = next(
    regexp
    for tag, regexp in yaml.resolver.Resolver.yaml_implicit_resolvers["1"]
    if tag == _FLOAT_TAG
)


class _UniqueKeyLoader(_SafeLoader):
    """The safe loader, refusing a key repeated in one mapping (block or flow style).

    Keys are compared as loaded values (``1`` and ``0x1`` collide, as they would in the dict),
    and before merge keys (``<<``) are expanded, so overriding a merged key stays legal.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._checked_ids: set[int] = set()

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Check ``node``'s own keys once, before the first merge expansion adds others."""
        if id(node) not in self._checked_ids:
            self._checked_ids.add(id(node))
            seen: dict[Any, yaml.ScalarNode] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node)
                first = seen.setdefault(key, key_node)
                if first is not key_node:
                    raise _DuplicateKeyError(key_node, first)
        super().flatten_mapping(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        """A float; one written in an exponent form only YAML 1.2 reads as a number is a
        ``YamlFloat`` that remembers its text."""
        value: float = super().construct_yaml_float(node)
        text = node.value
        if _EXPONENT_FLOAT.match(text) and not _YAML11_FLOAT.match(text) and math.isfinite(value):
            number = YamlFloat(value)
            number.text = text
            return number
        return value


# This loader's own copy of the resolver table (PyYAML copies it on the first addition to
# a class): the global safe loaders keep YAML 1.1's rules.
_UniqueKeyLoader.add_implicit_resolver(_FLOAT_TAG, _EXPONENT_FLOAT, list("-+0123456789."))
_UniqueKeyLoader.add_constructor(_FLOAT_TAG, _UniqueKeyLoader.construct_yaml_float)


#: Largest YAML file read [bytes]: hwdb records, topology specs, overlays and measurement files
#: are kilobytes; anything this big is a wrong file (and would take long to parse).
MAX_YAML_BYTES = 16 * 2**20
#: Deepest nesting of lists and mappings accepted. Real files nest a few levels; libyaml's
#: composer recurses in C and crashes the interpreter some ten thousand levels down.
MAX_DEPTH = 100


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


def _record_lines(root: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    """Record the line of every key path under ``root``."""
    lines.setdefault(path, root.start_mark.line + 1)
    for child, mark_node in _walk_keys(root, path):
        lines[child] = mark_node.start_mark.line + 1


def _walk_keys(root: yaml.Node, path: KeyPath) -> Iterator[tuple[KeyPath, yaml.Node]]:
    """Yield the key path of every mapping key and list item under ``root``, with the node
    that marks where it is (the key node, or the item).

    Iterative (a deeply nested document must not hit the recursion limit), and each node is
    visited once: an alias refers to a node already recorded under its anchor's path, so a
    document of nested aliases (a "billion laughs") costs its size, not its expansion.
    """
    seen = {id(root)}
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, yaml.MappingNode):
            children = []
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                children.append(((*where, key), key_node, value_node))
        elif isinstance(node, yaml.SequenceNode):
            children = [((*where, index), item, item) for index, item in enumerate(node.value)]
        else:
            continue
        for child, mark_node, value_node in children:
            yield child, mark_node
            if id(value_node) not in seen:
                seen.add(id(value_node))
                stack.append((value_node, child))


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
        _check_depth(text, origin)
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a _SafeLoader subclass
    except _DuplicateKeyError as exc:
        raise HwdbError(_duplicate_message(text, origin, exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = one_line(exc.problem or exc.context or "invalid YAML")
        raise HwdbError(f"{origin}{line}: YAML syntax error: {problem}") from None
    except yaml.reader.ReaderError:
        # A character YAML does not allow (NUL, other control characters); the error has no
        # line, so find the character again.
        bad = yaml.reader.Reader.NON_PRINTABLE.search(text)
        where = f"{origin}:{text.count(chr(10), 0, bad.start()) + 1}" if bad else origin
        shown = f"character {bad.group()!r}" if bad else "a character"
        raise HwdbError(f"{where}: YAML syntax error: {shown} is not allowed in YAML") from None
    except yaml.YAMLError as exc:  # pragma: no cover - other unmarked errors are rare
        raise HwdbError(f"{origin}: YAML syntax error: {one_line(str(exc))}") from None
    except RecursionError:
        raise HwdbError(f"{origin}: YAML nested too deeply") from None
    except ValueError as exc:
        # The loader's int() refuses numbers of thousands of digits (Python 3.11+).
        problem = (
            "a number with thousands of digits" if "digits" in str(exc) else one_line(str(exc))
        )
        raise HwdbError(f"{origin}: YAML value cannot be read: {problem}") from None
    return YamlDocument(data=data, origin=origin, text=text)


def _duplicate_message(text: str, origin: str, exc: _DuplicateKeyError) -> str:
    """``FILE:LINE: KEYPATH: duplicate key 'K' (first at line N)``; the key path is found by
    composing the text again (only on this error path, so loading stays fast)."""
    key_node = exc.key_node
    key = one_line(key_node.value)
    shown = key
    root = yaml.compose(text, Loader=_SafeLoader)
    if root is not None:
        index = key_node.start_mark.index
        for path, mark_node in _walk_keys(root, ()):
            if mark_node.start_mark.index == index:
                shown = format_path(path)
                break
    return (
        f"{origin}:{key_node.start_mark.line + 1}: {shown}: "
        f"duplicate key {key!r} (first at line {exc.first_line})"
    )


def _check_depth(text: str, origin: str) -> None:
    """Raise HwdbError when collections nest deeper than ``MAX_DEPTH`` (read as events, which
    libyaml produces without recursion). Each level takes a character, so short texts pass."""
    if len(text) <= MAX_DEPTH:
        return
    depth = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else None
                where = f"{origin}:{line}" if line else origin
                raise HwdbError(f"{where}: YAML nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def read_yaml(path: Path) -> YamlDocument:
    """Read and parse a YAML file.

    Raises:
        HwdbError: The file cannot be read, is not UTF-8, or is not valid YAML.
    """
    data, _ = read_bounded(
        path, MAX_YAML_BYTES, HwdbError, "a YAML file", ", not a YAML record file"
    )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HwdbError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_yaml(text, str(path))
