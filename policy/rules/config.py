"""The policy config schema: per policy, its options (JSON schema with defaults) and typed readers.

CrossGuard config is per policy (`pulumi preview --policy-pack-config file.json`, format
`{"<policy>": {"enforcementLevel": "...", "<option>": ...}}`); the engine fills in each `default` and validates
the result against these schemas before the pack runs (pulumi `pkg/resource/analyzer/config.go`
`ReconcilePolicyPackConfig`). The readers apply the same defaults, so unit tests can pass `{}`.
Numbers arrive through protobuf Structs as floats; the readers turn them back into ints.
"""
from __future__ import annotations

from typing import Any, Mapping

INFERENCE_CLUSTER_QUEUES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "default": [],
    "description": "ClusterQueue names to treat as inference in addition to those labelled "
                   "kueue-cohorts/role: inference.",
}

CLUSTER_QUEUE_ROLES: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": "string", "enum": ["inference", "training", "tenant"]},
    "default": {},
    "description": "ClusterQueue name -> role, generated from the stack file (python -m kueue_cohorts.validate "
                   "--stack NAME --pack-config --write).",
}
INFERENCE_PRIORITY_CLASSES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "default": [],
    "description": "WorkloadPriorityClass names the stack declares for inference: workloads of these classes mark "
                   "their ClusterQueue as inference, and they rank above training.",
}
ROLE_OPTIONS = {"inferenceClusterQueues": INFERENCE_CLUSTER_QUEUES, "clusterQueueRoles": CLUSTER_QUEUE_ROLES,
                "inferencePriorityClasses": INFERENCE_PRIORITY_CLASSES}
"""The options every role-aware policy takes: how the pack knows which ClusterQueues are inference."""

SCHEMAS: dict[str, dict[str, dict[str, Any]]] = {
    "inference-borrowing-limit-zero": ROLE_OPTIONS,
    "inference-reclaim-any": ROLE_OPTIONS,
    "inference-namespace-selector": ROLE_OPTIONS,
    "cluster-queue-namespace-selector": ROLE_OPTIONS,
    "cluster-queue-role": ROLE_OPTIONS,
    "protected-namespaces": {
        "protectedNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Namespaces that never become tenants, in addition to the Kubernetes, Kueue, JobSet, "
                           "Trainer and KServe system namespaces.",
        },
        "allowedAddOnNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Cluster add-on namespaces (system_namespaces.ADD_ON_NAMESPACES) this stack allows as "
                           "tenants; default, kube-* and the controllers' namespaces stay protected.",
        },
    },
    "cluster-queue-selector-overlap": {},
    "cluster-queue-pinned-selector": {},
    "quantities": {},
    "judgeable-patches": {},
    "no-helm-release": {},
    "cohort-nominal-within-capacity": {
        "nodePools": {
            "type": "array",
            "items": {"type": "object"},
            "default": [],
            "description": "The cluster's nodes: a list of {name, count, labels, capacity} (capacity per node, "
                           "resource -> quantity; labels: the nodes' labels, which decide the ResourceFlavors that "
                           "select them). Generated from kueue-cohorts:nodePools. A pool without labels has unknown "
                           "labels: a flavor with nodeLabels then fails closed. Empty: the legacy capacity, else the "
                           "stack's kueue-cohorts:nodePools.",
        },
        "flavorNodeLabels": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": {"type": "string"}},
            "default": {},
            "description": "ResourceFlavor name -> nodeLabels, for flavors the stack's quota names but another "
                           "program defines (the stack's own ResourceFlavor objects win).",
        },
        "capacity": {
            "type": "object",
            "additionalProperties": {"type": ["string", "number"]},
            "default": {},
            "description": "Legacy: the cluster's total per resource (e.g. {\"cpu\": \"8\"}), used only without "
                           "nodePools, as one pool whose labels are unknown: only a ResourceFlavor without "
                           "nodeLabels can be judged against it.",
        },
        "workerNodePools": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "object"}},
            "default": {},
            "description": "MultiKueue worker name -> its nodes (as nodePools): the objects of provider "
                           "k8s-worker-<name> are judged against them. Generated from "
                           "kueue-cohorts:multiKueue.workers[].nodePools; a worker without an entry takes those of "
                           "the stack config, else the stack's own nodes.",
        },
        "flavorCapacity": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
            "default": {},
            "description": "Legacy, refused: capacity by ResourceFlavor name carries no node labels, while Kueue "
                           "places a flavor's pods by its nodeLabels. Any entry fails the policy; use nodePools.",
        },
    },
    "workload-priority-class": {
        **ROLE_OPTIONS,
        "trainingPriorityClasses": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "WorkloadPriorityClass names the stack declares for training (ranked below inference).",
        },
        "priorityClasses": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
            "default": {},
            "description": "WorkloadPriorityClasses that exist in the cluster but not in this stack: name -> value.",
        },
    },
    "cluster-queue-covers-pod-resources": {
        "excludeResourcePrefixes": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Resource name prefixes the cluster's Kueue excludes from accounting "
                           "(resources.excludeResourcePrefixes of its Configuration).",
        },
    },
    "inference-fits-nominal": {},
    "inference-rollout-fits-nominal": ROLE_OPTIONS,
    "inference-peak-fits-nominal": ROLE_OPTIONS,
    "training-runtime-fits-queue": {},
    "trainjob-reserved-env": {},
    "checkpoint-safe-runtime": {
        "minTerminationGracePeriodSeconds": {
            "type": "integer",
            "minimum": 0,
            "default": 60,
            "description": "Lowest terminationGracePeriodSeconds accepted for the trainer pod, in seconds.",
        },
        "exemptRuntimes": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "TrainingRuntime/ClusterTrainingRuntime names not meant for borrowing training.",
        },
    },
    "kueue-manager-config": {
        "kueueNamespace": {
            "type": "string",
            "default": "kueue-system",
            "description": "Kueue's namespace, used when the Configuration does not set `namespace`.",
        },
    },
    "kueue-api-version": {},
    "multikueue-workers-ready": {
        "serviceAccounts": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "default": {},
            "description": "MultiKueue worker name -> `<namespace>/<name>` of the ServiceAccount the manager's Kueue "
                           "acts as there (default kueue-system/multikueue).",
        },
        "integrations": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "The manager's Kueue integrations (integrations.frameworks). Empty: those of a Kueue "
                           "manager Configuration in the stack, else the project's default integrations.",
        },
        "featureGates": {
            "type": "object",
            "additionalProperties": {"type": "boolean"},
            "default": {},
            "description": "The manager's Kueue feature gates (they add verbs: ElasticJobsViaWorkloadSlices, "
                           "MultiKueueOrchestratedPreemption).",
        },
    },
    "single-layout-per-cohort": {},
    "inference-reclaim-unblocked": {
        **ROLE_OPTIONS,
        "trainingPriorityClasses": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "WorkloadPriorityClass names the stack declares for training (workload-priority-class "
                           "ranks them; this policy judges every other class at or above inference).",
        },
        "priorityClasses": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
            "default": {},
            "description": "WorkloadPriorityClasses that exist in the cluster but not in this stack: name -> value.",
        },
    },
}


def option(policy: str, config: Mapping[str, Any], key: str) -> Any:
    """Read option `key` of `policy` from its config (what `args.get_config()` returns), else the schema default.

    Raises KeyError for an option the schema does not declare (a programming error).
    """
    schema = SCHEMAS[policy][key]
    value = config.get(key, schema.get("default")) if config else schema.get("default")
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value
