"""A torchtitan-like run-file entry (Llama 3 8B on one 8-GPU H100 node) for the wording
readers' tests: each test states only the run keys and wording it is about."""

from __future__ import annotations

from pathlib import Path

import yaml

from fabricui.hwdb.run_file import read_run_file

LLAMA3_8B = {
    "name": "Llama 3 8B",
    "layers": 32,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "ffn_hidden": 14336,
    "mlp": "swiglu",
    "seq_len": 8192,
    "vocab": 128256,
}

ONE_H100_NODE = {
    "gpu": "h100-sxm",
    "nodes": 1,
    "gpus_per_node": 8,
    "intra": {"fabric": "nvswitch", "link": "nvlink4"},
}


def llama3_8b_entry(run: dict, **blocks: object) -> dict:
    """The entry with ``run`` keys over the base run and top-level ``blocks`` (``hardware``,
    ``precision``, ``parallel``, ``source`` ...) added where not None."""
    data: dict = {
        "id": "tt8b",
        "model": dict(LLAMA3_8B),
        "run": {
            "topology": dict(ONE_H100_NODE),
            "tp": 1,
            "pp": 1,
            "dp": 8,
            "global_batch": 16,
            "micro_batch": 2,
            "recompute": "selective",
            "precision": "bf16",
            "step_time_s": 2.0,
            **run,
        },
    }
    data.update({key: value for key, value in blocks.items() if value is not None})
    return data


def read_entry(tmp_path: Path, catalog, data: dict):
    """The entry as the run-file reader gives it."""
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return read_run_file(path, catalog)[0]
