"""Turn an imported node (``NodeLayout``) into a topology spec, render it as YAML, write it safely.

The mapping (see docs in ``build_spec``): ``NV#`` links become NVLink (an NVSwitch when every
pair has the same count on 8+ GPUs or at NV12/NV18, else a uniform mesh of the most common
count), PCIe-only nodes get ``fabric: pcie`` with switches from ``PIX``/``PXB`` groups and
sockets from ``SYS`` groups or NUMA affinity, and each GPU gets its nearest NIC
(``PIX`` < ``PXB`` < ``PHB`` < ``NODE`` < ``SYS``). Every guess and approximation is returned
as a warning and written into the YAML as a comment.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError
from fabricui.files import write_text
from fabricui.importers.common import (
    PCIE_CODES,
    NodeLayout,
    ParseError,
    component_labels,
    span,
)

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import GpuSpec

#: Network assumed when the input has NICs but no rate and ``--net`` is not given.
DEFAULT_NET = ("ib-ndr", 400.0)

#: Fallback link generation per family when the chosen GPU has none of that family.
_FALLBACK_LINK = {"nvlink": "nvlink2", "xgmi": "xgmi3"}


@dataclass
class SpecDraft:
    """A topology spec ready to be written, with what was guessed on the way."""

    data: dict[str, Any]
    """The spec mapping, keys in the order they are written."""
    warnings: list[str] = field(default_factory=list)
    """Guesses and approximations (also written as YAML comments)."""
    comments: list[str] = field(default_factory=list)
    """Further YAML comment lines (which NIC each GPU uses and why)."""

    def summary(self) -> str:
        """One line: nodes x GPUs, intra fabric, network."""
        d = self.data
        intra = d["intra"]
        fabric = intra["fabric"]
        if fabric == "nvswitch":
            how = f"NVSwitch {intra.get('link', '')} x{intra.get('links_per_gpu', '?')}"
        elif fabric == "mesh":
            how = f"{intra.get('link', '')} mesh, {intra.get('links_per_pair', 1)} per pair"
        elif fabric == "pcie":
            how = f"PCIe ({intra.get('pcie_switches', 0)} switches)"
        else:
            how = "one GPU per node"
        net = d.get("net")
        net_text = (
            f"{net['link']} {net['gbps']:g} Gb/s x {net['nics_per_node']} NICs"
            if net
            else "no network"
        )
        return f"{d['nodes']} x {d['gpus_per_node']} {d['gpu']}, {how}, {net_text}"


def parse_net(text: str, catalog: Catalog) -> tuple[str, float]:
    """``ib-ndr:400`` -> ("ib-ndr", 400.0); the rate defaults to the link's.

    Raises:
        ConfigError: Unknown or non-network link, or a rate that is not a positive number.
    """
    from fabricui.hwdb.catalog import unknown_id_message

    link_id, _, rate = text.partition(":")
    link_id = link_id.strip()
    networks = {k: v for k, v in catalog.links.items() if v.tier == "scale-out"}
    if link_id not in networks:
        raise ConfigError(f"--net {text}: " + unknown_id_message("network link", link_id, networks))
    if not rate.strip():
        return link_id, networks[link_id].bw_GBps * 8
    try:
        gbps = float(rate.strip().lower().removesuffix("g").removesuffix("gbps").strip())
    except ValueError:
        gbps = -1.0
    if not gbps > 0:
        raise ConfigError(f"--net {text}: the rate must be a positive number of Gb/s, e.g. :400")
    return link_id, gbps


def _components(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Connected components of ``n`` nodes joined by ``pairs``, each sorted, in order."""
    labels = component_labels(n, (a for a, _ in pairs), (b for _, b in pairs))
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
    return sorted(groups.values())


