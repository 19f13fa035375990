"""A bad NCCL setting that came from the shell's environment says so; one typed with
``--env`` (or the explorer's NCCL prompt) does not."""

from __future__ import annotations

import pytest

from fabricui.errors import EngineError
from fabricui.services.collective import blame_environment

KNOWN = "(Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT)"


@pytest.fixture(autouse=True)
def clean_job_environment(monkeypatch):
    """No NCCL_*, FI_* or OFI_NCCL_* variable of the developer's shell leaks in."""
    import os

    for name in list(os.environ):
        if name.startswith(("NCCL_", "FI_", "OFI_NCCL_")):
            monkeypatch.delenv(name)


def test_a_bad_value_from_the_environment_is_named_as_such(monkeypatch, run_cli):
    """The reviewer's case: NCCL_ALGO=foo in the shell."""
    monkeypatch.setenv("NCCL_ALGO", "foo")
    status, out, err = run_cli("collective", "all_reduce", "1G")
    assert status == 2 and out == ""
    assert err.strip() == (
        f"fabricui: error: NCCL_ALGO='foo' (from the environment): unknown name 'foo' {KNOWN}"
    )


def test_a_bad_value_typed_with_env_is_not_blamed_on_the_environment(monkeypatch, run_cli):
    """--env overrides the shell's value, and the error is about what was typed."""
    monkeypatch.setenv("NCCL_ALGO", "foo")
    status, _, err = run_cli("collective", "all_reduce", "1G", "--env", "NCCL_ALGO=bar")
    assert status == 2 and "from the environment" not in err
    assert err.strip() == f"fabricui: error: NCCL_ALGO='bar': unknown name 'bar' {KNOWN}"


def test_other_settings_name_the_inherited_ones(monkeypatch, run_cli):
    """An error that names several settings says which came from the shell."""
    monkeypatch.setenv("NCCL_ALGO", "nvls")
    argv = ("collective", "all_reduce", "1G", "-t", "dgx-a100", "--env", "NCCL_PROTO=LL")
    status, _, err = run_cli(*argv)
    assert status == 2 and err.strip().endswith("(NCCL_ALGO from the environment)")
    assert len(err.strip().splitlines()) == 1


def test_an_integer_setting_from_the_environment(monkeypatch, run_cli):
    """``NCCL_MAX_NCHANNELS=x`` in the shell."""
    monkeypatch.setenv("NCCL_MAX_NCHANNELS", "x")
    status, _, err = run_cli("collective", "all_reduce", "1G")
    assert status == 2
    assert "NCCL_MAX_NCHANNELS='x' (from the environment) is not an integer" in err


def test_an_error_about_no_inherited_variable_is_unchanged(monkeypatch):
    """Nothing is added when the error does not name an inherited variable."""
    monkeypatch.setenv("NCCL_PROTO", "LL")
    error = blame_environment(EngineError("NCCL_ALGO='x': unknown name 'x'"), ["NCCL_ALGO"])
    assert error.message == "NCCL_ALGO='x': unknown name 'x'" == str(error)


def test_the_explorers_collectives_view_blames_the_environment_too(monkeypatch, catalog):
    """The view's prediction (and its snapshot report) reads the shell's NCCL_* as well;
    a value typed in its NCCL prompt is not blamed on the environment."""
    from fabricui.errors import FabricError
    from fabricui.services.collective import view_prediction
    from fabricui.services.loaded import LoadedFabric
    from fabricui.services.requests import TopologyRequest

    data = LoadedFabric.load(TopologyRequest("dgx-h100"), catalog=catalog)
    monkeypatch.setenv("NCCL_ALGO", "foo")
    with pytest.raises(FabricError, match=r"^NCCL_ALGO='foo' \(from the environment\): "):
        view_prediction(data, "all_reduce", "all", [2**20], "")
    with pytest.raises(FabricError, match=r"^NCCL_ALGO='bar': unknown name"):
        view_prediction(data, "all_reduce", "all", [2**20], "NCCL_ALGO=bar")
