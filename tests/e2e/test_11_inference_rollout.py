"""Issue 21: an inference Deployment sized to its whole quota is updated twice without deadlocking on its own quota.

On the dev stack (inference never borrows: borrowingLimit 0), a Deployment in c12-inference with the inference
queue and priority labels runs one replica that requests the whole inference GPU quota (1 gpualloc, 20 gpucores,
2048 gpumem). With the strategy the rule book asks for (inference-rollout-fits-nominal's fix: RollingUpdate,
maxSurge 0, maxUnavailable 1) both template updates finish, while a borrowing training Job is preempted whenever the
inference pod needs the quota and admitted again when it is gone. The control: the default strategy (maxSurge 25%,
one surge pod) leaves the surge pod SchedulingGated behind the old replica, and the rollout stalls until the rule's
fix is applied. Every wait is bounded and polls real objects written by the real Kueue and controller-manager.
"""
from __future__ import annotations

import contextlib
import copy
import time

import pytest
from e2e_support import PRIORITY_LABEL, QUEUE_LABEL, REPO, SLICE, admitted_in, condition, is_true, wait_for
from kubernetes import client as k8s

from kueue_cohorts.components.checks.validation import as_objects, load_stack_file
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.policy.rules.book import run as run_book
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import (
    SAFE_STRATEGY,
    check_inference_rollout_fits_nominal,
)
from kueue_cohorts.policy.rules.vocabulary.objects import from_resource
from kueue_cohorts.policy.rules.vocabulary.roles import inference_queue_names

NAMESPACE = "c12-inference"
NAME = "serve"
LABELS = {QUEUE_LABEL: "c12-inference-lq", PRIORITY_LABEL: "c12-inference-prio"}
SELECTOR = {"app": NAME}


def _deployment(strategy: dict) -> dict:
    """The Deployment of the issue: one replica requesting the dev stack's whole inference GPU quota."""
    container = {"name": "model", "image": "registry.invalid/serve:never-pulled", "env": [
        {"name": "MODEL_VERSION", "value": "v1"}], "resources": {"requests": dict(SLICE), "limits": dict(SLICE)}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(LABELS)},
            "spec": {"replicas": 1, "selector": {"matchLabels": dict(SELECTOR)}, "strategy": copy.deepcopy(strategy),
                     "template": {"metadata": {"labels": {**SELECTOR, **LABELS}},
                                  "spec": {"containers": [container], "terminationGracePeriodSeconds": 0}}}}


