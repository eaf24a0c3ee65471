"""The guide's cross-field rules over parsed Settings: each returns Problems, none raises.

Semantics follow Kueue kueue.x-k8s.io/v1beta2 (site/content/en/docs/concepts/cluster_queue.md, preemption.md):
- a null borrowingLimit means "borrow without limit", so inference must carry an explicit 0;
- reclaimWithinCohort only protects a ClusterQueue's own nominalQuota: a 0-nominal queue always counts as borrowing;
- a Cohort object's nominalQuota is added on top of its ClusterQueues' as shared quota, never guaranteed to one queue;
- quota the cluster does not physically have cannot be admitted (the "sum of nominalQuota <= capacity" rule).
"""
from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Iterable, Mapping, Optional

from components import quantity
from components.errors import Problem
from components.settings import (
    PROJECT,
    BorrowWithinCohortPolicy,
    ClusterMode,
    InferenceTrainingSettings,
    Preemption,
    ReclaimWithinCohort,
    Settings,
    SharedPoolSettings,
    config_key,
)

IT = f"{PROJECT}:inferenceTraining"
SP = f"{PROJECT}:sharedPool"


_key = config_key


def _q(value: Optional[str]) -> Decimal:
    return quantity.parse(value) if value is not None else Decimal(0)


def _duplicates(names: Iterable[str]) -> list[str]:
    return sorted(name for name, count in Counter(names).items() if count > 1)


def _preemption_problems(base: str, preemption: Preemption) -> list[Problem]:
    bwc = preemption.borrow_within_cohort
    if (
        bwc is not None
        and bwc.policy != BorrowWithinCohortPolicy.NEVER
        and preemption.reclaim_within_cohort == ReclaimWithinCohort.NEVER
    ):
        return [
            Problem(
                _key(base, "borrowWithinCohort", "policy"),
                bwc.policy.value,
                "Kueue rejects borrowWithinCohort.policy other than Never when reclaimWithinCohort is Never",
                "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never",
            )
        ]
    return []


def _unknown_resources(base: str, values: Optional[Mapping[str, str]], covered: set[str], what: str) -> list[Problem]:
    return [
        Problem(
            _key(base, resource),
            amount,
            f"'{resource}' is not a covered resource of this cohort ({', '.join(sorted(covered))}); {what}",
            f"remove it, or add '{resource}' to the nominalQuota that defines the covered resources",
        )
        for resource, amount in (values or {}).items()
        if resource not in covered
    ]


def _capacity_problems(
    base: str, cohort: str, nominal: Mapping[str, Decimal], capacity: Mapping[str, Decimal]
) -> list[Problem]:
    problems = []
    for resource, total in sorted(nominal.items()):
        if total == 0:
            continue
        if resource not in capacity:
            problems.append(
                Problem(
                    _key(base, resource),
                    quantity.canonical(total),
                    f"cohort '{cohort}' has nominalQuota for '{resource}' but no node pool declares that resource",
                    f"add '{resource}' to the capacity of a kueue-cohorts:nodePools entry",
                )
            )
        elif total > capacity[resource]:
            problems.append(
                Problem(
                    _key(base, resource),
                    quantity.canonical(total),
                    f"cohort '{cohort}' sums to {quantity.canonical(total)} of '{resource}' (its ClusterQueues plus "
                    f"its Cohort object), above the physical capacity {quantity.canonical(capacity[resource])}: "
                    "reservations are guarantees and must exist",
                    f"lower the nominalQuota to at most {quantity.canonical(capacity[resource])} in total, "
                    "or add nodes to kueue-cohorts:nodePools",
                )
            )
    return problems


def inference_training_nominal(layout: InferenceTrainingSettings) -> dict[str, Decimal]:
    """Total nominalQuota of the asymmetric cohort per resource: inference + Cohort object (training owns 0)."""
    total = {resource: _q(amount) for resource, amount in layout.inference.nominal_quota.items()}
    for resource, amount in (layout.cohort_quota or {}).items():
        total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    return total


def shared_pool_total(layout: SharedPoolSettings) -> dict[str, Decimal]:
    """Pool total per resource of the symmetric cohort: sum of floors + the Cohort object's nominalQuota."""
    total: dict[str, Decimal] = {}
    for tenant in layout.tenants:
        for resource, amount in tenant.floor.items():
            total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    for resource, amount in (layout.cohort_quota or {}).items():
        total[resource] = total.get(resource, Decimal(0)) + _q(amount)
    return total


