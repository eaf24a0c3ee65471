"""Promise 4 on the sandbox: a TrainJob survives more reclaims and evictions than its JobSet's maxRestarts.

What the pinned controllers count (Kueue v0.19.2, Trainer v2.2.1, JobSet v0.12.0, Kubernetes v1.36.3), found here:
- a Kueue reclaim (InCohortReclamation for an inference Deployment) never counts: the TrainJob, its JobSet and Job are
  suspended, suspend is no JobSet restart, and the Job controller takes its tracking finalizer off the pods it deletes
  for a suspension before deleting them (job_controller.go deleteJobPods), so they are neither failures nor
  completions: even a runtime without a podFailurePolicy survives any number of reclaims;
- an eviction (a node drain, the eviction API) does count: the pod is deleted while its Job still tracks it, counts as
  failed (isPodFailed), past backoffLimit the Job fails, and JobSet restarts the JobSet counting toward
  failurePolicy.maxRestarts until it fails it (failure_policy.go; the count jobset#1117 reports). Our runtime's
  trainer Job ignores the trainer's stop exit code (kwok ends the deleted pod with it, as the kubelet would after the
  trainer's save: sandbox/kwok.py STOP_STAGES) and DisruptionTarget pods, so no stop is a failure.

Both runtimes are our rendered runtime (components/model/runtime.py) with tight limits (backoffLimit 0,
maxRestarts 1), so that two counted stops exhaust them. The module brings its own cohort (p4-*: an inference queue
owning the node's GPU, a training queue borrowing it), so it needs no Pulumi stack and shares the session's sandbox.
"""

from __future__ import annotations

import pytest
from e2e_support import PRIORITY_LABEL, QUEUE_LABEL, TRAINER, admitted_in, is_true, wait_for
from kubernetes import client as k8s

from kueue_cohorts.components.model.runtime import render_runtime, render_trainjob
from kueue_cohorts.components.settings.runtime import TrainingRuntimeSettings
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import check_checkpoint_safe_runtime
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject
from kueue_cohorts.sandbox.kwok import EXIT_DELAY_ANNOTATION

JOBSET = ("jobset.x-k8s.io", "v1alpha2")
KUEUE = ("kueue.x-k8s.io", "v1beta2")
TRAINING_NS, INFERENCE_NS = "p4-training", "p4-inference"
CLAIM, FLAVOR, COHORT = "p4-ckpt", "p4-default", "p4-shared"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
ONE_GPU = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1"}
MAX_RESTARTS = 1
RECLAIMS = MAX_RESTARTS + 2


def _probe_runtime(name: str, ignore_reclaims: bool) -> dict:
    settings = TrainingRuntimeSettings.model_validate({
        "name": name, "image": "registry.invalid/trainer:never-pulled", "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": dict(ONE_GPU)})
    runtime = render_runtime(settings, TRAINING_NS, CLAIM)
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": MAX_RESTARTS}
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    job["backoffLimit"] = 0
    # The probe trainer's stop save is instant: its pods say so to the sandbox's kwok, which otherwise keeps a deleted
    # pod for its whole grace period (60 s) as a kubelet would, and this file stops them ten times.
    job["template"]["metadata"]["annotations"][EXIT_DELAY_ANNOTATION] = "1s"
    if not ignore_reclaims:
        del job["podFailurePolicy"]
    return runtime


OWNED = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpualloc": "1"}
NONE = {"cpu": "0", "memory": "0", "nvidia.com/gpualloc": "0"}


def _queue(name: str, namespace: str, nominal: dict, borrowing: dict, reclaim: str) -> dict:
    resources = [{"name": r, "nominalQuota": nominal[r], "borrowingLimit": borrowing[r]} for r in OWNED]
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": COHORT,
                     "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                                 "operator": "In", "values": [namespace]}]},
                     "preemption": {"reclaimWithinCohort": reclaim, "withinClusterQueue": "LowerPriority"},
                     "resourceGroups": [{"coveredResources": list(OWNED),
                                         "flavors": [{"name": FLAVOR, "resources": resources}]}]}}


def _create(call, *args) -> None:
    try:
        call(*args)
    except k8s.ApiException as exc:
        if exc.status != 409:
            raise


def _delete(call, *args) -> None:
    try:
        call(*args)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture(scope="module")
