"""KueueInstallation: Kueue's Helm chart with a manager Configuration built from typed settings.

Upstream: kubernetes-sigs/kueue charts/kueue (values.yaml `managerConfig.controllerManagerConfigYaml`) and
apis/config/v1beta2/configuration_types.go (v0.19.2). The chart's CRDs come with it, so one `pulumi up` on a fresh
cluster installs Kueue and then the cohorts (the layouts depend on this component).

Kueue's admission webhooks (failurePolicy Fail) must answer before any Kueue object is written, and on a fresh
cluster they do not yet when the chart's objects exist: the manager Pod still starts, or an out-of-cluster manager
is late. The kubernetes provider retries a create only on "not found", so a ResourceFlavor registered then fails
the whole `up`. The component therefore holds its dependents back: when a `WebhookReadiness` is known, it has one
more child, the ConfigMap `kueue-cohorts-webhooks-ready` in Kueue's namespace, whose data is resolved only once
the probe has seen Kueue's webhooks answer (during `up`; a preview does not wait). Everything that depends on the
component (`depends_on=[installation]`, as the stack's layouts do) depends on that child too.
"""
from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import pulumi
import pulumi_kubernetes as k8s
from kubernetes import client, config

from kueue_cohorts.components.checks.chart_values import merged
from kueue_cohorts.components.model.kueue_chart import RELEASE_NAME
from kueue_cohorts.components.model.manager_config import chart_values, manager_configuration
from kueue_cohorts.components.model.render import Rendered, kueue_namespace
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.settings import KueueSettings
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_LABELS


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


def _service_to_url(client_config: dict[str, Any], manager: OutOfClusterManager) -> dict[str, Any]:
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
        props: dict[str, Any] = dict(args.props)
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


#: A ResourceFlavor that is never stored: the probes create it as a dry run (through the apiserver) or only ask
#: the validating webhook about it (out-of-cluster manager). Kueue validates and defaults ResourceFlavors with
#: `mresourceflavor.kb.io` / `vresourceflavor.kb.io` (config/components/webhook/manifests.yaml, v0.19.2).
PROBE_FLAVOR: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                "metadata": {"name": "kueue-cohorts-webhook-probe"}, "spec": {}}
VALIDATE_FLAVOR_PATH = "/validate-kueue-x-k8s-io-v1beta2-resourceflavor"
#: The marker child that dependents wait for (see the module docstring).
READY_CONFIGMAP = "kueue-cohorts-webhooks-ready"
DEFAULT_WEBHOOK_TIMEOUT_S = 300.0


class KueueWebhooksNotAnswering(RuntimeError):
    """Kueue's webhooks did not answer within the timeout; the message names the probe and its last error."""


@dataclass(frozen=True)
class ClusterAccess:
    """How the program reaches the cluster's apiserver for the webhook probe: a kubeconfig file path (None: the
    client's default, `$KUBECONFIG` or ~/.kube/config) and a context name (None: its current context), the same
    pair the stack's kubernetes provider uses (`kueue-cohorts:cluster.kubeconfig` / `cluster.context`)."""

    kubeconfig: Optional[str] = None
    context: Optional[str] = None


def probe_through_apiserver(access: ClusterAccess) -> Callable[[], None]:
    """Return a probe that creates :data:`PROBE_FLAVOR` as a server-side dry run (`dryRun=All`), which goes through
    Kueue's mutating and validating ResourceFlavor webhooks; it returns when the apiserver accepted it and raises
    (kubernetes.client.ApiException, OSError, ...) while the CRD is not served or a webhook does not answer."""

    def probe() -> None:

        api = config.new_client_from_config(
            config_file=access.kubeconfig, context=access.context)
        try:
            client.CustomObjectsApi(api).create_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "resourceflavors", PROBE_FLAVOR, dry_run="All")
        finally:
            api.close()

    return probe


