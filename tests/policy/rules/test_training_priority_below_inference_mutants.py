"""training-priority-below-inference (promise 3): what the policy-training-priority-below-inference mutation run
found no test pinning down. Whole findings written out by hand; upstream: Kueue v0.19.2
`pkg/controller/jobframework/reconciler.go` ExtractPriority (the object's `kueue.x-k8s.io/priority-class` label, else
the pod templates' `priorityClassName`), a Kueue Workload's own `spec.priority`
(`apis/kueue/v1beta2/workload_types.go`), Kubernetes v1.36 scheduling.k8s.io PriorityClass `value` (a pod's
priority)."""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.training_priority_below_inference import check_training_priority_below_inference
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, kube, priority_class, stack
from tests.policy.rules.test_training_priority_below_inference import FIX, POLICY, _rule

LABEL = "kueue.x-k8s.io/priority-class"


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix, v.message) for v in found]


def finding(kind: str, name: str, field: str, value: Any, what: str) -> tuple:
    """The finding of workload `kind` `c12-training/name` at `field`, written out."""
    rule = _rule(what)
    return (POLICY, ObjectRef(kind, "c12-training", name), field, value, rule, FIX,
            f"The {kind} 'c12-training/{name}' has {field} = {value!r}: {rule}; {FIX}.")


def _pod_spec(**spec: Any) -> dict:
    return {"containers": [{"name": "main", "image": "busybox"}], **spec}


def _judge(*workloads: dict, manifests: dict | None = None, options: dict | None = None) -> list:
    manifests = compliant() if manifests is None else manifests
    del manifests["job"]
    for i, workload in enumerate(workloads):
        manifests[f"w{i}"] = workload
    return check_training_priority_below_inference(stack(manifests), options or {})


def _meta(name: str, labels: dict | None = None) -> dict:
    return {"name": name, "namespace": "c12-training", "labels": labels or {}}


def test_a_cronjobs_pod_template_is_read_at_the_cronjobs_own_path():
    """Kills kind_of's `or` (4: a batch CronJob read as a Job, whose template is at spec.template)."""
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta("nightly"),
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": _pod_spec(
                priorityClassName="system-cluster-critical")}}}}}
    field = "spec.jobTemplate.spec.template.spec.priorityClassName"
    assert whole(_judge(cron)) == [finding("CronJob", "nightly", field, "system-cluster-critical",
                                           "PriorityClass 'system-cluster-critical' (2000000000)")]


def test_every_replicated_job_of_a_jobset_is_read():
    """Kills `_at`'s `*` expansion (6-14): the second replicated Job's pod template labels name inference's class."""
    jobs = [{"name": "a", "template": {"spec": {"template": {"spec": _pod_spec()}}}},
            {"name": "b", "template": {"spec": {"template": {"metadata": {"labels": {LABEL: "c12-inference-prio"}},
                                                             "spec": _pod_spec()}}}}]
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": _meta("js"),
              "spec": {"replicatedJobs": jobs}}
    field = f'spec.replicatedJobs[1].template.spec.template.metadata.labels["{LABEL}"]'
    assert whole(_judge(jobset)) == [finding("JobSet", "js", field, "c12-inference-prio",
                                             "WorkloadPriorityClass 'c12-inference-prio' (1000)")]


