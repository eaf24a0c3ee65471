"""The guardrails' CEL says what their Python twin says, request by request, without a cluster.

Every guardrail the stack registers (`stack_guardrails` of the dev and prod stacks: whatever
`policy.rules.book.admission` declares, so a guardrail added there is covered the day it lands) is evaluated twice
on the same generated requests: its ValidatingAdmissionPolicy manifest by cel-python with the Kubernetes CEL library
shims (`tests/k8s_cel.py`), and `Guardrail.judge` (the Python rule the pack runs). A request one side denies and the
other lets through fails the test; `test_a_planted_disagreement_fails_the_parity_check` shows it does, for every
guardrail. The MultiKueue writers and the reserved trainer env are judged on prod's scope with MultiKueue objects and a
checkpoint-safe runtime added (`prod+multikueue`: no stack file writes them yet).
tests/e2e/test_10_admission.py keeps the same parity against the real kube-apiserver.

The requests are drawn as the apiserver would hand them over: objects its schema accepts (quantities in the
apiserver's grammar, milli-units and Mi/Gi, so the rollout rule's double comparison and its 1e-9 tolerance decide
nothing; ints where the schema says int), CREATE, UPDATE (also one that changes only metadata) and DELETE, by the
stack's identity or another user.
"""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.model.admission import identities, layout_scopes, stack_guardrails
from kueue_cohorts.components.settings import parse_settings, raw_from_stack_file
from kueue_cohorts.policy.rules.book.admission import Guardrail, LayoutScope, Request, guardrails, kube_object
from kueue_cohorts.policy.rules.training_priority_below_inference import SYSTEM_PRIORITY_CLASSES
from kueue_cohorts.policy.rules.vocabulary.env_names import RESERVED_ENV
from kueue_cohorts.policy.rules.vocabulary.objects import PRIORITY_CLASS_LABEL
from kueue_cohorts.policy.rules.vocabulary.trainer import ANCESTOR_LABEL
from tests import k8s_cel

ROOT = Path(__file__).resolve().parents[4]
STACKS = {name: parse_settings(raw_from_stack_file(ROOT / "stacks" / f"Pulumi.{name}.yaml")) for name in ("prod",)}
"""The prod stack: both layouts (inferenceTraining, sharedPool), so every kind of guardrail, with its identities."""
PARITY = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
MATCH_ROUNDS = 6
"""Parity rounds of PARITY's examples at most until one drawn request reaches a guardrail's validations: the prod
stack's inference-rollout-fits-nominal was matched by none of 60 draws in about one run of three (2026-12-07)."""
PLANTED = settings(PARITY, max_examples=300, phases=[Phase.explicit, Phase.generate])
"""A planted disagreement only has to be found, not shrunk: the search stops at the first one, so the higher bound
costs only a guardrail whose requests rarely match (the manager Configuration's: one name in one namespace by an
outsider), which 60 examples missed now and then."""

KUEUE = ("kueue.x-k8s.io", "v1beta2")
QUANTITIES = st.sampled_from(["0", "0m", "0Gi", "1", "500m", "2", "2Gi", "4", "-1", "1500m", "20", "2048"])
"""borrowingLimit values the ClusterQueue schema accepts (int-or-string in the quantity grammar)."""


def _scopes(stack: str) -> list[LayoutScope]:
    """The stack's layout scopes; `prod+multikueue` is prod's with MultiKueue objects and a reserved-env runtime
    added (no stack file writes them yet), so the multikueue-writers and reserved-env guardrails are judged too."""
    scopes = layout_scopes(STACKS[stack.split("+")[0]])
    if not stack.endswith("+multikueue"):
        return scopes
    first = scopes[0]
    training = first.training_namespaces[0] if first.training_namespaces else "training"
    return [dataclasses.replace(
        first, multikueue={"MultiKueueCluster": ("worker-a",), "MultiKueueConfig": ("multikueue",),
                           "AdmissionCheck": ("multikueue",), "Secret": ("worker-a-kubeconfig",)},
        reserved_runtimes=((training, "checkpoint-safe"),)), *scopes[1:]]


