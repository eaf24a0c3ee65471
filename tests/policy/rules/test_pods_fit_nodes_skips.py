"""PODS_FIT_NODES: what it passes over, and which flavors a pod may get (issue 42: the survivors of
`check_pods_fit_nodes`' skips, `_flavor_quotas` and `_assignable` in the mutation target rules-placement).

Upstream facts written out by hand:
- Kueue v0.19.2 `apis/kueue/v1beta2/clusterqueue_types.go` borrowingLimit: "If null, it means that there is no
  borrowing limit" within a cohort; outside a cohort the ClusterQueue uses its nominalQuota only. The flavor assigner
  (`pkg/scheduler/flavorassigner`) may give a pod each flavor whose quota, borrowing included, holds what it asks.
- A workload is Kueue's only through the `kueue.x-k8s.io/queue-name` label naming a LocalQueue of its namespace whose
  ClusterQueue exists; the others (no label, a LocalQueue or ClusterQueue outside the stack) are other rules'.
- A value unknown at preview fails closed on its own object (the `unknown-at-preview` finding), and the rest of the
  stack is still judged.
"""
from __future__ import annotations

from typing import Any

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.objects import UNKNOWN_POLICY
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, kube
from tests.policy.rules.test_pods_fit_nodes_serving_pods import (
    FLAVOR,
    GPU,
    LQ,
    QUEUE,
    QUOTA_FIELD,
    gpu_pools,
    inference_cq,
    labelled_flavor,
    labelled_pools,
    objects,
)
from tests.policy.rules.test_pods_fit_nodes_trainer_pods import TRN_LQ
from tests.policy.rules.test_pods_fit_nodes_trainjobs import trainer_runtime, whole

FIELD = f'spec.template.spec.containers[0].resources.requests["{GPU}"]'
PACKING_TAIL = ("or size the pods to divide the nodes (or add nodes), or give the flavor a Topology "
                "(spec.topologyName) so that Kueue checks per-node fit before it admits")


