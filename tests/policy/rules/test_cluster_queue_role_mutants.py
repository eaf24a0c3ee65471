"""cluster-queue-role: what the policy-cluster-queue-role mutation run found no test pinning down. Cohort trees are
followed to their root (Kueue v0.19.2 `apis/kueue/v1beta2/cohort_types.go` `spec.parentName`), on both sides: the
inference queue's and the undecided queue's; a cohortName unknown at preview counts as sharing (fail closed).
Whole findings through the rule book.
"""
from __future__ import annotations

from typing import Any

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef
from tests.policy.fixtures import GPU_RESOURCES, UNKNOWN, cluster_queue, compliant, stack
from tests.policy.vocabulary.test_roles import unlabelled

POLICY = "cluster-queue-role"
FIELD = 'metadata.labels["kueue-cohorts/role"]'
ZERO = {k: "0" for k in GPU_RESOURCES}


def findings(m: dict[str, dict]) -> list[tuple[Any, ...]]:
    """(policy, subject, field, value, message) of the policy's findings through the rule book."""
    return [(v.policy, v.subject, v.field, v.value, v.message) for rule, v in run(stack(m), {}) if rule.name == POLICY]


def undecided(name: str, tree: str, inference: str) -> tuple[Any, ...]:
    return (POLICY, ObjectRef("ClusterQueue", None, name), FIELD, MISSING,
            f"The ClusterQueue '{name}' has {FIELD} = missing: a ClusterQueue in cohort '{tree}' with the inference "
            f"{inference} must have a known role (inference, training or tenant), because otherwise the pack cannot "
            "judge whether it may borrow the inference quota; label it kueue-cohorts/role: training (or tenant, or "
            "inference), or declare its role in the policy pack config generated from the stack file.")


def _cohort(name: str, parent: str) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name},
            "spec": {"parentName": parent}}


def test_queues_in_sibling_cohorts_share_the_tree_of_their_root():
    """Two inference queues in Cohort 'serving' and an unlabelled queue in Cohort 'batch', both children of
    'c12-shared': one tree, so the unlabelled queue is reported, naming the root and both inference queues (before,
    "the inference ClusterQueue 'a', 'b'": now plural). Kills the mutants that key either side by its own cohort
    instead of the root, and of the names' join."""
    m = compliant()
    m["serving"], m["batch"] = _cohort("serving", "c12-shared"), _cohort("batch", "c12-shared")
    m["inference-cq"]["spec"]["cohortName"] = "serving"
    m["inf2"] = cluster_queue("inf-2-cq", "inference", ZERO, ZERO, cohort="serving")
    m["mystery"] = unlabelled("mystery-cq", cohort="batch")
    assert findings(m) == [undecided("mystery-cq", "c12-shared", "ClusterQueues 'c12-inference-cq', 'inf-2-cq'")]


def test_a_queue_whose_cohort_is_unknown_shares_the_first_inference_tree():
    """An unlabelled queue whose cohortName is unknown at preview may be in inference's tree: reported under the
    first inference tree (kills the mutants of that fallback)."""
    m = compliant()
    m["mystery"] = unlabelled("mystery-cq")
    m["mystery"]["spec"]["cohortName"] = UNKNOWN
    assert findings(m) == [undecided("mystery-cq", "c12-shared", "ClusterQueue 'c12-inference-cq'")]


def test_a_queue_whose_cohort_is_unknown_without_any_inference_tree_passes():
    """No inference queue is in a cohort: nothing for the unknown cohort to share (kills `next` without a
    default, which raises StopIteration)."""
    m = compliant()
    del m["inference-cq"]["spec"]["cohortName"]
    m["mystery"] = unlabelled("mystery-cq")
    m["mystery"]["spec"]["cohortName"] = UNKNOWN
    assert findings(m) == []


def test_an_inference_queue_of_unknown_cohort_and_an_outside_queue_do_not_stop_the_search():
    """Listed first: an inference queue whose cohortName is unknown (skipped when trees are built) and an unlabelled
    queue in another tree (passes); the unlabelled queue of inference's tree is still reported (kills both
    `continue`s made `break`)."""
    m = compliant()
    lost = cluster_queue("a-lost-cq", "inference", ZERO, ZERO)
    lost["spec"]["cohortName"] = UNKNOWN
    m = {"lost": lost, "outside": unlabelled("a-outside-cq", cohort="c13-shared"), **m,
         "mystery": unlabelled("mystery-cq")}
    assert [f for f in findings(m) if f[0] == POLICY] == [
        undecided("mystery-cq", "c12-shared", "ClusterQueue 'c12-inference-cq'")]
