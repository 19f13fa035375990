"""Hostile round six, as an ML engineer on a login node uses the newest features: ``--health``
with files that are no link health, outputs saved by PowerShell (UTF-16), ``calibrate
--held-out`` given the runs it fits, ``snapshot VIEW`` with another view's options, and
``plan --fp8-recipe`` on a GPU that cannot run it. Each case runs the CLI in this process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _hostile import DATA, one_error

SINFO = DATA / "health" / "slurm" / "sinfo_schedmd_quickstart_doc_adev_down_star.txt"
#: Eight hosts named as the sinfo sample names them (adev1, adev2, adev6 ... down there).
ADEV = """\
id: adev
gpu: h100-sxm
nodes: 8
gpus_per_node: 8
nodes_settable: false
intra: {fabric: nvswitch, sockets: 2, pcie_switches: 4}
net: {link: ib-ndr, gbps: 400, nics_per_node: 1, nic_map: [0, 0, 0, 0, 0, 0, 0, 0],
  layout: explicit}
cluster:
  switches: [L1 leaf, L2 leaf, L3 leaf, L4 leaf, S1 spine]
  hosts: [adev1 L1, adev2 L1, adev6 L2, adev7 L2, adev8 L3, adev13 L3, adev14 L4, adev15 L4]
  cables: [L1 S1 2 400, L2 S1 2 400, L3 S1 2 400, L4 S1 2 400]
"""


@pytest.fixture
def adev(tmp_path: Path) -> str:
    path = tmp_path / "adev.yaml"
    path.write_text(ADEV)
    return str(path)


def test_a_slurm_listing_given_as_health_is_said_to_change_nothing(run_cli, adev):
    """place --health sinfo.txt (down nodes): the pick is not the fabric as sinfo says it
    is, so stderr says the file is no link health and what reads it; --json carries it."""
    status, out, err = run_cli("place", "2", "-t", adev, "--health", str(SINFO))
    assert status == 0, err
    note = [line for line in err.splitlines() if "not link health" in line]
    assert len(note) == 1 and note[0].startswith("fabricui: note: "), err
    assert "sinfo" in note[0] and "place --free" in note[0]
    status, out, err = run_cli("path", "0", "9", "-t", adev, "--json", "--health", str(SINFO))
    assert status == 0, err
    notes = json.loads(out)["health"]["notes"]
    assert len(notes) == 1 and "not link health" in notes[0]


def test_the_doctor_says_the_slurm_note_once(run_cli, adev):
    """The doctor's report prints the note; its stderr lines do not repeat it."""
    status, out, err = run_cli("doctor", "-t", adev, "--health", str(SINFO))
    assert status == 0, err
    assert "not link health" in out
    assert "not link health" not in err


LOG = DATA / "topo" / "nccl_debug_logs" / "nccl_1584_h100_nvls_available_prefix_stripped_2_24_3.txt"
RESULTS = DATA / "nccl_tests" / "h100_2node_degraded_default_all_reduce_perf.txt"


def _utf16(tmp_path: Path, source: Path, name: str) -> str:
    """``source`` as PowerShell's ``>`` saves it: UTF-16 with a byte-order mark."""
    path = tmp_path / name
    path.write_bytes(source.read_text().encode("utf-16"))
    return str(path)


@pytest.mark.parametrize(
    ("argv", "source"),
    [
        (("doctor", "{}"), LOG),
        (("calibrate", "-t", "dgx-h100-pod", "--nodes", "2", "{}"), RESULTS),
    ],
    ids=["doctor-log", "calibrate-results"],
)
def test_a_utf16_output_reads_as_its_utf8_text(run_cli, tmp_path, argv, source):
    """A log or nccl-tests output saved by PowerShell is text, not 'a binary file': the
    report is the UTF-8 file's, its name aside."""
    plain = tmp_path / "plain.txt"
    plain.write_text(source.read_text())
    wide = _utf16(tmp_path, source, "wide.txt")
    status, utf16_out, err = run_cli(*(a.format(wide) for a in argv))
    assert status == 0, err
    status, utf8_out, err = run_cli(*(a.format(plain) for a in argv))
    assert status == 0, err
    assert utf16_out.replace(wide, str(plain)) == utf8_out


