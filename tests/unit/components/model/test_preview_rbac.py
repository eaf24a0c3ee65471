"""components.model.preview_rbac: the read-only RBAC of the pull-request preview identity (ClusterRole for
cluster-scoped
kinds, a Role per namespace for namespaced ones)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.model.preview_rbac import (
    NEVER_READ,
    ReadAccess,
    Subject,
    kinds_of,
    never_read,
    preview_rbac,
    read_access,
    resource_of,
)

CLUSTER = frozenset({("kueue.x-k8s.io", "clusterqueues"), ("", "namespaces")})
ACCESS = ReadAccess(CLUSTER, {"team-a": frozenset({("kueue.x-k8s.io", "localqueues")})})
READ = ["get", "list", "watch"]


def test_exact_manifests_for_a_group_subject():
    role, binding, ns_role, ns_binding = preview_rbac(ACCESS, Subject("Group", "kueue-cohorts-preview-prod"))
    assert role == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kueue-cohorts-preview"},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": READ},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": READ},
        ],
    }
    subjects = [{"kind": "Group", "name": "kueue-cohorts-preview-prod", "apiGroup": "rbac.authorization.k8s.io"}]
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kueue-cohorts-preview"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kueue-cohorts-preview"},
        "subjects": subjects,
    }
    assert ns_role == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "kueue-cohorts-preview", "namespace": "team-a"},
        "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "verbs": READ}],
    }
    assert ns_binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "kueue-cohorts-preview", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kueue-cohorts-preview"},
        "subjects": subjects,
    }


def test_service_account_subject_and_labels():
    manifests = preview_rbac(ACCESS, Subject("ServiceAccount", "preview", "ci"), name="prod-preview",
                             labels={"app.kubernetes.io/managed-by": "pulumi"})
    assert [m["subjects"] for m in manifests if "subjects" in m] == \
        [[{"kind": "ServiceAccount", "name": "preview", "namespace": "ci"}]] * 2
    assert {m["metadata"]["name"] for m in manifests} == {"prod-preview"}
    assert all(m["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "pulumi"} for m in manifests)
    assert manifests[0]["metadata"] is not manifests[1]["metadata"]


@pytest.mark.parametrize("access, subject, name", [
    (ReadAccess(frozenset()), Subject("User", "u"), "p"),                                # reads nothing
    (ReadAccess(frozenset({("kueue.x-k8s.io", "*")})), Subject("User", "u"), "p"),       # wildcard resource
    (ReadAccess(frozenset({("*", "pods")})), Subject("User", "u"), "p"),                 # wildcard group
    (ReadAccess(frozenset({("kueue.x-k8s.io", "ClusterQueue")})), Subject("User", "u"), "p"),  # a kind
    (ReadAccess(frozenset({("Kueue_X", "clusterqueues")})), Subject("User", "u"), "p"),  # malformed group
    (ReadAccess(frozenset(), {"Bad_NS": frozenset({("", "configmaps")})}), Subject("User", "u"), "p"),
    (ACCESS, Subject("ServiceAccount", "sa"), "p"),                                      # SA without namespace
    (ACCESS, Subject("User", "u", "ns"), "p"),                                           # namespace on a user
    (ACCESS, Subject("Robot", "u"), "p"),  # type: ignore[arg-type]                     # unknown subject kind
    (ACCESS, Subject("User", ""), "p"),                                                  # empty name
    (ACCESS, Subject("User", "u"), "Bad_Name"),                                          # not a DNS subdomain
])
def test_refused_inputs(access, subject, name):
    with pytest.raises(ValueError):
        preview_rbac(access, subject, name=name)


@pytest.mark.parametrize("kind, resource", [
    ("ClusterQueue", "clusterqueues"), ("LocalQueue", "localqueues"), ("Cohort", "cohorts"),
    ("WorkloadPriorityClass", "workloadpriorityclasses"), ("ResourceFlavor", "resourceflavors"),
    ("ValidatingAdmissionPolicy", "validatingadmissionpolicies"), ("Endpoints", "endpoints"),
    ("Namespace", "namespaces"), ("PersistentVolumeClaim", "persistentvolumeclaims"),
    ("TrainingRuntime", "trainingruntimes"), ("InferenceService", "inferenceservices"),
])
def test_resource_of_follows_apimachinery(kind, resource):
    assert resource_of(kind) == resource


def test_kinds_of_rendered_objects():
    manifests = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"},
                 {"apiVersion": "v1", "kind": "Namespace"},
                 {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"},
                 {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime"}]
    assert kinds_of(manifests) == [("", "namespaces"), ("kueue.x-k8s.io", "clusterqueues"),
                                   ("trainer.kubeflow.org", "trainingruntimes")]
    with pytest.raises(ValueError):
        kinds_of([{"kind": "ClusterQueue"}])


def test_read_access_splits_by_scope():
    """A Helm chart puts its release namespace on cluster-scoped objects too: the kind decides; a Secret is never
    read (issue 28 finding 2)."""
    manifests = [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "w", "namespace": "kueue-system"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cert", "namespace": "kueue-system"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "a"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}},
    ]
    assert read_access(manifests) == ReadAccess(
        frozenset({("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
                   ("kueue.x-k8s.io", "clusterqueues")}),
        {"a": frozenset({("kueue.x-k8s.io", "localqueues")})})


SECRETS = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": ns}}
           for n, ns in [("kueue-webhook-server-cert", "kueue-system"), ("worker1-kubeconfig", "kueue-system"),
                         ("multikueue", "kueue-multikueue"), ("tls", "team-a"), ("orphan", None)]]


@pytest.mark.parametrize("secret", SECRETS, ids=lambda m: f"{m['metadata']['namespace']}/{m['metadata']['name']}")
def test_no_secret_is_ever_granted(secret):
    """Kueue's webhook key, MultiKueue kubeconfigs, a tenant's TLS Secret: never read, in any namespace, by name
    or not (resourceNames cannot narrow a plain list/watch, and the stack's own Secret there is the key)."""
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "a"}}
    access = read_access([secret, lq])
    assert ("", "secrets") not in access.all_kinds()
    rules = [r for m in preview_rbac(access, Subject("Group", "previewers")) for r in m.get("rules", [])]
    assert not [r for r in rules if "secrets" in r["resources"]]


