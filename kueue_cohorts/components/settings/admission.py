"""`kueue-cohorts:admission` and `kueue-cohorts:allowedAddOnNamespaces`: the in-cluster guardrails
(ValidatingAdmissionPolicies), who is exempt from them, and the add-on namespaces a stack may still use.
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import (
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kueue_cohorts.components.settings.base import DnsLabel, Model

# --- in-cluster guardrails ------------------------------------------------------------------------------------------

SANDBOX_ADMIN = "kueue-cohorts-admin"
"""The user of the sandbox's admin kubeconfig (its client certificate's CN; O=system:masters), which runs the dev
stack: sandbox/certs.py issues it (a unit test keeps the two equal)."""


class ValidationAction(str, Enum):
    """A ValidatingAdmissionPolicyBinding `validationActions` entry (admissionregistration.k8s.io/v1)."""

    DENY = "Deny"    # refuse the request
    WARN = "Warn"    # let it through with a warning to the client (kubectl prints it)
    AUDIT = "Audit"  # record the failure in the audit event (annotation validation.policy.admission.k8s.io/...)


class StackIdentities(Model):
    """`admission.identities`: who runs the stack (Kubernetes `request.userInfo`): only these users and the members
    of these groups may add, change or remove a layout's tenant label (namespaceLabel) on a namespace.

    users: user names (default: the sandbox's admin, `kueue-cohorts-admin`; on a real cluster, the user of the
    deploy job's kubeconfig). groups: group names (default none). At least one user or group.
    """

    users: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=lambda: [SANDBOX_ADMIN])
    """User names (request.userInfo.username). Default the sandbox's admin, kueue-cohorts-admin, refused in cluster
    mode kubeconfig: there, the user of the deploy job's kubeconfig. Never a name Kubernetes gives to many callers
    (system:anonymous, system:masters, ...), another system: name (system:kube-controller-manager,
    system:node:<node>, ...), a namespace's default ServiceAccount, nor a ServiceAccount of default, a kube-*
    namespace, Kueue's or a controller's namespace (system:serviceaccount:<namespace>:<name>)."""
    groups: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Group names (request.userInfo.groups). Default none. At least one user or group. Never a group of everyone
    (system:authenticated, system:unauthenticated, system:serviceaccounts[:<ns>], system:masters, system:nodes)."""

    @model_validator(mode="after")
    def _someone(self) -> StackIdentities:
        if not self.users and not self.groups:
            raise PydanticCustomError(
                "no_identity", "no user or group may change the tenant label, so pulumi up could not label its own "
                "namespaces")
        return self


class AdmissionSettings(Model):
    """`kueue-cohorts:admission`: the ValidatingAdmissionPolicies (CEL) the stack registers, generated from the rule
    book, so that a kubectl, Helm or GitOps change that breaks a rule is refused inside the cluster too.

    validation_actions: the bindings' validationActions: `[Deny]` (default) refuses; `[Warn, Audit]` lets the
    request through with a warning and an audit annotation (a first rollout; docs/guardrails.md).
    Deny and Warn never together. identities: who may change the tenant label (StackIdentities).
    """

    validation_actions: list[ValidationAction] = Field(default_factory=lambda: [ValidationAction.DENY])
    """The bindings' validationActions: [Deny] (default) refuses; [Warn, Audit] is the first rollout (warn the
    client, annotate the audit event). Never Deny with Warn, no repeats."""
    identities: StackIdentities = StackIdentities()
    """Who runs the stack: only they may add, change or remove a layout's namespaceLabel on a namespace."""

    @field_validator("validation_actions")
    @classmethod
    def _actions(cls, value: list[ValidationAction]) -> list[ValidationAction]:
        if not value or len(set(value)) != len(value) or {ValidationAction.DENY, ValidationAction.WARN} <= set(value):
            raise PydanticCustomError(
                "validation_actions", "validationActions must be a non-empty list without repeats and never hold "
                "both Deny and Warn (the apiserver refuses such a binding)")
        return value


# --- namespaces of cluster add-ons -----------------------------------------------------------------------------------


class AddOnNamespaceAllowance(Model):
    """An entry of `allowedAddOnNamespaces`: a cluster add-on namespace this stack uses as a tenant namespace."""

    name: DnsLabel
    """The add-on namespace (one of policy/rules/vocabulary/system_namespaces.py ADD_ON_NAMESPACES, e.g. kubeflow)."""
    reason: str = Field(min_length=1)
    """Why its pods may come under Kueue (printed by reviews; not empty)."""

