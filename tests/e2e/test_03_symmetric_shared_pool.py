"""(b) The symmetric shared pool through `pulumi up` of a sandbox stack: tenant ns-a (floor 2 GPUs) fills 6 GPUs by
borrowing ns-b's idle floor (4); when ns-b submits 4 one-GPU Jobs, ns-a is cut back to exactly its 2 nominal GPUs
and, with both at their floors, nothing is borrowed."""

import pytest
from e2e_support import admitted_in, borrowed, condition, is_true, used, wait_for

from kueue_cohorts.components.settings.stackfile import stack_path

GPU = "nvidia.com/gpu"
DEV_POOL = {"name": "gpu", "count": 1, "labels": {"kueue-cohorts/pool": "gpu"},
            "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                         "nvidia.com/gpumem": "2048"}}
STACK = {"config": {
    "kueue-cohorts:cluster": {"mode": "sandbox"},
    # The dev stack's node stays; three 2-GPU nodes carry the pool (6 GPUs = the sum of the floors).
    "kueue-cohorts:nodePools": [
        DEV_POOL,
        {"name": "e2e-a100", "count": 3, "capacity": {"cpu": "16", "memory": "64Gi", GPU: "2"},
         "labels": {"kueue-cohorts/pool": "e2e-a100"}},
    ],
    "kueue-cohorts:resourceFlavor": {"name": "e2e-a100", "nodeLabels": {"kueue-cohorts/pool": "e2e-a100"}},
    # GPU-only floors: cpu and memory declared out of Kueue's accounting (cluster-queue-covers-pod-resources).
    "kueue-cohorts:kueue": {"resources": {"excludeResourcePrefixes": ["cpu", "memory"]}},
    "kueue-cohorts:sharedPool": {
        "cohort": "e2e-shared",
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        "priorityClasses": [{"name": "e2e-research", "value": 100}],
        "tenants": [
            {"name": "ns-a", "floor": {GPU: "2"}, "priorityClass": "e2e-research"},
            {"name": "ns-b", "floor": {GPU: "4"}, "priorityClass": "e2e-research"},
        ],
    },
}}


@pytest.fixture
def symmetric_stack(sandbox, cluster, project):
    """The symmetric stack applied with `pulumi up` (its node pools added to the sandbox); destroyed afterwards and
    the sandbox's nodes set back to the dev stack's."""
    path = project.add_stack("e2e-symmetric", STACK)
    sandbox.up(path)  # already running: reconciles the kwok nodes with this stack's nodePools
    project.run("e2e-symmetric", "up")
    yield
    for ns in ("ns-a", "ns-b"):
        for job in cluster.batch.list_namespaced_job(ns).items:
            cluster.delete_job(job)
    project.run("e2e-symmetric", "destroy")
    sandbox.up(stack_path("dev"))


def _usage(cluster, cq: str) -> tuple[int, int]:
    """(GPUs in use, GPUs borrowed) of ClusterQueue ``cq`` from its status.flavorsUsage."""
    obj = cluster.cluster_queue(cq)
    return used(obj, GPU), borrowed(obj, GPU)


def _admitted(cluster, ns: str) -> list[dict]:
    return [w for w in cluster.kueue_objects("workloads", ns) if admitted_in(w)]


def test_borrower_is_cut_back_to_its_floor_when_the_lender_reclaims(cluster, symmetric_stack):
    for i in range(6):
        cluster.submit_job("ns-a", f"a-{i}", "ns-a-lq", {GPU: "1"})
    wait_for(lambda: len(_admitted(cluster, "ns-a")) == 6, 120, "six ns-a Workloads admitted")
    wait_for(lambda: _usage(cluster, "ns-a-cq") == (6, 4), 30, "ns-a-cq to use 6 GPUs: 2 own + 4 borrowed")

    for i in range(4):
        cluster.submit_job("ns-b", f"b-{i}", "ns-b-lq", {GPU: "1"})
    wait_for(lambda: len(_admitted(cluster, "ns-b")) == 4, 120, "four ns-b Workloads admitted")
    wait_for(lambda: len(_admitted(cluster, "ns-a")) == 2, 60, "ns-a cut back to two admitted Workloads")

    wait_for(lambda: _usage(cluster, "ns-a-cq") == (2, 0), 30, "ns-a to keep exactly its 2 nominal GPUs")
    wait_for(lambda: _usage(cluster, "ns-b-cq") == (4, 0), 30, "ns-b to run at its floor, borrowing nothing")
    assert len(_admitted(cluster, "ns-a")) == 2 and len(_admitted(cluster, "ns-b")) == 4
    evicted = [w for w in cluster.kueue_objects("workloads", "ns-a") if is_true(w, "Preempted")]
    assert len(evicted) == 4
    assert {condition(w, "Preempted")["reason"] for w in evicted} == {"InCohortReclamation"}
