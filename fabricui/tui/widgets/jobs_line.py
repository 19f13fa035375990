"""The line above the map naming the jobs whose GPUs it underlines (``--jobs``, ``--hosts``),
with their hosts: an underline alone says nothing in a saved text (nor without styles). A
``--jobs`` file with no running job here is said on it too, for as long as the view shows."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from fabricui.tui.glyphs import glyphs

#: How the line starts (styled like what it names).
HEAD = "underlined"

#: How what ``--jobs`` says in place of its jobs starts (``jobs: no running job in ...``).
NOTE_HEAD = "jobs"


def more_jobs(count: int) -> str:
    """``and 170 more jobs``: the end of a cut line."""
    return f"and {count} more job{'' if count == 1 else 's'}"


def jobs_text(lead: list[str], jobs: list[str], width: int | None = None) -> str:
    """``--hosts n[1-2] · job 7 n[0-1] · job 8 n3`` in ``width`` columns (None: whole):
    ``lead`` (``--hosts``) always, then as many ``jobs`` as fit, whole, and, when some do
    not, ``… and N more jobs`` so that the line says how many it leaves out. A line too
    narrow even for that is left to the widget's own ellipsis. Jobs are separated as the
    path's key line separates its figures (``between_figures``): in ASCII ``; ``, as a
    ``-`` between two jobs would read as a host range (``n0 - n3``)."""
    sep = glyphs().between_figures
    whole = sep.join(lead + jobs)
    if width is None or len(whole) <= width:
        return whole
    for shown in range(len(jobs) - 1, -1, -1):
        tail = f"{glyphs().ellipsis} {more_jobs(len(jobs) - shown)}"
        head = sep.join(lead + jobs[:shown])
        text = f"{head} {tail}" if head else tail
        if len(text) <= width or shown == 0:
            return text
    return whole  # no jobs to leave out: the lead alone is too wide


class JobsLine(Static):
    """``underlined: job 7 n[0-1] · job 8 n3 … and 170 more jobs`` on one line, refitted to
    its width when it changes; ``jobs: no running job on h100-ib-cluster's hosts in ...``
    when ``--jobs`` underlines nothing; hidden without either."""

    DEFAULT_CSS = """
    JobsLine {
        display: none; height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__("", id=id, markup=False)
        self._lead: list[str] = []
        self._jobs: list[str] = []
        self._note = ""

    def show(self, lead: list[str], jobs: list[str], note: str = "") -> None:
        """Name ``lead`` (``--hosts n[1-2]``) and ``jobs`` (``job 7 n[0-1]``), and ``note``:
        what ``--jobs`` says when none of its jobs is underlined; none of them: hidden."""
        self._lead, self._jobs, self._note = list(lead), list(jobs), note
        self.display = bool(self._lead or self._jobs or self._note)
        self.refresh()

    def render(self) -> Content:
        """The line fitted to the width it has now (``jobs_text``); the note after the
        lead, which is never cut (the widget's ellipsis cuts the end)."""
        noted = [f"{NOTE_HEAD}: {self._note}"] if self._note else []
        if not (self._lead or self._jobs):
            return Content(noted[0] if noted else "")
        width = self.content_size.width - len(f"{HEAD}: ")
        text = jobs_text(self._lead + noted, self._jobs, width if width > 0 else None)
        return Content.assemble((HEAD, "underline"), f": {text}")
