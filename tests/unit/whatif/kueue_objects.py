"""Small Kueue object sets (kueue.x-k8s.io/v1beta2 manifests) and trace lines for the simulator tests."""
from kueue_cohorts.whatif.kueue import setup_from_objects
from kueue_cohorts.whatif.trace import Trace, TraceWorkload

API = "kueue.x-k8s.io/v1beta2"


def flavor(name, labels=None, taints=None):
    spec = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name, cohort, flavors, reclaim="Any", within="LowerPriority", borrow_within=None,
                  strategy=None, fungibility=None, **extra):
    """`flavors`: [(flavor, {resource: (nominal, borrowingLimit or None, lendingLimit or None)})] in order."""
    covered = list(dict.fromkeys(r for _, quotas in flavors for r in quotas))
    groups = [{"coveredResources": covered, "flavors": [
        {"name": f, "resources": [
            {"name": r, "nominalQuota": str(q[r][0]),
             **({"borrowingLimit": str(q[r][1])} if q[r][1] is not None else {}),
             **({"lendingLimit": str(q[r][2])} if len(q[r]) > 2 and q[r][2] is not None else {})}
            for r in covered]} for f, q in flavors]}]
    spec = {"cohortName": cohort, "resourceGroups": groups,
            "preemption": {"reclaimWithinCohort": reclaim, "withinClusterQueue": within}, **extra}
    if borrow_within:
        spec["preemption"]["borrowWithinCohort"] = borrow_within
    if strategy:
        spec["queueingStrategy"] = strategy
    if fungibility:
        spec["flavorFungibility"] = fungibility
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(namespace, name, cq):
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def priority(name, value):
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def guide_cohort(inference_gpus=4, strategy=None, training_bwc=None, training_limit=None):
    """The guide's asymmetric cohort: inference owns `inference_gpus`, never borrows, reclaims with Any and borrows
    within the cohort (LowerPriority, threshold 100); training owns nothing and borrows all of it."""
    return setup_from_objects([
        flavor("gpu"),
        cluster_queue("inference-cq", "shared", [("gpu", {"nvidia.com/gpu": (inference_gpus, 0)})],
                      borrow_within={"policy": "LowerPriority", "maxPriorityThreshold": 100}, strategy=strategy),
        cluster_queue("training-cq", "shared", [("gpu", {"nvidia.com/gpu": (0, training_limit or inference_gpus)})],
                      borrow_within=training_bwc),
        local_queue("serving", "inference", "inference-cq"),
        local_queue("training", "training", "training-cq"),
        priority("inference", 1000), priority("training", 10)])


def symmetric_floors(floor=2, tenants=("a", "b"), limit=None):
    """Two (or more) tenants with a floor each, borrowing the rest of the pool, reclaimWithinCohort Any."""
    total = floor * len(tenants)
    limit = total - floor if limit is None else limit
    return setup_from_objects([
        flavor("gpu"),
        *[cluster_queue(f"{t}-cq", "pool", [("gpu", {"nvidia.com/gpu": (floor, limit)})])
          for t in tenants],
        *[local_queue(t, f"{t}-lq", f"{t}-cq") for t in tenants],
        priority("research", 100)])


def workload(name, submit, queue, gpus=1, pods=1, duration=None, **fields):
    """A trace line: `queue` is "inference", "training" or a tenant name (a, b, ...)."""
    namespace, lq, pc, kind = {"inference": ("serving", "inference", "inference", "inference"),
                               "training": ("training", "training", "training", "training")}.get(
        queue, (queue, f"{queue}-lq", "research", "training"))
    fields.setdefault("priority_class", pc)
    return TraceWorkload(name=name, submit_seconds=submit, namespace=namespace, local_queue=lq, kind=kind,
                         pods=pods, requests={"nvidia.com/gpu": str(gpus)}, duration_seconds=duration, **fields)


def trace(*workloads, horizon=100_000):
    return Trace.build(workloads, horizon)