def _check_inference_training(layout: InferenceTrainingSettings, capacity: Mapping[str, Decimal]) -> list[Problem]:
    problems: list[Problem] = []
    inf, trn = layout.inference, layout.training
    covered = set(inf.nominal_quota)
    base_inf, base_trn = _key(IT, "inference"), _key(IT, "training")

    for resource, amount in (inf.borrowing_limit or {}).items():
        if resource in covered and _q(amount) != 0:
            problems.append(
                Problem(
                    _key(base_inf, "borrowingLimit", resource),
                    amount,
                    "the inference ClusterQueue must never borrow: its borrowingLimit must be an explicit 0 on "
                    "every covered resource (Kueue reads a missing borrowingLimit as unlimited)",
                    "set it to 0, or remove the key and the component writes 0",
                )
            )
    problems += _unknown_resources(
        _key(base_inf, "borrowingLimit"), inf.borrowing_limit, covered, "a borrowingLimit must name a covered resource"
    )
    if inf.preemption.reclaim_within_cohort != ReclaimWithinCohort.ANY:
        problems.append(
            Problem(
                _key(base_inf, "preemption", "reclaimWithinCohort"),
                inf.preemption.reclaim_within_cohort.value,
                "the inference ClusterQueue must reclaim its nominalQuota from any borrower, whatever its priority",
                "set reclaimWithinCohort to Any",
            )
        )
    problems += _preemption_problems(_key(base_inf, "preemption"), inf.preemption)
    problems += _preemption_problems(_key(base_trn, "preemption"), trn.preemption)

    for resource, amount in inf.nominal_quota.items():
        if _q(amount) == 0:
            on_cohort = layout.cohort_quota and _q(layout.cohort_quota.get(resource)) > 0
            problems.append(
                Problem(
                    _key(base_inf, "nominalQuota", resource),
                    amount,
                    "inference's guaranteed quota must be the inference ClusterQueue's own nominalQuota: reclaim "
                    "only protects a queue's own nominalQuota and a 0-nominal queue always counts as borrowing"
                    + (" (the quota sits on the Cohort object's cohortQuota instead)" if on_cohort else ""),
                    "move the quota from cohortQuota to inference.nominalQuota"
                    if on_cohort
                    else "give inference a nominalQuota above 0, or drop the resource from the cohort",
                )
            )
    problems += _unknown_resources(
        _key(IT, "cohortQuota"), layout.cohort_quota, covered, "the Cohort object's quota must name a covered resource"
    )
    for resource, amount in (inf.lending_limit or {}).items():
        if resource in covered and _q(amount) > _q(inf.nominal_quota[resource]):
            problems.append(
                Problem(
                    _key(base_inf, "lendingLimit", resource),
                    amount,
                    f"lendingLimit cannot exceed the nominalQuota {inf.nominal_quota[resource]}",
                    f"lower it to at most {inf.nominal_quota[resource]}",
                )
            )
    problems += _unknown_resources(_key(base_inf, "lendingLimit"), inf.lending_limit, covered, "")
    problems += _unknown_resources(_key(base_trn, "borrowingLimit"), trn.borrowing_limit, covered, "")

    if trn.priority_class.value >= inf.priority_class.value:
        problems.append(
            Problem(
                _key(base_trn, "priorityClass", "value"),
                trn.priority_class.value,
                f"training priority must be below the inference priority {inf.priority_class.value}",
                f"set it below {inf.priority_class.value} (the guide uses 10 against 1000)",
            )
        )
    priorities = {inf.priority_class.name, trn.priority_class.name}
    for index, workload in enumerate(inf.services):
        base_w = _key(base_inf, "services", index)
        if workload.namespace is not None and workload.namespace not in inf.namespaces:
            problems.append(
                Problem(
                    _key(base_w, "namespace"),
                    workload.namespace,
                    "an InferenceService must run in an inference namespace, where the inference LocalQueue is",
                    f"use one of {list(inf.namespaces)} or omit it",
                )
            )
        if workload.min_replicas > workload.max_replicas:
            problems.append(
                Problem(
                    _key(base_w, "minReplicas"),
                    workload.min_replicas,
                    f"minReplicas cannot exceed maxReplicas {workload.max_replicas}",
                    "lower minReplicas or raise maxReplicas",
                )
            )
        for resource, amount in workload.requests.items():
            if resource not in covered:
                problems.append(
                    Problem(
                        _key(base_w, "requests", resource),
                        amount,
                        f"'{resource}' is not covered by the inference ClusterQueue, so Kueue can never admit it",
                        f"add '{resource}' to inference.nominalQuota or drop the request",
                    )
                )
            elif _q(amount) > _q(inf.nominal_quota[resource]):
                problems.append(
                    Problem(
                        _key(base_w, "requests", resource),
                        amount,
                        f"one replica asks for more than the inference nominalQuota {inf.nominal_quota[resource]}; "
                        "with borrowingLimit 0 it can never be admitted, and it does not trigger reclaim",
                        f"request at most {inf.nominal_quota[resource]} per replica, or raise the nominalQuota",
                    )
                )
        if workload.priority_class is not None and workload.priority_class not in priorities:
            problems.append(
                Problem(
                    _key(base_w, "priorityClass"),
                    workload.priority_class,
                    "names a WorkloadPriorityClass the stack does not define",
                    f"use one of {sorted(priorities)}",
                )
            )
    for name in _duplicates([inf.cluster_queue, trn.cluster_queue]):
        problems.append(Problem(_key(base_trn, "clusterQueue"), name, "duplicate ClusterQueue name", "rename one"))
    for name in _duplicates([inf.priority_class.name, trn.priority_class.name]):
        problems.append(
            Problem(_key(base_trn, "priorityClass", "name"), name, "duplicate WorkloadPriorityClass name", "rename one")
        )
    for name in _duplicates(list(inf.namespaces) + list(trn.namespaces)):
        problems.append(
            Problem(
                _key(base_trn, "namespaces"),
                name,
                "a namespace is listed twice; each namespace belongs to exactly one ClusterQueue's namespaceSelector",
                "list it once, under inference or training",
            )
        )
    problems += _capacity_problems(_key(IT, "inference", "nominalQuota"), layout.cohort, inference_training_nominal(layout), capacity)
    return problems


