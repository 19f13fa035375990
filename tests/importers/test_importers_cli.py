"""``fabricui import``: input handling, output channels, the plugin, and import hygiene."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _topo_samples import listing, sample_text

from fabricui.importers.builtin import BUILTIN_FORMATS, builtin_importers
from fabricui.plugins import PluginHost
from fabricui.services import importing

ROOT = Path(__file__).resolve().parents[2]
TWO_GPUS = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU1\tNV4\t X \t0-7\n"


def test_text_summary_on_stdout_warnings_on_stderr(tmp_path, run_import):
    """The summary (with the matrix) goes to stdout, each gap to stderr as a warning."""
    name = "b200_8gpu_nv18_13nic_collapsed_header_vllm_31594.txt"
    if name not in listing("nvidia_smi_topo"):
        pytest.fail("topology samples not found under tests/data/topo")
    src = tmp_path / "b200.txt"
    src.write_text(sample_text("nvidia_smi_topo", name))
    status, out, err = run_import("nvidia-smi", str(src))
    assert status == 0
    assert out.startswith("nvidia-smi topo -m: 8 GPUs, 13 NICs")
    assert "GPU-GPU: NV18 x22" in out and re.search(r"\n    GPU0 +X +NV18", out)
    assert "warning" not in out
    lines = err.splitlines()
    assert len(lines) == 4 and all(line.startswith("fabricui: warning: ") for line in lines)
    assert "truncated: rows for GPU4..GPU7 missing" in err


def test_notes_are_part_of_the_summary(tmp_path, run_import):
    """An ignored ``topo -p2p`` matrix is a note in the summary, not a warning."""
    name = "rtx5090_2gpu_phb_plus_p2p_rw_gns_club3090_1229.txt"
    if name not in listing("nvidia_smi_topo"):
        pytest.fail("topology samples not found under tests/data/topo")
    src = tmp_path / "rtx.txt"
    src.write_text(sample_text("nvidia_smi_topo", name))
    status, out, err = run_import("nvidia-smi", str(src))
    assert status == 0 and err == "" and "note: ignored a `nvidia-smi topo -p2p` matrix" in out


def test_stdin(monkeypatch, run_import):
    """``-`` reads stdin; ``--json`` prints exactly the documented keys."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TWO_GPUS.encode())))
    status, out, err = run_import("nvidia-smi", "-", "--json")
    assert status == 0 and err == ""
    assert json.loads(out) == {
        "format": "nvidia-smi",
        "gpus": ["GPU0", "GPU1"],
        "nics": [],
        "links": [{"a": "GPU0", "b": "GPU1", "kind": "NV4"}],
        "cpu_affinity": {"GPU0": "0-7", "GPU1": "0-7"},
        "numa": {},
    }


def test_utf16_from_powershell(tmp_path, run_import):
    """A file saved by PowerShell's ``>`` (UTF-16 with BOM) is read."""
    src = tmp_path / "topo.txt"
    src.write_bytes(TWO_GPUS.encode("utf-16"))
    status, out, _ = run_import("nvidia-smi", str(src))
    assert status == 0 and "2 GPUs" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "empty input"),
        (b"  \n\t\n", "empty input"),
        (b"GPU0 \xff\xfe\xfa", "not UTF-8 text (byte 5)"),
        (b"\x7fELF\x00\x00", "a binary file"),
        (b"hello\n", "no `nvidia-smi topo -m` output found"),
    ],
)
def test_bad_input_files(tmp_path, run_import, content, message):
    """Unreadable, empty, binary, non-UTF-8 or unrecognised input: one line, exit 2."""
    src = tmp_path / "in.txt"
    if content is not None:
        src.write_bytes(content)
    status, out, err = run_import("nvidia-smi", str(src))
    assert status == 2 and out == ""
    assert err == f"fabricui: error: {src}: {message}\n" or (
        message in err and err.count("\n") == 1
    )


def test_directory_and_unknown_format(tmp_path, run_import):
    """A directory as FILE and an unknown FORMAT are one-line errors."""
    status, _, err = run_import("nvidia-smi", str(tmp_path))
    assert status == 2 and "is a directory" in err
    status, _, err = run_import("lspci", str(tmp_path))
    assert status == 2 and "invalid choice: 'lspci'" in err and "nvidia-smi" in err


def test_spec_options_need_output(run_import):
    """--force, --nodes, --net, --gpu without -o, and --json with -o -, are refused."""
    assert "only apply with -o" in run_import("nvidia-smi", "x", "--nodes", "2")[2]
    assert "both write to stdout" in run_import("nvidia-smi", "x", "--json", "-o", "-")[2]


def test_importer_crash_is_one_line(monkeypatch, tmp_path, run_import):
    """A failing (plugin) parser becomes an error line, never a traceback."""

    def broken(text: str) -> object:
        raise KeyError("boom")

    monkeypatch.setattr(importing, "importer_table", lambda host=None: {"nvidia-smi": broken})
    src = tmp_path / "t.txt"
    src.write_text(TWO_GPUS)
    status, _, err = run_import("nvidia-smi", str(src))
    assert status == 2 and "the nvidia-smi importer failed: KeyError: 'boom'" in err


def test_plugin_registers_the_builtin_importers(monkeypatch):
    """The ``fabricui_importers`` plugin registers the four built-in parsers by name."""
    monkeypatch.syspath_prepend(str(ROOT / "plugins"))
    import fabricui_importers

    host = PluginHost(load_external=False, builtins=False)
    assert host.register(fabricui_importers, name="importers")
    assert tuple(host.importers()) == BUILTIN_FORMATS
    assert host.importers() == builtin_importers()
    assert host.contributor("importers", "nccl-xml") == "importers"


def test_command_uses_the_host_or_the_builtins():
    """The format table always has the four built-ins (through the plugin or directly)."""
    assert set(BUILTIN_FORMATS) <= set(importing.importer_table())


def test_wired_into_the_cli(run_cli):
    """``fabricui import`` through the CLI is the same command."""
    status, _, err = run_cli("import", "nvidia-smi", "/no/such/file")
    assert status == 2 and err == "fabricui: error: /no/such/file: no such file\n"


def test_importers_import_nothing_heavy():
    """Importers are plain text parsing: no numpy, yaml, textual or rich at import."""
    code = (
        "import sys; import fabricui.importers.nvidia_smi, fabricui.importers.nccl_xml, "
        "fabricui.importers.ibstat, fabricui.importers.rocm_smi, fabricui.importers.spec, "
        "fabricui.importers.builtin, fabricui.commands.import_cmd; "
        "print(' '.join(m for m in ('numpy', 'yaml', 'textual', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
