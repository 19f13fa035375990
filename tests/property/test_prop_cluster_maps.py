"""GUID-to-hostname maps and NVLink domain sources under hypothesis: damaged real samples
parse or raise a one-line ParseError (never another exception); ``--names`` and
``--domains`` on the CLI keep its contract (output, or exit 2 in one line)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _property import check_contract, mutated, run_cli
from hypothesis import given
from hypothesis import strategies as st

from fabricui.importers.common import ParseError
from fabricui.importers.guid_names import parse_names
from fabricui.importers.nvlink_domains import domains_from_trays, parse_domains

FABRIC = Path(__file__).resolve().parents[1] / "data" / "fabric"
NAMES = ["aux_guid_map/psmn_x5_guid_to_hostname.txt", "aux_guid_map/psmn_x5_spine_list.txt"]
DOMAINS = [
    "aux_guid_map/azure_gb200_nodes_clusterUUIDs_2.txt",
    "netq_nmx_export/nmx_compute_nodes_gb200_two_trays.txt",
    "nvidia_smi/gb200_fabric_unhealthy_clique2_issue_excerpt.txt",
    "nvidia_smi/azure_nvlink_fabric_insufficient_resources_pr_excerpt.txt",
    "nvidia_smi/fabric_in_progress_580_driver_issue_excerpt.txt",
]


def _text(name: str) -> str:
    return "\n".join((FABRIC / name).read_text(encoding="utf-8").split("\n")[2:])


def _pdsh(name: str) -> str:
    """An nvidia-smi -q excerpt as pdsh prints it from two trays."""
    return "\n".join(f"{host}: {line}" for host in ("t1", "t2") for line in _text(name).split("\n"))


SOURCES = [_text(n) for n in DOMAINS] + [_pdsh(n) for n in DOMAINS[2:]]


def _one_line(call) -> None:  # type: ignore[no-untyped-def]
    try:
        result = call()
    except ParseError as exc:
        assert exc.message and "\n" not in exc.message
        return
    assert all("\n" not in w for w in result.warnings)


@given(text=st.sampled_from([_text(n) for n in NAMES]).flatmap(lambda t: mutated(t)))
def test_damaged_names_files(text: str) -> None:
    """A damaged map parses (with one-line warnings) or fails in one line."""
    _one_line(lambda: parse_names(text))


@given(text=st.sampled_from(SOURCES).flatmap(lambda t: mutated(t)))
def test_damaged_domain_files(text: str) -> None:
    """A damaged domain source parses (with one-line warnings) or fails in one line."""
    _one_line(lambda: parse_domains(text))


@given(
    texts=st.lists(
        st.sampled_from([_text(n) for n in DOMAINS[2:]]).flatmap(lambda t: mutated(t)),
        min_size=1,
        max_size=4,
    )
)
def test_damaged_tray_outputs(texts: list[str]) -> None:
    """Damaged per-tray outputs: every tray is grouped or left out with a reason."""
    outputs = {f"t{i}": t for i, t in enumerate(texts)}
    result = domains_from_trays(outputs)
    assert set(result.domain_of) | set(result.left_out) == set(outputs)
    assert all("\n" not in w for w in result.warnings)


@given(
    names=st.sampled_from([_text(n) for n in NAMES]).flatmap(lambda t: mutated(t)),
    domains=st.sampled_from(SOURCES).flatmap(lambda t: mutated(t)),
)
def test_cli_contract_with_maps(names: str, domains: str) -> None:
    """``import ibnetdiscover ... --names N -o X --domains D``: a spec, or exit 2 in one
    line."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "names.txt").write_text(names, encoding="utf-8")
        (folder / "domains.txt").write_text(domains, encoding="utf-8")
        dump = FABRIC / "ibnetdiscover/psmn_x5_voltaire_qdr_ddr_full.txt"
        argv = ["import", "ibnetdiscover", str(dump), "--names", str(folder / "names.txt")]
        check_contract(run_cli(argv))
        argv += ["-o", str(folder / "c.yaml"), "--node", "gb200-nvl72"]
        check_contract(run_cli([*argv, "--domains", str(folder / "domains.txt")]))
