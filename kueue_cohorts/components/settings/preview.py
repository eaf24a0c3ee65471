"""`kueue-cohorts:previewIdentity`: the read-only identity of pull-request live previews.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from pydantic import (
    Field,
)

from kueue_cohorts.components.settings.base import DnsLabel, DnsSubdomain, Model

# --- the pull-request preview identity -----------------------------------------------------------------------------


class PreviewSubjectKind(str, Enum):
    """The kind of an RBAC subject (rbac.authorization.k8s.io/v1 `subjects[].kind`)."""

    SERVICE_ACCOUNT = "ServiceAccount"  # a ServiceAccount in a namespace; the stack may create it
    USER = "User"                       # a user of the cluster's authenticator (OIDC claim, certificate CN)
    GROUP = "Group"                     # a group of the cluster's authenticator (OIDC groups claim, certificate O)


class PreviewIdentityCreate(str, Enum):
    """What the stack creates for a ServiceAccount preview identity."""

    SERVICE_ACCOUNT_AND_NAMESPACE = "ServiceAccountAndNamespace"  # the namespace and the ServiceAccount in it
    SERVICE_ACCOUNT = "ServiceAccount"                            # the ServiceAccount, in an existing namespace
    NOTHING = "Nothing"                                           # only the RBAC: the subject exists elsewhere


class PreviewIdentitySettings(Model):
    """`kueue-cohorts:previewIdentity`: the read-only identity the pull-request live preview runs as
    (docs/previews.md). The stack grants it get, list and watch on exactly the kinds it manages: cluster-scoped
    kinds through a ClusterRole, namespaced kinds through a Role in each namespace the stack writes to, never a
    Secret, and nothing else."""

    kind: PreviewSubjectKind
    """ServiceAccount, User or Group (RBAC subject kind; User and Group as the cluster's authenticator names them,
    e.g. an OIDC claim). Names starting with `system:` are refused (Kubernetes' own users and groups)."""
    name: str = Field(max_length=253)
    """The ServiceAccount (DNS-1123 subdomain), user or group name (not empty)."""
    namespace: Optional[DnsLabel] = None
    """The ServiceAccount's namespace (ServiceAccount only, required there): a namespace of its own, never a tenant
    namespace, Kueue's, default or a kube-* one (whoever runs pods in a namespace can use its ServiceAccounts); the
    account is never `default`."""
    create: Optional[PreviewIdentityCreate] = None
    """ServiceAccountAndNamespace, ServiceAccount (its namespace exists) or Nothing (only the RBAC). Omitted:
    ServiceAccountAndNamespace for a ServiceAccount, Nothing for a User or Group (the only value they take)."""
    role_name: DnsSubdomain = "kueue-cohorts-preview"
    """metadata.name of the ClusterRole, the ClusterRoleBinding and of each Role and RoleBinding. Give each stack
    its own when several stacks share a cluster. Default kueue-cohorts-preview."""

    def effective_create(self) -> PreviewIdentityCreate:
        """`create`, or its default for the subject kind (see the field)."""
        if self.create is not None:
            return self.create
        if self.kind == PreviewSubjectKind.SERVICE_ACCOUNT:
            return PreviewIdentityCreate.SERVICE_ACCOUNT_AND_NAMESPACE
        return PreviewIdentityCreate.NOTHING

