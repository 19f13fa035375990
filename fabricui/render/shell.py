"""The command line described once (``CliCommand``, made from the argument parser by
``commands.completion``) and rendered as shell completion for bash, zsh and fish, and as a
man page. Written here rather than taken from shtab or argcomplete: the parser is plain
argparse, the three scripts are a few dozen generated lines each, and completing topology
ids needs the hardware database, which neither tool knows about; so no dependency is added.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

#: What an option's or a positional's value completes to.
COMPLETES = ("topology", "model", "file", "dir", "")
#: Kinds whose words come from the hardware database (``ids`` of the scripts).
CATALOG_KINDS = ("topology", "model")


@dataclass(frozen=True)
class CliOption:
    """One option of a command."""

    flags: tuple[str, ...]
    """Its spellings (``-t``, ``--topology``), the first long one first in help."""
    help: str
    """What it does."""
    takes_value: bool = False
    """False for a switch (``--json``)."""
    metavar: str = ""
    """The value's name in help (``ID|FILE``)."""
    choices: tuple[str, ...] = ()
    """The values it accepts, when it lists them."""
    completes: str = ""
    """``topology``, ``model``, ``file``, ``dir`` or empty (``COMPLETES``)."""


@dataclass(frozen=True)
class CliPositional:
    """One positional argument of a command."""

    name: str
    """Its name in help (``OP``)."""
    help: str
    """What it is."""
    choices: tuple[str, ...] = ()
    """The values it accepts, when it lists them."""
    completes: str = ""
    """``file`` for a file name, ``model`` or ``topology`` for the catalog's ids, else
    empty."""


@dataclass(frozen=True)
class CliCommand:
    """A command (``path``), or the program itself (``fabricui``), with its subcommands."""

    words: tuple[str, ...]
    """The words that name it after the program (empty for the program)."""
    help: str
    """What it does."""
    usage: str = ""
    """argparse's usage line."""
    options: tuple[CliOption, ...] = ()
    """Its options (the global ones too)."""
    positionals: tuple[CliPositional, ...] = ()
    """Its positional arguments."""
    subcommands: tuple[CliCommand, ...] = field(default=())
    """Commands under it."""

    def walk(self) -> list[CliCommand]:
        """This command and every command under it, depth first."""
        out = [self]
        for sub in self.subcommands:
            out += sub.walk()
        return out


def _path(command: CliCommand) -> str:
    return " ".join(command.words)


def _words(items: list[str] | tuple[str, ...]) -> str:
    return " ".join(shlex.quote(i) for i in items)


# --- bash ---------------------------------------------------------------------------------


def bash_script(program: CliCommand, ids: dict[str, list[str]]) -> str:
    """A bash completion script: ``source <(fabricui completion bash)``.

    Args:
        program: The program's command tree.
        ids: The catalog's words per kind (``topology``: what ``--topology`` completes to,
            YAML files too; ``model``).
    """
    commands = program.walk()
    subs = "\n".join(
        f"    {shlex.quote(_path(c))}) echo {_words([s.words[-1] for s in c.subcommands])} ;;"
        for c in commands
        if c.subcommands
    )
    opts = "\n".join(
        f"    {shlex.quote(_path(c))}) echo {_words([f for o in c.options for f in o.flags])} ;;"
        for c in commands
    )
    valued = "\n".join(
        f"    {shlex.quote(_path(c))}) echo {_words(_valued(c))} ;;" for c in commands if _valued(c)
    )
    values = []
    for c in commands:
        for o in c.options:
            if not o.takes_value:
                continue
            kind = o.completes or ("choices" if o.choices else "")
            if not kind:
                continue
            pattern = "|".join(f"{shlex.quote(_path(c))}:{f}" for f in o.flags)
            if kind == "choices":
                body = f'COMPREPLY=($(compgen -W {shlex.quote(" ".join(o.choices))} -- "$cur"))'
            else:
                body = f'_fabricui_{kind} "$cur"'
            values.append(f"    {pattern}) {body}; return ;;")
    positionals = []
    for c in commands:
        choices = [x for p in c.positionals for x in p.choices]
        files = any(p.completes == "file" for p in c.positionals)
        if choices or files:
            body = f"echo {_words(choices)}; " if choices else ""
            positionals.append(f"    {shlex.quote(_path(c))}) {body}return {0 if files else 1} ;;")
    return _BASH.format(
        subs=subs,
        opts=opts,
        valued=valued,
        values="\n".join(values),
        positionals="\n".join(positionals),
        topologies=shlex.quote(" ".join(ids.get("topology", []))),
        models=shlex.quote(" ".join(ids.get("model", []))),
    )


