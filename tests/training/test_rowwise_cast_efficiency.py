"""torchao's rowwise FP8 casts against torchao's own measured rowwise table.

pytorch/ao fdddb2cfa ``docs/static/fp8-rowwise-perf.png`` ("Speedup observed vs bfloat16 for
LayerNorm -> Linear -> Sigmoid fwd + bwd by forward M, K, N", dynamic row-wise scaling,
PyTorch 2.8.0a0+git48807d5, H100), the rows with 4,096 to 32,768 tokens. The GEMMs price at
the tensorwise FP8 efficiency (its largest shapes reach 1.7x, the model's FP8-to-BF16 GEMM
ratio), the weight's casts at torchao's roofline (2 + 1, 2 x 2, 2 + 1 bytes), the backward
rescale at ``FP8_RESCALE_BYTES``; what is left for the input and output-gradient casts
(``FP8_CAST_BYTES``) is the share of the bandwidth they reach (``FP8_CAST_EFFICIENCY``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.engine.training.device import make_device
from fabricui.engine.training.kernels import linear_times_s, memory_time_s
from fabricui.engine.training.layer import (
    FP8_CAST_BYTES,
    FP8_CAST_EFFICIENCY,
    FP8_RESCALE_BYTES,
    Kernels,
    layer_cost,
)
from fabricui.engine.training.shape import geometry
from tests.training._devices import ROUND
from tests.training._models import llama3_8b_widths

#: Output widths N of the table's columns.
N_COLUMNS = (1024, 2048, 4096, 8192, 16384, 32768)
#: Measured speedups by tokens M, then input width K, one per ``N_COLUMNS``.
TORCHAO_ROWWISE = {
    4096: {
        1024: (0.45, 0.47, 0.57, 0.66, 0.72, 0.76),
        2048: (0.43, 0.53, 0.70, 0.83, 0.90, 0.91),
        4096: (0.44, 0.64, 0.84, 1.01, 1.01, 1.04),
        8192: (0.53, 0.72, 0.91, 1.01, 1.07, 1.13),
        16384: (0.53, 0.74, 0.92, 1.05, 1.10, 1.18),
        32768: (0.54, 0.75, 0.93, 1.02, 1.17, 1.18),
    },
    8192: {
        1024: (0.48, 0.52, 0.65, 0.77, 0.83, 0.84),
        2048: (0.45, 0.64, 0.82, 1.01, 1.03, 1.06),
        4096: (0.52, 0.76, 1.00, 1.13, 1.17, 1.19),
        8192: (0.59, 0.85, 1.05, 1.20, 1.31, 1.41),
        16384: (0.58, 0.82, 1.03, 1.22, 1.37, 1.40),
        32768: (0.59, 0.82, 1.04, 1.30, 1.36, 1.46),
    },
    16384: {
        1024: (0.48, 0.58, 0.73, 0.86, 0.85, 0.89),
        2048: (0.51, 0.70, 0.90, 1.05, 1.07, 1.15),
        4096: (0.57, 0.79, 1.02, 1.20, 1.26, 1.40),
        8192: (0.61, 0.87, 1.08, 1.33, 1.39, 1.49),
        16384: (0.59, 0.83, 1.07, 1.34, 1.42, 1.55),
        32768: (0.60, 0.85, 1.16, 1.35, 1.48, 1.72),
    },
    32768: {
        1024: (0.51, 0.62, 0.77, 0.87, 0.88, 0.94),
        2048: (0.54, 0.73, 0.91, 1.08, 1.14, 1.27),
        4096: (0.59, 0.81, 1.04, 1.28, 1.35, 1.49),
        8192: (0.63, 0.87, 1.11, 1.41, 1.50, 1.62),
        16384: (0.60, 0.83, 1.16, 1.39, 1.49, 1.73),
        32768: (0.63, 0.93, 1.16, 1.48, 1.70, 1.52),
    },
}
#: Bytes per element of the LayerNorm before and the sigmoid after the linear: forward
#: reads and writes 16 bits (2 + 2), backward reads the gradient and the saved tensor and
#: writes one (2 + 2 + 2).
END_BYTES = 10.0
#: torchao's roofline of the weight's rowwise casts (pytorch/ao 6243040
#: ``torchao/testing/float8/roofline_utils.py``): the row-scaled copy (2 + 1), a transposed
#: 16-bit copy (2 x 2) and the column-scaled copy (2 + 1).
WEIGHT_CAST_BYTES = 10.0


def _cells() -> tuple[np.ndarray, ...]:
    m, k, n, measured = [], [], [], []
    for tokens, rows in TORCHAO_ROWWISE.items():
        for width, speedups in rows.items():
            for out, speedup in zip(N_COLUMNS, speedups):
                m.append(tokens)
                k.append(width)
                n.append(out)
                measured.append(speedup)
    return tuple(np.asarray(x, dtype=np.float64) for x in (m, k, n, measured))


@pytest.fixture(scope="module")
def log_errors(catalog):
    """log(model / measured) over the table's cells, as a function of the cast efficiency,
    on the 2.4 TB/s H100 torchao's roofline names (``roofline_utils.py``: "custom to
    Meta's H100 variant")."""
    gpu = catalog.gpus["h100-sxm-hbm2e"]
    bf16, _ = make_device(gpu, "bf16")
    fp8, _ = make_device(gpu, "fp8")
    m, k, n, measured = _cells()

    def ends(device):
        return memory_time_s(device, END_BYTES * (m * k + m * n))

    bf16_f, bf16_b = linear_times_s(bf16, m, n, k)
    fp8_f, fp8_b = linear_times_s(fp8, m, n, k)
    reference = bf16_f + bf16_b + ends(bf16)

    def errors(efficiency: float) -> np.ndarray:
        overhead = memory_time_s(
            fp8,
            FP8_CAST_BYTES["rowwise"] / efficiency * (m * k + m * n)
            + WEIGHT_CAST_BYTES * k * n
            + FP8_RESCALE_BYTES["rowwise"] * (m * k + k * n),
        )
        return np.log(reference / (fp8_f + fp8_b + overhead + ends(fp8)) / measured)

    return errors


