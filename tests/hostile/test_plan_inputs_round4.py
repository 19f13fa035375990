"""Hostile input to the training side (``plan``, ``plan --run``, ``strategies``, hwdb model
records): absurd sizes, settings that cannot apply, misspelled names and run files with bad
fields end in one line naming the flag or ``file:line: key path`` (status 2); what is priced
is what the text says. Each case runs the CLI in this process."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _hostile import one_error

#: A valid run: Llama 3 8B, TP 2 x DP 8 on two DGX H100 nodes.
RUN: dict = {
    "id": "mine",
    "model": "llama3-8b",
    "run": {
        "topology": {
            "gpu": "h100-sxm",
            "nodes": 2,
            "gpus_per_node": 8,
            "intra": {"fabric": "nvswitch", "link": "nvlink4"},
            "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 8},
        },
        "tp": 2,
        "pp": 1,
        "dp": 8,
        "global_batch": 64,
        "step_time_s": 1.5,
    },
}


def run_file(tmp_path: Path, listed: bool = True, **run: object) -> Path:
    """``RUN`` with ``run`` keys changed (None removes one), as a list (or one mapping)."""
    entry = {**RUN, "run": {**RUN["run"], **run}}
    entry["run"] = {k: v for k, v in entry["run"].items() if v is not None}
    path = tmp_path / "runs.yaml"
    path.write_text(yaml.safe_dump([entry] if listed else entry, sort_keys=False), "utf-8")
    return path


def line_of(path: Path, key: str) -> int:
    """The 1-based line of the first ``key:`` of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    keys = (line.strip().removeprefix("- ") for line in lines)
    return next(i for i, line in enumerate(keys, 1) if line.startswith(f"{key}:"))


# --- sizes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--seq", "1000000000000"), "--seq must be at most 2147483648"),
        (("--global-batch", "1000000000000"), "--global-batch must be at most 2147483648"),
        (("--microbatches", "1000000000000"), "--microbatches must be at most 2147483648"),
        (("--micro-batch", "3000000000"), "--micro-batch must be at most 2147483648"),
        (("--tp", "0"), "--tp must be at least 1"),
        (("--microbatches", "1000000000"), "32000000000 sequences a step, more than"),
    ],
)
def test_plan_sizes_beyond_any_run_are_one_line(run_cli, argv, said):
    """A run file refuses counts above 2^31; so do the plan's options (a 10^12-token
    sequence priced a 67-million-year step)."""
    assert said in one_error(run_cli, "plan", "-m", "llama3-8b", "-t", "dgx-h100-pod", *argv)


def test_search_refuses_the_same_sizes(run_cli):
    """``--search --seq 10^12``: the same line as the plan's."""
    err = one_error(run_cli, "plan", "--search", "--seq", "1000000000000")
    assert "--seq must be at most 2147483648" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--seq", "0"), "--seq must be at least 1 (got 0)"),
        (("--seq", "1000000000000"), "--seq must be at most 2147483648"),
        (("--microbatches", "0"), "--microbatches must be at least 1 (got 0)"),
        (("--mfu", "0"), "--mfu: MFU must be a finite number within 0.001..1 (got 0)"),
        (("--mfu", "nan"), "--mfu: MFU must be"),
    ],
)
def test_strategies_numbers_name_their_flag_as_plan_does(run_cli, argv, said):
    """``strategies --seq 10^12`` dropped TP and PP from the table with plugin warnings;
    ``--seq 0`` said 'seq and microbatches'; ``--mfu`` had its own range."""
    assert said in one_error(run_cli, "strategies", *argv)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--power-cap", "nan", "--power-cap: power cap must be between 1 and 100000 W (got nan)"),
        ("--power-cap", "-5", "--power-cap: power cap must be between 1 and 100000 W (got -5)"),
        ("--moe-imbalance", "0.5", "--moe-imbalance: MoE imbalance must be"),
        ("--moe-imbalance", "inf", "--moe-imbalance: MoE imbalance must be"),
    ],
)
def test_recipe_numbers_name_their_flag(run_cli, option, value, said):
    """The power cap and MoE imbalance were refused without saying which flag."""
    assert said in one_error(run_cli, "plan", option, value)


# --- run files: file, line and key path -----------------------------------------------------


