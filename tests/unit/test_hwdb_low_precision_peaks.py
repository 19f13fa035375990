"""Every GPU of a generation with FP8 (FP4) tensor units has its dense FP8 (FP4) peak in
hwdb/gpus.yaml, so a plan in fp8 (fp4) on it is priced, never refused for want of a peak
(``device.missing_peak``); and the peaks of the Ada, CDNA3/CDNA4, GeForce Blackwell and
Rubin parts are their sources' own figures, dense (half a 2:4-sparsity figure).

Sources, as the records cite them: NVIDIA's L4 and L40S datasheets, the Ada and RTX
Blackwell architecture whitepapers (Appendix A, FP32-accumulate rows), AMD's MI300X
datasheet and MI350X page (per-CU rate x clock, as for MI355X), NVIDIA's Vera Rubin rack
figures (GTC 2025 FP8 training, CES 2026 NVFP4 training) over 72 packages.
"""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training.device import make_device, missing_peak
from fabricui.errors import EngineError

#: Architectures (hwdb ``arch``) whose tensor units run FP8: NVIDIA Ada (4th-generation
#: tensor cores) and later, AMD CDNA3 and later, and the other vendors' parts that publish
#: an FP8 rate.
FP8_ARCHS = frozenset(
    {"ada", "hopper", "blackwell", "rubin", "cdna3", "cdna4", "tpu-v7", "trainium2", "gaudi3"}
)
#: Architectures without FP8 tensor units (or with no published FP8 rate).
NO_FP8_ARCHS = frozenset({"volta", "turing", "ampere", "cdna2", "tpu-v5", "tpu-v6"})
#: Architectures with FP4 tensor units (NVFP4, MXFP4).
FP4_ARCHS = frozenset({"blackwell", "rubin", "cdna4"})


def test_every_architecture_is_classified(catalog):
    """A new architecture in hwdb is decided here (FP8 or not), so a part cannot slip in
    without its FP8 peak by being of an architecture this test does not know."""
    archs = {gpu.arch for gpu in catalog.gpus.values()}
    assert archs <= FP8_ARCHS | NO_FP8_ARCHS, sorted(archs - FP8_ARCHS - NO_FP8_ARCHS)


def test_every_fp8_part_has_its_fp8_peak(catalog):
    """Each GPU of an FP8 architecture states ``fp8_dense_TFLOPS`` (an fp8 plan on it is
    priced, not refused), and each of an FP4 architecture ``fp4_dense_TFLOPS``."""
    no_fp8 = [g.id for g in catalog.gpus.values() if g.arch in FP8_ARCHS and not g.fp8_dense_TFLOPS]
    no_fp4 = [g.id for g in catalog.gpus.values() if g.arch in FP4_ARCHS and not g.fp4_dense_TFLOPS]
    assert no_fp8 == []
    assert no_fp4 == []
    for gpu in catalog.gpus.values():
        if gpu.arch in FP8_ARCHS:
            assert missing_peak(gpu, "fp8") is None, gpu.id
        if gpu.arch in FP4_ARCHS:
            assert missing_peak(gpu, "fp4") is None, gpu.id


def test_no_fp8_peak_on_parts_without_fp8(catalog):
    """Parts before FP8 tensor units (A100, V100, MI250X, TPU v5p, v6e) keep refusing fp8."""
    for gpu in catalog.gpus.values():
        if gpu.arch in NO_FP8_ARCHS:
            assert gpu.fp8_dense_TFLOPS is None, gpu.id
            assert gpu.fp4_dense_TFLOPS is None, gpu.id


@pytest.mark.parametrize(
    ("gpu", "fp8", "fp4"),
    [
        ("l4", 485 / 2, None),  # datasheet: FP8 485 TFLOPS with sparsity
        ("l40s", 1466 / 2, None),  # datasheet: FP8 733 dense, 1,466 with sparsity
        ("rtx-4090", 330.3, None),  # Ada whitepaper v2.02: FP8 with FP32 accumulate, dense
        ("rtx-5090", 419.0, 1676.0),  # RTX Blackwell whitepaper: FP32 accumulate, dense
        ("mi300x", 5229.8 / 2, None),  # datasheet: FP8 5,229.8 with sparsity; no FP4
        ("mi350x", 256 * 8192 * 2.2e9 / 1e12, 2 * 256 * 8192 * 2.2e9 / 1e12),
        ("rubin", 1_200_000 / 72, 2_500_000 / 72),  # rack FP8 and NVFP4 training / 72
    ],
)
def test_peaks_are_their_sources_figures(catalog, gpu, fp8, fp4):
    """Each part's dense FP8 (FP4) peak is its source's figure, with its source URL."""
    record = catalog.gpus[gpu]
    assert record.fp8_dense_TFLOPS == pytest.approx(fp8, rel=1e-4)
    assert record.sources["fp8_dense_TFLOPS"].startswith("https://")
    if fp4 is None:
        assert record.fp4_dense_TFLOPS is None
    else:
        assert record.fp4_dense_TFLOPS == pytest.approx(fp4, rel=1e-4)
        assert record.sources["fp4_dense_TFLOPS"].startswith("https://")


@pytest.mark.parametrize("gpu", ["l4", "l40s", "rtx-4090", "rtx-5090", "mi300x", "mi350x"])
def test_fp8_and_fp4_plans_price_at_the_peak(catalog, gpu):
    """An fp8 (fp4) device runs its GEMMs at the part's FP8 (FP4) peak, not refused and
    not at the 16-bit rate."""
    record = catalog.gpus[gpu]
    device, notes = make_device(record, "fp8")
    assert device.peak_flops == pytest.approx(record.fp8_dense_TFLOPS * 1e12)
    assert device.half_flops == pytest.approx(record.bf16_dense_TFLOPS * 1e12)
    assert not any("tensor peak" in note for note in notes)
    if record.fp4_dense_TFLOPS:
        device, _ = make_device(record, "fp4")
        assert device.peak_flops == pytest.approx(record.fp4_dense_TFLOPS * 1e12)


def test_rubin_asks_for_its_bf16_peak_not_an_fp8_one(catalog):
    """Rubin has FP8 and NVFP4 peaks but no published BF16 one: an fp8 plan is refused
    for the BF16 figure (attention runs in BF16), and prices once a --hwdb override gives
    one."""
    rubin = catalog.gpus["rubin"]
    for precision in ("fp8", "fp4"):
        assert missing_peak(rubin, precision) is None
        with pytest.raises(EngineError, match=r"no published BF16 peak"):
            make_device(rubin, precision)
    given = dataclasses.replace(rubin, bf16_dense_TFLOPS=8000.0)
    assert make_device(given, "fp8")[0].peak_flops == pytest.approx(rubin.fp8_dense_TFLOPS * 1e12)
    assert make_device(given, "fp4")[0].peak_flops == pytest.approx(rubin.fp4_dense_TFLOPS * 1e12)
