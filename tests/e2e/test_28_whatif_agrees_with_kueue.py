"""The what-if simulator agrees with the real Kueue 0.19.2: seeded traces of both layouts and of two flavors,
replayed as Jobs in the sandbox (instant by instant, whatif/replay.py), give the same admissions and the same
preemptions (victim, preemptor, reason), instant by instant, as the simulation of the same Kueue objects; where they
differ, the test names the first difference.

The objects are the replay's own (cohorts `wi-*`, cpu quotas: kwok pods need no device: whatif.replay
AGREEMENT_LAYOUTS), created through the API and deleted afterwards; the sandbox is the session's. About 35 s per
trace.
"""
from __future__ import annotations

import copy
import json
import threading
import time

import pytest
from kubernetes.client import ApiException

from kueue_cohorts.whatif.kueue import setup_from_objects
from kueue_cohorts.whatif.record import TraceRecorder, watch_workloads
from kueue_cohorts.whatif.replay import (
    AGREEMENT_LAYOUTS,
    KUEUE_GROUP,
    KUEUE_VERSION,
    _cq,
    _flavor,
    _lq,
    apply_objects,
    delete_objects,
    job_of,
    run_agreement,
)
from kueue_cohorts.whatif.report import quota_below_use
from kueue_cohorts.whatif.scheduler import simulate
from kueue_cohorts.whatif.trace import Trace, TraceWorkload, WorkloadKind

#: Seeds of six-workload traces whose simulation preempts (three, two and three times): about 15 instants each.
CASES = [("asymmetric", 21), ("symmetric", 9), ("two-flavors", 22)]


@pytest.mark.parametrize("layout, seed", CASES)
def test_the_simulator_predicts_kueues_admissions_and_preemptions(cluster, layout, seed):
    run = run_agreement(cluster.api, layout, seed, count=6)
    result = run.agreement
    print("what-if agreement:", json.dumps({"layout": layout, "seed": seed, "workloads": run.workloads,
                                            "admissions": result.admissions, "preemptions": result.preemptions,
                                            "agrees": result.equal, "replay_s": round(run.replay_seconds, 1)}))
    assert result.equal, f"{layout}, seed {seed}: {result.first_difference}"
    assert result.preemptions, "the trace exercises at least one preemption"


def _workloads(cluster, namespace):
    """The namespace's Workloads by their Job's name: (QuotaReserved, Evicted, Preempted reason or None)."""
    out = {}
    for wl in cluster.custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace,
                                                           "workloads")["items"]:
        owner = next((r["name"] for r in wl["metadata"].get("ownerReferences") or [] if r["kind"] == "Job"), None)
        conditions = {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or []}
        out[owner] = ((conditions.get("QuotaReserved") or {}).get("status") == "True",
                      (conditions.get("Evicted") or {}).get("status") == "True",
                      (conditions.get("Preempted") or {}).get("reason")
                      if (conditions.get("Preempted") or {}).get("status") == "True" else None)
    return out


def _job(name, namespace, queue, cpu, priority_class=None):
    return job_of(TraceWorkload(name=name, submit_seconds=0, namespace=namespace, local_queue=queue,
                                requests={"cpu": str(cpu)}, priority_class=priority_class))


def _job_name(workload_name):
    """The Job of a Workload Kueue named `job-<job>-<hash>`."""
    return workload_name.removeprefix("job-").rsplit("-", 1)[0]


def _record(cluster, kinds):
    """TraceRecorder over the Workloads as listed now (what `kueue-cohorts trace record` starts from)."""
    recorder = TraceRecorder(kinds)
    for item in cluster.custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloads")["items"]:
        recorder.observe(item)
    return recorder


