"""verify: the stack's rendered objects against a cluster given as dicts (what the API server would return)."""
import copy
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.cohorts.expected import expected_objects
from kueue_cohorts.cohorts.verify import CHECKS, Context, Difference, KindNotServed, Unreadable, compare_fields, verify
from kueue_cohorts.components.checks.validation import load_settings, load_stack_file
from kueue_cohorts.components.model.admission import stack_guardrails
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.policy.rules.book.admission import Request, judge, kube_object
from kueue_cohorts.policy.rules.vocabulary.selectors import matches
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
                                                       "ValidatingAdmissionPolicyBinding"] * 12
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
    else:  # the field itself, and (with `fix`) any promise the edit breaks elsewhere (a service no longer fits)
        assert {(d.kind, d.name, d.path) for d in diffs if not d.fix} == {("ClusterQueue", name, path)}


def _num(text):
    from kueue_cohorts.components.settings.quantity import parse

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
    assert len([d for d in diffs if not d.fix]) == 4
    # and the rule book on the live queue: no node has the resource added by hand (promise 1)
    assert any(d.fix and "example.com/fpga" in d.fix for d in diffs)


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
        ("LocalQueue", "c12-training-lq", "missing on the cluster"),
        ("WorkloadPriorityClass", "*", "the cluster does not serve kueue.x-k8s.io/v1beta2 WorkloadPriorityClass: "
         "the promises cannot be checked")]
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
    assert matches(selector, labels) is selected


def test_a_check_added_to_the_list_runs_and_repeats_are_dropped():
    s = _settings("dev")

    def always(ctx: Context):
        return [Difference("ClusterQueue", "c12-training-cq", "", "spec.x", 1, 2, "custom"),
                Difference("ClusterQueue", "c12-training-cq", "", "spec.x", 1, 2, "again")]

    diffs = verify(s, FakeCluster(served(expected_objects(s))), checks=CHECKS + (always,))
    assert [d.rule for d in diffs] == ["custom"]


# --- issue 26 item 8: the promises on the live cluster, not only the diff against the stack -------------------------

GPU = "nvidia.com/gpualloc"
KUEUE_V = "kueue.x-k8s.io/v1beta2"


def _add(objects, obj):
    meta = obj["metadata"]
    objects[(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])] = obj


