"""PODS_FIT_NODES on every serving kind's pod shapes (issue 42: the survivors of `_serving_pods`, `_template`, `_int`
and `_surge` in the mutation target rules-placement).

Each workload's pods are judged with how many of them may run at once, written here from the upstream APIs, not
from the rule: an InferenceService runs max(maxReplicas, max(minReplicas, 1)) replicas (KServe v1beta1
`ComponentExtensionSpec`: minReplicas default 1, maxReplicas default 0 = minReplicas) plus its deploymentStrategy's
surge; a Deployment `replicas` (default 1) plus `maxSurge` (apps/v1 `RollingUpdateDeployment`: default 25%, a
percentage of replicas rounded up, none for Recreate); a StatefulSet `replicas` and no surge; a LeaderWorkerSet
(replicas + min(maxSurge, replicas)) groups (lws v0.9.0: maxSurge default 0, capped at replicas), each one leader
and size - 1 workers (the leaderTemplate, else size pods of the workerTemplate). The oracle of the packing finding
is a simulation: Kueue admits pods within the GPU nominalQuota and their caps, the scheduler binds each on any node
with room (`fit.go` fitsRequest on GPUs); a pod is stranded when it is admissible and fits no node.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject
from kueue_cohorts.policy.rules.vocabulary.placement import Shape, blocking_placement, judged_resources

GPU = "nvidia.com/gpu"
QUEUE = {"kueue.x-k8s.io/queue-name": "lq"}
QUOTA_FIELD = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"


def objects(*manifests: dict[str, Any]) -> list[KubeObject]:
    """KubeObjects of plain manifests (apiVersion split into group and version)."""
    out = []
    for m in manifests:
        group, _, version = m["apiVersion"].rpartition("/")
        out.append(KubeObject("", m["metadata"]["name"], group, version, m["kind"], m))
    return out


def gpu_pools(count: int, gpus: int, name: str = "p") -> Any:
    """One pool of `count` nodes with `gpus` GPUs each (GPUs only: the only judged resource)."""
    pools, problems = parse_node_pools([{"name": name, "count": count, "labels": {}, "capacity": {GPU: str(gpus)}}])
    assert problems == []
    return pools


def inference_cq(quota: int) -> dict[str, Any]:
    """ClusterQueue inf-cq of cohort c: one flavor f with `quota` GPUs, borrowingLimit 0."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": "f", "resources": [{"name": GPU, "nominalQuota": str(quota), "borrowingLimit": "0"}]}]}]}}


FLAVOR = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}}
LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "inf"},
      "spec": {"clusterQueue": "inf-cq"}}


@dataclass(frozen=True)
class Expected:
    """One pod shape the workload makes: its name in messages, GPUs per pod, how many may run at once, and the
    field (and raw value) that requests its GPUs."""

    name: str
    gpus: int
    cap: int
    field: str
    cpu: bool = False
    """Whether the pod asks for a cpu too (named in the packing finding's amounts)."""

    def amounts(self) -> str:
        return ("'cpu' 1, " if self.cpu else "") + f"'{GPU}' {self.gpus}"


def pod_spec(gpus: int, in_init: bool) -> dict[str, Any]:
    """A pod spec asking `gpus` GPUs in its main container, or (in_init) in an init container beside a main
    container that asks only for cpu (component-helpers PodRequests: the init container's request is the pod's)."""
    if in_init:
        return {"initContainers": [{"name": "load", "resources": {"requests": {GPU: str(gpus)}}}],
                "containers": [{"name": "m", "resources": {"requests": {"cpu": "1"}}}]}
    return {"containers": [{"name": "m", "resources": {"requests": {GPU: str(gpus)}}}]}


def request_field(template: str, in_init: bool) -> str:
    return f'{template}.{"initContainers" if in_init else "containers"}[0].resources.requests["{GPU}"]'


def percent_up(percent: int, of: int) -> int:
    """A percentage of `of`, rounded up (apps/v1 maxSurge)."""
    return (of * percent + 99) // 100


SURGES = st.sampled_from([None, "Recreate", 0, 1, 2, 2.0, "50%", "100%"])
"""A rollout's maxSurge: None (absent: the default), Recreate, an int (a whole float as JSON gives it), a
percentage."""