def test_a_pods_own_priority_class_name_is_read():
    """Kills `path.split(".") if True` (nodes 8): a Pod's template is the Pod itself (path "")."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("p"),
           "spec": _pod_spec(priorityClassName="system-node-critical")}
    assert whole(_judge(pod)) == [finding("Pod", "p", "spec.priorityClassName", "system-node-critical",
                                          "PriorityClass 'system-node-critical' (2000001000)")]


def test_a_stack_priority_class_at_exactly_inferences_value_is_refused_and_one_below_is_not():
    """Kills `value > floor` for pod classes (59) and the stack's PriorityClasses read (check 35-46): a
    scheduling.k8s.io PriorityClass of value 1000 equals inference's floor (at or above is refused); 999 is below."""
    manifests = compliant()
    manifests["pc-high"] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": "c12-batch-high"}, "value": 1000}
    manifests["pc-low"] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": "c12-batch-low"}, "value": 999}
    jobs = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name),
             "spec": {"template": {"spec": _pod_spec(priorityClassName=pc)}}}
            for name, pc in (("high", "c12-batch-high"), ("low", "c12-batch-low"))]
    assert whole(_judge(*jobs, manifests=manifests)) == [
        finding("Job", "high", "spec.template.spec.priorityClassName", "c12-batch-high",
                "PriorityClass 'c12-batch-high' (1000)")]


def test_a_pod_priority_class_name_is_no_workload_priority_class():
    """Kills `value is not None or obj.is_kueue(...)` (check 28): a label naming a scheduling.k8s.io
    PriorityClass names no WorkloadPriorityClass (Kueue looks the label up among WorkloadPriorityClasses only)."""
    manifests = compliant()
    manifests["pc-high"] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": "c12-batch-high"}, "value": 5000}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("j", {LABEL: "c12-batch-high"}),
           "spec": {"template": {"spec": _pod_spec()}}}
    assert _judge(job, manifests=manifests) == []


@pytest.mark.parametrize(("priority", "found"), [(1000, True), (999, False), (None, False)])
def test_a_kueue_workloads_own_priority_is_judged(priority, found):
    """Kills the Workload `spec.priority` branch (high_priorities 68-85): a Workload whose priority is at or above
    inference's 1000 is refused at spec.priority; 999 or none is not."""
    spec: dict = {"queueName": "c12-training-lq", "podSets": [{"name": "main", "count": 1,
                                                               "template": {"spec": _pod_spec()}}]}
    if priority is not None:
        spec["priority"] = priority
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": _meta("wl"), "spec": spec}
    expected = [finding("Workload", "wl", "spec.priority", 1000, "priority 1000")] if found else []
    assert whole(_judge(workload)) == expected


def _unlabelled_inference(manifests: dict) -> dict:
    del manifests["inference-cq"]["metadata"]["labels"]
    return manifests


LABELLED_JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("j", {LABEL: "c12-inference-prio"}),
                "spec": {"template": {"spec": _pod_spec()}}}
LABELLED_FINDING = finding("Job", "j", f'metadata.labels["{LABEL}"]', "c12-inference-prio",
                           "WorkloadPriorityClass 'c12-inference-prio' (1000)")


@pytest.mark.parametrize("options", [{"inferenceClusterQueues": ["c12-inference-cq"]},
                                     {"clusterQueueRoles": {"c12-inference-cq": "inference",
                                                            "c12-training-cq": "training"}}])
def test_inference_declared_in_the_policy_config_guards_the_tree(options):
    """Kills the declared inference queues of the config (guarded_namespaces 2-10, check 7): the inference
    ClusterQueue carries no role label here; the config declares it."""
    assert whole(_judge(LABELLED_JOB, manifests=_unlabelled_inference(compliant()), options=options)) == [
        LABELLED_FINDING]


def test_inference_priority_classes_declared_in_the_policy_config_set_the_floor():
    """Kills `roles_of(objects, None)` (guarded_namespaces 35): the inference class carries no role label; the
    config's inferencePriorityClasses names it, and its value is the floor."""
    manifests = compliant()
    manifests["inference-prio"] = priority_class("c12-inference-prio", 1000)
    assert whole(_judge(LABELLED_JOB, manifests=manifests,
                        options={"inferencePriorityClasses": ["c12-inference-prio"]})) == [LABELLED_FINDING]