def _hand_made_queue(name, cohort, gpus):
    return {"apiVersion": KUEUE_V, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": cohort, "namespaceSelector": {},
                     "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                         {"name": "c12-default", "resources": [{"name": GPU, "nominalQuota": str(gpus)}]}]}]}}


def _node(name, labels, **allocatable):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": allocatable}}


def _sandbox_node():
    return _node("gpu-0", {"kueue-cohorts/pool": "gpu"}, cpu="8", memory="32Gi", **{
        GPU: "1", "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"})


def test_the_stack_as_served_with_its_nodes_keeps_every_promise():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    assert verify(s, FakeCluster(objects)) == []


@settings(max_examples=25, deadline=None)
@given(gpus=st.integers(1, 8), via_child_cohort=st.booleans(), name=st.sampled_from(["sneaky-cq", "extra"]))
def test_a_hand_made_queue_in_the_guarded_tree_is_named_with_the_promise_it_breaks(gpus, via_child_cohort, name):
    """Issue 26 item 8: a ClusterQueue made by hand with its own GPU nominalQuota in the inference cohort (or in a
    Cohort made by hand under it) is named, and the rule book on the live objects names the GPUs that no node has."""
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    cohort = "c12-shared"
    if via_child_cohort:
        _add(objects, {"apiVersion": KUEUE_V, "kind": "Cohort", "metadata": {"name": "hand-made-child"},
                       "spec": {"parentName": "c12-shared"}})
        cohort = "hand-made-child"
    _add(objects, _hand_made_queue(name, cohort, gpus))
    diffs = verify(s, FakeCluster(objects))
    named = {(d.kind, d.name) for d in diffs}
    assert ("ClusterQueue", name) in named
    if via_child_cohort:
        assert ("Cohort", "hand-made-child") in named
    membership = next(d for d in diffs if d.name == name and d.path == "spec.cohortName")
    assert membership.rule.startswith("cohort-membership: ") and "not declared by the stack" in membership.rule
    assert membership.fix and membership.live == cohort
    rules = {d.rule.split(":")[0] for d in diffs}
    assert "cohort-nominal-within-capacity" in rules  # 1 GPU on the node, 1 + gpus in the tree
    assert all(str(d) for d in diffs)


def test_a_queue_in_another_cohort_is_not_the_stacks_business():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    _add(objects, _hand_made_queue("other-team-cq", "other-team", 0))
    assert verify(s, FakeCluster(objects)) == []


@pytest.mark.parametrize("value,named", [(1_000_000, True), (1000, True), (999, False), (-5, False)])
def test_a_hand_made_priority_class_at_or_above_inference_is_named(value, named):
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    _add(objects, {"apiVersion": KUEUE_V, "kind": "WorkloadPriorityClass", "metadata": {"name": "vip"},
                   "value": value})
    diffs = verify(s, FakeCluster(objects))
    assert bool(diffs) == named
    if named:
        [diff] = diffs
        assert (diff.kind, diff.name, diff.path, diff.live) == ("WorkloadPriorityClass", "vip", "value", value)
        assert diff.rule.startswith("priority-ceiling: ") and "below 1000" in diff.fix


def _neighbour_stack(prefix, value):
    """The dev stack renamed `<prefix>-*` (cohort, queues, classes at `value` for inference, flavor, namespaces):
    another kueue-cohorts stack on the same cluster; its Kueue objects as its `up` applies them (marked)."""
    raw = raw_from_stack_file(STACKS / "Pulumi.dev.yaml")
    it = raw["inferenceTraining"]
    it["cohort"] = f"{prefix}-shared"
    for side in ("inference", "training"):
        it[side].update(clusterQueue=f"{prefix}-{side}-cq", localQueue=f"{prefix}-{side}-lq",
                        namespaces=[f"{prefix}-{side}"])
        it[side]["priorityClass"]["name"] = f"{prefix}-{side}-prio"
    it["inference"]["priorityClass"]["value"] = value
    raw["resourceFlavor"] = {"name": f"{prefix}-flavor"}
    raw.pop("trainingRuntime", None)
    it["training"].pop("checkpoint", None)
    return [m for m in expected_objects(load_settings(raw))
            if m["kind"] in ("ClusterQueue", "WorkloadPriorityClass", "ResourceFlavor")]


@pytest.mark.parametrize("value", [500, 1000, 1_000_000])
@pytest.mark.parametrize("prefix", ["b", "team-two"])
def test_a_neighbour_stacks_priority_classes_are_not_intruders(value, prefix):
    """Issue 39 item 2: two stacks on one cluster flagged each other's inference classes with a wrong fix ("set its
    value below, or declare it in the stack"); a class carrying the project's mark is a neighbour's. The same class
    without the mark is still named (a hand-made one)."""
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    neighbour = _neighbour_stack(prefix, value)
    assert all(m["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kueue-cohorts" for m in neighbour)
    for manifest in neighbour:
        _add(objects, manifest)
    assert verify(s, FakeCluster(objects)) == []
    for manifest in neighbour:
        if manifest["kind"] == "WorkloadPriorityClass":
            del manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    named = {(d.kind, d.name) for d in verify(s, FakeCluster(objects))}
    assert (("WorkloadPriorityClass", f"{prefix}-inference-prio") in named) == (value >= 1000)


@pytest.mark.parametrize("gpus,labels,broken", [
    ("1", {"kueue-cohorts/pool": "gpu"}, False),
    ("0", {"kueue-cohorts/pool": "gpu"}, True),    # the node has no GPU left to give
    ("4", {"kueue-cohorts/pool": "cpu"}, False),   # the flavor has no nodeLabels: every node is its capacity
])
def test_capacity_comes_from_the_live_nodes(gpus, labels, broken):
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _node("n", labels, cpu="8", memory="32Gi", **{
        GPU: gpus, "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}))
    diffs = verify(s, FakeCluster(objects))
    assert bool(diffs) == broken
    assert {d.rule.split(":")[0] for d in diffs} <= {"cohort-nominal-within-capacity", "pods-fit-nodes"}
    assert not broken or any(d.rule.startswith("cohort-nominal-within-capacity") for d in diffs)


def test_a_flavor_whose_node_labels_select_no_live_node_has_no_capacity():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    objects[(KUEUE_V, "ResourceFlavor", None, "c12-default")]["spec"] = {"nodeLabels": {"pool": "gone"}}
    diffs = verify(s, FakeCluster(objects))
    assert any(d.rule.startswith("cohort-nominal-within-capacity") for d in diffs)


def _rail(objects, kind, suffix):
    return next(o for (a, k, _, n), o in objects.items() if k == kind and n.endswith(suffix))


@pytest.mark.parametrize("weaken,path,words", [
    (lambda b, p: b["spec"].update(validationActions=["Warn", "Audit"]), "spec.validationActions", "weakened"),
    (lambda b, p: b["spec"].update(matchResources={"namespaceSelector": {"matchLabels": {"x": "y"}}}),
     "spec.matchResources.namespaceSelector", "narrowed"),
    (lambda b, p: p["spec"].update(failurePolicy="Ignore"), "spec.failurePolicy", "weakened"),
    (lambda b, p: p["spec"]["matchConstraints"]["resourceRules"].pop(),  # namespaces/finalize no longer judged
     "spec.matchConstraints.resourceRules", "narrowed"),
    (lambda b, p: p["spec"]["matchConstraints"]["resourceRules"][0].update(operations=["CREATE"]),
     "spec.matchConstraints.resourceRules", "narrowed"),
    (lambda b, p: p["spec"]["matchConstraints"].update(excludeResourceRules=[{"resources": ["namespaces"]}]),
     "spec.matchConstraints.excludeResourceRules", "narrowed"),
    (lambda b, p: p["spec"]["matchConditions"].append({"name": "x", "expression": "false"}),
     "spec.matchConditions", "changed"),
    (lambda b, p: p["spec"]["validations"][0].update(expression="true"), "spec.validations", "changed"),
])
def test_a_weakened_or_narrowed_guardrail_is_named(weaken, path, words):
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    policy = _rail(objects, "ValidatingAdmissionPolicy", "tenant-label")
    binding = _rail(objects, "ValidatingAdmissionPolicyBinding", "tenant-label")
    weaken(binding, policy)
    diffs = verify(s, FakeCluster(objects))
    assert (diffs[0].name, diffs[0].path) == ("kueue-cohorts.c12-shared.tenant-label", path)
    assert f"the guardrail is {words}" in diffs[0].rule
    assert {d.name for d in diffs} == {"kueue-cohorts.c12-shared.tenant-label"}  # objects_match may add the field


def test_a_deleted_guardrail_is_named():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    del objects[("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", None,
                 "kueue-cohorts.c12-shared.cohort-membership")]
    del objects[("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", None,
                 "kueue-cohorts.c12-shared.priority-ceiling")]
    diffs = verify(s, FakeCluster(objects))
    rules = {(d.kind, d.name): d.rule for d in diffs}
    assert rules[("ValidatingAdmissionPolicy", "kueue-cohorts.c12-shared.cohort-membership")].startswith(
        "the guardrail is missing")
    assert rules[("ValidatingAdmissionPolicy", "kueue-cohorts.c12-shared.priority-ceiling")] == \
        "the policy is not bound, so it validates nothing"


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _workload(evicted_ago, reserved=True, evicted=True, owner="job-uid"):
    conditions = [{"type": "QuotaReserved", "status": "True" if reserved else "False",
                   "lastTransitionTime": "2026-12-01T10:00:00Z"}]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted",
                           "lastTransitionTime": (NOW - evicted_ago).isoformat().replace("+00:00", "Z")})
    return {"apiVersion": KUEUE_V, "kind": "Workload",
            "metadata": {"name": "job-train-1", "namespace": "c12-training",
                         "ownerReferences": [{"kind": "Job", "name": "train", "uid": owner}]},
            "status": {"conditions": conditions, "admission": {"clusterQueue": "c12-training-cq"}}}


def _pod(owner_uid, phase="Running"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "namespace": "c12-training", "ownerReferences": [{"uid": owner_uid}]}, "status": {"phase": phase}}


@pytest.mark.parametrize("ago,reserved,evicted,pods,leaked", [
    (timedelta(minutes=10), True, True, [], True),
    (timedelta(minutes=10), True, True, [_pod("job-uid")], False),
    (timedelta(minutes=10), True, True, [_pod("rs-uid")], False),          # through a ReplicaSet it owns
    (timedelta(minutes=10), True, True, [_pod("job-uid", "Failed")], True),
    (timedelta(minutes=1), True, True, [], False),                         # within the grace period
    (timedelta(minutes=10), False, True, [], False),                       # quota released
    (timedelta(minutes=10), True, False, [], False),                       # not evicted
])
def test_a_workload_holding_quota_while_evicted_with_no_pods_is_leaked_quota(ago, reserved, evicted, pods, leaked):
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    _add(objects, _workload(ago, reserved, evicted))
    _add(objects, {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "rs", "namespace": "c12-training", "uid": "rs-uid", "ownerReferences": [{"uid": "job-uid"}]}})
    for pod in pods:
        _add(objects, pod)
    ctx_diffs = verify(s, FakeCluster(objects), now=NOW)
    assert [(d.kind, d.name) for d in ctx_diffs] == ([("Workload", "job-train-1")] if leaked else [])
    if leaked:
        assert "leaked quota" in ctx_diffs[0].rule and ctx_diffs[0].live["clusterQueue"] == "c12-training-cq"