def _names(stack: str) -> dict[str, list[Any]]:
    """The names the stack's guardrails know, plus outsiders: what requests are built from."""
    s = STACKS[stack.split("+")[0]]
    scopes = _scopes(stack)
    multikueue = {kind: sorted({n for sc in scopes for n in sc.multikueue.get(kind, ())}) + ["other-mk"]
                  for kind in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck", "Secret")}
    return {
        "cluster_queues": sorted({q for sc in scopes for q in sc.cluster_queues}) + ["intruder-cq"],
        "cohorts": sorted({sc.cohort for sc in scopes}) + ["other-cohort"],
        "priority_classes": sorted({n for sc in scopes for n in (*sc.inference_priority_classes,
                                                                  *sc.training_priority_classes)}) + ["other-prio"],
        "priority_values": sorted({v for sc in scopes for v in (*sc.inference_priority_classes.values(),
                                                                 *sc.training_priority_classes.values())}),
        "labels": sorted({sc.tenant_label for sc in scopes}),
        "namespaces": sorted({n for sc in scopes for n in sc.inference_namespaces}) + ["team-x"],
        "training_namespaces": sorted({n for sc in scopes for n in sc.training_namespaces}) + ["team-x"],
        "budgets": sorted({sc.reclaim_budget_seconds for sc in scopes if sc.reclaim_budget_seconds is not None}),
        "kueue_namespace": [s.kueue.namespace, "default"],
        "users": sorted(set(identities(s).users)) + ["alice"],
        "groups": sorted(set(identities(s).groups)),
        "nominal": [dict(sc.inference_nominal) for sc in scopes if sc.inference_nominal],
        "multikueue": multikueue,
        "runtimes": sorted({name for sc in scopes for _, name in sc.reserved_runtimes}) + ["torch-distributed"],
    }


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def _labels(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, str]]:
    keys = st.sampled_from(["kueue-cohorts/role", *names["labels"], "team"])
    values = st.sampled_from(["inference", "training", "tenant", *names["cluster_queues"], ""])
    return st.dictionaries(keys, values, max_size=3)


