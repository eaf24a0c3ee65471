"""INFERENCE_BORROWING_LIMIT_ZERO (stack policy): an inference ClusterQueue in a cohort never borrows.

Upstream field semantics (Kueue v0.19.2 `apis/kueue/v1beta2/clusterqueue_types.go`, site `concepts/cluster_queue.md`):
a null `borrowingLimit` means the queue may borrow up to the whole cohort's unused nominal quota; `borrowingLimit`
must be null when the queue has no cohort (CEL). Borrowed quota is reclaimable, so inference that borrows can lose
its pods to the queues it borrowed from.
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import INFERENCE_ROLE, KubeObject, cohort_of, guarded, role_of, violation
from .vocabulary.quantity import parse
from .vocabulary.quota import quota_entries
from .vocabulary.roles import ROLE_OPTIONS, per_inference_queue
from .vocabulary.values import MISSING, Violation


def check_inference_borrowing_limit_zero(obj: KubeObject, inference_names: Iterable[str] = ()) -> list[Violation]:
    """INFERENCE_BORROWING_LIMIT_ZERO: an inference ClusterQueue in a cohort has borrowingLimit 0 on every
    (flavor, resource).

    Args:
        obj: any object; only ClusterQueues identified as inference (`role_of`) are judged. A queue without a
            cohort cannot borrow (and Kueue rejects borrowingLimit there), so it passes.
        inference_names: extra ClusterQueue names to treat as inference (policy config `inferenceClusterQueues`).
    Returns:
        One Violation per entry whose borrowingLimit is missing (= unlimited), not a quantity, or not zero; or the
        fail-closed violation when a field it needs is unknown at preview.
    """
    if not obj.is_kueue("ClusterQueue"):
        return []

    def check() -> list[Violation]:
        if role_of(obj, inference_names) != INFERENCE_ROLE:
            return []
        cohort = cohort_of(obj)
        if cohort is None:
            return []
        found = []
        for entry in quota_entries(obj):
            raw = entry.field("borrowingLimit")
            where = f"resource '{entry.resource}' of flavor '{entry.flavor}'"
            field = f"{entry.path}.borrowingLimit"
            if raw is MISSING:
                problem = (f"{entry.path}.borrowingLimit is missing, which Kueue reads as unlimited borrowing from "
                           f"cohort '{cohort}'")
            elif parse(raw) is None:
                problem = f"{entry.path}.borrowingLimit is {raw!r}, which is not a Kubernetes quantity"
            elif parse(raw) != 0:
                problem = f"{entry.path}.borrowingLimit is {raw!r}"
            else:
                continue
            found.append(violation(
                obj, INFERENCE_BORROWING_LIMIT_ZERO.name, field, raw,
                "the inference ClusterQueue must never borrow: its borrowingLimit must be an explicit 0 on every "
                "resource of every flavor (Kueue reads a missing borrowingLimit as unlimited)",
                "set borrowingLimit to 0 (or leave it out of the stack config: the component writes 0)",
                message=f"The ClusterQueue '{obj.name}' is an inference queue and must set borrowingLimit to 0 for "
                f"{where}, but {problem}; set borrowingLimit: \"0\" so that inference never runs on quota it "
                "can lose."))
        return found

    return guarded(obj, check)


INFERENCE_BORROWING_LIMIT_ZERO: Declaration = Declaration(
    name="inference-borrowing-limit-zero",
    description="Inference ClusterQueues set borrowingLimit 0 for every resource of every flavor.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=per_inference_queue(check_inference_borrowing_limit_zero), options=ROLE_OPTIONS)