MEASUREMENTS = DATA / "nccl_tests" / "h100_2node_degraded_measurements.yaml"


@pytest.mark.parametrize("copy", [False, True], ids=["same-file", "a-copy"])
def test_held_out_results_that_are_the_fitted_run_are_refused(run_cli, tmp_path, copy):
    """calibrate F --held-out F (or a copy of F): the held-out rows would be the fitted
    rows, a check that checks nothing; one line saying so."""
    held = RESULTS
    if copy:
        held = tmp_path / "copy.txt"
        held.write_text(RESULTS.read_text())
    err = one_error(
        run_cli, "calibrate", "-t", "dgx-h100-pod", "--nodes", "2", str(RESULTS),
        "--held-out", str(held),
    )  # fmt: skip
    assert "every run in it is a run the fit uses" in err
    assert ("repeats the fitted run" in err) == copy


def test_a_fitted_entry_is_left_out_of_the_held_out_yaml(run_cli):
    """calibrate M.yaml --entry E --held-out M.yaml: E is fitted, the other entries check
    it; E's rows are not counted as held out, and stderr says so."""
    entries = [
        line.split(":", 1)[1].strip()
        for line in MEASUREMENTS.read_text().splitlines()
        if line.startswith("- id:")
    ]
    assert len(entries) >= 2
    status, out, err = run_cli(
        "calibrate", "-t", "dgx-h100-pod", str(MEASUREMENTS), "--entry", entries[0],
        "--held-out", str(MEASUREMENTS), "--json",
    )  # fmt: skip
    assert status == 0, err
    report = json.loads(out)
    sources = [run["source"] for run in report["runs"]]
    assert len(sources) == len(set(sources)) == len(entries)
    fitted = [run for run in report["runs"] if run["entry"] == entries[0]]
    assert {row["set"] for row in fitted[0]["rows"]} != {"held_out"}
    assert report["held_out_repeats"] == [
        {"source": fitted[0]["source"], "fitted": fitted[0]["source"]}
    ]
    assert "is also a fitted run" in err


@pytest.mark.parametrize(
    ("view", "option", "owner"),
    [
        ("collectives", ("--model", "llama3-8b"), "strategies"),
        ("pyramid", ("--sweep", "8:1G"), "collectives"),
        ("strategies", ("--nccl", "2.21"), "collectives"),
        ("plugins", ("--env", "NCCL_ALGO=ring"), "collectives"),
        ("topology", ("--search",), "strategies"),
        ("collectives", ("--jobs", str(SINFO)), "topology"),
    ],
)
def test_an_option_of_another_view_is_refused(run_cli, tmp_path, view, option, owner):
    """snapshot collectives --model M rendered the collectives without a word about M:
    one line naming the view that reads the option, and no file written."""
    out = tmp_path / "report.md"
    err = one_error(run_cli, "snapshot", view, *option, "-o", str(out))
    assert f"snapshot {view}: {option[0]} is an option of the {owner} view" in err
    assert not out.exists() and not list(tmp_path.iterdir())


def test_every_view_option_belongs_to_a_view():
    """The refusal's table names views that exist, each flag once."""
    from fabricui.commands.snapshot import VIEW_OPTIONS
    from fabricui.vocabulary import VIEWS

    assert {owner for _, _, owner in VIEW_OPTIONS} <= set(VIEWS)
    flags = [flag for _, flag, _ in VIEW_OPTIONS]
    assert len(flags) == len(set(flags))


