"""training-runtime-fits-queue (promise 4): what the policy-training-runtime-fits-queue mutation run found no test
pinning down: the runtime's own findings, the queues behind a namespace, quota without a borrowingLimit, several
flavors and queues, the TrainJob's overrides, and the "at most" figure of the fix.

Whole findings written out by hand. Upstream: Kueue v0.19.2 `pkg/scheduler/flavorassigner` (a PodSet fits a flavor
when nominalQuota + borrowingLimit holds it; no borrowingLimit in a cohort is no limit, outside a cohort nothing is
borrowed), `pkg/resources/requests.go` ResourceValue (cpu counted in milli-units, every other resource in whole
units, a fraction rounded up), Trainer v2.2.1 `pkg/runtime/framework/plugins/jobset/builder.go` (numNodes and
resourcesPerNode replace the runtime's, resourcesPerNode only on the container named `node`).
"""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_cohorts.policy.rules.training_runtime_fits_queue import check_training_runtime_fits_queue
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, local_queue, stack
from tests.policy.rules.test_checkpoint_safe_runtime import _container, _pod, _sized, _trainjob

POLICY = "training-runtime-fits-queue"
RUNTIME = ObjectRef("TrainingRuntime", "c12-training", "c12-checkpoint-runtime")
TRAINJOB = ObjectRef("TrainJob", "c12-training", "t1")
CONTAINER = "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0]"
OF_RUNTIME = "so Kueue can never admit a TrainJob of this runtime"
RAISE = "or raise the training ClusterQueue's borrowingLimit (within the cohort's capacity)"


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix) for v in found]


def _judge(manifests: dict) -> list:
    return check_training_runtime_fits_queue(stack(manifests))


def _nodes(manifests: dict, nodes: Any) -> dict:
    manifests["runtime"]["spec"]["mlPolicy"]["numNodes"] = nodes
    return manifests


