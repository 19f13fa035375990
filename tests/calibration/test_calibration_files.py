"""Reading nccl-tests output and measurements YAML; the overlay file and applying it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.errors import ConfigError, HwdbError
from fabricui.hwdb.overlay import (
    CalibrationOverlay,
    LinkCalibration,
    apply_overlay,
    overlay_yaml,
    parse_overlay,
    read_overlay,
    write_overlay,
)
from fabricui.hwdb.resolve import resolve_topology
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.importers.nccl_tests import (
    EntryNode,
    ResultsError,
    op_from_name,
    parse_nccl_tests,
    read_results,
)
from fabricui.plugins import PluginHost
from fabricui.plugins import host as plugins_module
from fabricui.services.session import load_catalog_with_plugins

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"
DEFAULT = DATA / "h100_2node_degraded_default_all_reduce_perf.txt"
MEASUREMENTS = DATA / "h100_2node_degraded_measurements.yaml"
SHARED = Path(__file__).parents[1] / "data" / "nccl" / "measurements.yaml"

MODERN = """\
# nccl-tests version 2.18.3 nccl-headers=23003 nccl-library=23003
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 1 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid  14010 on hostA device  0 [0000:06:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  14011 on hostA device  1 [0000:09:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  16479 on hostB device  0 [0000:06:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  16480 on hostB device  1 [0000:09:00] NVIDIA H100 80GB HBM3
hostA:14010:14010 [0] NCCL INFO NCCL_ALGO set by environment to Ring
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024            64     float    none      -1    20.00    0.05    0.04      0    19.00    0.05    0.04      0
        2048           128     float    none      -1    21.00    0.10    0.07      0    19.50    0.11    0.08      0
        4096           256     float    none      -1 hostA: Test CUDA failure common.cu:389 'an illegal memory access'
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.05
"""  # noqa: E501


def test_nccl_tests_fixture():
    """The fixture's table: 11 out-of-place rows, 16 ranks on 2 hosts, NCCL_ALGO read."""
    (run,) = read_results(RING)
    assert run.op == "all_reduce"
    assert (run.nranks, run.nodes, run.single_process) == (16, 2, False)
    assert run.env == {"NCCL_ALGO": "RING"}
    assert run.gpu == "NVIDIA H100 80GB HBM3"
    assert len(run.rows) == 11
    first, last = run.rows[0], run.rows[-1]
    assert (first.size_bytes, first.time_us, first.algbw_GBps, first.busbw_GBps) == (
        8388608,
        407.5,
        20.59,
        38.6,
    )
    assert (last.size_bytes, last.time_us) == (8589934592, 179148.0)
    assert run.source.endswith(":32")


def test_modern_header_skips_failed_rows_and_uses_out_of_place():
    """Header-driven columns; a row cut by an error is skipped; in-place figures ignored."""
    (run,) = parse_nccl_tests(MODERN, "out.txt")
    assert run.op == "all_gather"
    assert [(r.size_bytes, r.time_us) for r in run.rows] == [(1024, 20.0), (2048, 21.0)]
    assert (run.nranks, run.nodes) == (4, 2)
    assert run.env == {"NCCL_ALGO": "Ring"}


def test_rank_lines_give_each_ranks_host_and_device():
    """``rank_devices``: (host, device) of every rank, in rank order."""
    (run,) = parse_nccl_tests(MODERN, "all_gather_perf.txt")
    assert run.rank_devices == (("hostA", 0), ("hostA", 1), ("hostB", 0), ("hostB", 1))
    assert run.hosts == (("hostA", 2), ("hostB", 2))


def test_launcher_prefixes_and_old_header_without_root():
    """``[1,0]<stdout>:`` prefixes; an old table (no root column) keeps its time column."""
    text = "\n".join(
        [
            "[1,0]<stdout>:# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor)",
            "[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw"
            "  error     time   algbw   busbw  error",
            "[1,0]<stdout>:           8             2   float     sum    34.73    0.00    0.00"
            "  0e+00    34.64    0.00    0.00  0e+00",
            "[1,0]<stdout>:          16             4   float     sum    35.00    0.00    0.00"
            "  0e+00    34.80    0.00    0.00  0e+00",
        ]
    )
    (run,) = parse_nccl_tests(text, "superbench_allreduce.log")
    assert run.op == "all_reduce"  # from the file name
    assert [r.time_us for r in run.rows] == [34.73, 35.0]
    assert run.single_process  # nGpus 8 in one process


@pytest.mark.parametrize(
    ("threads", "gpus", "one_thread", "per_thread"),
    [(1, 8, True, 8), (8, 1, False, None), (2, 4, True, 4)],
)
def test_one_thread_driving_several_gpus_is_a_single_process_run(
    threads, gpus, one_thread, per_thread
):
    """``-g 8``: one thread issues on 8 GPUs in turn; ``-t 8 -g 1``: eight threads issue
    side by side, as one process per GPU would; ``-t 2 -g 4``: two threads, four GPUs each."""
    text = (
        f"# nThread {threads} nGpus {gpus} minBytes 8 maxBytes 8 step: 2(factor)\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        "           8             2     float     sum      -1    20.00    0.00    0.00      0\n"
    )
    (run,) = parse_nccl_tests(text, "all_reduce.txt")
    assert run.single_process is one_thread
    assert run.gpus_per_thread == per_thread
    assert run.launched == (f"each thread drove {gpus} GPUs" if one_thread else None)


@pytest.mark.parametrize(
    "row",
    [
        "     1048576        262144     float     sum      -1  4366.46    0.24    0.24       0"
        "  4365.21    0.24    0.24       0",
        "     1048576        262144     float     sum  4366.46    0.24    0.24       0"
        "  4365.21    0.24    0.24       0",
        "     1048576        262144     float     sum      -1  4366.46    0.24    0.24     N/A"
        "  4365.21    0.24    0.24     N/A",
        "     1048576        262144     float     sum      -1  4366.46    0.24    0.24       0",
    ],
)
def test_rows_without_header(row: str):
    """Without a header line the time column is found by shape (root, N/A, no in-place)."""
    (run,) = parse_nccl_tests(row, "x.txt", op="all_reduce")
    assert run.rows[0].time_us == 4366.46
    assert run.rows[0].busbw_GBps == 0.24


def test_minimal_table_and_command_line_op():
    """A 4-column table (size time algbw busbw) and the op from the command line."""
    text = "\n".join(
        [
            "$ mpirun -np 2 ./build/sendrecv_perf -b 1M -e 16M",
            "#       size      time   algbw   busbw",
            "#        (B)      (us)  (GB/s)  (GB/s)",
            "     1048576     11.32   92.67   92.67",
            "    16777216    144.90  115.80  115.80",
        ]
    )
    (run,) = parse_nccl_tests(text, "results.txt")
    assert run.op == "send_recv"
    assert [r.time_us for r in run.rows] == [11.32, 144.9]


def test_several_runs_in_one_file():
    """Each ``Collective test starting`` table becomes its own run."""
    text = MODERN + MODERN.replace("all_gather_perf", "reduce_scatter_perf")
    runs = parse_nccl_tests(text, "both.txt")
    assert [r.op for r in runs] == ["all_gather", "reduce_scatter"]


def test_a_run_of_dropped_rows_ends_where_the_next_test_starts(tmp_path: Path):
    """A table whose every row was dropped (16 ranks, NaN times) is a run of its own: the
    next test's rank lines (8 ranks on one host) are not added to it, and ``every_table``
    returns it in its place, numbered as the file holds it."""
    failed = MODERN.replace("20.00", "nan").replace("21.00", "nan")
    rank_lines = "".join(
        f"#  Rank {r:2d} Group  0 Pid 1 on hostC device {r} [0x18] NVIDIA H100 80GB HBM3\n"
        for r in range(8)
    )
    second = (
        "# Collective test starting: all_gather_perf\n# Using devices\n"
        + rank_lines
        + "        1024            64     float    none      -1    30.00    0.03    0.03      0\n"
    )
    path = tmp_path / "all_gather_perf.txt"
    path.write_text(failed + second)
    first, run = read_results(path, every_table=True)
    assert (len(first.rows), len(first.dropped), first.nranks) == (0, 2, 4)
    assert (run.nranks, run.nodes, len(run.rows)) == (8, 1, 1)
    (usable,) = read_results(path)
    assert usable.source == run.source and len(usable.dropped) == 2


def test_nranks_from_bus_factor():
    """Without rank lines, busbw / algbw of the largest row gives the rank count."""
    text = "  134217728  33554432  float  sum  -1  1000.0  134.22  251.66  0"
    text += "  1000.0  134.22  251.66  0"
    (run,) = parse_nccl_tests(text, "x.txt", op="all_reduce")
    assert run.nranks == 16


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("# Collective test starting: alltoall_perf", "all_to_all"),
        ("./all_reduce_perf_mpi -b 8", "all_reduce"),
        ("broadcast_perf", "broadcast"),
        ("plain words", None),
    ],
)
def test_op_names(text: str, op: str | None):
    """Binary names map to the engine's op names."""
    assert op_from_name(text) == op


def test_op_from_file_name_only_when_bare():
    """Bare op words count only in file names."""
    assert op_from_name("run3_allreduce.txt") is None
    assert op_from_name("run3_allreduce.txt", bare=True) == "all_reduce"


def test_measurements_format_fixture():
    """The measurements-format fixture gives both entries with their env and ranks."""
    runs = read_results(MEASUREMENTS)
    assert [r.entry_id for r in runs] == [
        "nccltests290_h100_2node_ib_ndr_allreduce_default",
        "nccltests290_h100_2node_ib_ndr_allreduce_ring",
    ]
    ring = runs[1]
    assert (ring.op, ring.nranks, ring.nodes, ring.quality) == ("all_reduce", 16, 2, "degraded")
    assert ring.env["NCCL_ALGO"] == "ring"
    assert ring.rows[0].time_us == 407.5
    (only,) = read_results(MEASUREMENTS, entries=["nccltests290_h100_2node_ib_ndr_allreduce_ring"])
    assert only.entry_id.endswith("_ring")


def test_a_single_process_entry_drove_every_gpu_of_its_node():
    """A measurements entry launched ``single-process`` names no per-thread count: its one
    process drove every GPU of its node, and the view says so."""
    (run,) = read_results(SHARED, entries=["superbench_a100_1node_all_reduce"])
    assert run.single_process and run.gpus_per_thread is None
    assert run.launched == "one process drove every GPU of its node"


def test_shared_measurements_busbw_only_rows_get_times():
    """Rows with busbw only (time null) get t = S / (busbw / bus factor)."""
    (run,) = read_results(SHARED, entries=["stas00_h200_1node_allreduce_ring_16GiB"])
    row = run.rows[0]
    expected = 17179869184 / (367.2 / (2 * 7 / 8)) / 1e3
    assert row.time_us == pytest.approx(expected)


def test_unknown_entry_and_empty_results(tmp_path: Path):
    """An unknown entry id names the nearest; a file without rows is refused."""
    with pytest.raises(ResultsError, match="nearest"):
        read_results(MEASUREMENTS, entries=["nccltests290_h100_2node_ring"])
    empty = tmp_path / "empty.txt"
    empty.write_text("# nThread 1 nGpus 1\n# nothing ran\n")
    with pytest.raises(ResultsError, match="no nccl-tests result rows"):
        read_results(empty)
    with pytest.raises(ResultsError, match="no such file"):
        read_results(tmp_path / "missing.txt")


def test_malformed_measurement_rows_name_line(tmp_path: Path):
    """A bad row of a measurements file is reported with file and line."""
    bad = tmp_path / "m.yaml"
    bad.write_text("- id: x\n  op: all_reduce\n  nranks: 2\n  rows:\n  - [8, fast, 0.0, 0.0]\n")
    with pytest.raises(HwdbError, match=r"m.yaml:5: \[0\].rows\[0\]: bad number 'fast'"):
        read_results(bad)


QUAD = """\
- id: quad
  op: all_reduce
  nranks: 4
  hardware:
    gpu: gh200
    nodes: 1
    gpus_per_node: 4
    intra: {fabric: mesh, link: nvlink4, links_per_pair: PAIRS}
  rows:
  - [8, 20.0, 0.0, 0.0]
"""


@pytest.mark.parametrize(
    ("pairs", "problem"),
    [
        ("1.5", "expected a whole number (got 1.5)"),
        ('"2"', "expected a number (int) (got '2'): write it without quotes"),
        ("0", "must be greater than zero (got 0)"),
        ("null", "must not be empty (expected int)"),
        ("2000", "at most 1024 (got 2000)"),
    ],
)
def test_links_per_pair_that_is_no_whole_number_isrefused(tmp_path: Path, pairs, problem):
    """A mesh's links per pair that is no whole number (which no topology's node would
    match) is refused in one line naming file, line, entry and field, as a topology spec
    refuses it."""
    path = tmp_path / "m.yaml"
    path.write_text(QUAD.replace("PAIRS", pairs))
    with pytest.raises(HwdbError) as refused:
        read_results(path)
    assert str(refused.value) == f"{path}:8: entry quad: hardware.intra.links_per_pair: {problem}"


def test_whole_links_per_pair_is_read(tmp_path: Path):
    """``6`` and ``6.0`` are 6 links per pair, as in a topology spec."""
    for pairs in ("6", "6.0"):
        path = tmp_path / "m.yaml"
        path.write_text(QUAD.replace("PAIRS", pairs))
        (run,) = read_results(path)
        assert run.hardware_node is not None and run.hardware_node.links_per_pair == 6


#: A valid hardware block (two 8-GPU H100 servers on NDR), one key a line, for
#: ``hardware_text`` to change one field of.
HARDWARE = {
    "gpu": "h100-sxm",
    "nodes": "2",
    "gpus_per_node": "8",
    "intra": {"fabric": "nvswitch", "link": "nvlink4"},
    "net": {"link": "ib-ndr", "gbps": "400", "nics_per_node": "8"},
}


def hardware_text(field: str = "", value: str = "") -> str:
    """``HARDWARE`` as block YAML, with ``field`` (``net.gbps``, new or not) set to the
    YAML text ``value``."""
    block: dict = {k: dict(v) if isinstance(v, dict) else v for k, v in HARDWARE.items()}
    if field:
        section, _, key = field.rpartition(".")
        (block[section] if section else block)[key] = value
    lines = []
    for key, item in block.items():
        if isinstance(item, dict):
            lines += [f"{key}:", *(f"  {k}: {v}" for k, v in item.items())]
        else:
            lines.append(f"{key}: {item}")
    return "".join(f"{line}\n" for line in lines)


def measurements_text(hardware: str) -> str:
    """One entry ``box`` on the hardware block ``hardware`` (its lines 5 onwards)."""
    block = "".join(f"    {line}\n" for line in hardware.splitlines())
    return (
        "- id: box\n  op: all_reduce\n  nranks: 16\n  hardware:\n"
        + block
        + "  rows:\n  - [8, 20.0, 0.0, 0.0]\n"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gpu", "h100-smx"),
        ("gpu", "[h100-sxm]"),
        ("nodes", "2.5"),
        ("nodes", "0"),
        ("gpus_per_node", '"8"'),
        ("gpus_per_node", "2000"),
        ("gpus", "8"),
        ("intra.fabric", "nvswich"),
        ("intra.link", "nvlnk4"),
        ("intra.p2p", '"no"'),
        ("intra.hosts_per_domain", "0"),
        ("intra.hosts_per_domain", "null"),
        ("net.link", "ib-nrd"),
        ("net.gbps", '"400"'),
        ("net.gbps", "0.5"),
        ("net.nics_per_node", "0"),
        ("net.nics_per_node", "2000"),
        ("net.layout", "fat-tree"),
        ("net.nic_count", "8"),
    ],
)
def test_a_hardware_field_a_topology_spec_refuses_isrefused(
    tmp_path: Path, catalog, field: str, value: str
):
    """Every field of an entry's hardware block is read as a topology spec reads it: a
    value the spec refuses (a quoted count, a typo of a word or an id, an unknown key) is
    refused with the spec's own words, in one line naming file, line, entry id and field,
    where it used to count as unstated or name hardware no topology has."""
    text = hardware_text(field, value)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    with pytest.raises(HwdbError) as by_spec:
        resolve_topology(str(spec), catalog)
    setting = f"{field.rpartition('.')[2]}: {value}"
    line = next(n for n, row in enumerate(text.splitlines(), 1) if row.strip() == setting)
    prefix = f"{spec}:{line}: {field}: "
    assert str(by_spec.value).startswith(prefix)
    problem = str(by_spec.value)[len(prefix) :]
    path = tmp_path / "m.yaml"
    path.write_text(measurements_text(text))
    with pytest.raises(HwdbError) as refused:
        read_results(path, catalog=catalog)
    assert str(refused.value) == f"{path}:{line + 4}: entry box: hardware.{field}: {problem}"


