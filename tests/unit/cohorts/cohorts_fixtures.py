"""Fixed Kueue objects in the API's JSON shape (kueue.x-k8s.io/v1beta2), as a cluster returns them, for the status
view's unit tests. The messages are Kueue v0.19.2's (pkg/scheduler/preemption/preemption.go)."""
from __future__ import annotations

from datetime import UTC, datetime

from kueue_cohorts.cohorts.live import Snapshot

GPU = "nvidia.com/gpualloc"
T0 = datetime(2026, 11, 30, 21, 0, 0, tzinfo=UTC)


def cq(name, cohort, role, quotas, usage=None, reservation=None, flavor="c12-default", counts=(0, 0, 0)):
    """A ClusterQueue: quotas = [(resource, nominalQuota, borrowingLimit|None, lendingLimit|None)],
    usage = {resource: (total, borrowed)}."""
    resources = []
    for res, nominal, borrowing, lending in quotas:
        entry = {"name": res, "nominalQuota": nominal}
        if borrowing is not None:
            entry["borrowingLimit"] = borrowing
        if lending is not None:
            entry["lendingLimit"] = lending
        resources.append(entry)
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": name, "labels": {"kueue-cohorts/role": role} if role else {}},
           "spec": {"cohortName": cohort, "namespaceSelector": {"matchLabels": {"q": name}},
                    "resourceGroups": [{"coveredResources": [r[0] for r in quotas],
                                        "flavors": [{"name": flavor, "resources": resources}]}],
                    "flavorFungibility": {"whenCanBorrow": "MayStopSearch"}},
           "status": {"admittedWorkloads": counts[0], "reservingWorkloads": counts[1], "pendingWorkloads": counts[2],
                      "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]}}
    if usage:
        obj["status"]["flavorsUsage"] = [{"name": flavor, "resources": [
            {"name": r, "total": t, "borrowed": b} for r, (t, b) in usage.items()]}]
        obj["status"]["flavorsReservation"] = [{"name": flavor, "resources": [
            {"name": r, "total": t, "borrowed": b} for r, (t, b) in (reservation or usage).items()]}]
    return obj


def workload(ns, name, uid, queue, priority, conditions=(), admitted_in=None, usage=None, pclass=None):
    wl = {"metadata": {"namespace": ns, "name": name, "uid": uid, "creationTimestamp": "2026-11-30T20:59:00Z",
                       "labels": {"kueue.x-k8s.io/job-uid": "job-" + uid}},
          "spec": {"queueName": queue, "priority": priority,
                   "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                        "name": pclass or f"{queue}-prio"}},
          "status": {"conditions": [dict(c) for c in conditions]}}
    if admitted_in:
        wl["status"]["admission"] = {"clusterQueue": admitted_in, "podSetAssignments": [
            {"name": "main", "resourceUsage": dict(usage or {}), "count": 1}]}
    return wl


def cond(kind, status, reason, time, message=""):
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": time}


def preempted_message(preemptor_uid, why="reclamation within the cohort", cohort="c12-shared",
                      preemptor_cq="c12-inference-cq", victim_cq="c12-training-cq"):
    return (f"Preempted to accommodate a workload (UID: {preemptor_uid}, JobUID: job-{preemptor_uid}) due to {why}; "
            f"preemptor path: /{cohort}/{preemptor_cq}; preemptee path: /{cohort}/{victim_cq}")


def event(reason, ns, name, uid, message, time):
    """A core/v1 Event as the events.k8s.io recorder writes it (eventTime set, first/lastTimestamp null)."""
    return {"metadata": {"namespace": ns, "name": f"{name}.1", "creationTimestamp": time},
            "involvedObject": {"kind": "Workload", "namespace": ns, "name": name, "uid": uid,
                               "apiVersion": "kueue.x-k8s.io/v1beta2"},
            "reason": reason, "message": message, "eventTime": time.replace("Z", ".123456Z"),
            "firstTimestamp": None, "lastTimestamp": None, "type": "Normal", "action": reason}


DEV_QUOTAS_INFERENCE = [("cpu", "4", "0", None), ("memory", "8Gi", "0", None), (GPU, "1", "0", None)]
DEV_QUOTAS_TRAINING = [("cpu", "0", "4", None), ("memory", "0", "8Gi", None), (GPU, "0", "1", None)]
LOCAL_QUEUES = [
    {"metadata": {"namespace": "c12-inference", "name": "c12-inference-lq"},
     "spec": {"clusterQueue": "c12-inference-cq"}},
    {"metadata": {"namespace": "c12-training", "name": "c12-training-lq"}, "spec": {"clusterQueue": "c12-training-cq"}},
]


def borrowing_snapshot() -> Snapshot:
    """The guide's round trip, step 1: training admitted while borrowing the whole GPU slice."""
    return Snapshot(
        time=T0,
        cluster_queues=[
            cq("c12-training-cq", "c12-shared", "training", DEV_QUOTAS_TRAINING,
               {"cpu": ("1", "1"), "memory": ("1Gi", "1Gi"), GPU: ("1", "1")}, counts=(1, 1, 0)),
            cq("c12-inference-cq", "c12-shared", "inference", DEV_QUOTAS_INFERENCE,
               {"cpu": ("0", "0"), "memory": ("0", "0"), GPU: ("0", "0")}),
        ],
        local_queues=list(LOCAL_QUEUES),
        workloads=[workload("c12-training", "job-finetune-a1b2c", "uid-train", "c12-training-lq", 10,
                            [cond("QuotaReserved", "True", "QuotaReserved", "2026-11-30T20:59:30Z"),
                             cond("Admitted", "True", "Admitted", "2026-11-30T20:59:30Z")],
                            admitted_in="c12-training-cq", usage={"cpu": "1", "memory": "1Gi", GPU: "1"},
                            pclass="c12-training-prio")],
    )


def preempted_snapshot() -> Snapshot:
    """Step 2: inference admitted, training preempted (InCohortReclamation) and pending again."""
    return Snapshot(
        time=T0,
        cluster_queues=[
            cq("c12-inference-cq", "c12-shared", "inference", DEV_QUOTAS_INFERENCE,
               {"cpu": ("1", "0"), "memory": ("1Gi", "0"), GPU: ("1", "0")}, counts=(1, 1, 0)),
            cq("c12-training-cq", "c12-shared", "training", DEV_QUOTAS_TRAINING,
               {"cpu": ("0", "0"), "memory": ("0", "0"), GPU: ("0", "0")}, counts=(0, 0, 1)),
        ],
        local_queues=list(LOCAL_QUEUES),
        workloads=[
            workload("c12-training", "job-finetune-a1b2c", "uid-train", "c12-training-lq", 10, [
                cond("QuotaReserved", "False", "Pending", "2026-11-30T21:00:02Z", "couldn't assign flavors"),
                cond("Evicted", "True", "Preempted", "2026-11-30T21:00:01Z", preempted_message("uid-serve")),
                cond("Preempted", "True", "InCohortReclamation", "2026-11-30T21:00:01Z",
                     preempted_message("uid-serve")),
                cond("Requeued", "True", "Preempted", "2026-11-30T21:00:02Z")], pclass="c12-training-prio"),
            workload("c12-inference", "job-serve-x9y8z", "uid-serve", "c12-inference-lq", 1000, [
                cond("QuotaReserved", "True", "QuotaReserved", "2026-11-30T21:00:03Z"),
                cond("Admitted", "True", "Admitted", "2026-11-30T21:00:03Z")],
                admitted_in="c12-inference-cq", usage={"cpu": "1", "memory": "1Gi", GPU: "1"},
                pclass="c12-inference-prio"),
        ],
        events=[
            event("Preempted", "c12-training", "job-finetune-a1b2c", "uid-train",
                  preempted_message("uid-serve") + "; preemptor effective priority: 1000 (base: 1000, boost: 0); "
                  "preemptee effective priority: 10 (base: 10, boost: 0)", "2026-11-30T21:00:01Z"),
            event("PreemptedWorkload", "c12-inference", "job-serve-x9y8z", "uid-serve",
                  "Preempted workload c12-training/job-finetune-a1b2c (UID: uid-train) in ClusterQueue "
                  "c12-training-cq; preemptor effective priority: 1000 (base: 1000, boost: 0); preemptee effective "
                  "priority: 10 (base: 10, boost: 0)", "2026-11-30T21:00:01Z"),
        ],
    )
