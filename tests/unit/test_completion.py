"""Shell completion (bash, zsh, fish) and the man page, generated from the parser: they
complete subcommands, options, topology and model ids, and name every command."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess

import pytest

from fabricui.cli import build_parser, command_parsers

#: (words typed, the last one being completed) -> a completion that must be offered.
CASES = [
    (["fabricui", "pa"], "path"),
    (["fabricui", "path", "-t", "dgx-h1"], "dgx-h100-pod"),
    (["fabricui", "--hwdb", "/tmp", "path", "--topology", "gb200-nvl72-c"], "gb200-nvl72-cluster"),
    (["fabricui", "path", "--js"], "--json"),
    (["fabricui", "hwdb", "l"], "list"),
    (["fabricui", "hwdb", "list", "g"], "gpus"),
    (["fabricui", "collective", "all_r"], "all_reduce"),
    (["fabricui", "plan", "-m", "llama3-40"], "llama3-405b"),
    (["fabricui", "plan", "llama3-40"], "llama3-405b"),  # the MODEL word
    (["fabricui", "strategies", "deepseek"], "deepseek-v3"),
    (["fabricui", "traffic", "ri"], "ring"),
    (["fabricui", "snapshot", "strat"], "strategies"),
    (["fabricui", "completion", "fi"], "fish"),
]


@pytest.fixture(scope="module")
def scripts():
    """The three scripts, generated once."""
    from fabricui.cli import main

    out = {}
    for shell in ("bash", "zsh", "fish"):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["completion", shell]) == 0
        out[shell] = buffer.getvalue()
    return out


def test_bash_completes_commands_options_and_ids(scripts, tmp_path):
    """Sourced in bash, the function offers each expected word."""
    script = tmp_path / "fabricui.bash"
    script.write_text(scripts["bash"])
    lines = [f"source {script}"]
    for words, _ in CASES:
        quoted = " ".join(f"'{w}'" for w in words)
        lines.append(
            f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; COMPREPLY=(); _fabricui; "
            'echo "${COMPREPLY[*]}"'
        )
    result = subprocess.run(
        ["bash", "-c", "\n".join(lines)], capture_output=True, text=True, check=True
    )
    offered = result.stdout.splitlines()
    for (words, expected), got in zip(CASES, offered):
        assert expected in got.split(), (words, got)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_the_same(scripts, tmp_path):
    """fish's own completer, fed the script, offers the same words."""
    script = tmp_path / "fabricui.fish"
    script.write_text(scripts["fish"])
    commands = [f"source {script}"] + [
        f"complete -C '{' '.join(words)}'; echo ---" for words, _ in CASES
    ]
    result = subprocess.run(
        ["fish", "--no-config", "-c", "; ".join(commands)],
        capture_output=True,
        text=True,
        check=True,
    )
    blocks = result.stdout.split("---\n")
    for (words, expected), block in zip(CASES, blocks):
        assert expected in [line.split("\t")[0] for line in block.splitlines()], (words, block)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_registers_the_completion(scripts, tmp_path):
    """Sourced in zsh, fabricui's completer is registered (zsh runs the bash function)."""
    script = tmp_path / "fabricui.zsh"
    script.write_text(scripts["zsh"])
    result = subprocess.run(
        ["zsh", "-f", "-c", f"source {script}; print -r -- $_comps[fabricui]"],
        capture_output=True,
        text=True,
        check=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "_bash_complete -F _fabricui"


def test_man_page_names_every_command_and_option(run_cli, tmp_path):
    """`fabricui man` is roff with a section per command and every command's options;
    groff reads it without a warning where it is installed."""
    status, page, _ = run_cli("man")
    assert status == 0 and page.startswith(".TH FABRICUI 1 ")
    for parser in command_parsers(build_parser()):
        name = parser.prog.removeprefix("fabricui ")
        assert f".SS {name.replace('-', chr(92) + '-')}\n" in page, name
    assert r"\fB\-\-topology\fR" in page and "FABRICUI_HWDB" in page
    if shutil.which("groff"):
        (tmp_path / "fabricui.1").write_text(page)
        result = subprocess.run(
            ["groff", "-man", "-ww", "-z", str(tmp_path / "fabricui.1")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0 and result.stderr == ""