def deployment(name: str, requests: dict[str, Any], replicas: Any = 1, labels: Any = None) -> dict[str, Any]:
    """Deployment inf/`name` (Recreate) of `replicas` pods asking `requests`, queued to lq unless `labels` says."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "inf"},
            "spec": {"replicas": replicas, "strategy": {"type": "Recreate"}, "template": {
                "metadata": {"labels": QUEUE if labels is None else labels},
                "spec": {"containers": [{"name": "m", "resources": {"requests": requests}}]}}}}


def stranding() -> tuple[Any, ...]:
    """Finding 3 of inf-cq (12 GPUs) with Deployment inf/w's three 3-GPU replicas on two 4-GPU nodes, written out: one
    replica on each node leaves 1 GPU on each, the third (9 GPUs, within 12) fits neither; a quota below 9 (at most
    8) admits no third."""
    rule = ("the nominalQuota of flavor 'f' admits pods the nodes cannot all hold: the kube-scheduler binds them one "
            "at a time on any node with room, and after a node of pool 'p' holds 1 pod(s) (Deployment 'inf/w' pod); a "
            "node of pool 'p' holds 1 pod(s) (Deployment 'inf/w' pod), one more Deployment 'inf/w' pod "
            f"('{GPU}' 3), still within the quota, fits no node and stays Pending while training is preempted for "
            "nothing")
    fix = f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most 8, {PACKING_TAIL}"
    return (PODS_FIT_NODES.name, "ClusterQueue", None, "inf-cq", QUOTA_FIELD, "12", rule, fix,
            f"The ClusterQueue 'inf-cq' has {QUOTA_FIELD} = '12': {rule}; {fix}.")


def unknown(kind: str, namespace: str | None, name: str, field: str) -> tuple[Any, ...]:
    """The fail-closed finding of a value unknown at preview, written out."""
    shown = f"{kind} '{namespace}/{name}'" if namespace else f"{kind} '{name}'"
    return (UNKNOWN_POLICY, kind, namespace, name, field, MISSING,
            "the value is unknown at preview, so the rule cannot check it and fails closed",
            "give it a value known at preview (a literal or stack config, not an output of another resource)",
            f"The {shown} has {field} unknown at preview, so this policy cannot check it and fails closed; give "
            f"{field} a value known at preview (a literal or stack config, not an output of another resource).")


def proxied(*manifests: dict[str, Any]) -> list[Any]:
    """KubeObjects as the analyzer builds them (an UNKNOWN value raises when read)."""
    return [kube(m["metadata"]["name"], m) for m in manifests]


def training_queue(quota: Any) -> dict[str, Any]:
    """ClusterQueue trn-cq of cohort c (inf-cq's) with `quota` GPUs in flavor f."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "trn-cq"},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": "f", "resources": [{"name": GPU, "nominalQuota": quota}]}]}]}}


def test_a_cluster_queue_of_unknown_quota_fails_closed_and_the_rest_is_judged():
    """trn-cq's nominalQuota is unknown at preview: one fail-closed finding on trn-cq (kills mutants 50-54 of its
    arguments), and the pods queued to it (a TrainingRuntime's), the packing of trn-cq named as an inference
    ClusterQueue and inf-cq's borrowers (trn-cq is of its cohort) are passed over, not raised on (kills the `None`
    defaults of `flavors.get`: mutants 60, 62, 84, 86, 113, 115 and `_borrowers` 46, 48); inf-cq's own stranding is
    still reported."""
    found = check_pods_fit_nodes(
        proxied(FLAVOR, LQ, inference_cq(12), deployment("w", {GPU: "3"}, 3), TRN_LQ, training_queue(UNKNOWN),
                trainer_runtime("rt", "1", 1)),
        gpu_pools(2, 4), ["inf-cq", "trn-cq"])
    assert whole(found) == [unknown("ClusterQueue", None, "trn-cq", QUOTA_FIELD), stranding()]


def test_serving_workloads_not_queued_to_a_cluster_queue_of_the_stack_are_passed_over():
    """Only a workload queued through a LocalQueue of the stack to a ClusterQueue of the stack is read: one queued to
    a LocalQueue whose ClusterQueue is not in the stack (mutant 27: `and` for `or`), to no LocalQueue, or with a queue
    label that is not a string (mutant 22: read as a LocalQueue name, an unhashable list) is passed over, even with a
    value unknown at preview. The ones queued to inf-cq with unknown replicas each fail closed on their own object
    (mutants 35, `=` for `+=`, and 37, no object)."""
    ghost_lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "ghost-lq", "namespace": "inf"}, "spec": {"clusterQueue": "ghost-cq"}}
    found = check_pods_fit_nodes(
        proxied(FLAVOR, LQ, ghost_lq, inference_cq(12),
                deployment("a", {GPU: "1"}, UNKNOWN), deployment("b", {GPU: "1"}, UNKNOWN),
                deployment("ghost", {GPU: "9"}, UNKNOWN, {"kueue.x-k8s.io/queue-name": "ghost-lq"}),
                deployment("nowhere", {GPU: "9"}, UNKNOWN, {"kueue.x-k8s.io/queue-name": "absent"}),
                deployment("listed", {GPU: "9"}, 1, {"kueue.x-k8s.io/queue-name": ["lq"]}),
                deployment("numbered", {GPU: "9"}, 1, {"kueue.x-k8s.io/queue-name": 7})),
        gpu_pools(2, 4), ["inf-cq"])
    assert whole(found) == [unknown("Deployment", "inf", "a", "spec.replicas"),
                            unknown("Deployment", "inf", "b", "spec.replicas")]
    # the settings layer's objects are plain: a list there is no LocalQueue name either
    plain = objects(FLAVOR, LQ, inference_cq(12),
                    deployment("listed", {GPU: "9"}, 1, {"kueue.x-k8s.io/queue-name": ["lq"]}))
    assert check_pods_fit_nodes(plain, gpu_pools(2, 4), ["inf-cq"]) == []


def test_an_inference_cluster_queue_not_in_the_stack_does_not_stop_the_others():
    """The inference ClusterQueues are judged in name order; one that is not in the stack is passed over and the next
    still judged (mutant 104: `break` for `continue`)."""
    stack = objects(FLAVOR, LQ, inference_cq(12), deployment("w", {GPU: "3"}, 3))
    assert whole(check_pods_fit_nodes(stack, gpu_pools(2, 4), ["a-missing", "inf-cq"])) == [stranding()]


