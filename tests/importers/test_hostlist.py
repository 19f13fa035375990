"""Slurm hostlists expand and compress as Slurm writes them; oversized ones fail fast."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricui.importers.common import ParseError
from fabricui.importers.hostlist import MAX_HOSTS, compress, expand, natural_key


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("node[001-003,100]", ["node001", "node002", "node003", "node100"]),
        ("tux[0-2],tux9", ["tux0", "tux1", "tux2", "tux9"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("compute-0-[0-1],compute-1-[5]", ["compute-0-0", "compute-0-1", "compute-1-5"]),
        ("a b\tc", ["a", "b", "c"]),
        ("a,,b", ["a", "b"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("x[1]", ["x1"]),
        ("s[0-1]", ["s0", "s1"]),
    ],
)
def test_expand(text, names):
    """Ranges, padding from the lower bound, comma and blank lists, several brackets."""
    assert expand(text) == names


def test_multi_bracket_counts():
    """``rack[1-2]-n[01-18]`` is 36 names, the leftmost bracket varying slowest."""
    names = expand("rack[1-2]-n[01-18]")
    assert len(names) == 36 and names[17] == "rack1-n18" and names[18] == "rack2-n01"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("node[1-", "'[' is never closed"),
        ("node1]", "']' without '['"),
        ("n[[1]]", "nested '['"),
        ("n[a-b]", "must hold numbers"),
        ("n[5-1]", "runs backwards"),
        ("n[1-2-3]", "must hold numbers"),
        ("n[]", "must hold numbers"),
        ("n[1234567890]", "at most 9 digits"),
        ("", "empty hostlist"),
        (" , ", "empty hostlist"),
    ],
)
def test_bad_hostlists(text, message):
    """Each malformed hostlist is one line saying what is wrong."""
    with pytest.raises(ParseError) as info:
        expand(text)
    assert message in info.value.message and "\n" not in info.value.message


def test_oversized_is_refused_before_expanding():
    """A short text standing for 10^18 names fails at once, naming the limit."""
    start = time.perf_counter()
    with pytest.raises(ParseError) as info:
        expand("a[0-999999999]b[0-999999999]")
    assert time.perf_counter() - start < 0.1
    assert f"{MAX_HOSTS:,}" in info.value.message
    with pytest.raises(ParseError, match="more than 10 names"):
        expand("n[1-11]", limit=10)


@pytest.mark.parametrize(
    ("names", "text"),
    [
        (["node001", "node002", "node003", "node100"], "node[001-003,100]"),
        (["n10", "n9", "n11"], "n[9-11]"),
        (["n09", "n10"], "n[09-10]"),
        (["b", "a"], "a,b"),
        (["x1", "x1"], "x1"),
        (["luna-0001", "luna-0003", "selene-login-01"], "luna-[0001,0003],selene-login-01"),
        ([], ""),
    ],
)
def test_compress(names, text):
    """Sorted, unique, padded numbers keep their width."""
    assert compress(names) == text


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["n", "node", "rack1-n", "x-"]), st.integers(0, 2000), st.booleans()
        ),
        max_size=60,
    )
)
def test_compress_then_expand_round_trips(items):
    """``expand(compress(names))`` gives the same set of names."""
    names = [f"{stem}{n:04d}" if padded else f"{stem}{n}" for stem, n, padded in items]
    text = compress(names)
    assert set(expand(text) if text else []) == set(names)


@given(st.text(max_size=80))
def test_any_text_expands_or_fails_in_one_line(text):
    """Whatever the text, a list of names or a one-line ParseError."""
    try:
        names = expand(text)
    except ParseError as exc:
        assert "\n" not in exc.message
    else:
        assert all(isinstance(n, str) and n for n in names)


def test_natural_key_orders_numbers_by_value():
    """n2 before n10; n1 before n01 (width breaks ties)."""
    assert sorted(["n10", "n2", "n01", "n1"], key=natural_key) == ["n1", "n01", "n2", "n10"]
