"""MULTIKUEUE_WORKERS_READY: every worker a ClusterQueue dispatches to has what a dispatched workload needs.

A ClusterQueue on the manager dispatches when its `spec.admissionChecksStrategy` names an AdmissionCheck of
controller `kueue.x-k8s.io/multikueue`; the check's MultiKueueConfig lists the MultiKueueClusters (workers) in
dispatch order. Kueue then creates the workload, and its job, on a worker in the same namespace with the same
queue-name label, and watches them there. So every worker must have the namespaces, LocalQueues and TrainingRuntimes
of the dispatching queue's namespaces, and RBAC for the identity the manager's Kueue acts as on Workloads and on every
enabled job kind with a MultiKueue adapter: its reads cluster-wide, its writes in each namespace the queue dispatches
from (`vocabulary.multikueue.READ_VERBS`; Kueue v0.19.2 pkg/controller/admissionchecks/multikueue/
multikueuecluster.go `updateConfigAndRefreshWatchers`: one refused watch makes the MultiKueueCluster inactive, the
AdmissionCheck with it, and the ClusterQueue stops admitting anything). The table of what each kind needs and the
cluster of each provider are `vocabulary/multikueue.py`.

Scope: across clusters (`Scope.CLUSTERS`): the check takes `{cluster: objects}`, `vocabulary.multikueue.MANAGER` for
the stack's own cluster and a worker's name for the objects of provider `k8s-worker-<name>`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .vocabulary.declaration import Declaration, Level, Option, Promise, Scope, mapping, names
from .vocabulary.multikueue import (
    DEFAULT_SERVICE_ACCOUNT,
    MANAGER,
    dispatches,
    granted,
    manager_frameworks,
    missing_access,
    rule_text,
)
from .vocabulary.objects import KubeObject, ref
from .vocabulary.values import MISSING, Violation, get

SERVICE_ACCOUNTS = mapping(
    "serviceAccounts", {"type": "string"},
    "MultiKueue worker name -> `<namespace>/<name>` of the ServiceAccount the manager's Kueue acts as there "
    "(default kueue-system/multikueue).")
INTEGRATIONS = names(
    "integrations",
    "The manager's Kueue integrations (integrations.frameworks). Empty: those of a Kueue manager Configuration in the "
    "stack, else the project's default integrations.")
FEATURE_GATES: Option[dict[str, Any]] = mapping(
    "featureGates", {"type": "boolean"},
    "The manager's Kueue feature gates (they add verbs: ElasticJobsViaWorkloadSlices, "
    "MultiKueueOrchestratedPreemption).")


def check_workers_ready(clusters: Mapping[str, Sequence[KubeObject]], options: Mapping[str, Any]) -> list[Violation]:
    """Judge every dispatching ClusterQueue of the manager (`clusters[MANAGER]`) against each of its workers that the
    stack also targets (`clusters[<worker>]`; a worker the stack does not reach is left to `cohorts verify`).

    Args:
        clusters: cluster key -> its objects (MANAGER for the stack's own cluster).
        options: the policy's options: `serviceAccounts` (worker -> `<namespace>/<name>` of the identity the manager's
            Kueue acts as, default DEFAULT_SERVICE_ACCOUNT), `integrations` and `featureGates` (see
            `manager_frameworks`).
    Returns:
        One violation per missing namespace, LocalQueue, TrainingRuntime and per job kind whose RBAC is short, each on
        the dispatching ClusterQueue at `spec.admissionChecksStrategy`, naming the worker and what to add.
    """
    manager = clusters.get(MANAGER, ())
    frameworks, gates = manager_frameworks(manager, INTEGRATIONS.read(options), FEATURE_GATES.read(options))
    accounts = {str(k): str(v) for k, v in SERVICE_ACCOUNTS.read(options).items()}
    found: list[Violation] = []
    for dispatch in dispatches(manager):
        queue = dispatch.queue
        local_queues = [(lq.namespace, lq.name) for lq in manager if lq.is_kueue("LocalQueue")
                        and get(lq.spec, "clusterQueue") == queue.name]
        namespaces = {ns for ns, _ in local_queues}
        made = {obj.name for obj in manager if obj.kind in ("Namespace", "NamespacePatch") and not obj.group}
        runtimes = {(obj.namespace, obj.name) for obj in manager
                    if obj.is_kind("trainer.kubeflow.org", "TrainingRuntime") and obj.namespace in namespaces}
        for worker in dispatch.workers:
            if worker not in clusters:
                continue
            objects = clusters[worker]
            have_ns = {obj.name for obj in objects if obj.kind in ("Namespace", "NamespacePatch") and not obj.group}
            have_lq = {(obj.namespace, obj.name) for obj in objects if obj.is_kueue("LocalQueue")}
            have_rt = {(obj.namespace, obj.name) for obj in objects
                       if obj.is_kind("trainer.kubeflow.org", "TrainingRuntime")}
            where = f"worker '{worker}'"
            for ns in sorted(n for n in namespaces if n in made and n not in have_ns and n is not None):
                found.append(_violation(queue, where, f"the namespace {ns}",
                                        f"a dispatched workload is created on the worker in namespace {ns}",
                                        f"register the Namespace {ns} on the worker"))
            for ns, name in sorted((n or "", m) for n, m in local_queues if (n, m) not in have_lq):
                found.append(_violation(queue, where, f"the LocalQueue {ns}/{name}",
                                        "the worker's Kueue admits a dispatched workload through the LocalQueue of "
                                        "the same namespace and name", f"register the LocalQueue {ns}/{name} on the "
                                        "worker"))
            for ns, name in sorted((n or "", m) for n, m in runtimes if (n, m) not in have_rt):
                found.append(_violation(queue, where, f"the TrainingRuntime {ns}/{name}",
                                        "a dispatched TrainJob names its runtime in its own namespace",
                                        f"register the TrainingRuntime {ns}/{name} on the worker"))
            subject = accounts.get(worker, DEFAULT_SERVICE_ACCOUNT)
            for access, verbs in missing_access(granted(objects, subject), frameworks, gates, "read"):
                found.append(_violation(
                    queue, where, f"RBAC for {access.resource} ({', '.join(verbs)}) of ServiceAccount "
                    f"{subject}", f"the manager's Kueue calls {', '.join(verbs)} on {access.resource} in every "
                    f"namespace of the worker ({access.upstream}, Kueue v0.19.2); one refused watch makes the "
                    "MultiKueueCluster, the AdmissionCheck and this ClusterQueue inactive",
                    f"grant the ServiceAccount {subject} the ClusterRole rule {rule_text(access, verbs)}"))
            for ns in sorted(n for n in namespaces if n is not None):
                rules = granted(objects, subject, ns)
                for access, verbs in missing_access(rules, frameworks, gates, "write"):
                    found.append(_violation(
                        queue, where, f"RBAC for {access.resource} ({', '.join(verbs)}) of ServiceAccount {subject} "
                        f"in namespace {ns}", f"the manager's Kueue calls {', '.join(verbs)} on {access.resource} "
                        f"of the workloads it dispatches there ({access.upstream}, Kueue v0.19.2)",
                        f"grant the ServiceAccount {subject} the rule {rule_text(access, verbs)} by a Role and "
                        f"RoleBinding in {ns} (never cluster-wide: writes in every namespace make the worker "
                        "credential an administrator of the worker)"))
    return found


def _violation(queue: KubeObject, where: str, what: str, why: str, fix: str) -> Violation:
    return Violation(f"The {queue.describe()} dispatches to {where}, which lacks {what}: {why}. Fix: {fix}.",
                     queue.urn or None, ref(queue), "spec.admissionChecksStrategy", MISSING,
                     f"{where} lacks {what}: {why}", fix, MULTIKUEUE_WORKERS_READY.name)


MULTIKUEUE_WORKERS_READY: Declaration = Declaration(
    name="multikueue-workers-ready",
    description="Every worker a ClusterQueue dispatches to (MultiKueue) has its namespaces, LocalQueues and training "
                "runtimes, and lets the manager's Kueue reach every job kind it dispatches or watches.",
    promise=Promise.KUEUE_COUNTS, level=Level.MANDATORY, scope=Scope.CLUSTERS,
    check=check_workers_ready, options=(SERVICE_ACCOUNTS, INTEGRATIONS, FEATURE_GATES))
