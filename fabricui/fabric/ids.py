"""GPU ids: ``n<node>.g<gpu>`` (0-based), ``d<domain>.g<gpu>`` or a bare global rank; errors
name valid ranges.

A node is a host (server, compute tray). Where several hosts share one scale-up domain (the
18 trays of a GB200 NVL72 rack), ``d<domain>.g<k>`` names the k-th GPU of the domain, and
the per-rack form earlier versions used, ``n<domain>.g<k>`` with ``k`` beyond the host's
GPUs (``n0.g71``), is read the same way.
"""

from __future__ import annotations

import bisect
import itertools
import re

import numpy as np

from fabricui.errors import EngineError, nearest, unknown_id_message
from fabricui.fabric.fabric import Fabric

#: ``n3.g7`` and the spellings people type for it: ``n3g7``, ``n3:g7``, ``n3/g7``, ``n3-g7``,
#: ``node3.gpu7`` (and ``d``/``domain`` for a scale-up domain's GPU).
_GPU_RE = re.compile(r"^(n|d|node|domain)(\d+)[./:_-]?(?:g|gpu)(\d+)$")


def _valid_range(fabric: Fabric) -> str:
    last_node, last_gpu = fabric.nodes - 1, fabric.gpus_per_node - 1
    text = (
        f"valid: n0..n{last_node} with g0..g{last_gpu} (n0.g0 .. n{last_node}.g{last_gpu}) "
        f"or ranks 0..{fabric.n_gpus - 1}"
    )
    if fabric.hosts_per_domain > 1:
        last_domain, last_k = fabric.domains - 1, fabric.gpus_per_domain - 1
        text += f", or d0..d{last_domain} with g0..g{last_k} (GPU k of a scale-up domain)"
    return text


def _id_forms(fabric: Fabric) -> str:
    """The GPU ids this fabric takes, for an error's tail: on an imported cluster its
    hosts' ``HOST.gK`` first, else ``n<node>.g<gpu>`` (and ``d<domain>.g<k>``) ranges."""
    hosts = list(host_index(fabric))
    if not hosts:
        return _valid_range(fabric)
    last = _gpus_per_host(fabric) - 1
    on = f"the {len(hosts)} hosts {hosts[0]} .. {hosts[-1]}" if len(hosts) > 1 else hosts[0]
    return (
        f"a GPU here is HOST.gK ({hosts[0]}.g0) with K 0..{last} on {on}, n<node>.g<gpu> "
        f"(n0.g0 .. n{fabric.nodes - 1}.g{fabric.gpus_per_node - 1}) or a rank "
        f"0..{fabric.n_gpus - 1}"
    )


