"""Record templates the unit tests write into ``--hwdb`` directories."""

from __future__ import annotations

from pathlib import Path

from fabricui.hwdb import Catalog, load_catalog, shipped_hwdb_dirs

#: One scale-up link generation; fill ``id``, ``bw`` and ``lat`` with ``str.format`` (as
#: text, so a test can write ``1e3`` or ``3E-1`` as a user would).
LINK = """\
links:
- id: {id}
  name: Test link
  family: nvlink
  tier: scale-up
  bw_GBps: {bw}
  links_per_gpu: 18
  lat_us: {lat}
  efficiency: 0.8
  source: https://example.com/datasheet
"""


def link(record_id: str, bw: object, lat: object = 0.3) -> str:
    """A record file holding one ``LINK`` generation."""
    return LINK.format(id=record_id, bw=bw, lat=lat)


#: One attention kernel record; ``{tables}`` holds the lines under test (head-dim, window
#: or FP8 tables), ``{impl}`` and ``{arch}`` its kernel and architecture.
KERNEL = """\
kernels:
- id: test-kernel
  impl: {impl}
  arch: {arch}
  fwd_efficiency: 0.6
  bwd_efficiency: 0.5
{tables}
  source: https://example.com/paper
"""


def load_kernel(
    tmp_path: Path, tables: str, impl: str = "cudnn", arch: str = "blackwell"
) -> Catalog:
    """The shipped database plus one ``KERNEL`` record (``test-kernel``) holding ``tables``."""
    text = KERNEL.format(tables=tables, impl=impl, arch=arch)
    (tmp_path / "kernels.yaml").write_text(text, encoding="utf-8")
    return load_catalog([*shipped_hwdb_dirs(), tmp_path])