def _cluster_queue(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    resource = st.fixed_dictionaries({"name": st.sampled_from(["cpu", "nvidia.com/gpu"]), "nominalQuota": QUANTITIES},
                                     optional={"borrowingLimit": st.one_of(QUANTITIES, st.sampled_from([0, 1]))})
    groups = st.lists(st.fixed_dictionaries({"coveredResources": st.just(["cpu", "nvidia.com/gpu"]),
                                             "flavors": st.lists(st.fixed_dictionaries(
                                                 {"name": st.just("default")},
                                                 optional={"resources": st.lists(resource, max_size=2)}),
                                                 max_size=2)}), max_size=2)
    selector = st.sampled_from([{}, {"matchLabels": {}}, {"matchExpressions": []}, {"matchLabels": {"a": "b"}},
                                {"matchExpressions": [{"key": "a", "operator": "Exists"}]}])
    spec = st.fixed_dictionaries({}, optional={
        "cohortName": st.sampled_from([*names["cohorts"], ""]), "resourceGroups": groups,
        "namespaceSelector": selector,
        "preemption": st.fixed_dictionaries({}, optional={"reclaimWithinCohort": st.sampled_from(
            ["Any", "Never", "LowerPriority"])})})
    return st.builds(lambda name, labels, spec: {"apiVersion": "/".join(KUEUE), "kind": "ClusterQueue",
                                                 "metadata": {"name": name, "labels": labels}, "spec": spec},
                     st.sampled_from(names["cluster_queues"]), _labels(names), spec)


def _cohort(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    spec = st.fixed_dictionaries({}, optional={"parentName": st.sampled_from(names["cohorts"])})
    return st.builds(lambda name, spec: {"apiVersion": "/".join(KUEUE), "kind": "Cohort", "metadata": {"name": name},
                                         "spec": spec},
                     st.sampled_from(names["cohorts"]), spec)


def _priority_class(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    around = sorted({v + d for v in names["priority_values"] for d in (-1, 0, 1)})
    values = st.one_of(st.sampled_from(around or [0]), st.integers(-(2**31), 2**31 - 1))
    return st.builds(lambda name, labels, value: {"apiVersion": "/".join(KUEUE), "kind": "WorkloadPriorityClass",
                                                  "metadata": {"name": name, "labels": labels}, "value": value},
                     st.sampled_from(names["priority_classes"]), _labels(names), values)


def _namespace(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda name, labels: {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": name, "labels": labels}},
                     st.sampled_from(names["namespaces"]), _labels(names))


def _config_map(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda ns, name, data, binary: {"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": name, "namespace": ns},
                                                     **({"data": data} if data is not None else {}),
                                                     **({"binaryData": binary} if binary is not None else {})},
                     st.sampled_from(names["kueue_namespace"]), st.sampled_from(["kueue-manager-config", "other"]),
                     _maybe(st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["x", "y"]), max_size=2)),
                     _maybe(st.just({"c": "eA=="})))


CPU = st.sampled_from(["100m", "500m", "1", "2", "4", "1500m", "8", "96"])
MEMORY = st.sampled_from(["512Mi", "1Gi", "2Gi", "8Gi", "64Gi", "900Gi"])
GPU = st.sampled_from(["0", "1", "2", "4", "16"])


def _container(resource_names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    amounts = {"cpu": CPU, "memory": MEMORY}
    per = st.fixed_dictionaries({}, optional={r: amounts.get(r, GPU) for r in resource_names})
    return st.builds(lambda requests, limits: {"name": "c", "image": "i",
                                               "resources": {k: v for k, v in (("requests", requests),
                                                                               ("limits", limits)) if v}},
                     per, per)


PRIORITY_CLASS_NAMES = st.sampled_from([*SYSTEM_PRIORITY_CLASSES, "high-priority", ""])
"""Pod priorityClassName values: the system classes priority-use refuses in training namespaces, and others."""


def _priority_labels(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, str]]:
    """metadata.labels that may name a WorkloadPriorityClass (the stack's, above or below inference's, or another)."""
    return st.dictionaries(st.sampled_from([PRIORITY_CLASS_LABEL, "kueue.x-k8s.io/queue-name", "app"]),
                           st.sampled_from([*names["priority_classes"], "lq"]), max_size=2)


def _pod_spec(names: dict[str, list[Any]], resources: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A PodSpec: containers with requests (the rollout rule), a priorityClassName (priority-use), a grace period
    and preStop hooks around the reclaim budget (reclaim-within-budget)."""
    budgets = names["budgets"] or [30]
    seconds = st.one_of(st.sampled_from(sorted({b + d for b in budgets for d in (-3, -2, -1, 0, 1)} | {0, 1, 2, 30})),
                        st.integers(0, 600))
    hook = st.one_of(st.builds(lambda n: {"sleep": {"seconds": n}}, seconds),
                     st.just({"exec": {"command": ["sh", "-c", "sleep 5"]}}))
    container = st.builds(lambda base, hook: {**base, **({"lifecycle": {"preStop": hook}} if hook else {})},
                          _container(resources), _maybe(hook))
    return st.fixed_dictionaries({"containers": st.lists(container, min_size=1, max_size=2)},
                                 optional={"initContainers": st.lists(_container(resources), min_size=1, max_size=1),
                                           "priorityClassName": PRIORITY_CLASS_NAMES,
                                           "terminationGracePeriodSeconds": seconds})


def _pod_template(names: dict[str, list[Any]], queued: bool | None = None) -> st.SearchStrategy[dict[str, Any]]:
    resources = sorted({r for n in names["nominal"] for r in n}) or ["cpu"]
    return st.builds(lambda labels, spec: {"metadata": {"labels": labels}, "spec": spec},
                     _priority_labels(names), _pod_spec(names, resources))


def _meta(names: dict[str, list[Any]], name: str = "w", training: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """metadata of a namespaced workload: in an inference, a training or another namespace (`training`: a training
    one or another), maybe naming a class."""
    namespaces = names["training_namespaces"] if training else \
        sorted({*names["namespaces"], *names["training_namespaces"]})
    return st.builds(lambda ns, labels: {"name": name, "namespace": ns, "labels": labels},
                     st.sampled_from(namespaces), _priority_labels(names))


def _pod(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda meta, tmpl: {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tmpl["spec"]},
                     _meta(names), _pod_template(names))


def _job_spec(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda tmpl, n: {"template": tmpl, **({"parallelism": n} if n is not None else {})},
                     _pod_template(names), _maybe(st.integers(1, 3)))


def _job(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda meta, spec: {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec},
                     _meta(names), _job_spec(names))


def _cron_job(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A CronJob: priority labels on the object, its jobTemplate and the pod template."""
    return st.builds(lambda meta, labels, spec: {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
        "spec": {"schedule": "0 * * * *", "jobTemplate": {**({"metadata": {"labels": labels}} if labels is not None
                                                             else {}), "spec": spec}}},
        _meta(names), _maybe(_priority_labels(names)), _job_spec(names))


def _replica_set(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda meta, replicas, tmpl: {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "w"}}, "template": tmpl}},
        _meta(names), st.integers(0, 3), _pod_template(names))


