"""verify: the stack's rendered objects against a cluster given as dicts (what the API server would return)."""
import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cohorts.expected import expected_objects
from cohorts.verify import CHECKS, Context, Difference, KindNotServed, Unreadable, compare_fields, selects, verify
from components.settings import raw_from_stack_file
from components.validation import load_settings, load_stack_file
from tests.helpers import STACKS

STACK_NAMES = ("dev", "staging", "prod")


class FakeCluster:
    """LiveObjects over a dict {(apiVersion, kind, namespace, name): object}; ``unserved`` kinds raise KindNotServed,
    ``forbidden`` kinds raise Unreadable."""

    def __init__(self, objects, unserved=(), forbidden=()):
        self.objects = objects
        self.unserved, self.forbidden = set(unserved), set(forbidden)

    def _check(self, kind):
        if kind in self.unserved:
            raise KindNotServed(kind)
        if kind in self.forbidden:
            raise Unreadable("403 Forbidden")

    def get(self, api_version, kind, name, namespace=None):
        self._check(kind)
        return copy.deepcopy(self.objects.get((api_version, kind, namespace, name)))

    def list(self, api_version, kind):
        self._check(kind)
        return [copy.deepcopy(o) for (a, k, _, _), o in self.objects.items() if (a, k) == (api_version, kind)]


def served(manifests):
    """What the API server returns for objects applied from ``manifests``: server metadata, API-server and Kueue
    defaults (flavorFungibility, ...), status, and the automatic namespace label."""
    out = {}
    for m in manifests:
        obj = copy.deepcopy(m)
        meta = obj["metadata"]
        meta.update({"uid": "u-" + meta["name"], "resourceVersion": "7", "generation": 1,
                     "managedFields": [{"manager": "pulumi-kubernetes"}]})
        meta.setdefault("annotations", {})["extra"] = "x"
        if obj["kind"] == "ClusterQueue":
            obj["spec"].setdefault("flavorFungibility", {"whenCanBorrow": "MayStopSearch",
                                                        "whenCanPreempt": "TryNextFlavor"})
            obj["spec"].setdefault("queueingStrategy", "BestEffortFIFO")
            obj["spec"].setdefault("stopPolicy", "None")
            obj["status"] = {"admittedWorkloads": 0, "flavorsUsage": []}
        if obj["kind"] == "Namespace":
            meta["labels"]["kubernetes.io/metadata.name"] = meta["name"]
            obj["spec"] = {"finalizers": ["kubernetes"]}
        out[(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])] = obj
    return out


def _settings(name):
    return load_stack_file(STACKS / f"Pulumi.{name}.yaml")


def _cq(objects, name):
    return objects[("kueue.x-k8s.io/v1beta2", "ClusterQueue", None, name)]


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_a_cluster_made_from_the_stack_has_no_difference(stack):
    s = _settings(stack)
    assert verify(s, FakeCluster(served(expected_objects(s)))) == []


def test_expected_objects_are_the_registered_render_in_registration_order():
    kinds = [m["kind"] for m in expected_objects(_settings("dev"))]
    assert kinds == ["ResourceFlavor", "Namespace", "Namespace", "WorkloadPriorityClass", "WorkloadPriorityClass",
                     "ClusterQueue", "ClusterQueue", "LocalQueue", "LocalQueue", "PersistentVolumeClaim",
                     "TrainingRuntime", "ConfigMap"] + ["ValidatingAdmissionPolicy",
                                                       "ValidatingAdmissionPolicyBinding"] * 6
    # not the Kueue manager ConfigMap (judged, never registered); the guardrails last, one policy and binding per rule


def test_a_label_policy_namespace_is_only_its_selector_label():
    raw = raw_from_stack_file(STACKS / "Pulumi.dev.yaml")
    raw["inferenceTraining"]["namespacePolicy"] = "Label"
    namespaces = [m for m in expected_objects(load_settings(raw)) if m["kind"] == "Namespace"]
    assert namespaces == [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "c12-inference", "labels": {"kueue.x-k8s.io/queue": "c12-inference-cq"}}},
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "c12-training", "labels": {"kueue.x-k8s.io/queue": "c12-training-cq"}}}]


