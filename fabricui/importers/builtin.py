"""The built-in importers by format name (registered by the ``fabricui_importers`` plugin)."""

from __future__ import annotations

from typing import Any, Callable

#: Built-in format names, in the order help texts list them.
BUILTIN_FORMATS = ("nvidia-smi", "nccl-xml", "ibstat", "rocm-smi")


def builtin_importers() -> dict[str, Callable[[str], Any]]:
    """Format name -> ``parse(text)`` for every built-in importer.

    Returns:
        ``nvidia-smi``, ``nccl-xml``, ``ibstat`` (also reads ibv_devinfo and ibdev2netdev)
        and ``rocm-smi``.
    """
    from fabricui.importers import ibstat, nccl_xml, nvidia_smi, rocm_smi

    return {
        "nvidia-smi": nvidia_smi.parse,
        "nccl-xml": nccl_xml.parse,
        "ibstat": ibstat.parse,
        "rocm-smi": rocm_smi.parse,
    }