def _valued(command: CliCommand) -> list[str]:
    return [f for o in command.options if o.takes_value for f in o.flags]


_BASH = r"""# bash completion for fabricui (generated by `fabricui completion bash`).
# Use: source <(fabricui completion bash), or save it as
# ~/.local/share/bash-completion/completions/fabricui

_fabricui_subcommands() {{
  case "$1" in
{subs}
  esac
}}

_fabricui_options() {{
  case "$1" in
{opts}
  esac
}}

_fabricui_valued() {{
  case "$1" in
{valued}
  esac
}}

# Echo a command's positional choices; status 0 when it also takes a file name.
_fabricui_positionals() {{
  case "$1" in
{positionals}
  esac
  return 1
}}

_fabricui_topology() {{
  COMPREPLY=($(compgen -W {topologies} -- "$1") $(compgen -f -X '!*.y*ml' -- "$1") \
    $(compgen -d -- "$1"))
  compopt -o filenames 2>/dev/null
}}

_fabricui_model() {{
  COMPREPLY=($(compgen -W {models} -- "$1"))
}}

_fabricui_file() {{
  COMPREPLY=($(compgen -f -- "$1"))
  compopt -o filenames 2>/dev/null
}}

_fabricui_dir() {{
  COMPREPLY=($(compgen -d -- "$1"))
  compopt -o filenames 2>/dev/null
}}

_fabricui() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  local path="" i word skip=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${{COMP_WORDS[i]}}"
    if ((skip)); then skip=0; continue; fi
    case " $(_fabricui_valued "$path") " in
      *" $word "*) skip=1; continue ;;
    esac
    [[ $word == -* ]] && continue
    case " $(_fabricui_subcommands "$path") " in
      *" $word "*) path="${{path:+$path }}$word" ;;
    esac
  done
  case "$path:$prev" in
{values}
  esac
  # Another option's value (a count, a size, a name): nothing to offer, not the
  # command's positional words.
  case " $(_fabricui_valued "$path") " in
    *" $prev "*) COMPREPLY=(); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_fabricui_options "$path")" -- "$cur"))
    return
  fi
  local words
  words="$(_fabricui_subcommands "$path") $(_fabricui_positionals "$path")"
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  if _fabricui_positionals "$path" >/dev/null; then
    COMPREPLY+=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
  fi
}}

complete -F _fabricui fabricui
"""


# --- zsh ----------------------------------------------------------------------------------


def zsh_script(program: CliCommand, ids: dict[str, list[str]]) -> str:
    """A zsh completion script: the bash one through zsh's ``bashcompinit`` (as the AWS
    and Azure CLIs ship theirs), so both shells complete exactly the same words.

    Use: ``source <(fabricui completion zsh)`` in ``~/.zshrc`` (after ``compinit``).
    """
    return (
        "#compdef fabricui\n"
        "# zsh completion for fabricui (generated by `fabricui completion zsh`).\n"
        "autoload -U +X compinit && { (( $+functions[compdef] )) || compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n"
        + bash_script(program, ids).split("\n", 3)[3]
    )


# --- fish ---------------------------------------------------------------------------------


