"""KUEUE_API_VERSION: Kueue objects use kueue.x-k8s.io/v1beta2 and its field names.

Upstream: kubernetes-sigs/kueue CHANGELOG-0.15.md ("V1beta2" renames) and CHANGELOG-0.16.md (v1beta2 becomes the
storage version, v1beta1 deprecated); CHANGELOG-0.13.md (Cohort `spec.parent` -> `spec.parentName`).
"""
from __future__ import annotations

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import KUEUE_GROUP, KUEUE_STORAGE_VERSION, KubeObject, guarded, violation
from .vocabulary.values import MISSING, Violation, get


def _migration_steps(obj: KubeObject) -> list[str]:
    """The field changes this object needs on its way to v1beta2, judged from the fields it actually sets."""
    spec = obj.spec
    steps = []
    if obj.kind == "ClusterQueue":
        if get(spec, "cohort") is not MISSING:
            steps.append("rename spec.cohort to spec.cohortName")
        if get(spec, "admissionChecks") is not MISSING:
            steps.append("move spec.admissionChecks to spec.admissionChecksStrategy.admissionChecks[].name")
        fungibility = get(spec, "flavorFungibility")
        if get(fungibility, "whenCanBorrow") == "Borrow":
            steps.append("replace flavorFungibility.whenCanBorrow Borrow with MayStopSearch")
        if get(fungibility, "whenCanPreempt") == "Preempt":
            steps.append("replace flavorFungibility.whenCanPreempt Preempt with MayStopSearch")
    if obj.kind == "Cohort" and get(spec, "parent") is not MISSING:
        steps.append("rename spec.parent to spec.parentName")
    if obj.kind == "Workload":
        if get(spec, "priorityClassName") is not MISSING or get(spec, "priorityClassSource") is not MISSING:
            steps.append("replace spec.priorityClassName/priorityClassSource with spec.priorityClassRef")
    return steps


def check_kueue_api_version(obj: KubeObject) -> list[Violation]:
    """KUEUE_API_VERSION for one object.

    Args:
        obj: any object; only kueue.x-k8s.io objects are judged.
    Returns:
        A Violation for an object typed with another version than v1beta2 (with the migration to make), and one
        for a v1beta2 ClusterQueue that still sets v1beta1's `spec.cohort` (the API server would prune it and
        leave the queue outside any cohort).
    """
    if obj.group != KUEUE_GROUP:
        return []

    def check() -> list[Violation]:
        target = f"{KUEUE_GROUP}/{KUEUE_STORAGE_VERSION}"
        if obj.version != KUEUE_STORAGE_VERSION:
            steps = _migration_steps(obj)
            how = "; ".join(steps) if steps else "its fields need no change"
            return [violation(
                obj, KUEUE_API_VERSION.name, "apiVersion", obj.api_version,
                f"Kueue objects use {target}", f"migrate: {how}",
                message=
                    f"The {obj.describe()} uses {obj.api_version}, which Kueue deprecates since v0.16; migrate it to "
                f"{target}: set apiVersion: {target}; {how}.")]
        if obj.kind == "ClusterQueue" and get(obj.spec, "cohort") is not MISSING:
            return [violation(
                obj, KUEUE_API_VERSION.name, "spec.cohort", get(obj.spec, "cohort"),
                f"spec.cohort is a v1beta1 field that {target} drops", "rename it to spec.cohortName",
                message=
                    f"The {obj.describe()} sets spec.cohort, a {KUEUE_GROUP}/v1beta1 field that {target} does not have "
                f"(the API server drops it and the queue joins no cohort); rename it to spec.cohortName.")]
        return []

    return guarded(obj, check)


KUEUE_API_VERSION: Declaration = Declaration(
    name="kueue-api-version",
    description="Kueue objects use kueue.x-k8s.io/v1beta2 and its field names.",
    promise=Promise.WELL_FORMED, level=Level.MANDATORY, scope=Scope.RESOURCE,
    check=lambda obj, options: check_kueue_api_version(obj))
