"""Pure: `multiKueue` settings -> the MultiKueue objects of the manager, each worker's view of the stack, and the
RBAC the manager's Kueue needs on every worker.

On the manager: per worker a MultiKueueCluster reading its kubeconfig from a Secret in Kueue's namespace (the Secret
itself when the stack writes it), per dispatch entry a MultiKueueConfig listing its workers in dispatch order and an
AdmissionCheck (controllerName `kueue.x-k8s.io/multikueue`) that the dispatching ClusterQueue names in
`spec.admissionChecksStrategy` (components/model/render.py adds it). On each worker: the stack as the worker sees it
(`worker_settings`: the same flavors, cohorts, LocalQueues, namespaces, checkpoint volumes and runtime, judged with the
worker's capacity) and the worker identity (ServiceAccount, ClusterRole and ClusterRoleBinding with the reads; a Role
and RoleBinding with the writes in each namespace the stack dispatches to the worker).

The worker ClusterRole is derived from the manager's enabled integrations (`kueue.integrations`) by the rule book's
`policy.rules.vocabulary.multikueue.worker_rules` (the same table the pack and `cohorts verify` judge with), because the
manager's Kueue opens, on every worker, a watch of Workloads and of every enabled kind that has a MultiKueue adapter
(pkg/controller/admissionchecks/multikueue/multikueuecluster.go `updateConfigAndRefreshWatchers`, v0.19.2: one failed
watch fails the connection, the MultiKueueCluster turns inactive and with it the AdmissionCheck and every ClusterQueue
using it). What each kind needs is what its adapter calls on the remote client
(pkg/controller/jobs/*/..._multikueue_adapter.go, v0.19.2): Get to sync, Create to dispatch, Delete to clean up, List
and Watch for the watch above, Patch where the adapter patches the remote object (Ray's spec sync; the Job's and Ray's
elastic sync under the ElasticJobsViaWorkloadSlices gate). Workloads: create, get, list, watch, delete, update (the
finalizer removal and priority sync of workload.go) and the status subresource's patch (the eviction from the manager,
`workloadpatching.PatchAdmissionStatus`) and update (MultiKueueOrchestratedPreemption gate only). Upstream's documented
setup (site/static/examples/multikueue/create-multikueue-kubeconfig.sh) grants Jobs, JobSets and Workloads only;
upstream's own e2e environment script adds TrainJobs and JAXJobs on top ("Add missing permissions for e2e tests"). Here
the `<kind>/status` get of that script is left out (no adapter reads a status subresource: status comes with the object)
and the Workload `update` it lacks is granted.
"""
from __future__ import annotations

from typing import Any, Optional

from kueue_cohorts.components.model.kueue import API_VERSION, OWNER_ANNOTATION, PATCH_FORCE
from kueue_cohorts.components.settings import MultiKueueWorker, Settings
from kueue_cohorts.policy.rules.vocabulary.multikueue import CONTROLLER_NAME, worker_namespace_rules, worker_rules
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_BY, MANAGED_BY_LABEL

SECRET_KEY = "kubeconfig"
"""The Secret key holding the worker's kubeconfig (kueue.MultiKueueConfigSecretKey, multikueue_types.go)."""
WORKER_LABEL = "kueue-cohorts/multikueue-worker"
"""Label on the objects of one worker that live on the manager (its kubeconfig Secret, its MultiKueueCluster)."""
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


def role_name(worker: MultiKueueWorker) -> str:
    """The worker ClusterRole and ClusterRoleBinding name: `kueue-cohorts-<serviceAccount>`."""
    return f"kueue-cohorts-{worker.service_account}"


def _labels(worker: str | None = None) -> dict[str, str]:
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if worker is not None:
        labels[WORKER_LABEL] = worker
    return labels


def queue_namespaces(settings: Settings) -> dict[str, tuple[str, ...]]:
    """ClusterQueue name -> the namespaces of its LocalQueues (components/model/plans.py: inference and training
    `namespaces`, each shared-pool tenant's `namespaces`), in the stack file's order."""
    out: dict[str, tuple[str, ...]] = {}
    it, sp = settings.inference_training, settings.shared_pool
    if it is not None:
        out[it.inference.cluster_queue] = tuple(it.inference.namespaces)
        out[it.training.cluster_queue] = tuple(it.training.namespaces)
    if sp is not None:
        for tenant in sp.tenants:
            out[tenant.cluster_queue_name] = tuple(tenant.namespace_names)
    return out


def dispatched_namespaces(settings: Settings, worker: MultiKueueWorker) -> list[str]:
    """The namespaces whose workloads the stack dispatches to `worker` (those of every `multiKueue.dispatch` entry
    listing it), sorted: the only namespaces the worker identity may write in."""
    mk = settings.multi_kueue
    if mk is None:
        return []
    queues = queue_namespaces(settings)
    return sorted({ns for entry in mk.dispatch if worker.name in entry.workers
                   for ns in queues.get(entry.cluster_queue, ())})


