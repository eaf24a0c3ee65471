"""workload-priority-class (promise 3): what the policy-workload-priority-class mutation run found no test pinning
down: whole findings (policy, subject, field, value, rule, fix) of every kind, the policy as the pack runs it with
its options, classes declared by name, every label set of a workload, and which inference and training priorities
are compared. Upstream: Kueue v0.19.2 `pkg/controller/constants/constants.go` (labels `kueue.x-k8s.io/queue-name`,
`kueue.x-k8s.io/priority-class`), `apis/kueue/v1beta2/workloadpriorityclass_types.go` (top-level `value`, int32);
a workload without the label gets priority 0."""
from __future__ import annotations

from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, Violation
from kueue_cohorts.policy.rules.workload_priority_class import WORKLOAD_PRIORITY_CLASS, check_workload_priority_class
from tests.policy.fixtures import UNKNOWN, compliant, local_queue, priority_class, stack

POLICY = "workload-priority-class"
LABEL = "kueue.x-k8s.io/priority-class"
QUEUE = "kueue.x-k8s.io/queue-name"
JOB = ObjectRef("Job", "c12-training", "warmup")
KNOWN = "'c12-inference-prio', 'c12-training-prio'"


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix) for v in found]


def _rank_finding(subject: ObjectRef, field: str, value: int, floor: int) -> tuple:
    return (POLICY, subject, field, value, f"training priority must be below the inference priority {floor}",
            f"set it below {floor} (the guide uses 10 against 1000)")


def test_a_policy_config_class_without_an_integer_value_is_reported():
    """Kills the config finding's sentence (check 17, 18)."""
    found = check_workload_priority_class(stack(compliant()), priority_classes={"urgent": "high"})
    assert found == [Violation("The workload-priority-class policy config gives priorityClasses['urgent'] the value "
                               "'high'; give the WorkloadPriorityClass value as an integer.")]


def test_a_class_without_an_integer_value_is_one_whole_finding_and_the_next_class_still_counts():
    """Kills the value finding (33-60) and its `continue` -> `break` (61): c12-broken-prio comes first; the
    compliant classes after it are still known."""
    manifests = {"broken": priority_class("c12-broken-prio", "high"), **compliant()}
    found = check_workload_priority_class(stack(manifests))
    assert whole(found) == [(POLICY, ObjectRef("WorkloadPriorityClass", None, "c12-broken-prio"), "value", "high",
                             "a WorkloadPriorityClass value is an int32", "set its top-level value to an integer")]
    assert found[0].message == ("The WorkloadPriorityClass 'c12-broken-prio' has no integer value; set its top-level "
                                "value field.")


def test_an_unknown_class_value_fails_closed_on_the_class():
    """Kills `unknown_violation(None/…)` and `append(None)` (77-81)."""
    manifests = compliant()
    manifests["training-prio"] = priority_class("c12-training-prio", UNKNOWN, "training")
    found = check_workload_priority_class(stack(manifests))
    assert [(v.policy, v.subject, v.field) for v in found][:1] == [
        ("unknown-at-preview", ObjectRef("WorkloadPriorityClass", None, "c12-training-prio"), "value")]


def test_a_missing_label_is_one_whole_finding_and_knows_none_without_classes():
    """Kills the missing-label finding (98-117) and `known` "none" (89, 90)."""
    manifests = compliant()
    del manifests["inference-prio"], manifests["training-prio"], manifests["isvc"]
    del manifests["job"]["metadata"]["labels"][LABEL], manifests["job"]["spec"]["template"]["metadata"]["labels"][LABEL]
    found = check_workload_priority_class(stack(manifests))
    assert whole(found)[0] == (
        POLICY, JOB, f'metadata.labels["{LABEL}"]', MISSING,
        "a queued workload must name its WorkloadPriorityClass (without it Kueue gives priority 0)",
        f"add the label {LABEL} naming a WorkloadPriorityClass of the stack")
    assert found[0].message.endswith("naming a WorkloadPriorityClass of the stack (known: none).")
    assert [v.field for v in found] == [f'metadata.labels["{LABEL}"]', f'spec.template.metadata.labels["{LABEL}"]']


