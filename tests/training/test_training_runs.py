"""Run files, ``fabricui plan --run`` and the accuracy scorer: reading the shared schema,
refusing bad files with one line naming file and key, and scoring a tiny file."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from fabricui.errors import HwdbError
from fabricui.hwdb.run_file import read_run_file

DATA = Path(__file__).parents[1] / "data" / "training"
TINY = DATA / "runs_tiny.yaml"
ROOT = Path(__file__).parents[2]

#: A small valid run: Megatron GPT 1.7B layout of Narayanan et al. on 4 DGX A100 nodes.
RUN = {
    "id": "toy",
    "model": {
        "layers": 24,
        "hidden": 2304,
        "heads": 24,
        "ffn_hidden": 9216,
        "mlp": "gelu",
        "seq_len": 2048,
        "vocab": 51200,
    },
    "run": {
        "topology": {
            "gpu": "a100-sxm4-80gb",
            "nodes": 4,
            "gpus_per_node": 8,
            "intra": {"fabric": "nvswitch", "link": "nvlink3"},
            "net": {"link": "ib-hdr", "gbps": 200, "nics_per_node": 8},
        },
        "tp": 1,
        "pp": 1,
        "dp": 32,
        "global_batch": 512,
        "recompute": "full",
        "precision": "fp16",
        "step_time_s": 3.5,
    },
}


def write(tmp_path: Path, data: object, name: str = "run.yaml") -> Path:
    """Write a run file."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def with_run(**changes: object) -> dict:
    """RUN with its run block changed."""
    return {**RUN, "run": {**RUN["run"], **changes}}


def test_reads_the_shared_schema(catalog):
    """The tiny file's three entries: inline shapes, compact topology blocks, nulls kept as
    'not stated', the source's own wording ignored."""
    entries = read_run_file(TINY, catalog)
    assert [e.quality for e in entries] == ["reference", "reference", "out-of-scope"]
    first = entries[0]
    assert first.model.layers == 24 and first.model.mlp == "gelu"
    assert first.run.micro_batch is None and first.run.vpp is None
    assert first.run.topology.nodes == 4 and first.run.topology.gpu == "a100-sxm4-80gb"
    assert entries[1].run.sp is True and entries[1].run.recompute == "selective"


def test_model_id_and_topology_id(tmp_path, catalog):
    """``model`` may be an hwdb id and ``topology`` a built-in topology id."""
    path = write(
        tmp_path,
        {**with_run(topology="dgx-h100-pod", tp=8, dp=4, global_batch=4), "model": "llama3-70b"},
    )
    (entry,) = read_run_file(path, catalog)
    assert entry.model is catalog.models["llama3-70b"] and entry.run.topology.id == "dgx-h100-pod"


def test_source_wording_is_tolerated(tmp_path, catalog):
    """``mlp: swiglu (per expert)`` and the sliding-window wording are read."""
    model = {
        **RUN["model"],
        "mlp": "swiglu (per expert)",
        "attention": "alternating full / 128-token sliding window",
    }
    (entry,) = read_run_file(write(tmp_path, {**RUN, "model": model}), catalog)
    assert entry.model.mlp == "swiglu"
    assert (entry.model.sliding_window, entry.model.window_layers) == (128, 12)


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        (with_run(tpp=2), "run.tpp", "unknown key"),
        ({**RUN, "modle": {}}, "modle", "unknown key"),
        ({**RUN, "model": {**RUN["model"], "layer": 3}}, "model.layer", "unknown key"),
        (with_run(tp=5), "run.tp", "does not divide the model's 24 attention heads"),
        (with_run(tp=2), "run.dp", "= 64 GPUs, the topology has 32"),
        (with_run(pp=25, dp=1), "run.pp", "25 stages for 24 layers"),
        (with_run(ep=2, dp=16), "run.ep", "must divide the experts"),
        (with_run(global_batch=100), "run.global_batch", "not a multiple of dp x micro_batch"),
        (with_run(recompute="some"), "run.recompute", "must be one of none, selective, full"),
        (with_run(tp=0), "run.tp", "between 1 and"),
        (with_run(tp="eight"), "run.tp", "expected a whole number"),
        (with_run(sp="yes"), "run.sp", "expected true, false or null"),
        (with_run(step_time_s=-1), "run.step_time_s", "positive"),
        (with_run(topology={**RUN["run"]["topology"], "gpu": "h101"}), "gpu", "unknown gpu"),
        (with_run(precision="fp8"), "run.precision", "a100-sxm4-80gb has no FP8 tensor peak"),
        (with_run(precision="fp4"), "run.precision", "(fp4_dense_TFLOPS): precision fp4 needs"),
        ({"id": "x", "model": RUN["model"]}, "(top level)", "missing required key 'run'"),
    ],
)
def test_bad_run_files_are_one_line_naming_file_and_key(tmp_path, run_cli, data, key, message):
    """Exit 2, one line on stderr with the file, its line and the key."""
    path = write(tmp_path, data)
    status, out, err = run_cli("plan", "--run", str(path))
    assert status == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and str(path) in line and key in line and message in line, line


