"""kueue_cohorts/policy/rules/vocabulary/patches.py: a `<Kind>Patch` is judged as the
object it produces (RFC 7386 merge, in stack order, unknown values kept with their path), by the stack and the
resource rules alike."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import check_inference_borrowing_limit_zero
from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.policy.rules.kueue_manager_config import check_kueue_manager_config
from kueue_cohorts.policy.rules.protected_namespaces import DEFAULT_PROTECTED_NAMESPACES, check_protected_namespaces
from kueue_cohorts.policy.rules.vocabulary.objects import KubeObject, ObjectRef, from_resource
from kueue_cohorts.policy.rules.vocabulary.patches import (
    _merge,
    as_target,
    effective_objects,
    is_patch,
)
from tests.policy.fixtures import GPU_RESOURCES, UNKNOWN, compliant, stack

CQ_PATCH_TOKEN = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueuePatch"


def patch_object(token: str, props: dict, name: str = "patch", proxied: bool = True) -> KubeObject:
    obj = from_resource(token, unknown_checking_proxy(copy.deepcopy(props)) if proxied else props,
                        f"urn:pulumi:test::kueue-cohorts::{token}::{name}", name)
    assert obj is not None
    return obj


def issue_item_2_patch() -> dict:
    """Issue 13 item 2: a ClusterQueuePatch of c12-inference-cq that lets it borrow and never reclaim."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "c12-inference-cq", "annotations": {"pulumi.com/patchForce": "true"}},
        "spec": {"resourceGroups": [{"coveredResources": list(GPU_RESOURCES), "flavors": [{
                     "name": "c12-default",
                     "resources": [{"name": r, "nominalQuota": "1", "borrowingLimit": "100"}
                                   for r in GPU_RESOURCES]}]}],
                 "preemption": {"reclaimWithinCohort": "Never"}},
    }


def test_is_patch():
    assert is_patch(patch_object(CQ_PATCH_TOKEN, issue_item_2_patch()))
    # A custom resource whose kind really ends in "Patch" is an ordinary object.
    assert not is_patch(patch_object("kubernetes:example.com/v1:NodePatch", {"kind": "NodePatch"}))
    assert not any(is_patch(o) for o in stack(compliant()))


def test_issue_13_item_2_patch_over_the_stacks_queue():
    objects = stack(compliant()) + [patch_object(CQ_PATCH_TOKEN, issue_item_2_patch(), "inference-cq-patch")]
    effective = effective_objects(objects)
    queues = [o for o in effective if o.is_kueue("ClusterQueue") and o.name == "c12-inference-cq"]
    assert len(queues) == 1 and len(effective) == len(objects) - 1
    [cq] = queues
    assert cq.urn.endswith("ClusterQueuePatch::inference-cq-patch")
    assert (cq.kind, cq.group, cq.version) == ("ClusterQueue", "kueue.x-k8s.io", "v1beta2")
    assert cq.labels["kueue-cohorts/role"] == "inference"  # kept from the stack's own object
    assert cq.annotations["pulumi.com/patchForce"] == "true"
    entries = cq.spec["resourceGroups"][0]["flavors"][0]["resources"]
    assert [e["borrowingLimit"] for e in entries] == ["100"] * len(GPU_RESOURCES)
    assert cq.spec["preemption"]["reclaimWithinCohort"] == "Never"
    assert cq.spec["preemption"]["withinClusterQueue"] == "LowerPriority"  # merged, not replaced
    assert cq.spec["cohortName"] == "c12-shared"
    # The existing rules now see the unsafe queue.
    assert len(check_inference_borrowing_limit_zero(cq)) == len(GPU_RESOURCES)
    assert len(check_inference_reclaim_any(cq)) == 1


def test_issue_13_item_2_patch_of_a_queue_outside_the_stack_is_judged_alone():
    props = issue_item_2_patch()
    props["metadata"]["labels"] = {"kueue-cohorts/role": "inference"}
    props["spec"]["cohortName"] = "c12-shared"
    [cq] = effective_objects([patch_object(CQ_PATCH_TOKEN, props)])
    assert cq.kind == "ClusterQueue" and cq.name == "c12-inference-cq"
    assert len(check_inference_borrowing_limit_zero(cq)) == len(GPU_RESOURCES)


def test_null_deletes_and_lists_replace():
    patch = {"kind": "ClusterQueue", "metadata": {"name": "c12-training-cq"},
             "spec": {"preemption": None, "resourceGroups": []}}
    objects = stack(compliant()) + [patch_object(CQ_PATCH_TOKEN, patch)]
    [cq] = [o for o in effective_objects(objects) if o.is_kueue("ClusterQueue") and o.name == "c12-training-cq"]
    assert "preemption" not in cq.spec and list(cq.spec["resourceGroups"]) == []
    [alone] = effective_objects([patch_object(CQ_PATCH_TOKEN, patch)])
    assert "preemption" not in alone.spec


