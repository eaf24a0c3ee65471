"""The rule book across the clusters of a MultiKueue stack (issue 33 item 3): a dispatching ClusterQueue whose
workers lack a namespace, a LocalQueue, a training runtime or a job kind's RBAC is refused, by the settings check's
judge (`book.run_clusters`) and by the pack (the pulumi-policy SDK's own analyzer servicer, the objects tagged with
their providers as the engine sends them), with the same findings; and each worker's objects are judged with that
worker's nodes."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.pack_config import pack_config
from kueue_cohorts.components.model.render import render
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.policy.rules.book import RULES, run, run_clusters
from kueue_cohorts.policy.rules.book.catalog import PACK_NAME, build_policies
from kueue_cohorts.policy.rules.multikueue_workers_ready import MULTIKUEUE_WORKERS_READY
from kueue_cohorts.policy.rules.vocabulary import multikueue
from kueue_cohorts.policy.rules.vocabulary.objects import from_resource
from tests.helpers import stack_raw

POLICY = MULTIKUEUE_WORKERS_READY.name
SMALL = [{"name": "small", "capacity": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpualloc": "1",
                                        "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"},
          "labels": {"kueue-cohorts/pool": "gpu"}}]

# Upstream's documented setup (kueue site/static/examples/multikueue/create-multikueue-kubeconfig.sh): no TrainJobs.
DOCUMENTED_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
     "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
]


def _raw(nodes: Any = None) -> dict:
    raw = stack_raw("dev")
    worker: dict[str, Any] = {"name": "worker-1"}
    if nodes is not None:
        worker["nodePools"] = nodes
    raw["multiKueue"] = {"workers": [worker], "managerTrainer": "CRDsOnly",
                         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["worker-1"]}]}
    return raw


def _clusters(raw: dict) -> tuple[list[dict], list[dict], dict]:
    """(manager manifests, worker-1 manifests, pack config) of the assembled stack of `raw`."""
    parsed = parse_settings(raw)  # shape only: a worker too small for the quota is still rendered
    stack = render(parsed)
    return ([dict(r.manifest) for r in stack.objects()], [dict(r.manifest) for r in stack.workers[0].objects()],
            pack_config(parsed))


def _objects(manifests: list[dict], prefix: str) -> list:
    out = []
    for index, manifest in enumerate(manifests):
        group, _, version = manifest["apiVersion"].rpartition("/")
        out.append(from_resource(f"kubernetes:{group or 'core'}/{version}:{manifest['kind']}", manifest, "",
                                 f"{prefix}-{index}"))
    return out


def book_findings(manager: list[dict], worker: list[dict], config: dict) -> set[tuple[str, str]]:
    clusters = {multikueue.MANAGER: _objects(manager, "m"), "worker-1": _objects(worker, "w")}
    return {(rule.name, v.rule) for rule, v in run_clusters(clusters, config)}


def _servicer(config: dict) -> _PolicyAnalyzerServicer:
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", build_policies(), EnforcementLevel.MANDATORY)
    policy_config = {r.name: proto.PolicyConfig(enforcementLevel=proto.MANDATORY if r.mandatory else proto.ADVISORY,
                                                properties=json_format.ParseDict(config.get(r.name, {}),
                                                                                 struct_pb2.Struct()))
                     for r in RULES}
    servicer.Configure(proto.ConfigureAnalyzerRequest(policyConfig=policy_config), None)
    return servicer


def _provider(name: str) -> Any:
    urn = f"urn:pulumi:t::kueue-cohorts::pulumi:providers:kubernetes::{name}"
    return proto.AnalyzerProviderResource(type="pulumi:providers:kubernetes", properties=struct_pb2.Struct(),
                                          urn=urn, name=name)


def pack_findings(manager: list[dict], worker: list[dict], config: dict) -> list[tuple[str, str]]:
    """(policy, message) of every stack diagnostic the pack reports, the worker's objects under provider
    k8s-worker-worker-1 and the manager's under k8s."""
    resources = []
    for provider, manifests in (("k8s", manager), ("k8s-worker-worker-1", worker)):
        for index, manifest in enumerate(manifests):
            group, _, version = manifest["apiVersion"].rpartition("/")
            token = f"kubernetes:{group or 'core'}/{version}:{manifest['kind']}"
            struct = json_format.ParseDict(json.loads(json.dumps(manifest)), struct_pb2.Struct())
            resources.append(proto.AnalyzerResource(type=token, properties=struct, name=f"{provider}-{index}",
                                                    urn=f"urn:pulumi:t::kueue-cohorts::{token}::{provider}-{index}",
                                                    provider=_provider(provider)))
    response = _servicer(config).AnalyzeStack(proto.AnalyzeStackRequest(resources=resources), None)
    return [(d.policyName, d.message) for d in response.diagnostics]


