"""Built-in plugin: importers for nvidia-smi topo -m, NCCL topology XML, ibstat, rocm-smi and the
cluster formats (ibnetdiscover, iblinkinfo, Slurm topology, nvidia-smi -q)."""

from __future__ import annotations

from typing import Any, Callable

from fabricui.api import hookimpl


@hookimpl
def register_importers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register the built-in importers under their format names.

    Args:
        register: The host's callback, ``register(name, parse)``.
    """
    from fabricui.api import builtin_importers

    for name, parse in builtin_importers().items():
        register(name, parse)
