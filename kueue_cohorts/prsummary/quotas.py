"""Quota snapshots of a stack and their before/after comparison, from the pure cohort plans (never the cluster).

A snapshot lists, per cohort, every ClusterQueue (and the Cohort object, if any) with nominalQuota,
borrowingLimit and lendingLimit per covered resource, exactly as `components.model.plans` would write them into
kueue.x-k8s.io/v1beta2 `spec.resourceGroups[].flavors[].resources[]`. A queue with one flavor keys its rows by
resource (`nvidia.com/gpu`); one with several ResourceFlavors by resource and flavor (`nvidia.com/gpu [h100]`), in
the declared flavor order, so the tables and the diagram show every flavor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from kueue_cohorts.components.model.kueue import ClusterQueueSpec, CohortSpec, ResourceGroup
from kueue_cohorts.components.model.plans import stack_plans
from kueue_cohorts.components.settings import Settings, quantity

FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")
"""The quota fields of a Kueue ResourceQuota, in table order (Kueue's JSON names)."""

COHORT_ROLE = "cohort"
"""`QueueQuotas.role` of the Cohort object's own row (its nominalQuota is shared quota on top of the queues')."""


@dataclass(frozen=True)
class QueueQuotas:
    """The quotas of one ClusterQueue (or Cohort object): role and resource -> {field: quantity or None}.

    name: the ClusterQueue (or Cohort) name. role: `inference`, `training`, `tenant` (the kueue-cohorts/role
    label) or `cohort`. quotas: resource name -> {"nominalQuota": str, "borrowingLimit": str|None,
    "lendingLimit": str|None}; None means "not set" (Kueue: no borrowing limit / lends all idle nominalQuota).
    """

    name: str
    role: str
    quotas: dict[str, dict[str, Optional[str]]]


@dataclass(frozen=True)
class CohortQuotas:
    """One cohort's snapshot: name, layout ("inference-training" | "shared-pool") and its queues in plan order."""

    cohort: str
    layout: str
    queues: tuple[QueueQuotas, ...]


def row_key(resource: str, flavor: str, several: bool) -> str:
    """The row key of `resource` in `flavor`: the resource alone when the queue has one flavor, else
    `<resource> [<flavor>]`."""
    return f"{resource} [{flavor}]" if several else resource


def _group_quotas(groups: tuple[ResourceGroup, ...]) -> dict[str, dict[str, Optional[str]]]:
    out: dict[str, dict[str, Optional[str]]] = {}
    several = len({f.flavor for group in groups for f in group.flavors}) > 1
    for group in groups:
        for fq in group.flavors:
            for rq in fq.resources:
                out[row_key(rq.name, fq.flavor, several)] = {
                    "nominalQuota": rq.nominal_quota,
                    "borrowingLimit": rq.borrowing_limit,
                    "lendingLimit": rq.lending_limit,
                }
    return out


def _queue(cq: ClusterQueueSpec) -> QueueQuotas:
    return QueueQuotas(cq.name, cq.role, _group_quotas(cq.resource_groups))


def _cohort_object(obj: CohortSpec) -> QueueQuotas:
    return QueueQuotas(obj.name, COHORT_ROLE, _group_quotas(obj.resource_groups))


def snapshot(settings: Optional[Settings]) -> dict[str, CohortQuotas]:
    """Cohort name -> CohortQuotas for a validated stack; `{}` for None (the stack does not exist at that ref)."""
    if settings is None:
        return {}
    out = {}
    for plan in stack_plans(settings):
        queues = [_queue(cq) for cq in plan.cluster_queues]
        if plan.cohort_object is not None:
            queues.append(_cohort_object(plan.cohort_object))
        out[plan.cohort] = CohortQuotas(plan.cohort, plan.layout, tuple(queues))
    return out


@dataclass(frozen=True)
class Cell:
    """One quota value before and after. `present_*` is False when the queue (or resource) is absent on that side,
    which is different from a value that is not set (None)."""

    before: Optional[str]
    after: Optional[str]
    present_before: bool = True
    present_after: bool = True

    @property
    def changed(self) -> bool:
        """True if the value, or its presence, differs between before and after. Quantities compare by value
        (`16Gi` equals `17179869184`), as the API server compares them."""
        if (self.present_before, self.before is None) != (self.present_after, self.after is None):
            return True
        if self.before is None or self.after is None:
            return False
        return quantity.parse(self.before) != quantity.parse(self.after)


@dataclass(frozen=True)
class Row:
    """One table row: a ClusterQueue (or Cohort object) and resource, with a Cell per field of FIELDS."""

    queue: str
    role: str
    resource: str
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """True if any cell of the row changed."""
        return any(c.changed for c in self.cells.values())


@dataclass(frozen=True)
class CohortTable:
    """The comparison of one cohort: rows in after-order (then rows only present before), and the after snapshot
    (None if the cohort was removed) for the diagram."""

    cohort: str
    layout: str
    rows: tuple[Row, ...]
    after: Optional[CohortQuotas]

    @property
    def changed(self) -> bool:
        """True if any row changed (including added or removed queues and resources)."""
        return any(r.changed for r in self.rows)

    def changed_cells(self) -> set[tuple[str, str, str]]:
        """{(queue, resource, field)} of every changed cell."""
        return {(r.queue, r.resource, f) for r in self.rows for f, c in r.cells.items() if c.changed}


def _index(cohort: Optional[CohortQuotas]) -> dict[tuple[str, str], tuple[str, dict[str, Optional[str]]]]:
    if cohort is None:
        return {}
    return {(q.name, res): (q.role, vals) for q in cohort.queues for res, vals in q.quotas.items()}


def compare(before: dict[str, CohortQuotas], after: dict[str, CohortQuotas]) -> list[CohortTable]:
    """Compare two snapshots (see `snapshot`) cohort by cohort.

    Returns one CohortTable per cohort present on either side, after-order first, then cohorts only in before.
    A queue or resource present on one side only yields cells with `present_before/after` False.
    """
    names = list(after) + [n for n in before if n not in after]
    tables = []
    for name in names:
        b, a = before.get(name), after.get(name)
        bi, ai = _index(b), _index(a)
        keys = list(ai) + [k for k in bi if k not in ai]
        rows = []
        for key in keys:
            role = (ai[key] if key in ai else bi[key])[0]
            bvals = bi[key][1] if key in bi else None
            avals = ai[key][1] if key in ai else None
            cells = {
                f: Cell(
                    before=bvals.get(f) if bvals else None,
                    after=avals.get(f) if avals else None,
                    present_before=bvals is not None,
                    present_after=avals is not None,
                )
                for f in FIELDS
            }
            rows.append(Row(key[0], role, key[1], cells))
        layout = (a if a is not None else before[name]).layout  # a cohort absent after is in before
        tables.append(CohortTable(name, layout, tuple(rows), a))
    return tables
