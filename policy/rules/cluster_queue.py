"""Per-ClusterQueue rules: inference-borrowing-limit-zero, inference-reclaim-any and the namespaceSelector rules.

Upstream field semantics (kubernetes-sigs/kueue `apis/kueue/v1beta2/clusterqueue_types.go`, site
`concepts/cluster_queue.md`): a null `borrowingLimit` means the queue may borrow up to the whole cohort's unused
nominal quota; `borrowingLimit` must be null when the queue has no cohort (CEL); `preemption.reclaimWithinCohort`
defaults to `Never`; a null `namespaceSelector` matches no namespace and `{}` matches every namespace.
"""
from __future__ import annotations

from typing import Iterable

from .kueue import quota_entries
from .objects import INFERENCE_ROLE, KubeObject, cohort_of, guarded, role_of, violation
from .quantities import parse
from .values import MISSING, Violation, as_list, as_map, get


def _is_cluster_queue(obj: KubeObject) -> bool:
    return obj.is_kueue("ClusterQueue")


def check_inference_borrowing_limit_zero(obj: KubeObject, inference_names: Iterable[str] = ()) -> list[Violation]:
    """inference-borrowing-limit-zero: an inference ClusterQueue in a cohort has borrowingLimit 0 on every
    (flavor, resource).

    Args:
        obj: any object; only ClusterQueues identified as inference (`role_of`) are judged. A queue without a
            cohort cannot borrow (and Kueue rejects borrowingLimit there), so it passes.
        inference_names: extra ClusterQueue names to treat as inference (policy config `inferenceClusterQueues`).
    Returns:
        One Violation per entry whose borrowingLimit is missing (= unlimited), not a quantity, or not zero; or the
        fail-closed violation when a field it needs is unknown at preview.
    """
    if not _is_cluster_queue(obj):
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
                obj, "inference-borrowing-limit-zero", field, raw,
                "the inference ClusterQueue must never borrow: its borrowingLimit must be an explicit 0 on every "
                "resource of every flavor (Kueue reads a missing borrowingLimit as unlimited)",
                "set borrowingLimit to 0 (or leave it out of the stack config: the component writes 0)",
                message=f"The ClusterQueue '{obj.name}' is an inference queue and must set borrowingLimit to 0 for "
                f"{where}, but {problem}; set borrowingLimit: \"0\" so that inference never runs on quota it "
                "can lose."))
        return found

    return guarded(obj, check)


def check_inference_reclaim_any(obj: KubeObject, inference_names: Iterable[str] = ()) -> list[Violation]:
    """inference-reclaim-any: an inference ClusterQueue sets `spec.preemption.reclaimWithinCohort: Any`.

    Args:
        obj: any object; only inference ClusterQueues are judged.
        inference_names: extra inference ClusterQueue names (policy config).
    Returns:
        At most one Violation (missing value = Kueue's default Never, or another value).
    """
    if not _is_cluster_queue(obj):
        return []

    def check() -> list[Violation]:
        if role_of(obj, inference_names) != INFERENCE_ROLE:
            return []
        value = get(obj.spec, "preemption", "reclaimWithinCohort")
        if value == "Any":
            return []
        now = "not set (Kueue's default is Never)" if value is MISSING else f"{value!r}"
        return [violation(
            obj, "inference-reclaim-any", "spec.preemption.reclaimWithinCohort", value,
            "the inference ClusterQueue must reclaim its nominalQuota from any borrower, whatever its priority "
            "(Kueue's default is Never)",
            "set reclaimWithinCohort to Any",
            message=f"The ClusterQueue '{obj.name}' is an inference queue and must set "
            f"spec.preemption.reclaimWithinCohort to Any, but it is {now}; set it to Any so that inference takes its "
            f"nominal quota back from borrowing workloads in the cohort whatever their priority.")]

    return guarded(obj, check)


def check_namespace_selector(obj: KubeObject, inference: bool, inference_names: Iterable[str] = ()) -> list[Violation]:
    """The namespaceSelector rules: a ClusterQueue has a namespaceSelector that is neither missing nor `{}`.

    Two policies share this rule so that each has its own enforcement level: `inference-namespace-selector`
    (inference=True, judges inference queues only, mandatory by default) and `cluster-queue-namespace-selector`
    (inference=False, judges every other ClusterQueue, advisory by default).

    Args:
        obj: any object; only ClusterQueues of the selected role are judged.
        inference: True to judge inference queues, False to judge the others.
        inference_names: extra inference ClusterQueue names (policy config).
    Returns:
        At most one Violation. A selector counts as empty when it has neither matchLabels entries nor
        matchExpressions entries (metav1.LabelSelector: the empty selector matches everything).
    """
    if not _is_cluster_queue(obj):
        return []

    def check() -> list[Violation]:
        if (role_of(obj, inference_names) == INFERENCE_ROLE) != inference:
            return []
        selector = get(obj.spec, "namespaceSelector")
        example = "e.g. matchLabels: {kubernetes.io/metadata.name: <tenant namespace>}"
        policy = "inference-namespace-selector" if inference else "cluster-queue-namespace-selector"
        fix = "select the tenant namespaces by name (matchExpressions kubernetes.io/metadata.name In [...])"
        if selector is MISSING:
            return [violation(
                obj, policy, "spec.namespaceSelector", selector,
                "a ClusterQueue without namespaceSelector admits no namespace at all", fix,
                message=f"The ClusterQueue '{obj.name}' has no spec.namespaceSelector, which Kueue reads as no "
                f"namespace at all, so no LocalQueue can submit to it; select its tenant namespaces, {example}.")]
        if not as_map(get(selector, "matchLabels")) and not as_list(get(selector, "matchExpressions")):
            return [violation(
                obj, policy, "spec.namespaceSelector", selector,
                "an empty namespaceSelector ({}) admits workloads from every namespace", fix,
                message=f"The ClusterQueue '{obj.name}' has an empty spec.namespaceSelector ({{}}), which admits "
                f"workloads from every namespace; select its tenant namespaces only, {example}.")]
        return []

    return guarded(obj, check)
