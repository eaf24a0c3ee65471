"""The policy pack config of a stack, generated from its settings: what the pack must know that objects do not say.

`policy/config/<stack>.json` is this, written by `python -m kueue_cohorts.validate --stack <stack> --pack-config
--write` and
checked against the stack file by the tests, so the pack (in CI, with `--policy-pack-config`) and the program's
settings check (which runs the same rule book in-process with this same config) judge with the same facts:
- `inferenceClusterQueues`: the inference ClusterQueue names (a ClusterQueue written by hand, through a ConfigGroup
  or a patch, without our role label, is still judged as inference);
- `inferencePriorityClasses` / `trainingPriorityClasses`: the WorkloadPriorityClass names of each side;
- `nodePools`: the cluster's nodes from `kueue-cohorts:nodePools`, each with its labels (written out, {} when the
  stack gives none) and capacity per node: cohort-nominal-within-capacity decides which ResourceFlavor selects which
  pool by those labels (`policy/rules/capacity.py`), so the capacity per flavor carries its node labels;
- `kueueNamespace`: Kueue's namespace;
- with `multiKueue`: `workerNodePools` (each worker's nodes, judged against its own cohorts) and the options of
  multikueue-workers-ready (each worker's ServiceAccount, the manager's integrations and feature gates).
"""
from __future__ import annotations

import json
from typing import Any

from components.settings import Settings
from policy.rules.system_namespaces import DEFAULT_PROTECTED_NAMESPACES

ROLE_AWARE_RULES = ("inference-borrowing-limit-zero", "inference-reclaim-any", "inference-namespace-selector",
                    "cluster-queue-namespace-selector", "workload-priority-class", "cluster-queue-role",
                    "inference-reclaim-unblocked")
"""The policies that need to know which ClusterQueues are inference (policy/rules/config.py ROLE_OPTIONS)."""


def node_pools(settings: Settings) -> list[dict[str, Any]]:
    """The stack's node pools as the pack config's `nodePools` option: name, count, labels (always written: a pool
    without labels in the pack config would have unknown labels) and capacity per node; `resourceFlavor` when the
    pool names one (messages only: Kueue places pods by labels)."""
    return [{**pool.model_dump(by_alias=True, exclude_none=True), "labels": dict(pool.labels)}
            for pool in settings.node_pools]


def pack_config(settings: Settings) -> dict[str, Any]:
    """The policy pack config for `settings`: policy name -> options (only options that differ from the schema
    defaults, in a stable order)."""
    config: dict[str, Any] = {"cohort-nominal-within-capacity": {"nodePools": node_pools(settings)}}
    roles: dict[str, str] = {}
    it, sp = settings.inference_training, settings.shared_pool
    if sp is not None:
        roles.update({tenant.cluster_queue or f"{tenant.name}-cq": "tenant" for tenant in sp.tenants})
    if it is not None:
        roles.update({it.inference.cluster_queue: "inference", it.training.cluster_queue: "training"})
    facts: dict[str, Any] = {"clusterQueueRoles": dict(sorted(roles.items()))}
    if it is not None:
        facts = {"inferenceClusterQueues": [it.inference.cluster_queue], **facts,
                 "inferencePriorityClasses": [it.inference.priority_class.name]}
    for rule in ROLE_AWARE_RULES:
        config[rule] = dict(facts)
    if it is not None:
        config["workload-priority-class"]["trainingPriorityClasses"] = [it.training.priority_class.name]
        config["inference-reclaim-unblocked"]["trainingPriorityClasses"] = [it.training.priority_class.name]
    protected = [n for n in [settings.kueue.namespace, *settings.protected_namespaces]
                 if n not in DEFAULT_PROTECTED_NAMESPACES]
    if protected:
        config["protected-namespaces"] = {"protectedNamespaces": list(dict.fromkeys(protected))}
    if settings.allowed_add_on_namespaces:
        config.setdefault("protected-namespaces", {})["allowedAddOnNamespaces"] = list(dict.fromkeys(
            a.name for a in settings.allowed_add_on_namespaces))
    if settings.kueue.resources.exclude_resource_prefixes:
        config["cluster-queue-covers-pod-resources"] = {
            "excludeResourcePrefixes": list(settings.kueue.resources.exclude_resource_prefixes)}
    if settings.kueue.namespace != "kueue-system":
        config["kueue-manager-config"] = {"kueueNamespace": settings.kueue.namespace}
    mk = settings.multi_kueue
    if mk is not None:
        config["cohort-nominal-within-capacity"]["workerNodePools"] = {
            w.name: [{**p.model_dump(by_alias=True, exclude_none=True), "labels": dict(p.labels)}
                     for p in w.node_pools or settings.node_pools] for w in mk.workers}
        config["multikueue-workers-ready"] = {
            "serviceAccounts": {w.name: f"{settings.kueue.namespace}/{w.service_account}" for w in mk.workers},
            "integrations": list(settings.kueue.integrations), "featureGates": dict(settings.kueue.feature_gates)}
    return config


def render(settings: Settings) -> str:
    """The config file's text (JSON, two-space indent, trailing newline)."""
    return json.dumps(pack_config(settings), indent=2) + "\n"