def test_a_model_that_cannot_fit_is_refused(tmp_path, run_cli):
    """Llama 3 405B on one 8-GPU node cannot fit even with FSDP and full recomputation."""
    data = {
        "id": "too-big",
        "model": "llama3-405b",
        "run": {"topology": "dgx-h100", "tp": 8, "pp": 1, "dp": 1, "global_batch": 1},
    }
    path = write(tmp_path, data)
    status, _, err = run_cli("plan", "--run", str(path))
    assert status == 2 and "\n" not in err.strip()
    assert str(path) in err and "run:" in err and "cannot fit in 80 GB" in err


def test_broken_yaml_is_one_line(tmp_path, run_cli):
    """A YAML syntax error names the file and line."""
    path = tmp_path / "broken.yaml"
    path.write_text("id: x\nrun: [\n", encoding="utf-8")
    status, _, err = run_cli("plan", "--run", str(path))
    assert status == 2 and "broken.yaml:" in err and "\n" not in err.strip()


def test_plan_run_text_and_json(tmp_path, run_cli):
    """Text: the breakdown, throughput, memory, assumptions and measured vs predicted;
    JSON: the same figures."""
    path = write(tmp_path, RUN)
    status, out, _ = run_cli("plan", "--run", str(path))
    assert status == 0
    for part in ("compute", "recompute", "exposed DP", "pipeline bubble", "optimizer"):
        assert part in out, part
    assert "TFLOP/s per GPU" in out and "memory per GPU" in out and "measured 3.5 s" in out
    assert "micro_batch not stated: 1" in out and "attention not stated: unfused" in out
    status, out, _ = run_cli("plan", "--run", str(path), "--json")
    data = json.loads(out)
    assert data["id"] == "toy" and data["meas_s"] == 3.5
    assert data["error"] == pytest.approx(data["pred_s"] / 3.5 - 1)
    plan = data["plan"]
    assert plan["step_s"] == pytest.approx(data["pred_s"])
    assert sum(plan["breakdown_us"].values()) == pytest.approx(plan["step_us"])
    assert {"tflops_per_gpu", "mfu", "memory", "assumptions", "recipe"} <= set(plan)


def _scorer():
    spec = importlib.util.spec_from_file_location(
        "training_accuracy", ROOT / "benchmarks" / "training_accuracy.py"
    )
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_scorer_summary_by_hand():
    """Errors 10 %, 20 %, 30 % (two optimistic): median 20 %, p90 28 %, mean signed -10 %."""
    scorer = _scorer()
    scored = [
        scorer.Scored("a", 0.9, 1.0, {}),
        scorer.Scored("b", 1.2, 1.0, {}),
        scorer.Scored("c", 0.7, 1.0, {}),
    ]
    summary = scorer.summarize(scored)
    assert summary["scored"] == 3
    assert summary["median"] == pytest.approx(0.2)
    assert summary["p90"] == pytest.approx(0.28)
    assert summary["mean_signed"] == pytest.approx((-0.1 + 0.2 - 0.3) / 3)


def test_scorer_on_the_tiny_file(capsys, run_cli):
    """Only reference entries are scored; each error is |pred / meas - 1| with the
    prediction ``plan --run`` makes; the summary is over those entries."""
    scorer = _scorer()
    assert scorer.main(["--data", str(TINY), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"summary", "families", "entries"}
    assert data["families"]["A100 Megatron"]["scored"] == 2
    ids = [e["id"] for e in data["entries"]]
    assert ids == ["narayanan21_t1_1.7b", "korthikanti22_t5_175b_seqsel"]
    errors = []
    for entry in data["entries"]:
        assert entry["error"] == pytest.approx(abs(entry["pred_s"] / entry["meas_s"] - 1))
        errors.append(entry["error"])
    summary = data["summary"]
    assert summary["scored"] == 2 and summary["median"] == pytest.approx(np.median(errors))
    assert summary["p90"] == pytest.approx(np.percentile(errors, 90))
    status, out, _ = run_cli("plan", "--run", str(TINY), "--json")
    runs = {r["id"]: r for r in json.loads(out)["runs"]}
    assert runs["narayanan21_t1_1.7b"]["pred_s"] == pytest.approx(data["entries"][0]["pred_s"])


def test_scorer_unreadable_file_exits_2(tmp_path, capsys):
    """A bad data file: one line on stderr, status 2."""
    scorer = _scorer()
    path = tmp_path / "nope.yaml"
    path.write_text("- id: x\n", encoding="utf-8")
    assert scorer.main(["--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and err.count("\n") == 1


def test_reading_a_bad_file_raises_hwdb_error(tmp_path, catalog):
    """The reader's errors are HwdbErrors (FabricErrors: exit 2 in the CLI)."""
    with pytest.raises(HwdbError, match="run.tpp"):
        read_run_file(write(tmp_path, with_run(tpp=1)), catalog)
