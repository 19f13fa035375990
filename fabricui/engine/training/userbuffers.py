"""Transformer Engine's userbuffers: what each TP collective costs beside the GEMM it runs with.

With TP communication overlap, Megatron hands each sequence-parallel TP collective of a
layer to the Transformer Engine module whose GEMM reads or writes it, and overlaps it with
that one GEMM (``initialize_ub``, ``transformer_engine/pytorch/module/base.py``):

- forward: the norm output's all-gather with the QKV and FC1 GEMMs (``qkv_fprop``,
  ``fc1_fprop``), the projection's and FC2's outputs reduce-scattered with their GEMMs
  (``proj_fprop``, ``fc2_fprop``);
- backward: the output gradient's all-gather with the projection's and FC2's
  input-gradient GEMMs (``proj_dgrad``, ``fc2_dgrad``; the weight gradient reads the
  gathered copy), the norm output gathered again for QKV's and FC1's weight gradients
  behind their input-gradient GEMMs (``qkv_dgrad``, ``fc1_dgrad``: a gather the strategies
  do not list), and those input gradients reduce-scattered behind the weight-gradient
  GEMMs (``qkv_wgrad``, ``fc1_wgrad``).

Each GEMM has a method (``comm_gemm_overlap.cpp``): ``ring_exchange`` cuts the GEMM into
TP-degree chunks and moves one chunk per step with the copy engines (the first chunk of an
all-gather is local; the reduce-scatter's received partials are summed in a pass of their
own after the ring), ``pipeline`` cuts it into ``splits`` chunks and reduce-scatters each
finished one with a kernel on ``comm_sms`` SMs (the last chunk's is exposed), ``bulk`` runs
the collective on ``comm_sms`` SMs beside the whole GEMM. ``sm_margin`` launches the GEMM on
the SMs the kernel leaves; without it the kernel takes its SMs from the GEMM while they
overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Overlap methods of Transformer Engine's userbuffers.
METHODS = ("ring_exchange", "pipeline", "bulk")


@dataclass(frozen=True)
class Method:
    """How userbuffers overlaps one GEMM's collective (a ``ub_cfgs`` entry)."""

    kind: str
    """``ring_exchange``, ``pipeline`` or ``bulk`` (``METHODS``)."""
    comm_sms: int = 1
    """SMs the communication kernel runs on (``num_sm``; the ring exchange's copy engines
    take none beside the GEMM)."""
    sm_margin: bool = False
    """The GEMM is launched on the SMs the kernel leaves (``set_sm_margin``)."""
    splits: int = 4
    """Chunks of a pipelined GEMM (``num_splits``)."""


@dataclass(frozen=True)
class Pairing:
    """One TP collective call of a layer and the GEMM userbuffers overlaps it with."""

    gemm_s: float
    """The GEMM on all the GPU's SMs [s]."""
    method: Method
    """How the two overlap."""
    bytes_scale: float = 1.0
    """The buffer's bytes over the priced call's (0.5: gathered in FP8 under FP8)."""
    unlisted: bool = False
    """A call the strategies do not list (the norm output gathered again in backward): it
    adds to the listed calls' exposure."""


_RING = Method("ring_exchange")
_BULK_TE = Method("bulk", comm_sms=16)

