"""Built-in plugin: importers for nvidia-smi topo -m, NCCL topology XML, ibstat and rocm-smi."""

from __future__ import annotations

from typing import Any, Callable

from fabricui import hookimpl


@hookimpl
def register_importers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register the four built-in importers under their format names.

    Args:
        register: The host's callback, ``register(name, parse)``.
    """
    from fabricui.importers.builtin import builtin_importers

    for name, parse in builtin_importers().items():
        register(name, parse)
