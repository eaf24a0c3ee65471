"""The reshaped program registers the same objects as before (issue 19: behaviour kept), with exactly the changes
issue 13 asked for.

tests/fixtures/rendered/<stack>.json holds what every stack registered before the rule-book reshaping (captured
under mocks at a3fd09f). The intended differences: every ClusterQueue's namespaceSelector also pins
`kubernetes.io/metadata.name In [<its namespaces>]`, so a copied tenant label selects nothing; and (issue 21) an
InferenceService whose update cannot fit its quota with KServe's default surge gets maxSurge 0 / maxUnavailable 1.
"""
from __future__ import annotations

import copy
import json

import pytest

from components.model.admission import admission_manifests
from components.model.preview_rbac import identity_plan
from components.settings import parse_settings
from tests.helpers import FIXTURES, registered_objects, stack_raw

NAME_LABEL = "kubernetes.io/metadata.name"


def _with_name_pins(before: list[dict]) -> list[dict]:
    """The old objects with the one intended change applied: each ClusterQueue selector pins its namespaces (the
    Namespace objects carrying its tenant label)."""
    after = copy.deepcopy(before)
    namespaces = [o["inputs"]["metadata"] for o in after if o["type"].endswith(":Namespace")
                  or o["type"].endswith(":NamespacePatch")]
    for obj in after:
        if obj["type"].endswith(":ClusterQueue"):
            selector = obj["inputs"]["spec"]["namespaceSelector"]
            (label, tenant), = selector["matchLabels"].items()
            names = sorted(ns["name"] for ns in namespaces if (ns.get("labels") or {}).get(label) == tenant)
            selector["matchExpressions"] = [{"key": NAME_LABEL, "operator": "In", "values": names}]
    return after


def _with_owner_marks(before: list[dict]) -> list[dict]:
    """Issue 14 (3): every Namespace a stack creates (namespacePolicy Create) carries the stack's ownership mark,
    `kueue-cohorts/owner: <project>/<stack>` (the mocks' stack is kueue-cohorts/test); NamespacePatches do not.
    Issue 28 (3): Kueue's own namespace (`kueue-ns`, KueueInstallation) carries it too, so that the namespace
    preflight tells this stack's Kueue from one installed by someone else."""
    after = copy.deepcopy(before)
    for obj in after:
        if obj["type"] == "kubernetes:core/v1:Namespace" and ("-ns-" in obj["name"] or obj["name"] == "kueue-ns"):
            obj["inputs"]["metadata"]["annotations"] = {"kueue-cohorts/owner": "kueue-cohorts/test"}
    return after


#: Issue 21: services whose rolling update with KServe's default 25% surge would not fit the inference nominalQuota
#: (staging: 4 x 1 GPU of 4; prod: the 3 replicas that fit 900Gi at 300Gi each, + 1 surge pod).
NO_SURGE = {"llama-8b", "llama-70b"}