def _even_split(groups: list[list[int]], g: int) -> bool:
    """True when the builder's GPU i -> group i*n/g placement matches ``groups``."""
    n = len(groups)
    owner = {gpu: k for k, members in enumerate(groups) for gpu in members}
    return all(owner.get(i) == (i * n) // g for i in range(g))


def _label_groups(layout: NodeLayout, groups: list[list[int]]) -> str:
    return "; ".join(span([layout.gpus[i] for i in members]) for members in groups)


def _nv_count(code: str) -> int | None:
    m = re.fullmatch(r"NV(\d{1,6})", code)
    return int(m.group(1)) if m else None


def _guess_gpu(layout: NodeLayout) -> tuple[str, str]:
    counts = [c for c in map(_nv_count, layout.gpu_links.values()) if c]
    top = max(counts, default=0)
    if layout.vendor == "amd":
        return "mi300x", "an AMD node"
    if top >= 18:
        return "h100-sxm", f"NV{top}"
    if top >= 12:
        return "a100-sxm4-80gb", f"NV{top}"
    if top:
        return "v100-sxm2", f"NV{top}"
    return "l40s", "a PCIe-only node"


def _choose_gpu(
    layout: NodeLayout, catalog: Catalog, gpu: str | None, warnings: list[str]
) -> tuple[GpuSpec, str]:
    from fabricui.hwdb.catalog import unknown_id_message

    if gpu is not None:
        if gpu not in catalog.gpus:
            raise ConfigError(f"--gpu: {unknown_id_message('gpu', gpu, catalog.gpus)}")
        return catalog.gpus[gpu], "--gpu"
    if layout.gpu_model and layout.gpu_model in catalog.gpus:
        return catalog.gpus[layout.gpu_model], layout.gpu_model_reason
    guess, why = _guess_gpu(layout)
    named = f" ({layout.gpu_model_reason})" if layout.gpu_model_reason else ""
    warnings.append(
        f"GPU model not identified{named}: guessed {guess} from {why}; pass --gpu ID to fix it"
    )
    return catalog.gpus[guess], f"guessed from {why}"


def _link_for(gpu: GpuSpec, family: str, count: int, catalog: Catalog, warnings: list[str]) -> str:
    link = catalog.links.get(gpu.scaleup_link or "")
    if link is not None and link.family == family:
        return link.id
    fallback = _FALLBACK_LINK[family]
    if family == "nvlink":
        fallback = "nvlink4" if count >= 18 else "nvlink3" if count >= 12 else "nvlink2"
    warnings.append(
        f"{gpu.id} has no {family} link in the catalog, but the input shows {family} links: "
        f"using {fallback} (guess); pick an {family} GPU with --gpu"
    )
    return fallback


def _intra(
    layout: NodeLayout, gpu: GpuSpec, catalog: Catalog, warnings: list[str]
) -> dict[str, Any]:
    g = len(layout.gpus)
    if g == 1:
        return {"fabric": "none"}
    all_pairs = g * (g - 1) // 2
    known = layout.gpu_links
    if 0 < len(known) < all_pairs:
        warnings.append(
            f"{all_pairs - len(known)} of {all_pairs} GPU pairs are not in the input: "
            "the spec assumes they match the known pairs"
        )
    nv = {p: c for p, code in known.items() if (c := _nv_count(code))}
    xgmi = [p for p, code in known.items() if code == "XGMI"]
    if nv or xgmi:
        family = "nvlink" if nv else "xgmi"
        counts = Counter(nv.values()) if nv else Counter({1: len(xgmi)})
        linked = len(nv) if nv else len(xgmi)
        top = max(counts)
        link = _link_for(gpu, family, top, catalog, warnings)
        # Most common count; a tie goes to the smaller (never overstate bandwidth).
        k = min(counts, key=lambda c: (-counts[c], c))
        uniform = len(counts) == 1 and linked == len(known)
        per_gpu = gpu.scaleup_links or 0
        switch = family == "nvlink" and layout.nvswitch is not False and uniform
        if switch and not (
            layout.nvswitch or g >= 8 or k in (12, 18) or (per_gpu and k * (g - 1) > per_gpu)
        ):
            switch = False
        if switch:
            return {"fabric": "nvswitch", "link": link, "links_per_gpu": k}
        if not uniform:
            mix = ", ".join(f"NV{c} x{n}" for c, n in sorted(counts.items())) if nv else ""
            warnings.append(
                f"{family} mesh is partial: {linked} of {len(known)} known GPU pairs linked"
                + (f" ({mix})" if mix else "")
                + f"; fabricui meshes are uniform, so the spec links every pair with {k} "
                "link(s): pairs without NVLink are overstated, pairs with more links understated"
            )
        if per_gpu and k * (g - 1) > per_gpu:
            warnings.append(
                f"a full mesh of {g} GPUs with {k} link(s) per pair needs {k * (g - 1)} links "
                f"per GPU; {gpu.id} has {per_gpu}"
            )
        return {"fabric": "mesh", "link": link, "links_per_pair": k}
    intra: dict[str, Any] = {"fabric": "pcie", "p2p": True}
    if gpu.scaleup_links and known:
        warnings.append(
            f"{gpu.id} has {gpu.scaleup_links} NVLink/xGMI links, but the input shows none "
            "between its GPUs: the spec is PCIe-only (links hidden in a VM or container, "
            "fabric manager down, or a file that omits them?)"
        )
    if layout.pcie_switches is not None:
        intra["pcie_switches"] = layout.pcie_switches
        return intra
    pairs = [p for p, code in known.items() if code in ("PIX", "PXB")]
    groups = [c for c in _components(g, pairs) if len(c) > 1]
    intra["pcie_switches"] = len(groups)
    if groups:
        alone = [layout.gpus[i] for i in range(g) if not any(i in c for c in groups)]
        if alone:
            warnings.append(
                f"{span(alone)} share no PCIe switch with another GPU, but the spec puts "
                f"every GPU under one of the {len(groups)} switch(es)"
            )
        elif not _even_split(groups, g):
            warnings.append(
                f"PCIe switch groups are {_label_groups(layout, groups)}; the spec places "
                f"GPU i under switch i*{len(groups)}/{g}, so some GPUs move"
            )
    return intra


def _sockets(layout: NodeLayout, pcie_only: bool, warnings: list[str]) -> int | None:
    g = len(layout.gpus)
    groups: list[list[int]] | None = None
    what = ""
    all_known = len(layout.gpu_links) == g * (g - 1) // 2
    codes = set(layout.gpu_links.values())
    if pcie_only and all_known and g > 1 and codes <= set(PCIE_CODES):
        near = [p for p, code in layout.gpu_links.items() if code != "SYS"]
        groups = _components(g, near)
        what = "SYS paths between GPUs"
    if groups is None and layout.numa and all(n is not None for n in layout.numa):
        by: dict[Any, list[int]] = {}
        for i, node in enumerate(layout.numa):
            by.setdefault(node, []).append(i)
        groups = sorted(by.values())
        what = "NUMA affinity"
    if groups is None and layout.cpu_affinity and all(layout.cpu_affinity):
        by = {}
        for i, cpus in enumerate(layout.cpu_affinity):
            by.setdefault(cpus, []).append(i)
        groups = sorted(by.values())
        what = "CPU affinity"
    if groups is None:
        return None
    if len(groups) > 1 and not _even_split(groups, g):
        warnings.append(
            f"GPUs sit on {len(groups)} CPU sockets/NUMA nodes as {_label_groups(layout, groups)} "
            f"(from {what}); the spec places GPU i on socket i*{len(groups)}/{g}"
        )
    return len(groups)


def _nearest(layout: NodeLayout, i: int) -> tuple[list[int], str] | None:
    """NICs nearest to GPU i and their code; None when its paths are not all known."""
    paths = {k: layout.nic_paths.get((i, k)) for k in range(len(layout.nics))}
    known = {k: c for k, c in paths.items() if c in PCIE_CODES}
    if not known:
        return None
    best = min(PCIE_CODES.index(c) for c in known.values())
    if len(known) < len(paths) and best > 0:
        return None
    code = PCIE_CODES[best]
    return [k for k, c in known.items() if c == code], code


def _net(
    layout: NodeLayout,
    nodes: int,
    net: tuple[str, float] | None,
    catalog: Catalog,
    warnings: list[str],
    comments: list[str],
) -> dict[str, Any] | None:
    g = len(layout.gpus)
    nics = layout.nics
    if net is not None:
        link, gbps = net
    elif layout.net_link and layout.net_link in catalog.links:
        link = layout.net_link
        gbps = layout.net_gbps or catalog.links[link].bw_GBps * 8
        comments.append(f"network {link} {gbps:g} Gb/s: {layout.net_reason}")
        if not layout.net_gbps:
            warnings.append(
                f"NIC rate not in the input: assumed {gbps:g} Gb/s ({link}); pass --net LINK:GBPS"
            )
    else:
        link, gbps = DEFAULT_NET
    if not nics:
        if nodes == 1 and net is None:
            return None
        warnings.append(f"no NICs in the input: the spec assumes one {link} NIC per GPU")
        if net is None:
            warnings.append(f"network not in the input: assumed {link} {gbps:g} Gb/s (--net)")
        return {"link": link, "gbps": gbps, "nics_per_node": g}
    if net is None and not layout.net_link:
        warnings.append(
            f"network type and rate not in the input: assumed {link} {gbps:g} Gb/s; "
            "pass --net LINK:GBPS (e.g. --net roce:200)"
        )
    nearest = [_nearest(layout, i) for i in range(g)]
    sets = [set(n[0]) for n in nearest if n is not None]
    if (
        len(sets) == g
        and len({len(s) for s in sets}) == 1
        and len(sets[0]) > 1
        and sum(len(s) for s in sets) == len(set().union(*sets))
    ):
        ports = len(sets[0])
        for i, found in enumerate(nearest):
            assert found is not None
            names = "/".join(nics[k] for k in found[0])
            comments.append(f"{layout.gpus[i]}: NICs {names} ({found[1]})")
        return {"link": link, "gbps": gbps, "nics_per_node": ports * g}
    chosen: list[int | None] = [None] * g
    by_set: dict[tuple[int, ...], list[int]] = {}
    for i, found in enumerate(nearest):
        if found is not None:
            by_set.setdefault(tuple(found[0]), []).append(i)
    for cands, members in by_set.items():
        for rank, i in enumerate(members):
            chosen[i] = cands[(rank * len(cands)) // len(members)]
    unknown = [i for i in range(g) if chosen[i] is None]
    if unknown:
        free = [k for k in range(len(nics)) if k not in chosen] or list(range(len(nics)))
        for rank, i in enumerate(unknown):
            chosen[i] = free[(rank * len(free)) // len(unknown)]
        warnings.append(
            f"nearest NIC of {span([layout.gpus[i] for i in unknown])} not in the input: "
            f"spread over {span([nics[k] for k in free])}"
        )
    used = sorted({c for c in chosen if c is not None})
    nic_map = [used.index(c) for c in chosen if c is not None]
    for i, found in enumerate(nearest):
        k = chosen[i]
        assert k is not None
        if found is None:
            comments.append(f"{layout.gpus[i]}: NIC {used.index(k)} = {nics[k]} (unknown path)")
            continue
        tie = f", tied with {'/'.join(nics[c] for c in found[0])}" if len(found[0]) > 1 else ""
        comments.append(f"{layout.gpus[i]}: NIC {used.index(k)} = {nics[k]} ({found[1]}{tie})")
    for k in used:
        paths = {i: layout.nic_paths.get((i, k)) for i in range(g)}
        ranked = {i: PCIE_CODES.index(c) for i, c in paths.items() if c in PCIE_CODES}
        first = chosen.index(k)
        if ranked and first in ranked and ranked[first] > min(ranked.values()):
            best = min(ranked, key=lambda i: ranked[i])
            warnings.append(
                f"{nics[k]} is nearest to {layout.gpus[best]} ({PCIE_CODES[ranked[best]]}), but "
                f"the spec attaches a shared NIC next to the first GPU using it, "
                f"{layout.gpus[first]} ({PCIE_CODES[ranked[first]]})"
            )
    idle = [nics[k] for k in range(len(nics)) if k not in used]
    if idle:
        comments.append(f"left out (nearest to no GPU; storage or management?): {', '.join(idle)}")
    out: dict[str, Any] = {"link": link, "gbps": gbps, "nics_per_node": len(used)}
    out["nic_map"] = nic_map
    if _behind_the_cpus(layout, used, g):
        out["nic_attach"] = "cpu"
        comments.append(
            "no NIC shares a PCIe switch with a GPU (PHB, NODE or SYS to every GPU): "
            "they sit on the CPUs' root ports (net.nic_attach: cpu)"
        )
    return out


def _behind_the_cpus(layout: NodeLayout, used: list[int], g: int) -> bool:
    """Whether every NIC the GPUs use reaches its nearest GPU through a host bridge or
    further (``PHB``, ``NODE``, ``SYS``), never a PCIe switch (``PIX``, ``PXB``): the
    input then shows NICs on the CPUs' root ports, not beside the GPUs."""
    switch_codes = PCIE_CODES[:2]
    seen = False
    for k in used:
        codes = [layout.nic_paths.get((i, k)) for i in range(g)]
        known = [c for c in codes if c in PCIE_CODES]
        if not known:
            return False
        if any(c in switch_codes for c in known):
            return False
        seen = True
    return seen


def build_spec(
    layout: NodeLayout,
    catalog: Catalog,
    *,
    gpu: str | None = None,
    nodes: int = 1,
    net: tuple[str, float] | None = None,
    spec_id: str = "imported",
    origin: str = "",
    command: str = "",
) -> SpecDraft:
    """Map an imported node to a topology spec (``nodes`` copies of it).

    Args:
        layout: The node as an importer saw it.
        catalog: Hardware database (GPU ids, link generations).
        gpu: Catalog GPU id (``--gpu``); default: named in the input, else guessed.
        nodes: Node count (``--nodes``).
        net: (link id, Gb/s) from ``--net``; default: from the input, else ib-ndr 400.
        spec_id: The spec's ``id``.
        origin: Input file name, for the description.
        command: The command line that made it, for ``source``.

    Returns:
        The spec with its warnings and comments.

    Raises:
        ParseError: The input has no GPUs.
        ConfigError: ``gpu`` is not in the catalog, or ``nodes`` < 1.
    """
    if not layout.gpus:
        raise ParseError("no GPUs in the input: cannot write a topology spec")
    if nodes < 1:
        raise ConfigError(f"--nodes must be at least 1 (got {nodes})")
    warnings: list[str] = []
    comments: list[str] = []
    gpu_spec, gpu_reason = _choose_gpu(layout, catalog, gpu, warnings)
    intra = _intra(layout, gpu_spec, catalog, warnings)
    if intra["fabric"] != "none":
        sockets = _sockets(layout, intra["fabric"] == "pcie", warnings)
        if sockets is not None:
            intra["sockets"] = sockets
    net_spec = _net(layout, nodes, net, catalog, warnings, comments)
    g = len(layout.gpus)
    fabric = {"nvswitch": "NVSwitch", "mesh": "mesh", "pcie": "PCIe", "none": "single GPU"}
    nic_text = (
        f", {len(layout.nics)} NIC{'s' if len(layout.nics) > 1 else ''}" if layout.nics else ""
    )
    where = f" ({Path(origin).name})" if origin else ""
    description = (
        f"Imported from {layout.source}{where}: {g}x {gpu_spec.id} ({gpu_reason}), "
        f"{fabric[intra['fabric']]}{nic_text}"
    )
    issues = len(layout.gaps) + len(warnings)
    if issues:
        description += f"; see the comments for {issues} gap{'s' if issues > 1 else ''} or guess"
        description += "es" if issues > 1 else ""
    data: dict[str, Any] = {
        "id": spec_id,
        "description": description,
        "source": command or f"fabricui import ({layout.source})",
        "gpu": gpu_spec.id,
        "nodes": nodes,
        "gpus_per_node": g,
        "intra": intra,
        "net": net_spec,
    }
    return SpecDraft(data=data, warnings=warnings, comments=comments)


_PLAIN = re.compile(r"[a-z][a-z0-9._-]*")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def yaml_scalar(value: Any) -> str:
    """One YAML flow value: plain where YAML reads it back unchanged, else JSON-quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}" if value == int(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_scalar(v) for v in value) + "]"
    text = str(value)
    if _PLAIN.fullmatch(text) and text not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def render_yaml(draft: SpecDraft, gaps: Sequence[str] = ()) -> str:
    """The spec as YAML text: comments (gaps, guesses, NIC map), then the keys.

    Args:
        draft: The spec to render.
        gaps: The parse's own warnings, written before the spec's.
    """
    out = comment_block(
        "Topology spec written by `fabricui import` (format: see docs/hwdb.md).",
        ("Gaps in the input and guesses made (check them)", [*gaps, *draft.warnings]),
        ("Network and the NIC each GPU uses (net, net.nic_map)", draft.comments),
    )
    out += yaml_keys(draft.data)
    return "\n".join(out) + "\n"


def comment_block(
    title: str, problems: tuple[str, Sequence[str]], facts: tuple[str, Sequence[str]]
) -> list[str]:
    """The comment lines a written spec opens with: what wrote it, then the input's gaps
    and the choices made (to check), then facts worth keeping, each under its heading
    when there are some. Every item stays on one line: a line break inside would end the
    comment and turn the rest into YAML."""
    out = [f"# {title}"]
    heading, items = problems
    if items:
        out.append(f"# {heading}:")
        out += [f"#   - {' '.join(line.split())}" for line in items]
    heading, items = facts
    if items:
        out.append(f"# {heading}:")
        out += [f"#   {' '.join(line.split())}" for line in items]
    return out


def yaml_keys(data: dict[str, Any]) -> list[str]:
    """``key: value`` lines, a nested mapping one level down (a spec's ``intra``, ``net``)."""
    out: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            out.append(f"{key}:")
            out += [f"  {k}: {yaml_scalar(v)}" for k, v in value.items()]
        else:
            out.append(f"{key}: {yaml_scalar(value)}")
    return out


def write_spec(path: Path, text: str, force: bool = False) -> None:
    """Write ``text`` to ``path`` atomically; refuse to replace a file unless ``force``.

    Args:
        path: Destination file.
        text: The YAML.
        force: Replace an existing file.

    Raises:
        ConfigError: ``path`` exists (without ``force``), is a directory, or cannot be written.
    """
    write_text(path, text, force=force)
