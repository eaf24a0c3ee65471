"""KueueInstallation: Kueue's Helm chart with a manager Configuration built from typed settings.

Upstream: kubernetes-sigs/kueue charts/kueue (values.yaml `managerConfig.controllerManagerConfigYaml`) and
apis/config/v1beta2/configuration_types.go (v0.19.2). The chart's CRDs come with it, so one `pulumi up` on a fresh
cluster installs Kueue and then the cohorts (the layouts depend on this component).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.settings import KueueSettings

CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"


def manager_configuration(kueue: KueueSettings) -> dict[str, Any]:
    """The Kueue manager Configuration (config.kueue.x-k8s.io/v1beta2) for `kueue`.

    Keeps the chart's own defaults for health, metrics, webhook, leader election, controller concurrency and client
    rate limits; sets from the settings: namespace, manageJobsWithoutQueueName (+ managedJobsNamespaceSelector),
    waitForPodsReady (timeout, blockAdmission, recoveryTimeout, requeuingStrategy with backoffLimitCount),
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
        "metrics": {"bindAddress": ":8443"},
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
    if kueue.feature_gates:
        config["featureGates"] = dict(kueue.feature_gates)
    return config


def chart_values(kueue: KueueSettings) -> dict[str, Any]:
    """Helm values for the Kueue chart: only `managerConfig.controllerManagerConfigYaml` (our Configuration)."""
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_configuration(kueue), sort_keys=False)}}


@dataclass(frozen=True)
class ChartReference:
    """Where the chart comes from: `chart` is an OCI/repo reference with `version`, or a local chart directory
    (then `version` is None). Both are pinned in toolchain/versions.toml [charts]."""

    chart: str
    version: Optional[str] = None


@dataclass(frozen=True)
class KueueInstallationArgs:
    """Inputs of KueueInstallation: the validated `kueue-cohorts:kueue` block and the chart reference."""

    settings: KueueSettings
    chart: ChartReference


class KueueInstallation(pulumi.ComponentResource):
    """Kueue's namespace and Helm chart (pulumi_kubernetes.helm.v4.Chart), configured the way our guide runs Kueue.

    Children: the Namespace `settings.namespace` and the Chart (its CRDs, RBAC, webhooks and manager Deployment).
    Attributes: `namespace` (str), `chart` (the Chart component), `configuration` (the manager Configuration dict).
    """

    def __init__(self, name: str, args: KueueInstallationArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:kueue:KueueInstallation", name, None, opts)
        self.namespace = args.settings.namespace
        self.configuration = manager_configuration(args.settings)
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=self.namespace,
                                                labels={"app.kubernetes.io/managed-by": "kueue-cohorts"}),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            chart=args.chart.chart,
            version=args.chart.version,
            namespace=self.namespace,
            values=chart_values(args.settings),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns]),
        )
        self.register_outputs({"namespace": self.namespace})