def test_kueues_live_manager_configuration_is_judged_by_the_rule_book():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    live = copy.deepcopy(next(r.manifest for r in assemble(s).judged() if r.kind == "ConfigMap"
                              and r.name == "kueue-manager-config"))
    _add(objects, copy.deepcopy(live))
    assert verify(s, FakeCluster(objects)) == []
    config = yaml.safe_load(live["data"]["controller_manager_config.yaml"])
    config["manageJobsWithoutQueueName"] = True
    config.pop("managedJobsNamespaceSelector", None)
    config.pop("waitForPodsReady", None)
    live["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)
    _add(objects, live)
    diffs = verify(s, FakeCluster(objects))
    assert diffs and {d.rule.split(":")[0] for d in diffs} == {"kueue-manager-config"}
    assert all((d.kind, d.name) == ("ConfigMap", "kueue-manager-config") for d in diffs)


def _nodes_of(settings):
    """The nodes each node pool stands for: `count` nodes with its labels and capacity as allocatable."""
    return [_node(f"{pool.name}-{i}", dict(pool.labels or {}), **dict(pool.capacity))
            for pool in settings.node_pools for i in range(pool.count)]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "mixed"])
def test_every_stack_as_served_on_its_node_pools_keeps_every_promise(stack):
    """No false finding: the stack's own objects as the API server returns them (defaults, status, server
    metadata), on the nodes its nodePools declare, keep every promise."""
    s = _settings(stack)
    objects = served(expected_objects(s))
    for node in _nodes_of(s):
        _add(objects, node)
    assert verify(s, FakeCluster(objects)) == []


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["ClusterQueue", "Cohort", "WorkloadPriorityClass"]),
       cohort=st.sampled_from([None, "c12-shared", "other", ""]), value=st.integers(-10, 2_000_000),
       name=st.sampled_from(["hand-made", "c12-shared"]))