@pytest.mark.parametrize(
    ("change", "key", "said"),
    [
        ({"moe_imbalance": 0.5}, "moe_imbalance", "MoE imbalance must be between 1 and 1000"),
        ({"power_W": 1e7}, "power_W", "power cap must be between 1 and 100000 W"),
        (
            {"grad_reduce_bytes": 1e29},
            "grad_reduce_bytes",
            "bytes per element must be between 1 and 4",
        ),
        ({"vpp": 2}, "vpp", "2 model chunks need a pipeline (pp > 1)"),
        ({"dp_strategy": "zer01"}, "dp_strategy", "nearest: zero1"),
        ({"dp_strategy": "tp"}, "dp_strategy", "got 'tp'"),
        ({"ep": 2}, "ep", "llama3-8b is dense (no experts)"),
    ],
)
def test_run_file_settings_are_refused_at_their_line(run_cli, tmp_path, change, key, said):
    """Each was refused at the entry's first line as ``run:`` (or, for grad_reduce_bytes,
    priced with the built-in DDP dropped): now ``file:line: [0].run.key``."""
    path = run_file(tmp_path, **change)
    err = one_error(run_cli, "plan", "--run", str(path))
    assert f"{path}:{line_of(path, key)}: [0].run.{key}: " in err and said in err


@pytest.mark.parametrize(
    ("where", "value", "key"),
    [("net", {"link": "ib-ndr", "gbps": float("inf"), "nics_per_node": 8}, "gbps")],
)
def test_run_topology_errors_name_the_whole_key_path(run_cli, tmp_path, where, value, key):
    """A bad field of a run's topology block named ``net.gbps``, not where it sits."""
    topology = {**RUN["run"]["topology"], where: value}
    path = run_file(tmp_path, topology=topology)
    err = one_error(run_cli, "plan", "--run", str(path))
    assert f"{path}:{line_of(path, key)}: [0].run.topology.{where}.{key}: " in err


def test_run_topology_unknown_gpu_names_the_whole_key_path(run_cli, tmp_path):
    """``[0].run.topology.gpu: unknown gpu 'h100-sxn' (nearest: h100-sxm ...)``."""
    path = run_file(tmp_path, topology={**RUN["run"]["topology"], "gpu": "h100-sxn"})
    err = one_error(run_cli, "plan", "--run", str(path))
    assert "[0].run.topology.gpu: unknown gpu 'h100-sxn' (nearest: h100-sxm" in err


# --- names ----------------------------------------------------------------------------------


def test_a_misspelled_dp_strategy_gets_the_nearest_names(run_cli):
    """``--dp-strategy zer01``: the valid names and the nearest ones."""
    err = one_error(run_cli, "plan", "--dp-strategy", "zer01")
    assert "(got 'zer01'; nearest: zero1" in err


def test_a_misspelled_strategy_gets_the_nearest_names(run_cli):
    """``--strategy zero``: not available, nearest zero1 / zero2."""
    err = one_error(run_cli, "plan", "--strategy", "zero")
    assert "strategies not available: zero; nearest: " in err and "zero1" in err


# --- options a request would not read ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--tp", "8"), "--tp"),
        (("-m", "llama3-70b"), "--model"),
        (("llama3-70b",), "MODEL"),
        (("-t", "dgx-h100"), "--topology"),
        (("--dp-strategy", "fsdp"), "--dp-strategy"),
        (("--no-sp",), "--sp/--no-sp"),
        (("--search",), "--search"),
    ],
)
def test_run_refuses_options_the_file_states(run_cli, tmp_path, argv, flag):
    """``plan --run FILE --tp 8`` priced the file's tp 2 and said nothing of --tp."""
    err = one_error(run_cli, "plan", "--run", str(run_file(tmp_path)), *argv)
    assert f"{flag} is not read with --run: the run file states" in err


@pytest.mark.parametrize("flag", ["--tp", "--pp", "--dp", "--cp", "--vpp", "--micro-batch"])
def test_search_refuses_the_degrees_it_varies(run_cli, flag):
    """``plan --search --tp 4`` ranked layouts of TP 8 as if --tp had not been given."""
    err = one_error(run_cli, "plan", "--search", flag, "2")
    assert f"{flag} prices one layout and --search ranks every layout" in err


def test_search_refuses_layout_words_that_fix_a_degree(run_cli):
    """``--layout 'tp8 fsdp' --search``: tp8 would be dropped; fsdp alone is fine."""
    err = one_error(run_cli, "plan", "--search", "--layout", "tp8 fsdp")
    assert "--layout tp8 fixes a degree" in err
    status, out, _ = run_cli("plan", "-m", "llama3-8b", "--search", "--layout", "fsdp", "--json")
    assert status == 0 and all("fsdp" in p["strategies"] for p in yaml.safe_load(out)["plans"])


