"""The NCCL log's message forms read fast: each shortcut finds exactly what the plain
regular expression finds (the patterns' own ``search``/``findall`` are the reference)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fabricui.importers import nccl_log_forms as forms
from fabricui.importers.nccl_log import _split_line, parse_nccl_log

SAMPLES = Path(__file__).parents[1] / "data" / "topo" / "nccl_debug_logs"
DOCTOR_DATA = Path(__file__).parents[1] / "doctor" / "data"

#: Pieces the random messages are made of: the literals the shortcuts look for, digits,
#: blanks, and characters ``re`` treats specially (K's Kelvin sign, a dotted capital I
#: whose lowercase is longer, Arabic-Indic digits, a no-break space).
PIECES = [
    " coll channels",
    "coll channels",
    " nvls channels",
    "nvlsChannels ",
    "nNodes ",
    " localRanks ",
    "rank ",
    "RANK ",
    "ran\u212a ",
    " nRanks ",
    " nranks ",
    "nvmlDev ",
    "cudaDev ",
    "NCCL version ",
    "2.18.3+cuda12.1",
    "H100",
    "GB200",
    "L40S",
    "A10G",
    "T4",
    "x",
    "_",
    "-",
    "\u0130",
    "\u0663",
    "\u00a0",
    " ",
    "0",
    "7",
    "12",
    "123456789",
    "1234567890",
]
messages = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


def sample_messages() -> list[str]:
    """Every message of the NCCL_DEBUG samples and the doctor's test logs."""
    paths = [*sorted(SAMPLES.glob("*.txt")), *sorted(DOCTOR_DATA.glob("*.log"))]
    return [
        _split_line(line)[2]
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@pytest.mark.parametrize(
    ("pattern", "anchors"),
    [
        (forms._VERSION, forms._VERSION_ANCHORS),
        (forms._COLL_CHANNELS, forms._COLL_ANCHORS),
        (forms._NVLS_CHANNELS, forms._NVLS_ANCHORS),
        (forms._NODES, forms._NODES_ANCHORS),
        *forms._DEVICES,
    ],
)
@given(msg=messages)
@example(msg="1234567890 coll channels, 12 coll channels")
@example(msg="4 nvls channels nvlsChannels 2")
@example(msg="nvlsChannels 3 4 nvls channels")
def test_search_near_finds_what_search_finds(pattern, anchors, msg):
    """The anchored search returns the leftmost match, groups and span as ``search``."""
    expected = pattern.search(msg)
    found = forms._search_near(pattern, msg, anchors)
    assert (found and (found.span(), found.groups())) == (
        expected and (expected.span(), expected.groups())
    )


@given(msg=messages)
@example(msg="xrank 1 nranks 2 rank 3 nRanks 4")
@example(msg="ran\u212a 5 nranks 6")
@example(msg="\u0130rank 5 nranks 6")
def test_comm_search_finds_what_search_finds(msg):
    """``rank R nranks N`` (any case) is found as ``_COMM.search`` finds it."""
    expected = forms._COMM.search(msg)
    found = forms._find_comm(msg, msg.lower())
    assert (found and (found.span(), found.groups())) == (
        expected and (expected.span(), expected.groups())
    )


@given(msg=messages)
@example(msg="H100 xH100 H100x _H100 \u0663H100 GB200,A10G L40S L40Sx")
def test_gpu_names_are_what_findall_finds(msg):
    """Every GPU name, in order, as ``GPU_NAME.findall``."""
    assert forms.gpu_names(msg) == forms.GPU_NAME.findall(msg)


def reference_ring_list(msg: str) -> tuple[int, int, list[int] | None] | None:
    """A ring list read one rank at a time with ``-?\\d+``."""
    head = forms._RING_HEAD.match(msg) if len(msg) <= forms._MAX_RING_LINE else None
    if head is None or forms._RING_BODY.fullmatch(msg, head.end()) is None:
        return None
    order: list[int] = []
    for rank in re.finditer(r"-?\d+", msg[head.end() :]):
        end = head.end() + rank.end()
        if end < len(msg) and not msg[end].isspace():
            return None
        if len(order) <= forms._MAX_RING:
            order.append(int(rank.group()))
    return int(head.group(1)), int(head.group(2)), order if len(order) <= forms._MAX_RING else None


ring_tokens = st.sampled_from(["0", "1", "17", "-1", "--3", "-", "---", "1-2", "3-", "007"])
ring_blanks = st.sampled_from([" ", "  ", "\t", "\u00a0", " \u2003 "])


@given(
    tokens=st.lists(st.tuples(ring_tokens, ring_blanks), max_size=30),
    chunk=st.integers(1, 8),
    most=st.integers(0, 12),
)
@example(tokens=[("1", " ")] * 13, chunk=3, most=12)
@example(tokens=[("1", " ")] * 14 + [("1-2", " ")], chunk=3, most=12)
def test_ring_list_reads_as_one_rank_at_a_time(tokens, chunk, most):
    """Ranks converted a chunk at a time (any chunk size) give the ring, the ``None`` of
    a list past the longest ring and the refusal of ``1-2`` as rank-by-rank reading."""
    msg = "Channel 00/02 :  5 " + "".join(t + b for t, b in tokens).rstrip("\u00a0 \t\u2003")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(forms, "_RING_CHUNK", chunk)
        patch.setattr(forms, "_MAX_RING", most)
        assert forms._ring_list(msg) == reference_ring_list(msg)


def test_every_form_starts_with_its_initials():
    """A form said to start with certain characters matches no sample message starting
    with another one, even with its first character replaced."""
    messages = sample_messages()
    others = "abcxyzABCDGHLNPRSTU0123456789+=-_ #[/\u212a\u0130"
    checked = set()
    for initials, find, _handle in forms._MESSAGE_FORMS:
        if not initials:
            continue
        for msg in messages:
            if find(msg):
                assert msg[:1] in initials, (find, msg)
                checked.add(find)
                for other in others:
                    if other not in initials:
                        assert not find(other + msg[1:]), (find, other + msg[1:])
    assert len(checked) >= 12  # the samples hold most forms


def test_forms_by_initial_keep_the_order():
    """Each message is tried against the same forms, in the same order, as before the
    table: the forms its first character allows."""
    every = [(find, handle) for _i, find, handle in forms._MESSAGE_FORMS]
    for initial, tried in forms._FORMS_BY_INITIAL.items():
        assert list(tried) == [
            (find, handle)
            for initials, find, handle in forms._MESSAGE_FORMS
            if not initials or initial in initials
        ]
        assert [every.index(form) for form in tried] == sorted(every.index(f) for f in tried)


def test_a_rank_too_long_for_a_number_is_no_ring():
    """A ring list holding a rank of 5,000 digits is not read as a ring (no traceback)."""
    log = parse_nccl_log("h:1:1 [0] NCCL INFO Channel 00/02 : 0 " + "1" * 5000 + " 2\n")
    assert log.rings == {} and log.ring_channels is None


TUNER_PIECES = [
    *forms._TUNER_PREFIXES,
    "TUNER/Plugin: Using ",
    "tuner plugin ",
    "Using tuner plugin: ",
    "nccl-tuner",
    "libnccl-tuner-gib.so",
    "'",
    ".",
    " ",
    "\t",
    "\n",
    "\u00a0",
    "\u2003",
    "x",
]


@given(st.lists(st.sampled_from(TUNER_PIECES), max_size=12).map("".join))
@example("TUNER/Plugin: Using tuner plugin '.  ")
@example("Using tuner plugin: '.")
@example("Using tuner plugin: ''")
@example("TUNER/Plugin: Using   ")
@example("Successfully loaded external tuner plugin x'.\n")
@example("Successfully loaded external tuner plugin x.'")
def test_the_tuner_line_is_read_as_its_pattern_reads_it(msg):
    """``find_tuner_in_use`` finds the name ``_TUNER_IN_USE.match`` finds, or none."""
    reference = forms._TUNER_IN_USE.match(msg)
    found = forms.find_tuner_in_use(msg)
    assert (found and found.group("name")) == (reference and reference.group("name"))


def test_a_long_blank_run_after_a_tuner_name_reads_in_linear_time():
    """40,000 blanks after the name: read at once (the pattern takes seconds, quadratic)."""
    import time

    started = time.perf_counter()
    found = forms.find_tuner_in_use("Using tuner plugin: 'gib" + " " * 40_000 + "x")
    assert found is not None and found.group("name") == "gib" + " " * 40_000 + "x"
    assert time.perf_counter() - started < 0.5