def test_workloads_of_inferences_own_namespace_are_not_judged():
    """Kills the `and`s turned `or` of guarded_namespaces (26-28): c12-inference is the inference queue's own
    namespace, where inference's priority belongs."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "serve", "namespace": "c12-inference", "labels": {LABEL: "c12-inference-prio"}},
                  "spec": {"template": {"spec": _pod_spec(priorityClassName="system-cluster-critical")}}}
    assert _judge(deployment) == []


def test_workload_priority_classes_from_the_policy_config_are_known():
    """Kills the priorityClasses option read (check 14-17): a class outside the stack, declared in the config at
    5000, is above inference's 1000."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("j", {LABEL: "c12-urgent"}),
           "spec": {"template": {"spec": _pod_spec()}}}
    assert whole(_judge(job, options={"priorityClasses": {"c12-urgent": 5000}})) == [
        finding("Job", "j", f'metadata.labels["{LABEL}"]', "c12-urgent", "WorkloadPriorityClass 'c12-urgent' (5000)")]


def test_a_stack_without_an_inference_priority_judges_nothing():
    """Kills `floor is None and not namespaces` (check 10): with no inference WorkloadPriorityClass there is no
    floor to compare with."""
    manifests = compliant()
    del manifests["inference-prio"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("p"),
           "spec": _pod_spec(priorityClassName="system-node-critical")}
    assert _judge(pod, manifests=manifests) == []


def test_every_offending_workload_is_reported_and_the_objects_may_be_any_iterable():
    """Kills `found = guarded(...)` (62) and the `objects` list handling (check 3, 4): two offending workloads
    before a clean one, the stack given as a generator."""
    manifests = compliant()
    del manifests["job"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("p"),
           "spec": _pod_spec(priorityClassName="system-node-critical")}
    clean = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("q"), "spec": _pod_spec()}
    manifests.update({"a": LABELLED_JOB, "b": pod, "c": clean})
    found = check_training_priority_below_inference((obj for obj in stack(manifests)), {})
    assert whole(found) == [LABELLED_FINDING, finding("Pod", "p", "spec.priorityClassName", "system-node-critical",
                                                      "PriorityClass 'system-node-critical' (2000001000)")]


def test_an_unknown_priority_class_name_fails_closed_on_its_workload():
    """Kills `guarded(None, judge)` (64): the fail-closed finding names the workload."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("j"),
           "spec": {"template": {"spec": _pod_spec(priorityClassName=UNKNOWN)}}}
    manifests = compliant()
    del manifests["job"]
    found = check_training_priority_below_inference([*stack(manifests), kube("j", job)], {})
    assert [(v.policy, v.subject, v.field, v.value) for v in found] == [
        ("unknown-at-preview", ObjectRef("Job", "c12-training", "j"), "spec.template.spec.priorityClassName",
         MISSING)]


@pytest.mark.parametrize("where", ["label", "priorityClassName"])
def test_a_name_that_is_no_string_names_no_class(where):
    """Kills `isinstance(name, str) or True` (high_priorities 27, 55): a label or priorityClassName written as a
    map (which the apiserver would refuse) names no class, and is no crash."""
    bad: Any = {"name": "c12-inference-prio"}
    labels = {LABEL: bad} if where == "label" else {}
    spec = _pod_spec(priorityClassName=bad) if where != "label" else _pod_spec()
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("j", labels),
           "spec": {"template": {"spec": spec}}}
    assert _judge(job) == []


def test_only_a_scheduling_priority_class_sets_a_pods_priority():
    """Kills `value is not None or obj.is_kind(...)` (check 35): another object with a top-level `value` (a custom
    resource of the same name) is no PriorityClass; a pod naming that name gets no priority from it."""
    manifests = compliant()
    manifests["threshold"] = {"apiVersion": "example.com/v1", "kind": "Threshold",
                              "metadata": {"name": "c12-batch-high"}, "value": 5000}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("j"),
           "spec": {"template": {"spec": _pod_spec(priorityClassName="c12-batch-high")}}}
    assert _judge(job, manifests=manifests) == []
