"""GPU pods Kueue never sees (issue 37, class 3): is every GPU node fenced so that only the pods Kueue admits run there?

Kueue counts only what it admits: with `manageJobsWithoutQueueName: false` a Job or Pod without the queue-name label
in a tenant namespace runs outside Kueue, and so does any pod of a namespace `managedJobsNamespaceSelector` does not
select (Kueue v0.19.2 `pkg/controller/jobframework/reconciler.go`). The kube-scheduler places such a pod on the GPU
nodes inference's nominalQuota counts on; inference is then admitted and its pod stays Pending.

Kueue's own fence (kueue#1233, #1248; `site/content/en/docs/concepts/resource_flavor.md`, v0.19.2): taint the GPU
nodes and put the matching toleration in the ResourceFlavor's `tolerations`, which Kueue adds to the pods it admits
(`pkg/podset/podset.go`); a flavor's `nodeTaints` only filter admission and add nothing to the pods. A taint keyed by
an extended resource name (`nvidia.com/gpu`) is no fence: Kubernetes' ExtendedResourceToleration admission plugin
(v1.36.3 `plugin/pkg/admission/extendedresourcetoleration/admission.go`) gives every pod that requests that resource
a toleration for it (kueue#170). Only NoSchedule and NoExecute keep pods off (PreferNoSchedule does not).

Two findings, each with its exact key and fix:
- `check_fenced_nodes_open_to_kueue` (mandatory): a GPU pool's fence taint that a ResourceFlavor placing pods on the
  pool does not tolerate: Kueue admits against that quota and the scheduler refuses every pod it admits.
- `gpu_nodes_fenced` (advisory: a warning printed by `kueue-cohorts validate` and by the program) on a GPU pool with
  no fence: with `manageJobsWithoutQueueName` false the tenant namespaces' unlabelled Jobs and Pods take its GPUs;
  with it true, pods of every namespace Kueue does not manage still can. It stays a warning until every stack of
  the project (and the sandbox's node pools the end-to-end stacks share) carries the fence; the guide's stacks
  that run on real clusters (staging, prod) carry it.
"""
from __future__ import annotations

from typing import Sequence

from kueue_cohorts.components.settings import NodePool, Settings, stack_key
from kueue_cohorts.components.settings.cluster import Taint, Toleration
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.policy.rules.vocabulary.resource_values import is_extended_resource

#: Taint effects that keep a pod without the toleration off the node (core/v1 TaintEffect).
FENCING_EFFECTS = ("NoSchedule", "NoExecute")
#: The fence the guide writes: a taint keyed by no resource name, tolerated by the GPU ResourceFlavors only.
GUIDE_TAINT = {"key": "kueue-cohorts/gpu", "value": "true", "effect": "NoSchedule"}
EMPTY = '""'
GUIDE_TOLERATION = {"key": "kueue-cohorts/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether ``toleration`` tolerates ``taint`` (k8s.io/api v0.36.3 core/v1 ``Toleration.ToleratesTaint``: an
    empty effect matches every effect; an empty key with operator Exists matches every taint; Exists ignores the
    value, Equal compares it, absent value meaning "")."""
    if toleration.effect is not None and toleration.effect != taint.effect:
        return False
    if toleration.key is not None and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return (toleration.value or "") == (taint.value or "")


def gpu_resources(pool: NodePool) -> list[str]:
    """The extended resources (GPUs and their slices) of ``pool``'s capacity, in its order."""
    return [r for r in pool.capacity if is_extended_resource(r)]


def fences(pool: NodePool) -> list[Taint]:
    """The taints of ``pool`` that keep a pod Kueue did not admit off its nodes: NoSchedule or NoExecute, keyed by
    none of the pool's resources (ExtendedResourceToleration tolerates a taint keyed by an extended resource for every
    pod that requests that resource, and a pod can only run here asking for what the nodes offer, kueue#170)."""
    return [t for t in pool.taints if t.effect in FENCING_EFFECTS and t.key not in pool.capacity]


def flavor_tolerations(settings: Settings) -> dict[str, tuple[str, Sequence[Toleration]]]:
    """Each ResourceFlavor of the stack -> (the config key of its tolerations, its tolerations)."""
    if settings.resource_flavors:
        return {f.name: (stack_key("resourceFlavors", i, "tolerations"), f.tolerations)
                for i, f in enumerate(settings.resource_flavors)}
    flavor = settings.resource_flavor
    return {flavor.name: (stack_key("resourceFlavor", "tolerations"), flavor.tolerations)}


