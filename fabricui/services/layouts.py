"""The layout the strategies view asks the engine to plan, and the words a user types for it
(``tp8 pp2 fsdp``): shared by the explorer, its ``--layout`` option and reports."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from fabricui.bounds import plan_count
from fabricui.errors import ConfigError
from fabricui.vocabulary import DP_STRATEGIES, RECOMPUTE_MODES


@dataclass(frozen=True)
class LayoutChoice:
    """What the strategies view asks the engine to plan (the ``fabricui plan`` options)."""

    tp: int = 1
    """Tensor-parallel degree."""
    pp: int = 1
    """Pipeline stages."""
    ep: int = 1
    """Expert-parallel degree."""
    dp_strategy: str = "ddp"
    """How the data-parallel dimension communicates (``DP_STRATEGIES``)."""
    cp: int = 1
    """Context-parallel degree."""
    recompute: str | None = None
    """Activation recomputation (None: the default, none)."""
    etp: int | None = None
    """Expert tensor-parallel degree (None: the default, ``tp`` when the expert groups allow
    it); a searched layout at an expert TP below its TP keeps it when picked."""

    def label(self) -> str:
        """``tp8 pp1 ep1 ddp`` (``cp2``, ``etp1`` and the recompute mode when set)."""
        experts = f"ep{self.ep}" + (f" etp{self.etp}" if self.etp else "")
        text = f"tp{self.tp} pp{self.pp} {experts} {self.dp_strategy}"
        if self.cp > 1:
            text = f"tp{self.tp} cp{self.cp} pp{self.pp} {experts} {self.dp_strategy}"
        return text + (f" {self.recompute}" if self.recompute else "")


#: A degree word of a layout: ``tp8``, ``pp=2``.
_LAYOUT_WORD = re.compile(r"^(tp|pp|ep|cp|etp)=?(\d+)$")


def parse_layout(text: str, current: LayoutChoice) -> LayoutChoice:
    """``tp8 pp2 ep1 cp2 fsdp selective`` (any order, ``tp=8`` too) -> a layout choice. An
    expert TP (``etp1``) stays while it divides the TP the words leave; one that no longer
    does returns to the default.

    Raises:
        ConfigError: An unknown word, or a degree out of ``plan_count``'s range, said with
            the word typed (``tp0: tp must be at least 1 (got 0)``), not a flag of ``plan``.
    """
    values: dict[str, object] = {}
    for word in text.lower().replace(",", " ").split():
        match = _LAYOUT_WORD.match(word)
        if match:
            name = match.group(1)
            values[name] = plan_count(f"{word}: {name}", int(match.group(2)))
        elif word in DP_STRATEGIES:
            values["dp_strategy"] = word
        elif word in RECOMPUTE_MODES:
            values["recompute"] = word
        else:
            raise ConfigError(
                f"unknown word {word!r}: use tpN ppN epN cpN etpN, one of "
                f"{', '.join(DP_STRATEGIES)} and a recompute mode ({', '.join(RECOMPUTE_MODES)})"
            )
    chosen = dataclasses.replace(current, **values)  # type: ignore[arg-type]
    if "etp" not in values and chosen.etp and chosen.tp % chosen.etp:
        chosen = dataclasses.replace(chosen, etp=None)
    return chosen
