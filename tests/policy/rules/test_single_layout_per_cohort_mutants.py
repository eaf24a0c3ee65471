"""single-layout-per-cohort: what the policy-single-layout-per-cohort mutation run found no test pinning down.

A cohort mixes layouts when it holds an owner ClusterQueue (borrowingLimit 0 on every quota entry; Kueue v0.19.2
`apis/kueue/v1beta2/clusterqueue_types.go`: a missing borrowingLimit is unlimited) and a floor-and-borrow one
(nominalQuota above 0 somewhere and allowed to borrow somewhere). Whole findings through the rule book.
"""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef
from tests.policy.fixtures import GPU_RESOURCES, UNKNOWN, cluster_queue, compliant, stack, urn

POLICY = "single-layout-per-cohort"
RULE = ("a cohort uses one layout: it must not mix owner ClusterQueues (borrowingLimit 0) with symmetric "
        "floor-and-borrow ClusterQueues")
ZERO = {k: "0" for k in GPU_RESOURCES}


def findings(manifests: dict[str, dict]) -> list[tuple[Any, ...]]:
    """(policy, urn, subject, field, value, rule, fix, message) of the policy's findings."""
    return [(v.policy, v.urn, v.subject, v.field, v.value, v.rule, v.fix, v.message)
            for rule, v in run(stack(manifests), {}) if rule.name == POLICY]


def mixed(cohort: str, owners: str, floors: str) -> str:
    return (f"The cohort '{cohort}' mixes owner ClusterQueues with borrowingLimit 0 ({owners}) and symmetric "
            f"floor-and-borrow ClusterQueues ({floors}); use one layout per cohort: either give the other queues "
            "nominalQuota 0 so they only borrow (asymmetric), or let every queue borrow above its floor (symmetric).")


def test_a_mixed_cohort_is_one_whole_finding_on_its_first_floor_queue():
    """Owners 'c12-inference-cq' and 'owner-2', floor-and-borrow 'team-a-cq' and 'team-b-cq' (a cpu floor of 2, no
    borrowingLimit): one finding on 'team-a-cq' at spec.cohortName naming all four in stack order (kills the
    mutants of the names, the field, the value, the rule and the fix)."""
    manifests = compliant()
    manifests["owner-2"] = cluster_queue("owner-2", "inference", {**ZERO, "cpu": "1"}, ZERO)
    manifests["team-a"] = cluster_queue("team-a-cq", "tenant", {**ZERO, "cpu": "2"}, None)
    manifests["team-b"] = cluster_queue("team-b-cq", "tenant", {**ZERO, "cpu": "2"}, None)
    assert findings(manifests) == [(
        POLICY, urn("team-a", manifests["team-a"]), ObjectRef("ClusterQueue", None, "team-a-cq"), "spec.cohortName",
        "c12-shared", RULE, "give each layout its own cohort",
        mixed("c12-shared", "'c12-inference-cq', 'owner-2'", "'team-a-cq', 'team-b-cq'"))]


@pytest.mark.parametrize("nominal, borrowing", [
    ({**ZERO, "cpu": "2"}, {**ZERO, "memory": "1Gi"}),      # a floor, and one resource it may borrow
    ({**ZERO, "cpu": "500m"}, {**ZERO, "cpu": "500m"}),     # fractions count: 0.5 > 0
    ({**ZERO, "memory": "1Gi"}, {**ZERO, "cpu": "1"}),      # the floor and the borrowing on different resources
])
def test_floor_and_borrow_is_any_floor_and_any_borrowing(nominal, borrowing):
    """One entry with nominalQuota above 0 and one whose borrowingLimit is above 0 make a floor-and-borrow queue
    beside the owner (kills the mutants of `any`, `> 0` and the limit parse)."""
    manifests = compliant()
    manifests["team"] = cluster_queue("team-cq", "tenant", nominal, borrowing)
    assert [(f[2], f[7]) for f in findings(manifests)] == [
        (ObjectRef("ClusterQueue", None, "team-cq"), mixed("c12-shared", "'c12-inference-cq'", "'team-cq'"))]


