"""What the stack puts on the cluster, as manifests: the one place ``cohorts`` asks the program for them.

``verify`` compares the live cluster with exactly this list (``status --stack`` scopes its view to the cohorts of
``components.plans.stack_plans``). The objects come from ``components.render.render_stack`` (the same render
functions the components register and the settings check judges), so a kind the stack gains there (e.g. the
ValidatingAdmissionPolicies and their bindings) is verified without a change here: ``cohorts.verify`` compares any
kind the cluster serves, and its ``admission_policies_bound`` check picks up every ``ValidatingAdmissionPolicy``.
"""
from __future__ import annotations

from typing import Any

from components.admission_manifests import render_admission
from components.plans import stack_plans
from components.render import Rendered, render_stack
from components.settings import NamespacePolicy, Settings


def _label_only(settings: Settings) -> dict[str, dict[str, str]]:
    """Namespaces of a `namespacePolicy: Label` layout -> the selector label the stack patches on (its only part
    of the Namespace: the component is a NamespacePatch of metadata.labels)."""
    return {ns.name: dict(ns.labels) for plan in stack_plans(settings)
            if plan.namespace_policy == NamespacePolicy.LABEL for ns in plan.namespaces}


def expected_objects(settings: Settings) -> list[dict[str, Any]]:
    """Every object the stack registers, as the manifest the program sends (the API's JSON field names).

    Args:
        settings: validated Settings of the stack.
    Returns:
        Manifests (dicts with apiVersion, kind, metadata.name, [metadata.namespace], and spec / value / data ...)
        in registration order: the ResourceFlavor, per cohort its Namespaces (Create: the whole Namespace; Label:
        only the selector label; External: none), WorkloadPriorityClasses, Cohort object, ClusterQueues,
        LocalQueues, checkpoint PVCs and InferenceServices, then the TrainingRuntimes with their ConfigMaps, then
        the in-cluster guardrails (ValidatingAdmissionPolicies and bindings, `render_admission`).
        Objects rendered only to be judged (``Rendered.registered`` False) are left out. Pure: no cluster, no
        Pulumi. Not included: what the Kueue Helm chart installs when ``kueue.install`` is true.
    """
    labels_only = _label_only(settings)
    out = []
    for rendered in render_stack(settings) + render_admission(settings):
        if not rendered.registered:
            continue
        manifest = dict(rendered.manifest)
        if manifest["kind"] == "Namespace" and manifest["metadata"]["name"] in labels_only:
            name = manifest["metadata"]["name"]
            manifest = {"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": name, "labels": labels_only[name]}}
        out.append(manifest)
    return out


def judged_objects(settings: Settings) -> list[Rendered]:
    """Every object the settings check judges: ``render_stack`` (also what is rendered only to be judged, such as
    Kueue's manager ConfigMap when the stack does not install Kueue) and ``render_admission``. ``cohorts verify``
    runs the rule book over these with their live twins in their place."""
    return render_stack(settings) + render_admission(settings)