def _jobset(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    replicated = st.builds(lambda name, labels, spec: {"name": name, "template": {
        **({"metadata": {"labels": labels}} if labels is not None else {}), "spec": spec}},
        st.sampled_from(["node", "launcher"]), _maybe(_priority_labels(names)), _job_spec(names))
    return st.builds(lambda meta, jobs: {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                                         "spec": {"replicatedJobs": jobs}},
                     _meta(names), st.lists(replicated, max_size=2))


def _kueue_workload(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Kueue's own Workload: a pod template per podSet and maybe `spec.priority` around inference's floor."""
    around = sorted({v + d for v in names["priority_values"] for d in (-1, 0, 1)}) or [0]
    pod_set = st.builds(lambda name, count, tmpl: {"name": name, "count": count, "template": tmpl},
                        st.sampled_from(["main", "worker"]), st.integers(1, 3), _pod_template(names))
    spec = st.fixed_dictionaries({"queueName": st.just("lq"), "podSets": st.lists(pod_set, min_size=1, max_size=2)},
                                 optional={"priority": st.sampled_from(around),
                                           "priorityClassName": st.sampled_from(names["priority_classes"])})
    return st.builds(lambda meta, spec: {"apiVersion": "/".join(KUEUE), "kind": "Workload", "metadata": meta,
                                         "spec": spec},
                     _meta(names), spec)


def _replicated_trainer_jobs(names: dict[str, list[Any]], env: bool = False) -> st.SearchStrategy[list[Any]]:
    """replicatedJobs of a TrainingRuntime (or a TrainJob's runtime patch): the `node` job, one labelled as the
    trainer step or another, each with a pod spec around the reclaim budget, maybe naming reserved variables."""
    env_names = st.sampled_from([*sorted(RESERVED_ENV), "PET_NNODES", "PETS", "MY_VAR", "HF_HOME"])
    env_list = st.lists(st.fixed_dictionaries({"name": env_names, "value": st.just("x")}), max_size=2)
    pod = _pod_spec(names, ["cpu"])
    if env:
        pod = st.builds(lambda spec, e: {**spec, "containers": [{**c, "env": e} for c in spec["containers"]]},
                        pod, env_list)
    job = st.builds(lambda name, labels, spec: {"name": name, "template": {
        **({"metadata": {"labels": labels}} if labels is not None else {}),
        "spec": {"template": {"spec": spec}}}},
        st.sampled_from(["node", "dataset-initializer", "launcher"]),
        _maybe(st.dictionaries(st.just(ANCESTOR_LABEL), st.sampled_from(["trainer", "dataset-initializer"]),
                               max_size=1)),
        pod)
    return st.lists(job, max_size=2)


def _training_runtime(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda meta, jobs: {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
                                         "metadata": meta,
                                         "spec": {"template": {"spec": {"replicatedJobs": jobs}}}},
                     _meta(names, "checkpoint-safe", training=True), _replicated_trainer_jobs(names))


def _trainjob(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A TrainJob: a runtimeRef to the stack's reserved-env runtime or another (TrainingRuntime, cluster-scoped or
    none), trainer env and runtime patches (reserved names, grace periods and preStop hooks), a priority label."""
    env = st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from([*sorted(RESERVED_ENV), "PET_MASTER_ADDR", "PETAL", "LR"])},
        optional={"value": st.just("x")}), max_size=2)
    ref = st.builds(lambda name, kind: {"name": name, **({"kind": kind} if kind else {})},
                    st.sampled_from(names["runtimes"]),
                    st.sampled_from(["TrainingRuntime", "TrainingRuntime", "ClusterTrainingRuntime", None]))
    patch = st.fixed_dictionaries({"manager": st.just("me")}, optional={"trainingRuntimeSpec": st.builds(
        lambda jobs: {"template": {"spec": {"replicatedJobs": jobs}}}, _replicated_trainer_jobs(names, env=True))})
    spec = st.fixed_dictionaries({"runtimeRef": ref}, optional={
        "trainer": st.fixed_dictionaries({}, optional={"env": env, "numNodes": st.integers(1, 2)}),
        "runtimePatches": st.lists(patch, max_size=2)})
    return st.builds(lambda meta, spec: {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                         "metadata": meta, "spec": spec},
                     _meta(names, "run", training=True), spec)


