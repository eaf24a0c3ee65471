"""The what-if simulator agrees with the real Kueue 0.19.2: seeded traces of both layouts and of two flavors,
replayed as Jobs in the sandbox (instant by instant, cohorts/replay.py), give the same admission order and the same
preemptions (victim, preemptor, reason) as the simulation of the same Kueue objects; where they differ, the test
names the first difference.

The objects are the test's own (cohorts `wi-*`, cpu quotas: kwok pods need no device), created through the API and
deleted afterwards; the sandbox is the session's.
"""
from __future__ import annotations

import json

import pytest
from e2e_support import KUEUE, wait_for
from kubernetes import client as k8s

from cohorts.replay import agreement, agreement_trace, replay
from whatif.kueue import setup_from_objects
from whatif.scheduler import simulate
from whatif.trace import WorkloadKind

API = "kueue.x-k8s.io/v1beta2"
NAME_LABEL = "kubernetes.io/metadata.name"
INFERENCE, TRAINING = WorkloadKind.INFERENCE, WorkloadKind.TRAINING


def _flavor(name, labels=None):
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": labels} if labels else {}}


def _cq(name, cohort, namespaces, flavors, reclaim="Any", borrow_within=None):
    """`flavors`: [(flavor, nominal cpu, borrowingLimit cpu)] in order."""
    preemption = {"reclaimWithinCohort": reclaim, "withinClusterQueue": "LowerPriority"}
    if borrow_within:
        preemption["borrowWithinCohort"] = borrow_within
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "cohortName": cohort,
        "namespaceSelector": {"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": namespaces}]},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": f, "resources": [{"name": "cpu", "nominalQuota": str(n), "borrowingLimit": str(b)}]}
            for f, n, b in flavors]}],
        "preemption": preemption}}


def _lq(namespace, name, cq):
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def _wpc(name, value):
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


RECLAIM_WHILE_BORROWING = {"policy": "LowerPriority", "maxPriorityThreshold": 100}

LAYOUTS = {
    # the guide's asymmetric cohort: inference owns 4 cpu and never borrows, training borrows all of it
    "asymmetric": ([
        _flavor("wi-default"),
        _cq("wi-inference-cq", "wi-asym", ["wi-serving"], [("wi-default", 4, 0)],
            borrow_within=RECLAIM_WHILE_BORROWING),
        _cq("wi-training-cq", "wi-asym", ["wi-training"], [("wi-default", 0, 4)]),
        _lq("wi-serving", "inference", "wi-inference-cq"), _lq("wi-training", "training", "wi-training-cq"),
        _wpc("wi-inference", 1000), _wpc("wi-training", 10)],
        [("wi-serving", "inference", "wi-inference", INFERENCE),
         ("wi-training", "training", "wi-training", TRAINING)]),
    # the symmetric floors: three tenants, 2 cpu each, borrowing the rest of the pool
    "symmetric": ([
        _flavor("wi-default"),
        *[_cq(f"wi-{t}-cq", "wi-sym", [f"wi-{t}"], [("wi-default", 2, 4)]) for t in "abc"],
        *[_lq(f"wi-{t}", f"{t}-lq", f"wi-{t}-cq") for t in "abc"],
        _wpc("wi-research", 100)],
        [(f"wi-{t}", f"{t}-lq", "wi-research", TRAINING) for t in "abc"]),
    # two flavors, tried in order: inference owns 2 cpu of each, training borrows either
    "two-flavors": ([
        _flavor("wi-one", {"wi-flavor": "one"}), _flavor("wi-two", {"wi-flavor": "two"}),
        _cq("wi-inference2-cq", "wi-mixed", ["wi-serving2"], [("wi-one", 2, 0), ("wi-two", 2, 0)],
            borrow_within=RECLAIM_WHILE_BORROWING),
        _cq("wi-training2-cq", "wi-mixed", ["wi-training2"], [("wi-one", 0, 2), ("wi-two", 0, 2)]),
        _lq("wi-serving2", "inference", "wi-inference2-cq"), _lq("wi-training2", "training", "wi-training2-cq"),
        _wpc("wi-inference", 1000), _wpc("wi-training", 10)],
        [("wi-serving2", "inference", "wi-inference", INFERENCE),
         ("wi-training2", "training", "wi-training", TRAINING)]),
}

PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
           "WorkloadPriorityClass": "workloadpriorityclasses"}
FIGURES: dict[str, dict] = {}


def _apply(cluster, objects):
    for obj in objects:
        plural, ns = PLURALS[obj["kind"]], obj["metadata"].get("namespace")
        if ns:
            cluster.ensure_namespace(ns)
        try:
            if ns:
                cluster.custom.create_namespaced_custom_object(*KUEUE, ns, plural, obj)
            else:
                cluster.custom.create_cluster_custom_object(*KUEUE, plural, obj)
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise
    for obj in objects:
        if obj["kind"] == "ClusterQueue":
            wait_for(lambda n=obj["metadata"]["name"]: any(
                c.get("type") == "Active" and c.get("status") == "True"
                for c in (cluster.cluster_queue(n).get("status") or {}).get("conditions") or []),
                60, f"ClusterQueue {obj['metadata']['name']} to be active")


def _gone(cluster, plural, ns, name):
    try:
        if ns:
            cluster.custom.get_namespaced_custom_object(*KUEUE, ns, plural, name)
        else:
            cluster.custom.get_cluster_custom_object(*KUEUE, plural, name)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def _delete(cluster, objects):
    """Delete the objects (queues first) and wait until they are gone (Kueue's finalizers: a flavor waits for its
    ClusterQueues), so that the next layout can create its own."""
    for obj in reversed(objects):
        plural, ns, name = PLURALS[obj["kind"]], obj["metadata"].get("namespace"), obj["metadata"]["name"]
        try:
            if ns:
                cluster.custom.delete_namespaced_custom_object(*KUEUE, ns, plural, name)
            else:
                cluster.custom.delete_cluster_custom_object(*KUEUE, plural, name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    for obj in objects:
        plural, ns, name = PLURALS[obj["kind"]], obj["metadata"].get("namespace"), obj["metadata"]["name"]
        wait_for(lambda p=plural, n=ns, m=name: _gone(cluster, p, n, m), 60, f"{obj['kind']} {name} to be deleted")


#: Seeds whose simulation preempts: the asymmetric one five times, the others twice or three times.
CASES = [("asymmetric", 4), ("symmetric", 6), ("two-flavors", 5)]
#: Seconds without a Workload change before the next instant: above Kueue's 1 s batch of inadmissible requeues
#: (pkg/cache/queue/inadmissible_workloads.go requeueBatchPeriod).
QUIET_S = 1.5


@pytest.mark.parametrize("layout, seed", CASES)
def test_the_simulator_predicts_kueues_admissions_and_preemptions(cluster, layout, seed):
    objects, queues = LAYOUTS[layout]
    setup = setup_from_objects(objects)
    demand = agreement_trace(setup, queues, seed)
    predicted = simulate(setup, demand)
    _apply(cluster, objects)
    try:
        observed = replay(cluster.api, demand, quiet=QUIET_S)
        for ns in {w.namespace for w in demand.workloads}:
            wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), 60, f"Workloads in {ns} to be gone")
    finally:
        _delete(cluster, objects)
    result = agreement(predicted, observed)
    FIGURES[f"{layout}-{seed}"] = {"workloads": len(demand.workloads), "admissions": result.admissions,
                                   "preemptions": result.preemptions, "agrees": result.equal,
                                   "replay_s": round(observed.seconds, 1)}
    print("what-if agreement:", json.dumps(FIGURES[f"{layout}-{seed}"]))
    assert result.equal, (f"{layout}, seed {seed}: {result.first_difference}\n"
                          f"predicted admissions {predicted.admission_order()}\n"
                          f"observed admissions  {observed.admissions}\n"
                          f"predicted preemptions {predicted.preemptions()}\n"
                          f"observed preemptions  {observed.preemptions}")
    assert result.preemptions, "the trace exercises at least one preemption"
