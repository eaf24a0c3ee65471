"""What a reviewer asks beside the quota tables: who can reclaim from whom, the priorities, totals against capacity.

Pure, from the validated Settings of each side through the same cohort plans the program registers
(`components.model.plans.stack_plans`). Kueue semantics (v0.19.2, `pkg/scheduler/preemption/preemption.go`,
`apis/kueue/v1beta2/clusterqueue_types.go` ClusterQueuePreemption): a ClusterQueue whose `reclaimWithinCohort` is
`Any` takes back its nominalQuota from any workload of the cohort that borrows; `LowerPriority` only from borrowers
of lower priority; `Never` does not reclaim. A queue without nominalQuota for a resource has nothing to reclaim.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Optional

from kueue_cohorts.components.model.plans import CohortPlan, stack_plans
from kueue_cohorts.components.settings import Settings, quantity

RECLAIMS = {"Any": "any borrower", "LowerPriority": "borrowers of lower priority", "Never": "nobody"}
"""reclaimWithinCohort -> whom the queue takes its nominalQuota back from (Kueue's ClusterQueuePreemption doc)."""


@dataclass(frozen=True)
class QueueGuarantee:
    """One ClusterQueue's guarantees: name, role label, priority (WorkloadPriorityClass `name (value)` or None),
    reclaimWithinCohort, whom it reclaims from (RECLAIMS), and whether it may borrow (any borrowingLimit not 0)."""

    name: str
    role: str
    priority: Optional[str]
    reclaim: str
    reclaims_from: str
    borrows: bool


def _priorities(settings: Settings) -> dict[str, str]:
    """ClusterQueue name -> `name (value)` of the WorkloadPriorityClass its workloads are given by the stack."""
    out: dict[str, str] = {}
    layout = settings.inference_training
    if layout is not None:
        for role in (layout.inference, layout.training):
            pc = role.priority_class
            out[role.cluster_queue] = f"{pc.name} ({pc.value})"
    pool = settings.shared_pool
    if pool is not None:
        values = {pc.name: pc.value for pc in pool.priority_classes}
        for tenant in pool.tenants:
            if tenant.priority_class is not None:
                name = tenant.cluster_queue_name
                out[name] = f"{tenant.priority_class} ({values.get(tenant.priority_class, '?')})"
    return out


def _borrows(plan: CohortPlan, name: str) -> bool:
    cq = plan.cluster_queue(name)
    return any(rq.borrowing_limit is None or quantity.parse(rq.borrowing_limit) != 0
               for group in cq.resource_groups for fq in group.flavors for rq in fq.resources)


def _owns_quota(plan: CohortPlan, name: str) -> bool:
    return any(quantity.parse(rq.nominal_quota) > 0 for group in plan.cluster_queue(name).resource_groups
               for fq in group.flavors for rq in fq.resources)


def queue_guarantees(settings: Settings) -> dict[str, list[QueueGuarantee]]:
    """Cohort name -> its ClusterQueues' guarantees, in plan order. A queue without nominalQuota reclaims nothing,
    whatever its reclaimWithinCohort says."""
    priorities = _priorities(settings)
    out: dict[str, list[QueueGuarantee]] = {}
    for plan in stack_plans(settings):
        out[plan.cohort] = [
            QueueGuarantee(cq.name, cq.role, priorities.get(cq.name), cq.preemption.reclaim_within_cohort,
                           RECLAIMS.get(cq.preemption.reclaim_within_cohort, "?") if _owns_quota(plan, cq.name)
                           else "nothing (no nominalQuota)", _borrows(plan, cq.name))
            for cq in plan.cluster_queues]
    return out


def nominal_totals(settings: Settings) -> dict[str, Decimal]:
    """Resource -> the sum of nominalQuota over every ClusterQueue and Cohort object of the stack, all flavors."""
    totals: dict[str, Decimal] = {}
    for plan in stack_plans(settings):
        specs = [cq.resource_groups for cq in plan.cluster_queues]
        if plan.cohort_object is not None:
            specs.append(plan.cohort_object.resource_groups)
        for groups in specs:
            for group in groups:
                for fq in group.flavors:
                    for rq in fq.resources:
                        totals[rq.name] = totals.get(rq.name, Decimal(0)) + quantity.parse(rq.nominal_quota)
    return totals


def _show(value: Optional[Decimal], resource: str) -> str:
    """A total as the API server would print it (memory in binary units: 384Gi, not 412316860416)."""
    return "–" if value is None else quantity.canonical(value, binary=resource in BINARY)


BINARY = {"memory", "ephemeral-storage"}
"""Resources whose totals read best with binary suffixes (Kubernetes' convention for bytes)."""


def section(before: Optional[Settings], after: Optional[Settings]) -> list[str]:
    """`#### Guarantees` markdown lines for the change's side `after` (nothing when it does not validate): per
    cohort a table of queue, role, priority, reclaimWithinCohort and whom it reclaims from, and whether it borrows;
    then per resource the nominalQuota total before and after against the nodes' capacity (`nodePools`)."""
    if after is None:
        return []
    lines = ["#### Guarantees", "Who takes its quota back from whom (Kueue `reclaimWithinCohort`), at which priority, "
             "and the quota total against the nodes' capacity."]
    for cohort, queues in queue_guarantees(after).items():
        lines += ["", f"cohort `{cohort}`", "",
                  "| ClusterQueue | role | priority | reclaimWithinCohort | reclaims from | borrows |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| `{q.name}` | {q.role} | {q.priority or '–'} | {q.reclaim} | {q.reclaims_from} | "
                  f"{'yes' if q.borrows else 'no'} |" for q in queues]
    old = nominal_totals(before) if before is not None else {}
    new = nominal_totals(after)
    capacity = after.capacity()
    lines += ["", "| resource | nominalQuota total before | after | capacity | fits |", "|---|---|---|---|---|"]
    for resource in list(new) + [r for r in old if r not in new]:
        total, cap = new.get(resource), capacity.get(resource)
        fits = "–" if total is None or cap is None else ("yes" if total <= cap else "**no**")
        lines.append(f"| `{resource}` | {_show(old.get(resource), resource)} | {_show(total, resource)} | "
                     f"{_show(cap, resource)} | {fits} |")
    return lines
