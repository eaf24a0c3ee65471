"""cluster-queue-role (kueue_cohorts/policy/rules/cluster_queue_role.py): a
ClusterQueue in an inference cohort tree whose role the stack does not decide fails closed; labelled roles pass."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.cluster_queue_role import check_undecided
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.roles import classify
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import GPU_RESOURCES, cluster_queue, compliant, stack
from tests.policy.vocabulary.test_roles import NOMINAL, POLICY, ROLE, unlabelled

ZERO = {k: "0" for k in GPU_RESOURCES}


def test_compliant_stack_roles():
    roles = classify(stack(compliant()))
    assert roles.role("c12-inference-cq") == "inference" and roles.role("c12-training-cq") == "training"
    assert roles.inference() == {"c12-inference-cq"}
    assert roles.undecided() == []
    assert roles.why("c12-inference-cq")[0] == "it is labelled kueue-cohorts/role: inference"
    assert roles.inference_floor == 1000
    assert check_undecided(stack(compliant()), roles, POLICY) == []


def test_undecided_queue_in_the_inference_cohort_fails_closed():
    m = compliant()
    m["mystery-cq"] = unlabelled("mystery-cq", borrowing=NOMINAL)
    objects = stack(m)
    roles = classify(objects)
    [found] = check_undecided(objects, roles, POLICY)
    assert (found.subject, found.field, found.value, found.policy) == (
        ObjectRef("ClusterQueue", None, "mystery-cq"), f'metadata.labels["{ROLE}"]', MISSING, POLICY)
    assert found.rule == ("a ClusterQueue in cohort 'c12-shared' with the inference ClusterQueue 'c12-inference-cq' "
                          "must have a known role (inference, training or tenant), because otherwise the pack cannot "
                          "judge whether it may borrow the inference quota")
    assert found.fix == ("label it kueue-cohorts/role: training (or tenant, or inference), or declare its role in the "
                         "policy pack config generated from the stack file")
    assert check_undecided(objects, classify(objects, {"mystery-cq": "training"}), POLICY) == []


def test_unknown_role_label_value_is_undecided():
    m = compliant()
    m["mystery-cq"] = cluster_queue("mystery-cq", "batch", ZERO, NOMINAL)
    [found] = check_undecided(stack(m), classify(stack(m)), POLICY)
    assert found.value == "batch"


def test_undecided_queue_elsewhere_passes():
    m = compliant()
    m["other-cq"] = unlabelled("other-cq", cohort="c13-shared")
    m["lonely-cq"] = unlabelled("lonely-cq")
    del m["lonely-cq"]["spec"]["cohortName"]
    assert check_undecided(stack(m), classify(stack(m)), POLICY) == []


@given(st.lists(st.sampled_from(["inference", "training", "tenant", None, "other"]), min_size=1, max_size=5))
def test_labelled_roles_are_decided_and_the_rest_fail_closed(labels):
    m = compliant()
    for i, label in enumerate(labels):
        cq = unlabelled(f"q{i}")
        if label:
            cq["metadata"]["labels"] = {ROLE: label}
        m[f"q{i}"] = cq
    objects = stack(m)
    roles = classify(objects)
    for i, label in enumerate(labels):
        assert roles.role(f"q{i}") == (label if label in ("inference", "training", "tenant") else None)
    flagged = {v.subject.name for v in check_undecided(objects, roles, POLICY)}
    assert flagged == {f"q{i}" for i, label in enumerate(labels) if label not in ("inference", "training", "tenant")}