def worker_identity(settings: Settings, worker: MultiKueueWorker, owner: Optional[str] = None
                    ) -> list[dict[str, Any]]:
    """The worker identity of `worker`: the ServiceAccount in Kueue's namespace (`kueue.namespace`); the ClusterRole
    with the reads of every kind MultiKueue uses (`worker_rules`: get, list, watch, cluster-wide, since the manager
    watches every namespace of the worker) and its ClusterRoleBinding; and in each namespace the stack dispatches to
    the worker (`dispatched_namespaces`) a Role with the writes (`worker_namespace_rules`: create, delete, update,
    patch) and its RoleBinding, so the credential the manager holds can write nowhere else on the worker (issue 38:
    cluster-wide create and delete of pods, Jobs, JobSets and TrainJobs made it an administrator in disguise). The
    ServiceAccount carries this stack's mark (`owner`, annotation `kueue-cohorts/owner`) when given, which the
    preflight reads (`components.stack.preflight.account_problems`)."""
    namespace = settings.kueue.namespace
    name = role_name(worker)
    subjects = [{"kind": "ServiceAccount", "name": worker.service_account, "namespace": namespace}]
    gates = settings.kueue.feature_gates
    writes = worker_namespace_rules(settings.kueue.integrations, gates)
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": worker.service_account, "namespace": namespace, "labels": _labels(),
                      **({"annotations": {OWNER_ANNOTATION: owner}} if owner else {})}},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": {"name": name, "labels": _labels()},
         "rules": worker_rules(settings.kueue.integrations, gates)},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding", "metadata": {"name": name, "labels": _labels()},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": subjects},
    ]
    for ns in dispatched_namespaces(settings, worker):
        meta = {"name": name, "namespace": ns, "labels": _labels()}
        out += [{"apiVersion": RBAC_API_VERSION, "kind": "Role", "metadata": dict(meta), "rules": writes},
                {"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding", "metadata": dict(meta),
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                 "subjects": list(subjects)}]
    return out


def kubeconfig_secret(settings: Settings, worker: MultiKueueWorker) -> dict[str, Any]:
    """The kubeconfig Secret of `worker` as the stack registers it, without its data: the deploy adds
    `stringData.kubeconfig` from the worker's kubeconfig as a Pulumi secret (components/resources/multikueue.py)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": worker.secret.resolved_name(worker.name), "namespace": settings.kueue.namespace,
                         "labels": _labels(worker.name)}}


def cluster_manifest(worker: MultiKueueWorker) -> dict[str, Any]:
    """The MultiKueueCluster of `worker`: `spec.clusterSource.kubeConfig` with locationType Secret."""
    return {"apiVersion": API_VERSION, "kind": "MultiKueueCluster",
            "metadata": {"name": worker.name, "labels": _labels(worker.name), "annotations": dict(PATCH_FORCE)},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                      "location": worker.secret.resolved_name(worker.name)}}}}


def config_manifest(name: str, workers: list[str]) -> dict[str, Any]:
    """The MultiKueueConfig `name` with `spec.clusters` = `workers` in dispatch order."""
    return {"apiVersion": API_VERSION, "kind": "MultiKueueConfig",
            "metadata": {"name": name, "labels": _labels(), "annotations": dict(PATCH_FORCE)},
            "spec": {"clusters": list(workers)}}


def admission_check_manifest(name: str) -> dict[str, Any]:
    """The AdmissionCheck `name` of controller `kueue.x-k8s.io/multikueue`, its parameters the MultiKueueConfig of
    the same name."""
    return {"apiVersion": API_VERSION, "kind": "AdmissionCheck",
            "metadata": {"name": name, "labels": _labels(), "annotations": dict(PATCH_FORCE)},
            "spec": {"controllerName": CONTROLLER_NAME,
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": name}}}


def admission_checks(settings: Settings) -> dict[str, tuple[int, str]]:
    """ClusterQueue name -> (index of its `multiKueue.dispatch` entry, its AdmissionCheck name), for the first entry
    of each queue (the settings check refuses a second)."""
    out: dict[str, tuple[int, str]] = {}
    if settings.multi_kueue is not None:
        for index, entry in enumerate(settings.multi_kueue.dispatch):
            out.setdefault(entry.cluster_queue, (index, entry.check_name()))
    return out


def writes_secret(settings: Settings, worker: MultiKueueWorker) -> bool:
    """Whether the stack registers `worker`'s kubeconfig Secret: in sandbox mode always (from the worker sandbox),
    in kubeconfig mode when `secret.fromFile` is set, never in render mode."""
    mode = settings.cluster.mode.value
    return mode == "sandbox" or (mode == "kubeconfig" and worker.secret.from_file is not None)


def worker_settings(settings: Settings, worker: MultiKueueWorker) -> Settings:
    """The stack as `worker` runs it: the same flavors, cohorts, LocalQueues, namespaces, checkpoint volumes and
    training runtime; the worker's nodePools (default the stack's); no Kueue installation (the worker runs its own
    Kueue), no InferenceServices (they serve where the stack targets), no MultiKueue, no preview identity."""
    update: dict[str, Any] = {"node_pools": list(worker.node_pools or settings.node_pools), "multi_kueue": None,
                              "preview_identity": None,
                              "kueue": settings.kueue.model_copy(update={"install": False})}
    layout = settings.inference_training
    if layout is not None and layout.inference.services:
        update["inference_training"] = layout.model_copy(
            update={"inference": layout.inference.model_copy(update={"services": []})})
    return settings.model_copy(update=update)
