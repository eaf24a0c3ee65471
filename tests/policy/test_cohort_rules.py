"""cohort-nominal-within-capacity and single-layout-per-cohort."""
from __future__ import annotations

from policy.rules.cohort import check_cohort_nominal_within_capacity, check_single_layout_per_cohort
from tests.policy.fixtures import DEV_CAPACITY, GPU_RESOURCES, UNKNOWN, cluster_queue, compliant, messages, stack, urn


def _res(m):
    return m["spec"]["resourceGroups"][0]["flavors"][0]["resources"]


def test_compliant_stack_fits_dev_capacity():
    assert check_cohort_nominal_within_capacity(stack(compliant()), DEV_CAPACITY) == []
    assert check_single_layout_per_cohort(stack(compliant())) == []


def test_sum_above_capacity_fails_and_lists_contributors():
    manifests = compliant()
    _res(manifests["training-cq"])[3]["nominalQuota"] = "10"
    violations = check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)
    assert messages(violations) == [
        "The cohort 'c12-shared' reserves 30 of resource 'nvidia.com/gpucores' in nominalQuota (ClusterQueue "
        "'c12-inference-cq' 20, ClusterQueue 'c12-training-cq' 10) but the physical capacity is 20; lower the "
        "nominalQuota values, or raise capacity['nvidia.com/gpucores'] in the cohort-nominal-within-capacity config "
        "if the cluster really grew."]
    assert violations[0].urn == urn("inference-cq", manifests["inference-cq"])  # the largest reservation (20)


def test_binary_quantities_are_summed_exactly():
    manifests = compliant()
    _res(manifests["inference-cq"])[1]["nominalQuota"] = "32768Mi"
    _res(manifests["training-cq"])[1]["nominalQuota"] = "1Gi"
    assert messages(check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)) == [
        "The cohort 'c12-shared' reserves 33Gi of resource 'memory' in nominalQuota (ClusterQueue "
        "'c12-inference-cq' 32768Mi, ClusterQueue 'c12-training-cq' 1Gi) but the physical capacity is 32Gi; lower the "
        "nominalQuota values, or raise capacity['memory'] in the cohort-nominal-within-capacity config if the "
        "cluster really grew."]


def test_cohort_object_quota_counts_on_top():
    manifests = compliant()
    manifests["cohort"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                           "metadata": {"name": "c12-shared"},
                           "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                               {"name": "c12-default", "resources": [{"name": "cpu", "nominalQuota": "5"}]}]}]}}
    assert messages(check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)) == [
        "The cohort 'c12-shared' reserves 9 of resource 'cpu' in nominalQuota (ClusterQueue 'c12-inference-cq' 4, "
        "Cohort 'c12-shared' 5) but the physical capacity is 8; lower the nominalQuota values, or raise "
        "capacity['cpu'] in the cohort-nominal-within-capacity config if the cluster really grew."]


def test_child_cohort_counts_against_its_root():
    manifests = compliant()
    manifests["root"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "org"},
                         "spec": {}}
    manifests["child"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c12-shared"},
                          "spec": {"parentName": "org"}}
    manifests["other"] = cluster_queue("other-cq", "tenant", {k: "0" for k in GPU_RESOURCES}, None, cohort="org")
    _res(manifests["other"])[0]["nominalQuota"] = "6"
    assert messages(check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)) == [
        "The cohort 'org' reserves 10 of resource 'cpu' in nominalQuota (ClusterQueue 'c12-inference-cq' 4, "
        "ClusterQueue 'other-cq' 6) but the physical capacity is 8; lower the nominalQuota values, or raise "
        "capacity['cpu'] in the cohort-nominal-within-capacity config if the cluster really grew."]


def test_quota_without_configured_capacity_fails():
    capacity = {k: v for k, v in DEV_CAPACITY.items() if k != "nvidia.com/gpumem"}
    assert messages(check_cohort_nominal_within_capacity(stack(compliant()), capacity)) == [
        "The cohort 'c12-shared' reserves 2048 of resource 'nvidia.com/gpumem' in nominalQuota (ClusterQueue "
        "'c12-inference-cq' 2048) but the policy config gives no physical capacity "
        "for 'nvidia.com/gpumem', so the reservation cannot be checked and fails; add capacity['nvidia.com/gpumem'] "
        "to the cohort-nominal-within-capacity config (policy/config/<stack>.json)."]


def test_no_capacity_config_at_all_fails_every_quota_resource():
    assert len(check_cohort_nominal_within_capacity(stack(compliant()), {})) == len(GPU_RESOURCES)


def test_zero_quota_needs_no_capacity():
    manifests = {"training-cq": compliant()["training-cq"]}
    assert check_cohort_nominal_within_capacity(stack(manifests), {}) == []


def test_queue_outside_any_cohort_is_checked_alone():
    manifests = {"solo": cluster_queue("solo-cq", "tenant", dict(DEV_CAPACITY, cpu="9"), None)}
    del manifests["solo"]["spec"]["cohortName"]
    assert messages(check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)) == [
        "The ClusterQueue 'solo-cq', which is in no cohort, reserves 9 of resource 'cpu' in nominalQuota "
        "(ClusterQueue 'solo-cq' 9) but the physical capacity is 8; lower the nominalQuota values, or raise "
        "capacity['cpu'] in the cohort-nominal-within-capacity config if the cluster really grew."]


def test_bad_capacity_config_is_reported():
    assert messages(check_cohort_nominal_within_capacity(stack(compliant()), dict(DEV_CAPACITY, cpu="eight"))) == [
        "The cohort-nominal-within-capacity policy config sets capacity['cpu'] to 'eight', which is not a Kubernetes "
        "quantity; write it like \"8\", \"32Gi\" or \"500m\"."]


def test_unknown_nominal_quota_fails_closed_and_the_rest_is_still_checked():
    manifests = compliant()
    _res(manifests["inference-cq"])[2]["nominalQuota"] = UNKNOWN
    _res(manifests["training-cq"])[0]["nominalQuota"] = "5"
    assert messages(check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)) == [
        "The ClusterQueue 'c12-inference-cq' has spec.resourceGroups[0].flavors[0].resources[2].nominalQuota unknown "
        "at preview, so this policy cannot check it and fails closed; give spec.resourceGroups[0].flavors[0]"
        ".resources[2].nominalQuota a value known at preview (a literal or stack config, not an output of another "
        "resource).",
        "The cohort 'c12-shared' reserves 9 of resource 'cpu' in nominalQuota (ClusterQueue 'c12-inference-cq' 4, "
        "ClusterQueue 'c12-training-cq' 5) but the physical capacity is 8; lower the nominalQuota values, or raise "
        "capacity['cpu'] in the cohort-nominal-within-capacity config if the cluster really grew."]


def test_missing_nominal_quota_is_reported():
    manifests = compliant()
    del _res(manifests["training-cq"])[0]["nominalQuota"]
    assert messages(check_cohort_nominal_within_capacity(stack(manifests), DEV_CAPACITY)) == [
        "The ClusterQueue 'c12-training-cq' has spec.resourceGroups[0].flavors[0].resources[0].nominalQuota missing; "
        "set nominalQuota for resource 'cpu' of flavor 'c12-default' to a quantity such as \"4\" or \"8Gi\"."]


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
