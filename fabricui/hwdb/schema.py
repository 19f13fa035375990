"""Strict conversion of parsed YAML into the frozen ``model`` dataclasses.

One small validator, driven by each dataclass's field annotations: unknown keys, missing
required fields, wrong types and out-of-range numbers raise ``HwdbError`` naming the file,
line, key path and the bad value.
"""

from __future__ import annotations

import dataclasses
import math
import re
import reprlib
import unicodedata
from typing import Any, TypeVar

from fabricui.bounds import NIC_PORT_GBPS, Range, problem
from fabricui.errors import HwdbError, unknown_key_message
from fabricui.hwdb.yamlfile import KeyPath, YamlDocument, YamlFloat, format_path
from fabricui.model import records, topology

T = TypeVar("T")

#: Largest magnitude of a number in a record: beyond any count or figure, exact as a float
#: (larger integers lose digits, and beyond 1e308 do not convert at all), and far enough
#: from the float range that sums and products of figures stay finite.
_MAX_NUMBER = 2**53

_NESTED: dict[str, type] = {"IntraSpec": topology.IntraSpec, "NetSpec": topology.NetSpec}
#: Annotations naming a Literal of words (read as text; ``check_choice`` checks the word).
_TEXT_TYPES = ("NetLayout",)

#: Fields with a physical range beyond being positive: (record class, field) -> range.
_RANGES: dict[tuple[str, str], Range] = {("NetSpec", "gbps"): NIC_PORT_GBPS}

#: Fields that must be > 0 when present (everything named *_GBps, *_Gbps, *_TFLOPS, counts:
#: a mesh of 0 links per pair or a host of 0 sockets is a typo, not a machine).
_POSITIVE = re.compile(
    r"(_GBps|_Gbps|_TFLOPS|_GB|_B)$"
    r"|^(nodes|gpus_per_node|radix|ports|layers|links_per_pair|links_per_gpu|sockets)$"
)


#: ``repr`` for values in messages: short, and bounded however big or nested the value is
#: (a list of aliases can stand for billions of items).
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 2, 4, 4, 60, 60
_SHOW.maxlong = 40


def show(value: Any) -> str:
    """A short one-line ``repr`` of a value read from YAML, for messages."""
    return _SHOW.repr(value)


class FieldError(HwdbError):
    """A field of a YAML record holds a wrong value: the one-line message, and apart its key
    path and problem, for a reader that names the record its own way (a measurements entry
    by its id)."""

    def __init__(self, doc: YamlDocument, path: KeyPath, problem: str) -> None:
        super().__init__(f"{doc.where(path)}: {format_path(path)}: {problem}")
        self.path = path
        """Key path of the field in the document."""
        self.problem = problem
        """What is wrong, with the value (``expected a whole number (got 1.5)``)."""


def _fail(doc: YamlDocument, path: KeyPath, problem: str, value: Any = dataclasses.MISSING) -> None:
    shown = "" if value is dataclasses.MISSING else f" (got {show(value)})"
    raise FieldError(doc, path, f"{problem}{shown}")


