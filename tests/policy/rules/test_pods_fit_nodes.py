"""Issue 37 class 1 in the rule book: a pod needs all of its requests on one node, and the kube-scheduler binds the pods
Kueue admits one at a time, on any node with room (`policy/rules/vocabulary/placement.py`, `pods_fit_nodes.py`).

The blocking search is checked against an independent model: a simulation of Kueue admitting pods within the quota
and the scheduler binding each on any node with room, every order and every choice explored."""
from __future__ import annotations

from decimal import Decimal
from functools import cache

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject
from kueue_cohorts.policy.rules.vocabulary.placement import Shape, blocking_placement, judged_resources
from tests.policy.placement_reference import strands_after_reclaim

GPU = "nvidia.com/gpu"


def _pools(spec: list[tuple[int, int, int]]):
    pools, problems = parse_node_pools([{"name": f"p{i}", "count": count, "labels": {},
                                         "capacity": {GPU: str(gpus), "cpu": str(cpu)}}
                                        for i, (count, gpus, cpu) in enumerate(spec)])
    assert problems == []
    return pools


def strands(shapes: list[tuple[int, int, int]], nodes: list[tuple[int, int]], quota: tuple[int, int]) -> bool:
    """The reference: can Kueue (admitting within `quota` of (gpu, cpu) and each shape's cap) and a scheduler binding
    each admitted pod on any node with room reach a state where an admitted pod fits no node?"""

    @cache
    def reach(rooms: tuple[tuple[int, int], ...], counts: tuple[int, ...]) -> bool:
        used_gpu = sum(shapes[i][0] * c for i, c in enumerate(counts))
        used_cpu = sum(shapes[i][1] * c for i, c in enumerate(counts))
        for i, (gpu, cpu, cap) in enumerate(shapes):
            if counts[i] >= cap or used_gpu + gpu > quota[0] or used_cpu + cpu > quota[1]:
                continue
            fitting = [k for k, (g, c) in enumerate(rooms) if g >= gpu and c >= cpu]
            if not fitting:
                return True
            more = tuple(c + (1 if j == i else 0) for j, c in enumerate(counts))
            for k in fitting:
                room = list(rooms)
                room[k] = (rooms[k][0] - gpu, rooms[k][1] - cpu)
                if reach(tuple(room), more):
                    return True
        return False

    return reach(tuple(nodes), tuple(0 for _ in shapes))


shapes_st = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(1, 4)), min_size=1, max_size=2)
pools_st = st.lists(st.tuples(st.integers(1, 2), st.integers(1, 6), st.integers(1, 8)), min_size=1, max_size=2)


@settings(max_examples=200, deadline=None)
@given(shapes=shapes_st, pools=pools_st, quota=st.tuples(st.integers(1, 12), st.integers(0, 12)))
def test_the_blocking_search_agrees_with_a_simulation_of_every_order_and_every_choice(shapes, pools, quota):
    nodes = [(gpus, cpu) for count, gpus, cpu in pools for _ in range(count)]
    fits_some_node = [s for s in shapes if any(s[0] <= g and s[1] <= c for g, c in nodes)]
    kept = [s for s in shapes if s in fits_some_node]  # a pod that fits no empty node is the per-pod finding's
    objs = [Shape(f"s{i}", {GPU: Decimal(g), "cpu": Decimal(c)}, cap) for i, (g, c, cap) in enumerate(kept)]
    parsed = _pools(pools)
    witness, decided = blocking_placement(objs, parsed, {GPU: Decimal(quota[0]), "cpu": Decimal(quota[1])},
                                          judged_resources(parsed))
    assert decided
    assert (witness is not None) == strands(kept, nodes, quota), witness


def test_three_3_gpu_pods_need_three_4_gpu_nodes_not_nine_quarters():
    pools = _pools([(3, 4, 64)])
    shape = Shape("replica", {GPU: Decimal(3)}, 4)
    assert blocking_placement([shape], pools, {GPU: Decimal(9)}, judged_resources(pools)) == (None, True)
    witness, _ = blocking_placement([shape], pools, {GPU: Decimal(12)}, judged_resources(pools))
    assert witness is not None and witness.stranded == shape and len(witness.placed) == 3


