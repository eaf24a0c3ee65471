"""Settings rules about WHO a stack trusts: subjects that mean everyone, and identities that are not the stack's.

Two settings name Kubernetes identities (``request.userInfo``, rbac.authorization.k8s.io/v1 ``subjects``):

- ``admission.identities``: the users and groups exempt from the tenant-label guardrail (components/settings/
  StackIdentities). A name that every caller, every ServiceAccount or every cluster admin carries would exempt
  them all;
- ``previewIdentity``: the read-only identity of the live preview. A ServiceAccount that other pods already run as
  (every namespace's ``default`` account; any account of ``default`` or a ``kube-*`` namespace) would hand the
  preview's read access to them.

One rule decides whether a ServiceAccount, or a user name, is an identity of the stack's own (``foreign_identity``):
never a ``default`` account, never an account of ``default``, a ``kube-*`` namespace, Kueue's namespace (its manager
``kueue-controller-manager``, Kueue v0.19.2 config/rbac/service_account.yaml with the ``kueue-`` name prefix, chart
``<fullname>-controller-manager``) or a controller's protected namespace (policy/rules/vocabulary/system_namespaces),
and never another ``system:`` user: Kubernetes' own components and controllers (``system:kube-controller-manager``,
``system:kube-scheduler``, ``system:kube-proxy``, ``system:node:<node>``, ``system:apiserver``; kubernetes v1.36
pkg/apis/rbac bootstrap policy and the node authorizer's ``system:node:`` prefix). A ServiceAccount authenticates as
``system:serviceaccount:<namespace>:<name>`` (k8s.io/apiserver pkg/authentication/serviceaccount/util.go
``ServiceAccountUsernamePrefix``). The preview identity's check and ``admission.identities.users`` use it alike.

Kubernetes' own names (k8s.io/apiserver pkg/authentication/user/user.go at 1.36: ``AllAuthenticated``
``system:authenticated``, ``AllUnauthenticated`` ``system:unauthenticated``, ``Anonymous`` ``system:anonymous``,
``SystemPrivilegedGroup`` ``system:masters``, ``NodesGroup`` ``system:nodes``; k8s.io/apiserver
pkg/authentication/serviceaccount/util.go: ``AllServiceAccountsGroup`` ``system:serviceaccounts`` and the per
namespace group ``system:serviceaccounts:<namespace>``; bootstrap tokens ``system:bootstrappers[:...]``).
"""
from __future__ import annotations

import re

from kueue_cohorts.components.settings import (
    SANDBOX_ADMIN,
    ClusterMode,
    PreviewIdentityCreate,
    PreviewSubjectKind,
    Settings,
    stack_key,
)
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.policy.rules.vocabulary.system_namespaces import (
    ADD_ON_NAMESPACES,
    DEFAULT_PROTECTED_NAMESPACES,
    always_protected,
)

__all__ = ["EVERYONE", "EVERYONE_PREFIXES", "means_everyone", "foreign_account", "foreign_identity",
           "check_identities", "check_preview_account", "check_add_on_allowances", "CHECKS"]

#: Names that Kubernetes gives to many callers at once (sources in the module docstring).
EVERYONE: frozenset[str] = frozenset({
    "system:authenticated", "system:unauthenticated", "system:anonymous", "system:masters",
    "system:serviceaccounts", "system:nodes", "system:bootstrappers",
})
#: Prefixes of group names that every ServiceAccount of a namespace, or every bootstrap token, carries.
EVERYONE_PREFIXES: tuple[str, ...] = ("system:serviceaccounts:", "system:bootstrappers:")
_SERVICE_ACCOUNT_USER = re.compile(r"^system:serviceaccount:([^:]*):([^:]*)$")


def means_everyone(name: str) -> bool:
    """Whether the user or group ``name`` is one Kubernetes gives to many callers (EVERYONE, EVERYONE_PREFIXES;
    surrounding spaces ignored, so `` system:masters`` counts). Case-sensitive, as Kubernetes compares names."""
    name = name.strip()
    return name in EVERYONE or name.startswith(EVERYONE_PREFIXES)


