"""What a run entry's own ``precision`` and ``parallel`` wording says that its run block
leaves unstated: torch.compile on or off (``bf16, torch.compile``, ``bf16, no compile``),
the FP8 scaling recipe (``float8 rowwise``; torchao's ``dynamic tensorwise scaling`` is the
engine's ``current``; ``delayed scaling``) and async TP (``async_tp: true``, ``AsyncTP``,
``enable_async_tensor_parallel``; ``vanilla TP`` is off). A published row's table states
these in words while its run block states only the published keys.

Every setting is read strictly: a phrase negated next to it (``no compile``, ``async TP
off``) says off, an unrelated word says nothing, and wording that says both on and off, or
names two recipes, gives nothing. MXFP8 and block scaling are left to the performance
recipes (``perf_recipes``, which read them for Megatron-Bridge rows). A key the run block
states always wins; each value taken is said in the plan's notes.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabricui.model.run import RunEntry

#: Words right before a phrase that negate it (``no compile``, ``without torch.compile``).
_NEGATED_BEFORE = re.compile(r"(?:\b(?:no|not|non|without|disabled?)[\s_-]*)$", re.IGNORECASE)
#: Words right after a phrase that switch it off (``torch.compile off``, ``async_tp: False``).
_OFF_AFTER = re.compile(r"^\s*(?:[:=]\s*)?(?:off|false|disabled?)\b", re.IGNORECASE)

#: torch.compile: ``torch.compile``, ``torch_compile``, ``compile: true`` (a bare
#: ``compiled`` is too often about a table).
_COMPILE = re.compile(
    r"(?<![A-Za-z0-9_])(?:torch[._]compile(?![A-Za-z0-9])|compile(?=\s*[:=]))", re.I
)
#: No torch.compile: ``no compile``, ``without compile`` (``eager, no compile``).
_NO_COMPILE = re.compile(r"(?<![A-Za-z0-9])(?:no|without)[\s_-]+compile(?![A-Za-z0-9])", re.I)
#: Async TP on: ``async TP``, ``AsyncTP``, ``async-TP``, ``async_tp``, ``async tensor
#: parallel(ism)``, ``enable_async_tensor_parallel``, Megatron's ``--tp-comm-overlap``.
_ASYNC_TP = re.compile(
    r"(?<![A-Za-z0-9])(?:enable_)?async[\s_-]*(?:tp|tensor[\s_-]*parallel(?:ism)?)"
    r"(?![A-Za-z0-9])|(?<![A-Za-z0-9])(?:--)?tp[-_]comm[-_]overlap(?![A-Za-z0-9])",
    re.IGNORECASE,
)
#: TP without overlap: ``vanilla TP``.
_VANILLA_TP = re.compile(r"(?<![A-Za-z0-9])vanilla[\s_-]*(?:tp|tensor[\s_-]*parallel)", re.I)
#: FP8 recipes by the words naming them (the engine's ``vocabulary.FP8_RECIPES`` word):
#: torchao's dynamic tensorwise scaling is per-tensor current scaling.
_RECIPE_WORDS = (
    ("rowwise", re.compile(r"(?<![A-Za-z0-9])row[\s_-]?wise(?![A-Za-z0-9])", re.I)),
    ("current", re.compile(r"(?<![A-Za-z0-9])tensor[\s_-]?wise(?![A-Za-z0-9])", re.I)),
    (
        "current",
        re.compile(r"(?<![A-Za-z0-9])(?:current[\s_-]scaling|fp8[-_ ]?cs)(?![A-Za-z0-9])", re.I),
    ),
    # ``delayed`` alone can be about something else (Megatron's delayed wgrad compute).
    (
        "delayed",
        re.compile(
            r"(?<![A-Za-z0-9])(?:delayed[\s_-]scaling|fp8[-_ ]?ds|recipe\W{0,3}delayed)"
            r"(?![A-Za-z0-9])",
            re.I,
        ),
    ),
    ("mxfp8", re.compile(r"(?<![A-Za-z0-9])(?:mxfp8|fp8[-_ ]?mx)(?![A-Za-z0-9])", re.I)),
    ("blockwise", re.compile(r"(?<![A-Za-z0-9])block[\s_-]?(?:wise|scal(?:ed|ing))", re.I)),
)
#: The recipes this module takes (the others are the performance recipes').
_TAKEN_RECIPES = ("rowwise", "current", "delayed")


def _said(text: str, found: re.Match[str]) -> bool:
    """Whether the phrase ``found`` is said on (True) or off (False) where it stands."""
    before, after = text[: found.start()], text[found.end() :]
    return not (_NEGATED_BEFORE.search(before) or _OFF_AFTER.match(after))


def _switch(text: str, on: re.Pattern[str], off: re.Pattern[str] | None = None) -> bool | None:
    """On or off as the wording says it (module docstring), or None (not said, or said
    both ways)."""
    said = {_said(text, found) for found in on.finditer(text)}
    if off is not None:
        said |= {not _said(text, found) for found in off.finditer(text)}
    return said.pop() if len(said) == 1 else None


def stated_compile(text: str) -> bool | None:
    """torch.compile on or off as the precision wording says (``bf16, torch.compile``,
    ``no compile``), or None."""
    return _switch(text, _COMPILE, _NO_COMPILE)


def stated_async_tp(text: str) -> bool | None:
    """Async TP on or off as the parallel wording says (``async_tp: true``, ``AsyncTP``,
    ``vanilla TP``), or None."""
    return _switch(text, _ASYNC_TP, _VANILLA_TP)


def stated_fp8_recipe(text: str) -> str | None:
    """The FP8 recipe the precision wording names (``rowwise``, ``current`` for tensorwise
    or current scaling, ``delayed``), or None: none named, a negated one, two different
    ones, or MXFP8 / block scaling (the performance recipes' to read)."""
    named = set()
    for recipe, words in _RECIPE_WORDS:
        for found in words.finditer(text):
            if _said(text, found):
                named.add(recipe)
    if len(named) != 1:
        return None
    recipe = named.pop()
    return recipe if recipe in _TAKEN_RECIPES else None


def _quoted(text: str, phrases: tuple[re.Pattern[str], ...], limit: int = 80) -> str:
    """The wording as a note quotes it: whole up to ``limit`` characters, else the words
    around the first of ``phrases`` it holds."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return f'"{text}"'
    starts = [m.span() for p in phrases for m in [p.search(text)] if m is not None]
    start, end = min(starts) if starts else (0, 0)
    margin = max(0, (limit - (end - start)) // 2)
    lo, hi = max(0, start - margin), min(len(text), end + margin)
    lo = text.rfind(" ", 0, lo) + 1 if lo > 0 else 0
    hi = text.find(" ", hi) if 0 <= text.find(" ", hi) < len(text) else len(text)
    return f'"{"..." if lo else ""}{text[lo:hi].strip()}{"..." if hi < len(text) else ""}"'


def _show(value: object) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)


def settings_from_wording(entry: RunEntry) -> tuple[RunEntry, list[str]]:
    """``entry`` with the compile, FP8 recipe and TP overlap settings its ``precision`` and
    ``parallel`` wording states where its run block leaves them unstated (module
    docstring), and one note per setting taken."""
    run = entry.run
    taken: dict[str, Any] = {}
    notes: list[str] = []

    def take(key: str, value: object, block: str, text: str, *phrases: re.Pattern[str]) -> None:
        if value is None or getattr(run, key) is not None:
            return
        taken[key] = value
        quoted = _quoted(text, phrases)
        notes.append(f"{key}: {_show(value)}, from the entry's {block} wording ({quoted})")

    text = entry.precision_text
    if text:
        take("compile", stated_compile(text), "precision", text, _COMPILE, _NO_COMPILE)
        recipe = stated_fp8_recipe(text) if run.precision == "fp8" else None
        words = tuple(p for r, p in _RECIPE_WORDS if r == recipe)
        take("fp8_recipe", recipe, "precision", text, *words)
    text = entry.parallel_text
    if text and run.tp > 1:
        take("tp_overlap", stated_async_tp(text), "parallel", text, _ASYNC_TP, _VANILLA_TP)
    if not taken:
        return entry, notes
    return dataclasses.replace(entry, run=dataclasses.replace(run, **taken)), notes