def test_spreading_two_gpu_pods_strands_a_four_gpu_pod_though_a_packing_exists():
    """8 GPUs of quota on two 4-GPU nodes: 2 + 2 + 4 pack (first-fit-decreasing finds it), but LeastAllocated puts
    the 2-GPU pods on different nodes, and the 4-GPU pod Kueue admitted next has no node."""
    pools = _pools([(2, 4, 64)])
    small, big = Shape("small", {GPU: Decimal(2)}, 2), Shape("big", {GPU: Decimal(4)}, 1)
    witness, decided = blocking_placement([small, big], pools, {GPU: Decimal(8)}, judged_resources(pools))
    assert decided and witness is not None and witness.stranded == big
    assert witness.placed == (("p0", ("small",)), ("p0", ("small",)))


def _cq(name: str, nominal: dict, flavor: str = "f") -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": list(nominal), "flavors": [
                {"name": flavor, "resources": [{"name": r, "nominalQuota": v, "borrowingLimit": "0"}
                                               for r, v in nominal.items()]}]}]}}


def _objects(*manifests: dict) -> list[KubeObject]:
    out = []
    for m in manifests:
        group, _, version = m["apiVersion"].rpartition("/")
        out.append(KubeObject("", m["metadata"]["name"], group, version, m["kind"], m))
    return out


def _serving(kind: str, requests: dict, replicas: int = 1) -> dict:
    pod = {"containers": [{"name": "m", "resources": {"requests": requests}}]}
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if kind == "LeaderWorkerSet":
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": kind,
                "metadata": {"name": "w", "namespace": "inf", "labels": labels},
                "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": pod}}}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "inf", "labels": labels},
            "spec": {"replicas": replicas, "strategy": {"type": "Recreate"} if kind == "Deployment" else None,
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["Deployment", "StatefulSet", "LeaderWorkerSet"]), node_gpus=st.integers(1, 8),
       pod_gpus=st.integers(1, 8), nodes=st.integers(1, 3))
def test_every_serving_kind_s_pod_must_fit_one_node_of_its_flavor(kind, node_gpus, pod_gpus, nodes):
    pools = _pools([(nodes, node_gpus, 64)])
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "inf"},
          "spec": {"clusterQueue": "inf-cq"}}
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
              "spec": {}}
    total = nodes * node_gpus
    workload = _serving(kind, {GPU: str(pod_gpus)})
    if workload["spec"].get("strategy") is None:
        workload["spec"].pop("strategy", None)
    found = check_pods_fit_nodes(_objects(flavor, lq, _cq("inf-cq", {GPU: str(max(total, pod_gpus))}), workload),
                                 pools, ["inf-cq"])
    one_pod = [v for v in found if v.field.endswith(f'resources.requests["{GPU}"]')]
    assert bool(one_pod) == (pod_gpus > node_gpus), [v.message for v in found]
    for v in one_pod:
        assert v.policy == PODS_FIT_NODES.name
        assert v.fix == (f"request at most {node_gpus} of '{GPU}' per pod (split the work over more pods), or add a "
                         f"node pool whose nodes have {pod_gpus} of '{GPU}' and carry the nodeLabels of flavor 'f'")


# --- the fuzzer's false accepts (benchmarks/results/fuzz.json, seed 37, 2026-12-07) -------------------------------


def _cq_flavors(name: str, flavors: list[tuple[str, dict]]) -> dict:
    """An inference ClusterQueue (borrowingLimit 0) with one resource group over `flavors` [(flavor, nominal)]."""
    covered = list(flavors[0][1])
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": covered, "flavors": [
                {"name": f, "resources": [{"name": r, "nominalQuota": v, "borrowingLimit": "0"}
                                          for r, v in nominal.items()]} for f, nominal in flavors]}]}}


def _flavor(name: str) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "inf"},
      "spec": {"clusterQueue": "inf-cq"}}


def _packing(found) -> list:
    return [v for v in found if v.field.endswith(".nominalQuota") and v.policy == PODS_FIT_NODES.name]


@settings(max_examples=150, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2), st.integers(1, 3)), min_size=1, max_size=2),
       pools=pools_st, split=st.integers(1, 5), quota_cpu=st.integers(0, 12))
