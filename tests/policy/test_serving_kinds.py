"""inference-rollout-fits-nominal for the serving kinds beyond Deployments and InferenceServices: a StatefulSet (no
surge: one Kueue pod group of `replicas` pods) and a LeaderWorkerSet (multi-node vLLM: replicas x (leader + size - 1
workers), maxSurge in whole groups, rounded up and capped at replicas), in steady state and during updates."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import INFERENCE_ROLLOUT_FITS_NOMINAL
from tests.policy.fixtures import compliant, stack

LABELS = {"kueue.x-k8s.io/queue-name": "c12-inference-lq", "kueue.x-k8s.io/priority-class": "c12-inference-prio"}
CONFIG = {INFERENCE_ROLLOUT_FITS_NOMINAL.name: {"inferenceClusterQueues": ["c12-inference-cq"]}}
CPU_ONLY = {"cpu": "1", "memory": "1Gi"}  # the inference nominalQuota: cpu 4, memory 8Gi


def pod(requests: dict) -> dict:
    return {"metadata": {"labels": dict(LABELS)},
            "spec": {"containers": [{"name": "vllm", "image": "vllm", "resources": {"requests": dict(requests)}}]}}


def statefulset(replicas: int | None, requests: dict, strategy: dict | None = None) -> dict:
    spec: dict = {"serviceName": "s", "selector": {"matchLabels": {"app": "s"}}, "template": pod(requests)}
    if replicas is not None:
        spec["replicas"] = replicas
    if strategy is not None:
        spec["updateStrategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "vllm-sts", "namespace": "c12-inference"}, "spec": spec}


def lws(replicas: int | None, size: int | None, worker: dict, leader: dict | None = None, surge=None) -> dict:
    lwt: dict = {"workerTemplate": pod(worker)}
    if size is not None:
        lwt["size"] = size
    if leader is not None:
        lwt["leaderTemplate"] = pod(leader)
    spec: dict = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    if surge is not None:
        spec["rolloutStrategy"] = {"type": "RollingUpdate",
                                   "rollingUpdateConfiguration": {"maxSurge": surge, "maxUnavailable": 1}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "vllm", "namespace": "c12-inference", "labels": dict(LABELS)}, "spec": spec}


def findings(workload: dict) -> list[str]:
    manifests = compliant()
    manifests.pop("isvc")
    manifests["workload"] = workload
    return [v.message for rule, v in run(stack(manifests), CONFIG) if rule.name == INFERENCE_ROLLOUT_FITS_NOMINAL.name]


# --- StatefulSet -----------------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=4), st.sampled_from([None, {"type": "OnDelete"},
                                                              {"type": "RollingUpdate", "rollingUpdate": {
                                                                  "partition": 0, "maxUnavailable": 2}}]))
def test_a_statefulset_that_fits_in_steady_state_fits_its_updates(replicas, strategy):
    """No surge: a rolling update replaces pods inside Kueue's one pod group (statefulset_reconciler.go)."""
    assert findings(statefulset(replicas, CPU_ONLY, strategy)) == []


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=5, max_value=50))
def test_a_statefulset_beyond_nominal_in_steady_state_is_refused(replicas):
    found = findings(statefulset(replicas, CPU_ONLY))
    assert found == [
        f"The StatefulSet 'c12-inference/vllm-sts' has spec.replicas = {replicas}: replicas {replicas} x the "
        "per-replica requests needs more than the nominalQuota of ClusterQueue 'c12-inference-cq' ("
        f"'cpu' {replicas} > 4" + (f", 'memory' {replicas}Gi > 8Gi" if replicas > 8 else "") + "); inference never "
        "borrows, so the replicas beyond 4 stay SchedulingGated for ever and every rollout deadlocks; lower replicas "
        f"to 4, or raise the nominalQuota of 'cpu' to {replicas}" + (f", 'memory' to {replicas}Gi" if replicas > 8
                                                                        else "") + "."]