def _pool_flavors(settings: Settings, pool: NodePool) -> list[str]:
    return [name for name in settings.flavor_names() if pool in settings.pools_of(name)]


def _flow(item: dict[str, str]) -> str:
    """``item`` as a YAML flow mapping, the way a stack file writes it (``{key: a, value: "true", ...}``)."""
    return "{" + ", ".join(f'{k}: "{v}"' if v in ("true", "false") else f"{k}: {v}" for k, v in item.items()) + "}"


def _toleration_for(taint: Taint) -> dict[str, str]:
    return {"key": taint.key, "operator": "Equal", "value": taint.value or EMPTY, "effect": taint.effect}


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"


def check_fenced_nodes_open_to_kueue(settings: Settings) -> list[Problem]:
    """One problem per (ResourceFlavor, GPU pool it places pods on, fence taint of that pool) the flavor's
    tolerations do not tolerate: Kueue would admit workloads against quota on nodes none of its pods may use."""
    problems: list[Problem] = []
    tolerations = flavor_tolerations(settings)
    for pool in settings.node_pools:
        if not gpu_resources(pool):
            continue
        for flavor in _pool_flavors(settings, pool):
            key, have = tolerations[flavor]
            for taint in fences(pool):
                if any(tolerates(t, taint) for t in have):
                    continue
                problems.append(Problem(
                    key, [t.model_dump(by_alias=True, exclude_none=True) for t in have],
                    f"the nodes of pool '{pool.name}' carry the taint {_taint_text(taint)} and ResourceFlavor "
                    f"'{flavor}' places pods there without tolerating it: Kueue admits against that quota and the "
                    "scheduler refuses every pod it admits",
                    f"add {_flow(_toleration_for(taint))} to {key} (Kueue adds a flavor's "
                    "tolerations to the pods it admits)"))
    return problems


def gpu_nodes_fenced(settings: Settings) -> list[Problem]:
    """One finding per GPU pool without a fence (:func:`fences`), at `nodePools[i].taints`: what gets onto its GPUs
    around Kueue, and the fixes (taint + flavor toleration; or manageJobsWithoutQueueName with a namespace selector,
    which leaves other namespaces open)."""
    problems: list[Problem] = []
    tolerations = flavor_tolerations(settings)
    open_tenants = not settings.kueue.manage_jobs_without_queue_name
    for i, pool in enumerate(settings.node_pools):
        gpus = gpu_resources(pool)
        if not gpus or fences(pool):
            continue
        flavors = _pool_flavors(settings, pool)
        keyed = [t for t in pool.taints if t.key in pool.capacity]
        why = (f" (its taint {_taint_text(keyed[0])} is keyed by a resource name, and Kubernetes' "
               "ExtendedResourceToleration admission plugin tolerates it for every pod asking for that resource, "
               "kueue#170)") if keyed else ""
        who = ("a Job or Pod without the queue-name label in a tenant namespace (kueue.manageJobsWithoutQueueName "
               "is false), or any pod of a namespace Kueue does not manage," if open_tenants else
               "any pod of a namespace Kueue does not manage (managedJobsNamespaceSelector) or of a kind no "
               "integration watches")
        where = ", ".join(tolerations[f][0] for f in flavors) or next(iter(tolerations.values()))[0]
        problems.append(Problem(
            stack_key("nodePools", i, "taints"), [t.model_dump(by_alias=True, exclude_none=True) for t in pool.taints],
            f"the GPU nodes of pool '{pool.name}' are not fenced{why}: {who} is placed on them without Kueue and "
            f"takes the {', '.join(gpus)} inference's nominalQuota counts on; inference is then admitted and its pod "
            "stays Pending",
            f"set {stack_key('nodePools', i, 'taints')}: [{_flow(GUIDE_TAINT)}] (and taint the real nodes so) and add "
            f"{_flow(GUIDE_TOLERATION)} to {where}, so that only the pods Kueue admits tolerate it"
            + (f"; or set {stack_key('kueue', 'manageJobsWithoutQueueName')}: true with a managedJobsNamespaceSelector "
               "selecting the tenant namespaces (other namespaces stay open)" if open_tenants else "")))
    return problems


def check(settings: Settings) -> list[Problem]:
    """The mandatory findings (:func:`check_fenced_nodes_open_to_kueue`)."""
    return check_fenced_nodes_open_to_kueue(settings)


def advise(settings: Settings) -> list[Problem]:
    """The advisory findings, returned as warnings (:func:`gpu_nodes_fenced`)."""
    return gpu_nodes_fenced(settings)
