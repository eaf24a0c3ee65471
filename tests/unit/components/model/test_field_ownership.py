"""components.model.field_ownership: what the stack declares on an object it created is taken back from every other
field manager, and nothing else is (the live counterpart: tests/e2e/test_06_drift.py)."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.components.model.field_ownership import (
    CONTROLLER_MANAGERS,
    describe,
    is_controller,
    stack_manager,
    take_back,
)

OURS = "pulumi-kubernetes-3f9c1a2b"
MARK = {"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}

BINDING = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": "kueue-cohorts.c12-shared.tenant-label",
                        "labels": {"app.kubernetes.io/managed-by": "kueue-cohorts"},
                        "annotations": {"pulumi.com/patchForce": "true"}},
           "spec": {"policyName": "kueue-cohorts.c12-shared.tenant-label", "validationActions": ["Warn", "Audit"]}}


def _entry(manager: str, operation: str, fields: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    entry = {"manager": manager, "operation": operation, "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": fields, "time": "2026-12-04T20:00:00Z"}
    if subresource:
        entry["subresource"] = subresource
    return entry


def _ours(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    fields = {"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}},
              "f:spec": {"f:policyName": {}}}
    fields["f:spec"].update(extra or {})
    return _entry(OURS, "Apply", fields)


def _leaves(node: dict[str, Any], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every path of a fieldsV1 tree, inner nodes included (an owned field, or a parent of one)."""
    out: set[tuple[str, ...]] = set()
    for key, child in node.items():
        path = (*prefix, key)
        out |= {path} | _leaves(child, path)
    return out


def _owned(entries: list[dict[str, Any]], manager: str) -> set[tuple[str, ...]]:
    return {leaf for e in entries if e["manager"] == manager and not e.get("subresource")
            for leaf in _leaves(e["fieldsV1"])}


def test_a_restored_hand_edit_of_a_set_list_is_taken_back_so_the_next_apply_replaces_it():
    """The CI failure: `[Warn]` and back to `[Deny]` by hand leaves Deny owned by the editor alone; after take_back the
    stack owns the list and its apply of [Warn, Audit] drops Deny instead of merging it in."""
    editor = _entry("OpenAPI-Generator", "Update", {"f:spec": {"f:validationActions": {'v:"Deny"': {}}}})
    decision = take_back([_ours(), editor], BINDING)
    assert decision is not None and decision.manager == OURS
    assert [(t.manager, t.operation, t.paths) for t in decision.transfers] == [
        ("OpenAPI-Generator", "Update", ("spec.validationActions",))]
    assert [e["manager"] for e in decision.managed_fields] == [OURS]  # the editor's entry owned nothing else
    assert ("f:spec", "f:validationActions", 'v:"Deny"') in _owned(decision.managed_fields, OURS)
    assert describe("ValidatingAdmissionPolicyBinding", None, "b", decision.transfers) == [
        'ValidatingAdmissionPolicyBinding b: spec.validationActions from field manager "OpenAPI-Generator" (Update)']


def test_labels_annotations_finalizers_and_status_of_others_stay_theirs():
    finalizers = {".": {}, 'v:"kueue.x-k8s.io/resource-in-use"': {}}
    kueue = _entry("kueue", "Update", {"f:metadata": {"f:finalizers": finalizers}})
    status = _entry("kueue", "Update", {"f:status": {"f:conditions": {}}}, subresource="status")
    labeller = _entry("kubectl-label", "Update", {"f:metadata": {"f:labels": {
        "f:team": {}, "f:app.kubernetes.io/managed-by": {}}}})
    annotator = _entry("kubectl-annotate", "Update", {"f:metadata": {"f:annotations": {"f:note": {}}}})
    decision = take_back([_ours(), kueue, status, labeller, annotator], BINDING)
    assert decision is not None
    entries = {(e["manager"], e.get("subresource", "")): e for e in decision.managed_fields}
    assert entries[("kueue", "")] == kueue and entries[("kueue", "status")] == status
    assert entries[("kubectl-annotate", "")] == annotator
    assert entries[("kubectl-label", "")]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:team": {}}}}
    assert [t.paths for t in decision.transfers] == [("metadata.labels.app.kubernetes.io/managed-by",)]


