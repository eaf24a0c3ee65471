"""PODS_FIT_NODES finding 4 when the borrowers own quota too (issue 42: the survivors of `_reclaim_packing` in the
mutation target rules-placement; tests/policy/rules/test_pods_fit_nodes.py judges only borrowers of nominalQuota 0).

Kueue v0.19.2 admits a Workload when its ClusterQueue's usage plus it fits nominalQuota + borrowingLimit and the
cohort's usage plus it fits the cohort's summed nominalQuota (`pkg/cache/scheduler` fits); an inference Workload
within its own nominalQuota that does not fit the cohort reclaims by preempting borrowers' Workloads chosen by quota,
never by node (`pkg/scheduler/preemption/preemption.go`, kueue#5243). The reference below simulates that on GPUs
with every order, every node and every minimal set of victims; the kube-scheduler binds each pod on any node with
room (`fit.go` fitsRequest).
"""
from __future__ import annotations

from functools import cache
from itertools import product
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules import pods_fit_nodes
from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.placement import blocking_placement
from tests.policy.rules.test_pods_fit_nodes_serving_pods import FLAVOR, LQ, QUOTA_FIELD, objects

GPU = "nvidia.com/gpu"
TRN_LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "trn"},
          "spec": {"clusterQueue": "trn-cq"}}


def strands(inference: tuple[int, int], training: int, nodes: tuple[int, ...], own: int, theirs: int) -> bool:
    """Can an admitted inference pod be left with no node? Inference: pods of `inference` = (gpus, cap), nominalQuota
    `own`, borrowingLimit 0. Training: pods of `training` GPUs, nominalQuota `theirs`, borrowing up to `own`. The
    cohort holds own + theirs. A training pod is admitted while the cohort's usage plus it fits; an inference pod
    while inference's usage plus it fits `own`, preempting (when the cohort's does not fit) any minimal set of
    training pods, wherever they run."""
    i_gpu, cap = inference
    cohort = own + theirs

    @cache
    def reach(state: tuple[tuple[int, int], ...]) -> bool:  # per node: (inference pods, training pods)
        inf = sum(a for a, _ in state)
        trn = sum(b for _, b in state)
        rooms = [g - a * i_gpu - b * training for g, (a, b) in zip(nodes, state, strict=True)]
        used = inf * i_gpu + trn * training
        if used + training <= cohort and (trn + 1) * training <= theirs + own:
            for k, room in enumerate(rooms):
                if room >= training and reach(tuple((a, b + (k == n)) for n, (a, b) in enumerate(state))):
                    return True
        if inf >= cap or (inf + 1) * i_gpu > own:
            return False
        for evict in product(*(range(b + 1) for _, b in state)):
            gone = sum(evict)
            left = used + i_gpu - gone * training
            if left > cohort or (gone and left + training <= cohort):
                continue  # does not fit, or not minimal
            free = [room + e * training for room, e in zip(rooms, evict, strict=True)]
            fitting = [k for k, room in enumerate(free) if room >= i_gpu]
            if not fitting:
                return True
            after = tuple((a, b - e) for (a, b), e in zip(state, evict, strict=True))
            if any(reach(tuple((a + (k == n), b) for n, (a, b) in enumerate(after))) for k in fitting):
                return True
        return False

    return reach(tuple((0, 0) for _ in nodes))


def cluster_queue(name: str, nominal: int, borrowing: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": "f", "resources": [{"name": GPU, "nominalQuota": str(nominal),
                                             "borrowingLimit": str(borrowing)}]}]}]}}


