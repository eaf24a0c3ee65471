"""The in-cluster half of inference-rollout-fits-nominal: the guardrail that refuses, in an inference namespace, a
Deployment, StatefulSet or LeaderWorkerSet whose steady state or update would exceed the inference ClusterQueue's
nominalQuota. Its Python judge must say what the pack's rule says of the same object in the stack (the CEL was
compared with it on a real kube-apiserver; tests/e2e/test_10_admission.py does so on the sandbox)."""
from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kueue_cohorts.components.model.admission import layout_scopes, stack_guardrails
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.book.admission import Request, kube_object
from tests.helpers import stack_raw
from tests.policy.pack.test_rule_book_parity import as_objects_from

DEV = parse_settings(stack_raw("dev"))
RAIL = next(r for r in stack_guardrails(DEV) if r.policy == "inference-rollout-fits-nominal")
LABELS = {"kueue.x-k8s.io/queue-name": "c12-inference-lq", "kueue.x-k8s.io/priority-class": "c12-inference-prio"}
SLICE = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
         "nvidia.com/gpumem": "2048"}  # the whole GPU of c12-inference-cq (1 / 20 / 2048)


def kubectl_deployment(replicas=1, strategy=None, requests=None, namespace="c12-inference", labels=None) -> dict:
    """A Deployment as `kubectl create` leaves it after apiserver defaulting (RollingUpdate, 25% / 25%)."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "by-hand", "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "x"}},
                     "strategy": strategy or {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": {"app": "x", **(LABELS if labels is None else labels)}},
                                  "spec": {"containers": [{"name": "x", "image": "x", "resources": {
                                      "requests": dict(requests or SLICE)}}]}}}}


def denied(manifest: dict) -> bool:
    return bool(RAIL.judge(Request(kube_object(manifest))))


def test_the_scope_knows_the_inference_namespaces_and_nominal_quota():
    scope = layout_scopes(DEV)[0]
    assert scope.inference_namespaces == ("c12-inference",)
    assert scope.inference_nominal == {"cpu": "4", "memory": "8589934592", "nvidia.com/gpualloc": "1",
                                       "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}
    policy = RAIL.policy_manifest()
    assert [r["resources"] for r in policy["spec"]["matchConstraints"]["resourceRules"]] == [
        ["deployments"], ["statefulsets"], ["leaderworkersets"]]
    assert policy["spec"]["matchConditions"][0]["expression"] == 'object.metadata.namespace in ["c12-inference"]'


def test_a_kubectl_deployment_at_full_quota_with_the_default_surge_is_refused():
    """The sandbox's finding: its new pod stayed SchedulingGated on the first template change."""
    found = RAIL.judge(Request(kube_object(kubectl_deployment())))
    assert [v.field for v in found] == ["spec.strategy.rollingUpdate.maxSurge"]
    assert found[0].fix.startswith("set the rolling update's maxSurge to 0 and maxUnavailable to 1")
    assert not denied(kubectl_deployment(strategy={"type": "RollingUpdate",
                                                   "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}))
    assert not denied(kubectl_deployment(strategy={"type": "Recreate"}))


@hsettings(max_examples=40, deadline=None)
@given(st.sampled_from(["c12-training", "default", "elsewhere"]), st.integers(1, 5))
def test_outside_the_inference_namespaces_or_unqueued_nothing_is_judged(namespace, replicas):
    assert not denied(kubectl_deployment(replicas, namespace=namespace))
    assert not denied(kubectl_deployment(replicas, labels={}))


@hsettings(max_examples=60, deadline=None)
@given(replicas=st.integers(0, 6), surge=st.sampled_from([0, 1, 2, "0%", "25%", "50%", "100%", None]),
       cpu=st.sampled_from(["500m", "1", "2", "3"]), gpu=st.sampled_from([None, "1"]))
def test_the_guardrail_says_what_the_pack_rule_says_of_the_same_deployment(replicas, surge, cpu, gpu):
    requests = {"cpu": cpu, "memory": "1Gi"}
    if gpu:
        requests.update({"nvidia.com/gpualloc": gpu, "nvidia.com/gpucores": "10", "nvidia.com/gpumem": "1024"})
    strategy = {"type": "Recreate"} if surge is None else {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": 1}}
    manifest = kubectl_deployment(replicas, strategy, requests)
    manifests = [copy.deepcopy(r.manifest) for r in render_stack(DEV)] + [manifest]
    pack = [v for rule, v in run(as_objects_from(manifests), pack_config(DEV))
            if rule.name == "inference-rollout-fits-nominal" and v.subject and v.subject.name == "by-hand"]
    assert denied(manifest) == bool(pack)


SURGE_GROUPS = {0: (0, 0, 0, 0), 1: (1, 1, 1, 1), "50%": (1, 1, 2, 2), "100%": (1, 2, 3, 4)}
"""Surge groups of a LeaderWorkerSet of 1, 2, 3, 4 groups, by hand: a percentage is rounded up (half of 3 groups is 2),
an absolute maxSurge is capped at the groups (LWS v0.8 rollingUpdateConfiguration)."""


@hsettings(max_examples=40, deadline=None)
@given(groups=st.integers(1, 4), size=st.integers(1, 4), surge=st.sampled_from([0, 1, "50%", "100%"]))
def test_leaderworkersets_and_statefulsets_are_judged_by_the_same_model(groups, size, surge):
    worker = {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [{"name": "w", "image": "vllm",
                                                                            "resources": {"requests": {"cpu": "1"}}}]}}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "vllm", "namespace": "c12-inference", "labels": dict(LABELS)},
           "spec": {"replicas": groups, "leaderWorkerTemplate": {"size": size, "workerTemplate": worker},
                    "rolloutStrategy": {"type": "RollingUpdate",
                                        "rollingUpdateConfiguration": {"maxSurge": surge, "maxUnavailable": 1}}}}
    assert denied(lws) == ((groups + SURGE_GROUPS[surge][groups - 1]) * size > 4)
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "c12-inference"},
           "spec": {"replicas": groups * size, "serviceName": "s", "selector": {"matchLabels": {"app": "s"}},
                    "template": worker}}
    assert denied(sts) == (groups * size > 4)
