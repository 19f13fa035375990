"""The words users type and the defaults every entry point shares (operations, traffic
patterns, protocols, the built-in default topology), importable without numpy."""

from __future__ import annotations

#: The topology every entry point opens when none is named.
DEFAULT_TOPOLOGY = "dgx-h100-pod"


#: Collective operations, named as nccl-tests names them.
OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "send_recv",
)

#: Traffic patterns ``fabricui traffic`` knows.
PATTERNS = ("all_to_all", "ring", "random-pairs")

#: NCCL protocols, fastest-latency first.
PROTOCOLS = ("ll", "ll128", "simple")

#: The explorer's views, in key order (1-5).
VIEWS = ("topology", "pyramid", "collectives", "strategies", "plugins")


def op_name(text: str) -> str | None:
    """The collective ``text`` names, whichever spelling users bring: ``all_reduce``,
    ``allreduce``, ``all-reduce``, ``AllReduce``, ``alltoall``, ``sendrecv`` ... (None for
    none)."""
    key = text.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    return _OP_KEYS.get(key)


_OP_KEYS = {op.replace("_", ""): op for op in OPS}
