"""The strategies view says what its numbers are: the search's micro-batch count is
``#mb`` (``mbN`` in reports and ``plan`` is their size), and each verdict shows the
exposed share of compute it rests on."""

from __future__ import annotations

from textual.widgets import DataTable

from fabricui.tui.app import settle
from fabricui.tui.textual_private import screen_text

#: The bar chart's second word (its rows are named ``fsdp intra``, ``fsdp inter``).
WHERE = ("intra", "inter")


async def test_search_header_counts_micro_batches(app_factory):
    """``f``: the micro-batch column is headed ``#mb`` (how many), not ``mb``."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        table = app.screen.query_one("#strat-search", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        assert "#mb" in labels and "mb" not in labels


async def test_verdicts_show_the_exposed_share_they_rest_on(app_factory):
    """llama3-70b on the pod: TP across nodes hides nothing (no, 99% exposed), FSDP
    inside a node hides it all (yes, 0% exposed though 28% of compute)."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        rows = [line.split() for line in text.splitlines()]

        def row(name: str) -> str:
            """The decision table's row of a strategy (its comm time, then its verdict)."""
            return next(" ".join(r) for r in rows if r[:1] == [name] and r[1] not in WHERE)

        assert "intra comm OK (exposed) inter comm OK (exposed)" in " ".join(
            next(r for r in rows if r[:1] == ["strategy"])
        )
        assert row("fsdp").endswith("6.932 s (28%) yes (0%) 54.45 s (220%) no (120%)")
        assert row("tp").endswith("(99%) no (99%)")
        assert "exposed, in brackets" in text