def test_a_hardware_block_that_is_no_mapping_isrefused(tmp_path: Path):
    """``hardware: dgx-h100`` (a name, not the block) is refused naming the entry; it used
    to be an entry of unstated hardware."""
    path = tmp_path / "m.yaml"
    path.write_text(QUAD.replace("  hardware:\n", "  hardware: dgx-h100\n  unused:\n"))
    with pytest.raises(HwdbError) as refused:
        read_results(path)
    assert str(refused.value) == (
        f"{path}:4: entry quad: hardware: expected a topology mapping with gpu, nodes, "
        "gpus_per_node, intra, net (got str)"
    )


def test_what_a_hardware_block_leaves_out_is_unstated(tmp_path: Path):
    """A block may leave fields out (unlike a topology spec, which needs gpu, nodes and
    gpus_per_node): they are unstated, as they were; ``intra: null`` is one GPU per node."""
    path = tmp_path / "m.yaml"
    path.write_text(measurements_text("gpu: h100-sxm\nintra: {link: nvlink4}\nnet: {gbps: 400}\n"))
    (run,) = read_results(path)
    assert (run.hardware_gpu, run.nodes, run.hardware_net) == ("h100-sxm", None, None)
    assert run.hardware_node == EntryNode(None, None)
    path.write_text(measurements_text("gpu: h100-sxm\nnodes: 2.0\nintra: null\n"))
    (run,) = read_results(path)
    assert run.nodes == 2 and run.hardware_node == EntryNode(None, "none")


