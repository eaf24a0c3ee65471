"""Cohort-wide rule SINGLE_LAYOUT_PER_COHORT (stack policy). Quota against capacity is
`cohort_nominal_within_capacity.py`'s.

Upstream: Kueue `apis/kueue/v1beta2/clusterqueue_types.go` (borrowingLimit, nominalQuota; v0.19.2).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import KubeObject, cohort_of, unknown_violation, violation
from .vocabulary.quantity import parse
from .vocabulary.quota import quota_entries
from .vocabulary.values import MISSING, UnknownValueError, Violation


def _layout_role(cq: KubeObject) -> Optional[str]:
    """'owner' (borrowingLimit 0 everywhere), 'floor-and-borrow' (some nominalQuota > 0 and may borrow some
    resource), or None (a pure borrower with nominalQuota 0, or no quota)."""
    entries = list(quota_entries(cq))
    if not entries:
        return None
    limits = [parse(e.field("borrowingLimit")) if e.field("borrowingLimit") is not MISSING else None for e in entries]
    if all(limit is not None and limit == 0 for limit in limits):
        return "owner"
    has_floor = any((parse(e.field("nominalQuota")) or 0) > 0 for e in entries)
    may_borrow = any(limit is None or limit > 0 for limit in limits)
    return "floor-and-borrow" if has_floor and may_borrow else None


def check_single_layout_per_cohort(objects: Iterable[KubeObject]) -> list[Violation]:
    """SINGLE_LAYOUT_PER_COHORT: a cohort does not mix an owner queue (borrowingLimit 0 on every resource, the
    asymmetric inference/training layout) with symmetric floor-and-borrow queues (nominalQuota above 0 and allowed
    to borrow).

    Args:
        objects: every Kubernetes object of the stack; ClusterQueues are grouped by their direct cohort.
    Returns:
        One Violation per mixed cohort, naming the queues of each kind; fail-closed violations for unknown quota.
    """
    found: list[Violation] = []
    by_cohort: dict[str, dict[str, list[KubeObject]]] = defaultdict(lambda: defaultdict(list))
    for cq in (o for o in objects if o.is_kueue("ClusterQueue")):
        try:
            cohort = cohort_of(cq)
            if cohort is None:
                continue
            role = _layout_role(cq)
        except UnknownValueError as err:
            found.append(unknown_violation(cq, err))
            continue
        if role is not None:
            by_cohort[cohort][role].append(cq)
    for cohort, roles in by_cohort.items():
        if roles["owner"] and roles["floor-and-borrow"]:
            owners = ", ".join(f"'{q.name}'" for q in roles["owner"])
            floors = ", ".join(f"'{q.name}'" for q in roles["floor-and-borrow"])
            found.append(violation(
                roles["floor-and-borrow"][0], SINGLE_LAYOUT_PER_COHORT.name, "spec.cohortName", cohort,
                "a cohort uses one layout: it must not mix owner ClusterQueues (borrowingLimit 0) with symmetric "
                "floor-and-borrow ClusterQueues",
                "give each layout its own cohort",
                message=
                    f"The cohort '{cohort}' mixes owner ClusterQueues with borrowingLimit 0 ({owners}) and symmetric "
                f"floor-and-borrow ClusterQueues ({floors}); use one layout per cohort: either give the other queues "
                f"nominalQuota 0 so they only borrow (asymmetric), or let every queue borrow above its floor "
                f"(symmetric)."))
    return found


SINGLE_LAYOUT_PER_COHORT: Declaration = Declaration(
    name="single-layout-per-cohort",
    description="A cohort uses one layout: asymmetric owner/borrower or symmetric floor-and-borrow.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_single_layout_per_cohort(objects))
