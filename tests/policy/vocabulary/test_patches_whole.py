"""vocabulary/patches.py: what the vocabulary-patches mutation run found no test pinning down: a kind named just
"Patch", a patch of an empty name, the object a patch produces (its kind, apiVersion and resource name, the base's
place in the stack), the first of two objects of one key keeping its place."""
from __future__ import annotations

from kueue_cohorts.policy.rules.vocabulary.patches import as_target, is_patch, patch_problem, resolve_patches
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, get
from tests.policy.fixtures import kube
from tests.policy.vocabulary.test_patches import CQ_PATCH_TOKEN, patch_object

CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
      "spec": {"cohortName": "c", "namespaceSelector": {}}}


def test_a_kind_named_just_patch_is_no_patch():
    """Kills `or` -> `and` in is_patch (1): a custom resource of kind "Patch" is an ordinary object."""
    obj = patch_object("kubernetes:example.com/v1:Patch", {"apiVersion": "example.com/v1", "kind": "Other",
                                                           "metadata": {"name": "p"}})
    assert is_patch(obj) is False


def test_a_patch_of_an_empty_name_patches_an_unknown_object():
    """Kills `value == "XXXX"` (patch_problem 40): an empty metadata.name names no object."""
    obj = patch_object(CQ_PATCH_TOKEN, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                        "metadata": {"name": ""}, "spec": {"cohortName": "x"}})
    assert patch_problem(obj) == ("metadata.name", "", "is missing, so the object it patches is unknown")


def test_the_object_a_patch_produces():
    """Kills as_target's kind and apiVersion keys (18-23) and its resource name (31): the result is an object of the
    target kind, written with the patch's apiVersion, named as the patch's Pulumi resource."""
    patch = patch_object(CQ_PATCH_TOKEN, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                          "metadata": {"name": "cq"}, "spec": {"cohortName": "d"}}, name="cq-patch")
    made = as_target(patch, kube("cq", CQ))
    assert (made.kind, made.resource_name, get(made.props, "kind"), get(made.props, "apiVersion")) == (
        "ClusterQueue", "cq-patch", "ClusterQueue", "kueue.x-k8s.io/v1beta2")
    assert get(made.props, "spec", "cohortName") == "d" and get(made.props, "spec", "namespaceSelector") == {}


def test_a_patch_replaces_its_object_in_place_and_the_first_of_one_key_keeps_its_place():
    """Kills `or` in `key not in position` (_resolve 21) and `position[key] = None` (36): the stack's order is kept,
    the patched object stays where its base was, and a second object of the same key does not move the first."""
    other = dict(CQ, metadata={"name": "other"})
    patch = patch_object(CQ_PATCH_TOKEN, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                          "metadata": {"name": "cq"}, "spec": {"cohortName": "d"}}, name="cq-patch")
    objects = [kube("cq", CQ), kube("other", other), kube("cq-again", CQ), patch]
    resolved = resolve_patches(objects).objects
    assert [(o.resource_name, get(o.props, "spec", "cohortName")) for o in resolved] == [
        ("cq-patch", "d"), ("other", "c"), ("cq-again", "c")]


def test_two_patches_of_an_object_the_stack_does_not_make_merge_in_order():
    """Kills `position[key] = None` (_resolve 36): the second patch of an object outside the stack merges over the
    first one's result (patches apply after the stack's own objects, in stack order)."""
    first = patch_object(CQ_PATCH_TOKEN, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                          "metadata": {"name": "live"}, "spec": {"cohortName": "a"}}, name="p1")
    second = patch_object(CQ_PATCH_TOKEN, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                           "metadata": {"name": "live"}, "spec": {"stopPolicy": "Hold"}}, name="p2")
    resolved = resolve_patches([first, kube("other", dict(CQ, metadata={"name": "other"})), second]).objects
    assert [(o.resource_name, get(o.props, "spec", "cohortName"), get(o.props, "spec", "stopPolicy"))
            for o in resolved] == [("other", "c", MISSING), ("p2", "a", "Hold")]
