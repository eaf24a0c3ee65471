"""Read-only RBAC for the pull-request preview identity: get/list/watch on exactly the kinds a stack manages. Pure.

The live preview of a pull request (.github/workflows/preview.yml, job ``live-preview``) runs the pull request's
own program against the real cluster. It does so as a separate identity (a user or group of the cluster's
authenticator, or a ServiceAccount) whose kubeconfig lives in the GitHub environment ``preview-<stack>``, never with
the deploy credentials. The stack setting ``previewIdentity`` (components/settings/) makes the stack register
that identity's RBAC itself (components/resources/preview_identity.py); ``identity_plan`` is the pure plan of it:

- a ClusterRole and ClusterRoleBinding with get, list, watch on the stack's cluster-scoped kinds (ClusterQueue,
  ResourceFlavor, Namespace, ValidatingAdmissionPolicy, the RBAC kinds themselves, the CRDs and webhook
  configurations of Kueue's chart, ...);
- per namespace the stack writes objects to, a Role and RoleBinding with get, list, watch on the kinds of those
  objects there, and nowhere else;
- never a Secret (``NEVER_READ``), in any namespace, not even by name: Kueue's namespace holds its webhook TLS key
  and, with MultiKueue, the worker clusters' kubeconfigs. A preview does not need them: the provider diffs a Secret
  against the stack's state (where its data is a secret), and a server-side dry run the identity may not make falls
  back to the client-side diff. Naming the Secret (``resourceNames``) would not help: the stack's own Secret there
  IS the webhook key; and ``resourceNames`` cannot narrow a plain ``list`` / ``watch`` at all (Kubernetes RBAC
  authorizes a name-restricted list or watch only with a ``metadata.name`` field selector, k8s.io/apiserver
  pkg/endpoints/request/requestinfo.go at 1.36: the name is taken from that selector, else it is empty and no
  resourceNames rule matches), so a kind whose objects may not be listed is not granted;
- a namespaced kind must carry its namespace: ``read_access`` refuses one without (it would otherwise turn into a
  cluster-wide grant of that kind, e.g. every Secret of every namespace).
- for a ServiceAccount the stack creates, the account and (when asked) its namespace.

No write verb, no wildcard. The kinds come from the stack's own render (``components.model.render.render_stack`` and
``admission_manifests.render_admission``), Kueue's chart (``KUEUE_CHART_OBJECTS``, the kinds of the pinned chart
with our values) when the stack installs Kueue, and the identity's own objects.

Upstream: Kubernetes RBAC (``rbac.authorization.k8s.io/v1``, ClusterRole/Role ``rules[].apiGroups/resources/verbs``,
ClusterRoleBinding/RoleBinding ``roleRef`` / ``subjects``); the kind -> resource rule of ``resource_of`` is
apimachinery's ``meta.UnsafeGuessKindToResource`` (k8s.io/apimachinery pkg/api/meta/restmapper.go), exact for every
kind whose CRD or built-in type uses the conventional plural (all the kinds this project manages).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from kueue_cohorts.components.model.admission import render_admission
from kueue_cohorts.components.model.kueue import OWNER_ANNOTATION
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import PreviewIdentityCreate, Settings
from kueue_cohorts.components.settings.runtime import DNS_SUBDOMAIN
from kueue_cohorts.policy.rules.vocabulary.objects import MANAGED_LABELS, ROLE_LABEL

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
READ_VERBS = ("get", "list", "watch")
DEFAULT_NAME = "kueue-cohorts-preview"
_DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN)
_RESOURCE = re.compile(r"^[a-z][a-z0-9]*(/[a-z]+)?$")  # a resource, or resource/subresource (e.g. pods/log)
_UNPLURALIZED_SUFFIXES = ("endpoints",)


@dataclass(frozen=True)
class Subject:
    """Who the preview runs as (an RBAC subject).

    kind: ``User`` or ``Group`` (names as the cluster's authenticator reports them, e.g. an OIDC claim or a client
    certificate's CN / O), or ``ServiceAccount`` (then ``namespace`` is required). name: the user, group or
    ServiceAccount name.
    """

    kind: Literal["User", "Group", "ServiceAccount"]
    name: str
    namespace: Optional[str] = None

    def manifest(self) -> dict[str, Any]:
        """The ``subjects[]`` entry of a ClusterRoleBinding. Raises ValueError for an invalid subject."""
        if self.kind not in ("User", "Group", "ServiceAccount"):
            raise ValueError(f"subject kind {self.kind!r}: must be User, Group or ServiceAccount")
        if not self.name or self.name.strip() != self.name:
            raise ValueError(f"subject name {self.name!r}: must be a non-empty name without surrounding spaces")
        if self.kind == "ServiceAccount":
            if not self.namespace:
                raise ValueError(f"ServiceAccount {self.name!r}: a namespace is required")
            return {"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}
        if self.namespace:
            raise ValueError(f"{self.kind} {self.name!r}: only a ServiceAccount has a namespace")
        return {"kind": self.kind, "name": self.name, "apiGroup": "rbac.authorization.k8s.io"}


def resource_of(kind: str) -> str:
    """Return the plural resource of a kind by apimachinery's UnsafeGuessKindToResource rule:
    lower-case; ``...s`` -> ``...ses``; ``...y`` -> ``...ies``; ``...endpoints`` unchanged; else ``+s``
    (``ClusterQueue`` -> ``clusterqueues``, ``WorkloadPriorityClass`` -> ``workloadpriorityclasses``,
    ``ValidatingAdmissionPolicy`` -> ``validatingadmissionpolicies``). Raises ValueError for an empty kind."""
    if not kind:
        raise ValueError("empty kind")
    singular = kind.lower()
    if singular.endswith(_UNPLURALIZED_SUFFIXES):
        return singular
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


def kinds_of(manifests: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Return the sorted, distinct (apiGroup, resource) pairs of rendered objects (``apiVersion`` and ``kind`` of
    each manifest; the core group is ``""``). Raises ValueError for a manifest without apiVersion or kind."""
    found = set()
    for manifest in manifests:
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        if not api_version or not kind:
            raise ValueError(f"manifest without apiVersion/kind: {dict(manifest)!r:.120}")
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        found.add((group, resource_of(kind)))
    return sorted(found)


#: (apiGroup, resource) pairs the preview identity never reads, in any scope and under any name: Secrets (and their
#: subresources) hold key material; ServiceAccount tokens are minted by ``serviceaccounts/token``.
NEVER_READ: frozenset[tuple[str, str]] = frozenset({("", "secrets"), ("", "serviceaccounts/token")})


def never_read(group: str, resource: str) -> bool:
    """Whether (``group``, ``resource``) is one the preview identity must never read (NEVER_READ, a subresource of
    one included, e.g. ``("", "secrets/status")``)."""
    return (group, resource) in NEVER_READ or (group, resource.split("/", 1)[0]) in NEVER_READ


def _rules(kinds: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """One rule per API group, resources sorted and distinct, verbs READ_VERBS. Raises ValueError for a wildcard,
    an empty resource or a malformed name, or a kind of NEVER_READ (a Secret)."""
    by_group: dict[str, set[str]] = {}
    for group, resource in kinds:
        if "*" in group or "*" in resource:
            raise ValueError(f"({group!r}, {resource!r}): wildcards are refused, name each kind the stack manages")
        if never_read(group, resource):
            raise ValueError(f"({group!r}, {resource!r}): the preview identity never reads Secrets (key material; "
                             "the provider diffs them against the state)")
        if group and not _DNS_SUBDOMAIN.match(group):
            raise ValueError(f"apiGroup {group!r}: must be a DNS subdomain (\"\" is the core group)")
        if not _RESOURCE.match(resource):
            raise ValueError(f"resource {resource!r} of apiGroup {group!r}: must be a lower-case plural resource "
                             "name such as clusterqueues (use resource_of(kind) to derive it)")
        by_group.setdefault(group, set()).add(resource)
    if not by_group:
        raise ValueError("no kinds: the preview identity would read nothing; pass the kinds the stack manages")
    return [{"apiGroups": [group], "resources": sorted(resources), "verbs": list(READ_VERBS)}
            for group, resources in sorted(by_group.items())]


#: Cluster-scoped kinds, (apiGroup, kind), that a stack of this project may register. A manifest of one of these
#: kinds is cluster-scoped even when it carries a namespace (Helm charts put the release namespace on every object,
#: and the API server ignores it for a cluster-scoped kind); any other kind is namespaced when it has a namespace.
CLUSTER_SCOPED_KINDS: frozenset[tuple[str, str]] = frozenset({
    ("", "Namespace"), ("", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("scheduling.k8s.io", "PriorityClass"), ("storage.k8s.io", "StorageClass"),
    ("kueue.x-k8s.io", "ClusterQueue"), ("kueue.x-k8s.io", "Cohort"), ("kueue.x-k8s.io", "ResourceFlavor"),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"), ("kueue.x-k8s.io", "Topology"), ("kueue.x-k8s.io", "AdmissionCheck"),
    ("kueue.x-k8s.io", "MultiKueueCluster"), ("kueue.x-k8s.io", "MultiKueueConfig"),
    ("kueue.x-k8s.io", "ProvisioningRequestConfig"), ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
})

#: The chart version ``KUEUE_CHART_OBJECTS`` was read from (toolchain/versions.toml [charts] kueue; a unit test fails
#: when the pin moves, and tests/integration/test_preview_identity_cli.py compares the table with the real render).
KUEUE_CHART_VERSION = "0.19.2"
#: Placeholder namespace of ``KUEUE_CHART_OBJECTS``: the release namespace (kueue.namespace).
RELEASE_NAMESPACE = "<release>"
#: (apiVersion, kind, namespace) of every kind Kueue's chart renders with our values (only managerConfig set:
#: no cert-manager, Prometheus, KueueViz, visibility APF or MutatingAdmissionPolicy; helm template of charts/kueue at
#: KUEUE_CHART_VERSION). The visibility API's RoleBinding lives in kube-system (extension-apiserver-authentication-
#: reader); the webhook configurations carry the release namespace but are cluster-scoped.
KUEUE_CHART_OBJECTS: tuple[tuple[str, str, Optional[str]], ...] = (
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", RELEASE_NAMESPACE),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", RELEASE_NAMESPACE),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None),
    ("apiregistration.k8s.io/v1", "APIService", None),
    ("apps/v1", "Deployment", RELEASE_NAMESPACE),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", None),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None),
    ("rbac.authorization.k8s.io/v1", "Role", RELEASE_NAMESPACE),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", RELEASE_NAMESPACE),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "kube-system"),
    ("v1", "ConfigMap", RELEASE_NAMESPACE),
    ("v1", "Secret", RELEASE_NAMESPACE),
    ("v1", "Service", RELEASE_NAMESPACE),
    ("v1", "ServiceAccount", RELEASE_NAMESPACE),
)


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


@dataclass(frozen=True)
class ReadAccess:
    """The kinds a stack manages, by scope, as (apiGroup, resource) pairs.

    cluster: the kinds of its cluster-scoped objects. namespaced: namespace -> the kinds of its objects in that
    namespace (namespaces in which the stack has no object are absent).
    """

    cluster: frozenset[tuple[str, str]]
    namespaced: Mapping[str, frozenset[tuple[str, str]]] = field(default_factory=dict)

    def all_kinds(self) -> list[tuple[str, str]]:
        """Every (apiGroup, resource) pair, of either scope, sorted and distinct."""
        return sorted(self.cluster.union(*self.namespaced.values()))


def read_access(manifests: Iterable[Mapping[str, Any]]) -> ReadAccess:
    """Split the kinds of rendered objects by scope: a manifest whose (apiGroup, kind) is in CLUSTER_SCOPED_KINDS is
    cluster-scoped (whatever namespace a chart put on it); any other counts in its ``metadata.namespace``. Kinds of
    NEVER_READ (Secrets) are left out: the identity never reads them.

    Raises:
        ValueError: a manifest without apiVersion or kind; a namespaced kind (any kind not in CLUSTER_SCOPED_KINDS)
            without ``metadata.namespace``: the provider would put it in the kubeconfig's default namespace, and a
            grant without a namespace would be cluster-wide (every object of that kind in every namespace).
    """
    cluster: set[tuple[str, str]] = set()
    namespaced: dict[str, set[tuple[str, str]]] = {}
    for manifest in manifests:
        [pair] = kinds_of([manifest])
        metadata = manifest.get("metadata") or {}
        namespace = metadata.get("namespace")
        if never_read(*pair):
            continue
        if (_group(str(manifest["apiVersion"])), str(manifest["kind"])) in CLUSTER_SCOPED_KINDS:
            cluster.add(pair)
        elif not namespace:
            raise ValueError(f"{manifest['kind']} {metadata.get('name')!r} ({manifest['apiVersion']}) has no "
                             "metadata.namespace: a namespaced kind is granted in its namespace only, never "
                             "cluster-wide; give it a namespace (or add its kind to CLUSTER_SCOPED_KINDS if it is "
                             "cluster-scoped)")
        else:
            namespaced.setdefault(str(namespace), set()).add(pair)
    return ReadAccess(frozenset(cluster), {ns: frozenset(kinds) for ns, kinds in sorted(namespaced.items())})


def preview_rbac(access: ReadAccess, subject: Subject, name: str = DEFAULT_NAME,
                 labels: Optional[Mapping[str, str]] = None) -> list[dict[str, Any]]:
    """Return the RBAC manifests giving ``subject`` read-only access to exactly ``access``.

    Args:
        access: the kinds to read (``read_access(manifests)``), e.g. cluster ``{("kueue.x-k8s.io",
            "clusterqueues")}`` and namespaced ``{"team-a": {("kueue.x-k8s.io", "localqueues")}}``.
        subject: the preview identity (Subject).
        name: metadata.name of every object (a DNS subdomain; default ``kueue-cohorts-preview``).
        labels: metadata.labels of every object (default none).
    Returns:
        ``rbac.authorization.k8s.io/v1`` manifests: a ClusterRole (one rule per API group, verbs get, list, watch
        only) and its ClusterRoleBinding to ``subject`` when ``access.cluster`` is not empty; then per namespace of
        ``access.namespaced``, in name order, a Role in it with that namespace's kinds and its RoleBinding.
    Raises:
        ValueError: no kinds at all, a wildcard, a malformed group or resource, an invalid subject or name.
    """
    if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
        raise ValueError(f"name {name!r}: must be a DNS subdomain")
    who = [subject.manifest()]
    if not access.all_kinds():
        _rules(())  # raises: the identity would read nothing

    def metadata(namespace: Optional[str] = None) -> dict[str, Any]:
        return {"name": name, **({"namespace": namespace} if namespace else {}),
                **({"labels": dict(labels)} if labels else {})}

    def role_ref(kind: str) -> dict[str, str]:
        return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}

    out: list[dict[str, Any]] = []
    if access.cluster:
        out += [{"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": metadata(),
                 "rules": _rules(access.cluster)},
                {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding", "metadata": metadata(),
                 "roleRef": role_ref("ClusterRole"), "subjects": who}]
    for namespace, kinds in sorted(access.namespaced.items()):
        if not _DNS_SUBDOMAIN.match(namespace):
            raise ValueError(f"namespace {namespace!r}: must be a DNS label")
        out += [{"apiVersion": RBAC_API_VERSION, "kind": "Role", "metadata": metadata(namespace),
                 "rules": _rules(kinds)},
                {"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding", "metadata": metadata(namespace),
                 "roleRef": role_ref("Role"), "subjects": who}]
    return out


