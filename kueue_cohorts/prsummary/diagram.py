"""The cohort diagram in the box style of the README's guide: a cohort box holding one box per ClusterQueue with
its nominalQuota and borrowingLimit per resource (the after state), changed values marked with `*`."""
from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import TypeVar

from kueue_cohorts.prsummary.quotas import COHORT_ROLE, CohortQuotas, QueueQuotas

_T = TypeVar("_T")

PER_ROW = 3
"""ClusterQueue boxes side by side before the diagram wraps to another row."""
UNLIMITED = "∞"
"""borrowingLimit not set: Kueue lets the queue borrow without limit."""


def box(lines: list[str]) -> list[str]:
    """Draw `lines` in a single-line Unicode box (`┌─┐ │ │ └─┘`), one space of padding; returns the box's lines,
    all of the same width."""
    width = max((len(line) for line in lines), default=0)
    top = "┌" + "─" * (width + 2) + "┐"
    body = [f"│ {line.ljust(width)} │" for line in lines]
    return [top, *body, "└" + "─" * (width + 2) + "┘"]


def side_by_side(boxes: list[list[str]], gap: int = 2) -> list[str]:
    """Join boxes horizontally (tops aligned), padding shorter ones with blank lines of their own width."""
    if not boxes:
        return []
    height = max(len(b) for b in boxes)
    padded = [b + [" " * len(b[0])] * (height - len(b)) for b in boxes]
    return [(" " * gap).join(parts).rstrip() for parts in zip(*padded, strict=False)]


def short(resource: str) -> str:
    """A resource name without its domain prefix, as the guide writes them (`nvidia.com/gpumem` -> `gpumem`)."""
    return resource.rsplit("/", 1)[-1]


def _queue_box(queue: QueueQuotas, changed: AbstractSet[tuple[str, str, str]]) -> list[str]:
    rows = [("resource", "nominal", "borrowing")]
    for resource, vals in queue.quotas.items():
        nominal = vals["nominalQuota"] or "0"
        borrowing = vals["borrowingLimit"] if vals["borrowingLimit"] is not None else UNLIMITED
        if (queue.name, resource, "nominalQuota") in changed:
            nominal += "*"
        if (queue.name, resource, "borrowingLimit") in changed:
            borrowing += "*"
        rows.append((short(resource), nominal, borrowing))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    lines = [queue.name, f"({queue.role})"]
    lines += [f"{r[0].ljust(w0)}  {r[1].rjust(w1)}  {r[2].rjust(w2)}" for r in rows]
    return box(lines)


def _chunks(items: list[_T], size: int) -> Iterator[list[_T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def render_diagram(cohort: CohortQuotas, changed: AbstractSet[tuple[str, str, str]] = frozenset()) -> str:
    """The cohort's box diagram as plain text (to be put in a ``` block).

    Args:
        cohort: the after snapshot of one cohort.
        changed: {(queue, resource, field)} cells to mark with `*` (see CohortTable.changed_cells).
    Returns:
        Lines joined by newlines: a title line `cohort <name> (<layout>)`, then the cohort box; a Cohort object's
        own quota, if any, is a line inside the cohort box under the ClusterQueue boxes.
    """
    queues = [q for q in cohort.queues if q.role != COHORT_ROLE]
    inner: list[str] = []
    for row in _chunks([_queue_box(q, changed) for q in queues], PER_ROW):
        inner += side_by_side(row)
    for obj in (q for q in cohort.queues if q.role == COHORT_ROLE):
        shared = ", ".join(f"{v['nominalQuota']} {short(r)}" for r, v in obj.quotas.items())
        inner.append(f"Cohort object nominalQuota (shared, on top): {shared}")
    inner.append(f"{UNLIMITED} = no borrowingLimit · * = changed in this pull request" if changed
                 else f"{UNLIMITED} = no borrowingLimit")
    outer = box(inner)
    return "\n".join([f"cohort {cohort.cohort} ({cohort.layout})", *outer])