def p4_cohort(cluster):
    """The cohort p4-shared: p4-inference-cq owns the node's GPU (nominalQuota 1, borrowingLimit 0, reclaims Any),
    p4-training-cq borrows it (nominalQuota 0); their LocalQueues, priority classes, the RWX checkpoint claim."""
    for ns in (TRAINING_NS, INFERENCE_NS):
        cluster.ensure_namespace(ns)
    custom = cluster.custom
    _create(custom.create_cluster_custom_object, *KUEUE, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}})
    for name, value in (("p4-inference-prio", 1000), ("p4-training-prio", 10)):
        _create(custom.create_cluster_custom_object, *KUEUE, "workloadpriorityclasses", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": name},
            "value": value})
    _create(custom.create_cluster_custom_object, *KUEUE, "clusterqueues",
            _queue("p4-inference-cq", INFERENCE_NS, OWNED, NONE, "Any"))
    _create(custom.create_cluster_custom_object, *KUEUE, "clusterqueues",
            _queue("p4-training-cq", TRAINING_NS, NONE, OWNED, "Never"))
    for ns, role in ((INFERENCE_NS, "inference"), (TRAINING_NS, "training")):
        _create(custom.create_namespaced_custom_object, *KUEUE, ns, "localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": f"p4-{role}-lq", "namespace": ns}, "spec": {"clusterQueue": f"p4-{role}-cq"}})
    _create(cluster.core.create_namespaced_persistent_volume_claim, TRAINING_NS, k8s.V1PersistentVolumeClaim(
        metadata=k8s.V1ObjectMeta(name=CLAIM),
        spec=k8s.V1PersistentVolumeClaimSpec(access_modes=["ReadWriteMany"],
                                             resources=k8s.V1VolumeResourceRequirements(requests={"storage": "1Gi"}))))
    yield
    for ns, role in ((INFERENCE_NS, "inference"), (TRAINING_NS, "training")):
        _delete(custom.delete_namespaced_custom_object, *KUEUE, ns, "localqueues", f"p4-{role}-lq")
    for name in ("p4-inference-cq", "p4-training-cq"):
        _delete(custom.delete_cluster_custom_object, *KUEUE, "clusterqueues", name)
    for name in ("p4-inference-prio", "p4-training-prio"):
        _delete(custom.delete_cluster_custom_object, *KUEUE, "workloadpriorityclasses", name)
    _delete(custom.delete_cluster_custom_object, *KUEUE, "resourceflavors", FLAVOR)
    for ns in (TRAINING_NS, INFERENCE_NS):
        _delete(cluster.core.delete_namespace, ns)


def _judged(runtime: dict) -> list[str]:
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": CLAIM, "namespace": TRAINING_NS}, "spec": {"accessModes": ["ReadWriteMany"]}}
    objects = [KubeObject("", "runtime", "trainer.kubeflow.org", "v1alpha1", "TrainingRuntime", runtime),
               KubeObject("", "pvc", "", "v1", "PersistentVolumeClaim", pvc)]
    return [v.field for v in check_checkpoint_safe_runtime(objects)]


def _get(cluster, plural: str, name: str, group=TRAINER) -> dict | None:
    try:
        return cluster.custom.get_namespaced_custom_object(*group, TRAINING_NS, plural, name)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _workload(cluster, uid: str) -> dict | None:
    items = cluster.custom.list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", TRAINING_NS, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={uid}")["items"]
    return items[0] if items else None


def _pods(cluster, name: str, running: bool = True) -> list:
    pods = cluster.core.list_namespaced_pod(TRAINING_NS, label_selector=f"{JOBSET_NAME_LABEL}={name}").items
    return [p for p in pods if not running or (p.status.phase == "Running" and p.metadata.deletion_timestamp is None)]


def _failed(obj: dict | None) -> bool:
    return bool(obj) and any(c.get("type") == "Failed" and c.get("status") == "True"
                             for c in obj.get("status", {}).get("conditions", []))


def _deployment() -> k8s.V1Deployment:
    labels = {"app": "serve-reclaim", QUEUE_LABEL: "p4-inference-lq", PRIORITY_LABEL: "p4-inference-prio"}
    container = k8s.V1Container(
        name="predictor", image="registry.invalid/serve:never-pulled",
        resources=k8s.V1ResourceRequirements(requests=dict(ONE_GPU), limits=dict(ONE_GPU)))
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="serve-reclaim", namespace=INFERENCE_NS),
        spec=k8s.V1DeploymentSpec(
            replicas=0, selector=k8s.V1LabelSelector(match_labels={"app": "serve-reclaim"}),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[container], termination_grace_period_seconds=0))))


@pytest.fixture
def probes(cluster, p4_cohort):
    """Create the two probe runtimes and the (scaled to 0) inference Deployment; delete everything afterwards."""
    apps = k8s.AppsV1Api(cluster.api)
    apps.create_namespaced_deployment(INFERENCE_NS, _deployment())
    made = {}
    for name, ignore in (("reclaim-ignored", True), ("reclaim-counted", False)):
        made[name] = cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainingruntimes",
                                                                    _probe_runtime(name, ignore))
    yield apps
    for name in made:
        for plural in ("trainjobs", "trainingruntimes"):
            try:
                cluster.custom.delete_namespaced_custom_object(*TRAINER, TRAINING_NS, plural, name)
            except k8s.ApiException as exc:
                if exc.status != 404:
                    raise
    apps.delete_namespaced_deployment("serve-reclaim", INFERENCE_NS)
    for ns in (TRAINING_NS, INFERENCE_NS):
        wait_for(lambda ns=ns: not cluster.kueue_objects("workloads", ns), 120, f"Workloads in {ns} to be gone")
    for name in made:
        wait_for(lambda name=name: not _pods(cluster, name, running=False) and _get(cluster, "jobsets", name, JOBSET)
                 is None, 120, f"{name}'s JobSet and Pods to be gone")


