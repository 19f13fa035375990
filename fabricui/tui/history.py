"""Where the user has been: the views, topologies and selections visited, newest last, so
that Esc or Backspace goes back through them (as k9s does). No Textual: a list of launch
requests, each enough to show that place again."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricui.services.requests import LaunchRequest

#: Places kept (older ones are forgotten).
HISTORY_LIMIT = 100


@dataclass
class History:
    """The places visited before the current one."""

    visits: list[LaunchRequest] = field(default_factory=list)
    """Oldest first."""

    def push(self, place: LaunchRequest) -> None:
        """Remember ``place`` (the one being left), unless it is the last one already."""
        if self.visits and self.visits[-1] == place:
            return
        self.visits.append(place)
        del self.visits[:-HISTORY_LIMIT]

    def pop(self) -> LaunchRequest | None:
        """The place visited last (forgotten here), or None when there is none."""
        return self.visits.pop() if self.visits else None

    def __len__(self) -> int:
        return len(self.visits)
