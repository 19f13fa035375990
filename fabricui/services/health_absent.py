"""A host's NIC missing from its own device listing: the topology names its NICs' devices
(``net.adapters``) and the host's ``ibstat`` (or ``rdma link``) lists the others but not
that one.

``ibstat`` with no argument lists every RDMA device the kernel has, so a device it does not
list is an HCA the driver does not run (dead, unseated, or its driver failed to load): it
carries no traffic. Which NIC that is depends on the names. The kernel names devices in
the order it finds them (``mlx5_0``, ``mlx5_1`` ... with no gap), so after an HCA is lost
at boot every later device takes the name one before it and the last name is the one
that goes: the names no longer say which NIC is gone. When the listing has a later name
than the missing one, the names were not moved (the HCA went while the others ran, or
names are pinned): the missing device is that NIC, and it is priced down. Otherwise one
note says which names are missing and that the host's ports are not placed by name. A lost
HCA shows either as fewer ports on the NICs' link layer than the host has NICs or, where
other adapters share that link layer (a DGX H100's storage ports on InfiniBand), as names
that run without a gap and stop short of the topology's last NIC name by as many names as
NICs are missing. Where no NIC name is missing but one or more of them are ports of another
link layer than the other NICs' (a DGX A100's Ethernet storage HCA now named ``mlx5_3``),
with fewer ports on the NICs' layer than the host has NICs, the names moved the same way
and are said the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Formats whose output, run without a device argument, lists every RDMA device of its host.
WHOLE_LISTINGS = ("ibstat", "rdma-link")
#: A device name's family and number (``mlx5_`` and 6 of ``mlx5_6``).
_NUMBERED = re.compile(r"^(.*?)(\d{1,6})$")


@dataclass(frozen=True)
class AbsentNics:
    """The topology's NIC devices a whole listing of a host leaves out."""

    missing: tuple[str, ...]
    """The devices (``net.adapters`` names) not listed, in NIC order."""
    nics: tuple[int, ...]
    """Their NIC indexes (positions in ``net.adapters``)."""
    kept_names: bool
    """The listing has a later name of the same family than each missing one: the names
    were not moved, so each missing device is its NIC (priced down)."""
    later: str
    """A listed device named after the missing ones (``mlx5_9``), when ``kept_names``."""
    listed_ports: int
    """Ports the listing has on the NICs' link layer."""
    layer: str
    """That link layer as the listing names it (``InfiniBand``), or ``fabric``."""
    nic_count: int
    """NICs the topology gives the host (``net.adapters`` names)."""
    names_run: tuple[str, str] = ("", "")
    """The first and last names of a listing that runs without a gap and stops short of
    the missing names (``mlx5_0``, ``mlx5_10``), when that, not its port count, shows the
    lost HCA; else empty."""
    moved_layer: str = ""
    """The link layer ``missing``'s devices are listed on (``Ethernet``) when they are not
    missing but on another layer than the other NICs; else empty."""

    def _what(self, host: str) -> str:
        names = " and ".join(
            f"{device} (NIC {nic} in net.adapters)" for device, nic in zip(self.missing, self.nics)
        )
        verb = "are" if len(self.missing) > 1 else "is"
        if self.moved_layer:
            ports = "ports" if len(self.missing) > 1 else "a port"
            return (
                f"{names} {verb} {ports} of {self.moved_layer} in {host}'s device listing, "
                f"not of {self.layer} as the other NICs"
            )
        return f"{names} {verb} missing from {host}'s device listing"

    def note(self, origin: str, host: str) -> str:
        """One line for the notes: what is missing, what that means, how it is priced."""
        gone = (
            "an HCA the driver does not list (dead, unseated, or its driver failed to load) "
            "carries no traffic"
        )
        if self.kept_names:
            it, nic = (
                ("it", "it is that NIC")
                if len(self.missing) == 1
                else ("them", "they are those NICs")
            )
            return (
                f"{origin}: {self._what(host)}, while {self.later} after {it} is listed: "
                f"{gone}, and the devices after {it} kept their names, so {nic}, taken as down"
            )
        first, last = self.names_run
        listing = f"which has {self.listed_ports} {self.layer} ports for {self.nic_count} NICs"
        if last:
            listing = (
                f"which lists {first} to {last} with no gap and stops before {self.missing[0]}"
            )
        elif self.moved_layer:
            listing = listing.replace("which has", "and the listing has", 1)
        return (
            f"{origin}: {self._what(host)}, {listing}: {gone}, but the kernel names "
            "devices in the order it finds them, so after a lost HCA every later name moves "
            "down by one and which NIC is gone cannot be told from the names: every NIC is "
            f"priced up, and {host}'s ports are not placed by name (give iblinkinfo or "
            "ibnetdiscover output with it)"
        )

    def unplaced(self, host: str) -> str:
        """Why a port of the listing is not placed (the findings' ``not applied`` reason)."""
        return (
            f"{self._what(host)}, so the names {'' if self.moved_layer else 'after it '}may "
            "have moved: which NIC this port is "
            "cannot be told (give iblinkinfo or ibnetdiscover output with it)"
        )