def test_an_unknown_class_is_one_whole_finding_and_the_next_label_set_is_still_judged():
    """Kills the unknown-class finding (122-137) and `continue` -> `break` after it (140) and after a missing label
    (118): the Job's metadata names `urgent`, its pod template names nothing."""
    manifests = compliant()
    manifests["job"]["metadata"]["labels"][LABEL] = "urgent"
    del manifests["job"]["spec"]["template"]["metadata"]["labels"][LABEL]
    found = check_workload_priority_class(stack(manifests))
    assert whole(found) == [
        (POLICY, JOB, f'metadata.labels["{LABEL}"]', "urgent",
         "names a WorkloadPriorityClass the stack does not define", f"use one of {KNOWN}"),
        (POLICY, JOB, f'spec.template.metadata.labels["{LABEL}"]', MISSING,
         "a queued workload must name its WorkloadPriorityClass (without it Kueue gives priority 0)",
         f"add the label {LABEL} naming a WorkloadPriorityClass of the stack")]
    manifests = compliant()
    del manifests["job"]["metadata"]["labels"][LABEL]
    manifests["job"]["spec"]["template"]["metadata"]["labels"][LABEL] = "urgent"
    assert [(v.field, v.value) for v in check_workload_priority_class(stack(manifests))] == [
        (f'metadata.labels["{LABEL}"]', MISSING), (f'spec.template.metadata.labels["{LABEL}"]', "urgent")]


def test_a_training_class_at_inferences_value_is_reported_on_the_class_itself():
    """Kills the ranking finding's policy, subject, field, value, rule and fix (197-214) and `wpc_objects` (63,
    161-169): the finding is on the WorkloadPriorityClass's `value`, which is what to change."""
    manifests = compliant()
    manifests["training-prio"] = priority_class("c12-training-prio", 1000, "training")
    assert whole(check_workload_priority_class(stack(manifests))) == [
        _rank_finding(ObjectRef("WorkloadPriorityClass", None, "c12-training-prio"), "value", 1000, 1000)]


def test_classes_declared_by_name_are_ranked_without_role_labels():
    """Kills the declared roles (70, 72): neither class carries kueue-cohorts/role; the config declares them."""
    manifests = compliant()
    del manifests["isvc"], manifests["job"]
    manifests["inference-prio"] = priority_class("c12-inference-prio", 1000)
    manifests["training-prio"] = priority_class("c12-training-prio", 2000)
    found = check_workload_priority_class(stack(manifests), inference_priority_classes=["c12-inference-prio"],
                                          training_priority_classes=["c12-training-prio"])
    assert whole(found) == [
        _rank_finding(ObjectRef("WorkloadPriorityClass", None, "c12-training-prio"), "value", 2000, 1000)]
    assert found[0].message == (
        "The inference priority must be above every training priority, but the WorkloadPriorityClass "
        "'c12-inference-prio' (1000) is not above the WorkloadPriorityClass 'c12-training-prio' (2000); give inference "
        "a WorkloadPriorityClass with a higher value than any training one.")


def test_a_stack_without_training_priorities_compares_nothing():
    """Kills `ranked[...] or ranked[...]` (175): with no training side there is nothing to be below."""
    manifests = compliant()
    del manifests["training-prio"], manifests["job"]
    assert check_workload_priority_class(stack(manifests), priority_classes={"c12-training-prio": 10}) == []


def test_the_lowest_inference_and_the_highest_training_value_are_compared_not_the_names():
    """Kills the min/max keys (178-191): inference runs at 1000 (c12-inference-prio) and 2000 (c12-a-prio),
    training at 10 and 1500 (c12-b-prio, c12-z-prio); 1000 is not above 1500."""
    manifests = compliant()
    manifests["a"] = priority_class("c12-a-prio", 2000, "inference")
    manifests["b"] = priority_class("c12-b-prio", 10, "training")
    manifests["z"] = priority_class("c12-z-prio", 1500, "training")
    del manifests["training-prio"], manifests["job"], manifests["isvc"]
    found = check_workload_priority_class(stack(manifests))
    assert whole(found) == [_rank_finding(ObjectRef("WorkloadPriorityClass", None, "c12-z-prio"), "value", 1500, 1000)]


