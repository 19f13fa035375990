"""A layout's expert TP in the strategies view's layout choice: typed (``etp1``), kept when
a searched layout runs one below its TP, and priced as chosen."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.loaded import LoadedFabric
from fabricui.services.reports import layout_words
from fabricui.services.requests import TopologyRequest


def test_an_expert_tp_word_is_read_and_labelled():
    choice = parse_layout("tp4 ep8 etp1 zero1", LayoutChoice())
    assert (choice.tp, choice.ep, choice.etp, choice.dp_strategy) == (4, 8, 1, "zero1")
    assert choice.label() == "tp4 pp1 ep8 etp1 zero1"
    assert parse_layout(choice.label(), LayoutChoice()) == choice
    assert LayoutChoice(tp=4, ep=8).label() == "tp4 pp1 ep8 ddp"


def test_an_expert_tp_stays_while_it_divides_the_tp_typed():
    """``tp2`` over ``tp4 etp2`` keeps ETP 2; ``tp3`` leaves no room for it: the default."""
    current = LayoutChoice(tp=4, ep=8, etp=2)
    assert parse_layout("tp2", current).etp == 2
    assert parse_layout("tp3", current).etp is None
    assert parse_layout("tp3 etp1", current).etp == 1


def test_an_expert_tp_word_out_of_range_is_refused_in_the_words_typed():
    with pytest.raises(ConfigError, match="etp0"):
        parse_layout("etp0", LayoutChoice())


def test_a_chosen_expert_tp_is_priced_and_named(catalog):
    """Mixtral on 16 H100s at TP 4 x EP 4: ETP 1 as chosen (not the default ETP = TP), and
    the plan's layout words say so."""
    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod", nodes=2), catalog=catalog)
    chosen = data.plan("mixtral-8x7b", LayoutChoice(tp=4, ep=4, etp=1, dp_strategy="zero1"))
    default = data.plan("mixtral-8x7b", LayoutChoice(tp=4, ep=4, dp_strategy="zero1"))
    assert chosen.layout.expert_tp == 1
    assert default.layout.expert_tp != 1
    assert "etp1" in layout_words(chosen).split()
    assert not any(word.startswith("etp") for word in layout_words(default).split())


def test_the_search_table_names_an_expert_tp_below_the_tp(catalog):
    """The strategies view's search row: EP 4 at ETP 1 has 1 in its etp column; at ETP =
    TP, ``-``."""
    from fabricui.tui.screens.strategies import search_cells

    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod", nodes=2), catalog=catalog)
    chosen = data.plan("mixtral-8x7b", LayoutChoice(tp=4, ep=4, etp=1, dp_strategy="zero1"))
    default = data.plan("mixtral-8x7b", LayoutChoice(tp=4, ep=4, dp_strategy="zero1"))
    assert search_cells(1, chosen)[6:8] == ("4", "1")
    assert search_cells(1, default)[6:8] == ("4", "-")


def test_the_layout_line_names_an_expert_tp_below_the_tp(catalog):
    from fabricui.services.reports import layout_line

    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod", nodes=2), catalog=catalog)
    chosen = data.plan("mixtral-8x7b", LayoutChoice(tp=4, ep=4, etp=1, dp_strategy="zero1"))
    default = data.plan("mixtral-8x7b", LayoutChoice(tp=4, ep=4, dp_strategy="zero1"))
    assert "(ep 4, etp 1)" in layout_line(chosen.layout)
    assert "(ep 4)" in layout_line(default.layout)
