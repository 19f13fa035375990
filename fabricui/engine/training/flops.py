"""Model FLOPs per token: what MFU and "achieved TFLOP/s" count.

Every matrix multiply of the active parameters forward (2 per parameter) and backward (4)
(Narayanan et al. 2021 eq. 3 without the recompute pass; PaLM's MFU), the output layer,
and the attention score and value products of the causal half of the ``s x s`` matrix
(``6 s q_dim`` per layer): the work a causal kernel does. Megatron's and PaLM's reports
count the whole square (``12 s q_dim``), which no kernel computes; at long sequences that
count puts "MFU" above 100% of the peak. Recomputation is not model work, so it is not
counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricui.engine.training.shape import Geometry


def model_flops_per_token(geo: Geometry, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward) [FLOP].

    Notes:
        ``6 (N_active - N_embedding) + 6 L s_eff a d + 6 V h`` where ``N_embedding`` is
        the input embedding and the output layer (``2 V h``; the lookup is not a multiply,
        the output layer is counted by ``6 V h``) and ``s_eff`` is ``s``, or for windowed
        layers twice the window (a token attends to at most the window, not half the
        sequence), and ``a d`` the heads times their mean score and value width
        (``q_dim``, but for multi-head latent attention).

    Args:
        geo: The model geometry.
        seq_len: Tokens per sequence.
    """
    matrices = geo.active_params - 2 * geo.embedding_params - geo.hidden
    full_layers = geo.layers - geo.window_layers
    window = min(2 * geo.window, seq_len) if geo.window else seq_len
    attended = full_layers * seq_len + geo.window_layers * window
    attention = 6.0 * attended * geo.heads * geo.core_head_dim
    return 6.0 * matrices + attention + 6.0 * geo.vocab * geo.hidden
