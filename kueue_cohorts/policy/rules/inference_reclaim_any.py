"""INFERENCE_RECLAIM_ANY (stack policy): an inference ClusterQueue takes its nominal quota back from any borrower.

Upstream (Kueue v0.19.2 `apis/kueue/v1beta2/clusterqueue_types.go` ClusterQueuePreemption): `reclaimWithinCohort`
defaults to `Never`; `Any` preempts borrowing workloads of the cohort whatever their priority.
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import INFERENCE_ROLE, KubeObject, guarded, role_of, violation
from .vocabulary.roles import ROLE_OPTIONS, per_inference_queue
from .vocabulary.values import MISSING, Violation, get


def check_inference_reclaim_any(obj: KubeObject, inference_names: Iterable[str] = ()) -> list[Violation]:
    """INFERENCE_RECLAIM_ANY: an inference ClusterQueue sets `spec.preemption.reclaimWithinCohort: Any`.

    Args:
        obj: any object; only inference ClusterQueues are judged.
        inference_names: extra inference ClusterQueue names (policy config).
    Returns:
        At most one Violation (missing value = Kueue's default Never, or another value).
    """
    if not obj.is_kueue("ClusterQueue"):
        return []

    def check() -> list[Violation]:
        if role_of(obj, inference_names) != INFERENCE_ROLE:
            return []
        value = get(obj.spec, "preemption", "reclaimWithinCohort")
        if value == "Any":
            return []
        now = "not set (Kueue's default is Never)" if value is MISSING else f"{value!r}"
        return [violation(
            obj, INFERENCE_RECLAIM_ANY.name, "spec.preemption.reclaimWithinCohort", value,
            "the inference ClusterQueue must reclaim its nominalQuota from any borrower, whatever its priority "
            "(Kueue's default is Never)",
            "set reclaimWithinCohort to Any",
            message=f"The ClusterQueue '{obj.name}' is an inference queue and must set "
            f"spec.preemption.reclaimWithinCohort to Any, but it is {now}; set it to Any so that inference takes its "
            f"nominal quota back from borrowing workloads in the cohort whatever their priority.")]

    return guarded(obj, check)


INFERENCE_RECLAIM_ANY: Declaration = Declaration(
    name="inference-reclaim-any",
    description="Inference ClusterQueues set preemption.reclaimWithinCohort to Any.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=per_inference_queue(check_inference_reclaim_any), options=ROLE_OPTIONS)