def _multikueue(kind: str, names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """MultiKueueClusters, MultiKueueConfigs and AdmissionChecks named as the stack's or not (cluster-scoped)."""
    specs = {"MultiKueueCluster": st.sampled_from([{"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                                                      "location": loc}}}
                                                   for loc in ("worker-a-kubeconfig", "evil-kubeconfig")]),
             "MultiKueueConfig": st.sampled_from([{"clusters": c} for c in (["worker-a"], ["worker-a", "evil"])]),
             "AdmissionCheck": st.sampled_from([{"controllerName": "kueue.x-k8s.io/multikueue",
                                                 "parameters": {"apiGroup": "kueue.x-k8s.io",
                                                                "kind": "MultiKueueConfig", "name": n}}
                                                for n in ("multikueue", "evil")])}
    return st.builds(lambda name, labels, spec: {
        "apiVersion": "/".join(KUEUE), "kind": kind, "metadata": {"name": name, "labels": labels}, "spec": spec},
        st.sampled_from(names["multikueue"][kind]), _labels(names), specs[kind])


def _secret(names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda ns, name, data, kind: {"apiVersion": "v1", "kind": "Secret",
                                                   "metadata": {"name": name, "namespace": ns},
                                                   **({"data": data} if data is not None else {}),
                                                   **({"type": kind} if kind is not None else {})},
                     st.sampled_from(names["kueue_namespace"]), st.sampled_from(names["multikueue"]["Secret"]),
                     _maybe(st.sampled_from([{"kubeconfig": "YQ=="}, {"kubeconfig": "Yg=="}, {}])),
                     _maybe(st.sampled_from(["Opaque", "kubernetes.io/tls"])))


def _workload(kind: str, names: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A serving workload of `kind` (Deployment, StatefulSet, LeaderWorkerSet): the request's resource is its kind's."""
    surge = st.one_of(st.integers(0, 3), st.sampled_from(["0%", "25%", "50%", "100%", "10%"]))
    meta = st.builds(lambda ns, queued, labels: {"name": "w", "namespace": ns,
                                                 "labels": {**labels, "kueue.x-k8s.io/queue-name": "lq"} if queued
                                                 else labels},
                     st.sampled_from(sorted({*names["namespaces"], *names["training_namespaces"]})), st.booleans(),
                     _priority_labels(names))
    replicas = st.integers(0, 4)
    deployment = st.builds(
        lambda meta, replicas, template, strategy: {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {**({"replicas": replicas} if replicas is not None else {}), "template": template,
                     **({"strategy": strategy} if strategy is not None else {})}},
        meta, _maybe(replicas), _pod_template(names),
        _maybe(st.one_of(st.just({"type": "Recreate"}),
                         st.builds(lambda s: {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": s}}, surge),
                         st.just({"type": "RollingUpdate"}))))
    stateful = st.builds(lambda meta, replicas, template: {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
        "spec": {**({"replicas": replicas} if replicas is not None else {}), "template": template}},
        meta, _maybe(replicas), _pod_template(names))
    lws = st.builds(lambda meta, replicas, size, worker, leader, s: {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta,
        "spec": {**({"replicas": replicas} if replicas is not None else {}),
                 "leaderWorkerTemplate": {"size": size, "workerTemplate": worker,
                                          **({"leaderTemplate": leader} if leader is not None else {})},
                 **({"rolloutStrategy": {"rollingUpdateConfiguration": {"maxSurge": s}}} if s is not None else {})}},
        meta, _maybe(replicas), st.integers(1, 3), _pod_template(names), _maybe(_pod_template(names)), _maybe(surge))
    return {"Deployment": deployment, "StatefulSet": stateful, "LeaderWorkerSet": lws}[kind]


KINDS: dict[str, Callable[[dict[str, list[Any]]], st.SearchStrategy[dict[str, Any]]]] = {
    "clusterqueues": _cluster_queue, "cohorts": _cohort, "workloadpriorityclasses": _priority_class,
    "namespaces": _namespace, "namespaces/status": _namespace, "namespaces/finalize": _namespace,
    "configmaps": _config_map, "deployments": lambda n: _workload("Deployment", n),
    "statefulsets": lambda n: _workload("StatefulSet", n),
    "leaderworkersets": lambda n: _workload("LeaderWorkerSet", n),
    "pods": _pod, "jobs": _job, "cronjobs": _cron_job, "replicasets": _replica_set, "jobsets": _jobset,
    "workloads": _kueue_workload, "trainingruntimes": _training_runtime, "trainjobs": _trainjob,
    "multikueueclusters": lambda n: _multikueue("MultiKueueCluster", n),
    "multikueueconfigs": lambda n: _multikueue("MultiKueueConfig", n),
    "admissionchecks": lambda n: _multikueue("AdmissionCheck", n),
    "secrets": _secret,
}
"""A request body per resource a guardrail matches (its `resource` and `also` plurals)."""

PLURAL = {"ClusterQueue": "clusterqueues", "Cohort": "cohorts", "WorkloadPriorityClass": "workloadpriorityclasses",
          "Namespace": "namespaces", "ConfigMap": "configmaps", "Deployment": "deployments",
          "StatefulSet": "statefulsets", "LeaderWorkerSet": "leaderworkersets", "Pod": "pods", "Job": "jobs",
          "CronJob": "cronjobs", "ReplicaSet": "replicasets", "JobSet": "jobsets", "Workload": "workloads",
          "TrainingRuntime": "trainingruntimes", "TrainJob": "trainjobs", "MultiKueueCluster": "multikueueclusters",
          "MultiKueueConfig": "multikueueconfigs", "AdmissionCheck": "admissionchecks", "Secret": "secrets"}


def _group_version(obj: dict[str, Any]) -> tuple[str, str]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return group, version


def _only_metadata_changed(old: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    new["metadata"].setdefault("labels", {})["touched"] = "yes"
    return new


def requests(plural: str, names: dict[str, list[Any]]) -> st.SearchStrategy[tuple[str, Any, Any, str, tuple]]:
    """(resource plural, object, old object, operation, user, groups) for `plural`: a CREATE, an UPDATE from a
    drawn object or one that only touches metadata, or a DELETE."""
    body = KINDS[plural](names)
    user = st.sampled_from(names["users"])
    groups = st.sampled_from([(), ("system:authenticated",), tuple(names["groups"][:1])])

    def make(op: str, new: dict, old: dict, touch: bool, who: str, member: tuple) -> tuple:
        assert PLURAL[new["kind"]] == plural.partition("/")[0], f"a {new['kind']} drawn for {plural}"
        if op == "CREATE":
            return plural, new, None, op, who, member
        if op == "DELETE":
            return plural, None, new, op, who, member
        return plural, (_only_metadata_changed(old) if touch else new), old, op, who, member

    return st.builds(make, st.sampled_from(["CREATE", "UPDATE", "UPDATE", "DELETE"]), body, body, st.booleans(),
                     user, groups)


def python_denies(rail: Guardrail, drawn: tuple) -> bool:
    """The Python twin's verdict on a drawn request: `Guardrail.judge` on the requests the guardrail selects (its
    resources and operations, which its manifest's matchConstraints are made of); on DELETE `obj` is the object
    deleted."""
    plural, new, old, op, user, groups = drawn
    shown = new if new is not None else old
    group, version = _group_version(shown)
    if op not in rail.operations or (group, version, plural) not in (rail.resource, *rail.also):
        return False
    if op == "DELETE":
        return bool(rail.judge(Request(kube_object(old), None, user, groups, operation="DELETE")))
    return bool(rail.judge(Request(kube_object(new), kube_object(old) if old else None, user, groups, operation=op)))


def cel_verdict(policy: dict[str, Any], drawn: tuple) -> k8s_cel.Verdict:
    """The apiserver's verdict (as `tests/k8s_cel.py` evaluates it) of the policy manifest on a drawn request."""
    plural, new, old, op, user, groups = drawn
    shown = new if new is not None else old
    group, version = _group_version(shown)
    return k8s_cel.judge(policy, k8s_cel.AdmissionRequest(
        (group, version, plural), op, shown["metadata"]["name"], shown["metadata"].get("namespace", ""), new, old,
        user, groups))


def disagreement(rail: Guardrail, policy: dict[str, Any], drawn: tuple) -> str | None:
    """None when the CEL policy and the Python twin reach the same verdict on `drawn`, else what differs. A request
    the policy does not match (resource, operation, conditions) must be one the twin lets through."""
    cel = cel_verdict(policy, drawn)
    python = python_denies(rail, drawn)
    if cel.denied == python:
        return None
    why = cel.why if cel.matched else "not matched"
    return f"{rail.name}: CEL {'denies' if cel.denied else 'allows'} ({why}), the Python rule " \
           f"{'denies' if python else 'allows'}: {drawn}"


def _rails() -> list[tuple[str, Guardrail]]:
    out = [(stack, rail) for stack, s in STACKS.items() for rail in stack_guardrails(s)]
    extra = ("multikueue-writers", "trainjob-reserved-env")
    for stack, s in STACKS.items():
        who = identities(s)
        out += [(f"{stack}+multikueue", rail) for scope in _scopes(f"{stack}+multikueue")
                for rail in guardrails(scope, who) if rail.policy in extra]
    return out


RAILS = _rails()


def test_every_guardrail_of_the_catalog_has_requests_to_judge():
    """A guardrail added to `policy.rules.book.admission.guardrails` over a resource this file cannot build fails here:
    add its request body to `KINDS`."""
    assert {rail.policy for _, rail in RAILS} >= {"inference-borrowing-limit-zero", "namespace-selector",
                                                  "tenant-label", "kueue-manager-config-writers"}
    for _, rail in RAILS:
        for _, _, plural in (rail.resource, *rail.also):
            assert plural in KINDS, f"{rail.name} matches {plural}: no request strategy for it in KINDS"


@pytest.mark.parametrize("stack, rail", RAILS, ids=[f"{s}-{r.name}" for s, r in RAILS])
def test_the_cel_of_every_guardrail_says_what_its_python_twin_says(stack, rail):
    names = _names(stack)
    policy = rail.policy_manifest()
    plurals = [plural for _, _, plural in (rail.resource, *rail.also)]
    matched: list[bool] = []

    @PARITY
    @given(st.sampled_from(plurals).flatmap(lambda p: requests(p, names)))
    def parity(drawn):
        found = disagreement(rail, policy, drawn)
        assert found is None, found
        matched.append(cel_verdict(policy, drawn).matched)

    for _ in range(MATCH_ROUNDS):  # a guardrail whose match conditions few requests meet gets more draws (every
        parity()                    # draw is still a parity check); one matched request is enough
        if any(matched):
            break
    assert any(matched), f"{rail.name}: no generated request reached its validations in {MATCH_ROUNDS} rounds"


@pytest.mark.parametrize("stack, rail", RAILS, ids=[f"{s}-{r.name}" for s, r in RAILS])
def test_a_planted_disagreement_fails_the_parity_check(stack, rail):
    """The first validation negated (what a wrong operator or a dropped `!` in the generator would do): the parity
    check above must report it, for every guardrail."""
    names = _names(stack)
    planted = copy.deepcopy(rail.policy_manifest())
    planted["spec"]["validations"][0]["expression"] = f"!({planted['spec']['validations'][0]['expression']})"
    plurals = [plural for _, _, plural in (rail.resource, *rail.also)]

    @PLANTED
    @given(st.sampled_from(plurals).flatmap(lambda p: requests(p, names)))
    def parity(drawn):
        found = disagreement(rail, planted, drawn)
        assert found is None, found

    with pytest.raises(AssertionError, match="CEL (denies|allows)"):
        parity()


def test_the_quantity_shim_follows_apimachinery():
    """`tests/k8s_cel.parse_quantity` against values written out by hand (apimachinery quantity.go grammar)."""
    table = {"0": 0, "1": 1, "500m": 0.5, "2Gi": 2 * 1024**3, "1Ki": 1024, "1E": 10**18, "-1": -1, "1.5": 1.5,
             "1e3": 1000, "1E-3": 0.001, "+2": 2, ".5": 0.5, "5.": 5, "1n": 1e-9, "3u": 3e-6, "7Ei": 7 * 2**60}
    for text, value in table.items():
        assert float(k8s_cel.parse_quantity(text)) == pytest.approx(value, rel=0, abs=1e-12), text
    for bad in ["", "1 Gi", "1gi", "1e3k", "abc", "1Gi ", "--1"]:
        with pytest.raises(ValueError):
            k8s_cel.parse_quantity(bad)
    assert k8s_cel.evaluate("quantity('1Gi').compareTo(quantity('1024Mi')) == 0 && "
                            "quantity('2').compareTo(quantity('1500m')) == 1 && "
                            "quantity('500m').asApproximateFloat() == 0.5 && isQuantity('1Gi') && !isQuantity('1 Gi')",
                            {})
    assert isinstance(k8s_cel.evaluate("quantity('1 Gi')", {}), k8s_cel.celpy.CELEvalError)
    assert k8s_cel.evaluate("[1.0, 2.5].sum() == 3.5 && [1, 3].max() == 3 && 'a%'.replace('%', '') == 'a'", {})
    assert isinstance(k8s_cel.evaluate("[].max()", {}), k8s_cel.celpy.CELEvalError)