def test_top_without_search_is_refused(run_cli):
    """``plan --top 3`` priced one layout and ignored --top."""
    assert "give --search too" in one_error(run_cli, "plan", "--top", "3")


# --- what the text says -------------------------------------------------------------------------


def test_pipeline_stages_are_counted_from_one(run_cli):
    """The slowest stage of four was printed as 'stage 3 of 4' (0-based); the JSON keeps
    its 0-based index."""
    argv = ("plan", "-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--pp", "4")
    status, out, _ = run_cli(*argv)
    assert status == 0
    assert "step per GPU (pipeline stage 4 of 4, the slowest):" in out
    assert "memory per GPU (pipeline stage 1 of 4, the most loaded):" in out
    data = yaml.safe_load(run_cli(*argv, "--json")[1])
    assert (data["critical_stage"], data["memory"]["stage"]) == (3, 0)
    status, out, _ = run_cli("plan", "-m", "llama3-8b", "-t", "dgx-h100", "--tp", "8")
    assert "step per GPU:" in out and "stage 0" not in out


# --- hwdb model records -----------------------------------------------------------------------

#: A valid model record; each case below changes one key.
MODEL = {
    "id": "tiny",
    "name": "Tiny",
    "params_B": 0.1,
    "layers": 4,
    "hidden": 512,
    "ffn_hidden": 2048,
    "heads": 8,
    "kv_heads": 8,
    "vocab": 32000,
    "seq_len": 2048,
    "source": "test",
}


@pytest.mark.parametrize(
    ("change", "key", "said"),
    [
        ({"kv_heads": 3}, "kv_heads", "3 key/value heads do not divide the 8 heads"),
        ({"hidden": 500}, "heads", "8 heads do not divide hidden 500; give head_dim"),
        ({"experts": 8, "experts_per_token": 16}, "experts_per_token", "more than the 8"),
        ({"experts": 8}, "experts_per_token", "an MoE model routes each token to at least one"),
        ({"experts": 8, "experts_per_token": 2, "moe_layers": 9}, "moe_layers", "more than"),
        ({"seq_len": 10**12}, "seq_len", "must be at most 2147483648"),
    ],
)
def test_hwdb_model_records_are_checked_as_run_shapes_are(run_cli, tmp_path, change, key, said):
    """A models.yaml given with --hwdb took shapes a run file refuses (3 KV heads of 8,
    16 of 8 experts per token) and priced them."""
    directory = tmp_path / "hw"
    directory.mkdir()
    path = directory / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [{**MODEL, **change}]}, sort_keys=False), "utf-8")
    err = one_error(run_cli, "plan", "-m", "tiny", "--hwdb", str(directory), "-t", "dgx-h100")
    line = line_of(path, key if key in {**MODEL, **change} else "id")
    assert f"{path}:{line}: models[0].{key}: {said}" in err


def test_a_valid_hwdb_model_record_prices(run_cli, tmp_path):
    """The same record unchanged (and with a unicode name) prices."""
    directory = tmp_path / "hw"
    directory.mkdir()
    record = {**MODEL, "name": "Tiny Ünï ☃"}
    (directory / "models.yaml").write_text(yaml.safe_dump({"models": [record]}), "utf-8")
    status, out, _ = run_cli("plan", "-m", "tiny", "--hwdb", str(directory), "-t", "dgx-h100")
    assert status == 0 and out.startswith("tiny on dgx-h100")


def test_a_named_strategy_the_layout_cannot_use_is_said(run_cli):
    """``--dp-strategy fsdp`` with dp 1: the plan priced no FSDP and said nothing, so the
    text read as an FSDP plan."""
    argv = ("plan", "-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--pp", "4")
    status, out, _ = run_cli(*argv, "--dp-strategy", "fsdp", "--json")
    data = yaml.safe_load(out)
    assert status == 0 and "fsdp" not in data["strategies"]
    assert (
        "data-parallel strategy fsdp not priced: dp x cp = 1, no data-parallel ranks to shard "
        "or reduce over"
    ) in data["assumptions"]
    status, out, _ = run_cli(*argv[:-2], "--pp", "2", "--dp-strategy", "fsdp", "--json")
    data = yaml.safe_load(out)
    assert "fsdp" in data["strategies"] and not any("not priced" in a for a in data["assumptions"])


