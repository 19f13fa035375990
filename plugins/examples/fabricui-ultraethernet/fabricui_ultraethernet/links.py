"""The Ultra Ethernet (UEC 1.0) 800G link generation, with the references for its figures.

The transport's behaviour maps onto figures fabricui already prices:

- **Packet spraying** (UET sends the packets of one message over every equal-cost path and
  reorders at the receiver) is how fabricui's engine prices every fat-tree tier: flows
  spread evenly over a leaf's or a pod's uplinks (``fabricui/engine/bulk.py``), so no extra
  algorithm is needed and none would be honest (it would count the spreading twice).
- **Per-message latency** is the NIC's ``lat_us`` (``hwdb/nics.yaml``), added at each end
  of every network step, as for EFA and GPUDirect-TCPXO.
- **Efficiency** (the fraction of line rate bulk transfers reach, after headers, selective
  retransmission and congestion control) is the link's ``efficiency`` below.
"""

from __future__ import annotations

from fabricui.api import LinkGeneration

#: Link family of Ultra Ethernet generations (``LinkGeneration.family``).
FAMILY = "uec"

#: UEC Specification 1.0 (June 2025), described by its authors.
SPEC_SOURCE = "https://arxiv.org/abs/2508.08906"
#: Release of the 1.0 specification (June 2025).
RELEASE_SOURCE = (
    "https://dev.convergedigest.com/ultra-ethernet-consortium-releases-specification-1-0"
)
#: 800 Gb/s Ethernet (IEEE 802.3df, 8 x 100G or 4 x 200G lanes).
RATE_SOURCE = "https://www.ieee802.org/3/df/index.html"
#: rccl-tests on MI355X with Pollara 400 (a UEC-ready NIC with packet spraying), 2 x 8 GPUs.
EFFICIENCY_SOURCE = (
    "https://github.com/hisohara/ai-scripts/blob/7b8b1ec290a6af05b685dfb6ce8caae999ea884d/"
    "training/01_rccl-smoketest/README.md"
)

UEC_800G = LinkGeneration(
    id="uec-800g",
    name="Ultra Ethernet (UEC 1.0) 800GbE",
    family=FAMILY,
    tier="scale-out",
    year=2025,
    bw_GBps=100.0,
    rates_Gbps=(400.0, 800.0),
    lat_us=0.2,
    efficiency=0.92,
    source=SPEC_SOURCE,
    sources={"year": RELEASE_SOURCE, "bw_GBps": RATE_SOURCE, "efficiency": EFFICIENCY_SOURCE},
    note=(
        "Ultra Ethernet Transport (UET, UEC Specification 1.0, June 2025) over 800GbE: 800 Gb/s "
        "per port / 8 = 100 GB/s per direction (400GbE ports via net.gbps). UET sprays the "
        "packets of a message over all equal-cost paths, places them out of order, retransmits "
        "selectively and runs sender/receiver congestion control; fabricui prices fat-tree "
        "tiers as evenly spread already, which is what spraying achieves. Efficiency is "
        "derived from the best published Ethernet RDMA run: MI355X with AMD Pollara 400 "
        "(UEC-ready, packet spraying) reaches 369.0 GB/s ring busbw over 2 x 8 x 400G = 0.92 "
        "of line rate (the efficiency source; also fabricui's roce record); no UET 1.0 "
        "measurement at 800G is public yet. Latency (cable plus PHY/FEC) is an estimate, as "
        "for RoCE."
    ),
)

#: Every link generation this plugin registers.
LINKS = (UEC_800G,)
