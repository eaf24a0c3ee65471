"""The rules that judge the stack config itself, where no rendered object carries the fault.

Everything that can be judged on a rendered object is the rule book's (`policy/rules/`, run by
`components/checks/validation.py`); what stays here is about the config as written: keys that only make sense together
(renderDir with mode render), names a stack uses twice, quota keys for resources the cohort does not cover (they
would be dropped silently when rendering), floors that must name the same resources, Kueue settings that only take
effect through the Kueue manager. Each check is a small function taking the settings and returning Problems with the
exact key path (list indexes included), the value, the rule and its own fix.

Semantics: Kueue kueue.x-k8s.io/v1beta2 (site/content/en/docs/concepts/cluster_queue.md, preemption.md).
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Callable, Mapping, Optional

from kueue_cohorts.components.checks import multikueue_rules, security_rules
from kueue_cohorts.components.checks.repeats import repeats
from kueue_cohorts.components.model.plans import common_labels, plan_inference_training, shared_pool_totals
from kueue_cohorts.components.model.services import deployment_strategy
from kueue_cohorts.components.settings import (
    DEFAULT_FRAMEWORKS,
    KUEUE_FRAMEWORKS,
    BorrowWithinCohortPolicy,
    ClusterMode,
    Preemption,
    PreviewIdentityCreate,
    PreviewSubjectKind,
    ReclaimWithinCohort,
    ResourceFlavorSettings,
    Settings,
    quantity,
    stack_key,
)
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.components.settings.runtime import DNS_SUBDOMAIN, MIN_GRACE_SECONDS
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import COHORT_NOMINAL_WITHIN_CAPACITY
from kueue_cohorts.policy.rules.quantities import QUANTITIES
from kueue_cohorts.policy.rules.reclaim_within_budget import RECLAIM_WITHIN_BUDGET
from kueue_cohorts.policy.rules.vocabulary.resource_values import quantity_problem
from kueue_cohorts.policy.rules.vocabulary.system_namespaces import DEFAULT_PROTECTED_NAMESPACES

IT = "inferenceTraining"
SP = "sharedPool"

Check = Callable[[Settings], list[Problem]]


def _q(value: Optional[str]) -> Decimal:
    return quantity.parse(value) if value is not None else Decimal(0)


def check_cluster_target(settings: Settings) -> list[Problem]:
    """renderDir only and always with mode render; kubeconfig/context only with mode kubeconfig; kubeClientSettings
    only with an API server (not render)."""
    cluster = settings.cluster
    problems = []
    if cluster.mode == ClusterMode.RENDER and not cluster.render_dir:
        problems.append(Problem(stack_key("cluster", "renderDir"), "<absent>",
                                "render mode writes manifests to a directory",
                                "set renderDir (relative to the project root)"))
    if cluster.mode != ClusterMode.RENDER and cluster.render_dir:
        problems.append(Problem(stack_key("cluster", "renderDir"), cluster.render_dir,
                                f"renderDir only applies to mode render (mode is {cluster.mode.value})",
                                "remove renderDir or set mode: render"))
    for name, value in (("kubeconfig", cluster.kubeconfig), ("context", cluster.context)):
        if cluster.mode != ClusterMode.KUBECONFIG and value:
            problems.append(Problem(stack_key("cluster", name), value,
                                    f"{name} only applies to mode kubeconfig (mode is {cluster.mode.value})",
                                    f"remove {name} or set mode: kubeconfig"))
    if cluster.mode == ClusterMode.RENDER and cluster.kube_client_settings is not None:
        problems.append(Problem(stack_key("cluster", "kubeClientSettings"),
                                cluster.kube_client_settings.model_dump(by_alias=True, exclude_unset=True),
                                "kubeClientSettings only applies to an API server (mode is render)",
                                "remove kubeClientSettings or set mode: sandbox or kubeconfig"))
    return problems


def check_node_capacity(settings: Settings) -> list[Problem]:
    """Every node pool's capacity passes the rule book's quantity rule (`resources.quantity_problem`: whole numbers for
    extended resources such as GPUs); node pools render no object, so the settings check applies it here."""
    problems = []
    for index, pool in enumerate(settings.node_pools):
        for resource, amount in pool.capacity.items():
            found = quantity_problem(resource, amount)
            if found is not None:
                rule, fix = found
                problems.append(Problem(stack_key("nodePools", index, "capacity", resource), amount, rule, fix,
                                        QUANTITIES.name))
    return problems


def check_some_layout(settings: Settings) -> list[Problem]:
    """A stack declares at least one cohort layout."""
    if settings.inference_training is None and settings.shared_pool is None:
        return [Problem(stack_key(IT), "<absent>", "a stack needs at least one cohort layout",
                        "add kueue-cohorts:inferenceTraining (asymmetric) and/or kueue-cohorts:sharedPool (symmetric)")]
    return []


def _preemption(parts: tuple[Any, ...], preemption: Preemption) -> list[Problem]:
    bwc = preemption.borrow_within_cohort
    if bwc is not None and bwc.policy != BorrowWithinCohortPolicy.NEVER \
            and preemption.reclaim_within_cohort == ReclaimWithinCohort.NEVER:
        return [Problem(stack_key(*parts, "borrowWithinCohort", "policy"), bwc.policy.value,
                        "Kueue rejects borrowWithinCohort.policy other than Never when reclaimWithinCohort is Never",
                        "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never")]
    return []


def check_preemption(settings: Settings) -> list[Problem]:
    """borrowWithinCohort needs reclaimWithinCohort other than Never (Kueue's ClusterQueue webhook)."""
    problems = []
    if settings.inference_training is not None:
        it = settings.inference_training
        problems += _preemption((IT, "inference", "preemption"), it.inference.preemption)
        problems += _preemption((IT, "training", "preemption"), it.training.preemption)
    if settings.shared_pool is not None:
        problems += _preemption((SP, "preemption"), settings.shared_pool.preemption)
    return problems


def _uncovered(parts: tuple[Any, ...], values: Optional[Mapping[str, str]], covered: set[str]) -> list[Problem]:
    return [Problem(stack_key(*parts, resource), amount,
                    f"'{resource}' is not a covered resource of this cohort ({', '.join(sorted(covered))}), so the "
                    "value would never be rendered",
                    f"remove it, or add '{resource}' to the nominalQuota that defines the covered resources")
            for resource, amount in (values or {}).items() if resource not in covered]


def _inference_bases(it: Any) -> list[tuple[tuple[Any, ...], Any, Mapping[str, str],
                                             Optional[Mapping[str, str]], Optional[Mapping[str, str]]]]:
    """(key base, flavor name or None, nominalQuota, borrowingLimit, lendingLimit) per inference flavor."""
    inf = it.inference
    if inf.flavors:
        return [((IT, "inference", "flavors", i), f.name, f.nominal_quota, f.borrowing_limit, f.lending_limit)
                for i, f in enumerate(inf.flavors)]
    return [((IT, "inference"), None, inf.nominal_quota or {}, inf.borrowing_limit, inf.lending_limit)]


def check_inference_training_keys(settings: Settings) -> list[Problem]:
    """The asymmetric layout's quota keys name covered resources; inference owns (nominalQuota > 0) each of them
    (in every flavor); lendingLimit <= nominalQuota; services have minReplicas <= maxReplicas."""
    it = settings.inference_training
    if it is None:
        return []
    inf, trn = it.inference, it.training
    bases = _inference_bases(it)
    covered = {r for _, _, nominal, _, _ in bases for r in nominal}
    problems: list[Problem] = []
    for base, _, _, borrowing, lending in bases:
        problems += _uncovered(base + ("borrowingLimit",), borrowing, covered)
        problems += _uncovered(base + ("lendingLimit",), lending, covered)
    problems += _uncovered((IT, "training", "borrowingLimit"), trn.borrowing_limit, covered)
    for i, flavor in enumerate(trn.flavors or []):
        problems += _uncovered((IT, "training", "flavors", i, "borrowingLimit"), flavor.borrowing_limit, covered)
    problems += _uncovered((IT, "cohortQuota"), it.cohort_quota, covered)
    for i, flavor in enumerate(it.cohort_flavors or []):
        problems += _uncovered((IT, "cohortFlavors", i, "nominalQuota"), flavor.nominal_quota, covered)
    for base, flavor_name, nominal, _, lending in bases:
        if flavor_name is not None:
            for resource in sorted(covered - set(nominal)):
                problems.append(Problem(
                    stack_key(*base, "nominalQuota", resource), "<absent>",
                    "every inference flavor must name every covered resource of the cohort with a nominalQuota "
                    "above 0 (Kueue lists each covered resource in each flavor; inference never borrows, so a "
                    "missing one would be 0)", f"add '{resource}' to this flavor's nominalQuota"))
        for resource, amount in nominal.items():
            if _q(amount) == 0:
                on_cohort = flavor_name is None and bool(it.cohort_quota) and \
                    _q((it.cohort_quota or {}).get(resource)) > 0
                problems.append(Problem(
                    stack_key(*base, "nominalQuota", resource), amount,
                    "inference's guaranteed quota must be the inference ClusterQueue's own nominalQuota: reclaim only "
                    "protects a queue's own nominalQuota and a 0-nominal queue always counts as borrowing"
                    + (" (the quota sits on the Cohort object's cohortQuota instead)" if on_cohort else ""),
                    "move the quota from cohortQuota to inference.nominalQuota" if on_cohort
                    else "give inference a nominalQuota above 0, or drop the resource from the cohort"))
        for resource, amount in (lending or {}).items():
            if resource in covered and _q(amount) > _q(nominal.get(resource)):
                problems.append(Problem(stack_key(*base, "lendingLimit", resource), amount,
                                        f"lendingLimit cannot exceed the nominalQuota {nominal.get(resource, '0')}",
                                        f"lower it to at most {nominal.get(resource, '0')}"))
    for index, service in enumerate(inf.services):
        if service.min_replicas > service.max_replicas:
            problems.append(Problem(stack_key(IT, "inference", "services", index, "minReplicas"), service.min_replicas,
                                    f"minReplicas cannot exceed maxReplicas {service.max_replicas}",
                                    "lower minReplicas or raise maxReplicas"))
        if service.deployment_mode == "RawDeployment" and deployment_strategy(
                service, plan_inference_training(it, settings.flavor_names()[0]).inference_nominal):
            problems.append(Problem(
                stack_key(IT, "inference", "services", index, "deploymentMode"), service.deployment_mode,
                "KServe v0.16 refuses an InferenceService annotated RawDeployment that carries a deploymentStrategy "
                "(its validator reads the legacy name as Knative mode), and this service needs one (a rollout, or "
                "maxSurge 0 because the default surge does not fit the inference nominalQuota)",
                "write deploymentMode: Standard (the same mode under KServe >= 0.16's name), or remove the key"))
    return problems


def _tenant_bases(sp: Any, index: int, tenant: Any) -> list[tuple[tuple[Any, ...], str, str, Mapping[str, str],
                                                                  Optional[Mapping[str, str]],
                                                                  Optional[Mapping[str, str]]]]:
    """(key base, flavor, name of the nominal key, nominal, borrowingLimit, lendingLimit) per tenant flavor."""
    base = (SP, "tenants", index)
    if tenant.flavors:
        return [(base + ("flavors", i), f.name, "nominalQuota", f.nominal_quota, f.borrowing_limit, f.lending_limit)
                for i, f in enumerate(tenant.flavors)]
    return [(base, "", "floor", tenant.floor or {}, tenant.borrowing_limit, tenant.lending_limit)]


def check_shared_pool_keys(settings: Settings) -> list[Problem]:
    """Every tenant's floor names the same resources; lendingLimit <= floor; floor + borrowingLimit <= pool total;
    borrowingLimit names covered resources; a tenant's priorityClass is one of sharedPool.priorityClasses. With
    `flavors`, each per flavor (the pool total of that flavor)."""
    sp = settings.shared_pool
    if sp is None:
        return []
    pools = shared_pool_totals(sp)
    covered = {r for total in pools.values() for r in total}
    defined = {pc.name for pc in sp.priority_classes}
    problems: list[Problem] = _uncovered((SP, "cohortQuota"), sp.cohort_quota, covered)
    for index, tenant in enumerate(sp.tenants):
        base = (SP, "tenants", index)
        for where, flavor, nominal_key, nominal, borrowing, lending in _tenant_bases(sp, index, tenant):
            pool = pools.get(flavor, {})
            for resource in sorted(covered - set(nominal)):
                problems.append(Problem(stack_key(*where, nominal_key, resource), "<absent>",
                                        "every tenant's floor must name the same resources (the cohort's covered "
                                        "resources)", f"add '{resource}': 0 to this tenant's {nominal_key}"
                                        if nominal_key != "floor" else f"add '{resource}': 0 to this tenant's floor"))
            for resource, amount in (lending or {}).items():
                floor = _q(nominal.get(resource))
                if _q(amount) > floor:
                    problems.append(Problem(stack_key(*where, "lendingLimit", resource), amount,
                                            f"lendingLimit cannot exceed the floor (nominalQuota) "
                                            f"{quantity.canonical(floor)}",
                                            f"lower it to at most {quantity.canonical(floor)}"))
            problems += _uncovered(where + ("borrowingLimit",), dict(borrowing or {}), covered)
            for resource, amount in (borrowing or {}).items():
                if resource not in covered:
                    continue
                total = pool.get(resource, Decimal(0))
                headroom = total - _q(nominal.get(resource))
                if _q(amount) > headroom:
                    problems.append(Problem(
                        stack_key(*where, "borrowingLimit", resource), amount,
                        f"floor + borrowingLimit cannot exceed the pool total {quantity.canonical(total)}"
                        + (f" of flavor '{flavor}'" if tenant.flavors else ""),
                        f"lower it to at most {quantity.canonical(headroom)} (pool total minus floor), or omit it for "
                        "that default"))
        if tenant.priority_class is not None and tenant.priority_class not in defined:
            problems.append(Problem(stack_key(*base, "priorityClass"), tenant.priority_class,
                                    "names a WorkloadPriorityClass the stack does not define",
                                    f"define it under kueue-cohorts:sharedPool.priorityClasses, or use one of "
                                    f"{sorted(defined)}"))
    return problems


def _one_of(parts: tuple[Any, ...], single: dict[str, Any], flavors: Any, required: str) -> list[Problem]:
    """The single-flavor keys (`single`: key -> value) and `flavors` are alternatives; `required` must be set
    unless `flavors` is."""
    problems = []
    if flavors:
        for name, value in single.items():
            if value is not None:
                problems.append(Problem(stack_key(*parts, name), value,
                                        f"{name} is a single-flavor key and this queue lists its quota per flavor",
                                        f"move it into the matching flavors[] entry (flavors[].{name})"
                                        if name != "floor" else "move it into flavors[].nominalQuota"))
    elif single.get(required) is None:
        problems.append(Problem(stack_key(*parts, required), "<absent>", "the queue needs its quota",
                                f"add {required} (the stack's one flavor), or flavors (quota per ResourceFlavor)"))
    return problems


def _flavor_list(parts: tuple[Any, ...], flavors: Any, declared: list[str], owns: bool = True,
                 limits: bool = True) -> list[Problem]:
    """A `flavors` list names declared ResourceFlavors, each once; `owns`/`limits`: whether nominalQuota /
    borrowingLimit and lendingLimit mean anything there."""
    problems = []
    seen: dict[str, int] = {}
    for i, flavor in enumerate(flavors or []):
        where = parts + (i,)
        if flavor.name not in declared:
            problems.append(Problem(stack_key(*where, "name"), flavor.name, "not a ResourceFlavor of the stack",
                                    f"use one of {', '.join(declared)} (kueue-cohorts:resourceFlavors)"))
        if flavor.name in seen:
            problems.append(Problem(stack_key(*where, "name"), flavor.name,
                                    f"the flavor is already listed at {stack_key(*parts, seen[flavor.name], 'name')} "
                                    "(Kueue: each flavor once per resource group)", "list each flavor once"))
        seen.setdefault(flavor.name, i)
        if not owns and any(_q(v) != 0 for v in flavor.nominal_quota.values()):
            problems.append(Problem(stack_key(*where, "nominalQuota"), dict(flavor.nominal_quota),
                                    "training owns nothing: it borrows the idle inference quota",
                                    "remove nominalQuota (give the quota to inference in this flavor)"))
        if not limits:
            for name, value in (("borrowingLimit", flavor.borrowing_limit), ("lendingLimit", flavor.lending_limit)):
                if value is not None:
                    problems.append(Problem(stack_key(*where, name), value,
                                            "a Cohort object's flavors only carry nominalQuota here",
                                            f"remove {name}"))
    return problems


def _flavors_select_their_nodes(settings: Settings) -> list[Problem]:
    """A declared flavor of several whose nodeLabels are omitted takes the labels its node pools share
    (`plans.common_labels`); with no pool naming it, or pools that share no label, it would render without
    nodeLabels and so select every node of the cluster (Kueue 0.19.2 `pkg/podset/podset.go` adds no nodeSelector),
    sharing the other flavors' nodes instead of standing for its own."""
    problems: list[Problem] = []
    if not settings.resource_flavors or len(settings.resource_flavors) < 2:
        return problems
    for index, declared in enumerate(settings.resource_flavors):
        if declared.node_labels is not None or common_labels(settings, declared.name):
            continue
        pools = settings.pools_of(declared.name)
        why = (f"no node pool names resourceFlavor '{declared.name}'" if not pools else
               f"its node pools ({', '.join(p.name for p in pools)}) share no label")
        problems.append(Problem(
            stack_key("resourceFlavors", index, "nodeLabels"), "<absent>",
            f"nodeLabels omitted means the labels the flavor's node pools share, but {why}, so the ResourceFlavor "
            "would have no nodeLabels and select every node of the cluster, sharing the other flavors' nodes",
            f"write the nodeLabels of the '{declared.name}' nodes, or set resourceFlavor: {declared.name} on node "
            "pools that carry a common label", COHORT_NOMINAL_WITHIN_CAPACITY.name))
    return problems


def check_flavors(settings: Settings) -> list[Problem]:
    """ResourceFlavors: resourceFlavor or resourceFlavors (not both), names unique; each node pool names a declared
    flavor (required with several); every `flavors` list names declared flavors once; the single-flavor quota keys
    and `flavors` are alternatives; training owns nothing in its flavors; cohortQuota or cohortFlavors."""
    problems: list[Problem] = []
    declared = settings.flavor_names()
    several = len(declared) > 1
    # Pulumi.yaml declares resourceFlavor with the default {}: the engine always passes it, so only a non-default
    # value is a second declaration.
    if settings.resource_flavors and settings.resource_flavor != ResourceFlavorSettings():
        problems.append(Problem(stack_key("resourceFlavor"), settings.resource_flavor.name,
                                "a stack declares either one resourceFlavor or the list resourceFlavors",
                                "move it into kueue-cohorts:resourceFlavors"))
    for name, parts, first in repeats((f.name, ("resourceFlavors", i, "name"))
                                       for i, f in enumerate(settings.resource_flavors or [])):
        problems.append(Problem(stack_key(*parts), name, f"the ResourceFlavor name '{name}' is already used at "
                                f"{stack_key(*first)}", "rename one of the ResourceFlavors"))
    for i, pool in enumerate(settings.node_pools):
        if pool.resource_flavor is None and several:
            problems.append(Problem(stack_key("nodePools", i, "resourceFlavor"), "<absent>",
                                    "the stack declares several ResourceFlavors: each node pool's capacity counts "
                                    "toward the flavor its nodes are", f"name one of {', '.join(declared)}"))
        elif pool.resource_flavor is not None and pool.resource_flavor not in declared:
            problems.append(Problem(stack_key("nodePools", i, "resourceFlavor"), pool.resource_flavor,
                                    "not a ResourceFlavor of the stack", f"use one of {', '.join(declared)}"))
    problems += _flavors_select_their_nodes(settings)
    it, sp = settings.inference_training, settings.shared_pool
    if it is not None:
        inf, trn = it.inference, it.training
        problems += _one_of((IT, "inference"), {"nominalQuota": inf.nominal_quota,
                                                "borrowingLimit": inf.borrowing_limit,
                                                "lendingLimit": inf.lending_limit}, inf.flavors, "nominalQuota")
        if trn.flavors and trn.borrowing_limit is not None:
            problems += _one_of((IT, "training"), {"borrowingLimit": trn.borrowing_limit}, trn.flavors,
                                "borrowingLimit")
        problems += _flavor_list((IT, "inference", "flavors"), inf.flavors, declared)
        problems += _flavor_list((IT, "training", "flavors"), trn.flavors, declared, owns=False)
        problems += _flavor_list((IT, "cohortFlavors"), it.cohort_flavors, declared, limits=False)
        if it.cohort_flavors and it.cohort_quota:
            problems.append(Problem(stack_key(IT, "cohortQuota"), dict(it.cohort_quota),
                                    "cohortQuota is the single-flavor form of cohortFlavors", "keep one of them"))
    if sp is not None:
        for i, tenant in enumerate(sp.tenants):
            base = (SP, "tenants", i)
            problems += _one_of(base, {"floor": tenant.floor, "borrowingLimit": tenant.borrowing_limit,
                                       "lendingLimit": tenant.lending_limit}, tenant.flavors, "floor")
            problems += _flavor_list(base + ("flavors",), tenant.flavors, declared)
        problems += _flavor_list((SP, "cohortFlavors"), sp.cohort_flavors, declared, limits=False)
        if sp.cohort_flavors and sp.cohort_quota:
            problems.append(Problem(stack_key(SP, "cohortQuota"), dict(sp.cohort_quota),
                                    "cohortQuota is the single-flavor form of cohortFlavors", "keep one of them"))
    return problems


def check_unique_names(settings: Settings) -> list[Problem]:
    """ClusterQueue names, WorkloadPriorityClass names, tenant names, tenant selectors and namespaces are used
    once across the whole stack (each namespace belongs to exactly one ClusterQueue's namespaceSelector).

    A tenant is its selector's label requirement, the pair (layout's namespaceLabel, tenant value), not the value
    alone: the same value under two different label keys is two selectors that no namespace label can make equal
    (and the rendered selectors pin disjoint namespace names; the rule book's CLUSTER_QUEUE_SELECTOR_OVERLAP judges
    their exact overlap)."""
    queues: list[tuple[str, tuple[Any, ...]]] = []
    priorities: list[tuple[str, tuple[Any, ...]]] = []
    namespaces: list[tuple[str, tuple[Any, ...]]] = []
    tenants: list[tuple[tuple[str, str], tuple[Any, ...]]] = []
    it, sp = settings.inference_training, settings.shared_pool
    if it is not None:
        for side, queue in (("inference", it.inference), ("training", it.training)):
            queues.append((queue.cluster_queue, (IT, side, "clusterQueue")))
            priorities.append((queue.priority_class.name, (IT, side, "priorityClass", "name")))
            namespaces += [(ns, (IT, side, "namespaces", i)) for i, ns in enumerate(queue.namespaces)]
            tenants.append(((it.namespace_label, queue.tenant or queue.cluster_queue),
                            (IT, side, "tenant") if queue.tenant else (IT, side, "clusterQueue")))
    if sp is not None:
        for i, tenant in enumerate(sp.tenants):
            base = (SP, "tenants", i)
            queues.append((tenant.cluster_queue_name,
                           base + ("clusterQueue",) if tenant.cluster_queue else base + ("name",)))
            tenants.append(((sp.namespace_label, tenant.name), base + ("name",)))
            namespaces += [(ns, base + ("namespaces", j) if tenant.namespaces else base + ("name",))
                           for j, ns in enumerate(tenant.namespace_names)]
        priorities += [(pc.name, (SP, "priorityClasses", i, "name")) for i, pc in enumerate(sp.priority_classes)]
    problems = []
    for what, items, fix in (
        ("ClusterQueue name", queues, "rename one of the ClusterQueues"),
        ("WorkloadPriorityClass name", priorities, "rename one of the WorkloadPriorityClasses"),
        ("namespace", namespaces, "list the namespace under one ClusterQueue only (each namespace belongs to exactly "
                                  "one ClusterQueue's namespaceSelector)"),
    ):
        for name, parts, first in repeats(items):
            problems.append(Problem(stack_key(*parts), name,
                                    f"the {what} '{name}' is already used at {stack_key(*first)}", fix))
    for (label, value), parts, first in repeats(tenants):
        problems.append(Problem(stack_key(*parts), value,
                                f"the tenant label value '{value}' of namespaceLabel {label} is "
                                f"already used at {stack_key(*first)}: both ClusterQueues would select {label}={value}",
                                "give each ClusterQueue its own tenant value (two ClusterQueues selecting the same "
                                "tenant label would share its namespaces)"))
    return problems


def check_kueue_integrations(settings: Settings) -> list[Problem]:
    """Kueue framework names are known. Whether the frameworks hold every kind the stack runs (Deployments for the
    inference queues, TrainJobs for a TrainingRuntime) is judged by the rule book's CLUSTER_QUEUE_COVERS_POD_RESOURCES
    on the rendered Configuration (policy/rules/cluster_queue_covers_pod_resources.py), for every kind."""
    kueue = settings.kueue
    return [Problem(stack_key("kueue", "integrations", i), framework, "not a Kueue integration framework",
                    f"use one of {', '.join(KUEUE_FRAMEWORKS)}")
            for i, framework in enumerate(kueue.integrations) if framework not in KUEUE_FRAMEWORKS]


def check_training_runtime_home(settings: Settings) -> list[Problem]:
    """A trainingRuntime lives in the training namespaces and mounts their checkpoint PVC."""
    layout = settings.inference_training
    if settings.training_runtime is not None and (layout is None or layout.training.checkpoint is None):
        return [Problem(stack_key("trainingRuntime"), "<set>",
                        "the preemptible TrainingRuntime lives in the training namespaces of "
                        "kueue-cohorts:inferenceTraining and mounts their checkpoint PVC",
                        "add inferenceTraining.training.checkpoint (claimName, storageClassName, size), or remove "
                        "trainingRuntime")]
    return []


def _tenant_namespaces(settings: Settings) -> list[str]:
    """Every tenant namespace of the stack's layouts (inference, training, shared-pool tenants)."""
    found: list[str] = []
    it, sp = settings.inference_training, settings.shared_pool
    if it is not None:
        found += list(it.inference.namespaces) + list(it.training.namespaces)
    if sp is not None:
        for tenant in sp.tenants:
            found += list(tenant.namespace_names)
    return found


_SA_NAMESPACE_FIX = "give the ServiceAccount a namespace of its own, e.g. kueue-cohorts-preview"


def check_preview_identity(settings: Settings) -> list[Problem]:
    """`previewIdentity` names a valid RBAC subject: a ServiceAccount has a DNS-1123 name and a namespace of its own
    (not a tenant namespace nor Kueue's, where whoever runs pods could use it; not a system namespace when the stack
    creates it); a User or Group has no namespace, creates nothing and is not one of Kubernetes' own `system:`
    names (Group system:authenticated is every signed-in user)."""
    identity = settings.preview_identity
    if identity is None:
        return []
    base = ("previewIdentity",)
    problems: list[Problem] = []
    create = identity.effective_create()
    if not identity.name.strip():
        problems.append(Problem(stack_key(*base, "name"), identity.name, "an RBAC subject needs a name",
                                f"write the {identity.kind.value}'s name"))
    if identity.kind != PreviewSubjectKind.SERVICE_ACCOUNT:
        if identity.namespace is not None:
            problems.append(Problem(stack_key(*base, "namespace"), identity.namespace,
                                    f"only a ServiceAccount has a namespace, a {identity.kind.value} does not",
                                    "remove namespace"))
        if create != PreviewIdentityCreate.NOTHING:
            problems.append(Problem(stack_key(*base, "create"), create.value,
                                    f"the stack can create only a ServiceAccount; a {identity.kind.value} comes from "
                                    "the cluster's authenticator", "remove create, or use kind: ServiceAccount"))
        if identity.name.startswith("system:"):
            problems.append(Problem(stack_key(*base, "name"), identity.name,
                                    "names starting with system: are Kubernetes' own users and groups (Group "
                                    "system:authenticated is every signed-in user): the read access would go to them",
                                    "name a user or group of your authenticator that only the preview uses, or use "
                                    "kind: ServiceAccount"))
        elif identity.name.strip() and (identity.name != identity.name.strip()
                                        or any(ord(c) < 32 for c in identity.name)):
            problems.append(Problem(stack_key(*base, "name"), identity.name,
                                    "a user or group name has no surrounding spaces or control characters",
                                    "write the name exactly as the authenticator reports it"))
        return problems
    if identity.name and not re.match(DNS_SUBDOMAIN, identity.name):  # its length: the shape's max_length
        problems.append(Problem(stack_key(*base, "name"), identity.name,
                                "a ServiceAccount name must be a DNS-1123 subdomain (RFC 1123)",
                                "use lower-case letters, digits and '-', starting and ending with a letter or digit"))
    if identity.namespace is None:
        problems.append(Problem(stack_key(*base, "namespace"), "<absent>", "a ServiceAccount lives in a namespace",
                                "add namespace: one of its own for the ServiceAccount, e.g. kueue-cohorts-preview"))
        return problems
    tenants = _tenant_namespaces(settings)
    if identity.namespace in tenants or identity.namespace == settings.kueue.namespace:
        what = "a tenant namespace of this stack" if identity.namespace in tenants else "Kueue's namespace"
        problems.append(Problem(stack_key(*base, "namespace"), identity.namespace,
                                f"the preview ServiceAccount must not live in {what}: whoever runs pods or creates "
                                "tokens there could act as the preview identity", _SA_NAMESPACE_FIX))
    elif create == PreviewIdentityCreate.SERVICE_ACCOUNT_AND_NAMESPACE and identity.namespace in (
            *DEFAULT_PROTECTED_NAMESPACES, *settings.protected_namespaces):
        problems.append(Problem(stack_key(*base, "namespace"), identity.namespace,
                                "with create ServiceAccountAndNamespace the stack creates (and on destroy deletes) "
                                "the namespace, and this one is a system or protected namespace", _SA_NAMESPACE_FIX))
    return problems


def check_reclaim_budget_floor(settings: Settings) -> list[Problem]:
    """A reclaim budget below the least grace period a training runtime may have: the stack's runtime needs
    terminationGracePeriodSeconds of at least MIN_GRACE_SECONDS (CHECKPOINT_SAFE_RUNTIME's default floor) and the
    budget must hold it (RECLAIM_WITHIN_BUDGET), so no runtime could meet both; one problem at the budget instead of
    two fixes that contradict each other at the runtime."""
    it, runtime = settings.inference_training, settings.training_runtime
    if it is None or runtime is None or it.inference.reclaim_budget_seconds >= MIN_GRACE_SECONDS:
        return []
    budget = it.inference.reclaim_budget_seconds
    return [Problem(stack_key(IT, "inference", "reclaimBudgetSeconds"), budget,
                    f"the training runtime's grace period must be at least {MIN_GRACE_SECONDS} s to save on "
                    f"SIGTERM, and a reclaim budget of {budget} s cannot hold it, so no runtime meets both",
                    f"set reclaimBudgetSeconds to at least {MIN_GRACE_SECONDS}", RECLAIM_WITHIN_BUDGET.name)]


def check_namespace_policies(settings: Settings) -> list[Problem]:
    """Each key of a layout's ``namespacePolicies`` (``inferenceTraining`` or ``sharedPool``) names one of that
    layout's tenant namespaces: an entry for another namespace would change nothing (a typo leaves the namespace it
    meant under namespacePolicy, possibly Create). One Problem per such key, at
    ``<layout>.namespacePolicies.<name>``."""
    problems: list[Problem] = []
    for top, layout in ((IT, settings.inference_training), ("sharedPool", settings.shared_pool)):
        if layout is None:
            continue
        names = layout.namespace_names()
        for name in layout.namespace_policies:
            if name not in names:
                problems.append(Problem(
                    stack_key(top, "namespacePolicies", name), name,
                    "namespacePolicies sets the policy of one of the layout's tenant namespaces, and this is none "
                    "of them", f"use one of {', '.join(names)}, or remove the entry"))
    return problems


CHECKS: tuple[Check, ...] = (
    check_cluster_target, check_node_capacity, check_some_layout, check_flavors, check_preemption,
    check_inference_training_keys, check_shared_pool_keys, check_reclaim_budget_floor, check_namespace_policies,
    check_unique_names, check_kueue_integrations, check_training_runtime_home, check_preview_identity,
    *multikueue_rules.CHECKS, *security_rules.CHECKS,
)
"""Every settings-only check, in config order."""


def check(settings: Settings) -> list[Problem]:
    """Run every settings-only check. Returns every Problem found (empty when the config is sound)."""
    return [problem for run in CHECKS for problem in run(settings)]


__all__ = ["CHECKS", "check", "DEFAULT_FRAMEWORKS"]
