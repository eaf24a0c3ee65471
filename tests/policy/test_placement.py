"""Issue 37 class 1 in the rule book: a pod needs all of its requests on one node, and the kube-scheduler binds the pods
Kueue admits one at a time, on any node with room (`policy/rules/vocabulary/placement.py`, `pods_fit_nodes.py`).

The blocking search is checked against an independent model: a simulation of Kueue admitting pods within the quota
and the scheduler binding each on any node with room, every order and every choice explored."""
from __future__ import annotations

from decimal import Decimal
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from policy.rules.vocabulary.node_pools import parse_node_pools
from policy.rules.vocabulary.objects import KubeObject
from policy.rules.vocabulary.placement import Shape, blocking_placement, judged_resources

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
