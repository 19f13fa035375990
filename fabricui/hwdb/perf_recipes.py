"""Read the performance recipes of ``hwdb/recipes/*.yaml`` (``perf_recipes:``): what a
framework's performance recipes set per release, model, GPU, GPU count and precision
(``fabricui.model.perf_recipe.PerfRecipe``; written by ``tools/perf_recipes.py``).

They live beside the record files, not among them: they are not hardware records, and are
read only when a published run names a release of the performance summaries. Unknown keys,
wrong types and unknown words are one-line errors naming the file, line and field.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from fabricui.errors import HwdbError
from fabricui.hwdb.catalog import default_hwdb_dir
from fabricui.hwdb.schema import check_choice, check_range, convert_record
from fabricui.hwdb.yamlfile import YamlDocument, read_yaml
from fabricui.model.perf_recipe import RECIPE_PRECISIONS, PerfRecipe
from fabricui.vocabulary import CUDA_GRAPH_MODES, FP8_RECIPES, MOE_DISPATCH

#: Where the shipped recipes live, under the database directory.
RECIPES_DIR = "recipes"
_RELEASE = re.compile(r"^\d\d\.\d\d(\.\d+)?$")
_WORD = re.compile(r"^[a-z0-9_]+$")


def perf_recipes_files(hwdb_dir: Path | None = None) -> list[Path]:
    """The recipe files of a database directory (default: the shipped one)."""
    return sorted(((hwdb_dir or default_hwdb_dir()) / RECIPES_DIR).glob("*.yaml"))


def load_perf_recipes(hwdb_dir: Path | None = None) -> tuple[PerfRecipe, ...]:
    """Every recipe of a database directory's ``recipes/`` files, read once per process.

    Raises:
        HwdbError: A malformed file or entry (file, line and field).
    """
    return tuple(r for path in perf_recipes_files(hwdb_dir) for r in _read_cached(path))


@lru_cache(maxsize=8)
def _read_cached(path: Path) -> tuple[PerfRecipe, ...]:
    return parse_perf_recipes(read_yaml(path))


def parse_perf_recipes(doc: YamlDocument) -> tuple[PerfRecipe, ...]:
    """The recipes of a parsed ``perf_recipes:`` document.

    Raises:
        HwdbError: Not ``perf_recipes:`` with a list, or a malformed entry.
    """
    data = doc.data
    if not isinstance(data, dict) or set(data) != {"perf_recipes"}:
        raise HwdbError(f"{doc.where(())}: expected one key, perf_recipes: (a list of recipes)")
    items = data["perf_recipes"]
    if not isinstance(items, list):
        raise HwdbError(f"{doc.where(('perf_recipes',))}: perf_recipes: expected a list")
    return tuple(_recipe(doc, ("perf_recipes", i), item) for i, item in enumerate(items))


def _recipe(doc: YamlDocument, path: tuple, item: object) -> PerfRecipe:
    record = convert_record(doc, path, PerfRecipe, item)
    if not _RELEASE.match(record.release):
        raise HwdbError(
            f"{doc.where((*path, 'release'))}: perf_recipes[{path[1]}].release: expected "
            f"a release such as 26.08 or 26.04.01 (got {record.release!r})"
        )
    for name in ("model", "gpu"):
        if not _WORD.match(getattr(record, name)):
            raise HwdbError(
                f"{doc.where((*path, name))}: perf_recipes[{path[1]}].{name}: expected "
                f"lower-case letters, digits and _ (got {getattr(record, name)!r})"
            )
    if not record.source.strip():
        raise HwdbError(
            f"{doc.where((*path, 'source'))}: perf_recipes[{path[1]}].source: must not be empty"
        )
    check_choice(doc, (*path, "precision"), record.precision, RECIPE_PRECISIONS)
    check_range(doc, (*path, "gpus"), record.gpus, 1, 1 << 31, "GPU count")
    if record.etp is not None:
        check_range(doc, (*path, "etp"), record.etp, 1, 1 << 31, "expert tensor-parallel size")
    for name, choices in (
        ("fp8_recipe", FP8_RECIPES),
        ("cuda_graph", CUDA_GRAPH_MODES),
        ("moe_dispatch", MOE_DISPATCH),
    ):
        value = getattr(record, name)
        if value is not None:
            check_choice(doc, (*path, name), value, choices)
    return record