def _gpus_per_host(fabric: Fabric) -> int:
    """GPUs of one host (of an imported cluster's host names; a node's otherwise)."""
    per_node = max(1, len(fabric.host_names) // fabric.nodes) if fabric.host_names else 1
    return max(1, fabric.gpus_per_node // per_node)


def _clamp(value: int, last: int) -> int:
    """``value`` within 0..last (the nearest valid index)."""
    return min(max(value, 0), max(last, 0))


def _domain_rank(fabric: Fabric, raw: str, domain: int, k: int, form: str = "d") -> int:
    """Global rank of GPU ``k`` of scale-up domain ``domain`` (``form``: the letter the
    id was typed with, for the nearest id).

    Raises:
        EngineError: No such domain or GPU; names the nearest valid id.
    """
    per = fabric.gpus_per_domain
    if domain < fabric.domains and k < per and domain * per + k < fabric.n_gpus:
        return domain * per + k
    near_domain = _clamp(domain, fabric.domains - 1)
    near_k = _clamp(k, min(per, fabric.n_gpus - near_domain * per) - 1)
    raise EngineError(
        f"no GPU {raw} in {fabric.spec.id}: {fabric.domains} scale-up domain"
        f"{'s' if fabric.domains > 1 else ''} of {per} GPUs (nearest: {form}{near_domain}."
        f"g{near_k}); {_id_forms(fabric)}"
    )


def host_index(fabric: Fabric) -> dict[str, int]:
    """Host name -> host position (node by node) of an imported cluster; empty otherwise."""
    return {name: i for i, name in enumerate(fabric.host_names) if name}


def _host_gpu(fabric: Fabric, raw: str) -> int | None:
    """The rank of ``HOST.gK`` on an imported cluster (``luna-0016.g7``), else None; an
    unknown K on a known host is an error naming the host's GPUs."""
    host, sep, gpu = raw.rpartition(".g")
    if not sep or not fabric.host_names:
        return None
    position = host_index(fabric).get(host)
    if position is None:
        return None
    per_node = len(fabric.host_names) // fabric.nodes
    per_host = fabric.gpus_per_node // per_node
    if not gpu.isdigit() or int(gpu) >= per_host:
        near = _clamp(int(gpu), per_host - 1) if gpu.isdigit() else 0
        raise EngineError(
            f"no GPU {raw} in {fabric.spec.id}: {host} has g0..g{per_host - 1} "
            f"(nearest: {host}.g{near}); {_id_forms(fabric)}"
        )
    node, slot = divmod(position, per_node)
    return node * fabric.gpus_per_node + slot * per_host + int(gpu)


def parse_gpu_id(fabric: Fabric, text: str) -> int:
    """Turn ``n3.g7`` (or ``n3g7``, ``n3:g7``, ``node3.gpu7``), ``d0.g71``, ``31`` or, on an
    imported cluster, ``luna-0016.g7`` into a global rank (a host's name wins over the
    ``n<node>`` form it could look like).

    Args:
        fabric: The fabric the id refers to.
        text: The id as the user typed it.

    Returns:
        The global rank ``node * gpus_per_node + gpu``.

    Raises:
        EngineError: Malformed or out of range; names the nearest valid ids.
    """
    raw = str(text).strip()
    name = fabric.spec.id
    named = _host_gpu(fabric, raw)
    if named is not None:
        return named
    if raw.lstrip("-").isdigit():
        rank = int(raw)
        if 0 <= rank < fabric.n_gpus:
            return rank
        nearest_rank = min(max(rank, 0), fabric.n_gpus - 1)
        raise EngineError(
            f"no GPU rank {rank} in {name} ({fabric.n_gpus} GPUs; nearest: {nearest_rank}, "
            f"{fabric.gpu_name(nearest_rank)}); {_id_forms(fabric)}"
        )
    match = _GPU_RE.match(raw.lower())
    hosts = host_index(fabric)
    host, sep, gpu_text = raw.rpartition(".g")
    if not match and hosts and sep and host and host not in hosts and gpu_text.isdigit():
        # A typo in an imported cluster's host name: name the hosts it is nearest to.
        near_hosts = _nearest_hosts(host, hosts)
        k = _clamp(int(gpu_text), _gpus_per_host(fabric) - 1)
        raise EngineError(
            f"unknown host {host!r} in {name} (nearest: {', '.join(near_hosts)}): no GPU "
            f"{raw} (nearest: {', '.join(f'{h}.g{k}' for h in near_hosts)}); "
            f"{_id_forms(fabric)}"
        )
    if not match:
        raise EngineError(_malformed_id(fabric, raw, hosts))
    form, node, gpu = match.group(1)[0], int(match.group(2)), int(match.group(3))
    if form == "d":
        return _domain_rank(fabric, raw, node, gpu)
    if node < fabric.nodes and gpu < fabric.gpus_per_node:
        return node * fabric.gpus_per_node + gpu
    if fabric.hosts_per_domain > 1 and gpu >= fabric.gpus_per_node:
        # The per-rack form of a multi-host domain (n0.g71 on an NVL72 rack).
        return _domain_rank(fabric, raw, node, gpu, form="n")
    near_node = min(node, fabric.nodes - 1)
    near_gpu = min(gpu, fabric.gpus_per_node - 1)
    nearest = f"n{near_node}.g{near_gpu}"
    problem = []
    if node >= fabric.nodes:
        problem.append(f"{name} has {fabric.nodes} node{'s' if fabric.nodes > 1 else ''}")
    if gpu >= fabric.gpus_per_node:
        problem.append(f"{fabric.gpus_per_node} GPUs per node")
    raise EngineError(
        f"no GPU {raw} in {name}: {' and '.join(problem)} (nearest: {nearest}); {_id_forms(fabric)}"
    )


#: A node or domain without a GPU (``n3``, ``node3``, ``d1``) or with something else after
#: it (``n3.nic1``): its letter, number and the rest.
_NODE_RE = re.compile(r"^(n|d|node|domain)(\d+)(?:[./:_-](.*))?$")


def _malformed_id(fabric: Fabric, raw: str, hosts: dict[str, int]) -> str:
    """The one line for a text that is no GPU id: what it names instead (a host, a node,
    a NIC of one), the nearest GPU ids and the forms this fabric takes."""
    forms = _id_forms(fabric)
    last = _gpus_per_host(fabric) - 1
    host = next(
        (
            raw[:at]
            for at in [len(raw)] + [i for i, c in enumerate(raw) if c == "."]
            if raw[:at] in hosts
        ),
        None,
    )
    if host is not None:
        rest = raw[len(host) + 1 :]
        what = f"{host} is a host" if not rest else f"{rest} is no GPU of {host}"
        near = f"{host}.g{_clamp(_trailing_number(rest), last)}"
        return (
            f"invalid GPU id {raw!r}: {what}, whose GPUs are {host}.g0 .. {host}.g{last} "
            f"(nearest: {near}); {forms}"
        )
    node = _NODE_RE.match(raw.lower())
    if node is not None:
        letter, number, rest = node.group(1)[0], int(node.group(2)), node.group(3) or ""
        if letter == "d":
            count, per, what, form = (
                fabric.domains,
                fabric.gpus_per_domain,
                "a scale-up domain",
                "d<domain>.g<k>",
            )
        else:
            count, per, what, form = fabric.nodes, fabric.gpus_per_node, "a node", "n<node>.g<gpu>"
        detail = f"{raw} is {what}" if not rest else f"{rest} is no GPU of {letter}{number}"
        near = f"{letter}{_clamp(number, count - 1)}.g{_clamp(_trailing_number(rest), per - 1)}"
        return f"invalid GPU id {raw!r}: {detail}, a GPU is {form} (nearest: {near}); {forms}"
    first = f"{next(iter(hosts))}" if hosts else "n0"
    gpu_only = re.match(r"^(?:g|gpu)(\d+)$", raw.lower())
    if gpu_only is not None:  # the GPU without its host or node
        close = [f"{first}.g{_clamp(int(gpu_only.group(1)), last)}"]
    else:
        close = nearest(raw, [f"{h}.g0" for h in itertools.islice(hosts, 4096)])
    hint = f" (nearest: {', '.join(close)})" if close else ""
    kind = "HOST.gK" if hosts else "n<node>.g<gpu>"
    return f"invalid GPU id {raw!r}: use {kind} such as {first}.g3, or a global rank{hint}; {forms}"


def _trailing_number(text: str) -> int:
    """The number a text ends with (``nic5`` -> 5), else 0."""
    found = re.search(r"(\d+)$", text)
    return int(found.group(1)) if found else 0


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _nearest_hosts(host: str, hosts: dict[str, int], count: int = 3) -> list[str]:
    """Hosts nearest a mistyped name: first those with its prefix and number whatever the
    zero padding (``luna-016`` -> ``luna-0016``), then the closest spellings."""
    typed = _NUMBERED.match(host)
    key = (typed.group(1), int(typed.group(2))) if typed else None
    same = [
        candidate
        for candidate in hosts
        if (found := _NUMBERED.match(candidate)) and (found.group(1), int(found.group(2))) == key
    ]
    return list(dict.fromkeys(same + nearest(host, hosts)))[:count]


def placement(fabric: Fabric, rank_a: int, rank_b: int) -> str:
    """How two GPUs (global ranks) sit: ``same node``, ``same domain d<k>`` (different
    hosts of one scale-up domain) or ``different nodes``."""
    node_a, node_b = rank_a // fabric.gpus_per_node, rank_b // fabric.gpus_per_node
    if node_a == node_b:
        return "same node"
    per = fabric.hosts_per_domain
    if per > 1 and node_a // per == node_b // per:
        return f"same domain d{node_a // per}"
    return "different nodes"


def find_gpu(fabric: Fabric, text: str) -> int:
    """The GPU a search names: a GPU id (``n3.g7``, ``luna-0016.g7``, a rank), a host or
    node (``luna-0016``, ``n15``: its first GPU), else the first host whose name holds the
    text (``0016``, case-insensitive), else a NIC or switch (``leaf3``, part of an imported
    switch's name): the first GPU nearest it, the cursor only standing on GPUs.

    Raises:
        EngineError: Nothing matches (the nearest host names, or the valid ids).
    """
    raw = str(text).strip()
    if not raw:
        raise EngineError("type a host, a node (n3) or a GPU id (n3.g7)")
    try:
        return parse_gpu_id(fabric, raw)
    except EngineError as exc:
        error = exc
    hosts = host_index(fabric)
    per_node = len(fabric.host_names) // fabric.nodes if hosts else 1
    per_host = fabric.gpus_per_node // per_node

    def first_gpu(position: int) -> int:
        node, slot = divmod(position, per_node)
        return node * fabric.gpus_per_node + slot * per_host

    if raw in hosts:
        return first_gpu(hosts[raw])
    node = re.match(r"^(?:n|node)(\d+)$", raw.lower())
    if node and int(node.group(1)) < fabric.nodes:
        return int(node.group(1)) * fabric.gpus_per_node
    wanted = raw.lower()
    for name, position in hosts.items():
        if wanted in name.lower():
            return first_gpu(position)
    switch = _find_device(fabric, wanted)
    if switch is not None:
        return gpu_near(fabric, switch)
    if hosts:
        raise EngineError(unknown_id_message("host, switch or GPU", raw, hosts))
    raise error


def _find_device(fabric: Fabric, wanted: str) -> int | None:
    """The device (not a GPU) named ``wanted`` (lower case): a NIC or switch by its whole
    name (``n2.nic5``, ``leaf3``), else the first network switch whose name holds it."""
    return _device_names(fabric).find(wanted)


class _DeviceNames:
    """The lower-case names of a fabric's devices other than GPUs, for ``/`` searches.

    Built once per fabric (every device's name is a Python call, too slow to repeat on each
    keystroke of a 50k-device cluster): a dict for whole names and the network switches'
    names joined into one string, so a part of a name is one ``str.find``.
    """

    _SEP = "\0"

    def __init__(self, fabric: Fabric) -> None:
        is_gpu = np.zeros(fabric.n_devices, dtype=bool)
        is_gpu[fabric.gpu_dev] = True
        devices = np.flatnonzero(~is_gpu).tolist()
        #: Whole name -> device; a name two devices share is the later one's.
        self.by_name = {fabric.device_name(dev).lower(): dev for dev in devices}
        network = int(fabric.domains * fabric.node_devices)
        switches = [(name, dev) for name, dev in self.by_name.items() if dev >= network]
        self.switch_names = [name for name, _ in switches]
        self.switch_devs = [dev for _, dev in switches]
        self.joined = self._SEP.join(self.switch_names)
        #: Where each switch's name starts in ``joined``.
        self.starts = list(
            itertools.accumulate((len(name) + 1 for name in self.switch_names[:-1]), initial=0)
        )

    def find(self, wanted: str) -> int | None:
        """The device named ``wanted``, else the first network switch whose name holds it."""
        if wanted in self.by_name:
            return self.by_name[wanted]
        if self._SEP in wanted:  # it could match across two names in `joined`: scan them
            found = (
                dev for name, dev in zip(self.switch_names, self.switch_devs) if wanted in name
            )
            return next(found, None)
        at = self.joined.find(wanted)
        if at < 0:
            return None
        return self.switch_devs[bisect.bisect_right(self.starts, at) - 1]


def _device_names(fabric: Fabric) -> _DeviceNames:
    """The fabric's device-name index, built on the first search and kept on the fabric (a
    cache on the frozen fabric, not one of its fields, freed with it)."""
    names = fabric.__dict__.get("_device_names")
    if names is None:
        names = _DeviceNames(fabric)
        object.__setattr__(fabric, "_device_names", names)
    return names


def gpu_near(fabric: Fabric, dev: int) -> int:
    """The first GPU (lowest rank) closest to ``dev`` in hops: the GPU itself, the first GPU
    using a NIC, else behind a host device, the first GPU under a switch."""
    ranks = np.flatnonzero((fabric.gpu_dev == dev) | (fabric.gpu_nic == dev))
    if ranks.size:
        return int(ranks[0])
    seen = np.zeros(fabric.n_devices, dtype=bool)
    frontier = np.zeros(fabric.n_devices, dtype=bool)
    frontier[dev] = seen[dev] = True
    while frontier.any():
        reached = np.flatnonzero(frontier[fabric.gpu_dev])
        if reached.size:
            return int(reached[0])
        step = np.zeros(fabric.n_devices, dtype=bool)
        step[fabric.link_dst[frontier[fabric.link_src]]] = True
        frontier = step & ~seen
        seen |= step
    return 0  # a device no GPU reaches: the first GPU
