"""The one text-table helper: columns padded to their widest cell, numbers right-aligned."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def text_table(
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    indent: str = "",
    gap: str = "  ",
) -> list[str]:
    """Lay out rows of cells as aligned text lines (trailing spaces stripped).

    Args:
        rows: Rows of cell texts, the header first if there is one; short rows are padded.
        right: Column indexes to right-align (numbers); the others are left-aligned.
        indent: Text put before every line.
        gap: Text between columns.

    Returns:
        One line per row.
    """
    if not rows:
        return []
    columns = max(len(row) for row in rows)
    padded = [list(row) + [""] * (columns - len(row)) for row in rows]
    widths = [max(len(row[c]) for row in padded) for c in range(columns)]
    return [
        (
            indent
            + gap.join(
                cell.rjust(width) if c in right else cell.ljust(width)
                for c, (cell, width) in enumerate(zip(row, widths))
            )
        ).rstrip()
        for row in padded
    ]