def _training_quota(manifests: dict, **per_resource: tuple[str, Any]) -> dict:
    """Set the training ClusterQueue's (nominalQuota, borrowingLimit) per resource; borrowingLimit None: left out."""
    for entry in manifests["training-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if entry["name"] in per_resource:
            nominal, limit = per_resource[entry["name"]]
            entry["nominalQuota"] = nominal
            entry.pop("borrowingLimit", None)
            if limit is not None:
                entry["borrowingLimit"] = limit
    return manifests


def test_a_runtime_whose_nodes_outgrow_the_queue_is_one_whole_finding_with_a_fix_in_milli_cpu():
    """Kills the runtime check's reads and words (check_training_runtime_fits_queue 10-75, _node_requests 11, 47,
    49, _fit's words): 5 nodes x 1 cpu against 0 + 4 borrowed; at most 4 / 5 = 800m per node."""
    found = _judge(_nodes(_sized(compliant()), 5))
    assert whole(found) == [(
        POLICY, RUNTIME, f"{CONTAINER}.resources.requests.cpu", "1",
        f"numNodes (5) x 1 = 5 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use, 4 (nominalQuota + "
        f"borrowingLimit), {OF_RUNTIME}", f"lower it to at most 800m per node, {RAISE}")]
    assert found[0].message == (
        f"The TrainingRuntime 'c12-training/c12-checkpoint-runtime' has {CONTAINER}.resources.requests.cpu = '1': "
        f"{found[0].rule}; {found[0].fix}.")


def test_memory_is_shown_in_binary_units():
    """Kills `binary` (_fit 41-46): 4 nodes x 4Gi = 16Gi against 8Gi; at most 2Gi per node."""
    manifests = _nodes(_sized(compliant()), 4)
    _container(manifests)["resources"]["requests"]["memory"] = "4Gi"
    assert whole(_judge(manifests)) == [(
        POLICY, RUNTIME, f"{CONTAINER}.resources.requests.memory", "4Gi",
        f"numNodes (4) x 4Gi = 16Gi of 'memory' exceeds what ClusterQueue 'c12-training-cq' can ever use, 8Gi "
        f"(nominalQuota + borrowingLimit), {OF_RUNTIME}", f"lower it to at most 2Gi per node, {RAISE}")]


def test_a_resource_the_queue_does_not_cover_is_one_whole_finding():
    """Kills the uncovered branch (_fit 50-69)."""
    manifests = _sized(compliant())
    _container(manifests)["resources"]["requests"]["example.com/fpga"] = "1"
    assert whole(_judge(manifests)) == [(
        POLICY, RUNTIME, f'{CONTAINER}.resources.requests["example.com/fpga"]', "1",
        "the ClusterQueue 'c12-training-cq' behind this namespace's LocalQueue covers no 'example.com/fpga', "
        f"{OF_RUNTIME}", "remove 'example.com/fpga' from the runtime, or cover it in the ClusterQueue")]


def test_the_at_most_figure_is_rounded_down_to_what_kueue_counts():
    """The fix's "at most" per node must itself fit: Kueue counts cpu in milli-units rounding up (ResourceValue,
    MilliValue), so 2 cpu over 3 nodes is at most 666m per node (667m x 3 = 2001m does not fit); the rule printed
    0.6666666666666666666666666667 before. Outside a cohort a missing borrowingLimit borrows nothing (kills
    `in_cohort` in _ever_usable 1-10, 26-34)."""
    manifests = _nodes(_sized(compliant()), 3)
    del manifests["training-cq"]["spec"]["cohortName"]
    _training_quota(manifests, cpu=("2", None), memory=("8Gi", None))
    assert whole(_judge(manifests)) == [(
        POLICY, RUNTIME, f"{CONTAINER}.resources.requests.cpu", "1",
        f"numNodes (3) x 1 = 3 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use, 2 (nominalQuota + "
        f"borrowingLimit), {OF_RUNTIME}", f"lower it to at most 666m per node, {RAISE}")]


def test_an_extended_resource_at_most_figure_is_a_whole_number():
    """Kills the unit of other resources (per_node_at_most 10): gpumem is counted in whole units (Quantity.Value,
    rounding up), so 2048 over 5 nodes is at most 409 per node."""
    manifests = _nodes(_sized(compliant()), 5)
    _container(manifests)["resources"]["requests"]["nvidia.com/gpumem"] = "1024"
    found = [v for v in _judge(manifests) if "gpumem" in v.field]
    assert [(v.field, v.fix) for v in found] == [
        (f'{CONTAINER}.resources.requests["nvidia.com/gpumem"]', f"lower it to at most 409 per node, {RAISE}")]


def test_a_cpu_at_most_figure_above_one_is_written_in_milli_cpu():
    """Kills the milli-cpu printing (per_node_at_most 23): 4 cpu over 3 nodes is at most 1333m per node."""
    manifests = _nodes(_sized(compliant()), 3)
    _container(manifests)["resources"]["requests"]["cpu"] = "2"
    assert [v.fix for v in _judge(manifests)] == [f"lower it to at most 1333m per node, {RAISE}"]


def test_ephemeral_storage_is_shown_in_binary_units():
    """Kills "ephemeral-storage" misspelt (_fit 45, 46): a queue covering ephemeral-storage, 0 + 10Gi; 4 nodes x
    4Gi = 16Gi; at most 10Gi / 4 = 2560Mi per node."""
    manifests = _nodes(_sized(compliant()), 4)
    group = manifests["training-cq"]["spec"]["resourceGroups"][0]
    group["coveredResources"].append("ephemeral-storage")
    group["flavors"][0]["resources"].append({"name": "ephemeral-storage", "nominalQuota": "0",
                                             "borrowingLimit": "10Gi"})
    _container(manifests)["resources"]["requests"]["ephemeral-storage"] = "4Gi"
    assert [(v.rule, v.fix) for v in _judge(manifests)] == [(
        "numNodes (4) x 4Gi = 16Gi of 'ephemeral-storage' exceeds what ClusterQueue 'c12-training-cq' can ever use, "
        f"10Gi (nominalQuota + borrowingLimit), {OF_RUNTIME}", f"lower it to at most 2560Mi per node, {RAISE}")]


def test_an_empty_cohort_name_is_no_cohort():
    """Kills `not in (MISSING, "XXXX")` (_ever_usable 10): `cohortName: ""` is no cohort, so a missing
    borrowingLimit borrows nothing."""
    manifests = _nodes(_sized(compliant()), 3)
    manifests["training-cq"]["spec"]["cohortName"] = ""
    _training_quota(manifests, cpu=("2", None), memory=("8Gi", None))
    assert [v.fix for v in _judge(manifests)] == [f"lower it to at most 666m per node, {RAISE}"]


def test_resources_per_node_without_limits_or_requests_keep_the_runtimes():
    """Kills `get("limits")`/`get(override, )` (_node_requests 28, 29, 35, 36) and the runtime's path (_check_trainjob
    97): Trainer v2.2.1 builder.go replaces the node container's resources only when resourcesPerNode has limits or
    requests; with claims alone the runtime's 1 cpu stays, x 6 nodes against 4."""
    manifests = _sized(compliant())
    manifests["tj"] = _trainjob(numNodes=6, resourcesPerNode={"claims": [{"name": "gpu"}]})
    assert [(v.subject, v.field, v.value, v.fix) for v in _judge(manifests)] == [(
        TRAINJOB, f"TrainingRuntime 'c12-training/c12-checkpoint-runtime' {CONTAINER}.resources.requests.cpu", "1",
        f"lower it to at most 666m per node, {RAISE}")]


def test_every_trainer_job_of_a_runtime_is_judged():
    """Kills `out = _fit(...)` for the runtime (check 52): the runtime's first trainer job asks for 5 cpu, its
    second (labelled trainjob-ancestor-step: trainer) for 1; the first is reported."""
    manifests = _sized(compliant())
    jobs = manifests["runtime"]["spec"]["template"]["spec"]["replicatedJobs"]
    jobs.append(copy.deepcopy(jobs[0]))
    jobs[1]["name"] = "node-b"
    _container(manifests)["resources"]["requests"]["cpu"] = "5"
    assert [v.field for v in _judge(manifests)] == [f"{CONTAINER}.resources.requests.cpu"]


def test_objects_of_another_api_group_are_no_trainer_objects():
    """Kills the kind-or-group filters (check 6, 81): a TrainingRuntime of example.com is not Trainer's, whatever it
    asks for; nor is a TrainJob of example.com naming the stack's runtime."""
    manifests = _nodes(_sized(compliant()), 5)
    manifests["runtime"]["apiVersion"] = "example.com/v1"
    assert _judge(manifests) == []
    manifests = _sized(compliant())
    manifests["tj"] = {**_trainjob(numNodes=6), "apiVersion": "example.com/v1"}
    assert _judge(manifests) == []


def test_a_cluster_training_runtime_is_not_judged_against_queues_without_a_namespace():
    """Kills RUNTIME_KINDS[:2] (check 9): a ClusterTrainingRuntime has no namespace; a LocalQueue written without one
    (the provider's default namespace) does not serve it here."""
    manifests = _nodes(_sized(compliant()), 5)
    runtime = manifests.pop("runtime")
    manifests["cluster-runtime"] = {**runtime, "kind": "ClusterTrainingRuntime",
                                    "metadata": {"name": "c12-cluster-runtime"}}
    manifests["default-lq"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                               "metadata": {"name": "c12-default-lq"}, "spec": {"clusterQueue": "c12-training-cq"}}
    assert _judge(manifests) == []


def test_a_trainjob_whose_local_queue_points_outside_the_stack_is_not_judged_here():
    """Kills `cq_name is None and ...` (_check_trainjob 12): the LocalQueue exists, its ClusterQueue is not in the
    stack (the queue rules report it)."""
    manifests = _sized(compliant())
    manifests["ghost-lq"] = local_queue("c12-ghost-lq", "c12-training", "c12-not-in-the-stack")
    manifests["tj"] = _trainjob(numNodes=6)
    manifests["tj"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "c12-ghost-lq"
    assert _judge(manifests) == []


def test_in_a_cohort_a_missing_borrowing_limit_is_no_limit():
    """Kueue: no borrowingLimit in a cohort borrows without bound, so 100 nodes of 1 cpu over nominalQuota 2 fit."""
    manifests = _nodes(_sized(compliant()), 100)
    _training_quota(manifests, cpu=("2", None), memory=("1Ti", None))
    assert _judge(manifests) == []


def test_a_borrowing_limit_of_zero_leaves_the_nominal_quota():
    """Kills `parse(raw) or Decimal(1)` / `Decimal(None)` (_ever_usable 38, 39; usable_quota 40): borrowingLimit 0
    borrows nothing."""
    manifests = _nodes(_sized(compliant()), 3)
    _training_quota(manifests, cpu=("2", "0"))
    assert [(v.field, v.rule.split(", so")[0]) for v in _judge(manifests)] == [
        (f"{CONTAINER}.resources.requests.cpu", "numNodes (3) x 1 = 3 of 'cpu' exceeds what ClusterQueue "
         "'c12-training-cq' can ever use, 2 (nominalQuota + borrowingLimit)")]


@pytest.mark.parametrize(("nodes", "cpu", "found"), [("4", "3", False), (True, "3", False), (0, "5", True)])
def test_a_num_nodes_that_is_no_positive_number_counts_one_node(nodes, cpu, found):
    """Kills _num_nodes' tests (1, 2, 7): numNodes is an int32 of at least 1 (Trainer's CRD); anything else counts as
    one node: 1 x 3 cpu fits 4, 1 x 5 does not."""
    manifests = _nodes(_sized(compliant()), nodes)
    _container(manifests)["resources"]["requests"]["cpu"] = cpu
    expected = [f"numNodes (1) x 5 = 5 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use, 4 "
                f"(nominalQuota + borrowingLimit), {OF_RUNTIME}"] if found else []
    assert [v.rule for v in _judge(manifests)] == expected


def _second_queue(manifests: dict, name: str = "c12-training-b", namespace: str = "c12-training",
                  cpu: str = "2", memory: str = "2Gi") -> dict:
    cq = {**manifests["training-cq"], "metadata": {"name": f"{name}-cq", "labels": {"kueue-cohorts/role": "training"}}}
    cq = {**cq, "spec": {**cq["spec"], "resourceGroups": [{
        "coveredResources": ["cpu", "memory"], "flavors": [{"name": "c12-default", "resources": [
            {"name": "cpu", "nominalQuota": "0", "borrowingLimit": cpu},
            {"name": "memory", "nominalQuota": "0", "borrowingLimit": memory}]}]}]}}
    manifests[f"{name}-cq"] = cq
    manifests[f"{name}-lq"] = local_queue(f"{name}-lq", namespace, f"{name}-cq")
    return manifests


def test_the_closest_of_several_queues_is_named_with_all_of_them():
    """Kills the closest-queue choice (_fit 21-26) and `names` (47, 49): two LocalQueues in the runtime's namespace;
    c12-training-b-cq (sorted first) misses cpu and memory, c12-training-cq only cpu, so the latter is the closest."""
    manifests = _nodes(_sized(_second_queue(compliant())), 5)
    assert [(v.field, v.rule, v.fix) for v in _judge(manifests)] == [(
        f"{CONTAINER}.resources.requests.cpu",
        "numNodes (5) x 1 = 5 of 'cpu' exceeds what ClusterQueue 'c12-training-b-cq', 'c12-training-cq' can ever use, "
        f"4 (nominalQuota + borrowingLimit), {OF_RUNTIME}", f"lower it to at most 800m per node, {RAISE}")]


def test_a_queue_that_fits_among_several_is_enough():
    """Any queue of the namespace that holds the TrainJob is enough (the other, smaller one is not judged)."""
    manifests = _nodes(_sized(_second_queue(compliant(), cpu="8", memory="8Gi")), 5)
    assert _judge(manifests) == []


def test_queues_of_other_namespaces_and_outside_the_stack_are_not_the_runtimes():
    """Kills _queues_of_namespace's filters (3, 4): a LocalQueue of another namespace with a big queue does not
    serve the runtime; a LocalQueue of the runtime's namespace naming a ClusterQueue outside the stack is skipped."""
    manifests = _nodes(_sized(_second_queue(compliant(), namespace="c12-other", cpu="8", memory="8Gi")), 5)
    manifests["ghost-lq"] = local_queue("c12-ghost-lq", "c12-training", "c12-not-in-the-stack")
    assert [v.field for v in _judge(manifests)] == [f"{CONTAINER}.resources.requests.cpu"]


def test_several_flavors_name_the_closest_flavor():
    """Kills `several` and `in_flavor` (_fit 28-30, 71-86, 115-122): with two flavors, the finding names the closest
    flavor, in the rule and in the fix."""
    manifests = _nodes(_sized(compliant()), 5)
    flavors = manifests["training-cq"]["spec"]["resourceGroups"][0]["flavors"]
    flavors.append({"name": "c12-spot", "resources": [
        {**e, "borrowingLimit": "3" if e["name"] == "cpu" else e.get("borrowingLimit", "0")} for e in flavors[0][
            "resources"]]})
    found = _judge(manifests)
    assert [(v.rule, v.fix) for v in found] == [(
        "numNodes (5) x 1 = 5 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use in its closest flavor "
        "'c12-default' (no flavor holds the whole TrainJob), 4 (nominalQuota + borrowingLimit), " + OF_RUNTIME,
        "lower it to at most 800m per node, or raise the training ClusterQueue's borrowingLimit in flavor "
        "'c12-default' (within the cohort's capacity)")]


def test_only_namespaced_training_runtimes_with_a_local_queue_are_judged():
    """Kills the runtime filter (check 6-9, 15): a ClusterTrainingRuntime has no namespace of its own, and a
    TrainingRuntime of a namespace without a LocalQueue of the stack is not judged."""
    manifests = _nodes(_sized(compliant()), 5)
    cluster_runtime = {**manifests["runtime"], "kind": "ClusterTrainingRuntime",
                       "metadata": {"name": "c12-cluster-runtime"}}
    elsewhere = {**manifests["runtime"], "metadata": {**manifests["runtime"]["metadata"], "namespace": "c12-other"}}
    del manifests["runtime"]
    manifests.update({"cluster-runtime": cluster_runtime, "elsewhere": elsewhere})
    assert _judge(manifests) == []


def test_a_trainjob_overriding_only_num_nodes_is_judged_at_that_field():
    """Kills the TrainJob's `where` and nodes (_check_trainjob 50-73, 114, 119): 6 nodes x 1 cpu against 4; at most
    4 nodes."""
    manifests = _sized(compliant())
    manifests["tj"] = _trainjob(numNodes=6)
    found = _judge(manifests)
    assert whole(found) == [(
        POLICY, TRAINJOB, "spec.trainer.numNodes", 6,
        "spec.trainer.numNodes (6) x 1 = 6 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use, 4 "
        "(nominalQuota + borrowingLimit), so Kueue can never admit this TrainJob",
        f"lower it to at most 4, {RAISE}")]


def test_a_trainjob_overriding_only_resources_takes_the_runtimes_nodes():
    """Kills `raw_nodes ... else get(runtime.spec, "mlPolicy", "numNodes")` (_check_trainjob 52-63): the runtime's 2
    nodes x the TrainJob's 3 cpu = 6 against 4."""
    manifests = _nodes(_sized(compliant()), 2)
    manifests["tj"] = _trainjob(resourcesPerNode={"requests": {"cpu": "3"}})
    found = [f for f in _judge(manifests) if f.subject == TRAINJOB]
    assert whole(found) == [(
        POLICY, TRAINJOB, "spec.trainer.resourcesPerNode.requests.cpu", "3",
        "numNodes (2) x 3 = 6 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use, 4 (nominalQuota + "
        "borrowingLimit), so Kueue can never admit this TrainJob", f"lower it to at most 2 per node, {RAISE}")]


def test_a_trainjob_asking_for_an_uncovered_resource_is_told_to_remove_it_from_the_trainjob():
    """Kills the fix's "TrainJob" (_fit 56-66)."""
    manifests = _sized(compliant())
    manifests["tj"] = _trainjob(resourcesPerNode={"limits": {"example.com/fpga": "1"}})
    assert [v.fix for v in _judge(manifests)] == [
        "remove 'example.com/fpga' from the TrainJob, or cover it in the ClusterQueue"]


def test_resources_per_node_replace_only_the_node_container_and_the_sidecar_still_counts():
    """Kills `replaced`'s `and`s (_node_requests 13, 14) and the per-node sums (51-60): the node container's 3 cpu
    (the TrainJob's) plus the sidecar's 1, x 2 nodes = 8 against 4; the finding is at the first contributor."""
    manifests = _nodes(_sized(compliant()), 2)
    _pod(manifests)["containers"].append({"name": "sidecar", "image": "proxy", "resources": {"requests": {"cpu": "1"}}})
    manifests["tj"] = _trainjob(resourcesPerNode={"requests": {"cpu": "3"}})
    found = [f for f in _judge(manifests) if f.subject == TRAINJOB]
    assert [(v.field, v.value, v.rule) for v in found] == [(
        "spec.trainer.resourcesPerNode.requests.cpu", "3",
        "numNodes (2) x 4 = 8 of 'cpu' exceeds what ClusterQueue 'c12-training-cq' can ever use, 4 (nominalQuota + "
        "borrowingLimit), so Kueue can never admit this TrainJob")]


def test_a_container_whose_request_is_no_quantity_is_skipped_and_the_next_still_counts():
    """Kills `continue` -> `break` (_node_requests 50): the quantities rule reports "lots"; the node container's
    5 cpu still fail here."""
    manifests = _sized(compliant())
    pod = _pod(manifests)
    pod["containers"].insert(0, {"name": "init-ish", "image": "x", "resources": {"requests": {"cpu": "lots"}}})
    pod["containers"][1]["resources"]["requests"]["cpu"] = "5"
    field = "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[1].resources.requests.cpu"
    assert [v.field for v in _judge(manifests)] == [field]


def test_a_trainjob_of_a_queue_outside_the_stack_is_not_judged_here():
    """Kills `cq_name is None and ...` (_check_trainjob 12): a queue name no LocalQueue of the stack has."""
    manifests = _sized(compliant())
    manifests["tj"] = _trainjob(numNodes=6)
    manifests["tj"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "c12-nowhere-lq"
    assert _judge(manifests) == []


def test_a_trainjobs_queue_is_looked_up_in_its_own_namespace():
    """Kills `cluster_queue_of(None, queue)` (_check_trainjob 8): another namespace has a LocalQueue of the same
    name on a big queue; the TrainJob's own is c12-training's."""
    manifests = _second_queue(_sized(compliant()), name="c12-training", namespace="c12-other", cpu="64",
                              memory="64Gi")
    manifests["c12-training-b"] = manifests.pop("c12-training-lq")
    manifests["c12-training-b"]["metadata"]["name"] = "c12-training-lq"
    manifests["c12-training-b"]["spec"]["clusterQueue"] = "c12-training-cq-big"
    manifests["c12-training-cq-big"] = {**manifests.pop("c12-training-cq"),
                                        "metadata": {"name": "c12-training-cq-big"}}
    manifests["tj"] = _trainjob(numNodes=6)
    assert [v.field for v in _judge(manifests) if v.subject == TRAINJOB] == ["spec.trainer.numNodes"]


def test_unknown_values_fail_closed_on_the_object_that_holds_them():
    """Kills `guarded(None, ...)` (check 77, 94) and `unknown_violation(None/…)` (_fit 4-7): an unknown numNodes on
    the runtime, on the TrainJob, and an unknown quota on the ClusterQueue, each reported on its own object."""
    manifests = _nodes(_sized(compliant()), UNKNOWN)
    manifests["tj"] = _trainjob(numNodes=UNKNOWN)
    assert [(v.policy, v.subject, v.field) for v in _judge(manifests)] == [
        ("unknown-at-preview", RUNTIME, "spec.mlPolicy.numNodes"),
        ("unknown-at-preview", TRAINJOB, "spec.trainer.numNodes")]
    manifests = _sized(compliant())
    _training_quota(manifests, cpu=(UNKNOWN, "4"))
    found = _judge(manifests)
    assert [(v.policy, v.subject, v.value) for v in found] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-training-cq"), MISSING)]