def test_verify_names_on_the_cluster_what_the_guardrails_refuse_to_an_intruder(kind, cohort, value, name):
    """One judgement in two places: an object the stack does not declare is named by verify iff the stack's
    guardrails (the Python side of each ValidatingAdmissionPolicy) refuse creating it to anyone else."""
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    if kind == "WorkloadPriorityClass":
        obj = {"apiVersion": KUEUE_V, "kind": kind, "metadata": {"name": name}, "value": value}
    else:
        key = "cohortName" if kind == "ClusterQueue" else "parentName"
        obj = {"apiVersion": KUEUE_V, "kind": kind, "metadata": {"name": name},
               "spec": {key: cohort} if cohort is not None else {}}
    refused = judge(stack_guardrails(s), Request(kube_object(obj), None, "alice", ("system:authenticated",)))
    _add(objects, copy.deepcopy(obj))
    named = [d for d in verify(s, FakeCluster(objects)) if d.name == name and d.kind == kind
             and d.rule.split(":")[0] in ("cohort-membership", "priority-ceiling")]
    assert bool(named) == bool(refused), (refused, named)
    if named:
        assert {d.rule.split(":")[0] for d in named} == {rail.policy for rail, _ in refused}


def test_a_second_binding_that_warns_beside_the_denying_one_weakens_nothing():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    extra = copy.deepcopy(_rail(objects, "ValidatingAdmissionPolicyBinding", "tenant-label"))
    extra["metadata"]["name"] = "audit-copy"
    extra["spec"].update(validationActions=["Warn", "Audit"], matchResources={"objectSelector": {
        "matchLabels": {"team": "x"}}})
    _add(objects, extra)
    assert verify(s, FakeCluster(objects)) == []
    del objects[("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", None,
                 "kueue-cohorts.c12-shared.tenant-label")]
    diffs = verify(s, FakeCluster(objects))
    assert {(d.name, d.path) for d in diffs} >= {("audit-copy", "spec.validationActions"),
                                                 ("audit-copy", "spec.matchResources.objectSelector")}


