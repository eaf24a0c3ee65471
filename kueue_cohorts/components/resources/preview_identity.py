"""PreviewIdentity: the read-only identity of the pull-request live preview as one Pulumi component.

The objects come from the pure plan `components.model.preview_rbac.identity_plan` (get, list, watch on exactly the kinds
the stack manages); this component only registers them, every child parented to it. The stack registers it last,
after the components whose namespaces its Roles live in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from kueue_cohorts.components.model.preview_rbac import IdentityPlan
from kueue_cohorts.components.resources.manifest import ManifestResource


@dataclass(frozen=True)
class PreviewIdentityArgs:
    """Inputs of PreviewIdentity."""

    plan: IdentityPlan
    """The identity's objects (`components.model.preview_rbac.identity_plan(settings)`, part of the assembled
    stack); required: the Namespace and ServiceAccount when the stack creates them, the ClusterRole and
    ClusterRoleBinding, a Role and RoleBinding per namespace."""


class PreviewIdentity(pulumi.ComponentResource):
    """The preview identity's Namespace and ServiceAccount (when created) and its read-only RBAC.

    Children: `<name>-ns` (Namespace), `<name>-sa` (ServiceAccount, after the Namespace), `<name>-clusterrole`,
    `<name>-clusterrolebinding` (after its role), `<name>-role-<namespace>` and `<name>-rolebinding-<namespace>`
    (after its role; in the identity's own namespace after that Namespace). Attributes: `namespace`,
    `service_account` (ManifestResource or None), `roles` (ManifestResource by "<Kind>/<namespace or ''>").
    Outputs: `subject` (the subjects[] entry), `clusterRole` (name), `roleNamespaces` (sorted).
    """

    def __init__(self, name: str, args: PreviewIdentityArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("kueue-cohorts:preview:PreviewIdentity", name, None, opts)
        plan = args.plan
        child = pulumi.ResourceOptions(parent=self)
        self.namespace = ManifestResource(f"{name}-ns", plan.namespace, child) if plan.namespace else None
        after_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace] if self.namespace else [])
        self.service_account = (ManifestResource(f"{name}-sa", plan.service_account, after_ns)
                                if plan.service_account else None)
        own_namespace = plan.namespace["metadata"]["name"] if plan.namespace else None
        self.roles: dict[str, ManifestResource] = {}
        for manifest in plan.rbac:
            kind, namespace = manifest["kind"], manifest["metadata"].get("namespace")
            deps: list[pulumi.Resource] = []
            if kind.endswith("Binding"):
                deps.append(self.roles[f"{kind[:-len('Binding')]}/{namespace or ''}"])
            if namespace is not None and namespace == own_namespace and self.namespace is not None:
                deps.append(self.namespace)
            suffix = f"-{namespace}" if namespace else ""
            self.roles[f"{kind}/{namespace or ''}"] = ManifestResource(
                f"{name}-{kind.lower()}{suffix}", manifest, pulumi.ResourceOptions(parent=self, depends_on=deps))
        self.register_outputs({"subject": plan.subject.manifest(), "clusterRole": plan.rbac[0]["metadata"]["name"],
                               "roleNamespaces": sorted(plan.access.namespaced)})