def _rule_book_verdict(deployment: dict) -> list:
    """inference-rollout-fits-nominal on the dev stack's rendered objects plus `deployment`."""
    objects = as_objects(render_stack(load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")))
    objects.append(from_resource("kubernetes:apps/v1:Deployment", deployment, resource_name=NAME))
    return check_inference_rollout_fits_nominal(objects, inference_queue_names(objects, {}))


@pytest.fixture
def apps(cluster) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(cluster.api)


@pytest.fixture
def serve(cluster, apps, clean_dev_jobs):
    """Deletes the Deployment after the test and waits until its pods and their Workloads are gone."""
    yield
    try:
        apps.delete_namespaced_deployment(NAME, NAMESPACE, body=k8s.V1DeleteOptions(propagation_policy="Foreground"))
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise
    wait_for(lambda: not cluster.core.list_namespaced_pod(NAMESPACE, label_selector="app=serve").items, 120,
             "the Deployment's pods to be gone")


def _pods(cluster) -> list[k8s.V1Pod]:
    return [p for p in cluster.core.list_namespaced_pod(NAMESPACE, label_selector="app=serve").items
            if p.metadata.deletion_timestamp is None]


def _ready(pod: k8s.V1Pod) -> bool:
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True"
                                                 for c in pod.status.conditions or [])


def _gated(pod: k8s.V1Pod) -> bool:
    return any(g.name == "kueue.x-k8s.io/admission" for g in pod.spec.scheduling_gates or [])


def _pod_workload(cluster, pod: k8s.V1Pod) -> dict | None:
    for wl in cluster.kueue_objects("workloads", NAMESPACE):
        if any(o.get("uid") == pod.metadata.uid for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def _rolled_out(apps, cluster, version: str):
    """The Deployment's rollout is complete: observed, every replica updated and available, only pods of the new
    template left, each Running and Ready with the new MODEL_VERSION. Returns the Deployment or None."""
    d = apps.read_namespaced_deployment(NAME, NAMESPACE)
    s = d.status
    if not (s.observed_generation or 0) >= d.metadata.generation:
        return None
    if (s.updated_replicas, s.replicas, s.available_replicas, s.unavailable_replicas or 0) != (1, 1, 1, 0):
        return None
    pods = cluster.core.list_namespaced_pod(NAMESPACE, label_selector="app=serve").items
    envs = [{e.name: e.value for e in p.spec.containers[0].env or []}.get("MODEL_VERSION") for p in pods]
    return d if envs == [version] and all(_ready(p) for p in pods) else None


def _update(apps, version: str) -> None:
    apps.patch_namespaced_deployment(NAME, NAMESPACE, {"spec": {"template": {"spec": {"containers": [
        {"name": "model", "env": [{"name": "MODEL_VERSION", "value": version}]}]}}}})


def test_an_inference_deployment_holding_its_whole_quota_updates_twice_and_the_default_surge_deadlocks(
        cluster, apps, serve):
    # The rule book: the default strategy deadlocks this Deployment's updates, its fix does not.
    default = _deployment({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
    [finding] = _rule_book_verdict(default)
    assert finding.field == "spec.strategy.rollingUpdate.maxSurge" and "maxSurge to 0 and maxUnavailable to 1" in \
        finding.fix
    fixed = _deployment(dict(SAFE_STRATEGY))
    assert _rule_book_verdict(fixed) == []

    # Training borrows the idle inference quota first.
    training = cluster.submit_job("c12-training", "finetune", "c12-training-lq", SLICE,
                                  priority_class="c12-training-prio")
    wait_for(lambda: admitted_in(cluster.workload_of(training)) == "c12-training-cq", 90,
             "the training Workload to be admitted (borrowing the inference quota)")

    apps.create_namespaced_deployment(NAMESPACE, fixed)
    preempted = wait_for(lambda: (w := cluster.workload_of(training)) and is_true(w, "Preempted") and w, 90,
                         "the borrowing training Workload to be preempted by the inference pod")
    assert condition(preempted, "Preempted")["reason"] == "InCohortReclamation"
    first = wait_for(lambda: _rolled_out(apps, cluster, "v1"), 120, "the inference replica to run")
    assert first.spec.strategy.rolling_update.max_surge == 0
    [pod] = _pods(cluster)
    assert admitted_in(_pod_workload(cluster, pod)) == "c12-inference-cq"
    assert not admitted_in(cluster.workload_of(training)), "the inference replica holds the whole quota"

    # Two template updates (new model versions): each one replaces the replica and finishes.
    for version in ("v2", "v3"):
        _update(apps, version)
        wait_for(lambda v=version: _rolled_out(apps, cluster, v), 180, f"the rollout to {version} to finish")
        [pod] = _pods(cluster)
        assert admitted_in(_pod_workload(cluster, pod)) == "c12-inference-cq"
        assert not admitted_in(cluster.workload_of(training)), \
            "after the rollout inference holds its quota again (training was preempted if it got in between)"

    # Control: the default strategy (25% surge of 1 replica = 1 surge pod) deadlocks on the same quota. In the
    # cluster the stack's guardrail refuses it (issue 26 promise 3, the one-object part) ...
    default_patch = {"spec": {
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
        "template": {"spec": {"containers": [{"name": "model", "env": [{"name": "MODEL_VERSION", "value": "v4"}]}]}}}}
    with pytest.raises(k8s.ApiException) as refused:
        apps.patch_namespaced_deployment(NAME, NAMESPACE, default_patch)
    assert refused.value.status == 422 and "inference-rollout-fits-nominal" in refused.value.body
    # ... and without it (its binding weakened to Warn, as a cluster admin could) the rollout deadlocks.
    with _guardrail_warns_only(cluster):
        # The apiserver's admission plugin sees a binding change through its informer: retry until it has.
        wait_for(lambda: _patched(apps, default_patch), 30, "the weakened guardrail to let the default surge in")
        _deadlocks_then_the_fix_finishes_it(apps, cluster)
    # Inference gone: the training Workload is admitted again (same Workload, same Job).
    apps.delete_namespaced_deployment(NAME, NAMESPACE, body=k8s.V1DeleteOptions(propagation_policy="Foreground"))
    back = wait_for(lambda: (w := cluster.workload_of(training)) and admitted_in(w) == "c12-training-cq" and w, 120,
                    "the training Workload to be admitted again")
    assert back["metadata"]["uid"] == preempted["metadata"]["uid"]


GUARDRAIL_BINDING = "kueue-cohorts.c12-shared.inference-rollout-fits-nominal"


def _patched(apps, patch: dict) -> bool:
    """Apply `patch` to the Deployment: True, or False while the guardrail still refuses it (422)."""
    try:
        apps.patch_namespaced_deployment(NAME, NAMESPACE, patch)
    except k8s.ApiException as exc:
        if exc.status != 422:
            raise
        return False
    return True


@contextlib.contextmanager
def _guardrail_warns_only(cluster):
    """The rollout guardrail's binding set to Warn for the block (what a cluster admin could do; `cohorts verify` names
    it), then restored to what the stack registered."""
    admission = k8s.AdmissionregistrationV1Api(cluster.api)
    actions = admission.read_validating_admission_policy_binding(GUARDRAIL_BINDING).spec.validation_actions
    admission.patch_validating_admission_policy_binding(GUARDRAIL_BINDING, {"spec": {"validationActions": ["Warn"]}})
    try:
        yield
    finally:
        admission.patch_validating_admission_policy_binding(GUARDRAIL_BINDING, {"spec": {"validationActions": actions}})


#: Seconds the stuck rollout is watched to stand still once its status counts the gated surge pod.
STANDS_STILL_S = 5


def _deadlocks_then_the_fix_finishes_it(apps, cluster) -> None:
    """The default surge's rollout stands still (surge pod gated, its Workload pending, the old replica serving), and
    the rule's fix applied to the stuck rollout lets it finish."""
    def surge_pod_pending():
        pods = _pods(cluster)
        new = [p for p in pods if {e.name: e.value for e in p.spec.containers[0].env}.get("MODEL_VERSION") == "v4"]
        if len(pods) != 2 or len(new) != 1:
            return None
        wl = _pod_workload(cluster, new[0])
        reserved = condition(wl, "QuotaReserved")
        # Kueue tried and found no quota: QuotaReserved=False (reason Pending or a more specific one) with a message
        return (new[0], wl) if reserved and reserved["status"] == "False" and reserved.get("message") else None

    surge, wl = wait_for(surge_pod_pending, 120, "Kueue to leave the surge pod's Workload pending")
    assert _gated(cluster.core.read_namespaced_pod(surge.metadata.name, NAMESPACE)), "the surge pod stays gated"
    assert not admitted_in(wl)
    old = [p for p in _pods(cluster) if p.metadata.uid != surge.metadata.uid]
    assert len(old) == 1 and _ready(old[0]), "the old replica keeps serving and keeps its quota"
    # The Deployment controller writes its status after it sees the pods (a sync later than the pods themselves,
    # Kubernetes v1.36.3 pkg/controller/deployment/sync.go syncDeploymentStatus): wait for it, then see it stays put.
    def rollout_counts() -> tuple[int | None, int | None, int | None]:
        status = apps.read_namespaced_deployment(NAME, NAMESPACE).status
        return status.replicas, status.updated_replicas, status.available_replicas

    wait_for(lambda: rollout_counts() == (2, 1, 1), 30, "the Deployment's status to count the gated surge pod")
    time.sleep(STANDS_STILL_S)
    assert rollout_counts() == (2, 1, 1), "the rollout stands still: one updated replica that is not available"
    assert _gated(cluster.core.read_namespaced_pod(surge.metadata.name, NAMESPACE)), "the surge pod is still gated"

    # The rule's fix, applied to the stuck rollout, lets it finish.
    apps.patch_namespaced_deployment(NAME, NAMESPACE, {"spec": {"strategy": copy.deepcopy(SAFE_STRATEGY)}})
    wait_for(lambda: _rolled_out(apps, cluster, "v4"), 180, "the stuck rollout to finish with maxSurge 0")



# --- issue 37 class 1: one pod, one node ------------------------------------------------------------------------------

WIDE = {**SLICE, "nvidia.com/gpualloc": "2", "nvidia.com/gpucores": "40", "nvidia.com/gpumem": "4096"}
"""Two of the dev node's GPU slices in one pod: the quota below holds it, the one node holds half of it."""
WIDE_NS = "c12-training"  # a namespace Kueue manages, outside the inference guardrails (which would refuse it)


def _wide_queue() -> tuple[dict, dict]:
    """A ClusterQueue in no cohort whose nominalQuota holds two slices (what a stack that sums quota over nodes, or
    a kubectl user, writes), and its LocalQueue."""
    resources = [{"name": r, "nominalQuota": v} for r, v in {**WIDE, "cpu": "2", "memory": "2Gi"}.items()]
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "e2e-wide-cq"},
          "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": WIDE_NS}},
                   "resourceGroups": [{"coveredResources": [r["name"] for r in resources],
                                       "flavors": [{"name": "c12-default", "resources": resources}]}]}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "e2e-wide-lq", "namespace": WIDE_NS}, "spec": {"clusterQueue": "e2e-wide-cq"}}
    return cq, lq


