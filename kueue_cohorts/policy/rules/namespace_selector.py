"""The namespaceSelector policies: a ClusterQueue selects its tenant namespaces, neither none nor every one.

Two policies share one rule so that each has its own enforcement level: one for inference ClusterQueues (mandatory),
one for every other ClusterQueue (advisory). Upstream field semantics (Kueue v0.19.2
`apis/kueue/v1beta2/clusterqueue_types.go`, site `concepts/cluster_queue.md`): a null `namespaceSelector` matches no
namespace and `{}` matches every namespace.
"""
from __future__ import annotations

from typing import Iterable

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import INFERENCE_ROLE, KubeObject, guarded, role_of, violation
from .vocabulary.roles import ROLE_OPTIONS, per_inference_queue
from .vocabulary.values import MISSING, Violation, as_list, as_map, get


def check_namespace_selector(obj: KubeObject, inference: bool, inference_names: Iterable[str] = ()) -> list[Violation]:
    """The namespaceSelector rules: a ClusterQueue has a namespaceSelector that is neither missing nor `{}`.

    Two policies share this rule so that each has its own enforcement level: INFERENCE_NAMESPACE_SELECTOR
    (inference=True, judges inference queues only, mandatory by default) and CLUSTER_QUEUE_NAMESPACE_SELECTOR
    (inference=False, judges every other ClusterQueue, advisory by default).

    Args:
        obj: any object; only ClusterQueues of the selected role are judged.
        inference: True to judge inference queues, False to judge the others.
        inference_names: extra inference ClusterQueue names (policy config).
    Returns:
        At most one Violation. A selector counts as empty when it has neither matchLabels entries nor
        matchExpressions entries (metav1.LabelSelector: the empty selector matches everything).
    """
    if not obj.is_kueue("ClusterQueue"):
        return []

    def check() -> list[Violation]:
        if (role_of(obj, inference_names) == INFERENCE_ROLE) != inference:
            return []
        selector = get(obj.spec, "namespaceSelector")
        example = "e.g. matchLabels: {kubernetes.io/metadata.name: <tenant namespace>}"
        policy = (INFERENCE_NAMESPACE_SELECTOR if inference else CLUSTER_QUEUE_NAMESPACE_SELECTOR).name
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


INFERENCE_NAMESPACE_SELECTOR: Declaration = Declaration(
    name="inference-namespace-selector",
    description="Inference ClusterQueues select their tenant namespaces (no missing or empty namespaceSelector).",
    promise=Promise.KUEUE_COUNTS, level=Level.MANDATORY, scope=Scope.STACK,
    check=per_inference_queue(lambda obj, names: check_namespace_selector(obj, True, names)), options=ROLE_OPTIONS)

CLUSTER_QUEUE_NAMESPACE_SELECTOR: Declaration = Declaration(
    name="cluster-queue-namespace-selector",
    description="ClusterQueues select their tenant namespaces (no missing or empty namespaceSelector).",
    promise=Promise.KUEUE_COUNTS, level=Level.ADVISORY, scope=Scope.STACK,
    check=per_inference_queue(lambda obj, names: check_namespace_selector(obj, False, names)), options=ROLE_OPTIONS)
