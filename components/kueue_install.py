"""KueueInstallation: Kueue's Helm chart with a manager Configuration built from typed settings.

Upstream: kubernetes-sigs/kueue charts/kueue (values.yaml `managerConfig.controllerManagerConfigYaml`) and
apis/config/v1beta2/configuration_types.go (v0.19.2). The chart's CRDs come with it, so one `pulumi up` on a fresh
cluster installs Kueue and then the cohorts (the layouts depend on this component).
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Callable, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.kueue_config import chart_values, manager_configuration
from components.settings import KueueSettings

#: Helm release name of the chart (its objects are then named kueue-*, as in Kueue's released manifests).
RELEASE_NAME = "kueue"


@dataclass(frozen=True)
class ChartReference:
    """Where the chart comes from: `chart` is an OCI/repo reference with `version`, or a local chart directory
    (then `version` is None). Both are pinned in toolchain/versions.toml [charts]."""

    chart: str
    version: Optional[str] = None


@dataclass(frozen=True)
class OutOfClusterManager:
    """A Kueue manager that runs outside the cluster (the local sandbox's): its webhook server's base URL, e.g.
    "https://127.0.0.1:9443", and the PEM of the CA that signed its serving certificate."""

    webhook_base_url: str
    ca_bundle_pem: bytes


def _service_to_url(client_config: dict, manager: OutOfClusterManager) -> dict:
    service = client_config.get("service")
    if not service:
        return client_config
    path = service.get("path", "/")
    return {"url": manager.webhook_base_url.rstrip("/") + path,
            "caBundle": base64.b64encode(manager.ca_bundle_pem).decode()}


def point_webhooks_at(manager: OutOfClusterManager) -> Callable[[pulumi.ResourceTransformArgs],
                                                                Optional[pulumi.ResourceTransformResult]]:
    """A Pulumi resource transform for the chart's children that sends every admission webhook and CRD conversion
    webhook to `manager` (service reference -> URL with our caBundle, as controller-runtime envtest does), and
    marks every object `pulumi.com/patchForce` (the sandbox already applied the same CRDs and webhooks)."""

    def transform(args: pulumi.ResourceTransformArgs) -> Optional[pulumi.ResourceTransformResult]:
        props = dict(args.props)
        if args.custom and isinstance(props.get("metadata"), dict):
            # The sandbox applied the same CRDs and webhook configurations with its own field manager: take them over.
            metadata = dict(props["metadata"])
            metadata["annotations"] = {**(metadata.get("annotations") or {}), "pulumi.com/patchForce": "true"}
            props["metadata"] = metadata
        if args.type_.endswith("WebhookConfiguration") and args.type_.startswith("kubernetes:admissionregistration"):
            props["webhooks"] = [
                {**hook, "clientConfig": _service_to_url(hook.get("clientConfig", {}), manager)}
                for hook in props.get("webhooks") or []
            ]
            return pulumi.ResourceTransformResult(props, args.opts)
        if args.type_ == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition":
            spec = dict(props.get("spec") or {})
            webhook = (spec.get("conversion") or {}).get("webhook")
            if webhook and webhook.get("clientConfig", {}).get("service"):
                spec["conversion"] = {**spec["conversion"], "webhook": {
                    **webhook, "clientConfig": _service_to_url(webhook["clientConfig"], manager)}}
                props["spec"] = spec
                return pulumi.ResourceTransformResult(props, args.opts)
        return pulumi.ResourceTransformResult(props, args.opts) if props != dict(args.props) else None

    return transform


@dataclass(frozen=True)
class KueueInstallationArgs:
    """Inputs of KueueInstallation: the validated `kueue-cohorts:kueue` block and the chart reference.

    out_of_cluster_manager: when set (the local sandbox), the chart's manager Deployment is scaled to 0 and its
    webhooks point at that manager instead of the in-cluster Service.
    """

    settings: KueueSettings
    chart: ChartReference
    out_of_cluster_manager: Optional[OutOfClusterManager] = None


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
        values = chart_values(args.settings)
        transforms = []
        if args.out_of_cluster_manager is not None:
            values["controllerManager"] = {"replicas": 0}
            transforms.append(point_webhooks_at(args.out_of_cluster_manager))
        # Release name "kueue" (not the resource name "kueue-chart"): the chart then names its objects as Kueue's
        # own manifests do (kueue-controller-manager, kueue-mutating-webhook-configuration, ...), so a cluster that
        # already has Kueue's webhook configurations (the sandbox's) has them taken over instead of duplicated.
        self.chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            name=RELEASE_NAME,
            chart=args.chart.chart,
            version=args.chart.version,
            namespace=self.namespace,
            values=values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns], transforms=transforms or None),
        )
        self.register_outputs({"namespace": self.namespace})
