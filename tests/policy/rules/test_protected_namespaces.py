"""policy/rules/protected_namespaces.py: system and controller namespaces never become Kueue tenants."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.protected_namespaces import (
    DEFAULT_PROTECTED_NAMESPACES,
    check_protected_namespaces,
    namespace_labels,
)
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL
from tests.policy.fixtures import UNKNOWN, compliant, local_queue, stack

POLICY = "protected-namespaces"
TENANT = "kueue-cohorts/tenant"
FIX = ("keep system and controller namespaces out of the tenants: list only your workload namespaces (protected: "
       + ", ".join(DEFAULT_PROTECTED_NAMESPACES) + ")")


def namespace(name, labels=None):
    meta = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def manifests():
    m = compliant()
    m["ns-inference"] = namespace("c12-inference", {TENANT: "c12-inference-cq"})
    m["ns-training"] = namespace("c12-training", {TENANT: "c12-training-cq"})
    # Kueue's own install creates its namespace; without a tenant label that is fine.
    m["ns-kueue"] = namespace("kueue-system", {"control-plane": "controller-manager"})
    return m


def summary(violations):
    return [(v.subject, v.field, v.value, v.policy) for v in violations]


def test_compliant_stack_passes():
    assert check_protected_namespaces(stack(manifests()), DEFAULT_PROTECTED_NAMESPACES, POLICY) == []


def test_defaults_are_the_documented_namespaces():
    assert DEFAULT_PROTECTED_NAMESPACES == ("kube-system", "kube-public", "kube-node-lease", "kueue-system",
                                            "jobset-system", "kubeflow-system", "kserve", "default")


@pytest.mark.parametrize("system", ["kube-system", "kueue-system"])
def test_issue_13_item_4_system_namespace_as_training_tenant(system):
    # `training.namespaces: [c12-training, kube-system]`: the stack labels the namespace for the training queue and
    # puts the training LocalQueue into it.
    m = manifests()
    m[f"ns-{system}"] = namespace(system, {TENANT: "c12-training-cq"})
    m.pop("ns-kueue")
    m["lq-system"] = local_queue("c12-training-lq", system, "c12-training-cq")
    violations = check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY)
    assert summary(violations) == [
        (ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.namespaceSelector",
         {"matchLabels": {TENANT: "c12-training-cq"}}, POLICY),
        (ObjectRef("Namespace", None, system), f'metadata.labels["{TENANT}"]', "c12-training-cq", POLICY),
        (ObjectRef("LocalQueue", system, "c12-training-lq"), "metadata.namespace", system, POLICY),
    ]
    cq, ns, lq = violations
    assert cq.rule == ("a ClusterQueue's namespaceSelector must not select a protected system or controller "
                       f"namespace, but this one selects '{system}'")
    assert cq.fix == (f"pin the tenants by name with matchExpressions [{{key: {NAME_LABEL}, operator: In, values: "
                      f"[<your namespaces>]}}] and {FIX}")
    assert ns.rule == (f"'{system}' is a protected system or controller namespace, and label '{TENANT}' is what this "
                       "stack's ClusterQueues select tenants by, so Kueue would manage (and may suspend) its pods")
    assert ns.fix == f"remove the label and {FIX}"
    assert lq.rule == (f"a LocalQueue must not live in the protected system or controller namespace '{system}', "
                       "which would queue that namespace's workloads under Kueue")
    assert lq.fix == FIX


@pytest.mark.parametrize("selector,caught", [
    ({}, list(DEFAULT_PROTECTED_NAMESPACES)),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system", "kueue-system"]}]},
     ["kube-public", "kube-node-lease", "jobset-system", "kubeflow-system", "kserve", "default"]),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": ["c12-training", "kserve"]}]}, ["kserve"]),
    ({"matchLabels": {"control-plane": "controller-manager"}}, ["kueue-system"]),
    ({"matchExpressions": [{"key": TENANT, "operator": "DoesNotExist"}]}, list(DEFAULT_PROTECTED_NAMESPACES)),
])
def test_cluster_queue_selecting_a_protected_namespace(selector, caught):
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"] = selector
    violations = check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY)
    [found] = [v for v in violations if v.subject.kind == "ClusterQueue"]
    assert (found.subject.name, found.field, found.value) == ("c12-training-cq", "spec.namespaceSelector", selector)
    # Selecting on a label the Kueue install puts on kueue-system also makes that label a queue-selector label.
    assert [(v.subject.name, v.field) for v in violations if v.subject.kind == "Namespace"] == (
        [("kueue-system", "metadata.labels.control-plane")] if "matchLabels" in selector else [])
    assert found.rule.endswith("this one selects " + ", ".join(f"'{ns}'" for ns in caught))


def test_a_tenant_label_selects_a_protected_namespace_only_if_it_carries_the_label():
    m = manifests()
    m["ns-kube-system"] = namespace("kube-system", {"team": "platform"})
    assert check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY) == []


def test_missing_selector_selects_nothing():
    m = manifests()
    del m["training-cq"]["spec"]["namespaceSelector"]
    assert check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY) == []


def test_a_stack_extends_the_list():
    protected = DEFAULT_PROTECTED_NAMESPACES + ("platform",)
    m = manifests()
    m["lq-platform"] = local_queue("c12-training-lq", "platform", "c12-training-cq")
    assert check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY) == []
    [found] = check_protected_namespaces(stack(m), protected, POLICY)
    assert (found.subject, found.field) == (ObjectRef("LocalQueue", "platform", "c12-training-lq"),
                                            "metadata.namespace")
    assert found.fix.endswith(", kserve, default, platform)")


def test_unknown_label_on_a_protected_namespace_fails_closed():
    m = manifests()
    m["ns-kube-system"] = namespace("kube-system", {TENANT: UNKNOWN})
    violations = check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY)
    assert any("unknown at preview" in v.message and "Namespace 'kube-system'" in v.message for v in violations)


def test_namespace_labels_merges_the_stacks_namespace_objects():
    m = manifests()
    m["ns-training-2"] = namespace("c12-training", {"extra": "x"})
    labels = namespace_labels(stack(m))
    assert labels["c12-training"] == {TENANT: "c12-training-cq", "extra": "x", NAME_LABEL: "c12-training"}


@pytest.mark.parametrize("system, tenant", list(itertools.product(DEFAULT_PROTECTED_NAMESPACES,
                                                                   ["c12-inference-cq", "c12-training-cq"])))
def test_every_protected_namespace_labelled_for_any_queue_is_refused(system, tenant):
    m = manifests()
    m.pop("ns-kueue")
    m["ns-system"] = namespace(system, {TENANT: tenant})
    violations = check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY)
    assert {(v.subject.kind, v.subject.name) for v in violations} == {("Namespace", system), ("ClusterQueue", tenant)}


@given(st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True))
def test_unprotected_namespaces_pass(name):
    if name in DEFAULT_PROTECTED_NAMESPACES:
        return
    m = manifests()
    m["ns-extra"] = namespace(name, {TENANT: "c12-training-cq"})
    m["lq-extra"] = local_queue("lq", name, "c12-training-cq")
    assert check_protected_namespaces(stack(m), DEFAULT_PROTECTED_NAMESPACES, POLICY) == []
