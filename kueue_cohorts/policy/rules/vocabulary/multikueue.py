"""MultiKueue across clusters, as the rules read it: which cluster an object is on, what a dispatching ClusterQueue
needs on each worker (MULTIKUEUE_WORKERS_READY judges it; `cohorts verify` and the worker RBAC the stack renders use
the same table).

A ClusterQueue on the manager dispatches when its `spec.admissionChecksStrategy` names an AdmissionCheck of
controller `kueue.x-k8s.io/multikueue`; the check's MultiKueueConfig lists the MultiKueueClusters (workers) in
dispatch order. Kueue then creates the workload, and its job, on a worker in the same namespace with the same
queue-name label, and watches them there. So every worker must have:

- the namespace of each LocalQueue of the dispatching queue (when the stack makes that namespace on the manager);
- the LocalQueue itself (same namespace and name; the worker's Kueue admits the workload through it);
- the TrainingRuntime each of those namespaces has on the manager (a dispatched TrainJob names it);
- RBAC for the identity the manager's Kueue acts as: get, list, watch, create, delete (and the adapter's extra verbs)
  on Workloads and on every enabled job kind that has a MultiKueue adapter, since the manager opens a watch of each
  of them on every worker and one refused watch fails the connection (Kueue v0.19.2
  pkg/controller/admissionchecks/multikueue/multikueuecluster.go `updateConfigAndRefreshWatchers`: the
  MultiKueueCluster turns inactive, the AdmissionCheck with it, and the ClusterQueue stops admitting anything).

The objects of the clusters come from the stack's providers: a provider named `k8s-worker-<name>` targets worker
`<name>` (the MultiKueueCluster of that name); every other provider targets the manager. What each job kind needs is
`ADAPTERS`, read from Kueue v0.19.2's adapters (pkg/controller/jobs/*/..._multikueue_adapter.go: the calls each makes
on the remote client).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

import yaml

from .kueue_configuration import configurations
from .objects import KubeObject
from .values import MISSING, as_list, as_map, get, is_map

MANAGER = ""
"""The cluster key of the manager (the stack's own cluster) in `clusters` mappings."""
WORKER_PROVIDER_PREFIX = "k8s-worker-"
"""The name prefix of a worker's kubernetes provider: `k8s-worker-<worker name>`."""
CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
"""AdmissionCheck `spec.controllerName` of MultiKueue (apis/kueue/v1beta2/multikueue_types.go, v0.19.2)."""
DEFAULT_SERVICE_ACCOUNT = "kueue-system/multikueue"
"""The worker identity when the pack config names none: `<namespace>/<ServiceAccount>`."""
DEFAULT_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment")
"""The integrations judged when neither the pack config nor a manager Configuration in the stack says (the
project's default `kueue.integrations`)."""
SYNC_VERBS = ("create", "delete", "get", "list", "watch")
"""What every adapter that watches its kind calls on the remote client: Get, Create, Delete, List and Watch."""
READ_VERBS = frozenset({"get", "list", "watch"})
"""The verbs granted cluster-wide (the worker's ClusterRole): the manager's watch of each kind spans every namespace
of the worker (`updateConfigAndRefreshWatchers` -> `establishWatch`: `client.Watch` of the kind's list, no namespace).
Every other verb (create, delete, update, patch) is granted by a Role in each namespace the stack dispatches to: the
manager writes a dispatched workload, its job and their status only in the namespace of the manager's workload
(`workload.go` creates the remote Workload as a copy of the local one; the adapters' `SyncJob` create the job in the
Workload's namespace; the garbage collector `runGC` deletes only Workloads carrying its own origin label, which it
created there)."""


@dataclass(frozen=True, slots=True)
class KindAccess:
    """What MultiKueue does with one kind on a worker.

    framework: the Kueue integration name (`integrations.frameworks`), or the kind for Workloads. api_group /
    resource: the RBAC rule's apiGroups and resources. verbs: the verbs its adapter calls. gated_verbs: (feature gate,
    further verbs only under it). upstream: the Kueue v0.19.2 file that makes the calls.
    """

    framework: str
    api_group: str
    resource: str
    verbs: tuple[str, ...] = SYNC_VERBS
    gated_verbs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    upstream: str = ""

    def needed(self, feature_gates: Mapping[str, Any]) -> tuple[str, ...]:
        """Its verbs plus the gated ones whose gate is on in `feature_gates`, sorted."""
        verbs = set(self.verbs)
        for gate, more in self.gated_verbs:
            if feature_gates.get(gate) is True:
                verbs.update(more)
        return tuple(sorted(verbs))

    def reads(self, feature_gates: Mapping[str, Any]) -> tuple[str, ...]:
        """The `needed` verbs granted cluster-wide (`READ_VERBS`), sorted."""
        return tuple(v for v in self.needed(feature_gates) if v in READ_VERBS)

    def writes(self, feature_gates: Mapping[str, Any]) -> tuple[str, ...]:
        """The `needed` verbs granted only in the dispatched namespaces (all but `READ_VERBS`), sorted."""
        return tuple(v for v in self.needed(feature_gates) if v not in READ_VERBS)

    def rule(self, feature_gates: Mapping[str, Any], verbs: Optional[Sequence[str]] = None) -> dict[str, Any]:
        """The RBAC `rules[]` entry granting `verbs` (default `needed(feature_gates)`)."""
        return {"apiGroups": [self.api_group], "resources": [self.resource],
                "verbs": list(self.needed(feature_gates) if verbs is None else verbs)}


_JOBS = "pkg/controller/jobs"
_KUBEFLOW = f"{_JOBS}/kubeflow/kubeflowjob/kubeflowjob_multikueue_adapter.go"
_RAY = f"{_JOBS}/ray/ray_multikueue_adapter.go"
_ELASTIC = "ElasticJobsViaWorkloadSlices"
_WORKLOAD = "pkg/controller/admissionchecks/multikueue/workload.go"

ADAPTERS: tuple[KindAccess, ...] = (
    KindAccess("batch/job", "batch", "jobs", gated_verbs=((_ELASTIC, ("patch",)),),
               upstream=f"{_JOBS}/job/job_multikueue_adapter.go"),
    KindAccess("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "jobsets",
               upstream=f"{_JOBS}/jobset/jobset_multikueue_adapter.go"),
    KindAccess("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "trainjobs",
               upstream=f"{_JOBS}/trainjob/trainjob_multikueue_adapter.go"),
    KindAccess("pod", "", "pods", upstream=f"{_JOBS}/pod/pod_multikueue_adapter.go"),
    KindAccess("statefulset", "apps", "statefulsets",
               upstream=f"{_JOBS}/statefulset/statefulset_multikueue_adapter.go"),
    KindAccess("leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "leaderworkersets",
               upstream=f"{_JOBS}/leaderworkerset/leaderworkerset_multikueue_adapter.go"),
    KindAccess("kubeflow.org/mpijob", "kubeflow.org", "mpijobs",
               upstream=f"{_JOBS}/mpijob/mpijob_multikueue_adapter.go"),
    KindAccess("kubeflow.org/paddlejob", "kubeflow.org", "paddlejobs", upstream=_KUBEFLOW),
    KindAccess("kubeflow.org/pytorchjob", "kubeflow.org", "pytorchjobs", upstream=_KUBEFLOW),
    KindAccess("kubeflow.org/tfjob", "kubeflow.org", "tfjobs", upstream=_KUBEFLOW),
    KindAccess("kubeflow.org/xgboostjob", "kubeflow.org", "xgboostjobs", upstream=_KUBEFLOW),
    KindAccess("kubeflow.org/jaxjob", "kubeflow.org", "jaxjobs", upstream=_KUBEFLOW),
    KindAccess("ray.io/rayjob", "ray.io", "rayjobs", SYNC_VERBS + ("patch",), upstream=_RAY),
    KindAccess("ray.io/rayservice", "ray.io", "rayservices", SYNC_VERBS + ("patch",), upstream=_RAY),
    KindAccess("ray.io/raycluster", "ray.io", "rayclusters", SYNC_VERBS + ("patch",), upstream=_RAY),
    KindAccess("workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "appwrappers",
               upstream=f"{_JOBS}/appwrapper/appwrapper_multikueue_adapter.go"),
)
"""Every integration of Kueue v0.19.2 with a MultiKueue adapter (jobframework.GetMultiKueueAdapters), each with the
calls its adapter makes on the worker: Get (sync), Create (dispatch), Delete (clean-up), List and Watch (the watch
the manager opens on every worker); Patch for Ray's spec sync and, under ElasticJobsViaWorkloadSlices, the Job's
elastic sync. `deployment` and `sparkoperator.k8s.io/sparkapplication` have no adapter: nothing is dispatched or
watched for them."""

WORKLOADS = KindAccess("workloads", "kueue.x-k8s.io", "workloads", SYNC_VERBS + ("update",), upstream=_WORKLOAD)
"""Workloads on the worker: created, read, watched, deleted, and updated (the finalizer removal of
`RemoveRemoteObjects`, the priority sync)."""
WORKLOAD_STATUS = KindAccess("workloads/status", "kueue.x-k8s.io", "workloads/status", ("patch",),
                             (("MultiKueueOrchestratedPreemption", ("update",)),), upstream=_WORKLOAD)
"""The Workload status subresource: patched when the manager evicts (`workloadpatching.PatchAdmissionStatus`),
updated to open a preemption gate (MultiKueueOrchestratedPreemption only)."""


def kind_access(frameworks: Iterable[str]) -> list[KindAccess]:
    """The KindAccess of each of `frameworks` (Kueue integration names) that has a MultiKueue adapter, in ADAPTERS
    order, then Workloads and their status (always watched)."""
    enabled = set(frameworks)
    return [a for a in ADAPTERS if a.framework in enabled] + [WORKLOADS, WORKLOAD_STATUS]


def worker_rules(frameworks: Iterable[str], feature_gates: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ClusterRole rules MultiKueue needs on a worker of a manager with `frameworks` and `feature_gates`: the
    reads of every kind (`KindAccess.reads`), cluster-wide."""
    return [access.rule(feature_gates, access.reads(feature_gates)) for access in kind_access(frameworks)
            if access.reads(feature_gates)]


def worker_namespace_rules(frameworks: Iterable[str], feature_gates: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Role rules MultiKueue needs in each namespace the stack dispatches to: the writes of every kind
    (`KindAccess.writes`)."""
    return [access.rule(feature_gates, access.writes(feature_gates)) for access in kind_access(frameworks)
            if access.writes(feature_gates)]


def worker_of_provider(name: str) -> Optional[str]:
    """The worker a provider named `name` targets (`k8s-worker-<worker>`), or None for the manager."""
    return name[len(WORKER_PROVIDER_PREFIX):] if name.startswith(WORKER_PROVIDER_PREFIX) else None


# --- RBAC ----------------------------------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    return [str(v) for v in as_list(value)]


def granted(objects: Sequence[KubeObject], subject: str, in_namespace: Optional[str] = None
            ) -> list[Mapping[str, Any]]:
    """The rules granted to ServiceAccount `subject` (`<namespace>/<name>`) by `objects`: cluster-wide by the
    ClusterRoleBindings (to a ClusterRole of `objects`); with `in_namespace`, also by the RoleBindings of that
    namespace (to a Role of that namespace or a ClusterRole), as RBAC authorizes a request there (Kubernetes
    `plugin/pkg/auth/authorizer/rbac`: the union of both)."""
    namespace, _, name = subject.partition("/")
    rbac = "rbac.authorization.k8s.io"
    cluster_roles = {obj.name: obj for obj in objects if obj.is_kind(rbac, "ClusterRole")}
    roles = {obj.name: obj for obj in objects if obj.is_kind(rbac, "Role") and obj.namespace == in_namespace}
    rules: list[Mapping[str, Any]] = []
    for binding in objects:
        if binding.is_kind(rbac, "ClusterRoleBinding"):
            known = {"ClusterRole": cluster_roles}
        elif in_namespace is not None and binding.is_kind(rbac, "RoleBinding") and binding.namespace == in_namespace:
            known = {"ClusterRole": cluster_roles, "Role": roles}
        else:
            continue
        bound = any(get(s, "kind") == "ServiceAccount" and get(s, "name") == name
                    and get(s, "namespace") == namespace for s in as_list(get(binding.props, "subjects")))
        role = known.get(str(get(binding.props, "roleRef", "kind")), {}).get(str(get(binding.props, "roleRef", "name")))
        if bound and role is not None:
            rules += [as_map(r) for r in as_list(get(role.props, "rules"))]
    return rules


def allows(rules: Sequence[Mapping[str, Any]], group: str, resource: str, verb: str) -> bool:
    """Whether `rules` (ClusterRole rules) allow `verb` on `resource` of API `group`, with RBAC's wildcards `*`."""
    for rule in rules:
        groups, resources, verbs = (_strings(rule.get(k)) for k in ("apiGroups", "resources", "verbs"))
        if ((group in groups or "*" in groups) and (resource in resources or "*" in resources)
                and (verb in verbs or "*" in verbs)):
            return True
    return False


def missing_access(rules: Sequence[Mapping[str, Any]], frameworks: Iterable[str],
                   feature_gates: Mapping[str, Any], part: str = "all") -> list[tuple[KindAccess, tuple[str, ...]]]:
    """(kind, verbs it lacks) for every kind MultiKueue needs that `rules` do not fully allow; `part` "read" or
    "write" judges only those verbs (`KindAccess.reads` / `writes`)."""
    out = []
    for access in kind_access(frameworks):
        verbs = {"all": access.needed, "read": access.reads, "write": access.writes}[part](feature_gates)
        lacking = tuple(v for v in verbs if not allows(rules, access.api_group, access.resource, v))
        if lacking:
            out.append((access, lacking))
    return out


def dispatched_namespaces(manager: Sequence[KubeObject], queue: str) -> list[str]:
    """The namespaces whose LocalQueues point at ClusterQueue `queue` in `manager`, sorted: where MultiKueue writes
    the workloads that queue dispatches."""
    return sorted({lq.namespace for lq in manager if lq.is_kueue("LocalQueue") and lq.namespace
                   and get(lq.spec, "clusterQueue") == queue})


def rule_text(access: KindAccess, verbs: Sequence[str]) -> str:
    """The rule to add, as YAML flow: `{apiGroups: ["batch"], resources: [jobs], verbs: [watch]}`."""
    return (f'{{apiGroups: ["{access.api_group}"], resources: [{access.resource}], verbs: [{", ".join(verbs)}]}}')


# --- the cross-cluster rule ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dispatch:
    """A dispatching ClusterQueue of the manager: `queue`, its AdmissionCheck `check` and the workers it dispatches
    to (`workers`, MultiKueueCluster names in dispatch order)."""

    queue: KubeObject
    check: str
    workers: tuple[str, ...]


def dispatches(manager: Sequence[KubeObject]) -> list[Dispatch]:
    """Every ClusterQueue of `manager` that names a MultiKueue AdmissionCheck, with that check's MultiKueueConfig
    clusters (an AdmissionCheck or MultiKueueConfig absent from `manager`: no workers known)."""
    checks = {}
    for obj in manager:
        if obj.is_kueue("AdmissionCheck") and get(obj.spec, "controllerName") == CONTROLLER_NAME:
            checks[obj.name] = str(get(obj.spec, "parameters", "name"))
    configs = {obj.name: tuple(_strings(get(obj.spec, "clusters"))) for obj in manager
               if obj.is_kueue("MultiKueueConfig")}
    out = []
    for queue in manager:
        if not queue.is_kueue("ClusterQueue"):
            continue
        for entry in as_list(get(queue.spec, "admissionChecksStrategy", "admissionChecks")):
            name = str(get(entry, "name"))
            if name in checks:
                out.append(Dispatch(queue, name, configs.get(checks[name], ())))
    return out


def manager_frameworks(manager: Sequence[KubeObject], integrations: Sequence[str],
                       feature_gates: Mapping[str, Any]) -> tuple[list[str], Mapping[str, Any]]:
    """The manager's integrations and feature gates: `integrations` / `feature_gates` (the pack config's) when not
    empty, else those of the first Kueue manager Configuration the stack carries (`kueue_configuration.configurations`:
    a ConfigMap or the Kueue chart's values), else DEFAULT_FRAMEWORKS and no gates."""
    frameworks: Any = list(integrations) or None  # [] (the schema default) is "not given"
    gates: Any = dict(feature_gates) or None
    if frameworks is None:
        for obj in manager:
            for _, text in configurations(obj):
                try:
                    config = yaml.safe_load(text) if isinstance(text, str) else text
                except yaml.YAMLError:
                    continue  # KUEUE_MANAGER_CONFIG reports it
                if is_map(config):
                    frameworks = as_map(get(config, "integrations")).get("frameworks")
                    gates = gates if gates is not None else get(config, "featureGates")
                    break
            if frameworks is not None:
                break
    return _strings(frameworks) if frameworks is not None else list(DEFAULT_FRAMEWORKS), \
        as_map(gates if gates is not MISSING else None)