def test_table_has_every_cell():
    """Four token counts by six input widths by six output widths."""
    assert len(_cells()[0]) == 4 * 6 * 6


def test_rowwise_cast_efficiency_fits_torchaos_table(log_errors):
    """The engine's efficiency is the best fit within a 0.02 step, unbiased (mean log error
    within 3%) and within 15% rms of the 144 cells; at full bandwidth the model's speedups
    sit above the table's by more than 15% on average (log)."""
    efficiency = FP8_CAST_EFFICIENCY["rowwise"]
    grid = np.arange(0.30, 1.0001, 0.02)
    rms = [float(np.sqrt(np.mean(np.square(log_errors(e))))) for e in grid]
    best = float(grid[int(np.argmin(rms))])
    assert efficiency == pytest.approx(best, abs=0.021)
    at_engine = log_errors(efficiency)
    assert abs(float(np.mean(at_engine))) < 0.03
    assert float(np.sqrt(np.mean(np.square(at_engine)))) < 0.15
    assert float(np.mean(log_errors(1.0))) > 0.15


def test_other_recipes_cast_at_full_bandwidth():
    """Only rowwise has a measured cast efficiency; every other recipe's casts run at the
    memory passes' bandwidth."""
    assert set(FP8_CAST_EFFICIENCY) == {"rowwise"}
    assert all(0.0 < value <= 1.0 for value in FP8_CAST_EFFICIENCY.values())


def test_rowwise_casts_cost_their_efficiency_in_a_layer():
    """The efficiency divides the rowwise casts' bytes in a layer and nothing else: Llama 3
    8B's widths at TP 8 with sequence parallelism, 8,000 tokens on the round device (1 TB/s):
    set to 1, the forward loses (1 / 0.44 - 1) of its cast time and its GEMMs stay."""
    model = llama3_8b_widths(seq_len=8000)
    geo = dataclasses.replace(geometry(model), rotary=False, dropout=False)
    kernels = Kernels(fp8_recipe="rowwise")
    priced = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, kernels=kernels)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(FP8_CAST_EFFICIENCY, "rowwise", 1.0)
        full = layer_cost(ROUND, geo, 8, 1, 1, 1, 8000, 1, kernels=kernels)
    # forward casts: QKV and MLP inputs gathered (2h), out-projection q, down f / 8
    cast_bytes = 8000 * (2 * 4096 + 512 + 1792) * FP8_CAST_BYTES["rowwise"]
    more = cast_bytes * (1 / FP8_CAST_EFFICIENCY["rowwise"] - 1)
    assert float(priced.elem_fwd_s - full.elem_fwd_s) == pytest.approx(more / 1e12)
    assert float(priced.gemm_fwd_s) == pytest.approx(float(full.gemm_fwd_s))