@pytest.mark.parametrize("nominal, borrowing", [
    (ZERO, None),                                           # a pure borrower: no floor
    ({**ZERO, "cpu": "2"}, ZERO),                           # a second owner
    ({**ZERO, "cpu": "lots"}, None),                         # a floor that is no quantity counts for nothing
])
def test_borrowers_and_owners_do_not_mix(nominal, borrowing):
    """A queue with nominalQuota 0 that borrows (the asymmetric layout's borrower), a second owner, and a queue whose
    only floor is no quantity: none is floor-and-borrow, nothing is reported."""
    manifests = compliant()
    manifests["team"] = cluster_queue("team-cq", "tenant", nominal, borrowing)
    assert findings(manifests) == []


def test_a_missing_borrowing_limit_on_one_entry_is_no_owner():
    """borrowingLimit 0 on every entry but one, which has none (unlimited): not an owner; with its floor it is
    floor-and-borrow, so 'c12-inference-cq' (the owner) and it mix (kills `all(... limit is not None ...)`)."""
    manifests = compliant()
    manifests["team"] = cluster_queue("team-cq", "tenant", {**ZERO, "cpu": "1"}, ZERO)
    del manifests["team"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["borrowingLimit"]
    assert [f[7] for f in findings(manifests)] == [mixed("c12-shared", "'c12-inference-cq'", "'team-cq'")]


def test_each_cohort_is_judged_apart_and_queues_outside_any_cohort_are_not():
    """An owner in cohort 'serving' and a floor-and-borrow queue in cohort 'batch' do not mix; a floor-and-borrow
    queue without cohortName is in no cohort; a queue without quota has no layout. Only 'c12-shared', which holds
    both kinds, is reported (kills the cohort grouping's mutants)."""
    manifests = compliant()
    manifests["serving"] = cluster_queue("serve-2", "inference", {**ZERO, "cpu": "1"}, ZERO, cohort="serving")
    manifests["batch"] = cluster_queue("batch-cq", "tenant", {**ZERO, "cpu": "2"}, None, cohort="batch")
    alone = cluster_queue("alone-cq", "tenant", {**ZERO, "cpu": "2"}, None)
    del alone["spec"]["cohortName"]
    manifests["alone"] = alone
    empty = cluster_queue("empty-cq", "tenant", ZERO, None)
    empty["spec"]["resourceGroups"] = []
    manifests["empty"] = empty
    manifests["team"] = cluster_queue("team-cq", "tenant", {**ZERO, "cpu": "2"}, None)
    assert [(f[2], f[4]) for f in findings(manifests)] == [(ObjectRef("ClusterQueue", None, "team-cq"), "c12-shared")]


def test_an_unknown_quota_fails_closed_and_the_others_are_still_judged():
    """A queue whose resourceGroups are unknown at preview: its fail-closed finding, and the mix of the others is
    still reported (kills the mutants of the `continue` after it)."""
    manifests = compliant()
    manifests = {"unknown": cluster_queue("unknown-cq", "tenant", ZERO, None), **manifests}
    manifests["unknown"]["spec"]["resourceGroups"] = UNKNOWN
    manifests["team"] = cluster_queue("team-cq", "tenant", {**ZERO, "cpu": "2"}, None)
    assert [(f[0], f[2], f[3], f[4]) for f in findings(manifests)] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "unknown-cq"), "spec.resourceGroups", MISSING),
        (POLICY, ObjectRef("ClusterQueue", None, "team-cq"), "spec.cohortName", "c12-shared")]


def test_a_negative_borrowing_limit_is_no_permission_to_borrow():
    """borrowingLimit 0 everywhere but '-1' on cpu (Kueue's validation refuses a negative limit; the quantities policy
    reports it): the queue is no owner, and -1 lets it borrow nothing, so with its floor it is not floor-and-borrow
    either (kills `limit > 0` made `>= 0`)."""
    manifests = compliant()
    manifests["team"] = cluster_queue("team-cq", "tenant", {**ZERO, "cpu": "2"}, {**ZERO, "cpu": "-1"})
    assert findings(manifests) == []


def test_a_stray_cohort_name_on_a_local_queue_is_no_member():
    """A LocalQueue manifest carrying `spec.cohortName` and quota (not in its schema: the apiserver prunes them) is no
    floor-and-borrow ClusterQueue of the cohort (kills `is_kueue(None)`)."""
    manifests = compliant()
    stray = cluster_queue("stray", "tenant", {**ZERO, "cpu": "2"}, None)
    manifests["training-lq"]["spec"].update(cohortName="c12-shared", resourceGroups=stray["spec"]["resourceGroups"])
    assert findings(manifests) == []
