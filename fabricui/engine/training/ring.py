"""Memory-bound work PyTorch's ring attention adds beside its attention kernels.

PyTorch's context parallelism (``torch.distributed.tensor.experimental.context_parallel``,
read in ``_attention.py`` of torch 2.6.0, git 2236df1, released from the December 2024
trunk whose nightly 1963fc8 of 2024-12-23 ran torchtitan's CP benchmarks) calls the fused
attention kernel once per ring step, on the rank's queries and one chunk's keys and values,
and combines the steps outside the kernels:

- forward, ``_SDPAMerger``: each step's partial output is converted to FP32 and merged into
  the running output by its log-sum-exp (``convert_to_f32 = True``), which is cast back to
  16 bits after the last step;
- backward, ``_templated_ring_attention_backward``: each step's query gradient is added into
  an FP32 accumulator, and each step's key and value gradients into FP32 buffers
  (``accum_dtype = torch.float32``) that travel the ring, one all-to-all a step
  (``dkv_rotater``), cast back to 16 bits once they are home.

torchtitan compiles each transformer block whole (``fullgraph=True``), the ring included,
and the model counts a chain of pointwise operations as one kernel reading its inputs once
and writing its result once (``PASS_BYTES["compiled"]``). The merge and the query-gradient
sum are such chains (each reads every step's 16-bit result and writes one 16-bit tensor);
the key and value gradients are written out every step, since each step sends them.

Notation: ``c`` the CP degree, ``T`` the rank's tokens, ``A`` the rank's query width
(local heads times head width); torchtitan repeats key and value heads up to the query
heads before attention (``repeat_kv``), so keys, values and their gradients are ``T x A``
too. The log-sum-exp (one FP32 value per row and head, ``1 / d`` of these tensors) is left
out. At ``c = 1`` torchtitan does not enter the ring: nothing.
"""

from __future__ import annotations

import numpy as np

from fabricui.engine.training.kernels import FloatArray, Number

#: Bytes per element of each step's 16-bit partial result (output, query gradient) that
#: the fused merge or sum reads once.
PARTIAL_BYTES = 2.0
#: Bytes per element of the 16-bit result it writes once.
RESULT_BYTES = 2.0
#: Bytes per element of one ring step's key or value gradient update: the FP32 buffer
#: received from the previous rank (4), the step's 16-bit gradient (2), the FP32 sum written
#: into the buffer sent on (4).
ACCUMULATE_STEP_BYTES = 4.0 + 2.0 + 4.0
#: The first step adds its 16-bit gradient (2) into zeros and writes FP32 (4); after the
#: last, the returned FP32 buffer is read (4) and written in 16 bits (2).
ACCUMULATE_ENDS_BYTES = (2.0 + 4.0) + (4.0 + 2.0)


def ring_merge_bytes(tokens: Number, width: Number, cp: Number) -> tuple[FloatArray, FloatArray]:
    """HBM bytes of the ring's merges and FP32 accumulations, one layer, one micro-batch.

    Forward: ``(2c + 2) T A`` (the merge reads ``c`` partial outputs, writes one).
    Backward: the query gradient's sum ``(2c + 2) T A`` plus the key and value gradients'
    ``2 (10 (c - 1) + 12) T A``: in all ``(22c + 6) T A``.

    Args:
        tokens: The rank's tokens ``T = b s / c``.
        width: The rank's query width ``A`` [elements].
        cp: Context-parallel degree ``c``.

    Returns:
        (forward, backward) [bytes], 0 where ``c`` is 1.
    """
    c = np.asarray(cp, dtype=np.float64)
    elements = np.asarray(tokens, dtype=np.float64) * np.asarray(width, dtype=np.float64)
    merge = PARTIAL_BYTES * c + RESULT_BYTES
    kv = ACCUMULATE_STEP_BYTES * (c - 1.0) + ACCUMULATE_ENDS_BYTES
    ring = c > 1
    forward = np.where(ring, merge * elements, 0.0)
    backward = np.where(ring, (merge + 2.0 * kv) * elements, 0.0)
    return forward, backward


__all__ = ["ring_merge_bytes"]
