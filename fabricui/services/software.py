"""Which training software a plan assumes: the framework whose defaults fill in what is not
stated, and the attention kernel it runs on the plan's GPU.

A plan takes the framework it names, else today's default (``DEFAULT_FRAMEWORK``, on every
GPU). A published run takes the one its ``run`` block names, else the one its source names
(a README's URL or a paper's title, matched against each framework's ``match`` words, the
longest match winning; between profiles of one framework the year the source gives picks),
else the software of its GPU generation's time (``EARLY_FRAMEWORK`` on Volta and Ampere).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError, unknown_id_message

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import FrameworkSpec, KernelSpec
    from fabricui.model.run import RunEntry

#: The framework a plan assumes when it names none: today's Megatron-Core performance
#: recipes (Megatron-Bridge / NeMo), on every GPU generation.
DEFAULT_FRAMEWORK = "megatron-core"
#: The framework a published run on an early GPU (Volta, Turing, Ampere) that names none
#: ran: the Megatron-LM of its time.
EARLY_FRAMEWORK = "megatron-lm-2021"
#: GPU architectures whose published runs predate today's software.
EARLY_ARCHS = ("volta", "turing", "ampere")

_YEAR = re.compile(r"(?<!\d)(20[0-4]\d)(?!\d)")


@dataclass(frozen=True)
class Software:
    """A framework and the attention kernels of the database."""

    framework: FrameworkSpec
    """The framework."""
    kernels: tuple[KernelSpec, ...] = ()
    """Every attention kernel record."""
    why: str = ""
    """How the framework was chosen, for the plan's assumptions (empty: it was named)."""

    def kernel(self, impl: str, arch: str) -> KernelSpec | None:
        """The record of kernel ``impl`` on ``arch``, or None (the GPU's own figure)."""
        for record in self.kernels:
            if record.impl == impl and record.arch == arch:
                return record
        return None


def software_for(catalog: Catalog, framework: str | None = None) -> Software:
    """The software a plan runs: ``framework`` or ``DEFAULT_FRAMEWORK``.

    Raises:
        ConfigError: A framework the database does not have (with the nearest ids).
    """
    name = framework or DEFAULT_FRAMEWORK
    if name not in catalog.frameworks:
        raise ConfigError(unknown_id_message("framework", name, catalog.frameworks))
    why = "" if framework else f"framework not stated: {name} (today's default)"
    return Software(catalog.frameworks[name], tuple(catalog.kernels.values()), why)


def software_for_run(entry: RunEntry, catalog: Catalog, arch: str) -> Software:
    """The software a published run ran (module docstring).

    Raises:
        ConfigError: The run names a framework the database does not have.
    """
    named = entry.run.framework
    if named:
        return software_for(catalog, named)
    matched = framework_in_source(entry.source_text, catalog, arch)
    if matched is not None:
        why = f"framework not stated: {matched.id} (named by the run's source)"
        return Software(matched, tuple(catalog.kernels.values()), why)
    fallback = EARLY_FRAMEWORK if arch in EARLY_ARCHS else DEFAULT_FRAMEWORK
    if fallback not in catalog.frameworks:
        return software_for(catalog)
    why = f"framework not stated: {fallback} (the software of {arch} GPUs' runs)"
    return Software(catalog.frameworks[fallback], tuple(catalog.kernels.values()), why)


def framework_in_source(text: str, catalog: Catalog, arch: str) -> FrameworkSpec | None:
    """The framework a run's source text names, or None.

    The longest of the frameworks' ``match`` words found in ``text`` wins; between
    profiles it names alike, the one whose ``years`` hold the earliest year in the text,
    else (no year) the earliest profile on an early GPU and the latest otherwise.
    """
    words = re.sub(r"[^a-z0-9.-]+", " ", text.lower())
    padded = f" {words} "
    best: list[FrameworkSpec] = []
    best_len = 0
    for spec in catalog.frameworks.values():
        found = [w for w in spec.match if _has_word(padded, w)]
        if not found:
            continue
        length = max(len(w) for w in found)
        if length > best_len:
            best, best_len = [spec], length
        elif length == best_len:
            best.append(spec)
    if not best:
        return None
    if len(best) == 1:
        return best[0]
    years = [int(y) for y in _YEAR.findall(text)]
    if years:
        year = min(years)
        for spec in best:
            if spec.years and spec.years[0] <= year <= spec.years[-1]:
                return spec
    ordered = sorted(best, key=lambda s: s.years[0] if s.years else 0)
    return ordered[0] if arch in EARLY_ARCHS else ordered[-1]


def _has_word(padded: str, word: str) -> bool:
    """``word`` occurs in the padded text, as a word or a word's start (``megatron`` in
    ``megatron-lm``)."""
    return re.search(r"(?<![a-z0-9])" + re.escape(word), padded) is not None
