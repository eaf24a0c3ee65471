"""AdmissionGuardrails: the rule book's ValidatingAdmissionPolicies and their bindings as one Pulumi component.

The manifests come from the model (`components.model.admission.guardrail_objects`, part of
`components.model.assembly.assemble`); this component registers them as rendered, each binding after its policy, every
child parented. The stack registers it before the cohorts and makes them depend on it, so
that a change of both priority classes (or of the inference ClusterQueue names) is judged by the new policies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi

from components.model.admission import RenderedGuardrail
from components.resources.manifest import ManifestResource


@dataclass(frozen=True)
class AdmissionGuardrailsArgs:
    """Inputs of AdmissionGuardrails.

    guardrails: the stack's rendered guardrails (`admission_manifests.guardrail_objects`: name, policy, binding);
    empty registers nothing. validation_actions: the bindings' validationActions (outputs only: the rendered
    bindings carry them), e.g. ["Deny"] (default of the settings) or ["Warn", "Audit"] for a first rollout.
    """

    guardrails: Sequence[RenderedGuardrail]
    validation_actions: Sequence[str]


class AdmissionGuardrails(pulumi.ComponentResource):
    """One ValidatingAdmissionPolicy and one ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1,
    Kubernetes >= 1.30) per guardrail.

    Children: `<name>-vap-<policy name>` and `<name>-vapb-<policy name>` (the binding depends on its policy).
    Attributes: `policies` / `bindings` (policy name -> ManifestResource). Outputs: `policies` (sorted names) and
    `validationActions`.
    """

    def __init__(self, name: str, args: AdmissionGuardrailsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:admission:AdmissionGuardrails", name, None, opts)
        self.policies: dict[str, ManifestResource] = {}
        self.bindings: dict[str, ManifestResource] = {}
        for rail in args.guardrails:
            policy = ManifestResource.of(f"{name}-vap-{rail.name}", rail.policy, pulumi.ResourceOptions(parent=self))
            self.policies[rail.name] = policy
            self.bindings[rail.name] = ManifestResource.of(
                f"{name}-vapb-{rail.name}", rail.binding, pulumi.ResourceOptions(parent=self, depends_on=[policy]))
        self.register_outputs({"policies": sorted(self.policies),
                               "validationActions": list(args.validation_actions)})
