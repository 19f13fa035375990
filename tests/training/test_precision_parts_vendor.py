"""The FP8/FP4 refusal names the parts that have the peak with the refused GPU's own vendor
first: a TPU v6e user is told of the TPU7x, which a list cut at its length would hide."""

from __future__ import annotations

from fabricui.services.plan import precision_problem


def _named(message: str) -> list[str]:
    """The part ids after ``in hwdb: `` (without the ``and N more``)."""
    listed = message.split("in hwdb: ", 1)[1].rstrip(")")
    return [part.split(" and ")[0] for part in listed.split(", ")]


def test_the_gpus_own_vendor_comes_first(catalog):
    """tpu-v6e (no FP8 peak): tpu7x is named first; the A100's list starts with NVIDIA
    parts in hwdb order, as before."""
    tpu = precision_problem(catalog.gpus["tpu-v6e"], "fp8", catalog)
    assert tpu is not None and _named(tpu)[0] == "tpu7x"
    a100 = precision_problem(catalog.gpus["a100-sxm4-80gb"], "fp8", catalog)
    assert a100 is not None
    nvidia = [g.id for g in catalog.gpus.values() if g.vendor == "nvidia" and g.fp8_dense_TFLOPS]
    assert _named(a100)[: len(nvidia)] == nvidia


def test_every_vendor_first_when_the_list_is_cut(catalog):
    """However long the list, the refused GPU's vendor's parts with the peak are named."""
    for gpu in catalog.gpus.values():
        for precision, field in (("fp8", "fp8_dense_TFLOPS"), ("fp4", "fp4_dense_TFLOPS")):
            message = precision_problem(gpu, precision, catalog)
            if message is None:
                continue
            own = [
                g.id for g in catalog.gpus.values() if g.vendor == gpu.vendor and getattr(g, field)
            ]
            assert _named(message)[: len(own)] == own[:16], (gpu.id, precision)