def _wide_deployment() -> dict:
    container = {"name": "model", "image": "registry.invalid/serve:never-pulled",
                 "resources": {"requests": dict(WIDE), "limits": {k: v for k, v in WIDE.items() if "/" in k}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "wide", "namespace": WIDE_NS, "labels": {QUEUE_LABEL: "e2e-wide-lq"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "wide"}},
                     "strategy": {"type": "Recreate"},
                     "template": {"metadata": {"labels": {"app": "wide", QUEUE_LABEL: "e2e-wide-lq"}},
                                  "spec": {"containers": [container], "terminationGracePeriodSeconds": 0}}}}


def test_a_pod_wider_than_every_node_is_admitted_and_stays_pending_and_the_rule_book_refuses_it(cluster, apps,
                                                                                               dev_stack):
    """The harm (Kueue admits by quota, the kube-scheduler has no node: Insufficient nvidia.com/gpualloc) on the
    sandbox, and the refusal of the same objects by the rule book, and of the stack that would write them by the
    settings check (`kueue-cohorts validate`'s judge)."""
    cq, lq = _wide_queue()
    deployment = _wide_deployment()
    custom = k8s.CustomObjectsApi(cluster.api)
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", cq)
    try:
        custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", WIDE_NS, "localqueues", lq)
        apps.create_namespaced_deployment(WIDE_NS, deployment)

        def pending_admitted():
            pods = [p for p in cluster.core.list_namespaced_pod(WIDE_NS, label_selector="app=wide").items
                    if not _gated(p)]
            if not pods:
                return None
            scheduled = next((c for c in pods[0].status.conditions or [] if c.type == "PodScheduled"), None)
            workload = _pod_workload_in(cluster, pods[0])
            # ungated but not yet tried: the condition still reads SchedulingGated until the scheduler's next attempt
            tried = scheduled is not None and scheduled.status == "False" and scheduled.reason != "SchedulingGated"
            return (pods[0], scheduled, workload) if tried and admitted_in(workload) == "e2e-wide-cq" else None

        pod, scheduled, _ = wait_for(pending_admitted, 120, "the wide pod admitted by Kueue and left unscheduled")
        assert scheduled.reason == "Unschedulable" and "Insufficient nvidia.com/gpualloc" in scheduled.message
        assert pod.status.phase == "Pending"

        # The same objects, judged by the rule book with the dev stack's nodes: refused.
        settings = load_stack_file(REPO / "stacks" / "Pulumi.dev.yaml")
        objects = as_objects(render_stack(settings))
        objects += [from_resource(f"kubernetes:{m['apiVersion']}:{m['kind']}", m, resource_name=m["metadata"]["name"])
                    for m in (cq, lq)]
        objects.append(from_resource("kubernetes:apps/v1:Deployment", deployment, resource_name="wide"))
        found = [v for rule, v in run_book(objects, pack_config(settings)) if rule.name == "pods-fit-nodes"]
        assert [(v.subject.kind, v.field) for v in found] == [
            ("Deployment", 'spec.template.spec.containers[0].resources.requests["nvidia.com/gpualloc"]')]
    finally:
        with contextlib.suppress(k8s.ApiException):
            apps.delete_namespaced_deployment("wide", WIDE_NS,
                                              body=k8s.V1DeleteOptions(propagation_policy="Foreground"))
        wait_for(lambda: not cluster.core.list_namespaced_pod(WIDE_NS, label_selector="app=wide").items, 120,
                 "the wide pods to be gone")
        with contextlib.suppress(k8s.ApiException):
            custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", WIDE_NS, "localqueues", "e2e-wide-lq")
        with contextlib.suppress(k8s.ApiException):
            custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "e2e-wide-cq")


def _pod_workload_in(cluster, pod: k8s.V1Pod) -> dict | None:
    for wl in cluster.kueue_objects("workloads", pod.metadata.namespace):
        if any(o.get("uid") == pod.metadata.uid for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None
