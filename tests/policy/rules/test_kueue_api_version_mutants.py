"""kueue-api-version (promise 1): what the policy-kueue-api-version mutation run found no test pinning down: the
whole finding of each migration step, judged from the fields an object actually sets. Upstream: kubernetes-sigs/kueue
CHANGELOG-0.15.md (the v1beta2 renames: ClusterQueue `spec.cohort` -> `spec.cohortName`, `spec.admissionChecks` ->
`spec.admissionChecksStrategy`, flavorFungibility `Borrow`/`Preempt` -> `MayStopSearch`, Workload
`priorityClassName`/`priorityClassSource` -> `priorityClassRef`), CHANGELOG-0.16.md (v1beta2 the storage version,
v1beta1 deprecated), CHANGELOG-0.13.md (Cohort `spec.parent` -> `spec.parentName`)."""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.kueue_api_version import check_kueue_api_version
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, kube

POLICY = "kueue-api-version"
V1BETA1 = "kueue.x-k8s.io/v1beta1"
TARGET = "kueue.x-k8s.io/v1beta2"


def whole(found: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix, v.message) for v in found]


def _v1beta1(kind: str, spec: dict[str, Any], name: str = "x", namespace: str | None = None) -> Any:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return kube(name, {"apiVersion": V1BETA1, "kind": kind, "metadata": meta, "spec": spec})


def _migration(kind: str, described: str, steps: str) -> tuple:
    return (POLICY, ObjectRef(kind, None, "x"), "apiVersion", V1BETA1, f"Kueue objects use {TARGET}",
            f"migrate: {steps}",
            f"The {described} uses {V1BETA1}, which Kueue deprecates since v0.16; migrate it to {TARGET}: set "
            f"apiVersion: {TARGET}; {steps}.")


@pytest.mark.parametrize(("kind", "spec", "steps"), [
    ("ClusterQueue", {"admissionChecks": ["prov"]},
     "move spec.admissionChecks to spec.admissionChecksStrategy.admissionChecks[].name"),
    ("ClusterQueue", {"cohort": "c", "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
     "rename spec.cohort to spec.cohortName; replace flavorFungibility.whenCanBorrow Borrow with MayStopSearch; "
     "replace flavorFungibility.whenCanPreempt Preempt with MayStopSearch"),
    ("ClusterQueue", {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}},
     "its fields need no change"),
    ("Cohort", {"parent": "root"}, "rename spec.parent to spec.parentName"),
    ("Cohort", {"cohort": "c", "admissionChecks": ["a"]}, "its fields need no change"),
    ("Workload", {"priorityClassName": "p"},
     "replace spec.priorityClassName/priorityClassSource with spec.priorityClassRef"),
    ("Workload", {"priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"},
     "replace spec.priorityClassName/priorityClassSource with spec.priorityClassRef"),
    ("Workload", {"parent": "root", "cohort": "c"}, "its fields need no change"),
])
def test_each_migration_step_is_judged_from_the_fields_the_object_sets(kind, spec, steps):
    """Kills _migration_steps' reads, kinds and words (every step alone, and a field of another kind's step that
    this kind does not have) and the finding's field, value, rule and fix."""
    assert whole(check_kueue_api_version(_v1beta1(kind, spec))) == [_migration(kind, f"{kind} 'x'", steps)]


def test_a_v1beta2_cluster_queue_still_setting_cohort_is_one_whole_finding():
    """Kills the spec.cohort finding's field, value, rule and fix."""
    manifest = compliant()["training-cq"]
    manifest["spec"]["cohort"] = manifest["spec"].pop("cohortName")
    assert whole(check_kueue_api_version(kube("training-cq", manifest))) == [(
        POLICY, ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.cohort", "c12-shared",
        f"spec.cohort is a v1beta1 field that {TARGET} drops", "rename it to spec.cohortName",
        f"The ClusterQueue 'c12-training-cq' sets spec.cohort, a {V1BETA1} field that {TARGET} does not have (the API "
        "server drops it and the queue joins no cohort); rename it to spec.cohortName.")]


def test_only_a_cluster_queues_cohort_is_v1beta1s():
    """A v1beta2 LocalQueue or Cohort with a `spec.cohort` is not a ClusterQueue migration."""
    for kind in ("LocalQueue", "Cohort"):
        obj = kube("x", {"apiVersion": TARGET, "kind": kind, "metadata": {"name": "x"}, "spec": {"cohort": "c"}})
        assert check_kueue_api_version(obj) == []


def test_objects_of_other_groups_are_not_judged():
    """A v1beta1 object of another group (a CronJob of batch/v1beta1) is not Kueue's."""
    obj = kube("cj", {"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "cj"},
                      "spec": {"cohort": "c"}})
    assert check_kueue_api_version(obj) == []


def test_an_unknown_spec_fails_closed_on_the_object():
    """A v1beta1 ClusterQueue whose spec is unknown at preview cannot be told its migration."""
    found = check_kueue_api_version(_v1beta1("ClusterQueue", UNKNOWN))
    assert [(v.policy, v.subject, v.value) for v in found] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "x"), MISSING)]
