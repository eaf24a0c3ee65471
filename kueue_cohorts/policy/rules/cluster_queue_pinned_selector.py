"""CLUSTER_QUEUE_PINNED_SELECTOR: a ClusterQueue's namespaceSelector pins `kubernetes.io/metadata.name`, so a copied
label selects nothing.

A selector on a tenant label alone (`kueue.x-k8s.io/queue: <tenant>`) selects any namespace whose owner adds that
label, which namespace owners may do; the apiserver-maintained `kubernetes.io/metadata.name` label cannot be changed,
so pinning it with `In` limits the queue to the declared namespaces (upstream: Kubernetes v1.36
`NamespaceDefaultLabelName`, always set to the name; Kueue v0.19.2 ClusterQueue `spec.namespaceSelector`).
"""
from __future__ import annotations

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import KubeObject, guarded, violation
from .vocabulary.plain import plain
from .vocabulary.selectors import NAME_LABEL, pins_names
from .vocabulary.values import MISSING, Violation, get

PIN = (f"matchExpressions [{{key: {NAME_LABEL}, operator: In, values: [<the tenant's namespaces>]}}]")
"""The selector term that pins a ClusterQueue to its declared namespaces (the fix of both selector policies)."""


def check_pinned_selector(obj: KubeObject, policy: str) -> list[Violation]:
    """CLUSTER_QUEUE_PINNED_SELECTOR for one object.

    Args:
        obj: any object; ClusterQueues are judged.
        policy: the policy name for the Violation.
    Returns:
        One Violation (field `spec.namespaceSelector`) when a ClusterQueue's namespaceSelector does not restrict
        `kubernetes.io/metadata.name` to a set of names (with `In`, or matchLabels on that key), e.g. a selector on
        a tenant label alone or `{}`; nothing for a missing selector (it selects nothing; the namespace-selector
        policies report it) or one that selects no namespace at all. The fail-closed violation for unknown values.
    """
    if not obj.is_kueue("ClusterQueue"):
        return []

    def check() -> list[Violation]:
        selector = get(obj.spec, "namespaceSelector")
        if selector is MISSING or pins_names(selector) is not None:
            return []
        return [violation(
            obj, policy, "spec.namespaceSelector", plain(selector),
            f"a ClusterQueue's namespaceSelector must pin the immutable {NAME_LABEL} label to the declared "
            f"namespaces, because any namespace owner can add a tenant label to their namespace and queue work here",
            f"add {PIN} next to the tenant label")]

    return guarded(obj, check)


CLUSTER_QUEUE_PINNED_SELECTOR: Declaration = Declaration(
    name="cluster-queue-pinned-selector",
    description="A ClusterQueue's namespaceSelector pins kubernetes.io/metadata.name, so a copied label selects "
                "nothing.",
    promise=Promise.KUEUE_COUNTS, level=Level.MANDATORY, scope=Scope.RESOURCE,
    check=lambda obj, options: check_pinned_selector(obj, CLUSTER_QUEUE_PINNED_SELECTOR.name))
