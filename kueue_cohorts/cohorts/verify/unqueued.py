"""``verify``'s check for GPU pods Kueue never saw (issue 37, class 3): a live pod that holds GPUs on a node and that no
admitted Workload accounts for.

Kueue counts only what it admits. A Job or Pod without the ``kueue.x-k8s.io/queue-name`` label while
``manageJobsWithoutQueueName`` is false, any pod of a namespace ``managedJobsNamespaceSelector`` does not select, and
any pod of a kind no integration watches is never suspended or counted (Kueue v0.19.2
``pkg/controller/jobframework/reconciler.go``: namespace selector first, then the queue name), yet the kube-scheduler
places it on the GPU nodes the inference ClusterQueue's nominalQuota counts on. Inference is then admitted against
quota whose GPUs are taken and its pod stays Pending ("Insufficient nvidia.com/gpu").

A pod is accounted for when an admitted Workload (condition ``Admitted`` or ``QuotaReserved`` True, Kueue v0.19.2
``apis/kueue/v1beta2/workload_types.go``) in its namespace is owned by the pod itself (the pod integration) or by an
object on the pod's owner chain (Job, JobSet, ReplicaSet, StatefulSet: the batch/Job, JobSet, TrainJob, Deployment and
StatefulSet integrations put the Workload's ownerReference on the top-level job). Pods that terminate (with a
``deletionTimestamp``) are left out: an evicted victim's pods hold their GPUs only through their grace period.

Registered in :data:`LIVE_CHECKS` (``cohorts verify`` runs it after :data:`cohorts.verify.CHECKS`).
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping, Sequence

from kueue_cohorts.cohorts.verify import CHECKS, KUEUE_API, Check, Context, Difference, KindNotServed, Unreadable
from kueue_cohorts.components.settings import quantity
from kueue_cohorts.policy.rules.vocabulary.resource_values import is_extended_resource

#: The kinds whose ownerReferences lead from a pod to the object a Workload is owned by (apiVersion, kind).
OWNER_KINDS = (("batch/v1", "Job"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"),
               ("jobset.x-k8s.io/v1alpha2", "JobSet"))
#: Owner links followed from a pod (pod -> Job -> JobSet -> TrainJob is three).
OWNER_DEPTH = 4
RULE = ("holds GPUs no admitted Workload accounts for: Kueue never counted it (no queue-name label while "
        "manageJobsWithoutQueueName is false, a namespace Kueue does not manage, or a kind no integration watches), "
        "so inference is admitted against quota whose GPUs this pod has taken and its pod stays Pending")
FIX = ("fence the GPU nodes: taint them with a key that is no resource name (kueue-cohorts:nodePools[].taints; a "
       "taint keyed nvidia.com/gpu is tolerated by every pod asking for a GPU, ExtendedResourceToleration, kueue#170) "
       "and tolerate it only in the ResourceFlavor's tolerations (Kueue adds them to the pods it admits); or set "
       "kueue-cohorts:kueue.manageJobsWithoutQueueName true with a managedJobsNamespaceSelector selecting the "
       "tenant namespaces; then delete this pod or resubmit its job with the queue-name label")


def gpu_resources(ctx: Context) -> set[str]:
    """The extended resources (``nvidia.com/gpu``, ``nvidia.com/gpualloc``, ...) the stack counts: those of its
    nodePools' capacity and of its ClusterQueues' coveredResources (k8s.io/kubernetes v1.36.3
    ``pkg/apis/core/helper/helpers.go`` IsExtendedResourceName)."""
    names: set[str] = set()
    if ctx.settings is not None:
        for pool in ctx.settings.node_pools:
            names |= set(pool.capacity)
    for cq in ctx.expected_of("ClusterQueue"):
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            names |= set(group.get("coveredResources") or [])
    return {n for n in names if is_extended_resource(n)}


def gpu_requests(pod: Mapping[str, Any], resources: set[str]) -> dict[str, Decimal]:
    """What ``pod`` asks of ``resources``, summed over its containers (requests, else limits, as the API server
    defaults an extended resource's request from its limit) and at least its largest init container's; zero
    entries are left out."""
    spec = pod.get("spec") or {}

    def asked(container: Mapping[str, Any]) -> dict[str, Decimal]:
        res = container.get("resources") or {}
        both = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {k: quantity.parse(str(v)) for k, v in both.items() if k in resources}

    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for k, v in asked(container).items():
            total[k] = total.get(k, Decimal(0)) + v
    for container in spec.get("initContainers") or []:
        for k, v in asked(container).items():
            total[k] = max(total.get(k, Decimal(0)), v)
    return {k: v for k, v in total.items() if v > 0}


def _list(ctx: Context, api_version: str, kind: str) -> list[dict[str, Any]]:
    try:
        return ctx.list(api_version, kind)
    except (KindNotServed, Unreadable):
        return []


def _meta(obj: Mapping[str, Any], key: str) -> Any:
    return (obj.get("metadata") or {}).get(key)


def _admitted(workload: Mapping[str, Any]) -> bool:
    return any(c.get("type") in ("Admitted", "QuotaReserved") and c.get("status") == "True"
               for c in (workload.get("status") or {}).get("conditions") or [])


def owner_chain(pod: Mapping[str, Any], owners: Mapping[str, set[str]]) -> set[str]:
    """The uids of ``pod`` and of every object up its ownerReferences (``owners``: uid -> owner uids), at most
    :data:`OWNER_DEPTH` links."""
    found = {str(_meta(pod, "uid"))} | {str(r.get("uid")) for r in _meta(pod, "ownerReferences") or []}
    frontier = set(found)
    for _ in range(OWNER_DEPTH):
        frontier = set().union(*(owners.get(uid, set()) for uid in frontier)) if frontier else set()
        found |= frontier
    return found


def unqueued_gpu_pods(ctx: Context) -> list[Difference]:
    """One Difference per live pod that is bound to a node, not terminal and not terminating, asks for a GPU
    resource of the stack (:func:`gpu_resources`) and has no admitted Workload of its namespace owned by it or by
    its owner chain. ``live`` names the node and what it holds; a Workload or Pod list that cannot be read is one
    Difference (fail closed)."""
    resources = gpu_resources(ctx)
    if not resources:
        return []
    out: list[Difference] = []
    try:
        pods = ctx.list("v1", "Pod")
        workloads = ctx.list(KUEUE_API, "Workload")
    except (KindNotServed, Unreadable) as err:
        return [Difference("Pod", "*", "", "", "readable", None,
                           f"pods or Workloads cannot be listed ({err}): GPU pods Kueue never saw cannot be checked")]
    holding = [p for p in pods if (p.get("spec") or {}).get("nodeName") and not _meta(p, "deletionTimestamp")
               and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
               and gpu_requests(p, resources)]
    if not holding:
        return out
    owners: dict[str, set[str]] = {}
    for api_version, kind in OWNER_KINDS:
        for obj in _list(ctx, api_version, kind):
            owners[str(_meta(obj, "uid"))] = {str(r.get("uid")) for r in _meta(obj, "ownerReferences") or []}
    admitted: dict[str, set[str]] = {}
    for wl in workloads:
        if _admitted(wl):
            admitted.setdefault(str(_meta(wl, "namespace")), set()).update(
                str(r.get("uid")) for r in _meta(wl, "ownerReferences") or [])
    for pod in holding:
        namespace = str(_meta(pod, "namespace") or "")
        if owner_chain(pod, owners) & admitted.get(namespace, set()):
            continue
        held = {k: _plain(v) for k, v in sorted(gpu_requests(pod, resources).items())}
        out.append(Difference("Pod", str(_meta(pod, "name")), namespace, "spec.nodeName", None,
                              {"node": pod["spec"]["nodeName"], **held}, RULE, fix=FIX))
    return out


def _plain(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value)


#: Every check ``cohorts verify`` runs on the stack's own cluster: the base checks, then the live-only ones.
LIVE_CHECKS: Sequence[Check] = (*CHECKS, unqueued_gpu_pods)