MANAGED_BY = {**MANAGED_LABELS, ROLE_LABEL: "preview-identity"}
"""Labels of every object of the preview identity."""


@dataclass(frozen=True)
class IdentityPlan:
    """The preview identity's objects, in registration order.

    subject: the RBAC subject. namespace: the Namespace manifest the stack creates for the ServiceAccount, or None.
    service_account: the ServiceAccount manifest the stack creates, or None. rbac: ``preview_rbac``'s manifests
    (ClusterRole, ClusterRoleBinding, then a Role and RoleBinding per namespace). access: the kinds they grant.
    """

    subject: Subject
    namespace: Optional[dict[str, Any]]
    service_account: Optional[dict[str, Any]]
    rbac: list[dict[str, Any]]
    access: ReadAccess

    def manifests(self) -> list[dict[str, Any]]:
        """Every object of the plan, in registration order."""
        return [m for m in (self.namespace, self.service_account) if m is not None] + self.rbac


def kueue_install_manifests(settings: Settings) -> list[dict[str, Any]]:
    """Stand-ins for what ``KueueInstallation`` registers (kueue.install true): Kueue's Namespace, one object per
    kind of ``KUEUE_CHART_OBJECTS`` in its namespace, and the webhook-readiness ConfigMap. Only apiVersion, kind and
    metadata are meaningful (for ``read_access``). Empty when the stack does not install Kueue."""
    if not settings.kueue.install:
        return []
    namespace = settings.kueue.namespace
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    for api_version, kind, where in KUEUE_CHART_OBJECTS:
        metadata = {"name": f"kueue-chart-{kind.lower()}"}
        if where is not None:
            metadata["namespace"] = namespace if where == RELEASE_NAMESPACE else where
        out.append({"apiVersion": api_version, "kind": kind, "metadata": metadata})
    out.append({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kueue-cohorts-webhooks-ready", "namespace": namespace}})
    return out


def stack_manifests(settings: Settings,
                    rendered: Optional[Sequence[Mapping[str, Any]]] = None) -> list[dict[str, Any]]:
    """Every object the stack registers apart from the preview identity: ``rendered`` (default: ``render_stack``,
    registered objects only, and the admission guardrails, ``render_admission``) and the Kueue installation's chart
    (``kueue_install_manifests``)."""
    if rendered is None:
        rendered = [r.manifest for r in render_stack(settings) + render_admission(settings) if r.registered]
    return [dict(m) for m in rendered] + kueue_install_manifests(settings)


def identity_plan(settings: Settings, namespace_owner: Optional[str] = None,
                  stack_objects: Optional[Sequence[Mapping[str, Any]]] = None) -> Optional[IdentityPlan]:
    """The preview identity of a stack (``previewIdentity``), or None when the stack has none.

    The RBAC grants get, list, watch on the kinds of ``stack_manifests(settings)`` plus the identity's own objects:
    its Namespace and ServiceAccount when created, the ClusterRole and ClusterRoleBinding, and a Role and RoleBinding
    in every namespace that holds an object of the stack (so the identity also reads its own RBAC).

    Namespaces are always readable cluster-wide: the program's namespace preflight lists them on every preview
    (`components.stack.preflight.check_namespaces`), also for a stack whose layouts create none (namespacePolicy
    External).

    Args:
        settings: shape-valid Settings whose previewIdentity passed ``settings_rules.check_preview_identity``.
        namespace_owner: the stack's ownership mark (`components.model.kueue.namespace_owner`), set as the
            `kueue-cohorts/owner` annotation of the Namespace the identity creates, so that the namespace preflight
            knows this stack created it; None leaves it out (plans compared without a stack).
        stack_objects: the stack's registered manifests apart from the identity when the caller has them
            (`components.model.assembly`); default: rendered here (``stack_manifests``).
    Returns:
        The IdentityPlan. Linear in the number of objects of the stack.
    Raises:
        ValueError: an invalid subject (``Subject.manifest``).
    """
    identity = settings.preview_identity
    if identity is None:
        return None
    subject = Subject(identity.kind.value, identity.name, identity.namespace)
    create = identity.effective_create()
    labels = dict(MANAGED_BY)
    namespace = service_account = None
    if create == PreviewIdentityCreate.SERVICE_ACCOUNT_AND_NAMESPACE:
        metadata: dict[str, Any] = {"name": identity.namespace, "labels": dict(labels)}
        if namespace_owner is not None:
            metadata["annotations"] = {OWNER_ANNOTATION: namespace_owner}
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
    if create != PreviewIdentityCreate.NOTHING:
        service_account = {"apiVersion": "v1", "kind": "ServiceAccount",
                           "metadata": {"name": identity.name, "namespace": identity.namespace,
                                        "labels": dict(labels)}}
    own = [m for m in (namespace, service_account) if m is not None]
    base = read_access(stack_manifests(settings, stack_objects) + own)
    rbac_group = "rbac.authorization.k8s.io"
    access = ReadAccess(
        base.cluster | {("", "namespaces"), (rbac_group, "clusterroles"), (rbac_group, "clusterrolebindings")},
        {ns: kinds | {(rbac_group, "roles"), (rbac_group, "rolebindings")} for ns, kinds in base.namespaced.items()})
    rbac = preview_rbac(access, subject, name=identity.role_name, labels=labels)
    return IdentityPlan(subject, namespace, service_account, rbac, access)