def test_a_statefulset_pod_that_never_fits_is_refused():
    found = findings(statefulset(1, {"cpu": "6"}))
    assert len(found) == 1 and "one pod asks for more than the nominalQuota" in found[0]


# --- LeaderWorkerSet -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("groups, surge", list(itertools.product([1, 2, 3, 4], [None, 0, "0%"])))
def test_a_leaderworkerset_whose_groups_fit_without_surge_passes(groups, surge):
    """replicas x (leader + size - 1 workers) within nominalQuota (cpu 4), maxSurge 0 (LWS's default)."""
    size = 4 // groups
    assert findings(lws(groups, size, {"cpu": "1", "memory": "1Gi"}, surge=surge)) == []


@pytest.mark.parametrize("groups, surge, surge_groups", [
    (1, 1, 1), (1, "1%", 1), (1, "50%", 1), (1, "100%", 1), (1, 3, 1),
    (2, 1, 1), (2, "1%", 1), (2, "50%", 1), (2, "100%", 2), (2, 3, 2),
])
def test_a_leaderworkerset_surge_of_whole_groups_beyond_nominal_is_refused(groups, surge, surge_groups):
    """Every member of the space (2 replica counts x 5 maxSurge values), the surge groups written out by hand: a
    percentage of the replicas rounded up, at most the replicas (LeaderWorkerSet's rolling update)."""
    size = 4 // groups  # the groups fill the nominalQuota exactly: any surge group is beyond it
    found = findings(lws(groups, size, {"cpu": "1", "memory": "1Gi"}, surge=surge))
    assert len(found) == 1, found
    unit = f"group(s) of {size} pods" if size > 1 else "pod(s)"
    assert found[0].startswith(
        f"The LeaderWorkerSet 'c12-inference/vllm' has spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge = "
        f"{surge!r}: an update of {groups} replicas with maxSurge {surge!r} starts {surge_groups} surge {unit} and "
        f"needs {groups + surge_groups} replicas' worth of quota")
    assert found[0].endswith(
        "set spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge to 0 (LeaderWorkerSet's default), or reserve "
        f"headroom: raise the nominalQuota of 'cpu' to {(groups + surge_groups) * size}.")


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=2, max_value=6), st.integers(min_value=1, max_value=3))
def test_a_leaderworkerset_counts_the_leader_and_every_worker(size, groups):
    """A group is the leader (leaderTemplate) plus size - 1 workers: 2 + (size - 1) cpu per group."""
    group = 2 + (size - 1)
    found = findings(lws(groups, size, {"cpu": "1"}, leader={"cpu": "2"}))
    if groups * group <= 4:
        assert found == []
    elif group > 4:  # one group alone never fits
        assert len(found) == 1 and f"'cpu' {group} > 4" in found[0] and "can never be admitted" in found[0], found
    else:
        assert len(found) == 1 and f"'cpu' {groups * group} > 4" in found[0], found


def test_a_leaderworkerset_group_that_never_fits_names_the_group():
    found = findings(lws(1, 8, {"cpu": "1"}))
    assert found == [
        "The LeaderWorkerSet 'c12-inference/vllm' has spec.leaderWorkerTemplate = \"'cpu' 8 > 4\": one group of 8 "
        "pods (leader + 7 workers) asks for more than the nominalQuota of ClusterQueue 'c12-inference-cq' ('cpu' 8 "
        "> 4); inference never borrows, so it can never be admitted; lower the group of 8 pods (leader + 7 "
        "workers)'s requests, or raise the nominalQuota of 'cpu' to 8."]


def test_a_leaderworkerset_on_a_training_queue_is_not_judged_here():
    workload = lws(5, 8, {"cpu": "1"})
    workload["metadata"]["namespace"] = "c12-training"
    for labels in (workload["metadata"]["labels"],
                   workload["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]):
        labels.update({"kueue.x-k8s.io/queue-name": "c12-training-lq",
                       "kueue.x-k8s.io/priority-class": "c12-training-prio"})
    assert findings(workload) == []
