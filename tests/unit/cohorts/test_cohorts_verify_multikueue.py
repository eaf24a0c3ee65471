"""verify on a MultiKueue stack (issue 33): each worker is verified on its own cluster against the objects the stack
registers there; a rule removed by hand from the worker identity's ClusterRole is reported with the rule it needs;
a MultiKueueCluster that is not Active on the manager is reported with Kueue's reason."""
from __future__ import annotations

import copy

import pytest

from kueue_cohorts.cohorts.expected import expected_objects, worker_expected
from kueue_cohorts.cohorts.verify import WORKER_CHECKS, verify
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.policy.rules.vocabulary.multikueue import kind_access
from tests.helpers import stack_raw
from tests.unit.cohorts.test_cohorts_verify import FakeCluster, served


def _settings(integrations=None):
    raw = stack_raw("dev")
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly", "workers": [{"name": "worker-1"}],
                         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["worker-1"]}]}
    if integrations is not None:
        raw["kueue"] = {**raw.get("kueue", {}), "integrations": integrations}
    return load_settings(raw)


def _worker(settings, mutate=None):
    objects = copy.deepcopy(worker_expected(assemble(settings))["worker-1"])
    if mutate is not None:
        mutate(objects)
    return FakeCluster(served(objects))


def _verify_worker(settings, cluster):
    worker = settings.multi_kueue.workers[0]
    return verify(settings, cluster, worker_expected(assemble(settings))["worker-1"], WORKER_CHECKS, worker=worker)


def test_a_worker_as_the_stack_registers_it_has_no_difference():
    settings = _settings()
    assert _verify_worker(settings, _worker(settings)) == []


def _drop_rule(resource):
    def mutate(objects):
        role = next(o for o in objects if o["kind"] == "ClusterRole")
        role["rules"] = [r for r in role["rules"] if r["resources"] != [resource]]
    return mutate


@pytest.mark.parametrize("resource", [a.resource for a in kind_access(
    ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod"]) if a.reads({})])
def test_a_rule_removed_by_hand_is_reported_with_the_rule_it_needs(resource):
    settings = _settings()
    found = _verify_worker(settings, _worker(settings, _drop_rule(resource)))
    named = [d for d in found if d.path == f"rules[{resource}]"]
    assert len(named) == 1, [str(d) for d in found]
    diff = named[0]
    assert diff.cluster == "worker-1" and str(diff).startswith("[worker worker-1] ClusterRole kueue-cohorts-multikueue")
    assert f"resources: [{resource}]" in diff.fix and "kueue-system/multikueue" in diff.rule
    assert diff.as_json()["cluster"] == "worker-1"


def test_a_verb_removed_names_only_that_verb():
    settings = _settings()

    def mutate(objects):
        role = next(o for o in objects if o["kind"] == "ClusterRole")
        for rule in role["rules"]:
            if rule["resources"] == ["trainjobs"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != "watch"]

    found = [d for d in _verify_worker(settings, _worker(settings, mutate)) if d.path == "rules[trainjobs]"]
    assert len(found) == 1 and "verbs: [watch]}" in found[0].fix


def test_a_grant_through_another_binding_or_a_wildcard_counts():
    """The stack's role lost its TrainJob rule, but another ClusterRole bound to the same ServiceAccount grants
    everything in trainer.kubeflow.org: nothing is missing (RBAC unions the bindings, with wildcards)."""
    settings = _settings()

    def mutate(objects):
        _drop_rule("trainjobs")(objects)
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "metadata": {"name": "trainer-all"},
                        "rules": [{"apiGroups": ["trainer.kubeflow.org"], "resources": ["*"], "verbs": ["*"]}]})
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                        "metadata": {"name": "trainer-all"},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                    "name": "trainer-all"},
                        "subjects": [{"kind": "ServiceAccount", "name": "multikueue", "namespace": "kueue-system"}]})

    found = _verify_worker(settings, _worker(settings, mutate))
    assert not [d for d in found if d.path == "rules[trainjobs]"]


def test_the_rules_follow_the_managers_integrations():
    """Without the pod integration, no pod access is needed (nor granted by the stack)."""
    settings = _settings(["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "deployment"])
    role = next(o for o in worker_expected(assemble(settings))["worker-1"] if o["kind"] == "ClusterRole")
    assert "pods" not in {r for rule in role["rules"] for r in rule["resources"]}
    assert _verify_worker(settings, _worker(settings)) == []


def test_a_disconnected_worker_is_reported_on_the_manager_with_kueues_reason():
    settings = _settings()
    objects = served(expected_objects(settings))
    key = ("kueue.x-k8s.io/v1beta2", "MultiKueueCluster", None, "worker-1")
    message = 'trainjobs.trainer.kubeflow.org is forbidden: User "system:serviceaccount:kueue-system:multikueue" ' \
              'cannot watch resource "trainjobs"'
    objects[key]["status"] = {"conditions": [{"type": "Active", "status": "False", "reason": "ClientConnectionFailed",
                                              "message": message}]}
    found = [d for d in verify(settings, FakeCluster(objects)) if d.kind == "MultiKueueCluster"]
    assert len(found) == 1 and "ClientConnectionFailed" in str(found[0]) and "trainjobs" in str(found[0])
    objects[key]["status"]["conditions"][0]["status"] = "True"
    assert not [d for d in verify(settings, FakeCluster(objects)) if d.kind == "MultiKueueCluster"]


def test_a_write_rule_lost_from_the_dispatched_namespaces_role_is_reported_there():
    """Issue 38 class 2: the writes live in a Role of each dispatched namespace, and verify reads them there."""
    settings = _settings()

    def mutate(objects):
        role = next(o for o in objects if o["kind"] == "Role")
        role["rules"] = [r for r in role["rules"] if r["resources"] != ["trainjobs"]]

    found = [d for d in _verify_worker(settings, _worker(settings, mutate)) if d.path == "rules[trainjobs]"]
    assert len(found) == 1, [str(d) for d in found]
    assert (found[0].kind, found[0].namespace) == ("Role", "c12-training")
    assert "verbs: [create, delete]}" in found[0].fix and "Role c12-training/kueue-cohorts-multikueue" in found[0].fix


def test_a_cluster_wide_write_grant_by_hand_still_counts_as_access():
    """RBAC unions the bindings: a ClusterRoleBinding granting the writes everywhere satisfies the namespace check
    (verify reports what is missing, not what is broader than the stack's)."""
    settings = _settings()

    def mutate(objects):
        objects[:] = [o for o in objects if o["kind"] not in ("Role", "RoleBinding")]
        role = next(o for o in objects if o["kind"] == "ClusterRole")
        role["rules"] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]

    found = _verify_worker(settings, _worker(settings, mutate))
    assert not [d for d in found if d.path.startswith("rules[")], [str(d) for d in found]
    assert any(d.kind == "Role" and d.namespace == "c12-training" for d in found)  # objects_match: the Role is gone