def test_a_flavor_without_known_nodes_does_not_stop_the_pod_s_other_flavors():
    """A 5-GPU pod may get flavor f0 (whose nodeLabels select no pool: the capacity rule reports that) or f1 (one
    4-GPU node): finding 1 for f1 (mutant 66: `break` at f0 instead of `continue`)."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
          "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
              {"name": f, "resources": [{"name": GPU, "nominalQuota": "8"}]} for f in ("f0", "f1")]}]}}
    found = check_pods_fit_nodes(
        objects(labelled_flavor("f0", {"zone": "x"}), labelled_flavor("f1", {"pool": "b"}), LQ, cq,
                deployment("w", {GPU: "5"})),
        labelled_pools(("b", {"pool": "b"})), [])
    rule = (f"one Deployment 'inf/w' pod asks for '{GPU}' 5 on one node, and no node of flavor 'f1' has that (the "
            f"closest, pool 'b', has '{GPU}' 4 per node: '{GPU}' 5 > 4); Kueue admits it by quota in flavor 'f1' of "
            "ClusterQueue 'inf-cq' and the kube-scheduler leaves it Pending for ever (NodeResourcesFit: "
            "Insufficient), holding that quota")
    fix = (f"request at most 4 of '{GPU}' per pod (split the work over more pods), or add a node pool whose nodes "
           f"have 5 of '{GPU}' and carry the nodeLabels of flavor 'f1'")
    assert whole(found) == [(PODS_FIT_NODES.name, "Deployment", "inf", "w", FIELD, "5", rule, fix,
                             f"The Deployment 'inf/w' has {FIELD} = '5': {rule}; {fix}.")]


def queue(spec: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """ClusterQueue inf-cq with `spec` (its cohortName) and one GPU entry `entry` in flavor f."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
            "spec": {**spec, "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": "f", "resources": [{"name": GPU, **entry}]}]}]}}


def test_a_pod_over_the_nominal_quota_may_borrow_only_in_a_cohort_and_within_a_borrowing_limit():
    """A 3-GPU pod on 2-GPU nodes, nominalQuota 2: Kueue may admit it only by borrowing, so finding 1 only when the
    ClusterQueue is in a cohort (a non-empty cohortName) and its borrowingLimit, when set, lets it borrow 1 more
    (kills `_flavor_quotas` reading the cohort wrong, mutants 1-8, and the missing borrowingLimit read as 0, 36 and
    38). A pod asking 0 of the covered GPUs and only what the queue does not cover asks nothing Kueue may give:
    no flavor, no finding (`_assignable` 6, `>= 0`)."""
    def judge(spec: dict[str, Any], entry: dict[str, Any], requests: dict[str, str]) -> list[tuple[Any, ...]]:
        stack = objects(FLAVOR, LQ, queue(spec, entry), deployment("w", requests))
        return [(v.field, v.value) for v in check_pods_fit_nodes(stack, gpu_pools(1, 2), [])]

    wide = [(FIELD, "3")]
    for spec, entry, expected in (
            ({"cohortName": "c"}, {"nominalQuota": "2"}, wide),  # no limit in a cohort
            ({"cohortName": "c"}, {"nominalQuota": "2", "borrowingLimit": "1"}, wide),
            ({"cohortName": "c"}, {"nominalQuota": "2", "borrowingLimit": "0"}, []),
            ({"cohortName": ""}, {"nominalQuota": "2"}, []),  # no cohort: nominalQuota only
            ({}, {"nominalQuota": "2"}, []),
            ({}, {"nominalQuota": "3"}, wide)):
        assert judge(spec, entry, {GPU: "3"}) == expected, (spec, entry)
    nodes, problems = parse_node_pools([{"name": "p", "count": 1, "labels": {}, "capacity": {GPU: "2", "cpu": "8"}}])
    assert problems == []
    stack = objects(FLAVOR, LQ, queue({}, {"nominalQuota": "8"}), deployment("w", {GPU: "0", "cpu": "64"}))
    assert check_pods_fit_nodes(stack, nodes, []) == []


