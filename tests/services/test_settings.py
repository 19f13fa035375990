"""The settings file: keymap read and checked, problems named by file, line and key."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.services.settings import load_settings, settings_path


def test_no_file_means_defaults(tmp_path):
    """A missing settings file is no error: empty settings."""
    settings = load_settings(tmp_path / "absent.yaml")
    assert settings.keymap == {} and settings.origin is None


def test_keymap_is_read(tmp_path):
    """``keymap:`` maps binding ids to keys (whitespace trimmed)."""
    path = tmp_path / "config.yaml"
    path.write_text("keymap:\n  view.topology: ' f1 '\n  path.source: ctrl+s,s\n")
    settings = load_settings(path)
    assert settings.keymap == {"view.topology": "f1", "path.source": "ctrl+s,s"}
    assert settings.origin == str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("keymaps: {}\n", "config.yaml:1: unknown setting 'keymaps' (nearest: keymap)"),
        ("keymap: [f1]\n", "config.yaml:1: keymap: expected binding-id: keys pairs"),
        ("keymap:\n  view.topology: 3\n", "config.yaml:2: keymap.view.topology: expected keys"),
        ("keymap: {a: [\n", "YAML syntax error"),
        ("- f1\n", "expected a mapping of settings"),
    ],
)
def test_bad_settings_are_one_line(tmp_path, text, message):
    """Each problem is one line naming the file, the line and the key."""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert message in caught.value.message and "\n" not in caught.value.message


def test_path_follows_xdg_and_the_override(monkeypatch, tmp_path):
    """``$FABRICUI_CONFIG`` wins; else ``$XDG_CONFIG_HOME/fabricui/config.yaml``."""
    monkeypatch.delenv("FABRICUI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert settings_path() == tmp_path / "fabricui" / "config.yaml"
    monkeypatch.setenv("FABRICUI_CONFIG", str(tmp_path / "mine.yaml"))
    assert settings_path() == tmp_path / "mine.yaml"


def test_the_remembered_state_round_trips_without_yaml(tmp_path):
    """save_state's lines read back as written (strings with quotes and colons, integers),
    and reading them does not load the YAML stack: it runs before the first frame."""
    import subprocess
    import sys

    from fabricui.services.settings import load_state, save_state

    path = tmp_path / "state.yaml"
    state = {"topology": 'my "pod": v2.yaml', "nodes": 16, "message_size": 2**31, "theme": "nord"}
    save_state({**state, "unknown": "dropped"}, path)
    assert load_state(path) == state
    code = (
        "import sys; from pathlib import Path; from fabricui.services.settings import load_state;"
        f"assert load_state(Path({str(path)!r}))['nodes'] == 16;"
        "print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_hand_edited_state_file_keeps_what_it_can_read():
    from fabricui.services.settings import parse_state

    text = "# note\ntopology: h100-ib-cluster\nnodes: many\nnodes: 8\ntheme: [a, b]\nbad line\n"
    assert parse_state(text) == {"topology": "h100-ib-cluster", "nodes": 8}
