"""One rule book, two judges: every rule breaks the rendered dev, staging and prod stacks once, and both the
program's settings check and the policy pack (through the pulumi-policy SDK's own analyzer servicer, as the engine
calls it) report it.

Rules a stack config can break are broken through the config (the settings check then names the config key); rules
about objects our components never write (an empty namespaceSelector, an old Kueue API version) are broken on the
rendered objects, and the settings check's judge (`book.run`, what `components.checks.validation` calls) and the pack
must
find the same (policy, object, field).
"""
from __future__ import annotations

import copy
import json
from typing import Any, Callable

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.policy.rules.book import RULES, run
from kueue_cohorts.policy.rules.book.catalog import PACK_NAME, build_policies
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import CHECKPOINT_SAFE_RUNTIME
from kueue_cohorts.policy.rules.cluster_queue_covers_pod_resources import CLUSTER_QUEUE_COVERS_POD_RESOURCES
from kueue_cohorts.policy.rules.cluster_queue_pinned_selector import CLUSTER_QUEUE_PINNED_SELECTOR
from kueue_cohorts.policy.rules.cluster_queue_role import CLUSTER_QUEUE_ROLE
from kueue_cohorts.policy.rules.cluster_queue_selector_overlap import CLUSTER_QUEUE_SELECTOR_OVERLAP
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import COHORT_NOMINAL_WITHIN_CAPACITY
from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import INFERENCE_BORROWING_LIMIT_ZERO
from kueue_cohorts.policy.rules.inference_fits_nominal import INFERENCE_FITS_NOMINAL
from kueue_cohorts.policy.rules.inference_peak_fits_nominal import INFERENCE_PEAK_FITS_NOMINAL
from kueue_cohorts.policy.rules.inference_reclaim_any import INFERENCE_RECLAIM_ANY
from kueue_cohorts.policy.rules.inference_reclaim_unblocked import INFERENCE_RECLAIM_UNBLOCKED
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import INFERENCE_ROLLOUT_FITS_NOMINAL
from kueue_cohorts.policy.rules.judgeable_patches import JUDGEABLE_PATCHES
from kueue_cohorts.policy.rules.kueue_api_version import KUEUE_API_VERSION
from kueue_cohorts.policy.rules.kueue_manager_config import KUEUE_MANAGER_CONFIG
from kueue_cohorts.policy.rules.namespace_selector import CLUSTER_QUEUE_NAMESPACE_SELECTOR, INFERENCE_NAMESPACE_SELECTOR
from kueue_cohorts.policy.rules.no_helm_release import NO_HELM_RELEASE
from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES
from kueue_cohorts.policy.rules.protected_namespaces import PROTECTED_NAMESPACES
from kueue_cohorts.policy.rules.quantities import QUANTITIES
from kueue_cohorts.policy.rules.reclaim_within_budget import RECLAIM_WITHIN_BUDGET
from kueue_cohorts.policy.rules.single_layout_per_cohort import SINGLE_LAYOUT_PER_COHORT
from kueue_cohorts.policy.rules.training_priority_below_inference import TRAINING_PRIORITY_BELOW_INFERENCE
from kueue_cohorts.policy.rules.training_runtime_fits_queue import TRAINING_RUNTIME_FITS_QUEUE
from kueue_cohorts.policy.rules.trainjob_reserved_env import TRAINJOB_RESERVED_ENV
from kueue_cohorts.policy.rules.vocabulary.objects import from_resource
from kueue_cohorts.policy.rules.workload_priority_class import WORKLOAD_PRIORITY_CLASS
from tests.helpers import stack_raw

STACKS = ("dev", "staging", "prod", "mixed")
PATCH = "__registered_as_patch__"  # test marker: register this manifest as its kind's <Kind>Patch
Mutation = Callable[[dict], None]


def _inference(raw: dict) -> dict:
    return raw["inferenceTraining"]["inference"]


def _quotas(raw: dict) -> list[dict]:
    """The inference quota entries (a queue's single-flavor keys, or each of its `flavors`)."""
    inference = _inference(raw)
    return inference["flavors"] if "flavors" in inference else [inference]