def surge_of(surge: Any, replicas: int, default_percent: int) -> int:
    if surge is None:
        return percent_up(default_percent, replicas)
    if surge == "Recreate":
        return 0
    if isinstance(surge, str):
        return percent_up(int(surge[:-1]), replicas)
    return int(surge)


def deployment_strategy(surge: Any) -> Any:
    if surge is None:
        return None
    if surge == "Recreate":
        return {"type": "Recreate"}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge}}


@st.composite
def workloads(draw: st.DrawFn) -> tuple[dict[str, Any], list[Expected]]:
    """A serving workload of any kind queued to lq, with its pod shapes as `Expected` (in the rule's order)."""
    kind = draw(st.sampled_from(["InferenceService", "Deployment", "StatefulSet", "LeaderWorkerSet"]))
    gpus = draw(st.integers(1, 4))
    in_init = draw(st.booleans())
    meta = {"name": "w", "namespace": "inf", "labels": QUEUE}
    if kind == "InferenceService":
        low, high = draw(st.sampled_from([None, 0, 1, 2, 3])), draw(st.sampled_from([None, 0, 1, 3, 4.0]))
        surge = draw(SURGES)
        predictor: dict[str, Any] = {"model": {"modelFormat": {"name": "x"},
                                               **pod_spec(gpus, in_init)["containers"][0]}}
        if in_init:  # the predictor's own containers (no init containers in a predictor): a second container
            predictor = {"containers": [{"name": "m", "resources": {"requests": {"cpu": "1"}}},
                                        {"name": "n", "resources": {"requests": {GPU: str(gpus)}}}]}
        for key, value in (("minReplicas", low), ("maxReplicas", high)):
            if value is not None:
                predictor[key] = value
        if deployment_strategy(surge) is not None:
            predictor["deploymentStrategy"] = deployment_strategy(surge)
        peak = max(int(high or 0), max(1 if low is None else low, 1))
        field = (f'spec.predictor.containers[1].resources.requests["{GPU}"]' if in_init
                 else f'spec.predictor.model.resources.requests["{GPU}"]')
        manifest = {"apiVersion": "serving.kserve.io/v1beta1", "kind": kind, "metadata": meta,
                    "spec": {"predictor": predictor}}
        return manifest, [Expected("InferenceService 'inf/w' replica", gpus, peak + surge_of(surge, peak, 25),
                                   field, in_init)]
    replicas = draw(st.sampled_from([None, 1, 2, 3, 2.0]))
    count = 1 if replicas is None else int(replicas)
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    if kind == "LeaderWorkerSet":
        size = draw(st.sampled_from([None, 1, 2, 3]))
        surge = draw(st.sampled_from([None, 0, 1, 3, "50%"]))
        groups = count + min(0 if surge is None else surge_of(surge, count, 0), count)
        lwt: dict[str, Any] = {"workerTemplate": {"spec": pod_spec(gpus, in_init)}}
        if size is not None:
            lwt["size"] = size
        pods_per_group = size or 1
        worker_field = request_field("spec.leaderWorkerTemplate.workerTemplate.spec", in_init)
        if draw(st.booleans()):
            leader_gpus = draw(st.integers(1, 4))
            lwt["leaderTemplate"] = {"spec": pod_spec(leader_gpus, False)}
            expected = [Expected("LeaderWorkerSet 'inf/w' leader pod", leader_gpus, groups, request_field(
                "spec.leaderWorkerTemplate.leaderTemplate.spec", False))]
            if pods_per_group > 1:
                expected.append(Expected("LeaderWorkerSet 'inf/w' worker pod", gpus, groups * (pods_per_group - 1),
                                         worker_field, in_init))
        else:
            expected = [Expected("LeaderWorkerSet 'inf/w' pod", gpus, groups * pods_per_group, worker_field,
                                 in_init)]
        spec["leaderWorkerTemplate"] = lwt
        if surge is not None:
            spec["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": surge}}
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec}, expected
    surge = draw(SURGES)
    spec["template"] = {"metadata": {"labels": QUEUE}, "spec": pod_spec(gpus, in_init)}
    if kind == "Deployment" and deployment_strategy(surge) is not None:
        spec["strategy"] = deployment_strategy(surge)
    if kind == "StatefulSet" and surge is not None:  # a StatefulSet's update never surges, whatever it says
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    extra = surge_of(surge, count, 25) if kind == "Deployment" else 0
    return ({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec},
            [Expected(f"{kind} 'inf/w' pod", gpus, count + extra, request_field("spec.template.spec", in_init),
                      in_init)])