def test_flavors_that_select_the_same_nodes_are_packed_together(shapes, pools, split, quota_cpu):
    """Two flavors without nodeLabels (every node) share every node: each flavor's quota alone may pack, their pods
    together may not (stack fz1460: 2-GPU replicas stranded by 1-GPU ones of the other flavor's quota). The rule
    judges them as one quota on the union of their nodes, and agrees with the simulation of every order and choice
    whenever the quota fits the nodes summed (else the capacity rule reports it)."""
    node_pools = _pools(pools)
    capacity = sum(count * gpus for count, gpus, _ in pools)
    cpu = sum(count * c for count, _, c in pools)
    total = min(capacity, sum(g * cap for g, _, cap in shapes))
    first = min(split, total - 1) if total > 1 else total
    gpu_split = [first, total - first] if total > 1 else [total, 0]
    cpu_split = [quota_cpu // 2, quota_cpu - quota_cpu // 2]
    flavors = [(f"f{i}", {GPU: str(g), "cpu": str(c)})
               for i, (g, c) in enumerate(zip(gpu_split, cpu_split, strict=True))]
    workloads = []
    for i, (gpus, cpus, cap) in enumerate(shapes):
        w = _serving("Deployment", {GPU: str(gpus), "cpu": str(cpus)}, replicas=cap)
        w["metadata"]["name"] = f"w{i}"
        workloads.append(w)
    found = check_pods_fit_nodes(_objects(_flavor("f0"), _flavor("f1"), LQ, _cq_flavors("inf-cq", flavors),
                                          *workloads), node_pools, ["inf-cq"])
    if quota_cpu > cpu:
        return  # over the nodes summed: the capacity rule's
    nodes = [(gpus, c) for count, gpus, c in pools for _ in range(count)]
    quotas = [(g, int(q["cpu"])) for g, (_, q) in zip(gpu_split, flavors, strict=True)]
    refused = [v for v in found if v.policy == PODS_FIT_NODES.name]  # the packing, or one pod wider than a node
    if strands_in_flavors(shapes, nodes, quotas):  # a real stranding is never accepted (the joint quota is wider)
        assert refused, [v.message for v in found]
    if not strands(shapes, nodes, (total, quota_cpu)):  # nor is a stack refused where even the joint quota fits
        assert not refused, [v.message for v in found]


def strands_in_flavors(shapes: list[tuple[int, int, int]], nodes: list[tuple[int, int]],
                       quotas: list[tuple[int, int]]) -> bool:
    """`strands` with Kueue's flavor assignment: each admitted pod takes the first flavor whose nominalQuota of
    (gpu, cpu) still holds it (borrowingLimit 0; flavorassigner's order), every flavor selecting every node."""

    @cache
    def reach(rooms: tuple[tuple[int, int], ...], counts: tuple[int, ...], used: tuple[tuple[int, int], ...]) -> bool:
        for i, (gpu, cpu, cap) in enumerate(shapes):
            if counts[i] >= cap:
                continue
            k = next((k for k, (q, u) in enumerate(zip(quotas, used, strict=True))
                      if u[0] + gpu <= q[0] and u[1] + cpu <= q[1]), None)
            if k is None:
                continue
            fitting = [n for n, (g, c) in enumerate(rooms) if g >= gpu and c >= cpu]
            if not fitting:
                return True
            more = tuple(c + (1 if j == i else 0) for j, c in enumerate(counts))
            now = tuple((u[0] + gpu, u[1] + cpu) if j == k else u for j, u in enumerate(used))
            for n in fitting:
                room = list(rooms)
                room[n] = (rooms[n][0] - gpu, rooms[n][1] - cpu)
                if reach(tuple(room), more, now):
                    return True
        return False

    return reach(tuple(nodes), tuple(0 for _ in shapes), tuple((0, 0) for _ in quotas))


@settings(max_examples=150, deadline=None)
@given(node_gpus=st.integers(1, 4), node_mem=st.integers(4, 32), count=st.integers(1, 3),
       mem_per_gpu=st.integers(1, 16), gpus=st.integers(1, 12))
def test_without_declared_pods_the_quota_s_per_gpu_share_must_place(node_gpus, node_mem, count, mem_per_gpu, gpus):
    """No serving workload declares its pods (stack fz1127): inference's nominalQuota as 1-GPU pods with its per-GPU
    share of memory must place on the flavor's nodes (a node of 16Gi and 3 GPUs holds two 8Gi-per-GPU pods, not
    three). Identical pods: they place iff the nodes hold as many, min(GPUs, memory // share) per node."""
    gpus = min(gpus, node_gpus * count)
    pools, problems = parse_node_pools([{"name": "p", "count": count, "labels": {},
                                         "capacity": {GPU: str(node_gpus), "memory": f"{node_mem}Gi"}}])
    assert problems == []
    quota = {GPU: str(gpus), "memory": f"{gpus * mem_per_gpu}Gi"}
    if gpus * mem_per_gpu > node_mem * count:
        return  # over the nodes summed: the capacity rule's
    found = check_pods_fit_nodes(_objects(_flavor("f"), LQ, _cq("inf-cq", quota)), pools, ["inf-cq"])
    holds = count * min(node_gpus, node_mem // mem_per_gpu)
    assert bool(_packing(found)) == (holds < gpus), [v.message for v in found]
    for v in _packing(found):
        assert "1-GPU pod of the nominalQuota's per-GPU share (no serving workload declares its pods)" in v.message


# --- training's pods beside inference's: reclaim by quota, not by node (fuzzer stack fz862, kueue#5243) -----------


def _borrowing(name: str, nominal: dict) -> dict:
    """A training ClusterQueue of cohort c: nominalQuota 0, borrowingLimit `nominal` (what inference owns)."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": list(nominal), "flavors": [
                {"name": "f", "resources": [{"name": r, "nominalQuota": "0", "borrowingLimit": v}
                                            for r, v in nominal.items()]}]}]}}


TRAINING_LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "lq", "namespace": "trn"}, "spec": {"clusterQueue": "trn-cq"}}


def _reclaim_stack(inference: tuple[int, int, int], training: tuple[int, int], quota: tuple[int, int]
                   ) -> list[KubeObject]:
    nominal = {GPU: str(quota[0]), "cpu": str(quota[1])}
    serving = _serving("Deployment", {GPU: str(inference[0]), "cpu": str(inference[1])}, replicas=inference[2])
    trainer = _serving("Deployment", {GPU: str(training[0]), "cpu": str(training[1])}, replicas=1)
    trainer["metadata"].update(name="t", namespace="trn")
    return _objects(_flavor("f"), LQ, TRAINING_LQ, _cq("inf-cq", nominal), _borrowing("trn-cq", nominal), serving,
                    trainer)


@settings(max_examples=150, deadline=None)
@given(inference=st.tuples(st.integers(1, 4), st.integers(0, 2), st.integers(1, 3)),
       training=st.tuples(st.integers(1, 3), st.integers(0, 2)),
       pools=st.lists(st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 6)), min_size=1, max_size=2),
       gpu_slack=st.integers(0, 3), cpu_slack=st.integers(0, 3))
def test_training_pods_beside_inference_s_are_judged_as_kueue_reclaims_by_quota(inference, training, pools, gpu_slack,
                                                                                cpu_slack):
    """Training borrows inference's idle quota with pods of its own shape; Kueue reclaims by quota, not by node
    (fuzzer stack fz862: two 1-GPU training pods preempted on different 4-GPU nodes free no node for a 2-GPU replica).
    The rule refuses exactly when the reference (every order, every node, every minimal set of victims) strands an
    inference pod. The quota is the nodes' sum less a slack (above it the capacity rule reports it)."""
    nodes = [(g, c) for count, g, c in pools for _ in range(count)]
    assume(len(nodes) <= 3 and all(inference[0] <= g and inference[1] <= c for g, c in nodes))  # else finding 1
    gpus = max(sum(g for g, _ in nodes) - gpu_slack, inference[0])
    cpus = max(sum(c for _, c in nodes) - cpu_slack, inference[1])
    found = check_pods_fit_nodes(_reclaim_stack(inference, training, (gpus, cpus)), _pools(pools), ["inf-cq"])
    strands = strands_after_reclaim(inference, training, nodes, (gpus, cpus))
    event(f"strands: {strands}")
    assert bool(_packing(found)) == strands, [v.message for v in found]


def test_fz862_two_one_gpu_victims_on_two_nodes_strand_a_two_gpu_replica():
    """The fuzzer's stack fz862 in the rule book's terms: two 4-GPU nodes, inference 8 GPUs as 2-GPU replicas,
    training borrowing with 1-GPU pods. Refused at inference's nominalQuota with the largest quota that is safe; the
    same stack with 2-GPU training pods (whole multiples of the replica) is accepted."""
    pools = _pools([(2, 4, 16)])
    found = _packing(check_pods_fit_nodes(_reclaim_stack((2, 2, 2), (1, 1), (8, 8)), pools, ["inf-cq"]))
    assert [v.field for v in found] == [
        'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota']
    assert "by quota, not by node (kueue#5243)" in found[0].message
    assert found[0].fix == (
        "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as whole "
        "multiples of one Deployment 'inf/w' pod ('cpu' 2, 'nvidia.com/gpu' 2), or lower the nominalQuota of "
        "'nvidia.com/gpu' in flavor 'f' to at most 7, or add nodes")
    assert _packing(check_pods_fit_nodes(_reclaim_stack((2, 2, 2), (2, 2), (8, 8)), pools, ["inf-cq"])) == []