def _nominal(raw: dict) -> dict:
    """The inference nominalQuota of the last flavor (the one flavor of a single-flavor stack)."""
    return _quotas(raw)[-1]["nominalQuota"]


def _first_resource(raw: dict) -> str:
    return next(r for r in _nominal(raw) if "/" in r)


def _with_runtime(raw: dict) -> dict:
    """Give the stack a training runtime (and the checkpoint volume it needs) when it has none."""
    training = raw["inferenceTraining"]["training"]
    training.setdefault("checkpoint", {"claimName": "ckpt", "size": "5Gi"})
    raw.setdefault("trainingRuntime", {}).setdefault("image", "registry.example/trainer:1")
    integrations = raw.setdefault("kueue", {}).setdefault(
        "integrations", ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment"])
    if "trainer.kubeflow.org/trainjob" not in integrations:
        integrations.append("trainer.kubeflow.org/trainjob")
    limits = {r: v for r, v in _nominal(raw).items()}
    raw["trainingRuntime"].setdefault("requests", {})
    raw["trainingRuntime"].setdefault("limits", limits)
    return raw["trainingRuntime"]


def _big_service(raw: dict) -> None:
    resource = _first_resource(raw)
    _inference(raw)["services"] = [{"name": "too-big", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                    "requests": {resource: "1000"}}]
    integrations = raw.setdefault("kueue", {}).setdefault("integrations", ["batch/job", "pod", "deployment"])
    if "deployment" not in integrations:
        integrations.append("deployment")


def _surging_service(raw: dict) -> None:
    """A service that keeps a surge of one pod with no headroom: one replica holds a whole GPU resource."""
    _big_service(raw)
    resource = _first_resource(raw)
    _inference(raw)["services"] = [{"name": "surging", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                    "requests": {resource: _nominal(raw)[resource]},
                                    "rollout": {"maxSurge": 1, "maxUnavailable": 0}}]


def _same_cohort(raw: dict) -> None:
    if "sharedPool" not in raw:
        raw["sharedPool"] = {"cohort": "pool", "tenants": [{"name": "t-a", "floor": {"cpu": "1"}},
                                                           {"name": "t-b", "floor": {"cpu": "1"}}]}
    raw["sharedPool"]["cohort"] = raw["inferenceTraining"]["cohort"]


def _flavor_no_pool_carries(raw: dict) -> None:
    """The first ResourceFlavor selects nodes by a label no node pool carries: its quota has no nodes."""
    labels = {"kueue-cohorts.example/absent": "yes"}
    if raw.get("resourceFlavors"):
        raw["resourceFlavors"][0]["nodeLabels"] = labels
    else:
        raw.setdefault("resourceFlavor", {})["nodeLabels"] = labels


def _pod_wider_than_every_node(raw: dict) -> None:
    """A service whose one replica asks for one cpu more than the largest node has (the quota raised to hold it):
    admitted by quota, it fits no node."""
    _big_service(raw)
    cpu = max(int(pool["capacity"]["cpu"]) for pool in raw["nodePools"]) + 1
    _nominal(raw)["cpu"] = str(cpu)
    _inference(raw)["services"] = [{"name": "wide", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                    "requests": {"cpu": str(cpu)}, "rollout": {"maxSurge": 0, "maxUnavailable": 1}}]


# policy -> how a stack config breaks it
CONFIG_BREAKS: dict[str, Mutation] = {
    INFERENCE_BORROWING_LIMIT_ZERO.name: lambda raw: _quotas(raw)[-1].update(
        borrowingLimit={_first_resource(raw): "1"}),
    INFERENCE_RECLAIM_ANY.name: lambda raw: _inference(raw).setdefault("preemption", {}).update(
        reclaimWithinCohort="LowerPriority", borrowWithinCohort=None),
    COHORT_NOMINAL_WITHIN_CAPACITY.name: _flavor_no_pool_carries,
    WORKLOAD_PRIORITY_CLASS.name: lambda raw: raw["inferenceTraining"]["training"]["priorityClass"].update(
        value=_inference(raw)["priorityClass"]["value"]),
    INFERENCE_FITS_NOMINAL.name: _big_service,
    INFERENCE_ROLLOUT_FITS_NOMINAL.name: _surging_service,
    CHECKPOINT_SAFE_RUNTIME.name: lambda raw: _with_runtime(raw).update(terminationGracePeriodSeconds=30,
                                                                      checkpointSaveSeconds=30),
    TRAINING_RUNTIME_FITS_QUEUE.name: lambda raw: _with_runtime(raw).update(numNodes=1000),
    KUEUE_MANAGER_CONFIG.name: lambda raw: raw.setdefault("kueue", {}).update(manageJobsWithoutQueueName=True,
                                                                            managedJobsNamespaceSelector=None),
    SINGLE_LAYOUT_PER_COHORT.name: _same_cohort,
    CLUSTER_QUEUE_COVERS_POD_RESOURCES.name: lambda raw: [q["nominalQuota"].pop(r, None) for q in _quotas(raw)
                                                       for r in ("cpu", "memory")],
    PROTECTED_NAMESPACES.name: lambda raw: raw["inferenceTraining"]["training"]["namespaces"].append("kube-system"),
    QUANTITIES.name: lambda raw: _nominal(raw).update({_first_resource(raw): "1.5"}),
    PODS_FIT_NODES.name: _pod_wider_than_every_node,
    RECLAIM_WITHIN_BUDGET.name: lambda raw: _with_runtime(raw).update(terminationGracePeriodSeconds=86400),
}


def _drop_selector(objects: list[dict]) -> None:
    cq = next(o for o in objects if o["kind"] == "ClusterQueue" and "inference" in o["metadata"]["name"])
    cq["spec"]["namespaceSelector"] = {}


def _drop_training_selector(objects: list[dict]) -> None:
    cq = [o for o in objects if o["kind"] == "ClusterQueue"][-1]
    del cq["spec"]["namespaceSelector"]


def _old_api(objects: list[dict]) -> None:
    next(o for o in objects if o["kind"] == "LocalQueue")["apiVersion"] = "kueue.x-k8s.io/v1beta1"


def _unpinned_twins(objects: list[dict]) -> None:
    """Two ClusterQueues selecting by the same tenant label, without name pins (a copy written by hand)."""
    first, second = [o for o in objects if o["kind"] == "ClusterQueue"][:2]
    for cq in (first, second):
        cq["spec"]["namespaceSelector"] = dict(first["spec"]["namespaceSelector"])
        cq["spec"]["namespaceSelector"].pop("matchExpressions", None)


def _unpinned(objects: list[dict]) -> None:
    cq = next(o for o in objects if o["kind"] == "ClusterQueue")
    cq["spec"]["namespaceSelector"] = {"matchLabels": dict(cq["spec"]["namespaceSelector"]["matchLabels"])}


def _stranger_in_the_cohort(objects: list[dict]) -> None:
    """A ClusterQueue written by hand into the inference cohort: no role label, not in the stack's pack config."""
    cq = copy.deepcopy(next(o for o in objects if o["kind"] == "ClusterQueue" and "inference" in o["metadata"]["name"]))
    cq["metadata"] = {"name": "serving-cq"}
    cq["spec"]["namespaceSelector"] = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                             "values": ["somewhere-else"]}]}
    objects.append(cq)