def strands(shapes: list[tuple[int, int]], nodes: tuple[int, ...], quota: int, target: int) -> bool:
    """The reference: can pods of `shapes` [(gpus, cap)], admitted within `quota` GPUs and their caps and each
    bound on any node with room (`nodes`: GPUs per node), reach a state where one more pod of shape `target`, still
    within the quota and its cap, fits no node?"""
    t_gpus, t_cap = shapes[target]

    @cache
    def reach(rooms: tuple[int, ...], counts: tuple[int, ...]) -> bool:
        used = sum(g * c for (g, _), c in zip(shapes, counts, strict=True))
        if counts[target] < t_cap and used + t_gpus <= quota and all(r < t_gpus for r in rooms):
            return True
        for i, (gpus, cap) in enumerate(shapes):
            if counts[i] >= cap or used + gpus > quota:
                continue
            more = tuple(c + (i == j) for j, c in enumerate(counts))
            for k in sorted({k for k, r in enumerate(rooms) if r >= gpus}, key=lambda k: rooms[k]):
                after = tuple(sorted(r - gpus if j == k else r for j, r in enumerate(rooms)))
                if reach(after, more):
                    return True
        return False

    return reach(tuple(sorted(nodes)), tuple(0 for _ in shapes))


@settings(max_examples=400, deadline=None)
@given(workload=workloads(), node_gpus=st.integers(1, 5), count=st.integers(1, 3), quota_share=st.integers(1, 15))
def test_each_serving_kind_s_pods_are_judged_with_their_peak_and_surge(workload, node_gpus, count, quota_share):
    """Kills the mutants of `_serving_pods` that read a kind, a replica count, a surge or a template wrong (the
    InferenceService branch, LeaderWorkerSet's leader/worker split and its capped surge, a Deployment's surge,
    a StatefulSet's none), of `_template` (init containers' requests and fields), `_int` (whole floats) and
    `_surge`: the per-pod finding names the pod and its request field exactly, and the packing finding is raised
    exactly when the simulation strands a pod, at the quota, with the largest safe quota in its fix."""
    manifest, expected = workload
    quota = min(quota_share, node_gpus * count)
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, inference_cq(quota), manifest), gpu_pools(count, node_gpus),
                                 ["inf-cq"])
    assert all(v.policy == PODS_FIT_NODES.name for v in found)
    wide = [e for e in expected if node_gpus < e.gpus <= quota]  # Kueue may admit one; no node holds it
    assert [(v.field, v.value, v.fix) for v in found if "nominalQuota" not in v.field] == [
        (e.field, str(e.gpus), f"request at most {node_gpus} of '{GPU}' per pod (split the work over more pods), or "
         f"add a node pool whose nodes have {e.gpus} of '{GPU}' and carry the nodeLabels of flavor 'f'")
        for e in wide]
    for v, e in zip((v for v in found if "nominalQuota" not in v.field), wide, strict=True):
        assert v.rule.startswith(f"one {e.name} asks for '{GPU}' {e.gpus} on one node, and no node of flavor 'f' "
                                 f"has that (the closest, pool 'p', has '{GPU}' {node_gpus} per node"), v.rule
    if any(e.gpus > node_gpus for e in expected):
        return  # a pod no node holds is the per-pod finding's; the packing judges pods that fit a node
    shapes = [(e.gpus, e.cap) for e in expected]
    nodes = (node_gpus,) * count
    stranded = next((i for i in range(len(shapes)) if strands(shapes, nodes, quota, i)), None)
    packing = [v for v in found if v.field == QUOTA_FIELD]
    if stranded is None:
        assert packing == [], [v.message for v in packing]
        return
    most = next(q for q in range(quota - 1, -1, -1)
                if not any(strands(shapes, nodes, q, i) for i in range(len(shapes))))
    assert [(v.value, v.fix) for v in packing] == [(str(quota), (
        f"lower the nominalQuota of '{GPU}' in flavor 'f' to at most {most}, or size the pods to divide the nodes "
        "(or add nodes), or give the flavor a Topology (spec.topologyName) so that Kueue checks per-node fit "
        "before it admits"))]
    target = expected[stranded]
    assert f"one more {target.name} ({target.amounts()}), still within the quota, fits no node" in packing[0].rule