def test_the_assembled_stack_passes_on_both_clusters():
    manager, worker, config = _clusters(_raw())
    assert book_findings(manager, worker, config) == set()
    assert pack_findings(manager, worker, config) == []


def _role(worker: list[dict]) -> dict:
    return next(m for m in worker if m["kind"] == "ClusterRole")


def test_upstreams_documented_role_misses_trainjobs_and_the_rule_to_add_is_named():
    """Upstream's documented setup: one ClusterRole, no Roles (its cluster-wide create and delete of Jobs count in
    every namespace)."""
    manager, worker, config = _clusters(_raw())
    worker[:] = [m for m in worker if m["kind"] not in ("Role", "RoleBinding")]
    _role(worker)["rules"] = copy.deepcopy(DOCUMENTED_RULES)
    found = book_findings(manager, worker, config)
    texts = " ".join(rule for _, rule in found)
    assert {name for name, _ in found} == {POLICY}
    assert 'grant' not in texts  # the rule clause says what is missing; the fix names the rule to add
    fixes = [v.fix for _, v in run_clusters({multikueue.MANAGER: _objects(manager, "m"),
                                             "worker-1": _objects(worker, "w")}, config)]
    assert any('{apiGroups: ["trainer.kubeflow.org"], resources: [trainjobs], verbs: [get, list, watch]}' in fix
               and "ClusterRole" in fix for fix in fixes), fixes
    assert any('{apiGroups: ["trainer.kubeflow.org"], resources: [trainjobs], verbs: [create, delete]}' in fix
               and "by a Role and RoleBinding in c12-training" in fix for fix in fixes), fixes
    assert any("resources: [pods]" in fix for fix in fixes)  # the pod integration is watched too
    assert any('resources: [workloads], verbs: [update]' in fix for fix in fixes)  # the finalizer removal
    pack = [message for name, message in pack_findings(manager, worker, config) if name == POLICY]
    assert len(pack) == len(found)
    assert any("trainjobs" in m and "worker 'worker-1'" in m for m in pack)


@pytest.mark.parametrize("kind,name,words", [("LocalQueue", "c12-training-lq", "LocalQueue"),
                                             ("Namespace", "c12-training", "namespace"),
                                             ("TrainingRuntime", "c12-checkpoint-runtime", "TrainingRuntime")])
def test_a_worker_missing_what_a_dispatched_workload_needs_is_refused(kind, name, words):
    manager, worker, config = _clusters(_raw())
    worker = [m for m in worker if not (m["kind"] == kind and m["metadata"]["name"] == name)]
    found = book_findings(manager, worker, config)
    assert len(found) == 1 and words in next(iter(found))[1]
    pack = [message for policy, message in pack_findings(manager, worker, config) if policy == POLICY]
    assert len(pack) == 1 and "c12-training-cq" in pack[0]


def test_a_queue_that_does_not_dispatch_needs_nothing_on_the_worker():
    manager, worker, config = _clusters(_raw())
    for m in manager:
        if m["kind"] == "ClusterQueue":
            m["spec"].pop("admissionChecksStrategy", None)
    assert book_findings(manager, [], config) == set()


def test_each_worker_is_judged_with_its_own_nodes():
    """The worker's nodes are smaller than the inference quota: the capacity rule fails on the worker's objects
    only (the settings check names the worker; the pack judges the provider's objects with workerNodePools)."""
    raw = _raw(SMALL)
    manager, worker, config = _clusters(raw)
    capacity = "cohort-nominal-within-capacity"
    assert not [v for rule, v in run(_objects(manager, "m"), config) if rule.name == capacity]
    pack = [message for name, message in pack_findings(manager, worker, config) if name == capacity]
    assert pack and all("'small'" in message for message in pack)
    with pytest.raises(SettingsError) as refused:
        load_settings(raw)
    assert "on worker 'worker-1'" in str(refused.value)