def _nameless_patch(objects: list[dict]) -> None:
    """A ClusterQueuePatch (wire kind ClusterQueue, type token ...:ClusterQueuePatch) without metadata.name."""
    objects.append({PATCH: True, "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {},
                    "spec": {"preemption": {"reclaimWithinCohort": "Never"}}})


def _helm_release(objects: list[dict]) -> None:
    objects.append({"apiVersion": "helm.sh/v3", "kind": "Release", "metadata": {"name": "kueue"},
                    "chart": "oci://registry.k8s.io/kueue/charts/kueue"})


def _peaking_service(objects: list[dict]) -> None:
    """An InferenceService (written by hand) on the inference LocalQueue whose maxReplicas never all fit; the
    settings check only warns about it (advisory), so it is broken on objects."""
    cq = next(o for o in objects if o["kind"] == "ClusterQueue"
              and o["metadata"].get("labels", {}).get("kueue-cohorts/role") == "inference")
    lq = next(o for o in objects if o["kind"] == "LocalQueue" and o["spec"]["clusterQueue"] == cq["metadata"]["name"])
    resource = next(r for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"] if "/" in r["name"])
    objects.append({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                    "metadata": {"name": "peaking", "namespace": lq["metadata"]["namespace"],
                                 "labels": {"kueue.x-k8s.io/queue-name": lq["metadata"]["name"]}},
                    "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1000, "model": {
                        "resources": {"requests": {resource["name"]: "1"}}}}}})