def test_an_inference_service_without_replica_bounds_runs_one_replica_and_a_quarter_surge():
    """minReplicas and maxReplicas absent: one replica, plus the default 25% surge rounded up (one more): two 3-GPU
    replicas on two 4-GPU nodes fit one a node, three do not (kills a default of 2 for minReplicas or of 1 for
    maxReplicas via the quota needed)."""
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "w", "namespace": "inf", "labels": QUEUE},
            "spec": {"predictor": {"model": {"resources": {"requests": {GPU: "3"}}}}}}
    assert check_pods_fit_nodes(objects(FLAVOR, LQ, inference_cq(8), isvc), gpu_pools(2, 4), ["inf-cq"]) == []
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, inference_cq(9), isvc), gpu_pools(3, 3), ["inf-cq"])
    assert found == []  # 2 replicas, 3 nodes of 3: every order places them
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, inference_cq(8), isvc), gpu_pools(1, 4), ["inf-cq"])
    assert [v.field for v in found] == [QUOTA_FIELD]  # the surge replica has no node: 2 x 3 GPUs on one 4-GPU node


def _isvc(predictor: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "w", "namespace": "inf", "labels": QUEUE},
            "spec": {"predictor": {**predictor, "model": {"resources": {"requests": {GPU: "2"}}}}}}


def _apps(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "inf", "labels": QUEUE},
            "spec": {**spec, "template": {"metadata": {"labels": QUEUE}, "spec": pod_spec(2, False)}}}


def _lws(spec: dict[str, Any], lwt: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "w", "namespace": "inf", "labels": QUEUE},
            "spec": {**spec, "leaderWorkerTemplate": lwt}}


