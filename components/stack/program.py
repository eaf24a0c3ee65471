"""Assemble a whole stack from validated Settings: the provider, the in-cluster guardrails (admission policies), the
ResourceFlavor and the cohort layouts."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.model.assembly import AssembledStack, assemble
from components.model.render import RenderedLayout
from components.resources.admission import AdmissionGuardrails, AdmissionGuardrailsArgs
from components.resources.inference import InferenceService, InferenceServiceArgs
from components.resources.judged import JudgedStack
from components.resources.kueue_install import (
    ChartReference,
    KueueInstallation,
    KueueInstallationArgs,
    OutOfClusterManager,
)
from components.resources.layouts import (
    InferenceTrainingCohort,
    InferenceTrainingCohortArgs,
    SharedPoolCohort,
    SharedPoolCohortArgs,
)
from components.resources.manifest import ManifestResource
from components.resources.preview_identity import PreviewIdentity, PreviewIdentityArgs
from components.resources.training import PreemptibleTrainingRuntime, PreemptibleTrainingRuntimeArgs
from components.settings import ClusterMode, ClusterSettings, KubeClientSettings, Settings


def kubernetes_provider(cluster: ClusterSettings, project_root: Path, kubeconfig: Optional[Path]) -> k8s.Provider:
    """The explicit kubernetes provider every resource of the stack uses.

    Args:
        cluster: `kueue-cohorts:cluster`. render: manifests go to `<project_root>/<renderDir>` (no cluster needed);
            kubeconfig and sandbox: the cluster of `kubeconfig` and `cluster.context`, with the client rate limit
            of `cluster.kubeClientSettings` (default qps 200, burst 400; the provider's own default is 50/120).
        project_root: the directory of Pulumi.yaml (renderDir is relative to it).
        kubeconfig: kubeconfig path (the sandbox's in sandbox mode; None: the client's default).
    Returns:
        A pulumi_kubernetes Provider named "k8s".
    Raises:
        ValueError: sandbox mode without the sandbox's kubeconfig path.
    """
    if cluster.mode == ClusterMode.RENDER:
        assert cluster.render_dir is not None  # settings_rules.check_cluster_target requires it in render mode
        target = Path(cluster.render_dir)
        if not target.is_absolute():
            target = project_root / target
        return k8s.Provider("k8s", render_yaml_to_directory=str(target))
    if cluster.mode == ClusterMode.SANDBOX and kubeconfig is None:
        raise ValueError("sandbox mode needs the sandbox kubeconfig path")
    limit = cluster.kube_client_settings or KubeClientSettings()
    return k8s.Provider("k8s", kubeconfig=str(kubeconfig) if kubeconfig else None, context=cluster.context,
                        kube_client_settings=k8s.KubeClientSettingsArgs(qps=limit.qps, burst=limit.burst))


def build_stack(settings: Settings, provider: pulumi.ProviderResource,
                kueue_chart: Optional[ChartReference] = None,
                out_of_cluster_manager: Optional[OutOfClusterManager] = None, *,
                namespace_owner: str, assembled: Optional[AssembledStack] = None) -> dict[str, Any]:
    """Register Kueue (when `settings.kueue.install`), the admission guardrails, the ResourceFlavors, every configured
    cohort layout with its training runtimes and inference services, then the preview identity (when
    `settings.preview_identity`), with `provider`: exactly the objects of `assembled` (the one assembler,
    `components.model.assembly.assemble`), each component adding only lifecycle. Kueue objects depend on the
    KueueInstallation, so its CRDs come first, and on the guardrails (AdmissionGuardrails), so that the policies of
    this config judge them.

    Args:
        settings: validated Settings. provider: the kubernetes provider.
        kueue_chart: where the Kueue chart comes from; required when settings.kueue.install is true.
        out_of_cluster_manager: the sandbox's Kueue manager, which the chart's webhooks then point at.
        namespace_owner: the stack's ownership mark for the Namespaces it creates
            (`components.model.kueue.namespace_owner(project, stack)`; the namespace preflight checks it).
        assembled: `assemble(settings, namespace_owner)` when the caller has it (the settings check's); default:
            assembled here.
    Raises:
        ValueError: install requested without a chart reference.
    Returns:
        The stack outputs: {"resourceFlavor": name, "admissionPolicies": [names], "inferenceTraining": {...},
        "sharedPool": {...}, "previewIdentity": {...}} (layout and identity keys only when configured), plus the
        component objects under "_components" for callers that wire further components (not exported).
    """
    stack = assembled if assembled is not None else assemble(settings, namespace_owner)
    rendered = stack.rendered
    judged = JudgedStack.prejudged(settings, stack, namespace_owner)  # registered as assembled, not judged again
    opts = pulumi.ResourceOptions(provider=provider)
    components: dict[str, Any] = {}
    if settings.kueue.install:
        if kueue_chart is None:
            raise ValueError("kueue.install is true but no Kueue chart reference was given")
        kueue_ns = next(r for r in rendered.kueue if r.kind == "Namespace")
        args = KueueInstallationArgs(settings.kueue, kueue_chart, out_of_cluster_manager,
                                     namespace_owner=namespace_owner, namespace=kueue_ns)
        installation = KueueInstallation("kueue", args, opts)
        components["kueue"] = installation
        opts = pulumi.ResourceOptions(provider=provider, depends_on=[installation])
    admission = AdmissionGuardrails("admission", AdmissionGuardrailsArgs(judged),
                                    pulumi.ResourceOptions(provider=provider))
    components["admission"] = admission
    # The cohorts wait for the guardrails: an update of both priority classes (or new ClusterQueue names) is then
    # judged by the policies of the new config, never by the old ones.
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[admission]))
    flavors = [ManifestResource.of("resource-flavor" if i == 0 else f"resource-flavor-{item.name}", item, opts)
               for i, item in enumerate(rendered.flavors)]
    flavor = flavors[0]  # the single-flavor keys' flavor; the cohorts' ClusterQueues wait for it
    outputs: dict[str, Any] = {"resourceFlavor": flavor.object_name,
                               "admissionPolicies": sorted(rail.name for rail in stack.guardrails)}
    if len(flavors) > 1:
        outputs["resourceFlavors"] = [f.object_name for f in flavors]
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=flavors[1:]))
    if settings.inference_training is not None and rendered.inference_training is not None:
        layout = rendered.inference_training
        cohort = InferenceTrainingCohort(settings.inference_training.cohort,
                                         InferenceTrainingCohortArgs(stack=judged, flavor=flavor), opts)
        components["inferenceTraining"] = cohort
        outputs["inferenceTraining"] = cohort.outputs
        runtimes = _training_runtimes(settings, layout, cohort, provider)
        if runtimes:
            components["trainingRuntimes"] = runtimes
            outputs["trainingRuntimes"] = sorted(runtimes)
        services = _inference_services(settings, layout, cohort, provider)
        if services:
            components["inferenceServices"] = services
            outputs["inferenceServices"] = sorted(services)
    if settings.shared_pool is not None and rendered.shared_pool is not None:
        pool = SharedPoolCohort(settings.shared_pool.cohort, SharedPoolCohortArgs(stack=judged, flavor=flavor), opts)
        components["sharedPool"] = pool
        outputs["sharedPool"] = pool.outputs
    plan = stack.identity
    if plan is not None:  # last: its Roles live in the namespaces the components above create
        before = [c for key in ("kueue", "inferenceTraining", "sharedPool") if (c := components.get(key)) is not None]
        identity = PreviewIdentity("preview-identity", PreviewIdentityArgs(plan),
                                   pulumi.ResourceOptions(provider=provider, depends_on=before))
        components["previewIdentity"] = identity
        outputs["previewIdentity"] = {"subject": plan.subject.manifest(),
                                      "roleNamespaces": sorted(plan.access.namespaced)}
    outputs["_components"] = components
    return outputs


def _inference_services(settings: Settings, layout: RenderedLayout, cohort: InferenceTrainingCohort,
                        provider: pulumi.ProviderResource) -> dict[str, InferenceService]:
    """One InferenceService component per `inferenceTraining.inference.services[]` (its rendered object,
    `layout.services[i]`, judged with the cohort's stack), after the cohort's queues."""
    assert settings.inference_training is not None  # called for a stack with inferenceTraining only
    services = {}
    for isvc, rendered in zip(settings.inference_training.inference.services, layout.services, strict=True):
        namespace = rendered.namespace or ""
        services[f"{namespace}/{isvc.name}"] = InferenceService(
            f"isvc-{namespace}-{isvc.name}", InferenceServiceArgs(settings=isvc, cohort=cohort),
            pulumi.ResourceOptions(provider=provider, depends_on=[cohort]),
        )
    return services


def _training_runtimes(settings: Settings, layout: RenderedLayout, cohort: InferenceTrainingCohort,
                       provider: pulumi.ProviderResource) -> dict[str, PreemptibleTrainingRuntime]:
    """One PreemptibleTrainingRuntime per training namespace (the objects of `layout.runtimes`, on the namespace's
    CheckpointVolume), when configured."""
    if settings.training_runtime is None:
        return {}
    runtimes = {}
    for runtime, _ in layout.runtimes:
        namespace = runtime.namespace or ""
        runtimes[f"{namespace}/{settings.training_runtime.name}"] = PreemptibleTrainingRuntime(
            f"runtime-{namespace}",
            PreemptibleTrainingRuntimeArgs(settings=settings.training_runtime,
                                           checkpoint_volume=cohort.training_checkpoints[namespace]),
            pulumi.ResourceOptions(provider=provider, depends_on=[cohort]),
        )
    return runtimes