def foreign_account(namespace: str, name: str, settings: Settings) -> str | None:
    """Whether the ServiceAccount ``namespace``/``name`` is someone else's: ``"name"`` for a ``default`` account
    (every pod of its namespace that names no account runs as it), ``"namespace"`` for any account of ``default``, a
    ``kube-*`` namespace, Kueue's namespace (its manager's account), a controller's protected namespace or one of the
    stack's ``protectedNamespaces``; None for an account of the stack's own. Names compared exactly (surrounding
    spaces ignored)."""
    namespace, name = namespace.strip(), name.strip()
    if name == "default":
        return "name"
    if (always_protected(namespace) or namespace == settings.kueue.namespace
            or namespace in settings.protected_namespaces):
        return "namespace"
    return None


def foreign_identity(user: str, settings: Settings) -> str | None:
    """Why the user name ``user`` (request.userInfo.username) is not an identity of the stack's own, or None: a
    ServiceAccount that ``foreign_account`` refuses, any other ``system:`` name (Kubernetes' own components, nodes and
    controllers), or a name that means everyone (``means_everyone``). One rule for the preview identity and
    ``admission.identities.users``."""
    name = user.strip()
    if means_everyone(name):
        return ("a name Kubernetes gives to many callers at once (every signed-in user, every ServiceAccount, every "
                "cluster admin, anonymous requests)")
    account = _SERVICE_ACCOUNT_USER.match(name)
    if account:
        part = foreign_account(account.group(1), account.group(2), settings)
        if part == "name":
            return (f"the ServiceAccount default of namespace {account.group(1)}, which every pod of that namespace "
                    "that names no account runs as")
        if part == "namespace":
            return (f"a ServiceAccount of namespace {account.group(1)}, which belongs to Kubernetes, Kueue, a "
                    "controller the stack runs on or a protected namespace, not to the stack")
        return None
    if name.startswith("system:"):
        return ("a name of Kubernetes' own (its components, controllers and nodes: system:kube-controller-manager, "
                "system:kube-scheduler, system:node:<node>, ...)")
    return None


def check_identities(settings: Settings) -> list[Problem]:
    """``admission.identities``: no user or group that means everyone, and on a real cluster (cluster mode
    kubeconfig) never the sandbox admin's user name ``kueue-cohorts-admin`` by default (it would exempt whoever gets
    a certificate with that well-known CN): such a stack names its users. Writing the name explicitly is accepted
    (a kubeconfig stack aimed at the sandbox itself).

    Returns one Problem per offending entry, at ``admission.identities.users[i]`` / ``.groups[i]``, or at
    ``admission.identities`` when a kubeconfig stack did not set them.
    """
    ids = settings.admission.identities
    problems: list[Problem] = []
    for i, name in enumerate(ids.users):
        why = foreign_identity(name, settings)
        if why and not means_everyone(name):
            problems.append(Problem(
                stack_key("admission", "identities", "users", i), name,
                f"{name.strip()} is {why}: every request it makes, or every pod that runs as it, would be exempt "
                "from the tenant-label guardrail",
                "name only the user of the kubeconfig that runs pulumi up, or a ServiceAccount of a namespace of its "
                "own that only the deploy uses, e.g. users: [kueue-cohorts-deployer]"))
    for field, names in (("users", ids.users), ("groups", ids.groups)):
        for i, name in enumerate(names):
            if means_everyone(name):
                problems.append(Problem(
                    stack_key("admission", "identities", field, i), name,
                    f"{name.strip()} is a name Kubernetes gives to many callers at once (every signed-in user, "
                    "every ServiceAccount, every cluster admin, anonymous requests): all of them would be exempt "
                    "from the tenant-label guardrail",
                    "name only the user (or a group only it is in) of the kubeconfig that runs pulumi up, e.g. "
                    "users: [kueue-cohorts-deployer]"))
    if settings.cluster.mode != ClusterMode.KUBECONFIG:
        return problems
    why = (f"{SANDBOX_ADMIN} is the sandbox admin's user name (the default of admission.identities.users); on a real "
           "cluster (cluster mode kubeconfig) it would exempt whoever holds a certificate with that well-known name "
           "from the tenant-label guardrail")
    fix = ("set admission.identities.users to the user of the deploy job's kubeconfig, e.g. "
           "users: [kueue-cohorts-deployer] (or users: [] with groups)")
    admission_set = "admission" in settings.model_fields_set
    if not admission_set or "identities" not in settings.admission.model_fields_set:
        problems.append(Problem(stack_key("admission", "identities"), "<absent>", why, fix))
    elif "users" not in ids.model_fields_set and SANDBOX_ADMIN in ids.users:
        problems.append(Problem(stack_key("admission", "identities", "users"), "<absent>", why, fix))
    return problems


