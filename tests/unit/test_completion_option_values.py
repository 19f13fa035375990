"""Shell completion of option values: an option with a fixed set of values (``--algo``,
``--view``, snapshot's ``--op`` ...) offers those values, and any other option's value
offers neither the command's positional words (bash) nor file names (fish)."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess

import pytest

from fabricui.cli import main

#: (words typed, the last one being completed) -> what must be offered, what must not.
CASES = [
    (
        ["fabricui", "collective", "all_reduce", "--algo", ""],
        {"ring", "tree", "nvls"},
        "all_gather",
    ),
    (["fabricui", "collective", "--algo", "nvls"], {"nvlstree", "nvls"}, "ring"),
    (["fabricui", "collective", "--algo", "h"], {"hierarchical"}, "all_reduce"),
    (["fabricui", "calibrate", "--algo", ""], {"ring", "auto"}, "hierarchical"),
    (["fabricui", "explore", "--view", ""], {"collectives", "strategies"}, "README.md"),
    (["fabricui", "snapshot", "collectives", "--op", "all_"], {"all_gather"}, "topology"),
    (["fabricui", "snapshot", "collectives", "--group", ""], {"host", "per-node"}, "pyramid"),
    (["fabricui", "plan", "--dp-strategy", ""], {"fsdp", "zero1"}, "llama3-8b"),
    (["fabricui", "plan", "--framework", "meg"], {"megatron-core"}, "llama3-8b"),
    (["fabricui", "collective", "--nccl", ""], set(), "all_reduce"),
]


@pytest.fixture(scope="module")
def scripts():
    """The bash and fish scripts, generated once."""
    out = {}
    for shell in ("bash", "fish"):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["completion", shell]) == 0
        out[shell] = buffer.getvalue()
    return out


def test_bash_offers_the_option_values(scripts, tmp_path):
    """bash offers each option's own values, never the command's positional words."""
    script = tmp_path / "fabricui.bash"
    script.write_text(scripts["bash"])
    lines = [f"source {script}"]
    for words, _, _ in CASES:
        quoted = " ".join(f"'{w}'" for w in words)
        lines.append(
            f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; COMPREPLY=(); _fabricui; "
            'echo "${COMPREPLY[*]}"'
        )
    result = subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path.parent,
    )
    for (words, wanted, unwanted), got in zip(CASES, result.stdout.splitlines()):
        offered = set(got.split())
        assert wanted <= offered and unwanted not in offered, (words, got)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_offers_the_option_values(scripts, tmp_path):
    """fish offers the same values, and no file names for a value that is no file."""
    script = tmp_path / "fabricui.fish"
    script.write_text(scripts["fish"])
    (tmp_path / "all_gather").write_text("a file named like an op")
    commands = [f"source {script}"] + [
        f"complete -C '{' '.join(words)}'; echo ---" for words, _, _ in CASES
    ]
    result = subprocess.run(
        ["fish", "--no-config", "-c", "; ".join(commands)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    for (words, wanted, unwanted), block in zip(CASES, result.stdout.split("---\n")):
        offered = {line.split("\t")[0] for line in block.splitlines()}
        assert wanted <= offered and unwanted not in offered, (words, block)
        assert "fabricui.fish" not in offered, (words, block)