def _check_shared_pool(layout: SharedPoolSettings, capacity: Mapping[str, Decimal]) -> list[Problem]:
    problems: list[Problem] = []
    pool = shared_pool_total(layout)
    covered = set(pool)
    problems += _preemption_problems(_key(SP, "preemption"), layout.preemption)
    defined = {pc.name for pc in layout.priority_classes}
    for index, tenant in enumerate(layout.tenants):
        base = _key(SP, "tenants", index)
        for resource in sorted(covered - set(tenant.floor)):
            problems.append(
                Problem(
                    _key(base, "floor", resource),
                    "<absent>",
                    "every tenant's floor must name the same resources (the cohort's covered resources)",
                    f"add '{resource}': 0 to this tenant's floor",
                )
            )
        for resource, amount in (tenant.lending_limit or {}).items():
            floor = _q(tenant.floor.get(resource))
            if _q(amount) > floor:
                problems.append(
                    Problem(
                        _key(base, "lendingLimit", resource),
                        amount,
                        f"lendingLimit cannot exceed the floor (nominalQuota) {quantity.canonical(floor)}",
                        f"lower it to at most {quantity.canonical(floor)}",
                    )
                )
        for resource, amount in (tenant.borrowing_limit or {}).items():
            if resource not in covered:
                problems += _unknown_resources(_key(base, "borrowingLimit"), {resource: amount}, covered, "")
                continue
            headroom = pool[resource] - _q(tenant.floor.get(resource))
            if _q(amount) > headroom:
                problems.append(
                    Problem(
                        _key(base, "borrowingLimit", resource),
                        amount,
                        f"floor + borrowingLimit cannot exceed the pool total {quantity.canonical(pool[resource])}",
                        f"lower it to at most {quantity.canonical(headroom)} (pool total minus floor), or omit it "
                        "for that default",
                    )
                )
        if tenant.priority_class is not None and tenant.priority_class not in defined:
            problems.append(
                Problem(
                    _key(base, "priorityClass"),
                    tenant.priority_class,
                    "names a WorkloadPriorityClass the stack does not define",
                    f"define it under kueue-cohorts:sharedPool.priorityClasses, or use one of {sorted(defined)}",
                )
            )
    names = [t.name for t in layout.tenants]
    for name in _duplicates(names):
        problems.append(Problem(_key(SP, "tenants"), name, "duplicate tenant name", "rename one"))
    queues = [t.cluster_queue or f"{t.name}-cq" for t in layout.tenants]
    for name in _duplicates(queues):
        problems.append(Problem(_key(SP, "tenants"), name, "duplicate ClusterQueue name", "rename one"))
    namespaces = [ns for t in layout.tenants for ns in (t.namespaces or [t.name])]
    for name in _duplicates(namespaces):
        problems.append(
            Problem(_key(SP, "tenants"), name, "a namespace belongs to two tenants", "list it under one tenant only")
        )
    for name in _duplicates(pc.name for pc in layout.priority_classes):
        problems.append(Problem(_key(SP, "priorityClasses"), name, "duplicate WorkloadPriorityClass name", "rename one"))
    problems += _capacity_problems(_key(SP, "tenants", "floor"), layout.cohort, pool, capacity)
    return problems


