"""Synthetic cluster outputs for importer tests: an ibnetdiscover dump of a small leaf/spine
fabric, and per-tray ``nvidia-smi -q`` Fabric sections."""

from __future__ import annotations


def _guid(kind: int, index: int) -> str:
    return f"{kind:04x}c9030000{index:04x}"


def ibnetdiscover_dump(
    hosts: list[str], hcas: int = 4, leaves: int = 2, spines: int = 2, speed: str = "NDR"
) -> str:
    """An ibnetdiscover dump: HCA k of every host on leaf ``k % leaves`` (rails), every leaf
    cabled once to every spine; adapters named ``HOST mlx5_K``."""
    leaf_ids = [_guid(1, i) for i in range(leaves)]
    spine_ids = [_guid(2, i) for i in range(spines)]
    leaf_ports: list[list[str]] = [[] for _ in range(leaves)]
    records: list[str] = ["#", "# Topology file: generated for a test", "#", ""]
    cas: list[str] = []
    for h, host in enumerate(hosts):
        for k in range(hcas):
            ca = _guid(3, h * hcas + k)
            leaf = k % leaves
            port = len(leaf_ports[leaf]) + 1
            desc = f"{host} mlx5_{k}"
            leaf_ports[leaf].append(
                f'[{port}]\t"H-{ca}"[1]({ca})\t\t# "{desc}" lid {1000 + h * hcas + k} 4x{speed}'
            )
            cas += [
                f"caguid=0x{ca}",
                f'Ca\t1 "H-{ca}"\t\t# "{desc}"',
                f'[1]({ca})\t"S-{leaf_ids[leaf]}"[{port}]\t\t# lid {1000 + h * hcas + k} lmc 0 '
                f'"leaf{leaf}" lid {10 + leaf} 4x{speed}',
                "",
            ]
    for i, leaf in enumerate(leaf_ids):
        lines = list(leaf_ports[i])
        for j, spine in enumerate(spine_ids):
            port = len(lines) + 1
            lines.append(f'[{port}]\t"S-{spine}"[{i + 1}]\t\t# "spine{j}" lid {100 + j} 4x{speed}')
        records += [
            f"switchguid=0x{leaf}({leaf})",
            f'Switch\t64 "S-{leaf}"\t\t# "leaf{i}" base port 0 lid {10 + i} lmc 0',
            *lines,
            "",
        ]
    for j, spine in enumerate(spine_ids):
        lines = [
            f'[{i + 1}]\t"S-{leaf}"[{len(leaf_ports[i]) + j + 1}]\t\t# "leaf{i}" lid {10 + i} '
            f"4x{speed}"
            for i, leaf in enumerate(leaf_ids)
        ]
        records += [
            f"switchguid=0x{spine}({spine})",
            f'Switch\t64 "S-{spine}"\t\t# "spine{j}" base port 0 lid {100 + j} lmc 0',
            *lines,
            "",
        ]
    return "\n".join(records + cas) + "\n"


def smi_q(
    gpus: int = 4,
    uuid: str = "dc6e40c4-d722-4357-9ba6-5291dd461278",
    clique: str = "2",
    state: str = "Completed",
    status: str = "Success",
    health: str = "Healthy",
) -> str:
    """One tray's ``nvidia-smi -q`` reduced to its GPU headers and Fabric sections."""
    out = ["==============NVSMI LOG==============", "", "Driver Version : 570.133.20", ""]
    for i in range(gpus):
        out += [
            f"GPU 00000000:{i + 1:02X}:00.0",
            "    Product Name                          : NVIDIA GB200",
            "    Fabric",
            f"        State                             : {state}",
            f"        Status                            : {status}",
            f"        CliqueId                          : {clique}",
            f"        ClusterUUID                       : {uuid}",
            "        Health",
            f"            Summary                       : {health}",
            "            Bandwidth                     : Full",
            "",
        ]
    return "\n".join(out)
