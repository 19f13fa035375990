"""Record templates the unit tests write into ``--hwdb`` directories."""

from __future__ import annotations

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
