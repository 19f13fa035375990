"""Read a topology spec from YAML and check it against the catalog."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fabricui.errors import HwdbError, unknown_id_message
from fabricui.hwdb.cluster_file import parse_cluster
from fabricui.hwdb.plugin_dirs import NeedsPluginError
from fabricui.hwdb.schema import (
    FieldError,
    check_choice,
    check_range,
    convert_record,
    stated_fields,
)
from fabricui.hwdb.yamlfile import KeyPath, YamlDocument, format_path
from fabricui.model.topology import (
    DOMAIN_FABRICS,
    INTRA_FABRICS,
    NET_LAYOUTS,
    NIC_ATTACH,
    SWITCHED_LAYOUTS,
    IntraSpec,
    NetSpec,
    TopologySpec,
)

if TYPE_CHECKING:
    from fabricui.hwdb.tables import Catalog
    from fabricui.model import GpuSpec

#: Link families allowed for each intra-node fabric; ``None``: any scale-up link (a direct
#: GPU-to-GPU mesh or a scale-up switch works the same whoever makes the link: NVLink,
#: xGMI, a vendor's new one, which then needs no code).
_INTRA_FAMILIES: dict[str, tuple[str, ...] | None] = {
    "nvswitch": ("nvlink",),
    "switch": None,
    "mesh": None,
    "torus": None,
    "pcie": ("pcie",),
}


#: Largest value of each count a spec may set: far beyond any machine, and small enough that
#: the builder's per-node work (socket pairs, mesh pairs) and its int16 cable counts stay
#: bounded. Fabric-wide sizes are bounded by the builder (``MAX_GPUS``, network tables).
LIMITS: dict[tuple[str, str], int] = {
    ("", "gpus_per_node"): 1024,
    ("intra", "links_per_pair"): 1024,
    ("intra", "links_per_gpu"): 1024,
    ("intra", "pcie_switches"): 256,
    ("intra", "sockets"): 64,
    ("intra", "hosts_per_domain"): 1024,
    ("net", "nics_per_node"): 1024,
    ("net", "leafs"): 65536,
    ("net", "spines"): 65536,
    ("net", "groups"): 4096,
    ("net", "routers_per_group"): 256,
    ("net", "global_links"): 1024,
}


def _check_limits(doc: YamlDocument, base: KeyPath, spec: TopologySpec) -> None:
    """Raise for a count above ``LIMITS`` (before anything is built from it)."""
    for (section, key), limit in LIMITS.items():
        owner = spec if not section else getattr(spec, section)
        value = getattr(owner, key, None) if owner is not None else None
        path = (*base, key) if not section else (*base, section, key)
        _check_limit(doc, path, value, limit)


def _check_limit(doc: YamlDocument, path: KeyPath, value: Any, limit: int) -> None:
    if isinstance(value, int) and value > limit:
        raise _fail(doc, path, f"at most {limit} (got {value})")


def _check_at_least_one(doc: YamlDocument, path: KeyPath, value: Any) -> None:
    """Raise for a count of 0 that the schema reads as a number (hosts per domain, NICs)."""
    if isinstance(value, int) and value < 1:
        raise _fail(doc, path, f"must be at least 1 (got {value})")


def _fail(doc: YamlDocument, path: KeyPath, problem: str) -> HwdbError:
    return FieldError(doc, path, problem)


#: Record kind (catalog table) of each kind word used in messages.
_TABLES = {"gpu": "gpus", "link": "links", "switch": "switches", "NIC": "nics"}


def _ref(
    doc: YamlDocument,
    path: KeyPath,
    table: dict[str, Any],
    kind: str,
    value: str,
    catalog: Catalog | None = None,
) -> Any:
    """The record ``value`` of ``table``; a one-line error naming the plugin to enable when a
    disabled plugin provides it, else the nearest known ids."""
    if value not in table:
        reason = catalog.withheld.get((_TABLES[kind], value)) if catalog is not None else None
        if reason is not None:
            raise NeedsPluginError(
                f"{doc.where(path)}: {format_path(path)}: {kind} {value} {reason}; "
                "enable that plugin to use this topology"
            )
        raise _fail(doc, path, unknown_id_message(kind, value, table))
    return table[value]


def _implied_link(
    doc: YamlDocument, path: KeyPath, catalog: Catalog, link_id: str, what: str
) -> None:
    """A link the spec does not name but the builder will use (a GPU's host or scale-up
    link) must be loaded too; when its plugin is disabled, say so."""
    if link_id in catalog.links:
        return
    reason = catalog.withheld.get(("links", link_id))
    if reason is None:  # the catalog's own reference check makes this unreachable
        raise _fail(doc, path, f"{what} {link_id} is not in the hardware database")
    raise NeedsPluginError(
        f"{doc.where(path)}: {format_path(path)}: {what} {link_id} {reason}; "
        "enable that plugin to use this topology"
    )


def parse_topology(
    doc: YamlDocument, catalog: Catalog, default_id: str = "custom", at: KeyPath = ()
) -> TopologySpec:
    """Turn a parsed topology document into a checked ``TopologySpec``.

    Accepts the bare spec, or a mapping whose ``hardware`` key holds it (a measurement
    entry). ``intra: null`` means one GPU per node; ``net: null`` means a single node.

    Args:
        doc: The parsed document.
        catalog: The hardware database the spec's ids refer to.
        default_id: The spec's id when it names none.
        at: Where the spec sits in ``doc`` (a run file's ``[0].run.topology``), so that
            messages name the whole key path.

    Raises:
        HwdbError: Naming file, line, key path and value of the first problem.
    """
    data = doc.data
    for key in at:
        data = data[key]
    base: KeyPath = at
    if not at and isinstance(data, dict) and "hardware" in data and "gpu" not in data:
        data, base = data["hardware"], ("hardware",)
    if not isinstance(data, dict):
        raise HwdbError(f"{doc.where(base)}: {_MAPPING} (got {type(data).__name__})")
    data = dict(data)
    if data.get("intra", "absent") is None:
        data["intra"] = {"fabric": "none"}
    data.setdefault("id", default_id)
    cluster = data.pop("cluster", None)
    spec = convert_record(doc, base, TopologySpec, data, overrides={"origin": doc.origin})
    if cluster is not None or (spec.net is not None and spec.net.layout == "explicit"):
        # The real cluster's switches and hosts: short text lines, read by their own parser.

        spec = replace(spec, cluster=parse_cluster(doc, (*base, "cluster"), cluster, spec))
    _check_spec(doc, base, spec, catalog)
    return network_defaults(superchip_defaults(spec, catalog), catalog)


#: What a topology spec is, for a value that is no mapping.
_MAPPING = "expected a topology mapping with gpu, nodes, gpus_per_node, intra, net"

#: Fields that hold one word of a fixed vocabulary: (section, key) -> the words.
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("intra", "fabric"): INTRA_FABRICS,
    ("net", "layout"): NET_LAYOUTS,
    ("net", "nic_attach"): NIC_ATTACH,
}

#: Fields that name catalog records: (section, key) -> the kind word of ``_TABLES``.
_IDS: dict[tuple[str, str], str] = {
    ("", "gpu"): "gpu",
    ("intra", "link"): "link",
    ("intra", "host_link"): "link",
    ("intra", "cpu_pcie"): "link",
    ("intra", "socket_link"): "link",
    ("intra", "switch"): "switch",
    ("intra", "axis_links"): "link",
    ("net", "link"): "link",
    ("net", "switch"): "switch",
    ("net", "nic"): "NIC",
    ("net", "axis_links"): "link",
}

#: Counts the schema reads from 0 that a spec needs at least one of.
_AT_LEAST_ONE = (("intra", "hosts_per_domain"), ("net", "nics_per_node"))


def read_stated(
    doc: YamlDocument, base: KeyPath, data: Any, catalog: Catalog | None = None
) -> dict[str, Any]:
    """The fields a partial topology spec states, each read as ``parse_topology`` reads
    it: type and range, limit, vocabulary word and, with ``catalog``, the record it names
    (one a disabled plugin holds is taken as named). A measurements entry's ``hardware``
    block is such a spec: what it leaves out is unstated, what it states must be right (a
    typo would match no topology, and the entry be left out for it). The rules between
    fields (a network for several nodes, a link of the fabric's family) are the whole
    spec's (``parse_topology``).

    Args:
        doc: The document.
        base: Key path of the spec in ``doc``.
        data: The spec as parsed.
        catalog: The hardware database its ids refer to; None: ids are not looked up.

    Returns:
        The stated fields, ``intra`` and ``net`` as mappings of theirs; ``intra: null`` (one
        GPU per node) as None.

    Raises:
        FieldError: The first wrong field, naming its key path.
    """
    if not isinstance(data, dict):
        raise _fail(doc, base, f"{_MAPPING} (got {type(data).__name__})")
    data = dict(data)
    data.pop("cluster", None)  # a real cluster's hosts: read where its fabric is built
    single = data.get("intra", "absent") is None
    if single:
        data["intra"] = {}
    stated = stated_fields(doc, base, TopologySpec, data, overrides=("origin",))
    for section in ("", "intra", "net"):
        fields = stated if not section else stated.get(section)
        path = base if not section else (*base, section)
        for key, value in fields.items() if isinstance(fields, dict) else ():
            _check_stated(doc, (*path, key), (section, key), value, catalog)
    if single:
        stated["intra"] = None
    return stated


def _check_stated(
    doc: YamlDocument,
    path: KeyPath,
    field: tuple[str, str],
    value: Any,
    catalog: Catalog | None,
) -> None:
    """The checks of one field that need no other field: ``LIMITS``, ``_AT_LEAST_ONE``,
    ``_CHOICES`` and ``_IDS``."""
    if value is None:
        return
    if field in LIMITS:
        _check_limit(doc, path, value, LIMITS[field])
    if field in _AT_LEAST_ONE:
        _check_at_least_one(doc, path, value)
    if field in _CHOICES:
        check_choice(doc, path, value, _CHOICES[field])
    kind = _IDS.get(field)
    if kind is None or catalog is None:
        return
    named = enumerate(value) if isinstance(value, tuple) else [(None, value)]
    table = _TABLES[kind]
    for index, record_id in named:
        if (table, record_id) not in catalog.withheld:
            where = path if index is None else (*path, index)
            _ref(doc, where, getattr(catalog, table), kind, record_id, catalog)


def network_defaults(spec: TopologySpec, catalog: Catalog) -> TopologySpec:
    """A network that states no layout is built as its link is built (``LinkGeneration.layout``:
    Slingshot's routers form a dragonfly); a plugin builder's spec is left as written."""
    net = spec.net
    if net is None or net.layout != "auto" or spec.builder is not None:
        return spec
    link = catalog.links.get(net.link)
    if link is None or link.layout not in SWITCHED_LAYOUTS:
        return spec
    return replace(spec, net=replace(net, layout=link.layout))


def superchip_defaults(spec: TopologySpec, catalog: Catalog) -> TopologySpec:
    """A superchip's host side where the spec leaves it out: its GPUs' own link to their
    CPU (``GpuSpec.host_link``, NVLink-C2C on Grace) and one CPU socket per
    ``gpus_per_cpu`` GPUs, as the chip is built (a GH200 quad node has four Graces). A
    plugin builder's spec is left as written."""
    gpu = catalog.gpus.get(spec.gpu)
    if gpu is None or spec.builder is not None or gpu.host_link is None:
        return spec
    intra = spec.intra
    sockets = intra.sockets
    if sockets is None and gpu.gpus_per_cpu and spec.gpus_per_node >= gpu.gpus_per_cpu:
        sockets = spec.gpus_per_node // gpu.gpus_per_cpu
    host_link = intra.host_link or gpu.host_link
    if (host_link, sockets) == (intra.host_link, intra.sockets):
        return spec
    return replace(spec, intra=replace(intra, host_link=host_link, sockets=sockets))


def _check_spec(doc: YamlDocument, base: KeyPath, spec: TopologySpec, catalog: Catalog) -> None:
    gpu = _ref(doc, (*base, "gpu"), catalog.gpus, "gpu", spec.gpu, catalog)
    _check_limits(doc, base, spec)
    intra: IntraSpec = spec.intra
    ipath = (*base, "intra")
    check_choice(doc, (*ipath, "fabric"), intra.fabric, INTRA_FABRICS)
    if spec.builder is not None:
        # A plugin builder decides what the intra-node block means (whether the name is
        # registered is checked where plugins are loaded, in ``fabricui.services.session``).
        if not spec.builder.strip():
            raise _fail(
                doc, (*base, "builder"), f"must name a topology builder (got {spec.builder!r})"
            )
        if intra.link is not None:
            _ref(doc, (*ipath, "link"), catalog.links, "link", intra.link, catalog)
    else:
        _check_intra(doc, ipath, spec, gpu, catalog)
    for attr in ("host_link", "socket_link", "cpu_pcie"):
        value = getattr(intra, attr)
        if value is not None:
            _ref(doc, (*ipath, attr), catalog.links, "link", value, catalog)
    if intra.host_link is None:
        _implied_link(doc, (*base, "gpu"), catalog, gpu.pcie, f"{gpu.id}'s host link")
    if intra.switch is not None:
        _ref(doc, (*ipath, "switch"), catalog.switches, "switch", intra.switch, catalog)
    _check_net(doc, base, spec, catalog)


def _check_intra(
    doc: YamlDocument, ipath: KeyPath, spec: TopologySpec, gpu: GpuSpec, catalog: Catalog
) -> None:
    """The built-in builder's intra-node rules: fabric kind, link family, GPUs per node."""
    intra = spec.intra
    torus = spec.net is not None and spec.net.layout == "torus"
    if torus and intra.fabric != "none":
        raise _fail(
            doc,
            (*ipath, "fabric"),
            f"must be none with net.layout torus: the torus links the chips (got {intra.fabric!r})",
        )
    if intra.fabric == "none" and spec.gpus_per_node > 1 and not torus:
        raise _fail(doc, ipath, f"required when gpus_per_node > 1 ({spec.gpus_per_node})")
    _check_at_least_one(doc, (*ipath, "hosts_per_domain"), intra.hosts_per_domain)
    if intra.hosts_per_domain > 1 and intra.fabric not in DOMAIN_FABRICS:
        raise _fail(
            doc,
            (*ipath, "hosts_per_domain"),
            f"only a switch fabric (nvswitch, switch) or a torus spans hosts (fabric is "
            f"{intra.fabric})",
        )
    _check_intra_torus(doc, ipath, spec, catalog)
    if intra.fabric in _INTRA_FAMILIES:
        link_id = intra.link
        if link_id is None:
            link_id = gpu.scaleup_link if intra.fabric != "pcie" else gpu.pcie
            if link_id is None:
                raise _fail(doc, (*ipath, "link"), f"required: {gpu.id} has no scale-up link")
            what = f"{gpu.id}'s {'host' if intra.fabric == 'pcie' else 'scale-up'} link"
            _implied_link(doc, (*ipath, "fabric"), catalog, link_id, what)
            link = catalog.links[link_id]
        else:
            link = _ref(doc, (*ipath, "link"), catalog.links, "link", link_id, catalog)
        families = _INTRA_FAMILIES[intra.fabric]
        if families is None and link.tier != "scale-up":
            raise _fail(
                doc,
                (*ipath, "link"),
                f"{link.id} is a {link.tier} link; {intra.fabric} needs a scale-up link "
                f"(got {link.id!r})",
            )
        if families is not None and link.family not in families:
            raise _fail(
                doc,
                (*ipath, "link"),
                f"{link.id} is a {link.family} link; {intra.fabric} needs "
                f"{' or '.join(families)} (got {link.id!r})",
            )
        if intra.fabric == "switch" and intra.switch is None:
            family = catalog.links[link_id].family if link_id in catalog.links else ""
            if len([s for s in catalog.switches.values() if s.family == family]) != 1:
                raise _fail(
                    doc,
                    (*ipath, "switch"),
                    f"required with fabric switch: name the switch record of {link_id} "
                    f"(no single catalog switch of family {family!r})",
                )


def _check_intra_torus(
    doc: YamlDocument, ipath: KeyPath, spec: TopologySpec, catalog: Catalog
) -> None:
    """``intra.torus``, ``host_block`` and ``axis_links``: only with ``fabric: torus``, a
    shape holding the domain's chips, a block holding a host's, one link per dimension."""
    intra = spec.intra
    for key in ("torus", "host_block", "axis_links"):
        if getattr(intra, key) is not None and intra.fabric != "torus":
            raise _fail(doc, (*ipath, key), f"only applies to fabric torus (is {intra.fabric})")
    if intra.fabric != "torus":
        return
    wanted = {
        "torus": spec.gpus_per_node * intra.hosts_per_domain,
        "host_block": spec.gpus_per_node,
    }
    for key, chips in wanted.items():
        sizes = getattr(intra, key)
        if sizes is None:
            continue
        if not 1 <= len(sizes) <= 3 or min(sizes) < 1:
            raise _fail(
                doc, (*ipath, key), f"expected 1 to 3 sizes of at least 1 (got {list(sizes)})"
            )
        product = 1
        for size in sizes:
            product *= size
        if product != chips:
            shape = "x".join(str(d) for d in sizes)
            raise _fail(doc, (*ipath, key), f"{shape} = {product} chips, expected {chips}")
    if intra.axis_links is not None:
        if intra.torus is not None and len(intra.axis_links) != len(intra.torus):
            raise _fail(
                doc,
                (*ipath, "axis_links"),
                f"needs one link per intra.torus dimension ({list(intra.torus)})",
            )
        for i, axis_link in enumerate(intra.axis_links):
            _ref(doc, (*ipath, "axis_links", i), catalog.links, "link", axis_link, catalog)


def _check_net(doc: YamlDocument, base: KeyPath, spec: TopologySpec, catalog: Catalog) -> None:
    """Network rules, the same for every builder."""
    if spec.nodes > 1 and spec.net is None:
        raise _fail(doc, (*base, "net"), f"required when nodes > 1 ({spec.nodes})")
    if spec.net is None:
        return
    net = spec.net
    npath = (*base, "net")
    link = _ref(doc, (*npath, "link"), catalog.links, "link", net.link, catalog)
    check_choice(doc, (*npath, "layout"), net.layout, NET_LAYOUTS)
    if net.layout == "torus":
        if link.tier not in ("scale-up", "scale-out"):
            raise _fail(
                doc,
                (*npath, "link"),
                f"{net.link} is not a chip-to-chip or network link (tier {link.tier})",
            )
    elif link.tier != "scale-out":
        raise _fail(doc, (*npath, "link"), f"{net.link} is not a network link (tier {link.tier})")
    _check_layout_keys(doc, npath, spec)
    check_range(doc, (*npath, "oversubscription"), net.oversubscription, 1.0, 64.0, "ratio")
    check_range(
        doc, (*npath, "spine_oversubscription"), net.spine_oversubscription, 1.0, 64.0, "ratio"
    )
    if net.layout == "torus":
        for i, axis_link in enumerate(net.axis_links or ()):
            _ref(doc, (*npath, "axis_links", i), catalog.links, "link", axis_link, catalog)
        return  # no NICs: nics_per_node and nic_map do not apply
    if net.nic_attach is not None:
        check_choice(doc, (*npath, "nic_attach"), net.nic_attach, NIC_ATTACH)
    _check_at_least_one(doc, (*npath, "nics_per_node"), net.nics_per_node)
    if net.switch is not None:
        switch = _ref(doc, (*npath, "switch"), catalog.switches, "switch", net.switch, catalog)
        if switch.radix is None or switch.port_Gbps is None:
            raise _fail(
                doc,
                (*npath, "switch"),
                f"{switch.id} has no published radix and port rate; a network switch needs both",
            )
    if net.nic is not None:
        _ref(doc, (*npath, "nic"), catalog.nics, "NIC", net.nic, catalog)
        if catalog.nics[net.nic].link != net.link:
            raise _fail(
                doc,
                (*npath, "nic"),
                f"{net.nic} speaks {catalog.nics[net.nic].link}, not {net.link}",
            )
    if net.adapters is not None:
        _check_adapters(doc, npath, net)
    if net.nic_map is not None:
        if len(net.nic_map) != spec.gpus_per_node:
            raise _fail(
                doc,
                (*npath, "nic_map"),
                f"needs one NIC index per GPU ({spec.gpus_per_node}), got {len(net.nic_map)}",
            )
        for i, nic in enumerate(net.nic_map):
            if nic >= net.nics_per_node:
                raise _fail(
                    doc,
                    (*npath, "nic_map", i),
                    f"NIC index {nic} out of range 0..{net.nics_per_node - 1}",
                )


#: An RDMA device name as the kernel gives it (``mlx5_0``, ``bnxt_re3``, ``rdmap0s31``).
_ADAPTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}")


def _check_adapters(doc: YamlDocument, npath: KeyPath, net: NetSpec) -> None:
    """``net.adapters`` names one device per NIC, each once.

    Raises:
        HwdbError: Another count than ``nics_per_node``, a repeated or malformed name.
    """
    adapters = net.adapters or ()
    if len(adapters) != net.nics_per_node:
        raise _fail(
            doc,
            (*npath, "adapters"),
            f"needs one device name per NIC ({net.nics_per_node}), got {len(adapters)}",
        )
    seen: set[str] = set()
    for i, name in enumerate(adapters):
        if not _ADAPTER.fullmatch(name):
            raise _fail(doc, (*npath, "adapters", i), f"not a device name ({name!r})")
        if name in seen:
            raise _fail(doc, (*npath, "adapters", i), f"{name} is named twice")
        seen.add(name)


#: Keys that only one network layout reads.
_LAYOUT_KEYS = {
    "groups": "dragonfly",
    "routers_per_group": "dragonfly",
    "global_links": "dragonfly",
    "torus": "torus",
    "host_block": "torus",
    "axis_links": "torus",
}


def _check_layout_keys(doc: YamlDocument, npath: KeyPath, spec: TopologySpec) -> None:
    """Dragonfly and torus knobs: set only with their layout, positive, and a torus shape
    that holds exactly the topology's chips."""
    net = spec.net
    assert net is not None
    for key, layout in _LAYOUT_KEYS.items():
        value = getattr(net, key)
        if value is None:
            continue
        if net.layout != layout:
            raise _fail(
                doc, (*npath, key), f"only applies to layout {layout} (layout is {net.layout})"
            )
        if key not in ("torus", "host_block", "axis_links") and value < 1:
            raise _fail(doc, (*npath, key), f"must be at least 1 (got {value})")
    if net.host_block is not None:
        block = net.host_block
        if not 1 <= len(block) <= 3 or min(block) < 1:
            raise _fail(
                doc,
                (*npath, "host_block"),
                f"expected 1 to 3 chip counts of at least 1 (got {list(block)})",
            )
        chips = 1
        for size in block:
            chips *= size
        if chips != spec.gpus_per_node:
            shape = "x".join(str(d) for d in block)
            raise _fail(
                doc,
                (*npath, "host_block"),
                f"{shape} = {chips} chips, but a host has {spec.gpus_per_node}",
            )
    if net.axis_links is not None and (net.torus is None or len(net.axis_links) != len(net.torus)):
        raise _fail(
            doc,
            (*npath, "axis_links"),
            f"needs one link per net.torus dimension (torus: {list(net.torus or [])})",
        )
    if net.torus is None:
        return
    dims = net.torus
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise _fail(
            doc, (*npath, "torus"), f"expected 1 to 3 ring sizes of at least 1 (got {list(dims)})"
        )
    chips = 1
    for size in dims:
        chips *= size
    if chips != spec.n_gpus:
        shape = "x".join(str(d) for d in dims)
        raise _fail(
            doc,
            (*npath, "torus"),
            f"{shape} = {chips} chips, but nodes x gpus_per_node = {spec.nodes} x "
            f"{spec.gpus_per_node} = {spec.n_gpus}",
        )