def deployment(name: str, namespace: str, gpus: int, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "strategy": {"type": "Recreate"}, "template": {
                "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                "spec": {"containers": [{"name": "m", "resources": {"requests": {GPU: str(gpus)}}}]}}}}


def stack(inference: tuple[int, int], training: int, own: int, theirs: int) -> list[Any]:
    return objects(FLAVOR, LQ, TRN_LQ, cluster_queue("inf-cq", own, 0), cluster_queue("trn-cq", theirs, own),
                   deployment("w", "inf", *inference), deployment("t", "trn", training, 1))


def gpu_nodes(nodes: tuple[int, ...]) -> Any:
    pools, problems = parse_node_pools([{"name": f"p{k}", "count": 1, "labels": {}, "capacity": {GPU: str(g)}}
                                        for k, g in enumerate(nodes)])
    assert problems == []
    return pools


@st.composite
def reclaim_stacks(draw: st.DrawFn) -> tuple[tuple[int, int], int, tuple[int, ...], int, int]:
    """(inference (gpus, cap), training gpus, nodes, inference's nominalQuota, training's): every node holds an
    inference pod (else finding 1), inference's quota holds one, the two quotas fit the nodes summed (else the
    capacity rule)."""
    gpus = draw(st.integers(1, 3))
    nodes = tuple(draw(st.lists(st.integers(gpus, 5), min_size=1, max_size=3)))
    own = draw(st.integers(gpus, sum(nodes) - 1)) if sum(nodes) > gpus else gpus
    theirs = draw(st.integers(0, sum(nodes) - own))
    return (gpus, draw(st.integers(1, 3))), draw(st.integers(1, 3)), nodes, own, theirs


@settings(max_examples=300, deadline=None)
@given(case=reclaim_stacks())
@example(case=((3, 1), 1, (3, 3, 3), 4, 2))  # the fix named 0 where 3 is safe
@example(case=((2, 2), 3, (3, 4), 2, 5))  # refused once: inference's second replica placed beyond its own quota
@example(case=((2, 3), 3, (3, 3, 4), 4, 6))  # the safe quota found with inference bounded by its own quota: 3
def test_borrowers_that_own_quota_add_it_to_the_cohort_s(case):
    """Kills the mutants of `_reclaim_packing` that drop or misread the borrowers' own nominalQuota (the cohort's
    quota is inference's plus theirs) in the search and in the safe quota of the fix: refused exactly when the
    reference strands an inference pod, and the fix names the largest inference quota, at least one pod's, that the
    reference finds safe (the binary search once stopped below one pod and named 0: inference 3-GPU pods, quota 4,
    three 3-GPU nodes, training 1-GPU pods of quota 2: 3 is safe)."""
    inference, training, nodes, own, theirs = case
    if strands(inference, own + 1, nodes, own, 0):  # training's pods never fit its quota: inference alone
        return  # inference strands its own pods: finding 3, judged in test_pods_fit_nodes.py
    found = [v for v in check_pods_fit_nodes(stack(inference, training, own, theirs), gpu_nodes(nodes), ["inf-cq"])
             if v.field == QUOTA_FIELD]
    expected = strands(inference, training, nodes, own, theirs)
    event(f"stranded beside training: {expected}")
    assert bool(found) == expected, [v.message for v in found]
    if not expected:
        return
    safe = [q for q in range(inference[0], own) if not strands(inference, training, nodes, q, theirs)]
    most = max(safe, default=0)
    assert found[0].fix.endswith(f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most {most}, or add nodes")
    assert found[0].value == str(own) and found[0].policy == PODS_FIT_NODES.name


def test_the_reclaim_finding_says_what_strands_and_the_largest_safe_quota():
    """Two 4-GPU nodes; inference owns 4 GPUs as two 2-GPU replicas, training owns 4 and borrows inference's with
    1-GPU pods: three training pods on each node leave 1 GPU per node, and a replica within inference's quota and
    the cohort's 8 is admitted with no node. The whole finding, at inference's nominalQuota: the borrowers' shapes,
    the placement, the resize to whole replicas (2-GPU training pods never strand a 2-GPU replica), and 3, the
    largest inference quota that is safe (one replica: a reclaim of one 1-GPU pod frees 2 on that node)."""
    other = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a-cq"},
             "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                 {"name": "g", "resources": [{"name": GPU, "nominalQuota": "4"}]}]}]}}
    # a-cq, of the cohort too but with quota in another flavor only, borrows nothing here and is passed over
    found = check_pods_fit_nodes([*stack((2, 2), 1, 4, 4), *objects(other)], gpu_nodes((4, 4)), ["inf-cq"])
    assert [(v.policy, v.field, v.value) for v in found] == [(PODS_FIT_NODES.name, QUOTA_FIELD, "4")]
    assert found[0].rule == (
        "training borrows the idle nominalQuota of flavor 'f' with pods of other shapes (Deployment 'trn/t' pod "
        f"('{GPU}' 1)), and Kueue picks the workloads it preempts to reclaim that quota by quota, not by node "
        "(kueue#5243): after a node of pool 'p0' holds 3 pod(s) (Deployment 'trn/t' pod); a node of pool 'p1' "
        f"holds 3 pod(s) (Deployment 'trn/t' pod), one more Deployment 'inf/w' pod ('{GPU}' 2), within inference's "
        "nominalQuota, fits no node, so it is admitted and stays Pending although training gave back its quota")
    assert found[0].fix == (
        "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as whole "
        f"multiples of one Deployment 'inf/w' pod ('{GPU}' 2), or lower the nominalQuota of '{GPU}' in flavor 'f' to "
        "at most 3, or add nodes")
    # on two 3-GPU nodes two training pods per node strand a 2-GPU replica (inference 3, training 3: the cohort's 6
    # holds 4 + 2), and 2-GPU training pods (one a node) would too: no resize is offered; an inference quota of 2
    # leaves a cohort of 5, too small to fill both nodes to 2 and admit a replica
    found = check_pods_fit_nodes(stack((2, 1), 1, 3, 3), gpu_nodes((3, 3)), ["inf-cq"])
    assert [v.fix for v in found] == [f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most 2, or add nodes"]


@pytest.mark.parametrize(("beside_training", "case"), [(False, ((2, 3), 1, 6, 2)), (True, ((2, 2), 1, 4, 4))])
def test_a_search_out_of_budget_fails_closed_at_the_quota(monkeypatch, beside_training, case):
    """The blocking search given no steps (`budget` 0: what a stack too large for SEARCH_BUDGET meets), alone
    (finding 3: three 2-GPU replicas in 6 GPUs on two 4-GPU nodes, which needs a search) or only beside training's
    pods (finding 4: inference's two replicas are decided without one): the rule cannot decide, so it refuses at
    inference's nominalQuota and says why (kills the mutants of both fail-closed findings' words, field and
    value)."""
    def starved(*args: Any, **kwargs: Any) -> Any:
        if beside_training and "strandable" not in kwargs:
            return blocking_placement(*args, **kwargs)
        return blocking_placement(*args, **{**kwargs, "budget": 0})

    monkeypatch.setattr(pods_fit_nodes, "blocking_placement", starved)
    found = check_pods_fit_nodes(stack(*case), gpu_nodes((4, 4)), ["inf-cq"])
    assert [(v.policy, v.field, v.value) for v in found] == [(PODS_FIT_NODES.name, QUOTA_FIELD, str(case[2]))]
    if beside_training:
        assert (found[0].rule, found[0].fix) == (
            "whether every pod inference may run within the nominalQuota of flavor 'f' still finds a node beside the "
            f"pods that borrow its idle quota (Deployment 'trn/t' pod ('{GPU}' 1)) could not be decided within the "
            "search budget, so the policy fails closed",
            "size the borrowers' pods as whole multiples of inference's pod, or lower the nominalQuota to whole "
            "nodes' worth of inference pods")
    else:
        assert (found[0].rule, found[0].fix) == (
            "whether every pod inference may run within the nominalQuota of flavor 'f' finds a node could not be "
            "decided within the search budget, so the policy fails closed",
            "give the flavor a Topology (spec.topologyName: Kueue then checks per-node fit at admission) and lower "
            "the nominalQuota to whole nodes' worth of pods, or declare fewer pod shapes")


def inference_flavors(name: str, flavors: list[tuple[str, int, int]]) -> dict[str, Any]:
    """ClusterQueue `name` of cohort c over GPU flavors [(flavor, nominalQuota, borrowingLimit)]."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": f, "resources": [{"name": GPU, "nominalQuota": str(n), "borrowingLimit": str(b)}]}
                for f, n, b in flavors]}]}}


def test_two_flavors_on_common_nodes_are_named_together_and_the_fix_lowers_the_first():
    """Inference's flavors f0 and f1 (3 GPUs each, no nodeLabels: both select both 3-GPU nodes) beside training
    borrowing in both with 1-GPU pods: two training pods on each node strand a 2-GPU replica. The finding names
    both flavors, and the fix lowers f0's quota to 2 (a group quota of 5: no two nodes filled to 2 beside a
    replica) - f1's 3 kept (kills the mutants of the flavors' names and of the holder's share of the quota)."""
    flavor = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}, "spec": {}}
              for f in ("f0", "f1")]
    found = check_pods_fit_nodes(objects(*flavor, LQ, TRN_LQ, inference_flavors("inf-cq", [("f0", 3, 0), ("f1", 3, 0)]),
                                         inference_flavors("trn-cq", [("f0", 0, 3), ("f1", 0, 3)]),
                                         deployment("w", "inf", 2, 2), deployment("t", "trn", 1, 1)),
                                 gpu_nodes((3, 3)), ["inf-cq"])
    assert [(v.field, v.value) for v in found] == [(QUOTA_FIELD, "3")]
    assert found[0].rule == (
        "training borrows the idle nominalQuota of flavors 'f0' and 'f1' with pods of other shapes (Deployment "
        f"'trn/t' pod ('{GPU}' 1)), and Kueue picks the workloads it preempts to reclaim that quota by quota, not by "
        "node (kueue#5243): after a node of pool 'p0' holds 2 pod(s) (Deployment 'trn/t' pod); a node of pool 'p1' "
        f"holds 2 pod(s) (Deployment 'trn/t' pod), one more Deployment 'inf/w' pod ('{GPU}' 2), within inference's "
        "nominalQuota, fits no node, so it is admitted and stays Pending although training gave back its quota")
    assert found[0].fix == f"lower the nominalQuota of '{GPU}' in flavor 'f0' to at most 2, or add nodes"