def _until(check, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


LOWER_NS = "wi-lower"
LOWER_OBJECTS = [_flavor("wi-lower-default"),
                 _cq("wi-lower-cq", "wi-lower", [LOWER_NS], [("wi-lower-default", 4, 0)]),
                 _lq(LOWER_NS, "lq", "wi-lower-cq")]


def test_a_quota_lowered_under_a_running_job_keeps_it_running_as_the_simulator_predicts(cluster):
    """Kueue 0.19.2 on the sandbox: a ClusterQueue's nominalQuota lowered from 4 to 1 cpu under a running 3-cpu Job
    evicts nothing, and a 1-cpu Job submitted after waits; the simulator, started from the state `trace record`
    captures, predicts the same (who keeps running, who waits), warns that the quota is below its use, and both
    admit the waiting Job once the running one is gone."""
    apply_objects(cluster.api, LOWER_OBJECTS)
    try:
        cluster.batch.create_namespaced_job(LOWER_NS, _job("keep", LOWER_NS, "lq", 3))
        _until(lambda: _workloads(cluster, LOWER_NS).get("keep", (False,))[0], "keep to be admitted")
        start = time.time()
        kinds = {(LOWER_NS, "lq"): WorkloadKind.TRAINING}
        cq = cluster.custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", "wi-lower-cq")
        base_objects = [LOWER_OBJECTS[0], copy.deepcopy(cq), LOWER_OBJECTS[2]]
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "1"
        cluster.custom.replace_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", "wi-lower-cq", cq)
        _until(lambda: cluster.custom.get_cluster_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", "wi-lower-cq")["spec"]["resourceGroups"][0]["flavors"][0][
            "resources"][0]["nominalQuota"] in ("1", 1), "the lower quota")
        cluster.batch.create_namespaced_job(LOWER_NS, _job("wait", LOWER_NS, "lq", 1))
        _until(lambda: "wait" in _workloads(cluster, LOWER_NS), "wait's Workload")
        time.sleep(5)  # several requeue batches and scheduling cycles: Kueue had every chance to admit it
        kueue = _workloads(cluster, LOWER_NS)
        assert kueue["keep"] == (True, False, None) and kueue["wait"][0] is False, kueue

        recorder = _record(cluster, kinds)
        demand = recorder.trace(time.time() + 60, start)
        keep = next(w for w in demand.workloads if _job_name(w.name) == "keep")
        assert keep.running_since_seconds is not None and keep.running_since_seconds <= 0
        assert keep.flavors == {"cpu": "wi-lower-default"}
        head_objects = [LOWER_OBJECTS[0], cq, LOWER_OBJECTS[2]]
        head = simulate(setup_from_objects(head_objects), demand)
        base = simulate(setup_from_objects(base_objects), demand)
        predicted = {_job_name(name): wl.reserved_at is not None for name, wl in head.workloads.items()}
        observed = {name: state[0] for name, state in _workloads(cluster, LOWER_NS).items()}
        assert predicted == observed == {"keep": True, "wait": False} and not head.preemptions()
        [over] = quota_below_use(head, base)
        assert (over.cluster_queue, over.in_use, over.nominal, over.base_nominal) == ("wi-lower-cq", 3000, 1000, 4000)

        cluster.batch.delete_namespaced_job("keep", LOWER_NS, propagation_policy="Background")
        _until(lambda: _workloads(cluster, LOWER_NS).get("wait", (False,))[0], "wait to be admitted once keep is gone")
        ended = time.time() - start
        finished = Trace.build([w.model_copy(update={"duration_seconds": ended - w.running_since_seconds})
                                if w is keep else w for w in demand.workloads],
                               max(demand.horizon_seconds, ended + 60))
        again = simulate(setup_from_objects(head_objects), finished)
        assert [_job_name(e.workload) for e in again.events if e.kind == "admitted"] == ["keep", "wait"]
    finally:
        for name in ("keep", "wait"):
            try:
                cluster.batch.delete_namespaced_job(name, LOWER_NS, propagation_policy="Background")
            except ApiException as exc:
                assert exc.status == 404
        _until(lambda: not _workloads(cluster, LOWER_NS), "the Workloads to be gone")
        delete_objects(cluster.api, LOWER_OBJECTS)


def test_a_recorded_reclamation_replayed_by_the_simulator_agrees_with_kueue(cluster):
    """`trace record` (TraceRecorder on the watch API) of what Kueue really did in the asymmetric layout: a training
    Job borrowing every cpu, then an inference Job that reclaims them. The recorded trace, simulated on the same
    objects, admits and preempts as Kueue did (victim, preemptor, reason)."""
    objects, _ = AGREEMENT_LAYOUTS["asymmetric"]
    apply_objects(cluster.api, objects)
    kinds = {("wi-serving", "inference"): WorkloadKind.INFERENCE, ("wi-training", "training"): WorkloadKind.TRAINING}
    recorder = TraceRecorder(kinds)
    start = time.time()
    done = {}
    watcher = threading.Thread(target=lambda: done.setdefault("end", watch_workloads(
        cluster.api, 25, recorder.observe, deleted=recorder.observe_deleted)), daemon=True)
    watcher.start()
    try:
        time.sleep(2)
        cluster.batch.create_namespaced_job("wi-training", _job("train", "wi-training", "training", 4, "wi-training"))
        _until(lambda: _workloads(cluster, "wi-training").get("train", (False,))[0], "train to be admitted")
        cluster.batch.create_namespaced_job("wi-serving", _job("serve", "wi-serving", "inference", 4, "wi-inference"))
        _until(lambda: _workloads(cluster, "wi-serving").get("serve", (False,))[0], "serve to be admitted")
        kueue = {**_workloads(cluster, "wi-training"), **_workloads(cluster, "wi-serving")}
        assert kueue["train"][2] == "InCohortReclamation" and kueue["serve"][0], kueue
        watcher.join(timeout=60)
        demand = recorder.trace(done["end"], start)
        names = {_job_name(w.name): w.name for w in demand.workloads}
        assert sorted(names) == ["serve", "train"], names
        assert {w.name: w.priority_class for w in demand.workloads} == {  # spec.priorityClassRef, as Kueue writes it
            names["train"]: "wi-training", names["serve"]: "wi-inference"}
        result = simulate(setup_from_objects(objects), demand)
        assert result.preemptions() == [(names["train"], names["serve"], "InCohortReclamation")], result.events
        assert result.admission_order()[:2] == [names["train"], names["serve"]]
    finally:
        for ns, name in (("wi-training", "train"), ("wi-serving", "serve")):
            try:
                cluster.batch.delete_namespaced_job(name, ns, propagation_policy="Background")
            except ApiException as exc:
                assert exc.status == 404
        _until(lambda: not _workloads(cluster, "wi-training") and not _workloads(cluster, "wi-serving"),
               "the Workloads to be gone")
        delete_objects(cluster.api, objects)
