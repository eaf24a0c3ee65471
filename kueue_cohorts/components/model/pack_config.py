"""The policy pack config of a stack, generated from its settings: what the pack must know that objects do not say.

`policy/config/<stack>.json` is this, written by `kueue-cohorts validate --stack <stack> --pack-config
--write` and
checked against the stack file by the tests, so the pack (in CI, with `--policy-pack-config`) and the program's
settings check (which runs the same rule book in-process with this same config) judge with the same facts.

The stack's facts are option values (`facts`), and every policy that declares an option gets the stack's value of it
(`policy.rules.book.declaring`): which policies need which fact is said once, by their declarations.
- `inferenceClusterQueues`, `clusterQueueRoles`, `inferencePriorityClasses`: the ClusterQueue roles (a ClusterQueue
  written by hand, through a ConfigGroup or a patch, without our role label, is still judged as inference);
- `trainingPriorityClasses`: the WorkloadPriorityClass names of the training side;
- `nodePools`: the cluster's nodes from `kueue-cohorts:nodePools`, each with its labels (written out, {} when the
  stack gives none) and capacity per node: the capacity policy decides which ResourceFlavor selects which pool by
  those labels (`policy/rules/cohort_nominal_within_capacity.py`), so the capacity per flavor carries its node labels;
- `reclaimBudgetSeconds`: the inference side's reclaim budget (written when it is not the default 60 s);
- `protectedNamespaces`, `allowedAddOnNamespaces`, `excludeResourcePrefixes`, `kueueNamespace`: the stack's
  namespaces and Kueue's resource exclusions;
- with `multiKueue`: `workerNodePools` (each worker's nodes, judged against its own cohorts), `serviceAccounts`
  (each worker's identity of the manager's Kueue), `integrations` and `featureGates` (the manager's Kueue).
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from kueue_cohorts.components.settings import NodePool, Settings
from kueue_cohorts.policy.rules.book import RULES
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import EXEMPT_RUNTIMES, MIN_TERMINATION_GRACE_PERIOD_SECONDS
from kueue_cohorts.policy.rules.cluster_queue_covers_pod_resources import EXCLUDE_RESOURCE_PREFIXES
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import (
    FLAVOR_NODE_LABELS,
    LEGACY_CAPACITY,
    LEGACY_FLAVOR_CAPACITY,
    NODE_POOLS,
    WORKER_NODE_POOLS,
)
from kueue_cohorts.policy.rules.kueue_manager_config import KUEUE_NAMESPACE
from kueue_cohorts.policy.rules.multikueue_workers_ready import FEATURE_GATES, INTEGRATIONS, SERVICE_ACCOUNTS
from kueue_cohorts.policy.rules.protected_namespaces import ALLOWED_ADD_ON_NAMESPACES, EXTRA_PROTECTED_NAMESPACES
from kueue_cohorts.policy.rules.reclaim_within_budget import RECLAIM_BUDGET_SECONDS
from kueue_cohorts.policy.rules.vocabulary.declaration import Option
from kueue_cohorts.policy.rules.vocabulary.priority import PRIORITY_CLASSES, TRAINING_PRIORITY_CLASSES
from kueue_cohorts.policy.rules.vocabulary.roles import (
    CLUSTER_QUEUE_ROLES,
    INFERENCE_CLUSTER_QUEUES,
    INFERENCE_PRIORITY_CLASSES,
)
from kueue_cohorts.policy.rules.vocabulary.system_namespaces import DEFAULT_PROTECTED_NAMESPACES


def node_pools(settings: Settings) -> list[dict[str, Any]]:
    """The stack's node pools as the pack config's `nodePools` option: name, count, labels (always written: a pool
    without labels in the pack config would have unknown labels) and capacity per node; `resourceFlavor` when the
    pool names one (messages only: Kueue places pods by labels). Not its taints: the settings check judges them
    (components.checks.unqueued_rules)."""
    return _pools(settings.node_pools)


def _pools(pools: Sequence[NodePool]) -> list[dict[str, Any]]:
    return [{**pool.model_dump(by_alias=True, exclude_none=True, exclude={"taints"}), "labels": dict(pool.labels)}
            for pool in pools]


def _multikueue_facts(settings: Settings) -> list[tuple[Option[Any], Any]]:
    """The facts of a MultiKueue stack (`kueue-cohorts:multiKueue`): each worker's nodes (its own `nodePools`, else
    the stack's), the ServiceAccount the manager's Kueue acts as on each worker (`<kueue namespace>/<name>`), the
    manager's integrations and feature gates; none without `multiKueue`."""
    mk = settings.multi_kueue
    if mk is None:
        return []
    return [(WORKER_NODE_POOLS, {w.name: _pools(w.node_pools or settings.node_pools) for w in mk.workers}),
            (SERVICE_ACCOUNTS, {w.name: f"{settings.kueue.namespace}/{w.service_account}" for w in mk.workers}),
            (INTEGRATIONS, list(settings.kueue.integrations)), (FEATURE_GATES, dict(settings.kueue.feature_gates))]


