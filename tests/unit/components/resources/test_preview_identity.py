"""previewIdentity (issue 14.2): the stack registers the preview identity's read-only RBAC, for exactly the kinds it
manages, derived from what the program itself registers; and a bad subject is refused at its config key."""
from __future__ import annotations

import copy
import tomllib

import pulumi_kubernetes as k8s
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings, validate
from kueue_cohorts.components.model.preview_rbac import (
    KUEUE_CHART_VERSION,
    identity_plan,
    kueue_install_manifests,
    read_access,
)
from kueue_cohorts.components.resources.kueue_install import ChartReference
from kueue_cohorts.components.stack.program import build_stack
from tests.helpers import ROOT, STACKS, run_with_mocks, stack_raw

STACK_NAMES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
SA = {"kind": "ServiceAccount", "name": "preview", "namespace": "kueue-cohorts-preview"}
RBAC = "rbac.authorization.k8s.io"
READ = ["get", "list", "watch"]


def _raw(stack: str, install: bool, identity: dict | None = None) -> dict:
    raw = stack_raw(stack)
    raw.setdefault("kueue", {})["install"] = install
    raw["previewIdentity"] = identity or raw.get("previewIdentity") or SA
    return raw


def _registered_manifests(settings) -> list[dict]:
    """What the program registers under Pulumi mocks, as manifests (type token -> apiVersion and kind; a
    `<Kind>Patch` counts as its kind), plus the Kueue chart's objects, which a Helm Chart does not expand under
    mocks (tests/integration/test_preview_identity_cli.py checks them against the real chart)."""
    def build() -> None:
        provider = k8s.Provider("k8s", render_yaml_to_directory="/tmp/unused")
        build_stack(settings, provider, ChartReference(chart="/chart") if settings.kueue.install else None, None,
                    namespace_owner="kueue-cohorts/test")

    out = []
    for item in run_with_mocks(build).registered:
        if not item.custom or not item.typ.startswith("kubernetes:") or item.typ.startswith("kubernetes:helm"):
            continue
        _, api, kind = item.typ.split(":")
        group, version = api.split("/")
        api_version = version if group == "core" else f"{group}/{version}"
        out.append({"apiVersion": api_version, "kind": kind.removesuffix("Patch"),
                    "metadata": dict(item.inputs.get("metadata") or {})})
    chart = [m for m in kueue_install_manifests(settings) if m["metadata"]["name"].startswith("kueue-chart-")]
    return out + chart


