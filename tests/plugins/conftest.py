"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import importlib.metadata

import pytest


@pytest.fixture
def installed() -> None:
    """Built-ins are found through the installed distribution's entry points."""
    try:
        importlib.metadata.distribution("fabricui")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("fabricui is not installed (pip install -e .)")