def absent_nics(
    fmt: str, result: Any, ports: list[Any], adapters: tuple[str, ...]
) -> AbsentNics | None:
    """The topology's NIC devices missing from one host's whole device listing, or None.

    A listing counts when it is of a format that lists every device (``WHOLE_LISTINGS``),
    names at least two devices (``ibstat mlx5_6`` lists one), its importer said nothing is
    cut or elided (an ``ibpanic`` ends ``ibstat`` early), and it lists more than half of
    the NIC devices. A missing device with no later name listed is said only when the
    listing has fewer ports on the NICs' link layer than the host has NICs, or names that
    run without a gap and stop short of the last NIC name by as many names as NICs are
    missing (``_names_stop_short``): a listing with as many ports and other names is
    another server's naming (``mlx5_0`` to ``mlx5_7``), not a lost HCA.

    Args:
        fmt: The importer that read the listing.
        result: Its result (``warnings`` and ``errors`` say whether it is whole).
        ports: Its ports (``PortHealth``).
        adapters: ``net.adapters`` of the topology.
    """
    if fmt not in WHOLE_LISTINGS or not adapters:
        return None
    if getattr(result, "warnings", None) or getattr(result, "errors", None):
        return None
    devices = {p.device for p in ports}
    listed = [a for a in adapters if a in devices]
    missing = [a for a in adapters if a not in devices]
    if len(devices) < 2 or 2 * len(listed) <= len(adapters):
        return None
    if not missing:
        return _moved_names(ports, adapters)
    nics = tuple(adapters.index(a) for a in missing)
    later = _later_name(missing, devices)
    layers = [p.link_layer for p in ports if p.device in listed]
    layer = max(set(layers), key=layers.count) if layers else None
    count = sum(1 for p in ports if p.link_layer == layer)
    run: tuple[str, str] = ("", "")
    if later is None and count >= len(adapters):
        run = _names_stop_short(missing, devices) or ("", "")
        if not run[1]:
            return None
    return AbsentNics(
        tuple(missing),
        nics,
        later is not None,
        later or "",
        count,
        layer or "fabric",
        len(adapters),
        run,
    )


def _moved_names(ports: list[Any], adapters: tuple[str, ...]) -> AbsentNics | None:
    """NIC names listed with ports of another link layer than most NICs' (an Ethernet
    storage HCA named ``mlx5_3`` where the NICs are InfiniBand), when the listing has fewer
    ports on the NICs' layer than the host has NICs: a lost HCA's later names moved down
    onto other adapters. None for any other listing (every NIC on one layer, or as many
    ports on it as NICs: a host whose NICs mix layers by design)."""
    device_layers: dict[str, set[str]] = {}
    for p in ports:
        device_layers.setdefault(p.device, set()).add(p.link_layer)
    nic_layers = [device_layers[a] for a in adapters]
    if any(None in layers or "" in layers for layers in nic_layers):
        return None  # a listing that does not say every NIC's layer
    counts: dict[str, int] = {}
    for layers in nic_layers:
        for layer in layers:
            counts[layer] = counts.get(layer, 0) + 1
    layer = max(counts, key=lambda name: counts[name])
    moved = [a for a, layers in zip(adapters, nic_layers) if layer not in layers]
    count = sum(1 for p in ports if p.link_layer == layer)
    if not moved or 2 * counts[layer] <= len(adapters) or count >= len(adapters):
        return None
    others = sorted({name for a in moved for name in device_layers[a]})
    return AbsentNics(
        tuple(moved),
        tuple(adapters.index(a) for a in moved),
        False,
        "",
        count,
        layer,
        len(adapters),
        moved_layer=" and ".join(others),
    )


def _names_stop_short(missing: list[str], devices: set[str]) -> tuple[str, str] | None:
    """The first and last listed names of the missing devices' family when they run from
    0 with no gap and stop exactly as many names before the last missing one as devices
    are missing (``mlx5_0`` to ``mlx5_10`` for ``mlx5_11`` missing): every later name
    moved down by one per lost HCA. None for any other listing."""
    numbers: list[int] = []
    family = None
    for name in missing:
        m = _NUMBERED.match(name)
        if not m or family not in (None, m.group(1)):
            return None
        family = m.group(1)
        numbers.append(int(m.group(2)))
    listed = sorted(
        int(m.group(2))
        for m in map(_NUMBERED.match, devices)
        if m is not None and m.group(1) == family
    )
    if not listed or listed != list(range(len(listed))):
        return None
    last = listed[-1]
    if min(numbers) <= last or max(numbers) - last != len(numbers):
        return None
    return f"{family}{listed[0]}", f"{family}{last}"


def _later_name(missing: list[str], devices: set[str]) -> str | None:
    """The first listed device of the same family named after every missing device
    (``mlx5_9`` after ``mlx5_6``), or None when some missing name is the family's last."""
    numbered: dict[str, list[int]] = {}
    for device in devices:
        m = _NUMBERED.match(device)
        if m:
            numbered.setdefault(m.group(1), []).append(int(m.group(2)))
    after: list[tuple[int, str]] = []
    for name in missing:
        m = _NUMBERED.match(name)
        if not m:
            return None
        family, number = m.group(1), int(m.group(2))
        later = sorted(n for n in numbered.get(family, []) if n > number)
        if not later:
            return None
        after.append((later[0], f"{family}{later[0]}"))
    return max(after)[1] if after else None