@pytest.mark.parametrize("install", [False, True], ids=["kueue-installed-elsewhere", "kueue-install"])
@pytest.mark.parametrize("stack", STACK_NAMES)
def test_the_rbac_reads_exactly_the_kinds_the_stack_registers(stack, install):
    settings = load_settings(_raw(stack, install))
    plan = identity_plan(settings)
    assert plan is not None
    registered = _registered_manifests(settings)
    # Derived from what the program registered (the identity's own objects included), per scope and namespace.
    assert plan.access == read_access(registered)
    # The RBAC objects grant exactly that: the ClusterRole the cluster-scoped kinds, each Role its namespace's.
    granted = {(m["kind"], m["metadata"].get("namespace")): {(g, r) for rule in m["rules"]
                                                            for g in rule["apiGroups"] for r in rule["resources"]}
               for m in plan.rbac if m["kind"] in ("ClusterRole", "Role")}
    assert granted == {("ClusterRole", None): set(plan.access.cluster),
                       **{("Role", ns): set(kinds) for ns, kinds in plan.access.namespaced.items()}}
    assert all(rule["verbs"] == READ for m in plan.rbac if "rules" in m for rule in m["rules"])
    # The kinds the brief names: the RBAC kinds themselves, Namespaces, the admission policies, Kueue's own kinds.
    assert {(RBAC, "clusterroles"), (RBAC, "clusterrolebindings"), ("", "namespaces"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
            ("kueue.x-k8s.io", "clusterqueues"), ("kueue.x-k8s.io", "resourceflavors")} <= plan.access.cluster
    assert all({(RBAC, "roles"), (RBAC, "rolebindings")} <= kinds for kinds in plan.access.namespaced.values())
    assert plan.access.namespaced["kueue-cohorts-preview"] == {("", "serviceaccounts"), (RBAC, "roles"),
                                                               (RBAC, "rolebindings")}
    if settings.training_runtime is not None:
        assert ("trainer.kubeflow.org", "trainingruntimes") in plan.access.namespaced[
            settings.inference_training.training.namespaces[0]]
    # Never a Secret, anywhere: not Kueue's webhook key in its namespace (issue 28 finding 2), nor cluster-wide.
    assert ("", "secrets") not in plan.access.cluster
    assert not {ns for ns, kinds in plan.access.namespaced.items() if ("", "secrets") in kinds}
    assert not [r for m in plan.rbac for r in m.get("rules", []) if any("secret" in x for x in r["resources"])]
    crds = ("apiextensions.k8s.io", "customresourcedefinitions")
    assert (crds in plan.access.cluster) == install


def test_the_chart_table_is_that_of_the_pinned_chart():
    """KUEUE_CHART_OBJECTS was read from this chart version: moving the pin means reading it again (the CLI test
    compares it with the real render)."""
    pins = tomllib.loads((ROOT / "kueue_cohorts" / "toolchain" / "versions.toml").read_text())
    assert pins["charts"]["kueue"]["version"] == KUEUE_CHART_VERSION


def test_a_stack_without_a_preview_identity_registers_none():
    raw = stack_raw("dev")
    raw.pop("previewIdentity", None)
    assert identity_plan(load_settings(raw)) is None


@pytest.mark.parametrize("identity, created", [
    (SA, ["Namespace", "ServiceAccount"]),
    ({**SA, "create": "ServiceAccount"}, ["ServiceAccount"]),
    ({**SA, "create": "Nothing"}, []),
    ({"kind": "Group", "name": "oidc:kueue-preview"}, []),
    ({"kind": "User", "name": "preview@example.com"}, []),
])
def test_what_the_stack_creates_for_each_subject(identity, created):
    plan = identity_plan(load_settings(_raw("dev", False, identity)))
    assert plan is not None
    assert [m["kind"] for m in (plan.namespace, plan.service_account) if m] == created
    expected = {"kind": identity["kind"], "name": identity["name"]}
    expected.update({"namespace": identity["namespace"]} if "namespace" in identity
                    else {"apiGroup": "rbac.authorization.k8s.io"})
    assert [m["subjects"] for m in plan.rbac if m["kind"].endswith("Binding")] == \
        [[expected]] * (len(plan.rbac) // 2)
    if "ServiceAccount" not in created:  # nothing of the stack lives in the identity's namespace
        assert "kueue-cohorts-preview" not in plan.access.namespaced


P = "kueue-cohorts:previewIdentity"
OWN = "give the ServiceAccount a namespace of its own, e.g. kueue-cohorts-preview"


@pytest.mark.parametrize("identity, problems", [
    ({"kind": "ServiceAccount", "name": "preview"},
     [(f"{P}.namespace", "<absent>",
       "add namespace: one of its own for the ServiceAccount, e.g. kueue-cohorts-preview")]),
    ({"kind": "ServiceAccount", "name": "Preview_1", "namespace": "kueue-cohorts-preview"},
     [(f"{P}.name", "Preview_1",
       "use lower-case letters, digits and '-', starting and ending with a letter or digit")]),
    ({**SA, "name": "p" * 254},  # a DNS-1123 subdomain has at most 253 characters (the shape's limit)
     [(f"{P}.name", "p" * 254, "shorten the value")]),
    ({**SA, "namespace": "c12-training"},
     [(f"{P}.namespace", "c12-training", OWN)]),
    ({**SA, "namespace": "kueue-system", "create": "ServiceAccount"},
     [(f"{P}.namespace", "kueue-system", OWN)]),
    ({**SA, "namespace": "kube-system"},
     [(f"{P}.namespace", "kube-system", OWN)]),
    ({"kind": "Group", "name": "system:authenticated"},
     [(f"{P}.name", "system:authenticated", "name a user or group of your authenticator that only the preview uses, "
                                             "or use kind: ServiceAccount")]),
    ({"kind": "User", "name": " alice"},
     [(f"{P}.name", " alice", "write the name exactly as the authenticator reports it")]),
    ({"kind": "User", "name": "alice", "namespace": "ci", "create": "ServiceAccountAndNamespace"},
     [(f"{P}.namespace", "ci", "remove namespace"),
      (f"{P}.create", "ServiceAccountAndNamespace", "remove create, or use kind: ServiceAccount")]),
    ({"kind": "Robot", "name": "r"},
     [(f"{P}.kind", "Robot", "use exactly one of the allowed values (Kueue's enums are case-sensitive)")]),
    ({"kind": "Group", "name": ""}, [(f"{P}.name", "", "write the Group's name")]),
    ({**SA, "name": ""}, [(f"{P}.name", "", "write the ServiceAccount's name")]),
    ({**SA, "roleName": "Preview"},
     [(f"{P}.roleName", "Preview", "use lower-case letters, digits and '-', starting and ending with a letter or "
                                   "digit, dot-separated")]),
    ({**SA, "nmespace": "x"}, [(f"{P}.nmespace", "x", "did you mean 'namespace'? Rename the key")]),
])
def test_a_bad_subject_is_refused_at_its_key_with_its_fix(identity, problems):
    result = validate(_raw("dev", False, identity))
    assert [(p.key, p.value, p.fix) for p in result.problems] == problems


names = st.one_of(st.sampled_from(["preview", "kueue-preview.ci", "Preview", "a_b", "system:masters",
                                   "system:serviceaccount:ci:p", "oidc:preview", "", " x", "alice@example.com"]),
                  st.from_regex(r"[a-z0-9][a-z0-9.:@-]{0,30}", fullmatch=True))
spaces = st.sampled_from([None, "kueue-cohorts-preview", "ci", "c12-training", "c12-inference", "kueue-system",
                          "kube-system", "Bad_NS"])


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["ServiceAccount", "User", "Group"]), name=names, namespace=spaces,
       create=st.sampled_from([None, "ServiceAccountAndNamespace", "ServiceAccount", "Nothing"]))