TWO_GPUS = {"spec": pod_spec(2, False)}
CPU_ONLY = {"spec": {"containers": [{"name": "m", "resources": {"requests": {"cpu": "1"}}}]}}
CAPS = [
    ("an InferenceService without bounds: 1 replica + 25% of 1", _isvc({}), 2),
    ("minReplicas 0 is 1", _isvc({"minReplicas": 0, "maxReplicas": 0}), 2),
    ("maxReplicas 4 over minReplicas 2, Recreate", _isvc({"minReplicas": 2, "maxReplicas": 4,
                                                          "deploymentStrategy": {"type": "Recreate"}}), 4),
    ("minReplicas 3 alone, maxSurge 50% of 3 rounded up", _isvc({"minReplicas": 3, "deploymentStrategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%"}}}), 5),
    ("whole floats (JSON numbers), maxSurge 1", _isvc({"minReplicas": 2.0, "maxReplicas": 3.0, "deploymentStrategy": {
        "rollingUpdate": {"maxSurge": 1}}}), 4),
    ("a Deployment's surge is not capped at its replicas", _apps("Deployment", {"replicas": 1, "strategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}), 3),
    ("a Deployment without replicas or strategy: 1 + 25% of 1", _apps("Deployment", {}), 2),
    ("4 replicas + 25% of 4", _apps("Deployment", {"replicas": 4}), 5),
    ("a StatefulSet never surges", _apps("StatefulSet", {"replicas": 3}), 3),
    ("a LeaderWorkerSet's surge is capped at its replicas", _lws({"replicas": 1, "rolloutStrategy": {
        "rollingUpdateConfiguration": {"maxSurge": 3}}}, {"size": 1, "workerTemplate": TWO_GPUS}), 2),
    ("groups of size 3 without a leaderTemplate, maxSurge 50% of 2", _lws({"replicas": 2, "rolloutStrategy": {
        "rollingUpdateConfiguration": {"maxSurge": "50%"}}}, {"size": 3, "workerTemplate": TWO_GPUS}), 9),
    ("a LeaderWorkerSet without size: groups of one pod", _lws({"replicas": 2}, {"workerTemplate": TWO_GPUS}), 2),
    ("size 2: one worker per group", _lws({"replicas": 2}, {"size": 2, "leaderTemplate": CPU_ONLY,
                                                             "workerTemplate": TWO_GPUS}), 2),
    ("one leader per group", _lws({"replicas": 2}, {"size": 3, "leaderTemplate": TWO_GPUS,
                                                     "workerTemplate": CPU_ONLY}), 2),
    ("size - 1 workers per group", _lws({"replicas": 2}, {"size": 3, "leaderTemplate": CPU_ONLY,
                                                           "workerTemplate": TWO_GPUS}), 4),
]


@pytest.mark.parametrize(("manifest", "cap"), [pytest.param(m, c, id=why) for why, m, c in CAPS])
def test_how_many_pods_of_a_workload_may_run_at_once(manifest, cap):
    """A hand table of each kind's peak plus surge (the module docstring's upstream defaults), read through the
    packing finding: 2-GPU pods on 3-GPU nodes, one pod a node, within a quota for cap + 1 pods: cap - 1 nodes strand
    one, cap nodes hold them all (kills `_serving_pods` and `_surge` reading a bound, a default or the LWS cap
    wrong, whatever the random draws of the property test above reach)."""
    quota = 2 * (cap + 1)
    short = check_pods_fit_nodes(objects(FLAVOR, LQ, inference_cq(quota), manifest), gpu_pools(cap - 1, 3),
                                 ["inf-cq"])
    enough = check_pods_fit_nodes(objects(FLAVOR, LQ, inference_cq(quota), manifest), gpu_pools(cap, 3), ["inf-cq"])
    assert ([v.field for v in short], enough) == ([QUOTA_FIELD], [])


# --- finding 1 for the flavors Kueue may assign a pod --------------------------------------------------------------
# PODS_FIT_NODES finding 1, one pod on one node, for the flavors Kueue may assign it (issue 42: `_flavor_quotas`,
# `_assignable`, `_one_pod`, `closest_node` and `shortfall` in the mutation target rules-placement).
#
# Kueue v0.19.2 `pkg/scheduler/flavorassigner` assigns a pod a flavor whose nominalQuota plus what it may borrow holds
# it: nothing without a cohort (`apis/kueue/v1beta2/clusterqueue_types.go`: borrowingLimit "must be null if the
# ClusterQueue doesn't belong to a cohort"), up to borrowingLimit in a cohort, and without a borrowingLimit whatever the
# cohort has. A pod no flavor can hold is never admitted (inference-fits-nominal's concern), so only a pod some flavor
# may take and no node of that flavor holds is reported, at its request field.

FIELD = f'spec.template.spec.containers[0].resources.requests["{GPU}"]'


def queue(cohort: Any, nominal: int, borrowing: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": GPU, "nominalQuota": str(nominal)}
    if borrowing is not None:
        entry["borrowingLimit"] = str(borrowing)
    spec: dict[str, Any] = {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
        {"name": "f", "resources": [entry]}]}]}
    if cohort != "absent":
        spec["cohortName"] = cohort
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
            "spec": spec}


def deployment(requests: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "inf"},
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "template": {
                "metadata": {"labels": QUEUE},
                "spec": {"containers": [{"name": "m", "resources": {"requests": requests}}]}}}}


def pools(*specs: tuple[str, int, dict[str, str]]) -> Any:
    parsed, problems = parse_node_pools([{"name": name, "count": count, "labels": {}, "capacity": capacity}
                                         for name, count, capacity in specs])
    assert problems == []
    return parsed


@settings(max_examples=200, deadline=None)
@given(cohort=st.sampled_from(["absent", "", None, "c"]), nominal=st.integers(0, 6),
       borrowing=st.sampled_from([None, 0, 1, 3]), pod=st.integers(1, 8), node=st.integers(1, 6))
def test_a_pod_too_wide_for_every_node_is_reported_when_some_flavor_may_take_it(cohort, nominal, borrowing, pod,
                                                                                 node):
    """Kills `_flavor_quotas` reading the cohort or the borrowingLimit wrong and `_assignable` comparing wrong: the
    finding exactly when the pod exceeds the node and nominalQuota plus what the queue may borrow holds it."""
    in_cohort = cohort == "c"
    if not in_cohort and borrowing is not None:
        borrowing = None  # Kueue's validation: no borrowingLimit outside a cohort
    usable = nominal + (0 if not in_cohort else borrowing if borrowing is not None else 10 ** 6)
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, queue(cohort, nominal, borrowing), deployment({GPU: str(pod)})),
                                 pools(("p", 1, {GPU: str(node)})), [])
    assert [(v.field, v.value) for v in found] == ([(FIELD, str(pod))] if node < pod <= usable else [])