def test_nothing_to_take_and_objects_that_are_not_the_stacks():
    assert take_back([_ours({"f:validationActions": {}})], BINDING).transfers == ()  # type: ignore[union-attr]
    editor = _entry("kubectl-edit", "Update", {"f:spec": {"f:validationActions": {}}})
    assert take_back([editor], BINDING) is None  # no pulumi manager: created by someone else
    unmarked = _entry(OURS, "Apply", {"f:spec": {"f:policyName": {}}})
    assert take_back([unmarked, editor], BINDING) is None  # a Pulumi program's, without the stack's mark
    other = _entry("pulumi-kubernetes-0000", "Apply", MARK)
    assert stack_manager([_ours(), other]) is None  # two programs applied the mark: whose it is cannot be told
    assert take_back([_ours(), other, editor], BINDING) is None


_TOP = st.sampled_from(["f:spec", "f:data", "f:rules", "f:value"])
_LEAF = st.sampled_from(["f:validationActions", "f:stopPolicy", "f:borrowingLimit", 'v:"Deny"', "k:{\"name\":\"gpu\"}",
                         "i:0", "."])
_TREE = st.recursive(st.just({}), lambda child: st.dictionaries(_LEAF, child, min_size=1, max_size=3), max_leaves=6)
_META = st.fixed_dictionaries({}, optional={
    "f:labels": st.dictionaries(st.sampled_from(["f:app.kubernetes.io/managed-by", "f:team", "f:kueue-cohorts/tenant"]),
                                st.just({}), min_size=1),
    "f:annotations": st.dictionaries(st.sampled_from(["f:pulumi.com/patchForce", "f:note"]), st.just({}), min_size=1),
    "f:finalizers": st.just({".": {}, 'v:"kueue.x-k8s.io/resource-in-use"': {}}),
    "f:ownerReferences": st.just({"k:{\"uid\":\"1\"}": {}})})


def _foreign(name: str, op: str, top: dict[str, Any], meta: dict[str, Any], sub: str) -> dict[str, Any]:
    return _entry(name, op, {**top, **({"f:metadata": meta} if meta else {})}, sub)


_FOREIGN = st.builds(_foreign,
                     st.sampled_from(["kubectl-edit", "kubectl-patch", "kubectl-client-side-apply", "kubectl",
                                      "OpenAPI-Generator", "argocd-controller", "helm"]),
                     st.sampled_from(["Update", "Apply"]),
                     st.dictionaries(_TOP, _TREE.filter(bool), max_size=2), _META,
                     st.sampled_from(["", "", "status"]))
_DECLARED = st.fixed_dictionaries({
    "apiVersion": st.just("v1"), "kind": st.just("Thing"),
    "metadata": st.just({"name": "x", "labels": {"app.kubernetes.io/managed-by": "kueue-cohorts",
                                                 "kueue-cohorts/tenant": "a"},
                         "annotations": {"pulumi.com/patchForce": "true"}})},
    optional={"spec": st.just({"policyName": "p"}), "data": st.just({"k": "v"}), "rules": st.just([]),
              "value": st.just(1)})


@given(foreign=st.lists(_FOREIGN.filter(lambda e: e["fieldsV1"]), max_size=5), declared=_DECLARED)
def test_declared_fields_end_with_the_stack_and_nothing_is_lost_or_invented(foreign, declared):
    entries = [_ours(), *foreign]
    decision = take_back(entries, declared)
    assert decision is not None
    out = decision.managed_fields
    declared_top = {f"f:{k}" for k in declared if k not in ("apiVersion", "kind", "metadata")}
    shared = {("f:metadata", f"f:{m}", f"f:{k}") for m in ("labels", "annotations") for k in declared["metadata"][m]}
    # every owned path of the object itself still has an owner, and no owner gained a path nobody had
    assert set().union(*(_leaves(e["fieldsV1"]) for e in out if not e.get("subresource"))) == set().union(
        *(_leaves(e["fieldsV1"]) for e in entries if not e.get("subresource")))
    for entry in out:
        assert entry["fieldsV1"], entry  # an entry left owning nothing is dropped
        if entry["manager"] == OURS or entry.get("subresource"):
            continue
        for leaf in _leaves(entry["fieldsV1"]):
            assert leaf[0] not in declared_top and leaf[:3] not in shared, (entry["manager"], leaf)
    # subresource entries are untouched; what another manager keeps is exactly what it had outside the declared fields
    assert [e for e in out if e.get("subresource")] == [e for e in entries if e.get("subresource")]
    again = take_back(out, declared)
    assert again is not None and again.transfers == () and again.managed_fields == out  # idempotent


