"""What a run entry's own ``hardware`` wording says that its run block leaves unstated: the
power limit the GPUs ran at (``500 W power limit``) and the GPU variant (``96GB HBM2e``)
when the run block's vocabulary names only the common part (torchtitan's H100 rows ran on
96 GB HBM2e hosts at 500 W; their run blocks can say ``h100-sxm``).

Both are read strictly: a cap is a number of watts next to the words power limit or power
cap (a TDP or a datasheet maximum is not a limit the run ran at); a variant is taken only
when exactly one hwdb GPU fits. A ``power_W`` the run block states, or a GPU whose record
already has the memory named, always wins. Each value taken is said in the plan's notes.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from fabricui.bounds import POWER_CAP_W, between

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import GpuSpec
    from fabricui.model.run import RunEntry

_NUMBER = r"(?<![\d.])(\d+(?:\.\d+)?)"
_WATTS = r"\s*(?:W|watts?)(?![A-Za-z0-9])"
_LIMIT = r"power[- ](?:limit|cap)s?(?![A-Za-z])"
#: ``500 W power limit``, ``500W power cap``, ``power limit of 500 W``, ``power cap: 500W``.
_CAP = re.compile(
    rf"{_NUMBER}{_WATTS}\s+{_LIMIT}|{_LIMIT}\s*(?:of|at|=|:)?\s*{_NUMBER}{_WATTS}",
    re.IGNORECASE,
)
#: Words before a cap that make it a datasheet figure, not the limit the run ran at.
_NOT_RUN = re.compile(r"(?:max(?:imum)?|rated|datasheet|tdp|spec(?:ified)?)\W*$", re.IGNORECASE)
#: ``96GB HBM2e``, ``80 GB HBM3``, ``24GB GDDR6X``: a memory size and type.
_MEMORY = re.compile(
    rf"{_NUMBER}\s*GB\s+(HBM\d?e?|GDDR\d+X?|LPDDR\d+X?)(?![A-Za-z0-9])", re.IGNORECASE
)


def stated_power_cap_W(text: str) -> float | None:
    """The power limit the wording says the GPUs ran at [W], or None (no limit named, a
    limit outside ``bounds.POWER_CAP_W``, or two different ones)."""
    caps = set()
    for found in _CAP.finditer(text):
        if _NOT_RUN.search(text[max(0, found.start() - 24) : found.start()]):
            continue
        watts = float(found.group(1) or found.group(2))
        if between(watts, POWER_CAP_W) is None:
            caps.add(watts)
    return caps.pop() if len(caps) == 1 else None


def named_memory(text: str) -> list[tuple[float, str]]:
    """The memory sizes [GB] and types the wording names (``(96.0, "HBM2e")``), in order,
    each once."""
    out: list[tuple[float, str]] = []
    for found in _MEMORY.finditer(text):
        size_GB, kind = float(found.group(1)), found.group(2)
        if all(size_GB != s or kind.lower() != k.lower() for s, k in out):
            out.append((size_GB, kind))
    return out


def _names_type(words: str, kind: str) -> bool:
    """``words`` name the memory type ``kind`` as a word (HBM3 is not HBM3e)."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(kind)}(?![A-Za-z0-9])", words, re.I) is not None


def _has_memory(gpu: GpuSpec, size_GB: float, kind: str) -> bool:
    return gpu.memory_GB == size_GB and (
        gpu.memory_tech.lower() == kind.lower() or _names_type(gpu.name, kind)
    )


def gpu_variant(catalog: Catalog, gpu_id: str, text: str) -> tuple[str, str] | None:
    """(hwdb GPU id, the words naming it) of the variant of ``gpu_id`` the wording names:
    the one record of the same vendor and architecture with the same dense BF16 peak whose
    ``memory_GB`` is a size the wording names and whose name names that memory type. None
    when the wording names no memory, when ``gpu_id``'s record already has the memory named,
    or when no record or several fit."""
    gpu = catalog.gpus.get(gpu_id)
    memory = named_memory(text)
    if gpu is None or not memory or any(_has_memory(gpu, s, k) for s, k in memory):
        return None
    found: dict[str, str] = {}
    for size_GB, kind in memory:
        for other in catalog.gpus.values():
            if (
                other.id != gpu.id
                and (other.vendor, other.arch) == (gpu.vendor, gpu.arch)
                and other.bf16_dense_TFLOPS == gpu.bf16_dense_TFLOPS
                and other.memory_GB == size_GB
                and _names_type(other.name, kind)
            ):
                found.setdefault(other.id, f"{size_GB:g}GB {kind}")
    if len(found) != 1:
        return None
    return next(iter(found.items()))


def hardware_from_wording(entry: RunEntry, catalog: Catalog) -> tuple[RunEntry, list[str]]:
    """``entry`` with the power cap and GPU variant its ``hardware`` wording names where its
    run block leaves them unstated (module docstring), and one note per value taken."""
    from fabricui.hwdb.topology_file import superchip_defaults

    run = entry.run
    notes: list[str] = []
    text = entry.hardware_text
    if not text:
        return entry, notes
    if run.power_W is None:
        cap_W = stated_power_cap_W(text)
        if cap_W is not None:
            run = dataclasses.replace(run, power_W=cap_W)
            notes.append(f"power cap {cap_W:g} W from the entry's hardware wording")
    variant = gpu_variant(catalog, run.topology.gpu, text)
    if variant is not None:
        gpu_id, words = variant
        spec = dataclasses.replace(run.topology, gpu=gpu_id)
        run = dataclasses.replace(run, topology=superchip_defaults(spec, catalog))
        notes.append(f"GPU {gpu_id} from the entry's hardware wording ({words})")
    if run is entry.run:
        return entry, notes
    return dataclasses.replace(entry, run=run), notes
