"""ASCII or Unicode follows the locale the user set, not the ``LC_CTYPE=C.UTF-8`` Python
writes into its own environment when it coerces the C locale (PEP 538)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabricui.tui.glyphs import locale_is_utf8, user_locale

ROOT = Path(__file__).parents[2]


def utf8_in_a_fresh_python(**variables: str) -> bool:
    """``locale_is_utf8()`` in a new interpreter started with only ``variables`` (and
    what it needs to import fabricui), as a terminal would start ``fabricui``."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), **variables}
    code = "from fabricui.tui.glyphs import locale_is_utf8; print(locale_is_utf8())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "True"


@pytest.mark.parametrize(
    ("variables", "utf8"),
    [
        ({"LANG": "C"}, False),
        ({}, False),
        ({"LANG": "POSIX"}, False),
        ({"LC_ALL": "C"}, False),
        ({"LANG": "C.UTF-8", "LC_CTYPE": "C"}, False),
        ({"LANG": "C", "PYTHONUTF8": "1"}, False),
        ({"LANG": "C.UTF-8"}, True),
        ({"LC_CTYPE": "C.UTF-8"}, True),
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, True),
        ({"LC_ALL": "C.UTF-8", "LANG": "C"}, True),
        ({"LANG": "en_US.UTF-8"}, True),  # UTF-8 even where that locale is not installed
    ],
)
def test_the_locale_the_user_set_decides(variables, utf8):
    """``LANG=C`` or no locale at all draws with ASCII although Python coerced its own
    ``LC_CTYPE`` to ``C.UTF-8``; a UTF-8 locale the user set draws with Unicode."""
    assert utf8_in_a_fresh_python(**variables) is utf8


def test_coercion_told_by_the_start_environment():
    """An ``LC_CTYPE=C.UTF-8`` that was not there at start-up is Python's: the user's own
    value comes back (or none); one that was there is the user's."""
    now = {"LANG": "C", "LC_CTYPE": "C.UTF-8"}
    assert user_locale(now, original={"LANG": "C"}) == {"LANG": "C"}
    assert user_locale(now, original={"LANG": "C", "LC_CTYPE": "C"})["LC_CTYPE"] == "C"
    assert user_locale(now, original=dict(now)) == now
    assert user_locale({"LC_CTYPE": "en_US.UTF-8"}, original={}) == {"LC_CTYPE": "en_US.UTF-8"}


def test_coercion_told_by_utf8_mode_without_a_start_environment(monkeypatch):
    """Where the start environment cannot be read, Python's UTF-8 mode (which the C
    locale turns on) tells a coerced ``LC_CTYPE``, unless ``PYTHONUTF8`` turned it on."""
    monkeypatch.setattr("fabricui.tui.glyphs._start_environ", lambda: None)
    now = {"LANG": "C", "LC_CTYPE": "C.UTF-8"}
    assert user_locale(now, utf8_mode=True) == {"LANG": "C"}
    assert user_locale(now, utf8_mode=False) == now
    assert user_locale({**now, "PYTHONUTF8": "1"}, utf8_mode=True)["LC_CTYPE"] == "C.UTF-8"
    assert not locale_is_utf8(user_locale(now, utf8_mode=True))