def test_the_closest_pool_misses_the_fewest_resources_and_the_fix_names_each_short_one():
    """A (4 GPU, 16Gi) pod: pool a (2 GPU, 8Gi) misses both, pool b (2 GPU, 32Gi) only GPUs, pool c (8 GPU, 8Gi) only
    memory: b is named (the first of those missing fewest), with what its node has; a pod missing both on every pool
    gets a fix naming both, sorted (kills `closest_node`'s and `shortfall`'s comparisons and `_one_pod`'s words)."""
    stack = objects(FLAVOR, LQ, queue("absent", 8, None), deployment({GPU: "4", "memory": "16Gi"}))
    found = check_pods_fit_nodes(stack, pools(("a", 1, {GPU: "2", "memory": "8Gi"}),
                                              ("b", 2, {GPU: "2", "memory": "32Gi"}),
                                              ("c", 1, {GPU: "8", "memory": "8Gi"})), [])
    assert [(v.field, v.value) for v in found] == [(FIELD, "4")]
    assert found[0].rule == (
        f"one Deployment 'inf/w' pod asks for 'memory' 16Gi, '{GPU}' 4 on one node, and no node of flavor 'f' has that "
        f"(the closest, pool 'b', has 'memory' 32Gi, '{GPU}' 2 per node: '{GPU}' 4 > 2); Kueue admits it by quota in "
        "flavor 'f' of ClusterQueue 'inf-cq' and the kube-scheduler leaves it Pending for ever (NodeResourcesFit: "
        "Insufficient), holding that quota")
    assert found[0].fix == (f"request at most 2 of '{GPU}' per pod (split the work over more pods), or add a node pool "
                            f"whose nodes have 4 of '{GPU}' and carry the nodeLabels of flavor 'f'")
    both = check_pods_fit_nodes(stack, pools(("a", 1, {GPU: "2", "memory": "8Gi"})), [])
    assert both[0].fix == (f"request at most 8Gi of 'memory', 2 of '{GPU}' per pod (split the work over more pods), "
                           f"or add a node pool whose nodes have 16Gi of 'memory', 4 of '{GPU}' and carry the "
                           "nodeLabels of flavor 'f'")
    assert both[0].field == "spec.template.spec.containers[0].resources.requests.memory"  # the first short one
    fits = check_pods_fit_nodes(stack, pools(("a", 1, {GPU: "2", "memory": "8Gi"}),
                                             ("d", 1, {GPU: "4", "memory": "16Gi"})), [])
    assert fits == []  # a pod that fits one pool exactly fits


# --- finding 3: which pod strands, where it is reported, what the witness shows ------------------------------------


def covering_queue(entries: list[tuple[str, str]]) -> dict[str, Any]:
    """ClusterQueue inf-cq (no cohort), flavor f with the nominalQuota of each (resource, quantity), in that order."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
            "spec": {"resourceGroups": [{"coveredResources": [r for r, _ in entries], "flavors": [
                {"name": "f", "resources": [{"name": r, "nominalQuota": v} for r, v in entries]}]}]}}


def named_deployment(name: str, requests: dict[str, str], replicas: int) -> dict[str, Any]:
    manifest = deployment(requests)
    manifest["metadata"]["name"] = name
    manifest["spec"]["replicas"] = replicas
    return manifest


def two_nodes(capacity: dict[str, str], count: int = 2) -> Any:
    return pools(("p", count, capacity))


TAIL = ("or size the pods to divide the nodes (or add nodes), or give the flavor a Topology (spec.topologyName) so "
        "that Kueue checks per-node fit before it admits")


@pytest.mark.parametrize(("entries", "requests", "capacity", "field", "fix"), [
    pytest.param([("example.com/fpga", "2"), (GPU, "12")], {GPU: "3"}, {GPU: "4", "example.com/fpga": "1"},
                 "resources[1]", f"'{GPU}' in flavor 'f' to at most 8", id="the GPU the pod asks, not another device"),
    pytest.param([("cpu", "8"), ("memory", "12Gi")], {"memory": "3Gi"}, {"cpu": "8", "memory": "4Gi"},
                 "resources[1]", "'memory' in flavor 'f' to at most 9663676415", id="without a GPU, what it asks"),
    pytest.param([("cpu", "8"), ("memory", "12Gi")], {"cpu": "1", "memory": "3Gi"}, {"cpu": "8", "memory": "4Gi"},
                 "resources[0]", "'cpu' in flavor 'f' to at most 2", id="the first it asks, a request of 1"),
])
def test_the_packing_finding_is_at_the_quota_of_a_resource_the_stranded_pod_asks_for(entries, requests, capacity,
                                                                                      field, fix):
    """Four pods of 3 (GPUs, or Gi) on two nodes of 4 strand the third: reported at the nominalQuota of the GPU the pod
    asks for (an extended resource sorted before it, which it does not ask, is not the one), else of the first
    resource it asks for (kills `_reported_at`'s defaults and comparisons)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, covering_queue(entries), named_deployment("w", requests, 4)),
                                 two_nodes(capacity), ["inf-cq"])
    assert [(v.field, v.fix) for v in found] == [
        (f"spec.resourceGroups[0].flavors[0].{field}.nominalQuota", f"lower the nominalQuota of {fix}, {TAIL}")]