@pytest.mark.parametrize("pair", sorted(NEVER_READ) + [("", "secrets/status")])
@pytest.mark.parametrize("namespace", [None, "kueue-system", "team-a"])
def test_preview_rbac_refuses_a_secret_in_any_scope(pair, namespace):
    access = ReadAccess(frozenset({pair}) if namespace is None else frozenset(),
                        {namespace: frozenset({pair})} if namespace else {})
    assert never_read(*pair)
    with pytest.raises(ValueError, match="never reads Secrets"):
        preview_rbac(access, Subject("User", "preview"))


@pytest.mark.parametrize("api_version,kind", [("v1", "ConfigMap"), ("kueue.x-k8s.io/v1beta2", "LocalQueue"),
                                              ("rbac.authorization.k8s.io/v1", "Role"), ("apps/v1", "Deployment"),
                                              ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
                                              ("example.com/v1", "Widget")])
def test_a_namespaced_kind_without_namespace_is_never_a_cluster_wide_grant(api_version, kind):
    """Any kind not known to be cluster-scoped, without metadata.namespace, is refused (it used to become a
    ClusterRole rule: that kind in every namespace)."""
    with pytest.raises(ValueError, match="no metadata.namespace") as err:
        read_access([{"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}])
    assert kind in str(err.value)
    assert read_access([{"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "n"}}]
                       ).cluster == frozenset()


groups = st.sampled_from(["", "kueue.x-k8s.io", "trainer.kubeflow.org", "serving.kserve.io", "apps"])
resources = st.from_regex(r"[a-z][a-z0-9]{0,20}", fullmatch=True)
namespaces = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)
pairs = st.frozensets(st.tuples(groups, resources), max_size=20)


@given(pairs, st.dictionaries(namespaces, pairs.filter(bool), max_size=5),
       st.sampled_from(["User", "Group"]), st.from_regex(r"[a-z][a-z0-9:@.-]{0,30}", fullmatch=True))
def test_grants_exactly_the_given_kinds_read_only(cluster, namespaced, kind, name):
    cluster = frozenset(p for p in cluster if not never_read(*p))
    namespaced = {ns: frozenset(p for p in k if not never_read(*p)) for ns, k in namespaced.items()}
    namespaced = {ns: k for ns, k in namespaced.items() if k}
    access = ReadAccess(cluster, namespaced)
    if not access.all_kinds():
        with pytest.raises(ValueError):
            preview_rbac(access, Subject(kind, name))
        return
    manifests = preview_rbac(access, Subject(kind, name))
    roles = [m for m in manifests if m["kind"] in ("ClusterRole", "Role")]
    bindings = [m for m in manifests if m["kind"].endswith("Binding")]

    def granted(role: dict) -> set[tuple[str, str]]:
        return {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}

    assert {m["metadata"].get("namespace"): granted(m) for m in roles} == \
        {**({None: set(cluster)} if cluster else {}), **{ns: set(k) for ns, k in namespaced.items()}}
    assert all(rule["verbs"] == READ for role in roles for rule in role["rules"])
    assert all(len({tuple(r["apiGroups"]) for r in role["rules"]}) == len(role["rules"]) for role in roles)
    assert [(b["metadata"].get("namespace"), b["roleRef"]["kind"]) for b in bindings] == \
        [(r["metadata"].get("namespace"), r["kind"]) for r in roles]
    assert all(b["subjects"][0]["name"] == name for b in bindings)
