"""Read-only RBAC for the pull-request preview identity: get/list/watch on exactly the kinds a stack manages. Pure.

The live preview of a pull request (.github/workflows/preview.yml, job ``live-preview``) runs the pull request's
own program against the real cluster. It does so as a separate identity (a user or group of the cluster's
authenticator, or a ServiceAccount) whose kubeconfig lives in the GitHub environment ``preview-<stack>``, never with
the deploy credentials. ``preview_rbac`` returns the ClusterRole and ClusterRoleBinding that give that identity
read access (verbs ``get``, ``list``, ``watch``) to exactly the (apiGroup, resource) pairs the stack manages, and
nothing else: no write verb, no wildcard, no ``secrets`` unless the stack itself manages Secrets.

Upstream: Kubernetes RBAC (``rbac.authorization.k8s.io/v1``, ClusterRole ``rules[].apiGroups/resources/verbs``,
ClusterRoleBinding ``roleRef`` / ``subjects``); the kind -> resource rule of ``resource_of`` is apimachinery's
``meta.UnsafeGuessKindToResource`` (k8s.io/apimachinery pkg/api/meta/restmapper.go), exact for every kind whose
CRD or built-in type uses the conventional plural (all the kinds this project manages).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Optional

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
READ_VERBS = ("get", "list", "watch")
DEFAULT_NAME = "kueue-cohorts-preview"
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
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


def _rules(kinds: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """One rule per API group, resources sorted and distinct, verbs READ_VERBS. Raises ValueError for a wildcard,
    an empty resource or a malformed name."""
    by_group: dict[str, set[str]] = {}
    for group, resource in kinds:
        if "*" in group or "*" in resource:
            raise ValueError(f"({group!r}, {resource!r}): wildcards are refused, name each kind the stack manages")
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


def preview_rbac(kinds: Iterable[tuple[str, str]], subject: Subject, name: str = DEFAULT_NAME,
                 labels: Optional[Mapping[str, str]] = None) -> list[dict[str, Any]]:
    """Return ``[ClusterRole, ClusterRoleBinding]`` manifests giving ``subject`` read-only access to ``kinds``.

    Args:
        kinds: (apiGroup, resource) pairs the stack manages, e.g. ``("kueue.x-k8s.io", "clusterqueues")``,
            ``("", "namespaces")``; duplicates are merged. ``kinds_of(manifests)`` derives them from rendered
            objects.
        subject: the preview identity (Subject).
        name: metadata.name of both objects (a DNS subdomain; default ``kueue-cohorts-preview``).
        labels: metadata.labels of both objects (default none).
    Returns:
        Two manifests (``rbac.authorization.k8s.io/v1``): a ClusterRole with one rule per API group (verbs
        get, list, watch only) and a ClusterRoleBinding of that role to ``subject``.
    Raises:
        ValueError: no kinds, a wildcard, a malformed group or resource, an invalid subject or name.
    """
    if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
        raise ValueError(f"name {name!r}: must be a DNS subdomain")

    def metadata() -> dict[str, Any]:
        return {"name": name, **({"labels": dict(labels)} if labels else {})}

    role = {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": metadata(), "rules": _rules(kinds)}
    binding = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": metadata(),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [subject.manifest()],
    }
    return [role, binding]
