"""What the network-check tests compare: a check's refusal line, and the network built as
``builder.build_tiled`` builds it (what ``builder.check_tiled`` did before the checks)."""

from __future__ import annotations

from fabricui.errors import EngineError
from fabricui.fabric import builder
from fabricui.model import TopologySpec


def refusal(check, *args: object) -> str | None:
    """The one-line refusal ``check(*args)`` raises, None when it accepts."""
    try:
        check(*args)
    except EngineError as exc:
        return exc.message
    return None


def built(catalog, spec: TopologySpec) -> None:
    """The network cabled as ``build_tiled`` cables it: raises its refusal."""
    d = builder._domain(spec, catalog)
    builder._network(d.build, d.host, d.tiling, builder._rank_devices(spec, d.host, d.tiling))