#: ``ub_cfgs`` each framework runs, by GEMM (``gemm:precision`` overrides ``gemm``).
#:
#: ``te``: ``initialize_ub``'s defaults of Transformer Engine 1.x (v1.8,
#: ``module/base.py``), which Megatron-LM's ``--tp-comm-overlap`` runs without
#: ``--tp-comm-overlap-cfg``: ring exchange for the gathers, the projection's and FC2's
#: reduce-scatters pipelined in 4 chunks, bulk elsewhere, 16 SMs for the kernels, no SM
#: margin (2.x sets one for every method but the ring exchange).
#:
#: ``megatron-bridge``: the per-model ``userbuffers_*`` configs of Megatron-Bridge's
#: ``training/comm_overlap.py`` that its performance recipes set, here Llama 3 70B's on
#: H100 (``userbuffers_{bf16,fp8}_h100_h8192_tp4_mbs1_seqlen8192``): bulk kernels on 2 to 24
#: SMs without margin; in BF16 the projection's and FC2's reduce-scatters pipelined on 24
#: and 16 SMs with margin; in FP8 (as in the 405B, 175B and B200 FP8 configs) ring exchange
#: for them too, with a one-SM margin.
CONFIGS: dict[str, dict[str, Method]] = {
    "te": {
        "qkv_fprop": _RING,
        "fc1_fprop": _RING,
        "proj_dgrad": _RING,
        "fc2_dgrad": _RING,
        "proj_fprop": Method("pipeline", comm_sms=16),
        "fc2_fprop": Method("pipeline", comm_sms=16),
        "qkv_dgrad": _BULK_TE,
        "qkv_wgrad": _BULK_TE,
        "fc1_dgrad": _BULK_TE,
        "fc1_wgrad": _BULK_TE,
    },
    "megatron-bridge": {
        "qkv_fprop": _RING,
        "fc1_fprop": _RING,
        "proj_dgrad": _RING,
        "fc2_dgrad": _RING,
        "proj_fprop": Method("pipeline", comm_sms=24, sm_margin=True),
        "fc2_fprop": Method("pipeline", comm_sms=16, sm_margin=True),
        "proj_fprop:fp8": Method("ring_exchange", comm_sms=1, sm_margin=True),
        "fc2_fprop:fp8": Method("ring_exchange", comm_sms=1, sm_margin=True),
        "qkv_dgrad": Method("bulk", comm_sms=4),
        "qkv_wgrad": Method("bulk", comm_sms=24),
        "fc1_dgrad": Method("bulk", comm_sms=2),
        "fc1_wgrad": Method("bulk", comm_sms=4),
    },
}
#: GEMMs whose buffer is gathered in FP8 under FP8 (``layers_all_gather_overlap``).
FP8_GATHERED = ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad", "qkv_dgrad", "fc1_dgrad")


def method_for(config: str, gemm: str, precision: str) -> Method:
    """The method ``config`` runs ``gemm``'s collective with under ``precision``."""
    table = CONFIGS[config]
    return table.get(f"{gemm}:{precision}", table[gemm])


def pairing_exposure_s(
    pairing: Pairing,
    call_s: float,
    size_bytes: float,
    ranks: int,
    collective: str,
    sms: int | None,
    hbm_Bps: float,
) -> float:
    """Time one collective call adds to the step beside its GEMM [s].

    With ``T`` the call, ``G`` the GEMM, ``G'`` the GEMM on the SMs a margin leaves
    (``G * sms / (sms - comm_sms)``), ``t`` the TP degree and ``k / sms`` the kernel's share
    of the SMs:

    - ring exchange: ``G' - G + max(0, T - (t - 1) / t * G')`` (the last chunk's GEMM has no
      transfer beside it), a reduce-scatter plus its sum of the ``t`` received partials
      (read ``size``, write ``size / t`` through HBM);
    - pipeline: ``n`` chunks ``g = G' / n``, ``r = T / n``: ``g + (n - 1) max(g, r) + r - G``,
      plus ``k / sms * min(T, G')`` without margin;
    - bulk: ``G' - G + max(0, T - G')``, plus ``k / sms * min(T, G)`` without margin.

    Args:
        pairing: The GEMM and the method.
        call_s: The collective's call as priced (16-bit) [s].
        size_bytes: Its size as priced (nccl-tests' convention) [bytes].
        ranks: TP degree.
        collective: ``all_gather`` or ``reduce_scatter``.
        sms: The GPU's SMs (None: no SM cost).
        hbm_Bps: Memory bandwidth for the ring's sum [B/s] (0: not priced).

    Returns:
        Exposed time [s], never negative.
    """
    method = pairing.method
    comm_s = call_s * pairing.bytes_scale
    gemm_s = pairing.gemm_s
    share = min(1.0, method.comm_sms / sms) if sms else 0.0
    slowed_s = gemm_s / (1.0 - share) if method.sm_margin and share < 1.0 else gemm_s
    contention = 0.0 if method.sm_margin else share
    if method.kind == "ring_exchange":
        hidden_s = (ranks - 1) / ranks * slowed_s if ranks > 1 else slowed_s
        exposed = slowed_s - gemm_s + max(0.0, comm_s - hidden_s)
        if collective == "reduce_scatter" and hbm_Bps > 0 and ranks > 1:
            exposed += size_bytes * pairing.bytes_scale * (1.0 + 1.0 / ranks) / hbm_Bps
        return exposed
    if method.kind == "pipeline":
        n = max(method.splits, 1)
        chunk_gemm_s, chunk_comm_s = slowed_s / n, comm_s / n
        total = chunk_gemm_s + (n - 1) * max(chunk_gemm_s, chunk_comm_s) + chunk_comm_s
        return max(0.0, total - gemm_s) + contention * min(comm_s, slowed_s)
    return slowed_s - gemm_s + max(0.0, comm_s - slowed_s) + contention * min(comm_s, gemm_s)
