"""Assemble a whole stack from validated Settings: the provider, the in-cluster guardrails (admission policies), the
ResourceFlavor and the cohort layouts."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s

from kueue_cohorts.components.model.assembly import AssembledStack, assemble
from kueue_cohorts.components.model.render import RenderedLayout
from kueue_cohorts.components.resources.admission import AdmissionGuardrails, AdmissionGuardrailsArgs
from kueue_cohorts.components.resources.inference import InferenceService, InferenceServiceArgs
from kueue_cohorts.components.resources.judged import JudgedStack
from kueue_cohorts.components.resources.kueue_install import (
    ChartReference,
    KueueInstallation,
    KueueInstallationArgs,
    OutOfClusterManager,
    WebhookReadiness,
)
from kueue_cohorts.components.resources.layouts import (
    InferenceTrainingCohort,
    InferenceTrainingCohortArgs,
    SharedPoolCohort,
    SharedPoolCohortArgs,
)
from kueue_cohorts.components.resources.manifest import ManifestResource
from kueue_cohorts.components.resources.multikueue import (
    MultiKueueManager,
    MultiKueueManagerArgs,
    MultiKueueWorkerIdentity,
    MultiKueueWorkerIdentityArgs,
)
from kueue_cohorts.components.resources.preview_identity import PreviewIdentity, PreviewIdentityArgs
from kueue_cohorts.components.resources.training import PreemptibleTrainingRuntime, PreemptibleTrainingRuntimeArgs
from kueue_cohorts.components.settings import (
    ClusterMode,
    ClusterSettings,
    KubeClientSettings,
    MultiKueueWorker,
    Settings,
)
from kueue_cohorts.policy.rules.vocabulary.multikueue import WORKER_PROVIDER_PREFIX


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


#: The Pulumi names of the two cohort components: fixed, so that renaming a cohort (`inferenceTraining.cohort`,
#: `sharedPool.cohort`) updates `spec.cohortName` in place. Their children are named `<component>-cq-<queue>`, ...;
#: when the component was named after the cohort (before 2026-12-04), changing the cohort changed every child's URN,
#: so the engine created the new resources over the same objects and then deleted the old ones, and with them the
#: live ClusterQueues, LocalQueues and tenant Namespaces.
INFERENCE_TRAINING = "inference-training"
SHARED_POOL = "shared-pool"


def _renamed_from(opts: pulumi.ResourceOptions, cohort: str, name: str) -> pulumi.ResourceOptions:
    """`opts` plus an alias from the component's earlier name, the cohort's (stacks deployed before the names were
    fixed): the Pulumi SDK derives each child's alias from it (a child named `<cohort>-cq-x` becomes
    `<name>-cq-x`; pulumi/resource.py `inherited_child_alias`, sdk 3.259.0), so those stacks see no change."""
    if cohort == name:
        return opts
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(name=cohort)]))


def worker_provider(cluster: ClusterSettings, worker: MultiKueueWorker, project_root: Path,
                    kubeconfig: Optional[Path]) -> k8s.Provider:
    """The kubernetes provider of MultiKueue worker `worker`, named `k8s-worker-<name>` (the policy pack tells the
    clusters apart by this name, policy/rules/vocabulary/multikueue.py).

    Args:
        cluster: `kueue-cohorts:cluster` (the mode is the manager's, and the workers'). render: manifests go to
            `<renderDir>/workers/<name>`; sandbox and kubeconfig: the cluster of `kubeconfig` and `worker.context`
            (None in sandbox mode), with the manager's client rate limit.
        worker: the worker's settings. project_root: the directory of Pulumi.yaml.
        kubeconfig: the worker's kubeconfig path (the worker sandbox's in sandbox mode; None: the client's default).
    Returns:
        A pulumi_kubernetes Provider.
    """
    name = f"{WORKER_PROVIDER_PREFIX}{worker.name}"
    if cluster.mode == ClusterMode.RENDER:
        assert cluster.render_dir is not None  # settings_rules.check_cluster_target requires it in render mode
        target = Path(cluster.render_dir)
        if not target.is_absolute():
            target = project_root / target
        return k8s.Provider(name, render_yaml_to_directory=str(target / "workers" / worker.name))
    limit = cluster.kube_client_settings or KubeClientSettings()
    return k8s.Provider(name, kubeconfig=str(kubeconfig) if kubeconfig else None, context=worker.context,
                        kube_client_settings=k8s.KubeClientSettingsArgs(qps=limit.qps, burst=limit.burst))


def worker_providers(settings: Settings, project_root: Path,
                     kubeconfigs: Mapping[str, Optional[Path]]) -> dict[str, k8s.Provider]:
    """`worker_provider` of every MultiKueue worker of `settings` (none without `multiKueue`), each with its
    kubeconfig path from `kubeconfigs` (worker name -> path; absent or None: the client's default)."""
    workers = settings.multi_kueue.workers if settings.multi_kueue else []
    return {w.name: worker_provider(settings.cluster, w, project_root, kubeconfigs.get(w.name)) for w in workers}


def build_stack(settings: Settings, provider: pulumi.ProviderResource,
                kueue_chart: Optional[ChartReference] = None,
                out_of_cluster_manager: Optional[OutOfClusterManager] = None, *,
                namespace_owner: str, webhook_readiness: Optional[WebhookReadiness] = None,
                assembled: Optional[AssembledStack] = None,
                worker_providers: Optional[Mapping[str, pulumi.ProviderResource]] = None,
                worker_kubeconfigs: Optional[Mapping[str, pulumi.Input[str]]] = None) -> dict[str, Any]:
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
        webhook_readiness: how to know the installed Kueue's webhooks answer before dependents register
            (`Target.webhook_readiness`); None: the out-of-cluster manager's probe, or no wait.
        namespace_owner: the stack's ownership mark for the Namespaces it creates
            (`components.model.kueue.namespace_owner(project, stack)`; the namespace preflight checks it).
        assembled: `assemble(settings, namespace_owner)` when the caller has it (the settings check's); default:
            assembled here.
        worker_providers: MultiKueue worker name -> its provider (`worker_provider`); required for every worker of
            `settings.multi_kueue`. worker_kubeconfigs: worker name -> its kubeconfig text (a Pulumi secret) for
            each kubeconfig Secret the stack writes (`components.model.multikueue.writes_secret`).
    Raises:
        ValueError: install requested without a chart reference; a worker without a provider.
        KeyError: a kubeconfig Secret the stack writes without its worker's kubeconfig.
    Returns:
        The stack outputs: {"resourceFlavor": name, "admissionPolicies": [names], "inferenceTraining": {...},
        "sharedPool": {...}, "previewIdentity": {...}, "multiKueue": {...}} (layout, identity and MultiKueue keys
        only when configured), plus the component objects under "_components" for callers that wire further
        components (not exported).
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
        args = KueueInstallationArgs(settings.kueue, kueue_chart, out_of_cluster_manager, webhook_readiness,
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
    if rendered.multikueue:  # the AdmissionChecks before the ClusterQueues that name them
        manager = MultiKueueManager("multikueue", MultiKueueManagerArgs(rendered.multikueue,
                                                                        dict(worker_kubeconfigs or {})), opts)
        components["multiKueue"] = manager
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[manager]))
    outputs: dict[str, Any] = {"resourceFlavor": rendered.flavors[0].name,
                               "admissionPolicies": sorted(rail.name for rail in stack.guardrails)}
    _register_cohorts(judged, provider, opts, "", components, outputs)
    if rendered.workers:
        outputs["multiKueue"] = {"clusters": [w.name for w in rendered.workers], "workers": {}}
    for worker in rendered.workers:
        if worker.name not in (worker_providers or {}):
            raise ValueError(f"MultiKueue worker {worker.name} has no provider")
        worker_provider_ = (worker_providers or {})[worker.name]
        worker_opts = pulumi.ResourceOptions(provider=worker_provider_)
        cohorts: dict[str, Any] = {}
        worker_outputs: dict[str, Any] = {}
        worker_stack = JudgedStack.prejudged(worker.settings, AssembledStack(worker.stack, (), (), (), None, ()),
                                             namespace_owner)  # judged by the program's check, cluster by cluster
        _register_cohorts(worker_stack, worker_provider_, worker_opts, f"{worker.name}-", cohorts, worker_outputs)
        # after the cohorts: the identity's Roles live in the dispatched namespaces they create
        made = [c for c in cohorts.values() if isinstance(c, pulumi.Resource)]
        grants = MultiKueueWorkerIdentity(f"{worker.name}-multikueue", MultiKueueWorkerIdentityArgs(worker.identity),
                                          pulumi.ResourceOptions(provider=worker_provider_, depends_on=made))
        components[f"worker/{worker.name}"] = {"identity": grants, **cohorts}
        outputs["multiKueue"]["workers"][worker.name] = worker_outputs
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


def _register_cohorts(judged: JudgedStack, provider: pulumi.ProviderResource, opts: pulumi.ResourceOptions,
                      prefix: str, components: dict[str, Any], outputs: dict[str, Any]) -> None:
    """Register one cluster's ResourceFlavors, cohort layouts, training runtimes and inference services from
    `judged` (the manager's stack, or a MultiKueue worker's with `prefix` `<worker>-` on every component name: the
    cohorts are `<prefix>inference-training` and `<prefix>shared-pool`, fixed like the manager's), each after the
    flavors, with `opts` (provider and dependencies); record them in `components` and their names in `outputs`."""
    settings, rendered = judged.settings, judged.assembled.rendered
    flavors = [ManifestResource.of(f"{prefix}resource-flavor" if i == 0 else f"{prefix}resource-flavor-{item.name}",
                                   item, opts)
               for i, item in enumerate(rendered.flavors)]
    flavor = flavors[0]  # the single-flavor keys' flavor; the cohorts' ClusterQueues wait for it
    outputs["resourceFlavor"] = flavor.object_name
    if len(flavors) > 1:
        outputs["resourceFlavors"] = [f.object_name for f in flavors]
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=flavors[1:]))
    if settings.inference_training is not None and rendered.inference_training is not None:
        layout = rendered.inference_training
        name = f"{prefix}{INFERENCE_TRAINING}"
        cohort = InferenceTrainingCohort(
            name, InferenceTrainingCohortArgs(stack=judged, flavor=flavor),
            _renamed_from(opts, f"{prefix}{settings.inference_training.cohort}", name))
        components["inferenceTraining"] = cohort
        outputs["inferenceTraining"] = cohort.outputs
        runtimes = _training_runtimes(settings, layout, cohort, provider, prefix)
        if runtimes:
            components["trainingRuntimes"] = runtimes
            outputs["trainingRuntimes"] = sorted(runtimes)
        services = _inference_services(settings, layout, cohort, provider)
        if services:
            components["inferenceServices"] = services
            outputs["inferenceServices"] = sorted(services)
    if settings.shared_pool is not None and rendered.shared_pool is not None:
        name = f"{prefix}{SHARED_POOL}"
        pool = SharedPoolCohort(name, SharedPoolCohortArgs(stack=judged, flavor=flavor),
                                _renamed_from(opts, f"{prefix}{settings.shared_pool.cohort}", name))
        components["sharedPool"] = pool
        outputs["sharedPool"] = pool.outputs


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
                       provider: pulumi.ProviderResource, prefix: str = "") -> dict[str, PreemptibleTrainingRuntime]:
    """One PreemptibleTrainingRuntime per training namespace (the objects of `layout.runtimes`, on the namespace's
    CheckpointVolume), when configured; `prefix` (`<worker>-`) before each name on a MultiKueue worker."""
    if settings.training_runtime is None:
        return {}
    runtimes = {}
    for runtime, _ in layout.runtimes:
        namespace = runtime.namespace or ""
        runtimes[f"{namespace}/{settings.training_runtime.name}"] = PreemptibleTrainingRuntime(
            f"{prefix}runtime-{namespace}",
            PreemptibleTrainingRuntimeArgs(settings=settings.training_runtime,
                                           checkpoint_volume=cohort.training_checkpoints[namespace]),
            pulumi.ResourceOptions(provider=provider, depends_on=[cohort]),
        )
    return runtimes
