"""Assemble a whole stack from validated Settings: the provider, the ResourceFlavor and the cohort layouts."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.layouts import (
    InferenceTrainingCohort,
    InferenceTrainingCohortArgs,
    SharedPoolCohort,
    SharedPoolCohortArgs,
)
from components.plans import flavor_spec
from components.resources import ManifestResource
from components.settings import ClusterMode, ClusterSettings, Settings


def kubernetes_provider(cluster: ClusterSettings, project_root: Path, sandbox_kubeconfig: Optional[Path]) -> k8s.Provider:
    """The explicit kubernetes provider every resource of the stack uses.

    Args:
        cluster: `kueue-cohorts:cluster`. render: manifests to `<project_root>/<renderDir>` (no cluster needed);
            kubeconfig: the given file and context (or the client defaults); sandbox: `sandbox_kubeconfig`.
        project_root: the directory of Pulumi.yaml (renderDir is relative to it).
        sandbox_kubeconfig: the sandbox's kubeconfig path (sandbox.paths.kubeconfig_path()); needed in sandbox mode.
    Returns:
        A pulumi_kubernetes Provider named "k8s".
    Raises:
        ValueError: sandbox mode without a sandbox kubeconfig path.
    """
    if cluster.mode == ClusterMode.RENDER:
        target = Path(cluster.render_dir)
        if not target.is_absolute():
            target = project_root / target
        return k8s.Provider("k8s", render_yaml_to_directory=str(target))
    if cluster.mode == ClusterMode.SANDBOX:
        if sandbox_kubeconfig is None:
            raise ValueError("sandbox mode needs the sandbox kubeconfig path")
        return k8s.Provider("k8s", kubeconfig=str(sandbox_kubeconfig))
    kubeconfig = str(Path(cluster.kubeconfig).expanduser()) if cluster.kubeconfig else None
    return k8s.Provider("k8s", kubeconfig=kubeconfig, context=cluster.context)


def build_stack(settings: Settings, provider: pulumi.ProviderResource) -> dict[str, Any]:
    """Register the ResourceFlavor and every configured cohort layout with `provider`.

    Returns:
        The stack outputs: {"resourceFlavor": name, "inferenceTraining": {...}, "sharedPool": {...}} (layout keys
        only for configured layouts), plus the component objects under "_components" for callers that wire
        further components (not exported).
    """
    opts = pulumi.ResourceOptions(provider=provider)
    flavor = ManifestResource("resource-flavor", flavor_spec(settings.resource_flavor).manifest(), opts)
    outputs: dict[str, Any] = {"resourceFlavor": flavor.object_name}
    components: dict[str, Any] = {}
    if settings.inference_training is not None:
        cohort = InferenceTrainingCohort(
            settings.inference_training.cohort,
            InferenceTrainingCohortArgs(settings=settings.inference_training, flavor=flavor),
            opts,
        )
        components["inferenceTraining"] = cohort
        outputs["inferenceTraining"] = cohort._outputs()
    if settings.shared_pool is not None:
        pool = SharedPoolCohort(
            settings.shared_pool.cohort, SharedPoolCohortArgs(settings=settings.shared_pool, flavor=flavor), opts
        )
        components["sharedPool"] = pool
        outputs["sharedPool"] = pool._outputs()
    outputs["_components"] = components
    return outputs
