"""What every view screen shares: the loaded data, header and footer, and a status line."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import on
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from fabricui.tui.textual_private import notifications

if TYPE_CHECKING:
    from fabricui.services.loaded import LoadedFabric
    from fabricui.tui.explorer import Explorer


def fabric_words(data: LoadedFabric) -> list[str]:
    """``-t``, ``--nodes``, the what-if and every ``--health`` file of the fabric shown: a
    copied command prices the fabric on screen (as it is, with its what-if), not the one as
    built."""
    request = data.request
    words = ["-t", request.topology]
    if request.nodes is not None:
        words += ["--nodes", str(request.nodes)]
    what_if = request.what_if
    if what_if is not None and what_if.nic_gbps is not None:
        words += ["--nic-gbps", f"{what_if.nic_gbps:g}"]
    if what_if is not None and what_if.scaleup_links is not None:
        words += ["--scale-up-links", str(what_if.scaleup_links)]
    for path in request.health:
        words += ["--health", path]
    return words


class ViewScreen(Screen[None]):
    """A view of the loaded fabric; subclasses redraw in ``data_changed``.

    The app loads fabrics in a worker; the active view is told at once, the others when
    they are shown again (``on_screen_resume``), so hidden views never compute.
    """

    VIEW: ClassVar[str] = ""
    """The view id (``topology``, ``pyramid`` ...)."""

    def __init__(self) -> None:
        super().__init__(id=f"view-{self.VIEW}")
        self.data: LoadedFabric | None = None
        """The data this view last drew."""

    @property
    def fabric_app(self) -> Explorer:
        """The app, typed."""
        return cast("Explorer", self.app)

    def on_mount(self) -> None:
        """Draw whatever is already loaded (once shown: a view built ahead, hidden, waits)."""
        if self.is_current:
            self.sync()

    def on_screen_resume(self) -> None:
        """Catch up with a fabric loaded while this view was hidden (Textual also resumes a
        view built ahead, hidden, which waits until it is shown)."""
        if self.is_current:
            self.sync()
            self.fabric_app.update_titles()

    @on(Worker.StateChanged)
    def worker_state_changed(self, event: Worker.StateChanged) -> None:
        """This view's workers report to the app like its own (Textual does not bubble
        worker events): a failure becomes a notification, a broken plugin is named."""
        self.fabric_app.worker_state_changed(event)
        if event.state == WorkerState.ERROR:
            self.worker_failed(event.worker)

    def worker_failed(self, worker: Worker[object]) -> None:
        """One of this view's workers failed (the app has told the user): tidy up."""

    def sync(self) -> None:
        """Redraw when the app holds data this view has not drawn yet."""
        data = self.fabric_app.data
        if data is not None and data is not self.data:
            self.data = data
            self._show_health(data)
            self.data_changed(data)

    def _show_health(self, data: LoadedFabric) -> None:
        """Say what ``--health`` changed on the view's ``HealthLine``, if it has one."""
        from fabricui.services.health import overlay_of
        from fabricui.tui.widgets.health_line import HealthLine

        for line in self.query(HealthLine):
            line.overlay = overlay_of(data.fabric)

    def data_changed(self, data: LoadedFabric) -> None:
        """A new fabric is loaded: redraw (subclasses override)."""

    def figures_ahead(self, data: LoadedFabric) -> None:
        """Compute what this view, built ahead and not shown yet, asks of ``data`` first,
        with the choices it will take (``peek_option``): the fabric keeps the figures, so
        the view's first frame has them. Runs in a thread; touches no widget. Subclasses
        whose figures take a worker override it.

        Raises:
            FabricError: Choices the view will refuse once shown (it says why then).
        """

    def status_text(self) -> str:
        """What the header's sub-title shows for this view."""
        return ""

    def view_state(self) -> dict[str, str]:
        """This view's choices as launch options (``src``, ``dst``, ``message_size``,
        ``op``, ``group``, ``sizes``, ``model``, ``layout``): what a snapshot, a report or
        a copied command needs to show the same thing."""
        return {}

    def restore_state(self, state: dict[str, str]) -> None:
        """Show the selections ``view_state`` returned earlier again (going back through
        the history); a selection that no longer applies is left as it is."""

    def copy_items(self) -> list[tuple[str, str]]:
        """(label, text) the copy menu offers for this view, besides the report command."""
        return []

    def say_once(self, text: str) -> None:
        """A short notification, not shown again while it is on screen: a key held at the
        end of what it changes would stack the same line many times."""
        if text not in {shown.message for shown in notifications(self.app)}:
            self.app.notify(text, timeout=2)