def check_preview_account(settings: Settings) -> list[Problem]:
    """``previewIdentity`` of kind ServiceAccount is an account only the preview uses: never a ``default`` account
    (every pod of its namespace that names no account runs as it), never an account of ``default`` or of a
    ``kube-*`` namespace (Kubernetes' and its add-ons' own). Problems at ``previewIdentity.name`` /
    ``previewIdentity.namespace`` (a namespace check_preview_identity already refuses, Kueue's or a protected one the
    stack would create, is not reported twice)."""
    identity = settings.preview_identity
    if identity is None or identity.kind != PreviewSubjectKind.SERVICE_ACCOUNT:
        return []
    problems: list[Problem] = []
    fix = ("give the preview its own ServiceAccount in a namespace of its own, e.g. name: preview, "
           "namespace: kueue-cohorts-preview")
    part = foreign_account(identity.namespace or "", identity.name, settings)
    if part == "name":
        problems.append(Problem(
            stack_key("previewIdentity", "name"), identity.name,
            "the ServiceAccount default is the one every pod of its namespace runs as when it names none: they "
            "would all get the preview's read access", fix))
    reported = (identity.namespace == settings.kueue.namespace  # check_preview_identity: "Kueue's namespace"
                or (identity.effective_create() == PreviewIdentityCreate.SERVICE_ACCOUNT_AND_NAMESPACE
                    and identity.namespace in (*DEFAULT_PROTECTED_NAMESPACES, *settings.protected_namespaces)))
    if (identity.namespace is not None and foreign_account(identity.namespace, "", settings) == "namespace"
            and not reported):
        problems.append(Problem(
            stack_key("previewIdentity", "namespace"), identity.namespace,
            "the ServiceAccounts of default, of kube-* namespaces, of Kueue's and the controllers' namespaces belong "
            "to Kubernetes, its add-ons, the controllers or whoever runs pods there, not to the preview", fix))
    return problems


def check_add_on_allowances(settings: Settings) -> list[Problem]:
    """``allowedAddOnNamespaces``: each entry names a cluster add-on namespace (system_namespaces
    ADD_ON_NAMESPACES), with a reason that is not blank; ``default``, ``kube-*`` and the controllers' namespaces
    are never allowed; no name twice. Problems at ``allowedAddOnNamespaces[i].name`` / ``.reason``."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, entry in enumerate(settings.allowed_add_on_namespaces):
        if always_protected(entry.name) or entry.name == settings.kueue.namespace:
            problems.append(Problem(
                stack_key("allowedAddOnNamespaces", i, "name"), entry.name,
                "default, every kube-* namespace, Kueue's and the controllers' namespaces are never tenants: Kueue's "
                "webhooks would take over the pods of Kubernetes or of the controllers the stack runs on",
                "remove the entry and run the tenants in a namespace of their own"))
        elif entry.name not in ADD_ON_NAMESPACES:
            problems.append(Problem(
                stack_key("allowedAddOnNamespaces", i, "name"), entry.name,
                "only a protected add-on namespace can be allowed, and this one is not protected",
                "remove the entry (the namespace may be a tenant as it is); protected add-ons: "
                + ", ".join(ADD_ON_NAMESPACES)))
        elif entry.name in seen:
            problems.append(Problem(stack_key("allowedAddOnNamespaces", i, "name"), entry.name,
                                    "an add-on namespace is allowed once", "remove the repeated entry"))
        if not entry.reason.strip():
            problems.append(Problem(stack_key("allowedAddOnNamespaces", i, "reason"), entry.reason,
                                    "allowing an add-on's namespace needs the reason, for the review",
                                    "write why its pods may come under Kueue"))
        seen.add(entry.name)
    return problems


CHECKS = (check_identities, check_preview_account, check_add_on_allowances)
"""The checks of this module, run by components.checks.settings_rules.check."""
