"""Importers: read what real machines print (nvidia-smi, NCCL XML, ibstat, rocm-smi) as pasted.

Each format has one module with a ``parse(text) -> Result`` function. Parsers are pure text
parsing on the standard library (no textual, rich, numpy or yaml at import) and never tidy their
input first: tabs, glued columns, text around the output, fences and truncation are expected.

A result (a small dataclass) offers:

* ``format``: the format name it was registered under (``nvidia-smi``, ``nccl-xml`` ...);
* ``warnings``: one line per stated gap (``truncated: rows for GPU4..GPU15 missing``);
* ``notes``: one line per remark that is not a gap (an ignored ``topo -p2p`` matrix);
* ``to_json()``: a JSON-ready dict (``fabricui import FORMAT FILE --json``);
* ``summary()``: the text the command prints by default;
* ``layout()`` (optional): a ``common.NodeLayout`` that ``spec.build_spec`` turns into a
  topology spec for ``-o``.

Input that is not the expected format raises ``common.ParseError`` naming what it looks like.
``nccl_log`` (``NCCL_DEBUG=INFO`` logs, read by the doctor) is separate and has its own API.
The cluster importers (``ibnetdiscover``, ``iblinkinfo``, ``slurm_topology``) return a
``fabric_graph.SwitchGraph`` instead of a node; ``cluster_spec`` turns one into a topology
spec, and ``hostlist`` reads Slurm's node lists.
Built-in importers are registered by the ``fabricui_importers`` plugin through the
``register_importers(register)`` hook; ``builtin.builtin_importers()`` is the same table.
"""

from __future__ import annotations