def test_a_hand_edited_nominal_quota_is_named_by_kind_name_and_field_path():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _cq(objects, "c12-inference-cq")["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "8"
    [diff] = verify(s, FakeCluster(objects))
    assert (diff.kind, diff.name, diff.path, diff.item, diff.expected, diff.live) == (
        "ClusterQueue", "c12-inference-cq", "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "cpu",
        "4", "8")
    assert str(diff) == ('ClusterQueue c12-inference-cq: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota '
                         '(cpu): differs: expected "4", live "8"')


QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


@st.composite
def _quota_edit(draw):
    """Any stack, any ClusterQueue, any resource, any quota field, set to any other value (or removed)."""
    stack = draw(st.sampled_from(STACK_NAMES))
    expected = expected_objects(_settings(stack))
    cq = draw(st.sampled_from([m for m in expected if m["kind"] == "ClusterQueue"]))
    resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    index = draw(st.integers(0, len(resources) - 1))
    field = draw(st.sampled_from(QUOTA_FIELDS))
    value = draw(st.one_of(st.none(), st.integers(0, 64).map(str)))
    return stack, cq["metadata"]["name"], index, field, value


@settings(max_examples=60, deadline=None)
@given(_quota_edit())
def test_any_quota_edit_is_reported_at_its_path_and_nowhere_else(edit):
    stack, name, index, field, value = edit
    s = _settings(stack)
    objects = served(expected_objects(s))
    entry = _cq(objects, name)["spec"]["resourceGroups"][0]["flavors"][0]["resources"][index]
    before = entry.get(field)
    if value is None:
        entry.pop(field, None)
    else:
        entry[field] = value
    diffs = verify(s, FakeCluster(objects))
    path = f"spec.resourceGroups[0].flavors[0].resources[{index}].{field}"
    changed = (before is None) != (value is None) or (before is not None and int(value) != _num(before))
    if not changed:
        assert diffs == []
    else:
        assert {(d.kind, d.name, d.path) for d in diffs} == {("ClusterQueue", name, path)}


def _num(text):
    from components.quantity import parse

    return parse(text)


def test_inference_borrowing_is_refused_with_its_rule_even_on_a_resource_added_by_hand():
    s = _settings("dev")
    objects = served(expected_objects(s))
    cq = _cq(objects, "c12-inference-cq")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = "1"
    cq["spec"]["resourceGroups"].append({"coveredResources": ["example.com/fpga"], "flavors": [
        {"name": "c12-default", "resources": [{"name": "example.com/fpga", "nominalQuota": "1"}]}]})
    cq["status"]["flavorsUsage"] = [{"name": "c12-default", "resources": [
        {"name": "nvidia.com/gpualloc", "total": "2", "borrowed": "1"}]}]
    diffs = verify(s, FakeCluster(objects))
    rules = {(d.path, d.item): d.rule for d in diffs}
    never = "the inference ClusterQueue must never borrow (an absent borrowingLimit means unlimited)"
    assert rules[("spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit", "nvidia.com/gpualloc")] == never
    assert rules[("spec.resourceGroups[1].flavors[0].resources[0].borrowingLimit", "example.com/fpga")] == never
    assert rules[("status.flavorsUsage[0].resources[0].borrowed", "nvidia.com/gpualloc")] == \
        "the inference ClusterQueue is borrowing"
    assert rules[("spec.resourceGroups", "")] == "differs"  # the extra group is not the stack's
    assert len(diffs) == 4


def test_a_limit_added_on_the_cluster_is_a_difference():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _cq(objects, "c12-training-cq")["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "1"
    [diff] = verify(s, FakeCluster(objects))
    assert (diff.path, diff.expected, diff.live, diff.rule) == (
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", None, "1",
        "set on the cluster, not in the stack")


def test_a_widened_namespace_selector_is_a_difference_and_a_narrowed_one_leaves_the_namespace_unselected():
    s = _settings("dev")
    objects = served(expected_objects(s))
    selector = _cq(objects, "c12-training-cq")["spec"]["namespaceSelector"]
    selector.setdefault("matchExpressions", []).append({"key": "team", "operator": "Exists"})
    diffs = verify(s, FakeCluster(objects))
    assert [(d.kind, d.name, d.path) for d in diffs] == [
        ("ClusterQueue", "c12-training-cq", "spec.namespaceSelector.matchExpressions"),
        ("Namespace", "c12-training", "metadata.labels")]
    assert "Workloads of LocalQueue c12-training/c12-training-lq are never admitted" in diffs[1].rule


def test_a_missing_object_and_a_kind_the_cluster_does_not_serve():
    s = _settings("dev")
    objects = served(expected_objects(s))
    del objects[("kueue.x-k8s.io/v1beta2", "LocalQueue", "c12-training", "c12-training-lq")]
    diffs = verify(s, FakeCluster(objects, unserved={"WorkloadPriorityClass"}))
    assert [(d.kind, d.name, d.rule) for d in diffs] == [
        ("WorkloadPriorityClass", "c12-inference-prio", "the cluster does not serve kueue.x-k8s.io/v1beta2 "
         "WorkloadPriorityClass"),
        ("WorkloadPriorityClass", "c12-training-prio", "the cluster does not serve kueue.x-k8s.io/v1beta2 "
         "WorkloadPriorityClass"),
        ("LocalQueue", "c12-training-lq", "missing on the cluster")]
    assert diffs[2].namespace == "c12-training" and str(diffs[2]).startswith("LocalQueue c12-training/c12-training-lq")


def test_an_unreadable_kind_is_reported_not_raised():
    s = _settings("dev")
    diffs = verify(s, FakeCluster(served(expected_objects(s)), forbidden={"Namespace"}))
    assert [(d.kind, d.rule) for d in diffs] == [("Namespace", "cannot be read (403 Forbidden)")] * 2


def test_a_removed_tenant_label_is_named_twice_over():
    s = _settings("dev")
    objects = served(expected_objects(s))
    del objects[("v1", "Namespace", None, "c12-inference")]["metadata"]["labels"]["kueue.x-k8s.io/queue"]
    diffs = verify(s, FakeCluster(objects))
    assert [(d.kind, d.path, d.rule.split(":")[0]) for d in diffs] == [
        ("Namespace", "metadata.labels[kueue.x-k8s.io/queue]", "absent on the cluster"),
        ("Namespace", "metadata.labels", "ClusterQueue c12-inference-cq's namespaceSelector does not select this "
                                         "namespace")]


def test_external_namespaces_are_not_compared_but_must_still_be_selected():
    raw = raw_from_stack_file(STACKS / "Pulumi.dev.yaml")
    raw["inferenceTraining"]["namespacePolicy"] = "External"
    s = load_settings(raw)
    expected = expected_objects(s)
    assert "Namespace" not in {m["kind"] for m in expected}
    diffs = verify(s, FakeCluster(served(expected)))
    assert [(d.kind, d.name, d.rule) for d in diffs] == [
        ("Namespace", "c12-inference", "missing: LocalQueue c12-inference/c12-inference-lq lives there"),
        ("Namespace", "c12-training", "missing: LocalQueue c12-training/c12-training-lq lives there")]


VAP = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
       "metadata": {"name": "kueue-cohorts-inference-never-borrows"},
       "spec": {"failurePolicy": "Fail", "validations": [{"expression": "true", "message": "m"}]}}
BINDING = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": "kueue-cohorts-inference-never-borrows"},
           "spec": {"policyName": "kueue-cohorts-inference-never-borrows", "validationActions": ["Deny"]}}