# --- settings stated that do not apply ----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--fp8-recipe", "rowwise"), "FP8 recipe rowwise not used: precision bf16"),
        (("--recompute-modules", "core_attn"), "recompute modules core_attn not used: recompute"),
        (("--attention", "fa4"), "fa4 attention has no measured record on hopper GPUs"),
    ],
)
def test_a_stated_setting_the_plan_does_not_use_is_said(run_cli, argv, said):
    """Each was priced as if unstated, while the text named it (``fa4 attention``)."""
    status, out, _ = run_cli("plan", "-m", "llama3-8b", "-t", "dgx-h100", "--tp", "8", *argv)
    assert status == 0 and said in out


def test_moe_recompute_modules_on_a_dense_model_are_refused(run_cli, tmp_path):
    """``--recompute-modules moe`` on Llama 3 8B recomputed its dense MLP (15% slower)."""
    err = one_error(
        run_cli, "plan", "-m", "llama3-8b", "--recompute", "selective", "--recompute-modules", "moe"
    )
    assert "recompute module moe: llama3-8b is dense (no MoE layers)" in err
    path = run_file(tmp_path, recompute="selective", recompute_modules=["moe_act"])
    err = one_error(run_cli, "plan", "--run", str(path))
    line = line_of(path, "recompute_modules")
    assert f"{path}:{line}: [0].run.recompute_modules: moe_act: llama3-8b is dense" in err


# --- memory that cannot fit ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "advised", "not_advised"),
    [
        (
            ("-m", "llama3-405b", "-t", "dgx-h100", "--tp", "8", "--dp-strategy", "fsdp"),
            ["more GPUs than 8 (--nodes)"],
            ["--dp-strategy fsdp", "a larger --tp"],
        ),
        (
            ("-m", "llama3-8b", "-t", "dgx-h100", "--micro-batch", "64", "--microbatches", "1"),
            ["--recompute full", "--micro-batch 1", "a larger --cp, --tp or --pp"],
            ["--dp-strategy fsdp"],
        ),
        (
            ("-m", "llama3-70b", "-t", "dgx-h100-pod"),
            ["--dp-strategy fsdp", "a larger --tp or --pp"],
            ["--recompute full"],
        ),
        (
            ("-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--pp", "2", "--dp", "1"),
            ["more of the 32 GPUs (the layout uses 16)"],
            [],
        ),
    ],
)
def test_what_to_change_when_memory_cannot_fit(run_cli, argv, advised, not_advised):
    """'raise tp/pp, shard (--dp-strategy fsdp) or recompute' was said to every plan that did
    not fit, also to one already at TP 8 on 8 GPUs with FSDP asked for: the advice follows
    the larger part of the memory and what is already at its lightest; the JSON has it."""
    status, out, _ = run_cli("plan", *argv)
    line = out.splitlines()[1]
    assert status == 0 and line.startswith("does not fit: ") and "try: " in line
    assert all(a in line for a in advised) and not any(a in line for a in not_advised), line
    data = yaml.safe_load(run_cli("plan", *argv, "--json")[1])
    assert "; ".join(data["memory_advice"]) in line and not data["fits"]


def test_a_plan_that_fits_has_no_advice(run_cli):
    """``memory_advice`` is an empty list when the plan fits (a stable key)."""
    status, out, _ = run_cli("plan", "-m", "llama3-8b", "-t", "dgx-h100", "--tp", "8", "--json")
    data = yaml.safe_load(out)
    assert status == 0 and data["fits"] and data["memory_advice"] == []


# --- names and JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [("plan", "-m", ""), ("plan", ""), ("strategies", "--model", "")])
def test_an_empty_model_name_is_refused(run_cli, argv):
    """``-m ''`` priced the default model, llama3-70b, as if no model had been named."""
    assert "an empty model name" in one_error(run_cli, *argv)