def facts(settings: Settings) -> list[tuple[Option[Any], Any]]:
    """The stack's value of each pack option it says something about, as (option, value): only what the stack
    states (the others keep their schema defaults). The option objects are the declarations' own."""
    found: list[tuple[Option[Any], Any]] = [(NODE_POOLS, node_pools(settings))]
    roles: dict[str, str] = {}
    it, sp = settings.inference_training, settings.shared_pool
    if sp is not None:
        roles.update({tenant.cluster_queue_name: "tenant" for tenant in sp.tenants})
    if it is not None:
        roles.update({it.inference.cluster_queue: "inference", it.training.cluster_queue: "training"})
        found.append((INFERENCE_CLUSTER_QUEUES, [it.inference.cluster_queue]))
    found.append((CLUSTER_QUEUE_ROLES, dict(sorted(roles.items()))))
    if it is not None:
        found.append((INFERENCE_PRIORITY_CLASSES, [it.inference.priority_class.name]))
        found.append((TRAINING_PRIORITY_CLASSES, [it.training.priority_class.name]))
        if it.inference.reclaim_budget_seconds != RECLAIM_BUDGET_SECONDS.default:
            found.append((RECLAIM_BUDGET_SECONDS, it.inference.reclaim_budget_seconds))
    protected = [n for n in [settings.kueue.namespace, *settings.protected_namespaces]
                 if n not in DEFAULT_PROTECTED_NAMESPACES]
    if protected:
        found.append((EXTRA_PROTECTED_NAMESPACES, list(dict.fromkeys(protected))))
    if settings.allowed_add_on_namespaces:
        allowed = dict.fromkeys(a.name for a in settings.allowed_add_on_namespaces)
        found.append((ALLOWED_ADD_ON_NAMESPACES, list(allowed)))
    if settings.kueue.resources.exclude_resource_prefixes:
        found.append((EXCLUDE_RESOURCE_PREFIXES, list(settings.kueue.resources.exclude_resource_prefixes)))
    if settings.kueue.namespace != KUEUE_NAMESPACE.default:
        found.append((KUEUE_NAMESPACE, settings.kueue.namespace))
    return found + _multikueue_facts(settings)


STATED: tuple[Option[Any], ...] = (
    NODE_POOLS, INFERENCE_CLUSTER_QUEUES, CLUSTER_QUEUE_ROLES, INFERENCE_PRIORITY_CLASSES, TRAINING_PRIORITY_CLASSES,
    EXTRA_PROTECTED_NAMESPACES, ALLOWED_ADD_ON_NAMESPACES, EXCLUDE_RESOURCE_PREFIXES, KUEUE_NAMESPACE,
    WORKER_NODE_POOLS, SERVICE_ACCOUNTS, INTEGRATIONS, FEATURE_GATES, RECLAIM_BUDGET_SECONDS)
"""The pack options a stack file can state (`facts` returns some of them, by what the stack sets)."""
UNSTATED: tuple[Option[Any], ...] = (
    MIN_TERMINATION_GRACE_PERIOD_SECONDS, EXEMPT_RUNTIMES, FLAVOR_NODE_LABELS, LEGACY_CAPACITY, LEGACY_FLAVOR_CAPACITY,
    PRIORITY_CLASSES)
"""The pack options a stack file has no setting for: a generated config leaves them at their defaults (a test
holds every declared option to be in exactly one of STATED and UNSTATED)."""


def pack_config(settings: Settings) -> dict[str, Any]:
    """The policy pack config for `settings`: policy name -> options, in book order, each policy with the stack's
    value of every option it declares (`facts`); policies that declare none of them are left out."""
    stated = facts(settings)
    config: dict[str, Any] = {}
    for rule in RULES:
        section = {option.key: value for option, value in stated if rule.declares(option)}
        if section:
            config[rule.name] = section
    return config


def render(settings: Settings) -> str:
    """The config file's text (JSON, two-space indent, trailing newline)."""
    return json.dumps(pack_config(settings), indent=2) + "\n"