def _check_cluster(settings: Settings) -> list[Problem]:
    cluster, base = settings.cluster, f"{PROJECT}:cluster"
    problems = []
    if cluster.mode == ClusterMode.RENDER and not cluster.render_dir:
        problems.append(
            Problem(_key(base, "renderDir"), "<absent>", "render mode writes manifests to a directory", "set renderDir")
        )
    if cluster.mode != ClusterMode.RENDER and cluster.render_dir:
        problems.append(
            Problem(
                _key(base, "renderDir"),
                cluster.render_dir,
                f"renderDir only applies to mode render (mode is {cluster.mode.value})",
                "remove renderDir or set mode: render",
            )
        )
    if cluster.mode != ClusterMode.KUBECONFIG and (cluster.kubeconfig or cluster.context):
        problems.append(
            Problem(
                _key(base, "kubeconfig" if cluster.kubeconfig else "context"),
                cluster.kubeconfig or cluster.context,
                f"kubeconfig and context only apply to mode kubeconfig (mode is {cluster.mode.value})",
                "remove them or set mode: kubeconfig",
            )
        )
    return problems


def _check_across_layouts(settings: Settings, capacity: Mapping[str, Decimal]) -> list[Problem]:
    it, sp = settings.inference_training, settings.shared_pool
    if it is None and sp is None:
        return [
            Problem(
                f"{PROJECT}:inferenceTraining",
                "<absent>",
                "a stack needs at least one cohort layout",
                "add kueue-cohorts:inferenceTraining (asymmetric) and/or kueue-cohorts:sharedPool (symmetric)",
            )
        ]
    if it is None or sp is None:
        return []
    problems = []
    if it.cohort == sp.cohort:
        problems.append(
            Problem(_key(SP, "cohort"), sp.cohort, "both layouts name the same cohort", "give each layout its own cohort")
        )
    it_queues = {it.inference.cluster_queue, it.training.cluster_queue}
    for tenant in sp.tenants:
        if (tenant.cluster_queue or f"{tenant.name}-cq") in it_queues:
            problems.append(
                Problem(_key(SP, "tenants"), tenant.name, "ClusterQueue name used by both layouts", "rename one")
            )
    it_namespaces = set(it.inference.namespaces) | set(it.training.namespaces)
    for tenant in sp.tenants:
        for ns in tenant.namespaces or [tenant.name]:
            if ns in it_namespaces:
                problems.append(
                    Problem(_key(SP, "tenants"), ns, "namespace used by both layouts", "use separate namespaces")
                )
    total = dict(inference_training_nominal(it))
    for resource, amount in shared_pool_total(sp).items():
        total[resource] = total.get(resource, Decimal(0)) + amount
    for resource, amount in sorted(total.items()):
        if resource in capacity and amount > capacity[resource] and not any(
            p.key.endswith(f'["{resource}"]') or p.key.endswith(f".{resource}") for p in problems
        ):
            problems.append(
                Problem(
                    f"{PROJECT}:nodePools",
                    quantity.canonical(capacity[resource]),
                    f"both cohorts together hold {quantity.canonical(amount)} of '{resource}' as nominalQuota, above "
                    "the physical capacity (they share the stack's one ResourceFlavor)",
                    "lower the floors or the inference nominalQuota, or add nodes",
                )
            )
    return problems