def fish_script(program: CliCommand, ids: dict[str, list[str]]) -> str:
    """A fish completion script: ``fabricui completion fish | source``, or save it as
    ``~/.config/fish/completions/fabricui.fish``."""
    lines = [
        "# fish completion for fabricui (generated by `fabricui completion fish`).",
        "complete -c fabricui -f",
    ]
    for command in program.walk():
        condition = _fish_condition(program, command)
        for sub in command.subcommands:
            lines.append(
                f"complete -c fabricui -n {_fish_quote(condition)} -a {_fish_quote(sub.words[-1])}"
                f" -d {_fish_quote(_short(sub.help))}"
            )
        for positional in command.positionals:
            if positional.choices:
                lines.append(
                    f"complete -c fabricui -n {_fish_quote(condition)} "
                    f"-a {_fish_quote(' '.join(positional.choices))}"
                    f" -d {_fish_quote(_short(positional.help))}"
                )
            if positional.completes == "file":
                lines.append(f"complete -c fabricui -n {_fish_quote(condition)} -F")
        for option in command.options:
            parts = [f"complete -c fabricui -n {_fish_quote(condition)}"]
            for flag in option.flags:
                parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
            if option.takes_value:
                # -r alone offers file names: -x (-r -f) wherever the value is no file
                files = option.completes in ("topology", "file", "dir")
                parts.append("-r" if files else "-x")
                if option.completes == "topology":
                    parts.append(f"-a {_fish_quote(' '.join(ids.get('topology', [])))} -F")
                elif option.completes == "model":
                    parts.append(f"-a {_fish_quote(' '.join(ids.get('model', [])))}")
                elif files:
                    parts.append("-F")
                elif option.choices:
                    parts.append(f"-a {_fish_quote(' '.join(option.choices))}")
            parts.append(f"-d {_fish_quote(_short(option.help))}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def _fish_condition(program: CliCommand, command: CliCommand) -> str:
    """True in fish exactly when ``command`` is the deepest command typed so far."""
    if not command.words:
        names = " ".join(s.words[-1] for s in program.subcommands)
        return f"not __fish_seen_subcommand_from {names}"
    parts = [f"__fish_seen_subcommand_from {word}" for word in command.words]
    if command.subcommands:
        names = " ".join(s.words[-1] for s in command.subcommands)
        parts.append(f"not __fish_seen_subcommand_from {names}")
    return "; and ".join(parts)


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _short(text: str) -> str:
    """The first clause of a help text, for a completion menu."""
    first = re.split(r"(?<=[a-z)]);\s|:\s|\(", text or "", maxsplit=1)[0].strip()
    return first[:70]


# --- man page -----------------------------------------------------------------------------


def man_page(program: CliCommand, version: str, date: str, extra: list[tuple[str, str]]) -> str:
    """The man page (roff, section 1) of every command and option.

    Args:
        program: The program's command tree.
        version: fabricui's version.
        date: The page's date (``2026-11-27``).
        extra: (section title, text) pairs added after the commands (environment, files,
            exit status), each text paragraphs separated by blank lines.
    """
    out = [
        f'.TH FABRICUI 1 "{date}" "fabricui {_roff(version)}" "User Commands"',
        ".SH NAME",
        r"fabricui \- explore GPU cluster fabrics: paths, bottlenecks and communication costs",
        ".SH SYNOPSIS",
        ".B fabricui",
        r"[\fIOPTIONS\fR] [\fICOMMAND\fR [\fIOPTIONS\fR]]",
        ".SH DESCRIPTION",
        _roff(program.help),
        ".PP",
        "Without a command, fabricui opens the interactive explorer (a terminal UI). "
        "Global options go before or after the command.",
        ".SH OPTIONS",
    ]
    out += _man_options(program.options)
    out.append(".SH COMMANDS")
    for command in program.walk()[1:]:
        out += [f".SS {_roff(' '.join(command.words))}", _roff(command.help)]
        if command.usage:
            out += [".PP", ".nf", _roff(command.usage), ".fi"]
        for positional in command.positionals:
            text = positional.help + (
                f" ({', '.join(positional.choices)})" if positional.choices else ""
            )
            out += [".TP", rf"\fI{_roff(positional.name)}\fR", _roff(text)]
        own = [o for o in command.options if o.flags[0] not in _GLOBAL_FLAGS]
        out += _man_options(own)
    for title, text in extra:
        out.append(f".SH {title.upper()}")
        for i, paragraph in enumerate(text.strip().split("\n\n")):
            if i:
                out.append(".PP")
            out.append(_roff(" ".join(paragraph.split())))
    return "\n".join(out) + "\n"


#: Options every command has (listed once, under the program).
_GLOBAL_FLAGS = frozenset({"-h", "--hwdb", "--calibration", "--max-memory"})


def _man_options(options: tuple[CliOption, ...] | list[CliOption]) -> list[str]:
    out = []
    for option in options:
        flags = ", ".join(rf"\fB{_roff(f)}\fR" for f in option.flags)
        if option.takes_value:
            flags += rf" \fI{_roff(option.metavar or 'VALUE')}\fR"
        out += [".TP", flags, _roff(option.help or "")]
    return out


def _roff(text: str) -> str:
    """Text safe in a man page: backslashes and hyphens escaped, no line starting with a
    control character."""
    text = text.replace("\\", r"\e").replace("-", r"\-")
    return "\n".join(
        ("\\&" + line if line.startswith((".", "'")) else line) for line in text.split("\n")
    )