def test_ids_are_looked_up_only_in_a_catalog(tmp_path: Path, catalog, monkeypatch):
    """Without a catalog (library use) a hardware id is read as text; with one, an id a
    disabled plugin holds is taken as named (the entry is of hardware that plugin brings,
    left out as other hardware where it does not match), not refused as unknown."""
    path = tmp_path / "m.yaml"
    path.write_text(measurements_text(hardware_text("net.link", "slingshot")))
    (run,) = read_results(path)
    assert run.hardware_net == "slingshot"
    monkeypatch.setenv(plugins_module.ENV_DISABLE, "slingshot")
    without = load_catalog_with_plugins(host=PluginHost(load_external=False, builtins=True))
    assert "slingshot" not in without.links
    (run,) = read_results(path, catalog=without)
    assert run.hardware_net == "slingshot"
    path.write_text(measurements_text(hardware_text("gpu", "h100-smx")))
    assert read_results(path)[0].hardware_gpu == "h100-smx"


def test_the_shared_measurements_read_with_the_catalog(catalog):
    """Every entry of the shared measurements file is read, with its ids looked up, as it
    is without them."""
    runs = read_results(SHARED, catalog=catalog)
    assert len(runs) == 40
    assert runs == read_results(SHARED)


def test_calibrate_refuses_a_typo_in_a_hardware_block(tmp_path: Path, run_calibrate):
    """``calibrate`` refuses an entry whose GPU id is a typo in one line (it used to skip it
    as an entry of other hardware)."""
    path = tmp_path / "m.yaml"
    path.write_text(measurements_text(hardware_text("gpu", "h100-smx")))
    status, out, err = run_calibrate(str(path), "-t", "dgx-h100")
    assert (status, out) == (2, "")
    assert err == (
        f"fabricui: error: {path}:5: entry box: hardware.gpu: unknown gpu 'h100-smx' "
        "(nearest: h100-sxm, h200-sxm, v100-sxm2)\n"
    )


