"""protected-namespaces (promise 1): what the policy-protected-namespaces mutation run found no test pinning down:
the policy as the pack runs it (its options `protectedNamespaces` and `allowedAddOnNamespaces`, the add-ons'
namespaces in the fix), every `kube-*` name the stack mentions (Kubernetes reserves the `kube-` prefix), and the
fail-closed findings. Whole findings written out by hand; a namespace carries `kubernetes.io/metadata.name` (its
name; Kubernetes v1.36 sets it on every namespace), which is no tenant label of the stack's own."""
from __future__ import annotations

from kueue_cohorts.policy.rules.protected_namespaces import PROTECTED_NAMESPACES, check_protected_namespaces
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL
from tests.policy.fixtures import UNKNOWN, kube, local_queue, stack
from tests.policy.rules.test_protected_namespaces import (
    DEFAULT_PROTECTED_NAMESPACES,
    POLICY,
    TENANT,
    manifests,
    namespace,
)

DEFAULTS = ", ".join(DEFAULT_PROTECTED_NAMESPACES)
ADD_ONS = (", every kube-* name and the cluster add-ons' namespaces (gpu-operator, cert-manager, ...; "
           "allowedAddOnNamespaces allows one with a reason)")


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix) for v in found]


def _policy(m: dict, options: dict | None = None) -> list:
    return PROTECTED_NAMESPACES.check(stack(m), options or {})


def _local_queue_finding(namespace: str, protected: str) -> tuple:
    return (POLICY, ObjectRef("LocalQueue", namespace, "c12-training-lq"), "metadata.namespace", namespace,
            f"a LocalQueue must not live in the protected system or controller namespace '{namespace}', which would "
            "queue that namespace's workloads under Kueue",
            "keep system and controller namespaces out of the tenants: list only your workload namespaces "
            f"(protected: {protected})")


def test_the_policy_protects_the_add_ons_namespaces_and_sums_them_up_in_the_fix():
    """Kills _fix_names' summary (3-12) and the policy's own check (_check 1-16): a LocalQueue in gpu-operator (a
    cluster add-on's namespace) is refused by the policy as the pack runs it."""
    m = manifests()
    m["lq-gpu"] = local_queue("c12-training-lq", "gpu-operator", "c12-training-cq")
    assert whole(_policy(m)) == [_local_queue_finding("gpu-operator", DEFAULTS + ADD_ONS)]


def test_an_add_on_namespace_the_stack_allows_is_a_tenant_like_any_other():
    """Kills the `allowedAddOnNamespaces` read (_check 4-6)."""
    m = manifests()
    m["lq-gpu"] = local_queue("c12-training-lq", "gpu-operator", "c12-training-cq")
    assert _policy(m, {"allowedAddOnNamespaces": ["gpu-operator"]}) == []


def test_the_stacks_own_protected_namespaces_join_the_fix():
    """Kills the `protectedNamespaces` read (_check 1-3)."""
    m = manifests()
    m["lq-legacy"] = local_queue("c12-training-lq", "c12-legacy", "c12-training-cq")
    assert _policy(m) == []
    assert whole(_policy(m, {"protectedNamespaces": ["c12-legacy"]})) == [
        _local_queue_finding("c12-legacy", f"{DEFAULTS}, c12-legacy{ADD_ONS}")]


def _judge(m: dict) -> list:
    return check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY)


FIX = ("keep system and controller namespaces out of the tenants: list only your workload namespaces (protected: "
       f"{DEFAULTS}, kube-flannel)")


def test_a_kube_namespace_object_of_the_stack_is_protected():
    """Kills the Namespace source of prefixed_namespaces (2, 4): kube-flannel, named only by its Namespace object."""
    m = manifests()
    m["ns-flannel"] = namespace("kube-flannel", {TENANT: "c12-training-cq"})
    found = [v for v in _judge(m) if v.subject.kind == "Namespace"]
    assert whole(found) == [(
        POLICY, ObjectRef("Namespace", None, "kube-flannel"), f'metadata.labels["{TENANT}"]', "c12-training-cq",
        f"'kube-flannel' is a protected system or controller namespace, and label '{TENANT}' is what this stack's "
        "ClusterQueues select tenants by, so Kueue would manage (and may suspend) its pods",
        f"remove the label and {FIX}")]


def test_a_local_queue_in_a_kube_namespace_is_refused():
    """Kills the LocalQueue source of prefixed_namespaces (5-10)."""
    m = manifests()
    m["lq-flannel"] = local_queue("c12-training-lq", "kube-flannel", "c12-training-cq")
    assert whole(_judge(m)) == [_local_queue_finding("kube-flannel", f"{DEFAULTS}, kube-flannel")]


def test_a_cluster_queue_pinning_a_kube_namespace_by_name_is_refused():
    """Kills the ClusterQueue source of prefixed_namespaces (11-27): `In [c12-training, kube-flannel]` on
    kubernetes.io/metadata.name selects kube-flannel."""
    m = manifests()
    selector = {"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": ["c12-training", "kube-flannel"]}]}
    m["training-cq"]["spec"]["namespaceSelector"] = selector
    assert whole(_judge(m)) == [(
        POLICY, ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.namespaceSelector", selector,
        "a ClusterQueue's namespaceSelector must not select a protected system or controller namespace, but this one "
        "selects 'kube-flannel'",
        f"pin the tenants by name with matchExpressions [{{key: {NAME_LABEL}, operator: In, values: [<your "
        f"namespaces>]}}] and {FIX}")]


def test_an_unknown_name_before_a_kube_namespace_does_not_hide_it():
    """Kills `continue` -> `break` (prefixed_namespaces 28): a Namespace whose name is unknown at preview comes
    first; the LocalQueue in kube-flannel after it is still refused (and the unknown one fails closed)."""
    m = {"ns-unknown": namespace(UNKNOWN, {"team": "x"}), **manifests()}
    m["lq-flannel"] = local_queue("c12-training-lq", "kube-flannel", "c12-training-cq")
    assert [(v.policy, v.subject.kind, v.field) for v in _judge(m)] == [
        ("unknown-at-preview", "Namespace", "metadata.name"), (POLICY, "LocalQueue", "metadata.namespace")]


def test_the_name_label_is_no_tenant_label():
    """Kills `req.key or req.key != NAME_LABEL` (queue_selector_keys 15): the queues pin tenants by
    kubernetes.io/metadata.name, which kube-system carries too; that label alone makes no tenant."""
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"] = {"matchExpressions": [
        {"key": NAME_LABEL, "operator": "In", "values": ["c12-training"]}]}
    m["ns-kube-system"] = namespace("kube-system", {NAME_LABEL: "kube-system"})
    assert _judge(m) == []


def test_unknown_namespaces_and_selectors_fail_closed_on_their_own_object():
    """Kills `guarded(None, ...)` for LocalQueues and ClusterQueues (check_protected_namespaces 39, 56)."""
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"] = UNKNOWN
    objects = [*stack(m), kube("lq-unknown", local_queue("c12-x-lq", UNKNOWN, "c12-training-cq"))]
    found = check_protected_namespaces(objects, DEFAULT_PROTECTED_NAMESPACES, POLICY)
    assert [(v.policy, v.subject, v.field) for v in found] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.namespaceSelector"),
        ("unknown-at-preview", ObjectRef("LocalQueue", None, "lq-unknown"), "metadata.namespace")]
