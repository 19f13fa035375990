"""``fabricui plugins new``: write a third-party plugin package from the templates.

The files of the new package are plain templates under ``fabricui/plugins/templates/plugin/``
(``string.Template``, ``${name}`` placeholders), so they read like the files they become.
This module checks the name, fills the templates in, and writes the package atomically:
everything goes into a hidden directory next to the target, which is then renamed into
place, so an interrupted run never leaves a half-written package behind.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import secrets
import shutil
import string
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from fabricui import __version__
from fabricui.errors import ConfigError

#: Entry-point group (and pluggy project) plugins register under.
GROUP = "fabricui"
#: Plugin names: lowercase letters, digits and single dashes, starting with a letter.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
#: Template file (under ``templates/``) -> path in the new package, per kind of plugin
#: (``string.Template`` placeholders allowed in both). ``scale-out``: a network link
#: generation registered from Python, its interconnect and a strategy. ``scale-up``: a
#: scale-up link generation and a reference topology in YAML (``hwdb/``), the interconnect
#: that owns the family, and tests that route and price a collective over it.
TEMPLATES = {
    "scale-out": {
        "plugin/pyproject.toml.tmpl": "pyproject.toml",
        "plugin/README.md.tmpl": "README.md",
        "plugin/plugin.py.tmpl": "${package}/__init__.py",
        "plugin/test_plugin.py.tmpl": "tests/test_${module}.py",
    },
    "scale-up": {
        "plugin/pyproject.toml.tmpl": "pyproject.toml",
        "scale_up/README.md.tmpl": "README.md",
        "scale_up/plugin.py.tmpl": "${package}/__init__.py",
        "scale_up/links.yaml.tmpl": "${package}/hwdb/links.yaml",
        "scale_up/node.yaml.tmpl": "${package}/hwdb/topologies/${name}-node.yaml",
        "scale_up/test_plugin.py.tmpl": "tests/test_${module}.py",
    },
}
#: The kind ``fabricui plugins new`` writes without ``--scale-up``/``--scale-out``.
DEFAULT_KIND = "scale-out"
#: Template file -> path of the default kind (kept for code that imports it).
FILES = TEMPLATES[DEFAULT_KIND]
#: One-line description of each kind (the package's ``description``).
DESCRIPTIONS = {
    "scale-out": "${title} network links and a gradient-norm strategy",
    "scale-up": "${title} scale-up links and a reference topology",
}
#: Built-in plugin names, used when fabricui's own distribution metadata is not available.
FALLBACK_BUILTINS = frozenset(
    {
        "pcie",
        "nvlink",
        "xgmi",
        "infiniband",
        "ethernet",
        "efa",
        "slingshot",
        "ici",
        "neuronlink",
        "importers",
        "ddp",
        "zero",
        "hsdp",
        "tp",
        "pp",
        "ep",
        "cp",
    }
)
#: Top-level packages of the built-ins, used with ``FALLBACK_BUILTINS``.
FALLBACK_PACKAGES = frozenset(
    {f"fabricui_{n}" for n in FALLBACK_BUILTINS} | {"fabricui_strategies"}
)


@dataclass(frozen=True)
class PluginNames:
    """Every name the scaffold derives from the plugin name (the template placeholders)."""

    name: str
    """Plugin and entry-point name (``my-fabric``), also its link family and interconnect."""
    project: str
    """Distribution and directory name (``fabricui-my-fabric``)."""
    package: str
    """Import package (``fabricui_my_fabric``)."""
    module: str
    """The name as an identifier (``my_fabric``), for the test file."""
    title: str
    """Human name (``My Fabric``)."""
    link_id: str
    """Id of the scale-out link generation it registers (``my-fabric-400g``)."""
    scale_up_link_id: str
    """Id of the scale-up link generation its hwdb/ holds (``my-fabric-gen1``)."""
    strategy: str
    """Name of the strategy it registers (``my-fabric-grad-norm``)."""
    fabricui_version: str
    """fabricui version the package requires at least (this one's ``major.minor``)."""


def builtin_names() -> tuple[frozenset[str], frozenset[str]]:
    """(plugin names, top-level packages) of fabricui's built-in plugins.

    Read from the entry points of the installed ``fabricui`` distribution, so a built-in
    added later is covered; ``FALLBACK_*`` when fabricui is not installed.
    """
    try:
        dist = importlib.metadata.distribution("fabricui")
    except importlib.metadata.PackageNotFoundError:
        return FALLBACK_BUILTINS, FALLBACK_PACKAGES
    eps = [ep for ep in dist.entry_points if ep.group == GROUP]
    if not eps:
        return FALLBACK_BUILTINS, FALLBACK_PACKAGES
    names = frozenset(ep.name for ep in eps)
    packages = frozenset(ep.value.partition(":")[0].split(".")[0].strip() for ep in eps)
    return names, packages


def plugin_names(name: str) -> PluginNames:
    """Check a plugin name and derive the package's names from it.

    Args:
        name: The plugin name as typed (``my-fabric``).

    Returns:
        The derived names.

    Raises:
        ConfigError: The name is not lowercase letters, digits and dashes, starts with
            ``fabricui-``, or is (or would shadow the package of) a built-in plugin.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            f"plugin name {name!r}: use lowercase letters, digits and single dashes, "
            "starting with a letter (e.g. my-fabric)"
        )
    if name == "fabricui" or name.startswith("fabricui-"):
        raise ConfigError(
            f"plugin name {name!r}: leave out the fabricui- prefix (the scaffold adds it)"
        )
    module = name.replace("-", "_")
    builtins, packages = builtin_names()
    if name in builtins:
        raise ConfigError(
            f"plugin name {name!r} is taken by a built-in plugin "
            f"({', '.join(sorted(builtins))}); choose another"
        )
    if f"fabricui_{module}" in packages:
        raise ConfigError(
            f"plugin name {name!r}: its package fabricui_{module} would shadow a built-in "
            "one; choose another"
        )
    major_minor = ".".join(__version__.split(".")[:2])
    return PluginNames(
        name=name,
        project=f"fabricui-{name}",
        package=f"fabricui_{module}",
        module=module,
        title=" ".join(part.capitalize() for part in name.split("-")),
        link_id=f"{name}-400g",
        scale_up_link_id=f"{name}-gen1",
        strategy=f"{name}-grad-norm",
        fabricui_version=major_minor,
    )


def render(names: PluginNames, kind: str = DEFAULT_KIND) -> dict[str, str]:
    """The new package's files: relative path -> text.

    Args:
        names: What ``plugin_names`` derived.
        kind: ``scale-out`` or ``scale-up`` (``TEMPLATES``).

    Raises:
        ConfigError: An unknown kind.
    """
    if kind not in TEMPLATES:
        raise ConfigError(f"plugin kind {kind!r}: one of {', '.join(TEMPLATES)}")
    values = asdict(names)
    values["description"] = string.Template(DESCRIPTIONS[kind]).substitute(values)
    templates = resources.files("fabricui.plugins") / "templates"
    files = {}
    for template, target in TEMPLATES[kind].items():
        text = (templates / template).read_text(encoding="utf-8")
        files[string.Template(target).substitute(values)] = string.Template(text).substitute(values)
    return files


def scaffold(name: str, parent: Path, force: bool = False, kind: str = DEFAULT_KIND) -> Path:
    """Write the plugin package ``fabricui-<name>/`` into ``parent``.

    Args:
        name: The plugin name (``my-fabric``).
        parent: Directory to create it in (created when missing).
        force: Replace an existing ``fabricui-<name>`` (file or directory).
        kind: ``scale-out`` (a network link from Python, an interconnect, a strategy) or
            ``scale-up`` (a scale-up link and a topology in YAML, the interconnect).

    Returns:
        The package directory.

    Raises:
        ConfigError: Bad name, or the target exists and ``force`` is not set, or
            ``parent`` is not a directory.
    """
    names = plugin_names(name)
    target = parent / names.project
    if (target.exists() or target.is_symlink()) and not force:
        raise ConfigError(f"{target} already exists; pass --force to replace it")
    if parent.exists() and not parent.is_dir():
        raise ConfigError(f"--dir {parent} is not a directory")
    files = render(names, kind)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = _hidden_sibling(target, "new")
        staging.mkdir()
    except OSError as exc:
        raise ConfigError(f"{target}: cannot write ({exc.strerror or exc})") from None
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        _swap_into_place(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ConfigError(f"{target}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _hidden_sibling(target: Path, kind: str) -> Path:
    """A fresh hidden path next to ``target`` (same file system, so renames are atomic)."""
    return target.with_name(f".{target.name}.{kind}-{secrets.token_hex(4)}")


def _swap_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``; an existing target is moved aside first and
    deleted only once the new one is in place (put back if the rename fails)."""
    if not (target.exists() or target.is_symlink()):
        os.rename(staging, target)
        return
    old = _hidden_sibling(target, "old")
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old)
    else:
        old.unlink()
