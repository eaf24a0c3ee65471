"""What the stack puts on the cluster, as manifests: the one place ``cohorts`` asks the program for them.

``verify`` compares the live cluster with exactly this list (``status --stack`` scopes its view to the cohorts of
``components.model.plans.stack_plans``). The objects are the assembled stack's
(``components.model.assembly.assemble``, the one
assembler whose objects the components register and the settings check judges), so a kind the stack gains there is
verified without a change here: ``cohorts.verify`` compares any kind the cluster serves, and its
``admission_policies_bound`` check picks up every ``ValidatingAdmissionPolicy``.
"""
from __future__ import annotations

from typing import Any, Optional

from kueue_cohorts.components.model.assembly import AssembledStack, assemble
from kueue_cohorts.components.settings import Settings


def expected_objects(settings: Settings, stack: Optional[AssembledStack] = None) -> list[dict[str, Any]]:
    """Every object the stack registers, as the manifest the program sends (the API's JSON field names).

    Args:
        settings: validated Settings of the stack. stack: `assemble(settings)` when the caller has it (``cohorts
            verify`` assembles once per run); default: assembled here.
    Returns:
        Manifests (dicts with apiVersion, kind, metadata.name, [metadata.namespace], and spec / value / data ...)
        in registration order (``AssembledStack.registered``): Kueue's Namespace (``kueue.install``), the
        ResourceFlavors, per cohort its Namespaces (Create: the whole Namespace; Label: the NamespacePatch's part,
        the selector label; External: none), WorkloadPriorityClasses, Cohort object, ClusterQueues, LocalQueues,
        checkpoint PVCs and InferenceServices, then the TrainingRuntimes with their ConfigMaps, the in-cluster
        guardrails (ValidatingAdmissionPolicies and bindings) and the preview identity's objects. Pure: no
        cluster, no Pulumi. Not included: what the Kueue Helm chart installs when ``kueue.install`` is true, and
        the ownership annotation of created Namespaces (it names the Pulumi stack; verify compares labels only).
    """
    return [dict(rendered.manifest) for rendered in (stack or assemble(settings)).registered()]


def worker_expected(stack: AssembledStack) -> dict[str, list[dict[str, Any]]]:
    """MultiKueue worker name -> every object the assembled `stack` registers on that worker
    (``AssembledStack.workers``), as manifests, in ``multiKueue.workers`` order; empty without ``multiKueue``."""
    return {name: [dict(r.manifest) for r in items] for name, items in stack.workers().items()}