def _with_rollout_strategies(before: list[dict]) -> list[dict]:
    """Issue 21's maxSurge 0 where KServe's default surge does not fit; issue 26: every InferenceService is annotated
    with KServe v0.16's name for plain Deployments, Standard (its validator refuses the legacy RawDeployment name
    together with a deploymentStrategy)."""
    after = copy.deepcopy(before)
    for obj in after:
        if obj["type"].endswith("serving.kserve.io/v1beta1:InferenceService"):
            obj["inputs"]["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] = "Standard"
        if obj["type"].endswith("serving.kserve.io/v1beta1:InferenceService") and \
                obj["inputs"]["metadata"]["name"] in NO_SURGE:
            obj["inputs"]["spec"]["predictor"]["deploymentStrategy"] = {
                "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    return after


#: Issue 26 promise 4: a stop is not a failure. The trainer exits 75 after its preemption save; the runtime declares
#: that code, ignores it (and a disruption) in the trainer Job's podFailurePolicy, never restarts a pod in place, and
#: lets JobSet restart the group 3 times for real failures.
PREEMPTED_EXIT_CODE = 75


def _with_stop_not_a_failure(before: list[dict]) -> list[dict]:
    after = copy.deepcopy(before)
    for obj in after:
        if obj["type"].endswith("TrainingRuntime"):
            obj["inputs"]["metadata"]["annotations"]["kueue-cohorts/preempted-exit-code"] = str(PREEMPTED_EXIT_CODE)
            spec = obj["inputs"]["spec"]["template"]["spec"]
            spec["failurePolicy"] = {"maxRestarts": 3.0}
            for job in spec["replicatedJobs"]:
                job_spec = job["template"]["spec"]
                job_spec["podFailurePolicy"] = {"rules": [
                    {"action": "Ignore", "onExitCodes": {"containerName": "node", "operator": "In",
                                                         "values": [float(PREEMPTED_EXIT_CODE)]}},
                    {"action": "Ignore", "onPodConditions": [{"status": "True", "type": "DisruptionTarget"}]}]}
                job_spec["template"]["metadata"] = {
                    "annotations": {"kueue-cohorts/preempted-exit-code": str(PREEMPTED_EXIT_CODE)}}
                job_spec["template"]["spec"]["restartPolicy"] = "Never"
    return after


def _with_trainer_metrics(before: list[dict]) -> list[dict]:
    """Issue 31: the trainer package shipped in the runtime's ConfigMap gains metrics.py (its Prometheus metrics)."""
    after = copy.deepcopy(before)
    for obj in after:
        if obj["type"].endswith(":ConfigMap") and obj["inputs"]["metadata"]["name"].endswith("-trainer"):
            obj["inputs"]["data"] = sorted({*obj["inputs"]["data"], "metrics.py"})
    return after


def _with_trainer_metrics_scraped(before: list[dict]) -> list[dict]:
    """Issue 37: the TrainingRuntime serves the trainer's metrics by default (KUEUE_COHORTS_METRICS_PORT, container
    port `metrics`) on pods labelled for the stack's PodMonitor."""
    after = copy.deepcopy(before)
    for obj in after:
        if obj["type"].endswith(":TrainingRuntime"):
            (job,) = obj["inputs"]["spec"]["template"]["spec"]["replicatedJobs"]
            template = job["template"]["spec"]["template"]
            template["metadata"]["labels"] = {"kueue-cohorts/metrics": "trainer"}
            (container,) = template["spec"]["containers"]
            names = [e["name"] for e in container["env"]]
            at = names.index("KUEUE_COHORTS_SAVE_STEPS") + 1
            container["env"].insert(at, {"name": "KUEUE_COHORTS_METRICS_PORT", "value": "9464"})
            container["ports"] = [{"containerPort": 9464, "name": "metrics", "protocol": "TCP"}]
    return after


def _with_gpu_fence(before: list[dict], stack: str) -> list[dict]:
    """Issue 37 (class 3): the guide's real-cluster stacks fence their GPU nodes; their ResourceFlavor gains the
    toleration of the fence taint, which Kueue adds to the pods it admits."""
    after = copy.deepcopy(before)
    if stack not in ("staging", "prod"):
        return after
    for obj in after:
        if obj["type"].endswith(":ResourceFlavor"):
            obj["inputs"]["spec"].setdefault("tolerations", []).append(
                {"key": "kueue-cohorts/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    return after


def _with_fixed_cohort_component_names(before: list[dict], settings) -> list[dict]:
    """Issue 28 (found with finding 10): the cohort components have fixed Pulumi names, `inference-training` and
    `shared-pool` (they were named after the cohort, so renaming a cohort deleted its live queues); their children
    `<cohort>-cq-...` become `<component>-cq-...` (aliased from the old names: no change on a deployed stack)."""
    renames = {}
    if settings.inference_training is not None:
        renames[settings.inference_training.cohort] = "inference-training"
    if settings.shared_pool is not None:
        renames[settings.shared_pool.cohort] = "shared-pool"
    after = copy.deepcopy(before)
    for obj in after:
        for old, new in renames.items():
            if obj["name"].startswith(f"{old}-"):
                obj["name"] = new + obj["name"][len(old):]
    return sorted(after, key=lambda x: (x["type"], x["name"]))  # the order registered_objects gives


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_every_stack_registers_what_it_did_before_plus_the_name_pins(stack):
    before = json.loads((FIXTURES / "rendered" / f"{stack}.json").read_text())
    now = json.loads(json.dumps(registered_objects(stack), sort_keys=True, default=str))
    # Issue 17 adds the in-cluster guardrails: exactly the rule book's policies and bindings, nothing else changes.
    admission = [o for o in now if o["type"].startswith("kubernetes:admissionregistration.k8s.io/")]
    settings = parse_settings(stack_raw(stack))
    expected = [m for _, policy, binding in admission_manifests(settings) for m in (policy, binding)]
    def key(obj: dict) -> tuple:
        return obj["kind"], obj["metadata"]["name"]

    assert sorted((o["inputs"] for o in admission), key=key) == sorted(
        json.loads(json.dumps(expected, sort_keys=True)), key=key)
    # Issue 14.2 adds the preview identity: exactly the objects of its plan (staging and prod set previewIdentity).
    identity = [o for o in now if (o["inputs"]["metadata"].get("labels") or {}).get("kueue-cohorts/role")
                == "preview-identity"]
    plan = identity_plan(settings, "kueue-cohorts/test")  # the mocks' project/stack, as _with_owner_marks

    def ref(manifest: dict) -> tuple:
        return manifest["kind"], manifest["metadata"].get("namespace", ""), manifest["metadata"]["name"]

    assert sorted((o["inputs"] for o in identity), key=ref) == sorted(
        json.loads(json.dumps(plan.manifests() if plan else [], sort_keys=True)), key=ref)
    assert bool(identity) == (stack in ("staging", "prod"))
    assert [o for o in now if o not in admission and o not in identity] == \
        _with_fixed_cohort_component_names(_with_trainer_metrics_scraped(_with_gpu_fence(_with_trainer_metrics(
            _with_stop_not_a_failure(_with_owner_marks(_with_rollout_strategies(_with_name_pins(before))))), stack)),
            settings)