# --- overlay -------------------------------------------------------------------------------


def overlay_doc(text: str):  # type: ignore[no-untyped-def]
    return parse_yaml(text, "cal.yaml")


def test_overlay_round_trip(tmp_path: Path):
    """What ``overlay_yaml`` writes, ``read_overlay`` reads back."""
    overlay = CalibrationOverlay(
        links={"ib-ndr": LinkCalibration(efficiency=0.2241, lat_us=0.61)},
        topology="dgx-h100",
        fitted_on=("a.txt",),
    )
    path = tmp_path / "cal.yaml"
    write_overlay(path, overlay_yaml(overlay, ["a comment"]))
    text = path.read_text()
    assert text.startswith("# a comment\n")
    back = read_overlay(path)
    assert back.links == overlay.links
    assert (back.topology, back.fitted_on) == ("dgx-h100", ("a.txt",))
    assert back.where["ib-ndr"] == f"{path}:5"


def test_write_never_overwrites_without_force(tmp_path: Path):
    """An existing file is kept unless forced; no temporary file is left behind."""
    path = tmp_path / "cal.yaml"
    path.write_text("old")
    with pytest.raises(ConfigError, match="already exists"):
        write_overlay(path, "new")
    assert path.read_text() == "old"
    write_overlay(path, "new", force=True)
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["cal.yaml"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("links: {ib-ndr: {efficiency: 0.5}}\nextra: 1\n", r"cal.yaml:2: extra: unknown key"),
        ("links: {}\n", r"cal.yaml:1: links: expected a mapping"),
        (
            "links:\n  ib-ndr: {efficiency: fast}\n",
            r"cal.yaml:2: links.ib-ndr.efficiency: expected",
        ),
        ("links:\n  ib-ndr: {efficiency: 1.5}\n", r"links.ib-ndr.efficiency: 1.5 is outside"),
        ("links:\n  ib-ndr: {lat_us: -1}\n", r"links.ib-ndr.lat_us: -1 is outside"),
        ("links:\n  ib-ndr: {bw_GBps: 10}\n", r"links.ib-ndr.bw_GBps: unknown field"),
        (
            "links: {ib-ndr: {efficiency: 0.5}}\nconstants: {launch_us: 3}\n",
            r"cal.yaml:2: constants: model constants cannot be overridden",
        ),
        ("- 1\n", r"expected a calibration overlay mapping"),
    ],
)
def test_overlay_errors_name_file_and_line(text: str, message: str):
    """Each malformed overlay gets a one-line error with file, line and key path."""
    with pytest.raises(HwdbError, match=message):
        parse_overlay(overlay_doc(text))


def test_apply_overlay(catalog):
    """Applying replaces the figures of the named links only, and records the origin."""
    overlay = parse_overlay(overlay_doc("links:\n  ib-ndr: {efficiency: 0.3}\n"))
    calibrated = apply_overlay(catalog, overlay)
    assert calibrated.links["ib-ndr"].efficiency == 0.3
    assert calibrated.links["ib-ndr"].lat_us == catalog.links["ib-ndr"].lat_us
    assert catalog.links["ib-ndr"].efficiency != 0.3  # the original is untouched
    assert calibrated.links["nvlink4"] is catalog.links["nvlink4"]
    assert "calibrated by cal.yaml:2" in calibrated.origins[("links", "ib-ndr")]


def test_apply_overlay_unknown_link(catalog):
    """An overlay naming a generation the catalog lacks fails with the nearest ids."""
    overlay = parse_overlay(overlay_doc("links:\n  ib-ndrr: {efficiency: 0.3}\n"))
    with pytest.raises(HwdbError, match=r"cal.yaml:2: links.ib-ndrr: unknown link 'ib-ndrr'"):
        apply_overlay(catalog, overlay)
