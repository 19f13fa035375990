"""Cluster importers under hypothesis: damaged real samples of ibnetdiscover, iblinkinfo, Slurm
topology and nvidia-smi -q parse or raise a one-line ParseError (never another exception),
fast; ``-o`` writes a cluster spec that loads, or nothing at all."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _property import check_contract, mutated, no_leftovers, run_cli
from hypothesis import given
from hypothesis import strategies as st

from fabricui.importers import iblinkinfo, ibnetdiscover, nvidia_smi_q, slurm_topology
from fabricui.importers.common import ParseError

FABRIC = Path(__file__).resolve().parents[1] / "data" / "fabric"

#: Format -> (parser, small real samples of it; the 55,000-line dump is tested elsewhere).
SAMPLES = {
    "ibnetdiscover": (
        ibnetdiscover.parse,
        [
            "ibnetdiscover/nvidia_rufm_lab_hdr_fdr_small_2021.txt",
            "ibnetdiscover/manpage_2007_voltaire_sdr_dualport.txt",
            "ibnetdiscover/llnl_atlas_2006_voltaire_elided_commented.txt",
            "ibnetdiscover/oracle_sun_dcs36_single_link.txt",
            "ibnetdiscover_ports/osc_owens_pitzer_excerpt_split_mode.txt",
        ],
    ),
    "iblinkinfo": (
        iblinkinfo.parse,
        ["iblinkinfo/fau_erlangen_bladecenter_hssm_topspin_dualrail_html.txt"],
    ),
    "slurm-topology": (
        slurm_topology.parse,
        [
            "topology_conf/psmn_x5_generated_from_ibnetdiscover.txt",
            "topology_conf/cu_boulder_rmacc_summit_opa_commented.txt",
            "scontrol_show_topology/nebius_soperator_tree_root_unknown_fixture.txt",
            "topology_conf_block/azure_gb200_4x18_blocks_clusteruuid_names.txt",
            "topology_yaml/slurm_manpage_multi_topology_example.txt",
        ],
    ),
    "nvidia-smi-q": (
        nvidia_smi_q.parse,
        [
            "nvidia_smi/gb200_fabric_unhealthy_clique2_issue_excerpt.txt",
            "nvidia_smi/fabric_in_progress_580_driver_issue_excerpt.txt",
        ],
    ),
}
FORMATS = sorted(SAMPLES)


def _text(name: str) -> str:
    return "\n".join((FABRIC / name).read_text(encoding="utf-8").split("\n")[2:])


TEXTS = {fmt: [_text(n) for n in names] for fmt, (_, names) in SAMPLES.items()}


@st.composite
def pastes(draw: st.DrawFn) -> tuple[str, str]:
    """(format, a real sample of it with a few edits)."""
    fmt = draw(st.sampled_from(FORMATS))
    return fmt, draw(mutated(draw(st.sampled_from(TEXTS[fmt]))))


@given(paste=pastes())
def test_damaged_samples_parse_or_fail_in_one_line(paste: tuple[str, str]) -> None:
    """The parser returns a result with JSON and a summary, or a one-line ParseError."""
    fmt, text = paste
    parse = SAMPLES[fmt][0]
    try:
        result = parse(text)
    except ParseError as exc:
        assert exc.message and "\n" not in exc.message
        return
    assert isinstance(result.summary(), str)
    assert isinstance(result.to_json(), dict)
    assert all("\n" not in w for w in result.warnings)


@given(paste=pastes(), as_json=st.booleans())
def test_cli_contract(paste: tuple[str, str], as_json: bool) -> None:
    """``fabricui import FORMAT FILE [--json]`` on a damaged paste: output, or exit 2 in one
    line."""
    fmt, text = paste
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paste.txt"
        path.write_text(text, encoding="utf-8")
        argv = ["import", fmt, str(path)] + (["--json"] if as_json else [])
        check_contract(run_cli(argv), json_out=as_json)


@given(
    paste=pastes().filter(lambda p: p[0] != "nvidia-smi-q"),
    node=st.sampled_from(("dgx-a100", "pcie-rtx4090x2")),
)
def test_cluster_spec_is_all_or_nothing(paste: tuple[str, str], node: str) -> None:
    """``-o`` writes a cluster spec that validates, or leaves the directory untouched (Slurm
    blocks ask for a GB200-class node: gb200-nvl72 there)."""
    fmt, text = paste
    node = "gb200-nvl72" if "BlockName" in text else node
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        source = directory / "paste.txt"
        source.write_text(text, encoding="utf-8")
        target = directory / "cluster.yaml"
        outcome = run_cli(["import", fmt, str(source), "-o", str(target), "--node", node])
        check_contract(outcome)
        if outcome.status == 0:
            no_leftovers(directory, {"paste.txt", "cluster.yaml"})
            validated = run_cli(["hwdb", "validate", str(target)])
            assert validated.status == 0, validated.err
        else:
            no_leftovers(directory, {"paste.txt"})


@given(fmt=st.sampled_from(FORMATS), data=st.binary(max_size=2000))
def test_any_bytes(fmt: str, data: bytes) -> None:
    """Whatever bytes arrive on stdin: output or one error line."""
    check_contract(run_cli(["import", fmt, "-"], stdin=data))
