"""AdmissionGuardrails: the rule book's ValidatingAdmissionPolicies and their bindings as one Pulumi component.

The manifests come from `components.admission_manifests` (pure); this component only registers them, each binding
after its policy, every child parented. The stack registers it before the cohorts and makes them depend on it, so
that a change of both priority classes (or of the inference ClusterQueue names) is judged by the new policies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import pulumi

from components.resources import ManifestResource
from policy.rules.admission import Guardrail


@dataclass(frozen=True)
class AdmissionGuardrailsArgs:
    """Inputs of AdmissionGuardrails.

    guardrails: the rule book's guardrails of the stack (`admission_manifests.stack_guardrails`); empty registers
    nothing. validation_actions: the bindings' validationActions, e.g. ["Deny"] (default of the settings) or
    ["Warn", "Audit"] for a first rollout.
    """

    guardrails: Sequence[Guardrail]
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
            policy = ManifestResource(f"{name}-vap-{rail.name}", rail.policy_manifest(),
                                      pulumi.ResourceOptions(parent=self))
            self.policies[rail.name] = policy
            self.bindings[rail.name] = ManifestResource(
                f"{name}-vapb-{rail.name}", rail.binding_manifest(args.validation_actions),
                pulumi.ResourceOptions(parent=self, depends_on=[policy]))
        self.register_outputs({"policies": sorted(self.policies),
                               "validationActions": list(args.validation_actions)})