def test_of_two_training_classes_at_the_same_value_the_later_name_is_reported():
    """Kills the tie-break on the description (191): both at 1000; the finding names c12-z-prio."""
    manifests = compliant()
    manifests["a"] = priority_class("c12-a-prio", 1000, "training")
    manifests["z"] = priority_class("c12-z-prio", 1000, "training")
    del manifests["training-prio"], manifests["job"]
    assert [v.subject for v in check_workload_priority_class(stack(manifests))] == [
        ObjectRef("WorkloadPriorityClass", None, "c12-z-prio")]


def test_a_workloads_queue_is_looked_up_in_its_own_namespace():
    """Kills `cluster_queue_of(None, ...)` (142): a LocalQueue named `shared-lq` in both namespaces; the training
    Job's, in c12-training, is the training queue's, so its inference class ranks training at 1000."""
    manifests = compliant()
    manifests["shared-i"] = local_queue("shared-lq", "c12-inference", "c12-inference-cq")
    manifests["shared-t"] = local_queue("shared-lq", "c12-training", "c12-training-cq")
    for labels in (manifests["job"]["metadata"]["labels"], manifests["job"]["spec"]["template"]["metadata"]["labels"]):
        labels.update({QUEUE: "shared-lq", LABEL: "c12-inference-prio"})
    assert whole(check_workload_priority_class(stack(manifests))) == [
        _rank_finding(ObjectRef("WorkloadPriorityClass", None, "c12-inference-prio"), "value", 1000, 1000)]


def test_a_label_set_on_a_queue_outside_the_stack_does_not_hide_the_next():
    """Kills `continue` -> `break` (152): the Job's metadata queues to a LocalQueue outside the stack, its pod
    template to the training queue with inference's class."""
    manifests = compliant()
    manifests["job"]["metadata"]["labels"][QUEUE] = "c12-elsewhere-lq"
    manifests["job"]["spec"]["template"]["metadata"]["labels"][LABEL] = "c12-inference-prio"
    assert [v.subject for v in check_workload_priority_class(stack(manifests))] == [
        ObjectRef("WorkloadPriorityClass", None, "c12-inference-prio")]


def test_the_policy_reads_its_options():
    """Kills `_check`'s arguments (1-18) and `role_of(cq, )` (159): through the policy as the pack runs it, with no
    role label anywhere: the config declares the inference ClusterQueue, the inference classes c12-inference-prio
    (1000) and c12-low-prio (500), the training class c12-training-prio (2000), and c12-top-prio (5000) from outside
    the stack, which a Deployment on the inference queue names. Inference's lowest, 500, is not above training's
    2000."""
    manifests = compliant()
    del manifests["inference-cq"]["metadata"]["labels"]
    manifests["inference-prio"] = priority_class("c12-inference-prio", 1000)
    manifests["training-prio"] = priority_class("c12-training-prio", 2000)
    manifests["low-prio"] = priority_class("c12-low-prio", 500)
    del manifests["isvc"]  # an InferenceService would make its queue inference by itself (vocabulary/roles.py)
    manifests["serve"] = {"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "serve", "namespace": "c12-inference",
                                       "labels": {QUEUE: "c12-inference-lq", LABEL: "c12-top-prio"}},
                          "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "vllm"}]}}}}
    options = {"inferenceClusterQueues": ["c12-inference-cq"], "priorityClasses": {"c12-top-prio": 5000},
               "inferencePriorityClasses": ["c12-inference-prio", "c12-low-prio"],
               "trainingPriorityClasses": ["c12-training-prio"]}
    found = WORKLOAD_PRIORITY_CLASS.check(stack(manifests), options)
    assert whole(found) == [
        _rank_finding(ObjectRef("WorkloadPriorityClass", None, "c12-training-prio"), "value", 2000, 500)]
    assert found[0].message == (
        "The inference priority must be above every training priority, but the WorkloadPriorityClass 'c12-low-prio' "
        "(500) is not above the WorkloadPriorityClass 'c12-training-prio' (2000); give inference a "
        "WorkloadPriorityClass with a higher value than any training one.")