@pytest.mark.parametrize(
    ("entry_id", "shown"),
    [("a\nb", "'a\\nb'"), ("a\x1b[31mred", "'a\\x1b[31mred'"), ("x \u202e y", "\\u202e")],
)
def test_a_run_id_must_be_one_visible_line(run_cli, tmp_path, entry_id, shown):
    """An id with a newline split the run's header in two; a right-to-left override
    reordered it on the terminal. A plain unicode id is fine."""
    path = tmp_path / "runs.yaml"
    path.write_text(yaml.safe_dump([{**RUN, "id": entry_id}]), "utf-8")
    err = one_error(run_cli, "plan", "--run", str(path))
    assert "[0].id: a run id must be one line of visible characters" in err and shown in err
    path.write_text(yaml.safe_dump([{**RUN, "id": "λ-run ☃"}]), "utf-8")
    status, out, _ = run_cli("plan", "--run", str(path))
    assert status == 0 and out.startswith("λ-run ☃: Llama 3 8B on 16 h100-sxm GPUs (2 nodes)")


def test_an_hwdb_id_must_be_one_visible_line(run_cli, tmp_path):
    """A model id with a newline was listed and priced over two lines."""
    directory = tmp_path / "hw"
    directory.mkdir()
    record = {**MODEL, "id": "tiny\nx"}
    (directory / "models.yaml").write_text(yaml.safe_dump({"models": [record]}), "utf-8")
    err = one_error(run_cli, "hwdb", "list", "models", "--hwdb", str(directory))
    assert "models[0].id: the id must be one line of visible characters" in err


def test_a_run_on_part_of_its_topology_says_so(run_cli, tmp_path):
    """dp 4 x tp 2 on a 16-GPU topology was headed 'h100-sxm x 16'; the JSON has the
    figures of the header."""
    path = run_file(tmp_path, dp=4)
    status, out, _ = run_cli("plan", "--run", str(path))
    assert status == 0 and out.startswith("mine: Llama 3 8B on 8 of 16 h100-sxm GPUs (2 nodes)")
    run = yaml.safe_load(run_cli("plan", "--run", str(path), "--json")[1])
    assert (run["gpu"], run["fabric_gpus"], run["nodes"], run["plan"]["layout"]["world"]) == (
        "h100-sxm",
        16,
        2,
        8,
    )


def test_the_text_figures_are_in_the_json(run_cli):
    """Plan: the fabric's GPUs of the header; strategies: the 'marginal above' share."""
    argv = ("plan", "-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--pp", "2", "--dp", "1")
    data = yaml.safe_load(run_cli(*argv, "--json")[1])
    assert "(16 of 32 GPUs)" in run_cli(*argv)[1]
    assert (data["layout"]["world"], data["fabric_gpus"]) == (16, 32)
    status, out, _ = run_cli("strategies", "--json")
    table = yaml.safe_load(out)
    text = run_cli("strategies")[1]
    assert f"marginal above {table['good_exposed_fraction']:.0%}" in text
    assert f"<= {table['ok_exposed_fraction']:.0%} of compute" in text


def test_interleaving_needs_as_many_micro_batches_as_stages(run_cli, tmp_path):
    """``--pp 4 --vpp 2 --microbatches 2`` was priced; Megatron-Core's interleaved schedule
    refuses fewer micro-batches than stages (so does a run file, at its vpp line)."""
    argv = ("-m", "llama3-70b", "-t", "dgx-h100-pod", "--tp", "8", "--pp", "4", "--vpp", "2")
    err = one_error(run_cli, "plan", *argv, "--microbatches", "2")
    assert "interleaving (vpp 2) needs at least pp = 4 micro-batches (got 2)" in err
    assert run_cli("plan", *argv, "--microbatches", "4")[0] == 0
    path = run_file(tmp_path, pp=4, vpp=2, dp=2, global_batch=4)
    err = one_error(run_cli, "plan", "--run", str(path))
    assert f"{path}:{line_of(path, 'vpp')}: [0].run.vpp: interleaving needs at least pp = 4" in err


def test_two_runs_with_one_id_are_refused(run_cli, tmp_path):
    """Two entries 'a' were both priced (and their JSON, keyed by id, collided)."""
    path = tmp_path / "runs.yaml"
    path.write_text(yaml.safe_dump([{**RUN, "id": "a"}, {**RUN, "id": "a"}]), "utf-8")
    err = one_error(run_cli, "plan", "--run", str(path))
    assert "[1].id: 'a' is also the id of entry [0] (line 1); ids must differ" in err


def test_one_node_is_singular(run_cli, tmp_path):
    """'(1 nodes)' in a run's header."""
    path = run_file(tmp_path, topology="dgx-h100", tp=8, dp=1, global_batch=8)
    status, out, _ = run_cli("plan", "--run", str(path))
    assert status == 0 and "on 8 h100-sxm GPUs (1 node):" in out