def test_the_finding_names_the_inference_pod_that_strands_not_the_first():
    """Inference runs 1-GPU pods (Deployment a, first) and 2-GPU pods (b) in 4 GPUs; training owns 4 and borrows
    with 1-GPU pods on two 4-GPU nodes. Only b's pod can be left with no node (a 1-GPU pod within the cohort's
    quota always finds one): the finding names b (kills reporting the first shape)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, cluster_queue("inf-cq", 4, 0),
                                         cluster_queue("trn-cq", 4, 4), deployment("a", "inf", 1, 2),
                                         deployment("b", "inf", 2, 2), deployment("t", "trn", 1, 1)),
                                 gpu_nodes((4, 4)), ["inf-cq"])
    assert [(v.field, v.fix) for v in found] == [
        (QUOTA_FIELD, f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most 3, or add nodes")]
    assert f"one more Deployment 'inf/b' pod ('{GPU}' 2), within inference's nominalQuota" in found[0].rule


def covering(name: str, entries: list[tuple[str, int, int]]) -> dict[str, Any]:
    """ClusterQueue `name` of cohort c, flavor f, one entry per (resource, nominalQuota, borrowingLimit)."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [r for r, _, _ in entries],
                                                            "flavors": [{"name": "f", "resources": [
                {"name": r, "nominalQuota": str(n), "borrowingLimit": str(b)} for r, n, b in entries]}]}]}}