def test_patches_apply_in_stack_order():
    first = {"kind": "ClusterQueue", "metadata": {"name": "c12-training-cq"}, "spec": {"cohortName": "a"}}
    second = {"kind": "ClusterQueue", "metadata": {"name": "c12-training-cq"}, "spec": {"cohortName": "b"}}
    objects = stack(compliant()) + [patch_object(CQ_PATCH_TOKEN, first, "p1"),
                                    patch_object(CQ_PATCH_TOKEN, second, "p2")]
    [cq] = [o for o in effective_objects(objects) if o.is_kueue("ClusterQueue") and o.name == "c12-training-cq"]
    assert cq.spec["cohortName"] == "b" and cq.urn.endswith("::p2")


def test_namespace_patch_labelling_kube_system_counts():
    manifests = compliant()
    ns_patch = patch_object("kubernetes:core/v1:NamespacePatch",
                            {"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": "kube-system",
                                          "labels": {"kueue-cohorts/tenant": "c12-training-cq"}}})
    objects = effective_objects(stack(manifests) + [ns_patch])
    found = check_protected_namespaces(objects, DEFAULT_PROTECTED_NAMESPACES, "protected-namespaces")
    assert {(v.subject.kind, v.subject.name) for v in found} == {("Namespace", "kube-system"),
                                                                  ("ClusterQueue", "c12-training-cq")}


def test_unknown_values_stay_unknown_with_their_path():
    props = issue_item_2_patch()
    props["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = UNKNOWN
    objects = stack(compliant()) + [patch_object(CQ_PATCH_TOKEN, props)]
    [cq] = [o for o in effective_objects(objects) if o.is_kueue("ClusterQueue") and o.name == "c12-inference-cq"]
    with pytest.raises(UnknownValueError) as err:
        cq.spec["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"]
    assert list(err.value.props) == ["spec", "resourceGroups", "0", "flavors", "0", "resources", "2", "borrowingLimit"]
    [found] = [v for v in check_inference_borrowing_limit_zero(cq) if "unknown" in v.message]
    assert "spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit unknown at preview" in found.message


def test_plain_dict_inputs_stay_plain():
    [cq] = effective_objects([patch_object(CQ_PATCH_TOKEN, issue_item_2_patch(), proxied=False)])
    assert isinstance(cq.props, dict) and cq.props["kind"] == "ClusterQueue"
    assert as_target(patch_object(CQ_PATCH_TOKEN, issue_item_2_patch(), proxied=False)).props["kind"] == "ClusterQueue"


def _reference_merge(base, patch):
    """RFC 7386 section 2, as written."""
    if not isinstance(patch, dict):
        return patch
    out = dict(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _reference_merge(out.get(key), value)
    return out


json_values = st.recursive(st.none() | st.integers() | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("abc"), inner,
                                                                                       max_size=3), max_leaves=12)


maps = st.dictionaries(st.sampled_from("abc"), json_values, max_size=3)


@given(maps, maps)
def test_merge_is_rfc7386(base, patch):
    before = copy.deepcopy(base), copy.deepcopy(patch)
    assert _merge(base, patch) == _reference_merge(base, patch)
    assert (base, patch) == before  # inputs never mutated


@given(maps, maps)
def test_merge_is_idempotent(base, patch):
    once = _merge(base, patch)
    assert _merge(once, patch) == once


def test_config_map_patch_of_the_kueue_manager_config_is_judged_as_a_config_map():
    unsafe = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmanageJobsWithoutQueueName: true\n"
              "waitForPodsReady:\n  timeout: 10m\n")
    patch = patch_object("kubernetes:core/v1:ConfigMapPatch",
                         {"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                          "data": {"controller_manager_config.yaml": unsafe}})
    assert check_kueue_manager_config(patch) == []  # as a patch, no rule sees a ConfigMap
    # The stack's own kueue-manager-config ConfigMap (safe) with the patch merged over it.
    [config_map] = [o for o in effective_objects(stack(compliant()) + [patch]) if o.kind == "ConfigMap"]
    assert config_map.kind == "ConfigMap" and config_map.urn == patch.urn
    found = check_kueue_manager_config(config_map)
    assert found and all(v.subject == ObjectRef("ConfigMap", "kueue-system", "kueue-manager-config") for v in found)
    assert any("managedJobsNamespaceSelector" in v.message for v in check_kueue_manager_config(as_target(patch)))