def test_the_stranded_pod_is_named_not_the_first_workload_s():
    """1-GPU pods (Deployment a, first) never strand on 4-GPU nodes within the quota; 3-GPU pods (b) do, after a
    node holds a's two pods and the other one of b's: the finding names b and shows that placement (kills reporting
    the first shape)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, covering_queue([(GPU, "8")]),
                                         named_deployment("a", {GPU: "1"}, 2), named_deployment("b", {GPU: "3"}, 2)),
                                 two_nodes({GPU: "4"}), ["inf-cq"])
    assert [v.value for v in found] == ["8"]  # the nominalQuota as the ClusterQueue has it
    assert [v.rule for v in found] == [
        "the nominalQuota of flavor 'f' admits pods the nodes cannot all hold: the kube-scheduler binds them one at a "
        "time on any node with room, and after a node of pool 'p' holds 2 pod(s) (Deployment 'inf/a' pod); a node of "
        "pool 'p' holds 1 pod(s) (Deployment 'inf/b' pod), one more Deployment 'inf/b' pod ('nvidia.com/gpu' 3), "
        "still within the quota, fits no node and stays Pending while training is preempted for nothing"]


def test_a_node_holding_two_shapes_names_both_and_a_pod_above_the_quota_is_skipped_not_the_rest():
    """A Deployment whose pod asks more than the quota (never admitted) comes first; then 2-GPU pods and a 1-GPU pod
    on one 4-GPU node: one of each leaves 1 GPU, and the second 2-GPU pod (5 GPUs of quota) has no node. The node's
    two shapes are both named, sorted (kills stopping at the pod above the quota, and the witness's separator)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, covering_queue([(GPU, "5")]),
                                         named_deployment("big", {GPU: "6"}, 1), named_deployment("c", {GPU: "2"}, 2),
                                         named_deployment("a", {GPU: "1"}, 1)),
                                 two_nodes({GPU: "4"}, 1), ["inf-cq"])
    assert [v.field for v in found] == ["spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"]
    assert ("after a node of pool 'p' holds 2 pod(s) (Deployment 'inf/a' pod, Deployment 'inf/c' pod), one more "
            "Deployment 'inf/c' pod") in found[0].rule


def labelled_flavor(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": labels}}


def two_flavor_queue(quota: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
            "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
                {"name": f, "resources": [{"name": GPU, "nominalQuota": quota}]} for f in ("f0", "f1")]}]}}


def labelled_pools(*specs: tuple[str, dict[str, str]]) -> Any:
    parsed, problems = parse_node_pools([{"name": name, "count": 1, "labels": labels, "capacity": {GPU: "4"}}
                                         for name, labels in specs])
    assert problems == []
    return parsed