# --- issue 38 class 7: a controller's fields are never taken -----------------------------------------------------

CHECKPOINT_PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                  "metadata": {"name": "checkpoints", "namespace": "training",
                               "labels": {"app.kubernetes.io/managed-by": "kueue-cohorts"}},
                  "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "100Gi"}},
                           "storageClassName": "nfs"}}


@pytest.mark.parametrize("binder", ["kube-controller-manager", "kwok"])
def test_the_pv_controllers_volume_name_of_a_bound_claim_stays_the_controllers(binder):
    """The PV controller (kube-controller-manager, an Update) binds the stack's checkpoint claim: `spec.volumeName`
    and the bind annotations are its; taken to the stack, the next apply would drop volumeName, which the API
    server refuses on a bound claim, for good."""
    ours = _entry(OURS, "Apply", {**MARK, "f:spec": {"f:accessModes": {}, "f:resources": {"f:requests": {
        "f:storage": {}}}, "f:storageClassName": {}}})
    binding = _entry(binder, "Update", {
        "f:metadata": {"f:annotations": {".": {}, "f:pv.kubernetes.io/bind-completed": {},
                                         "f:pv.kubernetes.io/bound-by-controller": {}}},
        "f:spec": {"f:volumeName": {}}})
    status = _entry(binder, "Update", {"f:status": {"f:phase": {}}}, subresource="status")
    decision = take_back([ours, binding, status], CHECKPOINT_PVC)
    assert decision is not None and decision.transfers == ()
    assert decision.managed_fields == [ours, binding, status]


def test_a_persons_edit_beside_a_controllers_field_is_taken_the_controllers_is_not():
    ours = _entry(OURS, "Apply", {**MARK, "f:spec": {"f:storageClassName": {}}})
    binder = _entry("kube-controller-manager", "Update", {"f:spec": {"f:volumeName": {}}})
    edit = _entry("kubectl-edit", "Update", {"f:spec": {"f:resources": {"f:requests": {"f:storage": {}}}}})
    decision = take_back([ours, binder, edit], CHECKPOINT_PVC)
    assert decision is not None
    assert describe("PersistentVolumeClaim", "training", "checkpoints", decision.transfers) == [
        'PersistentVolumeClaim training/checkpoints: spec.resources from field manager "kubectl-edit" (Update)']
    assert binder in decision.managed_fields and edit not in decision.managed_fields


_CONTROLLER = st.builds(_foreign, st.sampled_from(sorted(CONTROLLER_MANAGERS)), st.sampled_from(["Update", "Apply"]),
                        st.dictionaries(_TOP, _TREE.filter(bool), max_size=2), _META, st.sampled_from(["", "status"]))


@given(foreign=st.lists(_FOREIGN.filter(lambda e: e["fieldsV1"]), max_size=4),
       controllers=st.lists(_CONTROLLER.filter(lambda e: e["fieldsV1"]), min_size=1, max_size=3), declared=_DECLARED)
def test_no_field_of_a_controller_is_ever_taken(foreign, controllers, declared):
    """Whatever the stack declares and whatever persons and tools wrote beside them, every entry of a controller
    (its manager one of CONTROLLER_MANAGERS, or any subresource entry) comes out exactly as it went in, and no
    transfer names a controller."""
    entries = [_ours(), *controllers, *foreign]
    decision = take_back(entries, declared)
    assert decision is not None
    for entry in controllers:
        assert entry in decision.managed_fields
    assert not {t.manager for t in decision.transfers} & CONTROLLER_MANAGERS
    assert all(not is_controller(e) for e in foreign if not e.get("subresource")) and all(map(is_controller,
                                                                                               controllers))
