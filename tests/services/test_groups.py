"""Groups of GPUs a collective runs on: the named ones and ``gpus:N``, the first N GPUs (what
``--gpus N`` picks, and what the collectives view shows for a measured run of N ranks)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.errors import ConfigError
from fabricui.fabric import build_fabric
from fabricui.services.jobs import group_ranks
from fabricui.services.requests import check_group, first_gpus


@pytest.fixture(scope="module")
def pod(catalog):
    """dgx-h100-pod: 4 hosts of 8 GPUs."""
    return build_fabric(catalog.topologies["dgx-h100-pod"], catalog)


def test_first_gpus_reads_only_its_own_spelling():
    assert first_gpus("gpus:16") == 16
    assert first_gpus("all") is None and first_gpus("per-node") is None
    for bad in ("gpus:", "gpus:0", "gpus:x", "gpus:-4", "gpus:1.5"):
        with pytest.raises(ConfigError, match="write gpus:N"):
            first_gpus(bad)


def test_check_group_names_every_choice():
    for group in ("all", "host", "node", "domain", "per-node", "gpus:3"):
        assert check_group(group) == group
    with pytest.raises(ConfigError, match=r"unknown group 'rack'.*gpus:N"):
        check_group("rack")


def test_gpus_group_is_the_first_gpus_as_the_option_picks_them(pod):
    assert np.array_equal(group_ranks(pod, "gpus:16"), np.arange(16))
    assert np.array_equal(group_ranks(pod, "gpus:16"), group_ranks(pod, gpus=16))
    assert np.array_equal(group_ranks(pod, "gpus:32"), group_ranks(pod, "all"))
    with pytest.raises(ConfigError, match="group gpus:33: dgx-h100-pod has 32 GPUs"):
        group_ranks(pod, "gpus:33")
    with pytest.raises(ConfigError, match="unknown group 'rack'"):
        group_ranks(pod, "rack")