def requesting(name: str, namespace: str, requests: dict[str, str], replicas: int) -> dict[str, Any]:
    manifest = deployment(name, namespace, 1, replicas)
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = requests
    return manifest


def cpu_gpu_nodes(gpus: int, cpus: int, count: int) -> Any:
    pools, problems = parse_node_pools([{"name": "p", "count": count, "labels": {},
                                         "capacity": {GPU: str(gpus), "cpu": str(cpus)}}])
    assert problems == []
    return pools


@pytest.mark.parametrize(("training_cpu", "refused"), [(3, False), (4, True)])
def test_borrowers_of_cpu_only_strand_by_cpu(training_cpu, refused):
    """Training covers only cpu (nominalQuota `training_cpu`, borrowing 4) and runs 1-cpu pods; inference owns 4 GPUs
    and 4 cpus as two (2 GPU, 2 cpu) replicas on two (4 GPU, 4 cpu) nodes. With 4 cpus of its own training can hold
    3 cpus on each node beside the cohort's 8 and leave a replica no node; with 3 it cannot. The cohort's GPU quota
    is inference's alone, the borrowers own none of it (kills reading a borrower's missing resource as None)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 4, 0), ("cpu", 4, 0)]),
                                         covering("trn-cq", [("cpu", training_cpu, 4)]),
                                         requesting("w", "inf", {GPU: "2", "cpu": "2"}, 2),
                                         requesting("t", "trn", {"cpu": "1"}, 1)),
                                 cpu_gpu_nodes(4, 4, 2), ["inf-cq"])
    assert [v.field for v in found] == ([QUOTA_FIELD] if refused else [])
    if refused:  # the GPU quota is not what strands it: no GPU quota of at least one replica is safe
        assert found[0].fix.endswith(f"or lower the nominalQuota of '{GPU}' in flavor 'f' to at most 0, or add nodes")


def test_a_resource_only_the_borrowers_cover_bounds_their_pods_by_their_quota():
    """Inference covers GPUs only (4, as two 2-GPU replicas); training covers GPUs (2, borrowing 4) and cpu (3) with
    (1 GPU, 1 cpu) pods on two (3 GPU, 8 cpu) nodes: two training pods on one node and a replica on the other
    leave 1 GPU on each, and the second replica (inference at 4, the cohort at 6 GPUs) has no node; training's cpu
    quota (3 pods) allows that placement (kills dropping a resource inference does not cover from the cohort)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 4, 0)]),
                                         covering("trn-cq", [(GPU, 2, 4), ("cpu", 3, 0)]),
                                         requesting("w", "inf", {GPU: "2"}, 2),
                                         requesting("t", "trn", {GPU: "1", "cpu": "1"}, 1)),
                                 cpu_gpu_nodes(3, 8, 2), ["inf-cq"])
    assert [(v.field, v.fix) for v in found] == [
        (QUOTA_FIELD, f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most 3, or add nodes")]
    assert ("after a node of pool 'p' holds 1 pod(s) (Deployment 'inf/w' pod); a node of pool 'p' holds 2 pod(s) "
            f"(Deployment 'trn/t' pod), one more Deployment 'inf/w' pod ('{GPU}' 2)") in found[0].rule


@pytest.mark.parametrize(("training_cpu", "refused"), [(3, False), (4, True)])
def test_two_borrower_workloads_share_the_quota_of_a_resource_only_they_cover(training_cpu, refused):
    """Inference covers GPUs only (4, as two 2-GPU replicas) on two 4-GPU nodes; training covers GPUs (4, borrowing 4)
    and cpu (`training_cpu`) and runs two Deployments of (1 GPU, 1 cpu) pods. Stranding a replica takes four training
    pods (three on one node, one beside a replica on the other); training's cpu quota holds both Deployments to
    `training_cpu` pods together, not each (kills leaving cpu out of the cohort's quota, or reading inference's
    missing cpu quota as 1)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 4, 0)]),
                                         covering("trn-cq", [(GPU, 4, 4), ("cpu", training_cpu, 0)]),
                                         requesting("w", "inf", {GPU: "2"}, 2),
                                         requesting("t1", "trn", {GPU: "1", "cpu": "1"}, 1),
                                         requesting("t2", "trn", {GPU: "1", "cpu": "1"}, 1)),
                                 cpu_gpu_nodes(4, 8, 2), ["inf-cq"])
    assert [v.field for v in found] == ([QUOTA_FIELD] if refused else [])
    if refused:  # both borrowers' shapes named
        assert (f"with pods of other shapes (Deployment 'trn/t1' pod ('cpu' 1, '{GPU}' 1), Deployment 'trn/t2' pod "
                f"('cpu' 1, '{GPU}' 1)), and Kueue picks") in found[0].rule


def test_no_resize_is_offered_when_pods_of_the_replica_s_own_size_strand_it():
    """A (1 GPU, 1 cpu) inference pod on a (1 GPU, 2 cpu) node and a (2 GPU, 1 cpu) node, beside training's 1-GPU
    pods of a quota larger than the nodes: training sized like the replica would fill one node each and strand it too
    (identical pods fit one a node here), so the fix offers no resize, only the quota (no inference quota of a whole
    pod is safe: 0). Kills leaving requests of exactly 1 out of the resized borrowers' cap."""
    pools, problems = parse_node_pools([{"name": "a", "count": 1, "labels": {}, "capacity": {GPU: "1", "cpu": "2"}},
                                        {"name": "b", "count": 1, "labels": {}, "capacity": {GPU: "2", "cpu": "1"}}])
    assert problems == []
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 1, 0), ("cpu", 1, 0)]),
                                         covering("trn-cq", [(GPU, 3, 1), ("cpu", 2, 1)]),
                                         requesting("w", "inf", {GPU: "1", "cpu": "1"}, 1),
                                         requesting("t", "trn", {GPU: "1"}, 1)), pools, ["inf-cq"])
    assert [(v.field, v.value, v.fix) for v in found] == [
        (QUOTA_FIELD, "1", f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most 0, or add nodes")]


@pytest.mark.parametrize("cohort", ["", None])
def test_queues_without_a_cohort_borrow_nothing(cohort):
    """cohortName "" (or null) is no cohort (Kueue v0.19.2: a ClusterQueue borrows only within its cohort): the
    stack that strands a replica beside training in cohort c is accepted when neither queue has a cohort."""
    manifests = stack((2, 2), 1, 4, 4)
    for obj in manifests:
        if obj.kind == "ClusterQueue":
            obj.props["spec"]["cohortName"] = cohort
            for entry in obj.props["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
                entry.pop("borrowingLimit")
    assert check_pods_fit_nodes(manifests, gpu_nodes((4, 4)), ["inf-cq"]) == []


def test_a_borrower_that_declares_no_pods_is_judged_as_one_gpu_pods_of_inference_s_share():
    """Training borrows inference's 8 GPUs and 8 cpus and declares no TrainingRuntime or workload: its pods are
    judged as the smallest GPU pods it may run, one GPU with inference's per-GPU share of cpu (1), and three on each
    (4 GPU, 16 cpu) node strand a (2 GPU, 2 cpu) replica (fuzzer stack fz862 without declared training pods). The
    finding names that shape (kills `_borrowers`' share-pod branch: its name, requests and quota)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 8, 0), ("cpu", 8, 0)]),
                                         covering("trn-cq", [(GPU, 0, 8), ("cpu", 0, 8)]),
                                         requesting("w", "inf", {GPU: "2", "cpu": "2"}, 4)),
                                 cpu_gpu_nodes(4, 16, 2), ["inf-cq"])
    share = "1-GPU pod of ClusterQueue 'trn-cq' (no TrainingRuntime or workload declares its pods)"
    assert [(v.field, v.value) for v in found] == [(QUOTA_FIELD, "8")]
    assert found[0].rule == (
        f"training borrows the idle nominalQuota of flavor 'f' with pods of other shapes ({share} ('cpu' 1, '{GPU}' "
        "1)), and Kueue picks the workloads it preempts to reclaim that quota by quota, not by node (kueue#5243): "
        f"after a node of pool 'p' holds 3 pod(s) ({share}); a node of pool 'p' holds 3 pod(s) ({share}), one more "
        f"Deployment 'inf/w' pod ('cpu' 2, '{GPU}' 2), within inference's nominalQuota, fits no node, so it is "
        "admitted and stays Pending although training gave back its quota")
    assert found[0].fix.endswith(f"or lower the nominalQuota of '{GPU}' in flavor 'f' to at most 7, or add nodes")


def test_a_quota_resource_inference_s_pods_do_not_ask_for_bounds_nothing():
    """Inference covers GPUs (4) and cpu (0) but its 2-GPU pods ask no cpu; training owns 6 GPUs and borrows with
    3-GPU pods on nodes of 3, 3 and 4 GPUs: a replica is stranded after one on a 3-GPU node and training's pods on
    the others, as without the cpu entry (kills counting an unrequested resource against inference's own quota)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 4, 0), ("cpu", 0, 0)]),
                                         covering("trn-cq", [(GPU, 6, 4)]),
                                         requesting("w", "inf", {GPU: "2"}, 3), requesting("t", "trn", {GPU: "3"}, 1)),
                                 gpu_nodes((3, 3, 4)), ["inf-cq"])
    without = check_pods_fit_nodes(stack((2, 3), 3, 4, 6), gpu_nodes((3, 3, 4)), ["inf-cq"])
    assert [(v.field, v.fix) for v in found] == [(v.field, v.fix) for v in without] != []