@pytest.mark.parametrize("topology", ["dgx-h100", "mi300x-node"])
def test_mxfp8_on_a_gpu_without_mx_scaling_is_refused(run_cli, topology):
    """plan --precision fp8 --fp8-recipe mxfp8 on Hopper (or CDNA3) priced a recipe its
    tensor cores cannot run: one line naming the GPU, the parts that can and the other
    recipes."""
    err = one_error(
        run_cli, "plan", "-t", topology, "--tp", "8", "--precision", "fp8", "--fp8-recipe", "mxfp8"
    )
    assert "--fp8-recipe mxfp8 needs tensor cores that apply MX block scales" in err
    assert "b200" in err and "mi355x" in err and "use another --fp8-recipe" in err


def test_mxfp8_on_blackwell_is_priced(run_cli):
    """The same on B200 prices the step."""
    status, out, err = run_cli(
        "plan", "-t", "dgx-b200", "--tp", "8", "--precision", "fp8", "--fp8-recipe", "mxfp8",
        "--json",
    )  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["recipe"]["fp8_recipe"] == "mxfp8"


def test_a_comment_line_of_an_ibstat_file_is_no_error_of_the_output():
    """A '# ...' line the user wrote above an ibstat output (here one whose words include
    'failed') is not 'error in the output'; the output's own ibpanic line still is."""
    from fabricui.importers.ibstat import parse

    source = (
        DATA
        / "health"
        / "infiniband"
        / ("ibstat_azure_a100_8x_hdr_vf_partial_output_ibpanic_mlx5_8.txt")
    )
    text = source.read_text()
    assert text.startswith("# source:") and "failed" in text.splitlines()[0]
    parsed = parse(text)
    assert [line.split(":")[0] for line in parsed.errors] == ["ibpanic"]


@pytest.mark.parametrize(
    "argv",
    [
        ("calibrate", "-t", "dgx-h100-pod", "--nodes", "2", str(RESULTS), "-o", "-"),
        ("collective", "all_reduce", "1G", "--tuner", "-"),
        ("probe", "-o", "-"),
    ],
    ids=["calibrate-o", "collective-tuner", "probe-o"],
)
def test_a_dash_is_no_file_name_where_the_report_owns_stdout(run_cli, tmp_path, monkeypatch, argv):
    """-o - wrote a file (probe: a folder) called '-' in the current directory: one line,
    nothing written."""
    monkeypatch.chdir(tmp_path)
    err = one_error(run_cli, *argv)
    assert "'-' is not standard output here" in err
    assert not list(tmp_path.iterdir())


def _fp8_run(tmp_path: Path, topology: str, recipe: str) -> str:
    """A run file whose run block states FP8 with the FP8 recipe ``recipe``."""
    path = tmp_path / f"{topology}_{recipe}.yaml"
    path.write_text(
        f"id: fp8-{recipe}\nmodel: llama3-8b\n"
        f"run: {{topology: {topology}, tp: 8, pp: 1, dp: 1, global_batch: 8,\n"
        f"  precision: fp8, fp8_recipe: {recipe}}}\n"
    )
    return str(path)


def test_a_run_file_stating_mxfp8_on_hopper_is_refused_as_the_flag_is(run_cli, tmp_path):
    """plan --run FILE whose run block says fp8_recipe mxfp8 on H100 went around the
    refusal of --fp8-recipe mxfp8: the same check, one line naming the file and key."""
    path = _fp8_run(tmp_path, "dgx-h100", "mxfp8")
    err = one_error(run_cli, "plan", "--run", path)
    assert path in err and "run.fp8_recipe" in err
    assert "fp8_recipe mxfp8 needs tensor cores that apply MX block scales" in err
    flag = one_error(
        run_cli, "plan", "-t", "dgx-h100", "--tp", "8", "--precision", "fp8",
        "--fp8-recipe", "mxfp8",
    )  # fmt: skip
    why = err.split("fp8_recipe mxfp8 ", 1)[1].replace("fp8_recipe", "--fp8-recipe")
    assert why == flag.split("--fp8-recipe mxfp8 ", 1)[1]
    for topology, recipe in (("dgx-h100", "current"), ("dgx-b200", "mxfp8")):
        status, out, err = run_cli("plan", "--run", _fp8_run(tmp_path, topology, recipe), "--json")
        assert status == 0, err
        assert json.loads(out)["plan"]["recipe"]["fp8_recipe"] == recipe