# --- issue 37: what the cluster shows of placement and reclaim time ---------------------------------------------------

TRAINER_V = "trainer.kubeflow.org/v1alpha1"


def _trainjob(name, patch_grace=None):
    spec = {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                           "name": "c12-checkpoint-runtime"}}
    if patch_grace is not None:
        spec["runtimePatches"] = [{"manager": "someone", "trainingRuntimeSpec": {"template": {"spec": {
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
                "terminationGracePeriodSeconds": patch_grace}}}}}]}}}}]
    return {"apiVersion": TRAINER_V, "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "c12-training",
                         "labels": {"kueue.x-k8s.io/queue-name": "c12-training-lq",
                                    "kueue.x-k8s.io/priority-class": "c12-training-prio"}}, "spec": spec}


@pytest.mark.parametrize("grace,named", [(None, False), (60, False), (61, True), (86400, True)])
def test_a_live_trainjob_whose_patch_holds_the_node_past_the_reclaim_budget_is_named(grace, named):
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    _add(objects, _trainjob("finetune", grace))
    diffs = verify(s, FakeCluster(objects))
    assert bool(diffs) == named, [str(d) for d in diffs]
    if named:
        [diff] = diffs
        assert (diff.kind, diff.name, diff.live) == ("TrainJob", "finetune", grace)
        assert diff.path.endswith("template.spec.terminationGracePeriodSeconds")
        assert diff.rule.startswith("reclaim-within-budget: ") and f"up to {grace} s" in diff.rule
        assert diff.fix.startswith("patch terminationGracePeriodSeconds to at most 60 (or drop the patch)")


def test_a_live_runtime_edited_to_a_long_grace_period_is_named():
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _sandbox_node())
    runtime = objects[(TRAINER_V, "TrainingRuntime", "c12-training", "c12-checkpoint-runtime")]
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = 3600
    [diff] = verify(s, FakeCluster(objects))  # the field differs from the stack: named once, by the first check
    assert (diff.kind, diff.live) == ("TrainingRuntime", 3600)
    assert diff.path.endswith("template.spec.terminationGracePeriodSeconds")


def test_flavors_whose_live_nodes_overlap_are_named_for_the_worst_placement():
    """The mixed stack, its a100 flavor edited on the cluster to select every node: its pods may fill the H100 node."""
    s = _settings("mixed")
    objects = served(expected_objects(s))
    for name, product in (("h100-0", "NVIDIA-H100-80GB-HBM3"), ("a100-0", "NVIDIA-A100-SXM4-40GB")):
        _add(objects, _node(name, {"nvidia.com/gpu.product": product}, cpu="8", memory="32Gi",
                            **{"nvidia.com/gpu": "2"}))
    assert verify(s, FakeCluster(objects)) == []
    objects[(KUEUE_V, "ResourceFlavor", None, "a100")]["spec"]["nodeLabels"] = {}
    found = [d for d in verify(s, FakeCluster(objects)) if d.rule.startswith("cohort-nominal-within-capacity")]
    assert found and "also selects node pool 'h100-0' of flavor 'h100'" in found[0].rule
    assert found[0].fix.startswith("give ResourceFlavor 'a100' nodeLabels that select none of the nodes of flavor "
                                   "'h100' (flavors must select disjoint nodes)")


def test_a_live_node_smaller_than_a_runtime_pod_is_named():
    """The dev runtime's trainer pod asks for 1 cpu and the GPU slice: on a live GPU node of 500m cpu beside a node
    with cpu and no GPU, the sums hold and no node has both, so it is admitted and never scheduled."""
    s = _settings("dev")
    objects = served(expected_objects(s))
    _add(objects, _node("gpu-0", {"kueue-cohorts/pool": "gpu"}, cpu="500m", memory="32Gi", **{
        GPU: "1", "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}))
    _add(objects, _node("gpu-1", {"kueue-cohorts/pool": "gpu"}, cpu="8", memory="32Gi"))
    rules = [d for d in verify(s, FakeCluster(objects)) if d.rule.startswith("pods-fit-nodes")]
    assert rules and rules[0].kind == "TrainingRuntime", [str(d) for d in rules]
