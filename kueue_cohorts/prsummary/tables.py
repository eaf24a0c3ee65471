"""Markdown quota tables: per cohort, one row per ClusterQueue and resource, nominalQuota / borrowingLimit /
lendingLimit, `before → after` in bold where a value changed."""
from __future__ import annotations

from typing import Optional

from kueue_cohorts.prsummary.quotas import FIELDS, Cell, CohortTable

UNSET = "–"
"""Shown for a field that is not set (borrowingLimit: no limit; lendingLimit: lends all idle nominalQuota)."""
ABSENT = "∅"
"""Shown on the side where the ClusterQueue (or the resource) does not exist."""

LEGEND = (f"`{UNSET}` not set (borrowingLimit: no limit; lendingLimit: lends all idle nominalQuota) · "
          f"`{ABSENT}` absent on that side · **bold** changed")


def _value(value: Optional[str], present: bool) -> str:
    if not present:
        return ABSENT
    return UNSET if value is None else value


def cell_text(cell: Cell) -> str:
    """The markdown of one cell: the value if unchanged, else `**before → after**`."""
    after = _value(cell.after, cell.present_after)
    if not cell.changed:
        return after
    return f"**{_value(cell.before, cell.present_before)} → {after}**"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_table(table: CohortTable) -> str:
    """One cohort's quota table as GitHub markdown (header row + one row per queue and resource).

    The first column names the ClusterQueue with its role; a Cohort object's row says `Cohort <name>`.
    Returns the table without a trailing newline.
    """
    head = "| ClusterQueue | resource | " + " | ".join(FIELDS) + " |"
    sep = "|---|---|" + "---:|" * len(FIELDS)
    lines = [head, sep]
    for row in table.rows:
        who = f"Cohort `{row.queue}`" if row.role == "cohort" else f"`{row.queue}` ({row.role})"
        cells = " | ".join(_escape(cell_text(row.cells[f])) for f in FIELDS)
        lines.append(f"| {who} | `{row.resource}` | {cells} |")
    return "\n".join(lines)
