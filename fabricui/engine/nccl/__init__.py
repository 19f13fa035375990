"""NCCL's own choice of algorithm, protocol and channels, modelled per release.

``releases`` holds NCCL's tuning tables from 2.18 to the newest release read, ``env`` reads
the NCCL variables that change its choice, ``view`` and ``search`` derive what NCCL's
topology detection and search report for a group, ``tuner`` computes NCCL's own predicted
time of every (algorithm, protocol), and ``picks`` joins it with the engine's physical
prices: per size, what NCCL runs and the fastest pick it could run.
"""

from __future__ import annotations

from fabricui.engine.nccl.picks import Choice, NcclSettings, Pick, choose, library_of
from fabricui.engine.nccl.releases import NEWEST_VERSION, RELEASES, release_for

__all__ = [
    "NEWEST_VERSION",
    "RELEASES",
    "Choice",
    "NcclSettings",
    "Pick",
    "choose",
    "library_of",
    "release_for",
]
