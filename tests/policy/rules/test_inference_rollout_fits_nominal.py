"""inference-rollout-fits-nominal (mandatory) and inference-peak-fits-nominal (advisory): steady state, update
(replicas + maxSurge, rounded up as Kubernetes does) and peak of InferenceServices and Deployments on an inference
ClusterQueue, against its nominalQuota.

inference-rollout-fits-nominal for the serving kinds beyond Deployments and InferenceServices: a StatefulSet (no
surge: one Kueue pod group of `replicas` pods) and a LeaderWorkerSet (multi-node vLLM: replicas x (leader + size - 1
workers), maxSurge in whole groups, rounded up and capped at replicas), in steady state and during updates."""
from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.book import RULES, run
from kueue_cohorts.policy.rules.inference_peak_fits_nominal import check_inference_peak_fits_nominal
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import (
    INFERENCE_ROLLOUT_FITS_NOMINAL,
    SAFE_STRATEGY,
    check_inference_rollout_fits_nominal,
    surge_pods,
)
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, cluster_queue, compliant, stack, urn

INFERENCE = ["c12-inference-cq"]


LABELS = {"kueue.x-k8s.io/queue-name": "c12-inference-lq", "kueue.x-k8s.io/priority-class": "c12-inference-prio"}


SLICE = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
         "nvidia.com/gpumem": "2048"}


ISVC = "The InferenceService 'c12-inference/c12-inference-demo'"


def deployment(replicas=1, strategy=None, requests=None, labels_on_template=True) -> dict:
    """A Deployment on the inference queue (queue label on its pod template, as Kueue's webhook leaves it)."""
    spec: dict = {"selector": {"matchLabels": {"app": "serve"}},
                  "template": {"metadata": {"labels": {"app": "serve", **(LABELS if labels_on_template else {})}},
                               "spec": {"containers": [{"name": "serve", "image": "x",
                                                        "resources": {"requests": dict(requests or SLICE)}}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    if strategy is not None:
        spec["strategy"] = strategy
    meta = {"name": "serve", "namespace": "c12-inference"}
    if not labels_on_template:
        meta["labels"] = dict(LABELS)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def with_objects(**extra) -> dict:
    manifests = compliant()
    manifests.update(extra)
    return manifests


def rollout(manifests):
    return check_inference_rollout_fits_nominal(stack(manifests), INFERENCE)


def peak(manifests):
    return check_inference_peak_fits_nominal(stack(manifests), INFERENCE)


def predictor(manifests) -> dict:
    return manifests["isvc"]["spec"]["predictor"]


def test_compliant_stack_passes_both():
    assert rollout(compliant()) == [] and peak(compliant()) == []


def test_the_guides_service_with_the_default_strategy_deadlocks_its_update():
    manifests = compliant()
    del predictor(manifests)["deploymentStrategy"]  # KServe's default: RollingUpdate, maxSurge 25% -> 1 pod
    [violation] = rollout(manifests)
    assert violation.field == "spec.predictor.deploymentStrategy" and violation.value is MISSING
    assert violation.policy == "inference-rollout-fits-nominal"
    assert violation.urn == urn("isvc", manifests["isvc"])
    assert violation.message == (
        f"{ISVC} has spec.predictor.deploymentStrategy = missing: an update of 1 replicas with maxSurge the default "
        "25% starts 1 surge pod(s) and needs 2 replicas' worth of quota, more than the nominalQuota of ClusterQueue "
        "'c12-inference-cq' ('nvidia.com/gpualloc' 2 > 1, 'nvidia.com/gpucores' 40 > 20, 'nvidia.com/gpumem' 4096 > "
        "2048); inference never borrows and the old replicas have the same priority, so the surge pod stays "
        "SchedulingGated and the rollout never finishes; set the rolling update's maxSurge to 0 and maxUnavailable "
        "to 1 (one replica is down while it is replaced), or reserve headroom: raise the nominalQuota of "
        "'nvidia.com/gpualloc' to 2, 'nvidia.com/gpucores' to 40, 'nvidia.com/gpumem' to 4096.")


@pytest.mark.parametrize("strategy, field, value", [
    ({"type": "RollingUpdate"}, "spec.predictor.deploymentStrategy.rollingUpdate", MISSING),
    ({"rollingUpdate": {"maxUnavailable": 1}}, "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge", MISSING),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
     "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge", 1),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "1%"}},
     "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge", "1%"),  # 1% of 1 rounds UP to one pod
])
def test_every_way_of_writing_a_surge_is_found_at_its_field(strategy, field, value):
    manifests = compliant()
    predictor(manifests)["deploymentStrategy"] = strategy
    [violation] = rollout(manifests)
    assert (violation.field, violation.value) == (field, value)
    assert "starts 1 surge pod(s)" in violation.rule and "maxSurge to 0 and maxUnavailable to 1" in violation.fix