def _trainjob_moves_its_checkpoints(objects: list[dict]) -> None:
    """A TrainJob (submitted by hand, next to the stack's runtime) that overrides KUEUE_COHORTS_CHECKPOINT_ROOT; a
    stack without a checkpoint-safe runtime gets one written by hand (a TrainJob alone is someone else's contract)."""
    runtime = next((o for o in objects if o["kind"] == "TrainingRuntime"), None)
    if runtime is None:
        runtime = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
                   "metadata": {"name": "by-hand", "namespace": "team-by-hand"},
                   "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
                       "template": {"spec": {"containers": [{"name": "node", "image": "x", "env": [
                           {"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/mnt/checkpoints"}]}]}}}}}]}}}}
        objects.append(runtime)
    objects.append({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                    "metadata": {"name": "mover", "namespace": runtime["metadata"]["namespace"]},
                    "spec": {"runtimeRef": {"name": runtime["metadata"]["name"], "kind": "TrainingRuntime",
                                            "apiGroup": "trainer.kubeflow.org"},
                             "trainer": {"env": [{"name": "KUEUE_COHORTS_CHECKPOINT_ROOT", "value": "/etc"}]}}})


def _urgent_priority_class(objects: list[dict]) -> None:
    """A WorkloadPriorityClass written by hand, without a role, at 1,000,000: any training namespace may name it."""
    objects.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                    "metadata": {"name": "urgent"}, "value": 1000000})