def _start(cluster, name: str) -> str:
    manifest = render_trainjob(name, TRAINING_NS, name, "p4-training-lq", "p4-training-prio")
    created = cluster.custom.create_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", manifest)
    uid = created["metadata"]["uid"]
    wait_for(lambda: _pods(cluster, name), 120, f"{name}'s Pod to run")
    return uid


def _reclaim_once(cluster, apps, name: str, uid: str) -> bool:
    """Inference takes the GPU back, then gives it back. Returns False when the TrainJob failed instead."""
    apps.patch_namespaced_deployment_scale("serve-reclaim", INFERENCE_NS, {"spec": {"replicas": 1}})
    wait_for(lambda: (w := _workload(cluster, uid)) is not None and (is_true(w, "Preempted") or is_true(w, "Finished")),
             90, f"{name}'s Workload to be preempted")
    wait_for(lambda: not _pods(cluster, name, running=False), 90, f"{name}'s Pod to be stopped and removed")
    apps.patch_namespaced_deployment_scale("serve-reclaim", INFERENCE_NS, {"spec": {"replicas": 0}})

    def settled():
        if _failed(_get(cluster, "trainjobs", name)):
            return "failed"
        w = _workload(cluster, uid)
        return "running" if w and admitted_in(w) == "p4-training-cq" and _pods(cluster, name) else None

    return wait_for(settled, 150, f"{name} to run again or fail") == "running"


def _evict_once(cluster, name: str) -> bool:
    """Evict the trainer pod (policy/v1 Eviction, as a node drain does). Returns False when the TrainJob failed."""
    [pod] = _pods(cluster, name)
    cluster.core.create_namespaced_pod_eviction(pod.metadata.name, TRAINING_NS, k8s.V1Eviction(
        metadata=k8s.V1ObjectMeta(name=pod.metadata.name, namespace=TRAINING_NS)))

    def settled():
        if _failed(_get(cluster, "trainjobs", name)):
            return "failed"
        pods = _pods(cluster, name)
        return "running" if pods and pods[0].metadata.uid != pod.metadata.uid else None

    return wait_for(settled, 150, f"{name} to run a new pod or fail") == "running"


def test_a_trainjob_survives_more_stops_than_max_restarts_and_one_that_counts_evictions_fails(cluster, probes):
    apps = probes
    assert _judged(_probe_runtime("reclaim-ignored", True)) == []
    assert _judged(_probe_runtime("reclaim-counted", False)) == [
        "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy"], "the rule refuses the harmful one"

    uid = _start(cluster, "reclaim-ignored")
    for reclaim in range(1, RECLAIMS + 1):
        assert _reclaim_once(cluster, apps, "reclaim-ignored", uid), f"failed at reclaim {reclaim}"
    for eviction in range(1, RECLAIMS + 1):
        assert _evict_once(cluster, "reclaim-ignored"), f"failed at eviction {eviction}"
    jobset = _get(cluster, "jobsets", "reclaim-ignored", JOBSET)
    assert jobset["status"].get("restarts", 0) == 0 and not _failed(jobset)
    (job,) = cluster.batch.list_namespaced_job(TRAINING_NS, label_selector=f"{JOBSET_NAME_LABEL}=reclaim-ignored").items
    assert (job.status.failed or 0) == 0, "no stopped pod counted as a failure"
    assert not _failed(_get(cluster, "trainjobs", "reclaim-ignored"))
    cluster.custom.delete_namespaced_custom_object(*TRAINER, TRAINING_NS, "trainjobs", "reclaim-ignored")
    wait_for(lambda: not _pods(cluster, "reclaim-ignored", running=False), 120, "reclaim-ignored's Pods to be gone")

    uid = _start(cluster, "reclaim-counted")
    # A reclaim is not counted even without the podFailurePolicy (the suspension's pods are untracked first) ...
    for reclaim in range(1, RECLAIMS + 1):
        assert _reclaim_once(cluster, apps, "reclaim-counted", uid), f"failed at reclaim {reclaim}"
    (job,) = cluster.batch.list_namespaced_job(TRAINING_NS, label_selector=f"{JOBSET_NAME_LABEL}=reclaim-counted").items
    assert (job.status.failed or 0) == 0
    # ... an eviction is: the first fails the Job (backoffLimit 0) and restarts the JobSet, the second fails it.
    outcomes = [_evict_once(cluster, "reclaim-counted") for _ in range(MAX_RESTARTS + 1)]
    assert outcomes == [True] * MAX_RESTARTS + [False], outcomes
    jobset = _get(cluster, "jobsets", "reclaim-counted", JOBSET)
    assert _failed(jobset) and jobset["status"].get("restartsCountTowardsMax", 0) == MAX_RESTARTS, jobset["status"]
    assert _failed(_get(cluster, "trainjobs", "reclaim-counted"))
