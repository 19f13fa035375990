"""Built-in plugin: parallelism strategies (DDP, ZeRO-1/2/3 and FSDP, HSDP, TP, PP, EP)."""

from __future__ import annotations
