"""The commands of the issue's "Done when": the searches that keep TP inside the NVLink
domain, Meta's Llama 3 405B layout accepted and fitting, and ``strategies`` marking what
does not apply."""

from __future__ import annotations

import json

import pytest


def test_search_405b_on_16k_gpus(run_cli):
    """``plan --model llama3-405b -t h100-ib-cluster --nodes 2048 --search``: the top 3 keep
    TP within an 8-GPU node, and each says why it wins."""
    status, out, _ = run_cli(
        "plan",
        "--model",
        "llama3-405b",
        "-t",
        "h100-ib-cluster",
        "--nodes",
        "2048",
        "--search",
        "--json",
    )
    assert status == 0
    plans = json.loads(out)["plans"]
    assert len(plans) == 10
    for plan in plans[:3]:
        assert plan["layout"]["tp"] <= 8 and plan["fits"]
        assert any("inside the NVLink domain" in r for r in plan["reasons"])
    status, text, _ = run_cli(
        "plan", "--model", "llama3-405b", "-t", "h100-ib-cluster", "--nodes", "2048", "--search"
    )
    assert "why:" in text and "bubble" in text


def test_search_70b_on_the_pod(run_cli):
    """``plan --model llama3-70b -t dgx-h100-pod --search``: TP inside the node in the top 3."""
    status, out, _ = run_cli(
        "plan", "--model", "llama3-70b", "-t", "dgx-h100-pod", "--search", "--json"
    )
    assert status == 0
    plans = json.loads(out)["plans"]
    assert all(p["layout"]["tp"] <= 8 for p in plans[:3]) and all(p["fits"] for p in plans)


def test_meta_layout_is_accepted_and_fits(run_cli):
    """``--tp 8 --pp 16 --dp 128 --global-batch 2048 --dp-strategy zero2`` on 16,384 H100:
    126 layers on 16 stages (7 + 14 x 8 + 7), memory within the GPU; plain 1F1B with 16
    micro-batches on 16 stages idles half the step (MFU 25-50 %)."""
    status, out, _ = run_cli(
        "plan",
        "-m",
        "llama3-405b",
        "-t",
        "h100-ib-cluster",
        "--nodes",
        "2048",
        "--tp",
        "8",
        "--pp",
        "16",
        "--dp",
        "128",
        "--global-batch",
        "2048",
        "--dp-strategy",
        "zero2",
        "--json",
    )
    assert status == 0
    data = json.loads(out)
    assert data["fits"] and data["stage_layers"][:2] == [7, 8] and data["stage_layers"][-1] == 7
    assert data["layout"]["microbatches"] == 16 and data["layout"]["world"] == 16384
    assert 0.25 < data["mfu"] < 0.5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--dp-strategy", "zero3"), None),
        (("--cp", "2", "--tp", "4"), None),
        (("--vpp", "2", "--pp", "2", "--tp", "8"), None),
        (("--recompute", "selective", "--tp", "8"), None),
        (("--cp", "3"), "tp x pp x cp = 3 does not divide"),
        (("--vpp", "2"), "vpp 2 needs a pipeline"),
        (("--precision", "fp4"), "h100-sxm has no FP4 tensor peak"),
        (("--precision", "fp6"), "invalid choice"),
    ],
)
def test_plan_options(run_cli, argv, message):
    """New options work; bad ones are one line, exit 2."""
    status, out, err = run_cli("plan", "-m", "llama3-70b", "-t", "dgx-h100-pod", *argv)
    if message is None:
        assert status == 0 and "step per GPU" in out
    else:
        assert status == 2 and message in err and "\n" not in err.strip()


@pytest.mark.parametrize(
    ("topology", "precision", "field", "has_it"),
    [
        ("dgx-a100", "fp8", "fp8_dense_TFLOPS", ("h100-sxm", "b200", "mi325x")),
        ("dgx-h100", "fp4", "fp4_dense_TFLOPS", ("b200", "gb200", "mi355x")),
    ],
)
@pytest.mark.parametrize("mode", [(), ("--search",), ("--json",), ("--search", "--json")])
def test_a_precision_the_gpu_has_no_peak_for_is_refused(
    run_cli, topology, precision, field, has_it, mode
):
    """``--precision fp8`` on an A100 (no FP8 tensor cores) is refused as fp4 on an H100 is,
    for a plan and a search alike: one line naming the GPU, the hwdb field and the parts of
    the database that have it, nothing on stdout, exit 2."""
    status, out, err = run_cli(
        "plan", "-m", "llama3-8b", "-t", topology, "--precision", precision, *mode
    )
    line = err.strip()
    assert status == 2 and out == "" and "\n" not in line, err
    gpu = {"dgx-a100": "a100-sxm4-80gb", "dgx-h100": "h100-sxm"}[topology]
    assert f"{gpu} has no {precision.upper()} tensor peak in hwdb ({field})" in line
    assert f"precision {precision} needs one" in line
    named = line.split("in hwdb: ", 1)[1]
    assert all(part in named for part in has_it) and gpu not in named


def test_plan_mfu_option_still_works(run_cli):
    """``--mfu`` keeps the fixed-MFU compute and says so."""
    status, out, _ = run_cli("plan", "--tp", "8", "--mfu", "0.4", "--json")
    data = json.loads(out)
    assert status == 0 and data["compute_mfu"] == 0.4
    assert any("--mfu" in a for a in data["assumptions"])