def test_flavors_on_common_nodes_whose_quota_exceeds_the_nodes_are_left_to_the_capacity_rule():
    """Flavors f0 and f1 of inf-cq select the same two 4-GPU nodes (no nodeLabels) with 8 GPUs each: their 16 GPUs
    exceed the 8 of the nodes, which cohort-nominal-within-capacity reports; the packing finding is not given
    (mutant 42 of `_inference_packing`: only for three flavors or more), though 3-GPU pods would strand there."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
          "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
              {"name": f, "resources": [{"name": GPU, "nominalQuota": "8"}]} for f in ("f0", "f1")]}]}}
    stack = objects(labelled_flavor("f0", {}), labelled_flavor("f1", {}), LQ, cq, deployment("w", {GPU: "3"}, 4))
    assert check_pods_fit_nodes(stack, gpu_pools(2, 4), ["inf-cq"]) == []


def test_a_flavor_joining_a_group_of_common_nodes_leaves_the_other_groups_judged():
    """Flavors f0 and f2 select pool a, f1 pool b (one 4-GPU node each), 6 GPUs each, 3-GPU pods: f0 and f2 are one
    group (12 GPUs on a 4-GPU node: the capacity rule's), f1 is judged alone and strands a pod after one (6 GPUs,
    within its 6), fix 5 (`_sharing` mutant 23 drops f1's group when f2 joins f0's and judges f0 alone)."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
          "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
              {"name": f, "resources": [{"name": GPU, "nominalQuota": "6"}]} for f in ("f0", "f1", "f2")]}]}}
    stack = objects(labelled_flavor("f0", {"pool": "a"}), labelled_flavor("f1", {"pool": "b"}),
                    labelled_flavor("f2", {"pool": "a"}), LQ, cq, deployment("w", {GPU: "3"}, 4))
    found = check_pods_fit_nodes(stack, labelled_pools(("a", {"pool": "a"}), ("b", {"pool": "b"})), ["inf-cq"])
    field = "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"
    rule = ("the nominalQuota of flavor 'f1' admits pods the nodes cannot all hold: the kube-scheduler binds them one "
            "at a time on any node with room, and after a node of pool 'b' holds 1 pod(s) (Deployment 'inf/w' pod), "
            f"one more Deployment 'inf/w' pod ('{GPU}' 3), still within the quota, fits no node and stays Pending "
            "while training is preempted for nothing")
    fix = f"lower the nominalQuota of '{GPU}' in flavor 'f1' to at most 5, {PACKING_TAIL}"
    assert whole(found) == [(PODS_FIT_NODES.name, "ClusterQueue", None, "inf-cq", field, "6", rule, fix,
                             f"The ClusterQueue 'inf-cq' has {field} = '6': {rule}; {fix}.")]


def test_a_pod_over_every_flavor_s_own_quota_is_left_out_of_the_flavors_placed_together():
    """Flavors f0 and f1 (no nodeLabels: both on a 3-GPU node and a 1-GPU node) hold 2 GPUs each. Kueue gives a pod
    one flavor, so a 3-GPU replica is never admitted there, though the two quotas together (4) would hold it; 1-GPU
    replicas never strand. Taken for an admitted pod (mutants 14 and 18 of `_inference_packing`: the over-quota test
    reads no resource), the 3-GPU replica would be stranded after a 1-GPU one on the 3-GPU node (4 GPUs in all)."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
          "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
              {"name": f, "resources": [{"name": GPU, "nominalQuota": "2"}]} for f in ("f0", "f1")]}]}}
    nodes, problems = parse_node_pools([{"name": "a", "count": 1, "labels": {}, "capacity": {GPU: "3"}},
                                        {"name": "b", "count": 1, "labels": {}, "capacity": {GPU: "1"}}])
    assert problems == []
    stack = objects(labelled_flavor("f0", {}), labelled_flavor("f1", {}), LQ, cq, deployment("big", {GPU: "3"}),
                    deployment("small", {GPU: "1"}, 4))
    assert check_pods_fit_nodes(stack, nodes, ["inf-cq"]) == []
