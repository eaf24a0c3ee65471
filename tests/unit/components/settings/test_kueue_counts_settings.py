"""Promise 2 in the settings check: `kueue-cohorts:kueue` settings that would take the quota out of Kueue's counting
are refused at their own key with the fix (the rule book judges the rendered manager Configuration)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.policy.rules.vocabulary import kueue_counts
from tests.helpers import stack_raw

DEV_GPUS = ["nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem"]


def _problems(stack: str, **kueue: object) -> list[tuple[str, str, str]]:
    raw = stack_raw(stack)
    raw.setdefault("kueue", {}).update(kueue)
    return [(p.key, p.rule, p.fix) for p in validate(raw).problems]


@settings(max_examples=25, deadline=None)
@given(cut=st.integers(min_value=1, max_value=len("nvidia.com/gpualloc")))
def test_an_exclusion_of_a_quoted_gpu_is_refused_at_its_key(cut):
    prefix = "nvidia.com/gpualloc"[:cut]
    found = _problems("dev", resources={"excludeResourcePrefixes": [prefix]})
    dropped = [g for g in DEV_GPUS if g.startswith(prefix)]
    assert [(k, f) for k, _, f in found] == [
        ("kueue-cohorts:kueue.resources.excludeResourcePrefixes",
         f"remove the entry that drops or replaces {g!r}, or take {g!r} out of these queues' quota") for g in dropped]
    assert all("ClusterQueues 'c12-inference-cq', 'c12-training-cq' quota" in r for _, r, _ in found)


@pytest.mark.parametrize("gate", sorted(kueue_counts.UNSAFE_GATES))
def test_a_gate_that_switches_off_a_counting_protection_is_refused(gate):
    value, _ = kueue_counts.UNSAFE_GATES[gate]
    found = _problems("dev", featureGates={gate: value})
    default = str(kueue_counts.FEATURE_GATES[gate].default).lower()
    assert [(k, f) for k, _, f in found] == [("kueue-cohorts:kueue.featureGates", f"remove {gate} (default {default})")]


@pytest.mark.parametrize("gates, fix", [
    ({"NoSuchGate": True}, "remove 'NoSuchGate' or correct its name (the gates are listed in "
                           "pkg/features/kube_features.go)"),
    ({"ManagedJobsNamespaceSelectorAlwaysRespected": False}, "remove ManagedJobsNamespaceSelectorAlwaysRespected"),
])
def test_a_gate_the_manager_refuses_is_refused(gates, fix):
    assert [(k, f) for k, _, f in _problems("dev", featureGates=gates)] == [("kueue-cohorts:kueue.featureGates", fix)]


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize("gates", [{"PartialAdmission": False}, {"TopologyAwareScheduling": False},
                                   {"DisableWaitForPodsReady": False}, {}])
def test_other_gates_pass(stack, gates):
    assert _problems(stack, featureGates=gates) == []


@pytest.mark.parametrize("integrations, missing", [
    (["batch/job", "pod"], ["deployment", "trainer.kubeflow.org/trainjob"]),
    (["batch/job", "trainer.kubeflow.org/trainjob", "pod"], ["deployment"]),
    (["deployment"], ["trainer.kubeflow.org/trainjob"]),
    (["statefulset", "trainer.kubeflow.org/trainjob"], ["deployment"]),
])
def test_frameworks_without_the_stacks_kinds_are_refused_at_integrations(integrations, missing):
    found = _problems("dev", integrations=integrations)
    assert [(k, f) for k, _, f in found] == [
        ("kueue-cohorts:kueue.integrations",
         f"add '{m}' to integrations.frameworks (the stack's kueue.integrations)") for m in missing]


@pytest.mark.parametrize("stack, selector, tenants", [
    ("dev", {"matchLabels": {"team": "ml"}}, ["c12-inference", "c12-training"]),
    ("dev", {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                   "values": ["kube-system", "kueue-system", "c12-training"]}]}, ["c12-training"]),
    ("prod", {"matchExpressions": [{"key": "kueue.x-k8s.io/queue", "operator": "In", "values": ["team-a"]}]},
     ["inference-prod", "team-b", "team-c", "training-prod"]),
])
def test_a_selector_that_leaves_out_a_tenant_namespace_is_refused_at_its_key(stack, selector, tenants):
    found = _problems(stack, managedJobsNamespaceSelector=selector)
    assert [k for k, _, _ in found] == ["kueue-cohorts:kueue.managedJobsNamespaceSelector"] * len(tenants)
    assert [f for _, _, f in found] == [
        f"select '{ns}', e.g. with {{matchExpressions: [{{key: kubernetes.io/metadata.name, operator: NotIn, "
        "values: [kube-system, kueue-system]}]}, or label the namespace so the selector matches it"
        for ns in tenants]
    assert all("queue-name label or not" in r for _, r, _ in found)