def _quoted_number(value: Any) -> bool:
    """True for text that is a number (``"8"``): written in quotes where a number goes."""
    if not isinstance(value, str):
        return False
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def _number(doc: YamlDocument, path: KeyPath, value: Any, kind: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ": write it without quotes" if _quoted_number(value) else ""
        _fail(doc, path, f"expected a number ({kind}) (got {show(value)}){hint}")
    if isinstance(value, float) and not math.isfinite(value):
        _fail(doc, path, "expected a finite number", value)
    if abs(value) > _MAX_NUMBER:
        _fail(doc, path, f"number too large (at most {_MAX_NUMBER})", value)
    if kind == "int":
        if isinstance(value, float):
            if not value.is_integer():
                _fail(doc, path, "expected a whole number", value)
            value = int(value)
        return int(value)
    return float(value)


def convert_value(doc: YamlDocument, path: KeyPath, annotation: str, value: Any) -> Any:
    """Convert one YAML value to the type named by a dataclass annotation string."""
    annotation = annotation.replace(" ", "")
    if annotation.endswith("|None"):
        if value is None:
            return None
        return convert_value(doc, path, annotation[: -len("|None")], value)
    if value is None:
        _fail(doc, path, f"must not be empty (expected {annotation})")
    if annotation in _TEXT_TYPES:  # a Literal of words: text here, the words checked later
        annotation = "str"
    if annotation == "str":
        if isinstance(value, YamlFloat):  # 1e3 as written, not 1000.0
            return value.text
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            _fail(doc, path, "expected text", value)
        return value
    if annotation == "bool":
        if not isinstance(value, bool):
            _fail(doc, path, "expected true or false", value)
        return value
    if annotation in ("int", "float"):
        number = _number(doc, path, value, annotation)
        if number < 0:
            _fail(doc, path, "must not be negative", value)
        if _POSITIVE.search(str(path[-1])) and number <= 0:
            _fail(doc, path, "must be greater than zero", value)
        return number
    if annotation.startswith("tuple["):
        inner = annotation[len("tuple[") : -1].split(",")[0]
        if not isinstance(value, list):
            _fail(doc, path, f"expected a list of {inner}", value)
        return tuple(convert_value(doc, (*path, i), inner, v) for i, v in enumerate(value))
    if annotation == "dict[str,str]":
        if not isinstance(value, dict):
            _fail(doc, path, "expected a mapping of field: url", value)
        return {str(k): convert_value(doc, (*path, str(k)), "str", v) for k, v in value.items()}
    if annotation == "dict[int,float]":
        if not isinstance(value, dict):
            _fail(doc, path, "expected a mapping of whole number: number", value)
        table: dict[int, float] = {}
        for k, v in value.items():
            where = (*path, str(k))
            if isinstance(k, bool) or not isinstance(k, int):
                _fail(doc, where, "expected a whole number as the key", k)
            table[int(k)] = convert_value(doc, where, "float", v)
        return table
    if annotation == "dict[str,dict[int,float]]":
        if not isinstance(value, dict):
            _fail(doc, path, "expected a mapping of name: {whole number: number}", value)
        return {
            str(k): convert_value(doc, (*path, str(k)), "dict[int,float]", v)
            for k, v in value.items()
        }
    if annotation in _NESTED:
        return convert_record(doc, path, _NESTED[annotation], value)
    raise AssertionError(f"schema: unsupported annotation {annotation}")  # pragma: no cover


def convert_record(
    doc: YamlDocument,
    path: KeyPath,
    cls: type[T],
    data: Any,
    overrides: dict[str, Any] | None = None,
) -> T:
    """Build a dataclass instance from a YAML mapping, strictly.

    Args:
        doc: The document (for line numbers).
        path: Key path of ``data`` in the document.
        cls: The dataclass to build.
        data: The mapping read from YAML.
        overrides: Values set by the caller, not read from YAML (e.g. ``origin``).

    Returns:
        The record.

    Raises:
        HwdbError: Not a mapping, unknown key, missing field, wrong type or range.
    """
    overrides = overrides or {}
    fields = _known_keys(doc, path, cls, data, overrides)
    kwargs: dict[str, Any] = dict(overrides)
    for name, f in fields.items():
        if name in overrides:
            continue
        if name not in data:
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required:
                _fail(doc, path, f"missing required key '{name}'")
            continue
        kwargs[name] = _convert_field(doc, path, cls, f, data[name])
    return cls(**kwargs)


def stated_fields(
    doc: YamlDocument, path: KeyPath, cls: type, data: Any, overrides: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The fields a YAML mapping states of record ``cls``, each read as ``convert_record``
    reads it, and those of its nested records (``intra``, ``net``) as mappings alike; a
    field it leaves out, required or not, is left out: a partial record (a measurements
    entry's ``hardware`` block says what it knows of a topology).

    Args:
        overrides: Fields the caller sets, refused as unknown keys (``origin``).

    Raises:
        HwdbError: Not a mapping, an unknown key, a wrong type or range.
    """
    fields = _known_keys(doc, path, cls, data, dict.fromkeys(overrides))
    stated: dict[str, Any] = {}
    for name, value in data.items():
        annotation = str(fields[name].type).replace(" ", "").removesuffix("|None")
        if annotation in _NESTED and value is not None:
            stated[name] = stated_fields(doc, (*path, name), _NESTED[annotation], value)
        else:
            stated[name] = _convert_field(doc, path, cls, fields[name], value)
    return stated


def _known_keys(
    doc: YamlDocument, path: KeyPath, cls: type, data: Any, overrides: dict[str, Any]
) -> dict[str, dataclasses.Field[Any]]:
    """The fields of ``cls`` by name, once ``data`` is found a mapping of them alone."""
    if not isinstance(data, dict):
        _fail(doc, path, f"expected a mapping of {cls.__name__} fields", data)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields or key in overrides:
            known = [n for n in fields if n not in overrides]
            _fail(doc, (*path, str(key)), unknown_key_message(str(key), known))
    return fields


def _convert_field(
    doc: YamlDocument, path: KeyPath, cls: type, f: dataclasses.Field[Any], value: Any
) -> Any:
    """Field ``f`` of record ``cls`` (at ``path``) read from ``value``: its type, then its
    physical range (``_RANGES``)."""
    converted = convert_value(doc, (*path, f.name), str(f.type), value)
    bound = _RANGES.get((cls.__name__, f.name))
    wrong = bound and converted is not None and problem(converted, bound)
    if wrong:
        _fail(doc, (*path, f.name), wrong)
    return converted


def check_choice(doc: YamlDocument, path: KeyPath, value: str, choices: tuple[str, ...]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        _fail(doc, path, f"must be one of {', '.join(choices)}", value)


def check_one_line(doc: YamlDocument, path: KeyPath, value: Any, what: str) -> None:
    """Raise unless ``value`` (an id or a name that headers and tables print) is one line
    of visible text: no control character (a newline breaks a header in two) and no
    format character (a right-to-left override reorders what the terminal shows)."""
    if isinstance(value, str) and any(
        unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value
    ):
        _fail(doc, path, f"{what} must be one line of visible characters", value)


def check_range(
    doc: YamlDocument, path: KeyPath, value: float, low: float, high: float, what: str
) -> None:
    """Raise unless ``low <= value <= high``."""
    if not low <= value <= high:
        _fail(doc, path, f"{what} must be between {low:g} and {high:g}", value)


__all__ = [
    "FieldError",
    "check_choice",
    "check_one_line",
    "check_range",
    "convert_record",
    "convert_value",
    "records",
    "stated_fields",
]
