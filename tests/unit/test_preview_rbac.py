"""components.preview_rbac: the read-only ClusterRole and ClusterRoleBinding of the pull-request preview identity."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.preview_rbac import Subject, kinds_of, preview_rbac, resource_of

KUEUE = [("kueue.x-k8s.io", "clusterqueues"), ("kueue.x-k8s.io", "localqueues"), ("", "namespaces"),
         ("kueue.x-k8s.io", "clusterqueues")]


def test_exact_manifests_for_a_group_subject():
    role, binding = preview_rbac(KUEUE, Subject("Group", "kueue-cohorts-preview-prod"))
    assert role == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kueue-cohorts-preview"},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"],
             "verbs": ["get", "list", "watch"]},
        ],
    }
    assert binding == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kueue-cohorts-preview"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kueue-cohorts-preview"},
        "subjects": [{"kind": "Group", "name": "kueue-cohorts-preview-prod", "apiGroup": "rbac.authorization.k8s.io"}],
    }


def test_service_account_subject_and_labels():
    role, binding = preview_rbac(KUEUE, Subject("ServiceAccount", "preview", "ci"), name="prod-preview",
                                 labels={"app.kubernetes.io/managed-by": "pulumi"})
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "preview", "namespace": "ci"}]
    assert role["metadata"] == binding["metadata"] == {"name": "prod-preview",
                                                       "labels": {"app.kubernetes.io/managed-by": "pulumi"}}
    assert role["metadata"] is not binding["metadata"]
    assert binding["roleRef"]["name"] == "prod-preview"


@pytest.mark.parametrize("kinds, subject, name", [
    ([], Subject("User", "u"), "p"),                                  # reads nothing
    ([("kueue.x-k8s.io", "*")], Subject("User", "u"), "p"),           # wildcard resource
    ([("*", "pods")], Subject("User", "u"), "p"),                     # wildcard group
    ([("kueue.x-k8s.io", "ClusterQueue")], Subject("User", "u"), "p"),  # a kind, not a resource
    ([("Kueue_X", "clusterqueues")], Subject("User", "u"), "p"),      # malformed group
    (KUEUE, Subject("ServiceAccount", "sa"), "p"),                    # ServiceAccount without namespace
    (KUEUE, Subject("User", "u", "ns"), "p"),                         # namespace on a user
    (KUEUE, Subject("Robot", "u"), "p"),                              # unknown subject kind
    (KUEUE, Subject("User", ""), "p"),                                # empty name
    (KUEUE, Subject("User", "u"), "Bad_Name"),                        # metadata.name not a DNS subdomain
])
def test_refused_inputs(kinds, subject, name):
    with pytest.raises(ValueError):
        preview_rbac(kinds, subject, name=name)


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


groups = st.sampled_from(["", "kueue.x-k8s.io", "trainer.kubeflow.org", "serving.kserve.io", "apps"])
resources = st.from_regex(r"[a-z][a-z0-9]{0,20}", fullmatch=True)


@given(st.lists(st.tuples(groups, resources), min_size=1, max_size=30),
       st.sampled_from(["User", "Group"]), st.from_regex(r"[a-z][a-z0-9:@.-]{0,30}", fullmatch=True))
def test_grants_exactly_the_given_kinds_read_only(kinds, kind, name):
    role, binding = preview_rbac(kinds, Subject(kind, name))
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert granted == set(kinds)
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in role["rules"])
    assert len({tuple(rule["apiGroups"]) for rule in role["rules"]}) == len(role["rules"])  # one rule per group
    assert binding["subjects"][0]["name"] == name and binding["roleRef"]["name"] == role["metadata"]["name"]
