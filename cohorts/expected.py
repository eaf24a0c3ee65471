"""What the stack puts on the cluster, as manifests: the one place ``cohorts`` asks the plans.

``verify`` compares the live cluster with exactly this list, and ``status --stack`` scopes its view to the cohorts
found here. When the plans module is reshaped (or a new kind joins the stack, e.g. the ValidatingAdmissionPolicies
and their bindings), this function is the one to repoint: ``cohorts.verify`` compares any kind that the cluster
serves, and its ``admission_policies_bound`` check picks up every ``ValidatingAdmissionPolicy`` returned here.
"""
from __future__ import annotations

from typing import Any

from components.plans import CohortPlan, flavor_spec, plan_inference_training, plan_shared_pool
from components.settings import NamespacePolicy, Settings


def cohort_plans(settings: Settings) -> list[CohortPlan]:
    """The stack's cohort plans, in stack order (inferenceTraining, then sharedPool). Pure."""
    flavor = settings.resource_flavor.name
    plans = []
    if settings.inference_training is not None:
        plans.append(plan_inference_training(settings.inference_training, flavor))
    if settings.shared_pool is not None:
        plans.append(plan_shared_pool(settings.shared_pool, flavor))
    return plans


def _namespace(plan: CohortPlan, manifest: dict[str, Any], labels: dict[str, str]) -> dict[str, Any] | None:
    """The Namespace as the stack leaves it: created with our labels (Create), only its selector label patched on
    (Label), or not ours at all (External: None)."""
    if plan.namespace_policy == NamespacePolicy.CREATE:
        return manifest
    if plan.namespace_policy == NamespacePolicy.LABEL:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": manifest["metadata"]["name"],
                                                                       "labels": dict(labels)}}
    return None


def expected_objects(settings: Settings) -> list[dict[str, Any]]:
    """Every object the stack's cohorts consist of, as the manifests the program sends (Kueue's JSON names).

    Args:
        settings: validated Settings of the stack.
    Returns:
        Manifests (dicts with apiVersion, kind, metadata.name, [metadata.namespace], and spec / value / ...), in
        creation order: the ResourceFlavor, then per cohort its Namespaces (per namespacePolicy),
        WorkloadPriorityClasses, Cohort object, ClusterQueues and LocalQueues. Pure: no cluster, no Pulumi.
        Not included (yet): checkpoint PVCs, TrainingRuntimes, InferenceServices and the Kueue installation.
    """
    out: list[dict[str, Any]] = [flavor_spec(settings.resource_flavor).manifest()]
    for plan in cohort_plans(settings):
        for ns in plan.namespaces:
            manifest = _namespace(plan, ns.manifest(), dict(ns.labels))
            if manifest is not None:
                out.append(manifest)
        out.extend(pc.manifest() for pc in plan.priority_classes)
        if plan.cohort_object is not None:
            out.append(plan.cohort_object.manifest())
        out.extend(cq.manifest() for cq in plan.cluster_queues)
        out.extend(lq.manifest() for lq in plan.local_queues)
    return out