VERBS = st.sets(st.sampled_from(multikueue.SYNC_VERBS + ("update", "patch")))


@settings(max_examples=80, deadline=None)
@given(kept=st.lists(VERBS, min_size=6, max_size=6), wildcard=st.booleans())
def test_missing_access_is_exactly_the_verbs_not_granted(kept, wildcard):
    """Any grant of verbs per kind (the worker role of the dev stack, each rule's verbs cut to a random subset, one
    rule possibly widened to `*`): the missing verbs are exactly those the kind needs and its rule does not grant."""
    frameworks = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod"]
    needed = multikueue.kind_access(frameworks)
    rules = [{"apiGroups": [a.api_group], "resources": [a.resource], "verbs": sorted(v)}
             for a, v in zip(needed, kept, strict=True)]
    if wildcard:
        rules[0]["verbs"] = ["*"]
    missing = {a.resource: set(v) for a, v in multikueue.missing_access(rules, frameworks, {})}
    for index, access in enumerate(needed):
        granted = {"*"} if wildcard and index == 0 else set(kept[index])
        expected = set() if "*" in granted else set(access.needed({})) - granted
        assert missing.get(access.resource, set()) == expected


# --- issue 38 class 2: reads cluster-wide, writes only in the namespaces the stack dispatches to ---------------------

WRITE_VERBS = {"create", "delete", "update", "patch", "deletecollection", "*"}


@settings(max_examples=30, deadline=None)
@given(frameworks=st.lists(st.sampled_from([a.framework for a in multikueue.ADAPTERS]), min_size=1, unique=True),
       elastic=st.booleans(), preemption=st.booleans())
def test_the_worker_credential_writes_nowhere_but_the_dispatched_namespaces(frameworks, elastic, preemption):
    """The ClusterRole (bound cluster-wide) holds get, list and watch only; every write verb MultiKueue needs is in
    a Role of each dispatched namespace, and together they grant exactly what the adapters call."""
    raw = _raw()
    raw["kueue"] = {**raw.get("kueue", {}), "integrations": sorted(set(frameworks) | {"trainer.kubeflow.org/trainjob"}),
                    "featureGates": {"ElasticJobsViaWorkloadSlices": elastic,
                                     "MultiKueueOrchestratedPreemption": preemption}}
    _, worker, _ = _clusters(raw)
    cluster_verbs = {v for rule in _role(worker)["rules"] for v in rule["verbs"]}
    assert cluster_verbs <= {"get", "list", "watch"}
    roles = [m for m in worker if m["kind"] == "Role"]
    assert [r["metadata"]["namespace"] for r in roles] == ["c12-training"]  # the training queue's namespace only
    assert {m["metadata"]["namespace"] for m in worker if m["kind"] == "RoleBinding"} == {"c12-training"}
    objects = _objects(worker, "w")
    gates = {"ElasticJobsViaWorkloadSlices": elastic, "MultiKueueOrchestratedPreemption": preemption}
    integrations = raw["kueue"]["integrations"]
    in_namespace = multikueue.granted(objects, "kueue-system/multikueue", "c12-training")
    assert multikueue.missing_access(in_namespace, integrations, gates) == []
    elsewhere = multikueue.granted(objects, "kueue-system/multikueue", "c12-inference")
    lacking = dict(multikueue.missing_access(elsewhere, integrations, gates))
    assert {a.resource for a in lacking} == {a.resource for a in multikueue.kind_access(integrations)
                                             if a.writes(gates)}
    assert all(set(verbs) <= WRITE_VERBS for verbs in lacking.values())


def test_a_worker_missing_its_role_in_a_dispatched_namespace_is_refused_naming_it():
    manager, worker, config = _clusters(_raw())
    worker[:] = [m for m in worker if m["kind"] != "RoleBinding"]
    fixes = [v.fix for _, v in run_clusters({multikueue.MANAGER: _objects(manager, "m"),
                                             "worker-1": _objects(worker, "w")}, config)]
    assert fixes and all("by a Role and RoleBinding in c12-training" in fix for fix in fixes), fixes
    assert any("resources: [trainjobs], verbs: [create, delete]" in fix for fix in fixes)
