"""Slingshot's CXI provider: the CUDA copies a receive pays under software matching, and
the time a small send saves as an immediate data command.

Every figure is computed by hand from the rule in ``fabricui.engine.cxi`` (libfabric's
``prov/cxi/include/cxip.h`` and NCCL's LL channel rule), on two-node fabrics of the real
catalog.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import Ring, Tree
from fabricui.engine.constants import DEFAULT
from fabricui.engine.cxi import (
    IDC_MAX_BYTES,
    CxiSettings,
    idc_saving_us,
    ll_receive_bytes,
    read_cxi,
    receive_copy_us,
    software_matching,
    tree_receive_copies,
    uses_cxi,
)
from fabricui.engine.group import Group
from fabricui.errors import ConfigError, EngineError
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument
from fabricui.services.collective import nccl_environment

#: Two single-GH200 nodes on Slingshot: one NIC each.
SLINGSHOT_2 = {
    "gpu": "gh200",
    "nodes": 2,
    "gpus_per_node": 1,
    "intra": None,
    "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 1},
}
#: The same on InfiniBand: no CXI provider.
IB_2 = {**SLINGSHOT_2, "gpu": "h100-sxm", "net": {"link": "ib-ndr", "gbps": 400}}
SOFTWARE = {"FI_CXI_RX_MATCH_MODE": "software"}
COPY = DEFAULT.cxi_cuda_copy_us
IDC = DEFAULT.cxi_idc_saving_us
NO_IDC = {"FI_CXI_DISABLE_NON_INJECT_MSG_IDC": "1"}


@pytest.fixture(scope="module")
def slingshot(catalog):
    spec = parse_topology(YamlDocument(data=SLINGSHOT_2, origin="t"), catalog, default_id="t")
    return build_fabric(spec, catalog)


@pytest.fixture(scope="module")
def infiniband(catalog):
    spec = parse_topology(YamlDocument(data=IB_2, origin="t"), catalog, default_id="t")
    return build_fabric(spec, catalog)


def test_settings_default_to_hardware_matching_and_gdrcopy_up_to_4_kib():
    assert read_cxi(None) == CxiSettings(False, 4096, True)
    assert read_cxi({"FI_CXI_RX_MATCH_MODE": "hybrid"}).software_matching is False
    got = read_cxi(
        {
            "FI_CXI_RX_MATCH_MODE": "Software",
            "FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD": "16777216",
            "FI_HMEM_CUDA_USE_GDRCOPY": "0",
        }
    )
    assert got == CxiSettings(True, 16777216, False)
    with pytest.raises(EngineError, match="FI_HMEM_CUDA_USE_GDRCOPY"):
        read_cxi({"FI_HMEM_CUDA_USE_GDRCOPY": "yes"})


def test_tree_receives_in_a_row_are_two_per_level_up_and_one_down():
    # d = ceil(log2 nodes); the root's single child, two children below it: (2d - 1) + d.
    assert tree_receive_copies(1) == 0.0
    assert tree_receive_copies(2) == 2.0  # d = 1
    assert tree_receive_copies(16) == 11.0  # d = 4
    assert tree_receive_copies(17) == 14.0  # d = 5
    assert tree_receive_copies(256) == 23.0  # d = 8


def test_an_ll_receive_is_a_channels_share_doubled_by_flags():
    sizes = np.array([2048.0, 4096.0, 65536.0, 2.0**20])
    # Tree, 8 channels: nc = clip(floor(S / 4096), 1, 8); 2 * min(S / nc, 16 KiB).
    assert ll_receive_bytes(sizes, 8, 1).tolist() == [4096.0, 8192.0, 16384.0, 32768.0]
    # Ring of 8 ranks, 4 channels: the threshold is 8 x 4096, so 4 KiB runs on 1 channel
    # and each receive carries S / 8 = 512 B (1 KiB with flags).
    assert ll_receive_bytes(np.array([4096.0]), 4, 8).tolist() == [1024.0]


def test_only_software_matching_on_a_cxi_network_routes_receives_through_the_host(
    slingshot, infiniband
):
    soft = Group(slingshot, np.arange(2), nccl_env=SOFTWARE)
    assert uses_cxi(soft) and not uses_cxi(Group(slingshot, np.arange(1)))
    assert software_matching(soft) == CxiSettings(True, 4096, True)
    assert software_matching(Group(slingshot, np.arange(2))) is None  # hardware matching
    assert software_matching(Group(infiniband, np.arange(2), nccl_env=SOFTWARE)) is None


def test_receives_above_gdrcopys_threshold_pay_a_cuda_copy_each():
    received = ll_receive_bytes(np.array([8.0, 2048.0, 4096.0]), 1, 1)  # 16, 4096, 8192 B
    soft = CxiSettings(True, 4096, True)
    # Above the 4,096-byte gdrcopy threshold only; two receives in a row.
    assert receive_copy_us(soft, received, 2.0).tolist() == [0.0, 0.0, 2 * COPY]
    no_gdrcopy = CxiSettings(True, 4096, False)
    assert receive_copy_us(no_gdrcopy, received, 2.0).tolist() == [2 * COPY] * 3
    raised = CxiSettings(True, 16 * 2**20, True)
    assert receive_copy_us(raised, received, 2.0).tolist() == [0.0] * 3


def test_trees_and_rings_on_ll_add_the_copies_of_their_receives(slingshot):
    sizes = np.array([2048.0, 4096.0, 16384.0])
    plain = Group(slingshot, np.arange(2))
    soft = Group(slingshot, np.arange(2), nccl_env=SOFTWARE)
    # Tree on 2 nodes: 2 receives in a row; from 4 KiB a receive is 8 KiB with flags.
    tree = Tree().time_us(soft, "all_reduce", sizes, "ll") - Tree().time_us(
        plain, "all_reduce", sizes, "ll"
    )
    assert tree == pytest.approx([0.0, 2 * COPY, 2 * COPY])
    # Ring of 2 ranks on 2 channels: 2 network steps; a receive carries S / (2 nc) with
    # nc = clip(floor(S / 8192), 1, 2), doubled by flags: 2, 4 and 8 KiB.
    assert plain.nccl_channels == 2
    ring = Ring().time_us(soft, "all_reduce", sizes, "ll") - Ring().time_us(
        plain, "all_reduce", sizes, "ll"
    )
    assert ring == pytest.approx([0.0, 0.0, 2 * COPY])
    # Simple never pays.
    assert Tree().time_us(soft, "all_reduce", sizes, "simple") == pytest.approx(
        Tree().time_us(plain, "all_reduce", sizes, "simple")
    )


def test_sends_up_to_192_bytes_save_the_nics_read_on_cxi_only(slingshot, infiniband):
    assert IDC_MAX_BYTES == 192  # CXIP_INJECT_SIZE = C_MAX_IDC_PAYLOAD_UNR
    assert read_cxi(None).idc and not read_cxi(NO_IDC).idc
    sent = np.array([128.0, 192.0, 256.0])
    # Two sends in a row: 2 x the saving up to 192 B, nothing above.
    on_cxi = idc_saving_us(Group(slingshot, np.arange(2)), sent, 2.0)
    assert on_cxi.tolist() == [2 * IDC, 2 * IDC, 0.0]
    assert idc_saving_us(Group(infiniband, np.arange(2)), sent, 2.0).tolist() == [0.0] * 3
    off = idc_saving_us(Group(slingshot, np.arange(2), nccl_env=NO_IDC), sent, 2.0)
    assert off.tolist() == [0.0] * 3


def test_trees_and_rings_on_ll_save_per_network_step_while_messages_are_small(slingshot):
    sizes = np.array([8.0, 96.0, 128.0, 192.0, 256.0])
    idc = Group(slingshot, np.arange(2))
    dma = Group(slingshot, np.arange(2), nccl_env=NO_IDC)
    # Tree on 2 nodes, 1 channel at these sizes: a message is 2 S with LL's flags (16, 192,
    # 256, 384, 512 B); 2 network steps (up and down) save while it is at most 192 B.
    tree = Tree().time_us(dma, "all_reduce", sizes, "ll") - Tree().time_us(
        idc, "all_reduce", sizes, "ll"
    )
    assert tree == pytest.approx([2 * IDC, 2 * IDC, 0.0, 0.0, 0.0])
    # Ring of 2 ranks, 2 network steps: a message is 2 S / 2 ranks = S on one channel.
    ring = Ring().time_us(dma, "all_reduce", sizes, "ll") - Ring().time_us(
        idc, "all_reduce", sizes, "ll"
    )
    assert ring == pytest.approx([2 * IDC, 2 * IDC, 2 * IDC, 2 * IDC, 0.0])
    # Simple is not priced.
    assert Tree().time_us(dma, "all_reduce", sizes, "simple") == pytest.approx(
        Tree().time_us(idc, "all_reduce", sizes, "simple")
    )


def test_a_job_environment_takes_libfabric_settings_beside_nccls():
    env = nccl_environment(["NCCL_ALGO=tree", "FI_CXI_RX_MATCH_MODE=software"], inherit=False)
    assert env == {"NCCL_ALGO": "tree", "FI_CXI_RX_MATCH_MODE": "software"}
    with pytest.raises(ConfigError, match="FI_NAME=value"):
        nccl_environment(["CXI_RX_MATCH_MODE=software"], inherit=False)
