"""What Kueue's pinned chart writes outside its own namespace, by name. Pure.

`KueueInstallation` (components/resources/kueue_install.py) installs kubernetes-sigs/kueue `charts/kueue` (v0.19.2,
toolchain/versions.toml [charts]) as the Helm release `RELEASE_NAME` into `kueue.namespace`. Its namespaced objects
live in that namespace, which the namespace preflight judges (components/stack/preflight.py); its cluster-scoped
objects do not, and the provider's server-side apply would take over any of them that exists already, and destroy
would then delete it: the CustomResourceDefinitions of kueue.x-k8s.io, the ClusterRoles and ClusterRoleBindings, the
two admission webhook configurations and the visibility APIServices. `cluster_objects` names every one of them for
the stack's chart values (the chart names them from its fullname, templates/_helpers.tpl `kueue.fullname`); the
optional parts our values leave off (cert-manager, Prometheus, KueueViz, visibility APF, MutatingAdmissionPolicy:
all off by default in values.yaml) are not among them. tests/unit/test_kueue_install_preflight.py reads the pinned
chart's templates and fails when this table and the chart disagree.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RELEASE_NAME = "kueue"
"""Helm release name of Kueue's chart: its objects are then named kueue-*, as in Kueue's released manifests."""
CHART_NAME = "kueue"
"""`.Chart.Name` of charts/kueue (Chart.yaml `name`)."""
NAME_LIMIT = 63
"""`kueue.fullname` truncates to 63 characters (the DNS label limit)."""

#: Frameworks with an editor and a viewer ClusterRole (templates/rbac/<framework>_{editor,viewer}_role.yaml).
_EDITOR_VIEWER = ("clusterqueue", "cohort", "jaxjob", "job", "jobset", "leaderworkerset", "localqueue", "mpijob",
                  "paddlejob", "pytorchjob", "raycluster", "rayjob", "rayservice", "resourceflavor",
                  "sparkapplication", "tfjob", "topology", "trainjob", "workload", "xgboostjob")
#: The chart's cluster-scoped objects named `<fullname>-<suffix>`, as (kind, suffix), v0.19.2 with our values.
FULLNAME_SUFFIXES: tuple[tuple[str, str], ...] = (
    *(("ClusterRole", f"{f}-{role}-role") for f in _EDITOR_VIEWER for role in ("editor", "viewer")),
    ("ClusterRole", "batch-admin-role"), ("ClusterRole", "batch-user-role"), ("ClusterRole", "manager-role"),
    ("ClusterRole", "metrics-auth-role"), ("ClusterRole", "metrics-reader"),
    ("ClusterRole", "pending-workloads-cq-viewer-role"), ("ClusterRole", "pending-workloads-lq-viewer-role"),
    ("ClusterRoleBinding", "manager-rolebinding"), ("ClusterRoleBinding", "metrics-auth-rolebinding"),
    ("MutatingWebhookConfiguration", "mutating-webhook-configuration"),
    ("ValidatingWebhookConfiguration", "validating-webhook-configuration"),
)
#: The chart's cluster-scoped objects with a fixed name (templates/visibility/apiservice_v1beta{1,2}.yaml).
FIXED_NAMES: tuple[tuple[str, str], ...] = (
    ("APIService", "v1beta1.visibility.kueue.x-k8s.io"), ("APIService", "v1beta2.visibility.kueue.x-k8s.io"),
)
#: The chart's objects in Kueue's namespace that hold its credentials, named `<fullname>-<suffix>`, as (kind, suffix),
#: v0.19.2: the manager's ServiceAccount (templates/rbac/service_account.yaml, `kueue.serviceAccountName`), the
#: serving-certificate Secrets of the webhook, metrics and visibility servers (templates/internalcert/*.yaml,
#: templates/certmanager/*.yaml `secretName`).
NAMESPACED_CREDENTIALS: tuple[tuple[str, str], ...] = (
    ("ServiceAccount", "controller-manager"), ("Secret", "webhook-server-cert"), ("Secret", "metrics-server-cert"),
    ("Secret", "visibility-server-cert"),
)
HELM_RELEASE_SECRET_PREFIX = "sh.helm.release.v1."
"""Helm 3 stores each release revision as a Secret `sh.helm.release.v1.<release>.v<revision>` in the release's
namespace (helm.sh/helm/v3 pkg/storage/driver/secrets.go `makeKey`)."""
KUEUE_GROUP = "kueue.x-k8s.io"
"""The API group of Kueue's CRDs (templates/crd/kueue.x-k8s.io_*.yaml): they are judged by whether the cluster serves
it (discovery), not one by one."""


@dataclass(frozen=True, order=True)
class ChartObject:
    """A cluster-scoped object of the chart: `kind` (ClusterRole, ClusterRoleBinding, MutatingWebhookConfiguration,
    ValidatingWebhookConfiguration, APIService) and `name`."""

    kind: str
    name: str

    def describe(self) -> str:
        """`ClusterRole kueue-manager-role`."""
        return f"{self.kind} {self.name}"


def _trunc(name: str) -> str:
    """Helm's `trunc 63 | trimSuffix "-"` (trimSuffix removes one trailing '-')."""
    name = name[:NAME_LIMIT]
    return name[:-1] if name.endswith("-") else name


def chart_fullname(values: Mapping[str, Any]) -> str:
    """The chart's fullname for the chart `values` (`kueue.values`, the stack's passthrough): templates/_helpers.tpl
    `kueue.fullname` of v0.19.2 with release RELEASE_NAME: `fullnameOverride` (truncated) when set; else the name
    (`nameOverride`, default the chart's name) when the release name contains it, the release name itself; else
    `<release>-<name>`. `kueue` with our values."""
    override = str(values.get("fullnameOverride") or "")
    if override:
        return _trunc(override)
    name = str(values.get("nameOverride") or "") or CHART_NAME
    return _trunc(RELEASE_NAME if name in RELEASE_NAME else f"{RELEASE_NAME}-{name}")


def cluster_objects(values: Mapping[str, Any]) -> tuple[ChartObject, ...]:
    """Every cluster-scoped object (but the CRDs) the chart writes with `values`, sorted: the FULLNAME_SUFFIXES
    under `chart_fullname(values)` and the FIXED_NAMES."""
    fullname = chart_fullname(values)
    named = [ChartObject(kind, f"{fullname}-{suffix}") for kind, suffix in FULLNAME_SUFFIXES]
    return tuple(sorted(named + [ChartObject(kind, name) for kind, name in FIXED_NAMES]))


def kueue_credentials(values: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Kind -> the names of Kueue's own credentials in its namespace (`NAMESPACED_CREDENTIALS`) under the chart's
    fullname for `values` and under the default fullname `kueue` (a worker's Kueue, or one the stack does not
    install, is named by its own values), plus `default` (every pod of the namespace without an account runs as it)
    for ServiceAccount. Helm's release Secrets are a prefix: `HELM_RELEASE_SECRET_PREFIX`."""
    out: dict[str, set[str]] = {"ServiceAccount": {"default"}, "Secret": set()}
    for fullname in {chart_fullname(values), chart_fullname({})}:
        for kind, suffix in NAMESPACED_CREDENTIALS:
            out[kind].add(f"{fullname}-{suffix}")
    return {kind: frozenset(names) for kind, names in out.items()}
