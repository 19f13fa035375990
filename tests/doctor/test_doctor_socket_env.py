"""``fabricui doctor`` says when NCCL runs over sockets because of its environment."""

from __future__ import annotations

from fabricui.importers.nccl_log import parse_nccl_log
from fabricui.services.doctor import diagnose

SOCKETS = (
    "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:10.0.0.2<0>\n"
    "h:1:1 [0] NCCL INFO Using network Socket\n"
)


def fallback(text: str, env: dict[str, str] | None = None):
    return next(f for f in diagnose(parse_nccl_log(text), env) if f.code == "net-socket-fallback")


def test_ib_disable_is_named_as_the_reason():
    text = "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n" + SOCKETS
    finding = fallback(text)
    assert finding.severity == "info"
    assert "NCCL_IB_DISABLE=1 turns off NCCL's IB transport" in finding.message
    assert "ib0 are IPoIB interfaces" in finding.message


def test_nccl_net_socket_is_named_as_the_reason():
    finding = fallback(SOCKETS, {"NCCL_NET": "Socket"})
    assert finding.severity == "info"
    assert "NCCL_NET=Socket chooses it" in finding.message


def test_no_setting_no_such_reason():
    finding = fallback(SOCKETS)
    assert "NCCL_IB_DISABLE" not in finding.message and "NCCL_NET=" not in finding.message