def test_any_subject_is_either_refused_at_its_own_keys_or_bound_read_only(kind, name, namespace, create):
    identity = {"kind": kind, "name": name, **({"namespace": namespace} if namespace else {}),
                **({"create": create} if create else {})}
    result = validate(_raw("dev", False, copy.deepcopy(identity)))
    if result.problems:
        assert all(p.key.startswith(f"{P}.") and p.fix for p in result.problems), result.problems
        return
    plan = identity_plan(result.settings)
    assert plan is not None
    subject = plan.subject.manifest()
    assert (subject["kind"], subject["name"], subject.get("namespace")) == (kind, name, namespace)
    assert not name.startswith("system:")
    if kind == "ServiceAccount":
        assert namespace not in ("c12-training", "c12-inference", "kueue-system")
    for manifest in plan.rbac:
        assert manifest["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
        assert all(rule["verbs"] == READ for rule in manifest.get("rules", []))
        assert manifest.get("subjects", [subject]) == [subject]


@pytest.mark.parametrize("identity", [SA, {**SA, "create": "Nothing"}, {"kind": "Group", "name": "oidc:preview"}])
@pytest.mark.parametrize("stack", STACK_NAMES)
def test_the_identity_can_list_namespaces_for_the_namespace_preflight(stack, identity):
    """The program's namespace preflight lists Namespaces on every preview, also when the stack creates none
    (namespacePolicy External everywhere, the identity's namespace not created): the ClusterRole always reads them."""
    raw = _raw(stack, False, identity)
    for layout in ("inferenceTraining", "sharedPool"):
        if layout in raw:
            raw[layout]["namespacePolicy"] = "External"
    # External namespaces carry no label of ours: a managedJobsNamespaceSelector on that label (prod's) would leave
    # their pods uncounted (promise 2 refuses it): select every namespace but the system ones instead.
    if "managedJobsNamespaceSelector" in raw.get("kueue", {}):
        raw["kueue"]["managedJobsNamespaceSelector"] = {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kueue-system"]}]}
    plan = identity_plan(load_settings(raw))
    assert plan is not None
    assert ("", "namespaces") in plan.access.cluster
    [cluster_role] = [m for m in plan.rbac if m["kind"] == "ClusterRole"]
    assert any("" in rule["apiGroups"] and "namespaces" in rule["resources"] and rule["verbs"] == READ
               for rule in cluster_role["rules"])


def test_the_identity_namespace_carries_the_stack_ownership_mark():
    """The Namespace the identity creates is marked like the tenant namespaces, so the namespace preflight lets this
    stack's later runs through and refuses to adopt one it did not create."""
    plan = identity_plan(load_settings(_raw("staging", False, SA)), "kueue-cohorts/staging")
    assert plan is not None and plan.namespace is not None
    assert plan.namespace["metadata"]["annotations"] == {"kueue-cohorts/owner": "kueue-cohorts/staging"}