def test_strategies_marks_ep_on_a_dense_model(run_cli):
    """The decision table says EP does not apply to llama3-70b, in text and JSON."""
    status, out, _ = run_cli("strategies", "-m", "llama3-70b")
    assert status == 0 and "does not apply" in out and "n/a" in out
    status, out, _ = run_cli("strategies", "-m", "llama3-70b", "--json")
    rows = {r["name"]: r for r in json.loads(out)["strategies"]}
    assert rows["ep"]["applies"] is False and rows["ep"]["comm_us_intra"] is None
    status, out, _ = run_cli("strategies", "-m", "mixtral-8x7b", "--json")
    rows = {r["name"]: r for r in json.loads(out)["strategies"]}
    assert rows["ep"]["applies"] is True and rows["ep"]["comm_us_intra"] > 0


def test_layout_in_words(run_cli):
    """``plan --layout 'tp8 fsdp'`` prices what --tp 8 --dp-strategy fsdp does; an option
    given as well wins over the words; a word it does not know is one line naming the
    option."""
    base = ("plan", "-t", "dgx-h100-pod", "--json")
    status, words, _ = run_cli(*base, "--layout", "tp8 fsdp")
    _, flags, _ = run_cli(*base, "--tp", "8", "--dp-strategy", "fsdp")
    assert status == 0 and json.loads(words) == json.loads(flags)
    status, out, _ = run_cli(*base, "--layout", "tp8 pp2", "--pp", "1")
    layout = json.loads(out)["layout"]
    assert status == 0 and (layout["tp"], layout["pp"]) == (8, 1)
    status, _, err = run_cli(*base, "--layout", "tp8 zorro")
    assert status == 2 and "--layout: unknown word 'zorro'" in err and err.count("\n") == 1


def test_a_layout_that_does_not_fit_says_so_first(run_cli):
    """A 70B model unsharded on one GPU per replica: the line under the title says it does
    not fit and what to change, before the table; a layout that fits has no such line."""
    status, out, err = run_cli("plan", "llama3-70b", "-t", "h100-ib-cluster", "--nodes", "8")
    assert status == 0, err
    second = out.splitlines()[1]
    assert second.startswith("does not fit: ") and "--search" in second
    argv = ("plan", "llama3-70b", "-t", "dgx-h100-pod", "--layout", "tp8 pp2 fsdp")
    status, out, err = run_cli(*argv)
    assert status == 0, err
    assert "does not fit" not in out


def test_step_table_shares_are_of_the_step_and_the_bubble_line_says_what_it_is():
    """By hand (0.5 s compute, 0.1 s recompute, 0.2 s bubble, 0.2 s optimizer on 4 stages
    of 6 micro-batches): every row's share is of the 1 s step (the bubble's 20.0 %, the
    step's 100.0 %); the line under it gives the bubble as 25.0 % of compute + recompute +
    bubble, beside the even-stage formula (3/9 = 33.3 %; interleaved by 2, 3/15 = 20.0 %)."""
    from fabricui.commands.plan import breakdown_lines
    from tests.training.test_training_step import toy_pipeline

    lines = breakdown_lines(toy_pipeline(), None)
    rows = {line[:19].strip(): line[19:].split() for line in lines[1:11]}
    assert rows["compute"] == ["500", "ms", "50.0%"]
    assert rows["recompute"] == ["100", "ms", "10.0%"]
    assert rows["pipeline bubble"] == ["200", "ms", "20.0%"]
    assert rows["optimizer"] == ["200", "ms", "20.0%"]
    assert rows["step"] == ["1", "s", "100.0%"]
    assert lines[11] == (
        "  exposed comm 0 of 0 communication; pipeline bubble 25.0% of compute + recompute + "
        "bubble (the pipeline's idle share; with even stages (pp-1)/(m+pp-1) = 3/9 = 33.3%)"
    )
    interleaved = breakdown_lines(toy_pipeline(vpp=2), None)[11]
    assert interleaved.endswith("with even stages (pp-1)/(vpp x m+pp-1) = 3/15 = 20.0%)")
    single = breakdown_lines(toy_pipeline(pp=1), None)[11]
    assert single.endswith("communication; no pipeline bubble (pp 1)")


def test_a_pipelined_plan_by_hand(run_cli):
    """``--pp 4 --microbatches 8 --mfu 0.4``: an even pipeline, so the bubble is exactly
    (4-1)/(8+4-1) = 3/11 of compute + bubble; the table gives it as bubble / step, and
    ``bubble_fraction_of_step`` in the JSON is that figure."""
    argv = ("plan", "-m", "llama3-8b", "-t", "dgx-h100", "--tp", "2", "--pp", "4")
    argv += ("--microbatches", "8", "--mfu", "0.4")
    status, out, _ = run_cli(*argv, "--json")
    data = json.loads(out)
    assert status == 0 and data["recompute_us"] == 0
    assert data["bubble_us"] == pytest.approx(data["compute_us"] * 3 / 8)
    assert data["bubble_fraction"] == pytest.approx(3 / 11)
    share = data["bubble_us"] / data["step_us"]
    assert data["bubble_fraction_of_step"] == pytest.approx(share)
    assert share < data["bubble_fraction"]  # the step holds communication and the optimizer
    status, text, _ = run_cli(*argv)
    row = next(line for line in text.splitlines() if line.startswith("  pipeline bubble"))
    assert row.endswith(f"{share:6.1%}")
    assert (
        "pipeline bubble 27.3% of compute + recompute + bubble (the pipeline's idle share; "
        "with even stages (pp-1)/(m+pp-1) = 3/11 = 27.3%)"
    ) in " ".join(text.split())
