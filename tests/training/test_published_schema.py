"""``training_accuracy --published-schema``: run keys outside the shared data's published
entry schema are dropped before scoring, as an unseen row of the same tables states them."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[2]
TINY = ROOT / "tests" / "data" / "training" / "runs_tiny.yaml"


def _scorer():
    spec = importlib.util.spec_from_file_location(
        "training_accuracy", ROOT / "benchmarks" / "training_accuracy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_copy_keeps_only_published_run_keys(tmp_path):
    scorer = _scorer()
    rows = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    rows[0]["run"].update({"ep_overlap": True, "cuda_graph": "partial", "power_W": 500})
    source = tmp_path / "rows.yaml"
    source.write_text(yaml.safe_dump(rows), encoding="utf-8")
    (tmp_path / "out").mkdir()
    copy = scorer.published_schema(source, tmp_path / "out")
    assert copy != source
    for row in yaml.safe_load(copy.read_text(encoding="utf-8")):
        assert set(row["run"]) <= set(scorer.PUBLISHED_RUN_KEYS), row["id"]
        assert row["id"] and row["model"]  # the rest of the entry is kept
    assert "ep_overlap" in yaml.safe_load(source.read_text(encoding="utf-8"))[0]["run"]


def test_scoring_with_and_without_the_flag(tmp_path, capsys):
    """A stated setting the schema lacks changes the score; with the flag it is dropped and
    the score is that of the row without it."""
    scorer = _scorer()
    rows = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(rows), encoding="utf-8")
    for row in rows:
        row["run"]["power_W"] = 150
    stated = tmp_path / "stated.yaml"
    stated.write_text(yaml.safe_dump(rows), encoding="utf-8")

    def summary(*args: str) -> dict:
        assert scorer.main([*args, "--json"]) == 0
        return json.loads(capsys.readouterr().out)["summary"]

    base = summary("--data", str(plain))
    assert summary("--data", str(stated)) != base
    assert summary("--data", str(stated), "--published-schema") == base