def test_flavors_on_disjoint_nodes_are_judged_apart_in_spec_order_and_one_without_known_nodes_is_passed_over():
    """Flavor f0 selects pool a and f1 pool b (one 4-GPU node each), 6 GPUs of quota each, 3-GPU pods: each flavor
    strands a pod on its own node, and each is reported at its own quota, f0 first; not merged into one quota on both
    nodes. When f0's nodeLabels match no pool whose labels are known, f0 is passed over (the capacity rule reports
    it) and f1 still judged (kills `_sharing` joining disjoint flavors, stopping at a flavor without nodes, and
    its order)."""
    pods = named_deployment("w", {GPU: "3"}, 4)
    found = check_pods_fit_nodes(objects(labelled_flavor("f0", {"pool": "a"}), labelled_flavor("f1", {"pool": "b"}),
                                         LQ, two_flavor_queue("6"), pods),
                                 labelled_pools(("a", {"pool": "a"}), ("b", {"pool": "b"})), ["inf-cq"])
    assert [(v.field, v.fix) for v in found] == [
        (f"spec.resourceGroups[0].flavors[{i}].resources[0].nominalQuota",
         f"lower the nominalQuota of '{GPU}' in flavor 'f{i}' to at most 5, {TAIL}") for i in (0, 1)]
    found = check_pods_fit_nodes(objects(labelled_flavor("f0", {"zone": "x"}), labelled_flavor("f1", {"pool": "b"}),
                                         LQ, two_flavor_queue("6"), pods),
                                 labelled_pools(("a", {}), ("b", {"pool": "b"})), ["inf-cq"])
    assert [v.field for v in found] == ["spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"]


# --- the blocking search itself, against the simulation --------------------------------------------------------------

search_pools = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 5)), min_size=1, max_size=3)
"""Pools as (count, GPUs per node): several nodes of one pool after a single one of another, the search's symmetry
cut (identical nodes take fillings in order) must not carry over from one pool to the next."""


@settings(max_examples=300, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3)), min_size=1, max_size=3),
       pool_specs=search_pools, quota=st.integers(1, 14))
@example(shapes=[(1, 2), (3, 2)], pool_specs=[(1, 2), (2, 3)], quota=5)  # the symmetry cut carried across pools
@example(shapes=[(1, 2), (3, 2)], pool_specs=[(1, 4), (2, 3)], quota=8)  # a filling over a cap ending the loop
def test_the_search_strands_the_first_shape_the_simulation_strands(shapes, pool_specs, quota):
    """`blocking_placement` over GPU pods [(gpus, cap)] on pools [(count, GPUs)] within `quota`: its witness is the
    first shape (in order) that the simulation of every order and every node can strand, or none when it strands
    none (kills the search's cuts that drop a placement: the symmetry of identical nodes applied across pools, a
    filling over a cap ending the loop)."""
    nodes = tuple(g for count, g in pool_specs for _ in range(count))
    kept = [s for s in shapes if s[0] <= max(nodes)]  # a pod no node holds is finding 1's
    parsed, problems = parse_node_pools([{"name": f"p{k}", "count": count, "labels": {}, "capacity": {GPU: str(g)}}
                                         for k, (count, g) in enumerate(pool_specs)])
    assert problems == []
    witness, decided = blocking_placement([Shape(f"s{i}", {GPU: Decimal(g)}, cap) for i, (g, cap) in enumerate(kept)],
                                          parsed, {GPU: Decimal(quota)}, judged_resources(parsed))
    first = next((i for i in range(len(kept)) if strands(kept, nodes, quota, i)), None)
    assert decided and (None if witness is None else witness.stranded.name) == (None if first is None else f"s{first}")


def test_a_node_that_does_not_report_a_judged_resource_has_none_of_it():
    """Pool a's node has 4 GPUs and 4 cpus, pool b's 4 GPUs and no cpu (a resource the node does not report has
    allocatable 0: `fit.go`); five (1 GPU, 1 cpu) pods within the quota: four fit a, none fits b, the fifth is
    stranded (kills reading b's missing cpu as 1 in the search's fillings)."""
    pools_ab, problems = parse_node_pools([{"name": "a", "count": 1, "labels": {}, "capacity": {GPU: "4", "cpu": "4"}},
                                           {"name": "b", "count": 1, "labels": {}, "capacity": {GPU: "4"}}])
    assert problems == []
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, covering_queue([("cpu", "5"), (GPU, "5")]),
                                         named_deployment("w", {GPU: "1", "cpu": "1"}, 5)), pools_ab, ["inf-cq"])
    assert [v.field for v in found] == ["spec.resourceGroups[0].flavors[0].resources[1].nominalQuota"]
