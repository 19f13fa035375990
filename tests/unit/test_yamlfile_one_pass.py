"""YAML files are composed once: the data is built from the nodes (``plain_data`` for plain
mappings, lists and scalars, the loader's constructor for anything else), line numbers are
read from the same nodes, and the nesting depth is counted on the events first. Every
document reads, and every refusal reads, as ``yaml.load`` and a second composition did."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fabricui.errors import HwdbError
from fabricui.hwdb import yamlfile
from fabricui.hwdb.catalog import shipped_hwdb_dirs
from fabricui.hwdb.yamlfile import (
    MAX_DEPTH,
    NotPlainError,
    max_depth,
    parse_yaml,
    plain_data,
    read_yaml,
)

SHIPPED = [
    path
    for directory in shipped_hwdb_dirs()
    for path in [*sorted(directory.glob("*.yaml")), *sorted(directory.glob("topologies/*.yaml"))]
]

#: A "billion laughs": nine levels of ten aliases each stand for 10**9 items.
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi")
)

#: Documents the fast path leaves to the constructor, and plain ones it builds.
NOT_PLAIN = {
    "alias": "a: &x [1, 2]\nb: *x\n",
    "scalar alias": "a: &x 1\nb: *x\n",
    "recursive alias": "a: &x [*x]\n",
    "merge key": "base: &b {x: 1}\nuse: {<<: *b, y: 2}\n",
    "timestamp": "when: 2026-11-29\n",
    "set": "s: !!set {a, b}\n",
    "binary": "b: !!binary aGVsbG8=\n",
    "list as a key": "? [a, b]\n: 1\n",
    "repeated key": "a: 1\nb: 2\na: 3\n",
    "equal keys spelt apart": "1: a\n0x1: b\n",
    "value key": "=: 1\n",
}
PLAIN = [
    "",
    "# a comment\n",
    "1\n",
    "a: 1\nb: [1.5, 1e3, .5e2, -0x1f, 0o17, 1_000, 1:30, .inf, -.nan]\n",
    "flags: [yes, No, on, OFF, true, ~, null, '', 'quoted', \"text\"]\n",
    "- {a: 1, 2: a, 1.5: b, true: c, ~: d}\n- [[], {}, [[[x]]]]\n",
    "url: https://example.com/?num=5799&year=2017\n",
    "text: !!str 1e3\nnumber: !!int '12'\nblock: |\n  two\n  lines\n",
]


def _loaded(text: str) -> object:
    """What ``yaml.load`` with the unique-key loader reads (the reference)."""
    return yaml.load(text, Loader=yamlfile._UniqueKeyLoader)  # noqa: S506 - a safe loader


def _problem(text: str) -> str:
    """What ``yaml.load`` says is wrong with ``text`` (libyaml and the pure-Python parser
    word syntax errors apart), or "" when it loads."""
    try:
        _loaded(text)
    except yaml.MarkedYAMLError as exc:
        return str(exc.problem)
    except (yaml.YAMLError, ValueError):
        pass
    return ""


def _plain(text: str) -> object:
    loader = yamlfile._UniqueKeyLoader(text)
    try:
        return plain_data(loader, loader.get_single_node())
    finally:
        loader.dispose()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_shipped_file_reads_as_yaml_load_reads_it(path: Path) -> None:
    """Same data (types, order, YAML 1.2 floats' text), and the same lines as a
    composition of the text alone gives."""
    text = path.read_text(encoding="utf-8")
    doc = read_yaml(path)
    assert repr(doc.data) == repr(_loaded(text))
    assert doc._root is not None
    again = yamlfile.YamlDocument(data=doc.data, origin=doc.origin, text=text)
    assert doc.lines == again.lines and doc._root is None


@pytest.mark.parametrize("text", PLAIN)
def test_plain_data_builds_what_the_constructor_builds(text: str) -> None:
    """Every scalar kind the safe loader reads, flow and block, nested, empty documents."""
    loaded = _loaded(text)
    assert repr(parse_yaml(text, "t.yaml").data) == repr(loaded)
    if text.strip() and not text.startswith("#"):
        data = _plain(text)
        assert repr(data) == repr(loaded) and data == loaded
    floats = parse_yaml("x: [1e3, .5e2]\n", "t.yaml").data["x"]
    assert [f.text for f in floats] == ["1e3", ".5e2"]


@pytest.mark.parametrize("name", sorted(NOT_PLAIN))
def test_plain_data_leaves_the_rest_to_the_constructor(name: str) -> None:
    """Aliases, merge keys, other tags, complex and repeated keys: refused by the fast path,
    and read (or refused) by the loader exactly as before."""
    text = NOT_PLAIN[name]
    with pytest.raises(NotPlainError):
        _plain(text)
    try:
        expected = repr(_loaded(text))
    except yaml.MarkedYAMLError as exc:
        with pytest.raises(HwdbError) as refused:
            parse_yaml(text, "t.yaml")
        assert f"t.yaml:{exc.problem_mark.line + 1}: " in str(refused.value)
        assert str(exc.problem) in str(refused.value)
    else:
        assert repr(parse_yaml(text, "t.yaml").data) == expected


def test_lines_of_a_merged_mapping_are_those_of_the_text() -> None:
    """The constructor splices merged pairs into the nodes; lines are read from the text
    as written instead (the merge key and the override where they stand)."""
    doc = parse_yaml("base: &b {a: 1, z: 0}\nc:\n  <<: *b\n  a: 2\n", "t.yaml")
    assert doc.data["c"] == {"a": 2, "z": 0} and doc._root is None
    assert doc.lines == {(): 1, ("base",): 1, ("base", "a"): 1, ("base", "z"): 1} | {
        ("c",): 2,
        ("c", "<<"): 3,
        ("c", "a"): 4,
    }


def test_an_alias_keeps_its_one_object() -> None:
    """An alias stands for the anchored object itself, as the constructor makes it."""
    data = parse_yaml("a: &x [1, 2]\nb: *x\n", "t.yaml").data
    assert data["a"] is data["b"]


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("", 0),
        ("x\n", 0),
        ("[]\n", 1),
        ("a: [1, {b: [2]}]\n", 4),
        ("- - - x\n", 3),
        ("a:\n  b:\n    c: 1\nd: 2\n", 3),
        ("a: 1\n---\n[[[1]]]\n", 3),
    ],
)
def test_max_depth_counts_nested_collections(text: str, depth: int) -> None:
    assert max_depth(text) == depth
    assert max_depth("[" * 1000 + "]" * 1000) == 1000
    assert max_depth("x:\n" + "".join(" " * k + "- \n" for k in range(999))) == 1000


def test_max_depth_raises_the_parse_error() -> None:
    with pytest.raises(yaml.YAMLError):
        max_depth("a: [1, 2\nb: }\n")


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 150, 1000, 20_000, 200_000])
def test_deep_nesting_is_refused_in_one_line(levels: int) -> None:
    """Deeper than ``MAX_DEPTH`` (far deeper than libyaml's composer survives): one line
    naming the line where the level too many starts."""
    deep = f"YAML nested more than {MAX_DEPTH} levels deep"
    flow = "{a: " * levels + "1" + "}" * levels
    block = "x:\n" + "".join(" " * k + "- \n" for k in range(min(levels, 400)))
    for text, line in [(flow, 1), (block, MAX_DEPTH + 1)]:
        with pytest.raises(HwdbError) as exc:
            parse_yaml(text, "deep.yaml")
        assert str(exc.value) == f"deep.yaml:{line}: {deep}"
    if levels <= 1000:  # deeper lists stop at libyaml's own limit first (a syntax error)
        with pytest.raises(HwdbError) as exc:
            parse_yaml("[" * levels + "]" * levels, "deep.yaml")
        assert str(exc.value) == f"deep.yaml:1: {deep}"


def test_exactly_max_depth_reads() -> None:
    text = "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH
    data = parse_yaml(text, "t.yaml").data
    for _ in range(MAX_DEPTH - 1):
        data = data[0]
    assert data == [1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # The level too many comes first: it is named, not the syntax error after it.
        (
            "a: 1\nb:\n"
            + "".join(" " * k + "- \n" for k in range(150))
            + "".join(f"k{k}: {k}\n" for k in range(60))
            + "c: }\n",
            "t.yaml:102: YAML nested more than 100 levels deep",
        ),
        # The syntax error comes first: it is named, not the depth after it.
        (
            "a: [1, 2\nb: }\n" + "[" * 150,
            "t.yaml:2: YAML syntax error: {problem}",
        ),
    ],
)
def test_the_first_problem_of_a_deep_broken_file_is_named(text: str, message: str) -> None:
    with pytest.raises(HwdbError) as exc:
        parse_yaml(text, "t.yaml")
    assert str(exc.value) == message.format(problem=_problem(text))


def test_a_billion_laughs_reads_in_its_size() -> None:
    """Aliases are shared, not expanded: reading, lines and a message stay small."""
    doc = parse_yaml(LAUGHS + "j: [*i, *i]\n", "laughs.yaml")
    assert doc.data["j"][0] is doc.data["i"] and len(doc.lines) < 200
    assert doc.where(("j",)) == "laughs.yaml:10"
    assert doc.where(("j", 1)) == "laughs.yaml:9"  # an alias item: where its anchor is
    with pytest.raises(HwdbError) as exc:
        parse_yaml(LAUGHS + "k: 1\nk: 2\n", "laughs.yaml")
    assert str(exc.value) == "laughs.yaml:11: k: duplicate key 'k' (first at line 10)"


def test_lines_of_a_document_read_without_its_nodes(tmp_path: Path) -> None:
    """``keep_nodes=False`` (a topology held until the records are in) composes the text
    again for a message, to the same lines."""
    path = tmp_path / "t.yaml"
    path.write_text("a: 1\nb:\n  - c: 2\n    d: [3, 4]\n", encoding="utf-8")
    kept, dropped = read_yaml(path), read_yaml(path, keep_nodes=False)
    assert dropped._root is None and kept.data == dropped.data
    assert kept.lines == dropped.lines
    assert dropped.where(("b", 0, "d", 1)) == f"{path}:4"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2\n", "t.yaml:2: YAML syntax error: {problem}"),
        ("a: b\n---\nc: d\n", "t.yaml:2: YAML syntax error: {problem}"),
        ("a: *nope\n", "t.yaml:1: YAML syntax error: {problem}"),
        ("a: \x00\n", "t.yaml:1: YAML syntax error: character '\\x00' is not allowed in YAML"),
        ("k: " + "9" * 5000 + "\n", "t.yaml: YAML value cannot be read: a number with thousands"),
        ("when: 2026-13-45\n", "t.yaml: YAML value cannot be read: month must be in 1..12"),
    ],
)
def test_refusals_read_as_before(text: str, message: str) -> None:
    with pytest.raises(HwdbError) as exc:
        parse_yaml(text, "t.yaml")
    assert str(exc.value).startswith(message.format(problem=_problem(text)))


@pytest.mark.parametrize(
    ("text", "value"),
    [("a: !!bool foo\n", " 'foo'"), ("a: !!timestamp foo\n", "")],
)
def test_a_value_its_tag_refuses_is_one_line(text: str, value: str) -> None:
    """``!!bool foo``: the loader's constructor fails without a mark (a KeyError, an
    AttributeError): one line naming the file, not a traceback."""
    with pytest.raises(HwdbError) as exc:
        parse_yaml(text, "t.yaml")
    assert str(exc.value) == (
        f"t.yaml: YAML value cannot be read: a value{value} its tag (such as !!bool or "
        "!!timestamp) does not allow"
    )


def test_max_depth_stops_reading_past_its_limit() -> None:
    """A limit stops the count after the chunk that passes it: libyaml's scanner is
    quadratic in flow nesting (some builds read 20,000 levels in seconds, 200,000 in
    minutes), so a hostile text is not read to its end. Here the end is a syntax error
    that only a reading to the end meets."""
    from fabricui.hwdb.yamlfile import DEPTH_CHUNK_EVENTS, max_depth

    deep = "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50)
    text = "[" + "1, " * DEPTH_CHUNK_EVENTS + deep + ", 1" * 5 * DEPTH_CHUNK_EVENTS + "]]\n"
    assert MAX_DEPTH < max_depth(text, limit=MAX_DEPTH) <= MAX_DEPTH + 51
    with pytest.raises(yaml.YAMLError):
        max_depth(text)
    assert max_depth("{a: [1, {b: 2}]}") == 3
