"""AdmissionGuardrails: the rule book's ValidatingAdmissionPolicies and their bindings as one Pulumi component.

The manifests come from the model (`components.model.admission.guardrail_objects`, part of
`components.model.assembly.assemble`); this component registers them as rendered, each binding after its policy, every
child parented. The stack registers it before the cohorts and makes them depend on it, so
that a change of both priority classes (or of the inference ClusterQueue names) is judged by the new policies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from kueue_cohorts.components.resources.judged import JudgedStack, StackInput
from kueue_cohorts.components.resources.manifest import ManifestResource


@dataclass(frozen=True)
class AdmissionGuardrailsArgs:
    """Inputs of AdmissionGuardrails."""

    stack: StackInput
    """The stack the guardrails guard; required. A Settings (or a mapping of stack-file keys, Outputs allowed) is
    judged here by the settings check; a JudgedStack (a
    cohort's `.stack`) brings that cohort's Outputs (the inference namespaces the serving guardrail names). Its
    `admission` block says validationActions (omitted: [Deny]) and who runs the stack (omitted: the sandbox's
    admin); a stack without a layout has no guardrails (nothing is registered)."""
    namespace_owner: Optional[str] = None
    """As for InferenceTrainingCohortArgs.namespace_owner (a Settings is rendered with it). Omitted: a
    JudgedStack's own, else `<project>/<stack>` of the running program."""


class AdmissionGuardrails(pulumi.ComponentResource):
    """One ValidatingAdmissionPolicy and one ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1,
    Kubernetes >= 1.30) per guardrail of the stack (`components.model.admission.guardrail_objects`, generated from
    the rule book), registered as assembled.

    Children: `<name>-vap-<policy name>` and `<name>-vapb-<policy name>` (the binding depends on its policy).
    Attributes: `stack`, `policies` / `bindings` (policy name -> ManifestResource). Outputs: `policies` (sorted
    names) and `validationActions`.
    Raises: InvalidStack when the settings check refuses a Settings.
    """

    def __init__(self, name: str, args: AdmissionGuardrailsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        stack = JudgedStack.of(args.stack, None, args.namespace_owner)
        super().__init__("kueue-cohorts:admission:AdmissionGuardrails", name, None, opts)
        stack.log_warnings(self)
        self.stack = stack
        self.policies: dict[str, ManifestResource] = {}
        self.bindings: dict[str, ManifestResource] = {}
        for rail in stack.assembled.guardrails:
            policy = ManifestResource.of(f"{name}-vap-{rail.name}", rail.policy, pulumi.ResourceOptions(parent=self),
                                         props=stack.props(rail.policy))
            self.policies[rail.name] = policy
            self.bindings[rail.name] = ManifestResource.of(
                f"{name}-vapb-{rail.name}", rail.binding, pulumi.ResourceOptions(parent=self, depends_on=[policy]),
                props=stack.props(rail.binding))
        self.register_outputs({"policies": sorted(self.policies),
                               "validationActions": list(stack.assembled.validation_actions)})
