"""Pure: the Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2) and the Helm values that carry it.

Upstream: kubernetes-sigs/kueue charts/kueue (values.yaml `managerConfig.controllerManagerConfigYaml`) and
apis/config/v1beta2/configuration_types.go (v0.19.2).
"""
from __future__ import annotations

from typing import Any

import yaml

from kueue_cohorts.components.settings import KueueMetrics, KueueSettings

CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
MANAGER_CONFIG_KEY = "controller_manager_config.yaml"
"""The key of the chart's manager ConfigMap (`<release>-manager-config`) that holds the Configuration."""


def metrics_configuration(metrics: KueueMetrics) -> dict[str, Any]:
    """The `metrics` fields of the manager Configuration that the settings decide (ControllerMetrics of
    apis/config/v1beta2/configuration_types.go, v0.19.2), without bindAddress.

    Takes: `kueue.metrics`. Returns: {"enableClusterQueueResources": bool, "localQueueMetrics": {"enable": bool
    [, "localQueueSelector": LabelSelector]}}, both written explicitly (Kueue's own defaults are false and true).
    """
    local: dict[str, Any] = {"enable": metrics.local_queue_metrics.enable}
    if metrics.local_queue_metrics.local_queue_selector is not None:
        local["localQueueSelector"] = metrics.local_queue_metrics.local_queue_selector
    return {"enableClusterQueueResources": metrics.enable_cluster_queue_resources, "localQueueMetrics": local}


def manager_configuration(kueue: KueueSettings) -> dict[str, Any]:
    """The Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2) for `kueue`.

    Keeps the chart's own defaults for health, the metrics bindAddress, webhook, leader election, controller
    concurrency and client rate limits; sets from the settings: namespace, manageJobsWithoutQueueName
    (+ managedJobsNamespaceSelector), waitForPodsReady (timeout, blockAdmission, recoveryTimeout, requeuingStrategy
    with backoffLimitCount), metrics (enableClusterQueueResources, localQueueMetrics: `metrics_configuration`),
    integrations.frameworks and featureGates.
    Returns: the Configuration as a dict in Kueue's field names.
    """
    wfpr = kueue.wait_for_pods_ready
    requeuing = wfpr.requeuing_strategy
    wait: dict[str, Any] = {
        "timeout": wfpr.timeout,
        "blockAdmission": wfpr.block_admission,
        "requeuingStrategy": {
            "timestamp": requeuing.timestamp,
            "backoffLimitCount": requeuing.backoff_limit_count,
            "backoffBaseSeconds": requeuing.backoff_base_seconds,
            "backoffMaxSeconds": requeuing.backoff_max_seconds,
        },
    }
    if wfpr.recovery_timeout is not None:
        wait["recoveryTimeout"] = wfpr.recovery_timeout
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "namespace": kueue.namespace,
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", **metrics_configuration(kueue.metrics)},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "manageJobsWithoutQueueName": kueue.manage_jobs_without_queue_name,
        "waitForPodsReady": wait,
        "integrations": {"frameworks": list(kueue.integrations)},
    }
    if kueue.managed_jobs_namespace_selector is not None:
        config["managedJobsNamespaceSelector"] = kueue.managed_jobs_namespace_selector
    if kueue.resources.exclude_resource_prefixes:
        config["resources"] = {"excludeResourcePrefixes": list(kueue.resources.exclude_resource_prefixes)}
    if kueue.feature_gates:
        config["featureGates"] = dict(kueue.feature_gates)
    return config


def chart_values(kueue: KueueSettings) -> dict[str, Any]:
    """Helm values for the Kueue chart: only `managerConfig.controllerManagerConfigYaml` (our Configuration)."""
    text = yaml.safe_dump(manager_configuration(kueue), sort_keys=False)
    return {"managerConfig": {"controllerManagerConfigYaml": text}}