def _training_job_at_inference_priority(objects: list[dict]) -> None:
    """Issue 38 class 3: a Job written by hand into a training namespace of the inference cohort, labelled with the
    inference WorkloadPriorityClass (the class itself is the stack's, so no other rule objects)."""
    inference = max((o for o in objects if o["kind"] == "WorkloadPriorityClass"), key=lambda o: o["value"])
    cq = next(o for o in objects if o["kind"] == "ClusterQueue"
              and o["metadata"].get("labels", {}).get("kueue-cohorts/role") == "training")
    lq = next(o for o in objects if o["kind"] == "LocalQueue" and o["spec"]["clusterQueue"] == cq["metadata"]["name"])
    objects.append({"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": "vip", "namespace": lq["metadata"]["namespace"],
                                 "labels": {"kueue.x-k8s.io/queue-name": lq["metadata"]["name"],
                                            "kueue.x-k8s.io/priority-class": inference["metadata"]["name"]}},
                    "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                   "containers": [{"name": "c", "image": "x"}]}}}})


# policy -> how rendered objects (written by hand, a ConfigGroup, ...) break it
OBJECT_BREAKS: dict[str, Callable[[list[dict]], None]] = {
    INFERENCE_NAMESPACE_SELECTOR.name: _drop_selector,
    CLUSTER_QUEUE_NAMESPACE_SELECTOR.name: _drop_training_selector,
    KUEUE_API_VERSION.name: _old_api,
    CLUSTER_QUEUE_SELECTOR_OVERLAP.name: _unpinned_twins,
    CLUSTER_QUEUE_PINNED_SELECTOR.name: _unpinned,
    CLUSTER_QUEUE_ROLE.name: _stranger_in_the_cohort,
    JUDGEABLE_PATCHES.name: _nameless_patch,
    NO_HELM_RELEASE.name: _helm_release,
    INFERENCE_PEAK_FITS_NOMINAL.name: _peaking_service,
    TRAINJOB_RESERVED_ENV.name: _trainjob_moves_its_checkpoints,
    INFERENCE_RECLAIM_UNBLOCKED.name: _urgent_priority_class,
    TRAINING_PRIORITY_BELOW_INFERENCE.name: _training_job_at_inference_priority,
}


def test_every_rule_of_the_book_has_a_parity_case():
    """Rules across the clusters of a MultiKueue stack have theirs in
    tests/policy/rules/test_multikueue_workers_ready.py."""
    assert set(CONFIG_BREAKS) | set(OBJECT_BREAKS) == {rule.name for rule in RULES if not rule.clusters}


def _servicer(config: dict) -> _PolicyAnalyzerServicer:
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", build_policies(), EnforcementLevel.MANDATORY)
    policy_config = {name: proto.PolicyConfig(enforcementLevel=proto.MANDATORY if rule.mandatory else proto.ADVISORY,
                                              properties=json_format.ParseDict(config.get(name, {}),
                                                                               struct_pb2.Struct()))
                     for name, rule in ((r.name, r) for r in RULES)}
    servicer.Configure(proto.ConfigureAnalyzerRequest(policyConfig=policy_config), None)
    return servicer


def _token(manifest: dict) -> tuple[str, dict]:
    """(type token, wire manifest) as pulumi-kubernetes registers it: `<Kind>Patch` for a patch."""
    patch = manifest.get(PATCH, False)
    manifest = {k: v for k, v in manifest.items() if k != PATCH}
    group, _, version = manifest["apiVersion"].rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{manifest['kind']}{'Patch' if patch else ''}", manifest


def _resource(index: int, manifest: dict) -> Any:
    token, manifest = _token(manifest)
    struct = json_format.ParseDict(json.loads(json.dumps(manifest)), struct_pb2.Struct())
    return token, struct, f"urn:pulumi:parity::kueue-cohorts::{token}::obj-{index}", f"obj-{index}"


def pack_verdicts(manifests: list[dict], config: dict) -> set[tuple[str, str]]:
    """(policy, urn) of every diagnostic the pack's servicer reports for these objects (resource and stack
    policies, as the engine calls them)."""
    servicer = _servicer(config)
    resources = [_resource(i, m) for i, m in enumerate(manifests)]
    found = set()
    for token, struct, urn, name in resources:
        response = servicer.Analyze(proto.AnalyzeRequest(type=token, properties=struct, urn=urn, name=name), None)
        found |= {(d.policyName, d.urn or urn) for d in response.diagnostics}
    stack = proto.AnalyzeStackRequest(resources=[proto.AnalyzerResource(type=t, properties=s, urn=u, name=n)
                                                 for t, s, u, n in resources])
    found |= {(d.policyName, d.urn) for d in servicer.AnalyzeStack(stack, None).diagnostics}
    return found


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("policy", sorted(CONFIG_BREAKS))
def test_a_config_that_breaks_a_rule_is_refused_by_the_settings_check_and_by_the_pack(stack, policy):
    raw = stack_raw(stack)
    assert validate(raw).problems == ()
    broken = copy.deepcopy(raw)
    CONFIG_BREAKS[policy](broken)
    result = validate(broken)
    assert policy in {p.policy for p in result.problems}, [str(p) for p in result.problems]
    assert all(p.key.startswith("kueue-cohorts:") and p.key != "kueue-cohorts:*" for p in result.problems
               if p.policy == policy)
    # the pack, fed the same objects the program would register, with the committed stack's pack config
    settings = parse_settings(broken)
    manifests = [r.manifest for r in render_stack(settings)]
    assert policy in {name for name, _ in pack_verdicts(manifests, pack_config(parse_settings(raw)))}


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("policy", sorted(OBJECT_BREAKS))
def test_objects_that_break_a_rule_get_the_same_findings_from_both_judges(stack, policy):
    settings = parse_settings(stack_raw(stack))
    manifests = copy.deepcopy([r.manifest for r in render_stack(settings)])
    OBJECT_BREAKS[policy](manifests)
    config = pack_config(settings)
    book = {(rule.name, v.subject.name if v.subject else None) for rule, v in
            run(as_objects_from(manifests), config) if rule.name == policy}
    pack = {(name, urn) for name, urn in pack_verdicts(manifests, config) if name == policy}
    assert book and len(book) == len(pack)


def as_objects_from(manifests: list[dict]):
    """The manifests as the rule book sees them (the same conversion the settings check uses, patches as the engine
    registers them)."""
    out = []
    for index, manifest in enumerate(manifests):
        token, wire = _token(manifest)
        out.append(from_resource(token, wire, urn="", resource_name=f"obj-{index}"))
    return out
