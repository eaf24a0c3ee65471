"""Issue 37 class 4 in the rule book: which trainers can borrow inference's quota (the cohort tree of an inference
ClusterQueue), and how long each holds its node after a reclaim (`reclaim_within_budget.pod_hold`)."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules.reclaim_within_budget import check_reclaim_within_budget, pod_hold
from kueue_cohorts.policy.rules.vocabulary.objects import from_resource
from tests.helpers import stack_raw

RUNTIME = "c12-checkpoint-runtime"


def _dev_manifests() -> list[dict]:
    return copy.deepcopy([r.manifest for r in render_stack(parse_settings(stack_raw("dev")))])


def _token(manifest: dict) -> str:
    api = manifest["apiVersion"]
    return f"kubernetes:{api if '/' in api else 'core/' + api}:{manifest['kind']}"


def _judge(manifests: list[dict], budget: int = 60) -> list:
    objects = [from_resource(_token(m), m, resource_name=m["metadata"]["name"]) for m in manifests]
    return check_reclaim_within_budget([o for o in objects if o is not None], budget, ["c12-inference-cq"])


def _runtime(manifests: list[dict]) -> dict:
    return next(m for m in manifests if m["kind"] == "TrainingRuntime")


def _pod(runtime: dict) -> dict:
    return runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


@settings(max_examples=40, deadline=None)
@given(grace=st.integers(0, 200), sleep=st.one_of(st.none(), st.integers(0, 200)), other_hook=st.booleans())
def test_a_pod_holds_its_node_as_the_kubelet_stops_it(grace, sleep, other_hook):
    """Kubernetes v1.36.3 killContainer: the hook inside the grace period, then at least 2 s."""
    container: dict = {"name": "node"}
    if sleep is not None:
        container["lifecycle"] = {"preStop": {"sleep": {"seconds": sleep}}}
    elif other_hook:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["save.sh"]}}}
    hold = pod_hold({"terminationGracePeriodSeconds": grace, "containers": [container]}, "spec")
    assert hold is not None
    expected = max(grace, sleep + 2) if sleep is not None else grace + 2 if other_hook else max(grace, 2)
    assert hold.seconds == expected


def test_a_default_grace_period_is_kubernetes_thirty_seconds():
    hold = pod_hold({"containers": [{"name": "node"}]}, "spec")
    assert hold is not None and hold.seconds == 30 and hold.why == \
        "terminationGracePeriodSeconds not set (Kubernetes default 30)"


@pytest.mark.parametrize("budget,named", [(60, False), (59, True)])
def test_the_dev_runtime_holds_its_node_exactly_the_guides_sixty_seconds(budget, named):
    assert bool(_judge(_dev_manifests(), budget)) == named


def test_a_runtime_outside_every_inference_cohort_tree_is_not_judged():
    manifests = _dev_manifests()
    _pod(_runtime(manifests))["terminationGracePeriodSeconds"] = 86400
    assert [v.field for v in _judge(manifests)] == [
        "spec.template.spec.replicatedJobs[0].template.spec.template.spec.terminationGracePeriodSeconds"]
    for m in manifests:
        if m["kind"] == "ClusterQueue" and "training" in m["metadata"]["name"]:
            m["spec"]["cohortName"] = "elsewhere"  # it can no longer borrow inference's quota
    assert _judge(manifests) == []


def test_a_queue_under_a_child_cohort_of_the_inference_tree_borrows_too():
    manifests = _dev_manifests()
    _pod(_runtime(manifests))["terminationGracePeriodSeconds"] = 86400
    for m in manifests:
        if m["kind"] == "ClusterQueue" and "training" in m["metadata"]["name"]:
            m["spec"]["cohortName"] = "child"
    manifests.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "child"},
                      "spec": {"parentName": "c12-shared"}})
    assert len(_judge(manifests)) == 1


def test_a_trainjob_on_the_borrowing_queue_is_judged_with_its_patches_and_cluster_runtime():
    manifests = _dev_manifests()
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "ft", "namespace": "c12-training",
                        "labels": {"kueue.x-k8s.io/queue-name": "c12-training-lq"}},
           "spec": {"runtimeRef": {"kind": "TrainingRuntime", "name": RUNTIME}, "runtimePatches": [
               {"manager": "x", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                   {"name": "node", "template": {"spec": {"template": {"spec": {
                       "terminationGracePeriodSeconds": 3600}}}}}]}}}}]}}
    [finding] = _judge([*manifests, job])
    assert (finding.subject.kind, finding.value) == ("TrainJob", 3600)
    assert finding.fix.startswith("patch terminationGracePeriodSeconds to at most 60 (or drop the patch)")
    cluster_runtime = copy.deepcopy(_runtime(manifests))
    cluster_runtime.update(kind="ClusterTrainingRuntime", metadata={"name": "shared-rt"})
    _pod(cluster_runtime)["terminationGracePeriodSeconds"] = 600
    job = copy.deepcopy(job)
    job["spec"] = {"runtimeRef": {"kind": "ClusterTrainingRuntime", "name": "shared-rt"}}
    [finding] = _judge([*manifests, cluster_runtime, job])
    assert (finding.subject.kind, finding.subject.name, finding.value) == ("ClusterTrainingRuntime", "shared-rt", 600)
    assert "TrainJob 'ft' on ClusterQueue 'c12-training-cq' uses it" in finding.rule