def test_admission_policies_must_be_bound_once_the_stack_renders_them():
    s = _settings("dev")
    expected = expected_objects(s) + [VAP]
    diffs = verify(s, FakeCluster(served(expected)), expected=expected)
    assert [(d.kind, d.name, d.path, d.rule) for d in diffs] == [
        ("ValidatingAdmissionPolicy", "kueue-cohorts-inference-never-borrows", "(binding)",
         "the policy is not bound, so it validates nothing")]
    assert verify(s, FakeCluster(served(expected + [BINDING])), expected=expected) == []
    expected.append(BINDING)
    audit = served(expected)
    audit[("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", None, BINDING["metadata"]["name"])][
        "spec"]["validationActions"] = ["Warn", "Audit"]
    [diff] = verify(s, FakeCluster(audit), expected=expected)
    assert (diff.kind, diff.path, diff.expected, diff.live) == (
        "ValidatingAdmissionPolicyBinding", "spec.validationActions", ["Deny"], ["Warn", "Audit"])


def test_quantities_compare_as_quantities():
    assert compare_fields({"nominalQuota": "2048Mi"}, {"nominalQuota": "2Gi"}) == []
    assert compare_fields({"nominalQuota": "1"}, {"nominalQuota": "1000m"}) == []
    assert compare_fields({"name": "2"}, {"name": "2.0"}) != []  # only quota fields are quantities


@pytest.mark.parametrize("selector,labels,selected", [
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({}, {}, True),
    (None, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "x"}, False),
])
def test_label_selectors_select_as_apimachinery_does(selector, labels, selected):
    assert selects(selector, labels) is selected


def test_a_check_added_to_the_list_runs_and_repeats_are_dropped():
    s = _settings("dev")

    def always(ctx: Context):
        return [Difference("ClusterQueue", "c12-training-cq", "", "spec.x", 1, 2, "custom"),
                Difference("ClusterQueue", "c12-training-cq", "", "spec.x", 1, 2, "again")]

    diffs = verify(s, FakeCluster(served(expected_objects(s))), checks=CHECKS + (always,))
    assert [d.rule for d in diffs] == ["custom"]