def _selector_excludes(selector: Mapping, namespaces: Iterable[str]) -> bool:
    """True when a LabelSelector surely matches none of `namespaces`: an opt-in selector (matchLabels, or a label
    `Exists` expression: namespaces must carry a label to be managed), or a `kubernetes.io/metadata.name`
    `NotIn [...]` / `In [...]` expression that leaves them out."""
    wanted = set(namespaces)
    if selector.get("matchLabels"):
        return True
    for expr in selector.get("matchExpressions") or []:
        if expr.get("operator") == "Exists" and expr.get("key") != "kubernetes.io/metadata.name":
            return True  # opt-in: only namespaces that carry the label are managed
        if expr.get("key") != "kubernetes.io/metadata.name":
            continue
        values = set(expr.get("values") or [])
        if expr.get("operator") == "NotIn" and wanted <= values:
            return True
        if expr.get("operator") == "In" and not (wanted & values):
            return True
    return False


def _check_kueue(settings: Settings) -> list[Problem]:
    kueue, base = settings.kueue, f"{PROJECT}:kueue"
    problems = []
    if kueue.manage_jobs_without_queue_name:
        selector = kueue.managed_jobs_namespace_selector
        protected = ["kube-system", kueue.namespace]
        if not selector or not _selector_excludes(selector, protected):
            problems.append(
                Problem(
                    _key(base, "managedJobsNamespaceSelector"),
                    selector if selector else "<absent>",
                    "with manageJobsWithoutQueueName true, Kueue suspends every job it selects, so the selector "
                    f"must exclude {protected} and every namespace not meant for Kueue",
                    "use an opt-in selector such as {matchLabels: {kueue-managed: \"true\"}}, or "
                    "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: "
                    f"{protected}}}]}}, or set manageJobsWithoutQueueName to false",
                )
            )
    from components.settings import KUEUE_FRAMEWORKS

    for index, framework in enumerate(kueue.integrations):
        if framework not in KUEUE_FRAMEWORKS:
            problems.append(
                Problem(_key(base, "integrations", index), framework, "not a Kueue integration framework",
                        f"use one of {', '.join(KUEUE_FRAMEWORKS)}")
            )
    it = settings.inference_training
    if it is not None and it.inference.services and "deployment" not in kueue.integrations:
        problems.append(
            Problem(
                _key(base, "integrations"),
                list(kueue.integrations),
                "InferenceServices in raw-deployment mode run as Deployments, which Kueue admits only with its "
                "deployment integration",
                "add deployment (and pod) to integrations",
            )
        )
    return problems


def _check_training_runtime(settings: Settings) -> list[Problem]:
    runtime = settings.training_runtime
    if runtime is None:
        return []
    from components.plans import max_usage, plan_inference_training
    from components.training import quota_problems

    layout = settings.inference_training
    if layout is None or layout.training.checkpoint is None:
        return [
            Problem(
                f"{PROJECT}:trainingRuntime",
                "<set>",
                "the preemptible TrainingRuntime lives in the training namespaces of kueue-cohorts:inferenceTraining "
                "and mounts their checkpoint PVC",
                "add inferenceTraining.training.checkpoint (claimName, storageClassName, size), or remove "
                "trainingRuntime",
            )
        ]
    problems = []
    if "trainer.kubeflow.org/trainjob" not in settings.kueue.integrations:
        problems.append(
            Problem(_key(f"{PROJECT}:kueue", "integrations"), list(settings.kueue.integrations),
                    "TrainJobs are admitted only with Kueue's trainer.kubeflow.org/trainjob integration",
                    "add trainer.kubeflow.org/trainjob to integrations")
        )
    training_cq = plan_inference_training(layout, "-").cluster_queue(layout.training.cluster_queue)
    usable = {r: quantity.canonical(v) for r, v in max_usage(training_cq).items()}
    return problems + quota_problems(runtime, usable)


def check(settings: Settings) -> list[Problem]:
    """Apply every cross-field rule of the guide.

    Args:
        settings: shape-valid Settings.
    Returns:
        Every Problem found (empty when the config is sound), in config order.
    """
    capacity = settings.capacity()
    problems = _check_cluster(settings)
    if settings.inference_training is not None:
        problems += _check_inference_training(settings.inference_training, capacity)
    if settings.shared_pool is not None:
        problems += _check_shared_pool(settings.shared_pool, capacity)
    problems += _check_across_layouts(settings, capacity)
    problems += _check_kueue(settings)
    problems += _check_training_runtime(settings)
    return problems
