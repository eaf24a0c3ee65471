"""single-layout-per-cohort (cohort-nominal-within-capacity: test_cohort_nominal_within_capacity.py)."""
from __future__ import annotations

from kueue_cohorts.policy.rules.single_layout_per_cohort import check_single_layout_per_cohort
from tests.policy.fixtures import DEV_CAPACITY, GPU_RESOURCES, cluster_queue, compliant, messages, stack, urn


def _res(m):
    return m["spec"]["resourceGroups"][0]["flavors"][0]["resources"]


def test_compliant_stack_has_one_layout_per_cohort():
    assert check_single_layout_per_cohort(stack(compliant())) == []


# --- single-layout-per-cohort ----------------------------------------------------------------------------------------

def test_owner_mixed_with_floor_and_borrow_queue_is_reported():
    manifests = compliant()
    floor = {k: "0" for k in GPU_RESOURCES}
    floor["cpu"] = "2"
    manifests["tenant"] = cluster_queue("team-a-cq", "tenant", floor, None)
    violations = check_single_layout_per_cohort(stack(manifests))
    assert messages(violations) == [
        "The cohort 'c12-shared' mixes owner ClusterQueues with borrowingLimit 0 ('c12-inference-cq') and symmetric "
        "floor-and-borrow ClusterQueues ('team-a-cq'); use one layout per cohort: either give the other queues "
        "nominalQuota 0 so they only borrow (asymmetric), or let every queue borrow above its floor (symmetric)."]
    assert violations[0].urn == urn(
        "tenant", manifests["tenant"]
    )  # the floor-and-borrow queue joined the owner's cohort


def test_symmetric_cohort_alone_is_fine():
    floor = dict(DEV_CAPACITY, cpu="2")
    manifests = {"a": cluster_queue("a-cq", "tenant", floor, None, cohort="pool"),
                 "b": cluster_queue("b-cq", "tenant", floor, None, cohort="pool")}
    assert check_single_layout_per_cohort(stack(manifests)) == []