@pytest.mark.parametrize("strategy", [
    {"type": "Recreate"},
    dict(SAFE_STRATEGY),
    {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "100%"}},
    {"rollingUpdate": {"maxSurge": 0.0, "maxUnavailable": 1.0}},  # JSON numbers reach the pack as floats
])
def test_strategies_without_surge_pass(strategy):
    manifests = compliant()
    predictor(manifests)["deploymentStrategy"] = strategy
    assert rollout(manifests) == []


def test_headroom_in_nominal_quota_lets_a_service_keep_its_surge():
    manifests = compliant()
    predictor(manifests)["deploymentStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}
    for resource in manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if resource["name"].startswith("nvidia.com/"):
            resource["nominalQuota"] = str(int(resource["nominalQuota"]) * 2)
    assert rollout(manifests) == []
    predictor(manifests)["maxReplicas"] = 2  # 2 + ceil(25% of 2) = 3 replicas > 2 GPUs
    [violation] = rollout(manifests)
    assert "an update of 2 replicas with maxSurge '25%' starts 1 surge pod(s) and needs 3" in violation.rule
    assert "'nvidia.com/gpualloc' 3 > 2" in violation.rule


def test_min_replicas_above_nominal_is_the_steady_state_finding():
    manifests = compliant()
    predictor(manifests).update(minReplicas=2, maxReplicas=3)
    [violation] = rollout(manifests)
    assert (violation.field, violation.value) == ("spec.predictor.minReplicas", 2)
    assert violation.rule.startswith("minReplicas 2 x the per-replica requests needs more than the nominalQuota")
    assert "replicas beyond 1 stay SchedulingGated for ever" in violation.rule
    assert violation.fix.startswith("lower minReplicas to 1, or raise the nominalQuota of 'nvidia.com/gpualloc' to 2")


def test_one_replica_that_never_fits_is_left_to_inference_fits_nominal():
    manifests = compliant()
    predictor(manifests)["model"]["resources"]["requests"]["nvidia.com/gpucores"] = "40"
    del predictor(manifests)["deploymentStrategy"]
    assert rollout(manifests) == [] and peak(manifests) == []


@pytest.mark.parametrize("mode, judged", [("RawDeployment", True), ("Standard", True), ("Serverless", False),
                                          ("Knative", False), ("ModelMesh", False)])
def test_only_raw_deployment_modes_are_judged(mode, judged):
    manifests = compliant()
    del predictor(manifests)["deploymentStrategy"]
    manifests["isvc"]["metadata"]["annotations"] = {"serving.kserve.io/deploymentMode": mode}
    assert bool(rollout(manifests)) is judged


def test_a_queued_deployment_with_the_default_strategy_fails_at_spec_strategy():
    manifests = with_objects(serve=deployment(replicas=None))
    [violation] = rollout(manifests)
    assert violation.message.startswith(
        "The Deployment 'c12-inference/serve' has spec.strategy = missing: an update of 1 replicas with maxSurge the "
        "default 25% starts 1 surge pod(s)")
    assert violation.urn == urn("serve", manifests["serve"])
    assert peak(manifests) == []  # a Deployment has no autoscaling bounds here


def test_a_deployment_labelled_on_its_metadata_only_is_judged_too():
    assert rollout(with_objects(serve=deployment(labels_on_template=False)))


def test_a_deployment_with_the_rules_fix_passes():
    assert rollout(with_objects(serve=deployment(strategy=copy.deepcopy(SAFE_STRATEGY)))) == []


def test_deployment_replicas_above_nominal_fail_at_spec_replicas():
    [violation] = rollout(with_objects(serve=deployment(replicas=2, strategy=copy.deepcopy(SAFE_STRATEGY))))
    assert (violation.field, violation.value) == ("spec.replicas", 2)
    assert violation.fix.startswith("lower replicas to 1")


def test_training_deployments_and_unqueued_deployments_are_not_judged():
    training = deployment()
    training["metadata"]["namespace"] = "c12-training"
    training["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "c12-training-lq"
    unqueued = deployment()
    del unqueued["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert rollout(with_objects(training=training, unqueued=unqueued)) == []


def test_a_queue_named_in_the_options_is_inference_without_the_role_label():
    manifests = with_objects(serve=deployment())
    del manifests["inference-cq"]["metadata"]["labels"]
    assert check_inference_rollout_fits_nominal(stack(manifests), []) == []
    assert len(check_inference_rollout_fits_nominal(stack(manifests), INFERENCE)) == 1


@pytest.mark.parametrize("bad", ["lots", "25", -1, "-5%", True])
def test_an_invalid_max_surge_is_reported(bad):
    [violation] = rollout(with_objects(serve=deployment(strategy={"rollingUpdate": {"maxSurge": bad}})))
    assert violation.field == "spec.strategy.rollingUpdate.maxSurge"
    assert "neither an integer >= 0 nor a percentage" in violation.rule


def test_unknown_strategy_fails_closed():
    manifests = with_objects(serve=deployment(strategy={"rollingUpdate": {"maxSurge": UNKNOWN}}))
    [violation] = rollout(manifests)
    assert violation.message.startswith("The Deployment 'c12-inference/serve' has "
                                        "spec.strategy.rollingUpdate.maxSurge unknown at preview")


def test_init_containers_count_at_least_their_own_request():
    manifests = with_objects(serve=deployment(replicas=1, strategy=copy.deepcopy(SAFE_STRATEGY),
                                              requests={"cpu": "1"}))
    manifests["serve"]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "fetch", "resources": {"requests": {"cpu": "5"}}}]
    [violation] = rollout(manifests)
    assert (violation.field, violation.value) == ("spec.template.spec", "'cpu' 5 > 4")
    assert violation.rule.startswith("one pod asks for more than the nominalQuota")


def test_the_book_runs_both_rules_at_their_levels():
    manifests = compliant()
    del predictor(manifests)["deploymentStrategy"]
    predictor(manifests)["maxReplicas"] = 2
    levels = {rule.name: rule.mandatory for rule in RULES}
    found = {(rule.name, v.field) for rule, v in run(stack(manifests), {})}
    assert ("inference-rollout-fits-nominal", "spec.predictor.deploymentStrategy") in found
    assert ("inference-peak-fits-nominal", "spec.predictor.maxReplicas") in found
    assert levels["inference-rollout-fits-nominal"] is True and levels["inference-peak-fits-nominal"] is False


@pytest.mark.parametrize("max_surge, replicas, pods", [
    ("25%", 1, 1), ("25%", 4, 1), ("25%", 5, 2), ("25%", 0, 0), ("50%", 3, 2), ("100%", 3, 3), ("150%", 2, 3),
    ("0%", 10, 0), (0, 10, 0), (2, 1, 2), (2.0, 1, 2), (None, 8, 2), (None, 9, 3),
])
def test_surge_rounds_percentages_up_like_the_deployment_controller(max_surge, replicas, pods):
    assert surge_pods(max_surge, replicas) == pods


GPU = ("nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem")


surges = st.one_of(st.integers(0, 6), st.integers(0, 200).map(lambda p: f"{p}%"))


@settings(max_examples=200, deadline=None)
@given(replicas=st.integers(1, 8), max_surge=surges,
       request=st.tuples(st.integers(1, 3), st.integers(1, 40), st.integers(1, 4096)),
       nominal=st.tuples(st.integers(1, 24), st.integers(1, 400), st.integers(1, 40960)))
def test_a_deployment_passes_iff_replicas_plus_surge_fit_nominal_per_resource(replicas, max_surge, request,
                                                                              nominal):
    manifests = compliant()
    cq = cluster_queue("c12-inference-cq", "inference",
                       {"cpu": "100", "memory": "100Gi", **{r: str(n) for r, n in zip(GPU, nominal, strict=True)}},
                       {"cpu": "0", "memory": "0", **{r: "0" for r in GPU}})
    manifests["inference-cq"] = cq
    del manifests["isvc"]
    manifests["serve"] = deployment(replicas=replicas, requests={r: str(q) for r, q in zip(GPU, request, strict=True)},
                                    strategy={"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": 1}})
    if any(q > n for q, n in zip(request, nominal, strict=True)):
        assert [v.field for v in rollout(manifests)] == ["spec.template.spec"]  # one pod never fits
        return
    percent = int(max_surge[:-1]) if isinstance(max_surge, str) else None
    surge = max_surge if percent is None else -(-replicas * percent // 100)
    fits = all((replicas + surge) * q <= n for q, n in zip(request, nominal, strict=True))
    assert (rollout(manifests) == []) is fits


@settings(max_examples=200, deadline=None)
@given(low=st.integers(1, 4), extra=st.integers(0, 4), max_surge=surges, gpus=st.integers(1, 12))
def test_an_inference_service_passes_iff_its_update_at_the_replicas_that_fit_fits(low, extra, max_surge, gpus):
    manifests = compliant()
    cq = manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    for resource in cq:
        resource["nominalQuota"] = {"nvidia.com/gpualloc": str(gpus), "nvidia.com/gpucores": str(20 * gpus),
                                    "nvidia.com/gpumem": str(2048 * gpus), "cpu": "100",
                                    "memory": "100Gi"}[resource["name"]]
    predictor(manifests).update(minReplicas=low, maxReplicas=low + extra,
                                deploymentStrategy={"rollingUpdate": {"maxSurge": max_surge}})
    found = rollout(manifests)
    if low > gpus:
        assert [v.field for v in found] == ["spec.predictor.minReplicas"]
        return
    replicas = min(low + extra, gpus)
    surge = surge_pods(max_surge, replicas)
    assert (found == []) is (replicas + surge <= gpus)
    assert (peak(manifests) == []) is (low + extra <= gpus)


def test_decimal_requests_are_exact():
    def serve(cpu):
        return deployment(replicas=2, strategy={"rollingUpdate": {"maxSurge": 1}}, requests={"cpu": cpu})
    assert rollout(with_objects(serve=serve("1333m"))) == []  # 3 x 1.333 = 3.999 <= 4
    [violation] = rollout(with_objects(serve=serve("1334m")))  # 3 x 1.334 = 4.002 > 4
    assert "'cpu' 4.002 > 4" in violation.rule


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
