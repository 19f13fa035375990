"""The save dialog: which format (a Markdown report, the screen as SVG or text) and where;
the path follows the format until the user edits it, a name typed with a format's suffix
(``.md``, ``.svg``, ``.txt``) chooses that format, and an existing file is never replaced
without asking."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, RadioSet

from fabricui.errors import FabricError
from fabricui.files import check_target
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.confirm import ConfirmModal
from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.choice_button import ChoiceButton
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.ordered_input import OrderedInput

#: Formats offered, with what each writes.
FORMATS = (
    ("md", "Markdown report (tables, sources, the SVG beside it)"),
    ("svg", "the whole view as SVG"),
    ("txt", "the whole view as plain text"),
)


#: The keys of the dialog, under the file name (it opens with the cursor in the name);
#: joined by the glyph set's dot.
KEYS_HINT = ("enter saves", "name.svg (or shift+tab) picks the format", "esc cancels")


def suffix_format(name: str) -> str | None:
    """The format a file name's suffix names (``report.SVG``: svg), or None."""
    suffix = Path(name.strip()).suffix.lower().removeprefix(".")
    return suffix if suffix in dict(FORMATS) else None


def free_path(directory: Path, stem: str, suffix: str) -> Path:
    """``stem.suffix``, or ``stem-2.suffix`` ... : a name no file has (nor a report's
    diagram beside it)."""
    n = 1
    while True:
        name = stem if n == 1 else f"{stem}-{n}"
        path = directory / f"{name}.{suffix}"
        twins = [path] + ([_diagram_of(path)] if suffix == "md" else [])
        if not any(p.exists() or p.is_symlink() for p in twins):
            return path
        n += 1


def _diagram_of(report: Path) -> Path:
    """The fabric diagram written beside a Markdown report (as ``snapshot`` names it)."""
    return report.with_name(f"{report.stem}-fabric.svg")


class SaveModal(Modal["tuple[str, Path, bool] | None"]):
    """Choose a format and a file; dismisses with (format, path, overwrite) or None (an
    existing file is replaced only once the user said yes to ``Overwrite?``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="save.cancel", tooltip="Close without saving"),
    ]
    """Escape cancels; enter in the path saves."""

    DEFAULT_CSS = """
    SaveModal { align: center middle; }
    SaveModal > Vertical {
        width: 72; max-width: 95%; height: auto;
        border: round $primary; background: $panel; padding: 0 1;
    }
    SaveModal RadioSet { width: 100%; border: none; }
    /* the keyboard cursor is underlined too, not shown by its colour alone */
    SaveModal RadioSet:focus > ChoiceButton.-selected > .toggle--label {
        text-style: bold underline;
    }
    SaveModal #save-buttons { height: auto; align-horizontal: right; }
    SaveModal #save-error { color: $error; width: 100%; }
    SaveModal #save-keys { color: $text-muted; }
    """

    def __init__(self, view: str, directory: Path) -> None:
        super().__init__()
        self.view = view
        """The view saved (names the default file)."""
        self.directory = directory
        """Where new files go by default."""
        self._auto_path = True

    def _default(self, fmt: str) -> str:
        """A free name in ``directory``, shown relative to it."""
        return free_path(self.directory, f"fabricui-{self.view}", fmt).name

    def compose(self) -> ComposeResult:
        """Formats, the path, Save and Cancel."""
        with Vertical():
            yield Label(f"Save the {self.view} view")
            with RadioSet(id="save-format"):
                for i, (fmt, text) in enumerate(FORMATS):
                    yield ChoiceButton(f"{fmt}: {text}", value=i == 0, id=f"save-{fmt}")
            yield OrderedInput(value=self._default("md"), id="save-path")
            yield Label(f" {glyphs().dot} ".join(KEYS_HINT), id="save-keys")
            yield Label("", id="save-error")
            with Horizontal(id="save-buttons"):
                yield Button("Save", variant="primary", id="save-ok")
                yield Button("Cancel", id="save-cancel")
        yield KeyBar()

    def on_mount(self) -> None:
        """Start in the path field."""
        self.query_one("#save-path", Input).focus()

    def key_hints(self) -> list[Binding]:
        """What enter does where the focus is (saves from the name, chooses a format,
        presses a button); tab goes to the next part."""
        focused = self.focused
        if isinstance(focused, Button):
            enter = str(focused.label)
        elif isinstance(focused, RadioSet):
            enter = "Format"
        else:
            enter = "Save"
        return [Binding("enter", "", enter), Binding("tab", "", "Next")]

    @property
    def format(self) -> str:
        """The format chosen."""
        pressed = self.query_one(RadioSet).pressed_button
        return (pressed.id or "save-md").removeprefix("save-") if pressed else "md"

    @on(RadioSet.Changed)
    def format_changed(self) -> None:
        """A new format: a new default name (unless the user typed one)."""
        if self._auto_path:
            field = self.query_one("#save-path", Input)
            field.value = self._default(self.format)
            self._auto_path = True

    @on(Input.Changed, "#save-path")
    def path_edited(self, event: Input.Changed) -> None:
        """The user's own name is kept across format changes; a name ending in a format's
        suffix (``report.svg``) chooses that format, so the file holds what its name says."""
        named = suffix_format(event.value)
        if named is not None and named != self.format:
            self.query_one(f"#save-{named}", ChoiceButton).value = True
        self._auto_path = event.value == self._default(named or self.format)

    @on(Input.Submitted, "#save-path")
    @on(Button.Pressed, "#save-ok")
    def save(self) -> None:
        """Close with (format, path, overwrite) once the path can be written: a file there
        already is replaced only when the user answers yes."""
        text = self.query_one("#save-path", Input).value.strip()
        if not text:
            self.query_one("#save-error", Label).update("give a file name")
            return
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = self.directory / path
        fmt = suffix_format(text) or self.format  # the name's, even before the buttons follow
        targets = [path, _diagram_of(path)] if fmt == "md" else [path]
        try:  # a directory, a link, a device or no such directory: never written
            for target in targets:
                check_target(target, force=True)
        except FabricError as exc:
            self.query_one("#save-error", Label).update(exc.message)
            return
        existing = [t for t in targets if t.exists()]
        if not existing:
            self.dismiss((fmt, path, False))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss((fmt, path, True))
            else:
                self.query_one("#save-error", Label).update("not saved: give another name")
                self.query_one("#save-path", Input).focus()

        names = " and ".join(str(t) for t in existing)
        exist, it = ("exist", "them") if len(existing) > 1 else ("exists", "it")
        question = f"{names} already {exist}. Overwrite {it}? y/n"
        self.app.push_screen(ConfirmModal(question), answered)

    @on(Button.Pressed, "#save-cancel")
    def action_cancel(self) -> None:
        """Close without saving."""
        self.dismiss(None)
