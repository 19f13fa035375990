"""Read YAML safely and remember the line of every key, so errors can point at it."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate, islice, repeat
from pathlib import Path
from typing import Any, Union

import yaml

from fabricui.errors import HwdbError, format_path, one_line
from fabricui.files import read_bounded

KeyPath = tuple[Union[str, int], ...]

#: libyaml's safe loader when available (several times faster), else the pure-Python one.
_SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TAG = "tag:yaml.org,2002:"
_MERGE_TAG = _TAG + "merge"
_STR_TAG, _MAP_TAG, _SEQ_TAG = _TAG + "str", _TAG + "map", _TAG + "seq"


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
    _root: yaml.Node | None = field(default=None, repr=False)
    """The node tree ``data`` was built from, as composed from ``text`` (``parse_yaml``
    keeps it until the lines are first needed, so the text is not parsed again)."""

    @property
    def lines(self) -> dict[KeyPath, int]:
        """Key path -> 1-based line number (computed on first use)."""
        if self._lines is None:
            self._lines = {}
            root = self._root if self._root is not None else _compose(self.text)
            self._root = None
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


def _compose(text: str) -> yaml.Node | None:
    """The node tree of ``text`` (None for an empty document)."""
    return yaml.compose(text, Loader=_SafeLoader)


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


def parse_yaml(text: str, origin: str, keep_nodes: bool = True) -> YamlDocument:
    """Parse YAML text with ``safe_load`` and record line numbers.

    The text is composed into nodes once (after a check of its nesting depth that reads
    the events alone, since composing a deeply nested text would crash libyaml): the data
    is built from them, and the document keeps them to read line numbers from.

    Args:
        text: The YAML source.
        origin: File name for messages.
        keep_nodes: Keep the nodes for line numbers. False for a document held a while
            whose lines only an error needs (they are composed from the text again then).

    Returns:
        The parsed document.

    Raises:
        HwdbError: Syntax error, naming the file and line.
    """
    try:
        _check_depth(text, origin)
        root, data = _load(text)
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
    except (KeyError, AttributeError, TypeError) as exc:
        if "!" not in text:
            raise
        # A value its explicit tag refuses (``!!bool foo``, ``!!timestamp foo``): the loader's
        # constructors fail without a mark.
        value = f" {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else ""
        raise HwdbError(
            f"{origin}: YAML value cannot be read: a value{value} its tag (such as !!bool or "
            "!!timestamp) does not allow"
        ) from None
    except ValueError as exc:
        # The loader's int() refuses numbers of thousands of digits (Python 3.11+).
        problem = (
            "a number with thousands of digits" if "digits" in str(exc) else one_line(str(exc))
        )
        raise HwdbError(f"{origin}: YAML value cannot be read: {problem}") from None
    return YamlDocument(data=data, origin=origin, text=text, _root=root if keep_nodes else None)


def _load(text: str) -> tuple[yaml.Node | None, Any]:
    """(node tree, data) of one YAML document, as ``yaml.load`` with the unique-key loader
    reads it (the same composer, the same errors): plain data is built straight from the
    nodes (``plain_data``), anything else by the loader's constructor.

    The tree is None when the constructor built the data: it rewrites the nodes as it goes
    (a merge key's pairs are spliced into the mapping), so their lines would be wrong.
    """
    loader = _UniqueKeyLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        try:
            return root, plain_data(loader, root)
        except Exception:  # not plain data, or wrong: the constructor builds it or says why
            return None, loader.construct_document(root)
    finally:
        loader.dispose()


#: Scalar tags ``plain_data`` converts with the loader's own constructor of the tag.
_PLAIN_SCALAR_TAGS = frozenset(_TAG + name for name in ("int", "float", "bool", "null"))


class NotPlainError(Exception):
    """A node ``plain_data`` leaves to the constructor."""


def plain_data(loader: yaml.constructor.SafeConstructor, root: yaml.Node) -> Any:
    """The data of a node tree of mappings, lists and scalars, as ``loader`` constructs it,
    without the constructor's bookkeeping (which is there for aliases and recursion).

    Raises:
        NotPlainError: A node that is not plain data: an alias (a node met twice), a merge
            key, another tag (a timestamp, binary, a set ...), a mapping or list as a key,
            or a key repeated in a mapping. ``loader`` constructs such a tree itself.
    """
    seen: set[int] = set()

    def convert(node: yaml.Node) -> Any:
        if id(node) in seen:
            raise NotPlainError
        seen.add(id(node))
        kind, tag = type(node), node.tag
        if kind is yaml.ScalarNode:
            if tag == _STR_TAG:
                return node.value  # what the str constructor returns
            if tag in _PLAIN_SCALAR_TAGS:
                return loader.yaml_constructors[tag](loader, node)
        elif kind is yaml.MappingNode and tag == _MAP_TAG:
            data: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if type(key_node) is not yaml.ScalarNode:
                    raise NotPlainError
                data[convert(key_node)] = convert(value_node)
            if len(data) < len(node.value):
                raise NotPlainError  # a repeated key, which the loader names
            return data
        elif kind is yaml.SequenceNode and tag == _SEQ_TAG:
            return [convert(item) for item in node.value]
        raise NotPlainError

    return convert(root)


def _duplicate_message(text: str, origin: str, exc: _DuplicateKeyError) -> str:
    """``FILE:LINE: KEYPATH: duplicate key 'K' (first at line N)``; the key path is found by
    composing the text again (only on this error path, so loading stays fast)."""
    key_node = exc.key_node
    key = one_line(key_node.value)
    shown = key
    root = _compose(text)
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


#: How an event changes the nesting depth (other events leave it).
_DEPTH_STEP: dict[type, int] = {
    yaml.MappingStartEvent: 1,
    yaml.SequenceStartEvent: 1,
    yaml.MappingEndEvent: -1,
    yaml.SequenceEndEvent: -1,
}


#: Events ``max_depth`` sums at a time (in C) before it checks its limit.
DEPTH_CHUNK_EVENTS = 4096


def max_depth(text: str, limit: int | None = None) -> int:
    """How deep collections nest in ``text`` (0 for a scalar or an empty text), counted on
    the parser's events without composing them (the running sums run in C, a chunk of
    ``DEPTH_CHUNK_EVENTS`` at a time).

    Args:
        text: The YAML source.
        limit: Stop reading after the chunk that goes deeper than this (the result is then
            more than ``limit``, not the whole text's depth): libyaml's scanner takes time
            that grows with the square of the flow nesting, so a text nested 200,000 deep
            must not be read to its end.

    Raises:
        yaml.YAMLError: The text does not parse.
    """
    loader = _SafeLoader(text)
    try:
        events = iter(loader.get_event, None)
        steps = map(_DEPTH_STEP.get, map(type, events), repeat(0))
        deepest = depth = 0
        while True:
            chunk = list(islice(steps, DEPTH_CHUNK_EVENTS))
            if not chunk:
                return deepest
            sums = list(accumulate(chunk, initial=depth))
            deepest, depth = max(deepest, max(sums)), sums[-1]
            if limit is not None and deepest > limit:
                return deepest
    finally:
        loader.dispose()


def _check_depth(text: str, origin: str) -> None:
    """Raise HwdbError when collections nest deeper than ``MAX_DEPTH`` (read as events, which
    libyaml produces without recursion). Each level takes a character, so short texts pass.

    A text that parses and nests no deeper passes after one quick count (``max_depth``);
    any other is read again event by event, so that whichever comes first, the level too
    deep or a syntax error, is the one reported, with its line.
    """
    if len(text) <= MAX_DEPTH:
        return
    try:
        if max_depth(text, MAX_DEPTH) <= MAX_DEPTH:
            return
    except Exception:  # the reading below meets it again and reports it
        pass
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


def read_yaml(path: Path, keep_nodes: bool = True) -> YamlDocument:
    """Read and parse a YAML file (``keep_nodes`` as for ``parse_yaml``).

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
    return parse_yaml(text, str(path), keep_nodes)