def probe_out_of_cluster_manager(manager: OutOfClusterManager, timeout: float = 5.0) -> Callable[[], None]:
    """Return a probe that sends an AdmissionReview (admission.k8s.io/v1, operation CREATE, dryRun) of
    :data:`PROBE_FLAVOR` to the manager's validating ResourceFlavor webhook, verifying its serving certificate with
    `manager.ca_bundle_pem`; it returns when the webhook answers `allowed: true` and raises otherwise (OSError,
    ssl.SSLError, ValueError)."""

    def probe() -> None:
        uid = str(uuid.uuid4())
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": uid, "operation": "CREATE", "dryRun": True, "name": PROBE_FLAVOR["metadata"]["name"],
            "kind": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "ResourceFlavor"},
            "resource": {"group": "kueue.x-k8s.io", "version": "v1beta2", "resource": "resourceflavors"},
            "userInfo": {"username": "kueue-cohorts-webhook-probe"}, "object": PROBE_FLAVOR}}
        ctx = ssl.create_default_context(cadata=manager.ca_bundle_pem.decode())
        req = urllib.request.Request(manager.webhook_base_url.rstrip("/") + VALIDATE_FLAVOR_PATH,
                                     data=json.dumps(review).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            answer = json.loads(resp.read())
        response = answer.get("response") or {}
        if response.get("uid") != uid or response.get("allowed") is not True:
            raise ValueError(f"the webhook answered {answer!r}")

    return probe


@dataclass(frozen=True)
class WebhookReadiness:
    """How KueueInstallation knows that Kueue's webhooks answer: `probe` returns when they do and raises while
    they do not; `what` names it in messages; `timeout_s` (seconds) bounds the wait; `interval_s` (seconds) is the
    pause between attempts."""

    probe: Callable[[], None]
    what: str
    timeout_s: float = DEFAULT_WEBHOOK_TIMEOUT_S
    interval_s: float = 1.0

    @classmethod
    def through_apiserver(cls, access: ClusterAccess, timeout_s: float = DEFAULT_WEBHOOK_TIMEOUT_S) -> WebhookReadiness:
        """Probe through the cluster's apiserver (:func:`probe_through_apiserver`): the check for a real cluster."""
        return cls(probe_through_apiserver(access), "a dry-run ResourceFlavor through the apiserver", timeout_s)

    @classmethod
    def of_manager(cls, manager: OutOfClusterManager,
                   timeout_s: float = DEFAULT_WEBHOOK_TIMEOUT_S) -> WebhookReadiness:
        """Probe the out-of-cluster manager's webhook server itself (:func:`probe_out_of_cluster_manager`)."""
        return cls(probe_out_of_cluster_manager(manager),
                   f"an AdmissionReview to {manager.webhook_base_url}{VALIDATE_FLAVOR_PATH}", timeout_s)


def wait_for_webhooks(readiness: WebhookReadiness, clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep) -> tuple[float, int]:
    """Call `readiness.probe` until it returns; return (seconds waited, number of failed attempts before). Raises
    KueueWebhooksNotAnswering (naming the probe, the timeout and the last error) when it still raises after
    `readiness.timeout_s` seconds."""
    start = clock()
    failures = 0
    while True:
        try:
            readiness.probe()
            return clock() - start, failures
        except Exception as exc:  # noqa: BLE001 - every failure of a not-yet-serving webhook means "not yet"
            last = exc
            failures += 1
        if clock() - start >= readiness.timeout_s:
            raise KueueWebhooksNotAnswering(
                f"Kueue's webhooks did not answer within {readiness.timeout_s:g} s ({readiness.what}); last error: "
                f"{str(last).strip()[:500]}. Check that the Kueue manager runs (kubectl -n <kueue namespace> get "
                f"pods, or `kueue-cohorts sandbox status` on the sandbox)") from None
        sleep(readiness.interval_s)


@dataclass(frozen=True)
class KueueInstallationArgs:
    """Inputs of KueueInstallation."""

    settings: KueueSettings
    """The `kueue-cohorts:kueue` block (namespace, manager Configuration, checked chart `values`); required
    (`KueueSettings()` takes every default: namespace kueue-system, the guide's integrations)."""
    chart: ChartReference
    """Where Kueue's chart comes from; required. The published chart pinned in toolchain/versions.toml [charts]:
    `ChartReference("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2")`; or a local chart directory."""
    out_of_cluster_manager: Optional[OutOfClusterManager] = None
    """A Kueue manager that runs outside the cluster (the local sandbox's): the chart's manager Deployment is then
    scaled to 0 and its webhooks point at that manager. Omitted: the chart's own manager runs in the cluster."""
    webhook_readiness: Optional[WebhookReadiness] = field(default=None, compare=False)
    """How to know that Kueue's webhooks answer before dependents register (module docstring). Omitted: probed at
    the out-of-cluster manager when there is one, else not waited for (render mode). On a kubeconfig cluster the stack
    program passes `WebhookReadiness.through_apiserver(ClusterAccess(kubeconfig, context))`
    (components/stack/target.py `Target.webhook_readiness`)."""
    namespace_owner: Optional[str] = None
    """The stack's ownership mark (`components.model.kueue.namespace_owner`), set as the `kueue-cohorts/owner`
    annotation of Kueue's Namespace so that the namespace preflight knows this stack created it. Omitted: no
    annotation."""
    namespace: Optional[Rendered] = None
    """Kueue's rendered Namespace (`components.model.render.kueue_namespace`, part of the assembled stack: the stack
    program passes it), registered as it is. Omitted: rendered here from `settings` and `namespace_owner`."""

    def rendered_namespace(self) -> Rendered:
        """Kueue's Namespace as the model renders it (`namespace`, else `components.model.render.kueue_namespace`)."""
        return self.namespace if self.namespace is not None else kueue_namespace(self.settings, self.namespace_owner)

    def readiness(self) -> Optional[WebhookReadiness]:
        """The WebhookReadiness in effect: `webhook_readiness`, else the out-of-cluster manager's, else None."""
        if self.webhook_readiness is not None:
            return self.webhook_readiness
        if self.out_of_cluster_manager is not None:
            return WebhookReadiness.of_manager(self.out_of_cluster_manager)
        return None


class KueueInstallation(pulumi.ComponentResource):
    """Kueue's namespace and Helm chart (pulumi_kubernetes.helm.v4.Chart), configured the way our guide runs Kueue.

    Children: the Namespace `settings.namespace` (as rendered), the Chart (its CRDs, RBAC, webhooks and manager
    Deployment) and, when a WebhookReadiness is in effect (`args.readiness()`), the ConfigMap
    `kueue-cohorts-webhooks-ready` created only after the chart and after Kueue's webhooks answered (`up` fails
    with KueueWebhooksNotAnswering after the readiness timeout). Attributes: `namespace` (str), `chart` (the Chart
    component), `configuration` (the manager Configuration dict), `webhooks_ready` (the ConfigMap, or None).
    """

    def __init__(self, name: str, args: KueueInstallationArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:kueue:KueueInstallation", name, None, opts)
        self.namespace = args.settings.namespace
        self.configuration = manager_configuration(args.settings)
        ns = ManifestResource.of(f"{name}-ns", args.rendered_namespace(), pulumi.ResourceOptions(parent=self))
        values = merged(chart_values(args.settings), args.settings.values)  # kueue.values, checked; ours win
        transforms: list[pulumi.ResourceTransform] = []
        if args.out_of_cluster_manager is not None:
            values = merged({"controllerManager": {"replicas": 0}}, values)  # the manager runs out of cluster
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
        self.webhooks_ready: Optional[k8s.core.v1.ConfigMap] = None
        readiness = args.readiness()
        if readiness is not None:
            answered: pulumi.Output[str] = self.chart.urn.apply(lambda _: _answered(readiness))
            self.webhooks_ready = k8s.core.v1.ConfigMap(
                f"{name}-webhooks-ready",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=READY_CONFIGMAP, namespace=self.namespace,
                                                    labels=dict(MANAGED_LABELS)),
                data={"webhooks": answered},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, self.chart]),
            )
        self.register_outputs({"namespace": self.namespace})


async def _answered(readiness: WebhookReadiness) -> str:
    """Wait (in a worker thread, so the program's event loop keeps registering other resources) until Kueue's
    webhooks answer, during an update only; return the ConfigMap's constant value "answered"."""
    if not pulumi.runtime.is_dry_run():
        waited, failures = await asyncio.to_thread(wait_for_webhooks, readiness)
        pulumi.log.info(f"Kueue's webhooks answered after {waited:.1f} s and {failures} failed probes "
                        f"({readiness.what})")
    return "answered"
