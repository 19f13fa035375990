"""How long one process takes to issue a collective call on the GPUs it drives.

nccl-tests run with ``-g N`` issue each iteration from one thread, one call per GPU inside
``ncclGroupStart``/``ncclGroupEnd`` (an all-to-all posts a send and a receive per peer for
each GPU), and time back-to-back iterations (src/common.cu): the GPUs run one iteration
while the thread issues the next, so an iteration takes the longer of the two. Both the
physical model (every candidate's time) and NCCL's pick (which knows each candidate's
channels) floor their times with ``issue_floor_us``.
"""

from __future__ import annotations

from typing import Union

import numpy as np
import numpy.typing as npt

from fabricui.engine.constants import DEFAULT, ModelConstants

Channels = Union[int, npt.NDArray[np.int64]]


def issue_floor_us(
    group, op: str, constants: ModelConstants = DEFAULT, channels: Channels = 1
) -> float | npt.NDArray[np.float64]:
    """Least time a call takes when one thread drives several GPUs [us]; 0 when each GPU
    has its own process.

    Eight A100s driven so take ~35 us for every small all-reduce, reduce and reduce-scatter
    alike, although the all-reduce has twice their steps; the issue grows with the channels
    the call runs on (one work element per channel and GPU,
    ``ModelConstants.single_process_us_per_channel``). Threads (or processes) issue side by
    side, so the busiest thread's GPUs set the floor (``Group.ranks_per_thread``).

    Args:
        group: The ``Group``.
        op: The collective.
        constants: Model constants.
        channels: Channels the call runs on, one value or one per size (1: fewest).

    Returns:
        A float for one channel count, else an array of the channels' shape.

    Notes:
        ``launch + g * (per_gpu + per_channel * (nc - 1) [+ p2p_peer * (n - 1)])``.
    """
    if not group.single_process:
        return 0.0 if np.ndim(channels) == 0 else np.zeros(np.shape(channels))
    per_gpu = constants.single_process_us_per_gpu
    if op == "all_to_all":
        per_gpu += constants.p2p_peer_us * (group.n - 1)
    extra = constants.single_process_us_per_channel * np.maximum(
        np.asarray(channels, dtype=np.float64) - 1.0, 0.0
    )
    floor = constants.launch_us + (per_gpu + extra) * group.ranks_per_thread
    return float(floor) if np.ndim(floor) == 0 else floor
