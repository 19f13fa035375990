"""UALink 200G 1.0 port generations (x1, x2, x4), with the references for every figure.

One ``LinkGeneration`` per port width: a lane carries 200 Gb/s of data per direction, so a
port of ``lanes`` lanes moves ``lanes * 25`` GB/s per direction. Figures are per direction,
as everywhere in fabricui (``docs/hwdb.md``).
"""

from __future__ import annotations

from fabricui.api import LinkGeneration

#: Data rate of one UALink 200G lane, per direction [Gb/s] (signalling is 212.5 GT/s).
LANE_GBPS = 200.0
#: Port widths UALink 1.0 allows [lanes].
PORT_LANES = (1, 2, 4)
#: Link family of every UALink generation (``LinkGeneration.family``).
FAMILY = "ualink"

#: Speeds and widths: Tom's Hardware's report of the final 1.0 specification (8 April 2025).
SPEC_SOURCE = (
    "https://www.tomshardware.com/tech-industry/ualink-has-nvidias-nvlink-in-the-crosshairs-"
    "final-specs-support-up-to-1-024-gpus-with-200-gt-s-bandwidth"
)
#: "93% effective peak bandwidth": the consortium's release of the 200G 1.0 specification.
EFFICIENCY_SOURCE = "https://dev.convergedigest.com/?p=101488"
#: Switch port-to-port latency targets: the consortium's answers after its 1.0 webinar.
SWITCH_LATENCY_SOURCE = (
    "https://ualinkconsortium.org/blog/"
    "a-deeper-dive-responding-to-the-ualink-200g-1-0-specification-webinar-qa-session-822"
)
#: Release date and the AMD xGMI / Infinity Fabric heritage of the protocol.
RELEASE_SOURCE = "https://www.nextplatform.com/2025/04/08/ualink-fires-first-gpu-interconnect-salvo-at-nvidia-nvswitch/"

_NOTE = (
    "UALink 200G 1.0 (ratified 8 April 2025): each lane carries 200 Gb/s of data per direction "
    "(212.5 GT/s signalling including FEC and encoding); ports are x1, x2 or x4, so this x{lanes} "
    "port moves {gbps:g} Gb/s = {bw:g} GB/s per direction. Efficiency 0.93 is the consortium's "
    "'effective peak bandwidth' claim (64 B transaction-layer flits packed into 640 B data-link "
    "flits): a protocol figure, not a measured collective rate; measured NVLink and xGMI "
    "collectives reach 0.70-0.82 of line rate, so expect less until UALink silicon is measured "
    "(none ships in 2025). lat_us is an estimate: the specification targets under 1 us round "
    "trip for 64 B requests over copper shorter than 4 m through one switch; a round trip is 4 "
    "link hops and 2 switch traversals (about 0.25 us each for a 100 Tb/s switch), which "
    "leaves about 0.12 us per link hop."
)


def ualink_port(lanes: int) -> LinkGeneration:
    """The UALink 200G 1.0 port generation of ``lanes`` lanes.

    Args:
        lanes: Port width: 1, 2 or 4.

    Returns:
        The link generation ``ualink200-x<lanes>``.

    Raises:
        ValueError: ``lanes`` is not a width UALink 1.0 defines.
    """
    if lanes not in PORT_LANES:
        raise ValueError(f"UALink 1.0 ports are x1, x2 or x4 (got x{lanes})")
    gbps = lanes * LANE_GBPS
    return LinkGeneration(
        id=f"ualink200-x{lanes}",
        name=f"UALink 200G 1.0 x{lanes} port",
        family=FAMILY,
        tier="scale-up",
        year=2025,
        bw_GBps=gbps / 8.0,
        lat_us=0.12,
        efficiency=0.93,
        source=SPEC_SOURCE,
        sources={
            "efficiency": EFFICIENCY_SOURCE,
            "lat_us": SWITCH_LATENCY_SOURCE,
            "year": RELEASE_SOURCE,
        },
        note=_NOTE.format(lanes=lanes, gbps=gbps, bw=gbps / 8.0),
    )


#: Every UALink 1.0 port generation, narrowest first.
LINKS = tuple(ualink_port(lanes) for lanes in PORT_LANES)