def test_doctor_refuses_an_env_word_as_collective_does(run_cli):
    """doctor LOG --env FOO=1 took a variable nothing reads and said nothing: the same one
    line as collective --env FOO=1."""
    doctor = one_error(run_cli, "doctor", str(LOG), "--env", "FOO=1")
    collective = one_error(run_cli, "collective", "all_reduce", "1G", "--env", "FOO=1")
    assert doctor == collective and "--env 'FOO=1'" in doctor


def test_doctor_says_which_env_settings_change_nothing(run_cli):
    """A job variable the doctor's checks do not read (NCCL_ALGO) is said on stderr, once,
    naming it and none of those it reads; the report is the one without it."""
    status, plain, err = run_cli("doctor", str(LOG), "--env", "NCCL_IB_DISABLE=1")
    assert status == 0 and "--env" not in err, err
    status, out, err = run_cli(
        "doctor", str(LOG), "--env", "NCCL_ALGO=ring", "--env", "NCCL_IB_DISABLE=1"
    )
    assert status == 0 and out == plain
    warned = [line for line in err.splitlines() if "changes nothing" in line]
    assert len(warned) == 1 and warned[0].startswith("fabricui: warning: --env NCCL_ALGO ")


def test_the_doctor_reads_the_env_names_it_says_it_reads():
    """ENV_READ (what the warning and --help name) is every variable the log's checks look
    up in the settings, and no other."""
    import re

    import fabricui.services.doctor as doctor
    from fabricui.services.doctor_codes import ENV_READ

    read = set(re.findall(r'settings\.get\("([A-Z0-9_]+)"', Path(doctor.__file__).read_text()))
    assert read == set(ENV_READ)


def test_the_markdown_as_it_is_section_carries_the_slurm_note(run_cli, adev, tmp_path):
    """snapshot VIEW --health sinfo.txt --format md said 'They mark nothing on this fabric'
    without the note stderr and --json give: the section lists it, in the same words."""
    status, report, err = run_cli(
        "snapshot", "topology", "-t", adev, "--health", str(SINFO), "--format", "md", "-o", "-"
    )  # fmt: skip
    assert status == 0, err
    section = report.split("## As it is", 1)[1].split("\n## ", 1)[0]
    status, out, err = run_cli("path", "0", "9", "-t", adev, "--json", "--health", str(SINFO))
    assert status == 0, err
    (note,) = json.loads(out)["health"]["notes"]
    assert "They mark nothing on this fabric" in section
    assert f"- {note}\n" in section and "not link health" in note


def test_a_held_out_run_given_twice_is_counted_once(run_cli, tmp_path):
    """calibrate F --held-out H --held-out H-copy --held-out H counted H's rows three
    times in the held-out median: once, each repeat said on stderr and in
    held_out_repeats (fitted null, held_out the run kept)."""
    fitted = DATA / "nccl_tests" / "h100_2node_degraded_ring_all_reduce_perf.txt"
    copy = tmp_path / "copy.txt"
    copy.write_text(RESULTS.read_text())
    status, out, err = run_cli(
        "calibrate", "-t", "dgx-h100", str(fitted), "--held-out", str(RESULTS),
        "--held-out", str(copy), "--held-out", str(RESULTS), "--json",
    )  # fmt: skip
    assert status == 0, err
    report = json.loads(out)
    held = [run["source"] for run in report["runs"] if run["source"].startswith(str(RESULTS))]
    assert len(held) == 1 and not any(str(copy) in run["source"] for run in report["runs"])
    assert report["held_out_repeats"] == [
        {"source": held[0].replace(str(RESULTS), str(copy)), "fitted": None, "held_out": held[0]},
        {"source": held[0], "fitted": None, "held_out": held[0]},
    ]
    warned = [line for line in err.splitlines() if "counted once" in line]
    assert len(warned) == 2 and "repeats the held-out run" in warned[0], err
    assert "is given twice as --held-out" in warned[1]
