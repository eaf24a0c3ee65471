"""judgeable-patches (kueue_cohorts/policy/rules/judgeable_patches.py): a patch the
book cannot judge as the object it produces fails closed."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.judgeable_patches import check_patches
from kueue_cohorts.policy.rules.vocabulary.patches import (
    patch_problem,
    resolve_patches,
)
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, stack
from tests.policy.vocabulary.test_patches import CQ_PATCH_TOKEN, issue_item_2_patch, patch_object

POLICY = "judgeable-patches"


UNJUDGEABLE = [
    (lambda p: p.update(kind="LocalQueue"), "kind", "LocalQueue",
     "does not match the patch's type token (which patches a ClusterQueue of kueue.x-k8s.io/v1beta2)"),
    (lambda p: p.update(apiVersion="kueue.x-k8s.io/v1beta1"), "apiVersion", "kueue.x-k8s.io/v1beta1",
     "does not match the patch's type token (which patches a ClusterQueue of kueue.x-k8s.io/v1beta2)"),
    (lambda p: p.update(kind=UNKNOWN), "kind", MISSING, "is unknown at preview"),
    (lambda p: p["metadata"].pop("name"), "metadata.name", MISSING, "is missing, so the object it patches is unknown"),
    (lambda p: p["metadata"].update(name=UNKNOWN), "metadata.name", MISSING, "is unknown at preview"),
    (lambda p: p["metadata"].update(namespace=UNKNOWN), "metadata.namespace", MISSING, "is unknown at preview"),
]


@pytest.mark.parametrize("mutate,field,value,reason", UNJUDGEABLE)
def test_unjudgeable_patches_fail_closed(mutate, field, value, reason):
    props = issue_item_2_patch()
    mutate(props)
    patch = patch_object(CQ_PATCH_TOKEN, props, "bad")
    assert patch_problem(patch) == (field, value, reason)
    resolution = resolve_patches(stack(compliant()) + [patch])
    assert [p.urn for p, *_ in resolution.unjudgeable] == [patch.urn]
    assert all(o.urn != patch.urn for o in resolution.objects)
    [found] = check_patches(stack(compliant()) + [patch], POLICY)
    assert (found.subject.kind, found.field, found.value, found.policy, found.urn) == (
        "ClusterQueuePatch", field, value, POLICY, patch.urn)
    assert found.rule == (f"the pack judges a patch as the object it produces, but this patch's {field} {reason}, so "
                          "that object cannot be determined and the policies fail closed")
    assert found.fix == (f"give the patch a literal {field} that matches its type token (ClusterQueue of "
                         "kueue.x-k8s.io/v1beta2), or create the object itself instead of patching it")


def test_compliant_stack_has_no_unjudgeable_patches():
    objects = stack(compliant()) + [patch_object(CQ_PATCH_TOKEN, issue_item_2_patch())]
    assert check_patches(objects, POLICY) == []
    assert patch_problem(stack(compliant())[1]) is None
