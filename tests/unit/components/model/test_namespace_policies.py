"""Issue 39: `namespacePolicy` was per layout, so adopting one existing namespace (Label) handed every namespace of
the layout over. `namespacePolicies` sets it for one namespace alone: that one is patched (Label) or left (External),
the others still created; a key that names none of the layout's namespaces is refused at its own key."""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings, validate
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.components.settings import NamespacePolicy
from tests.helpers import fixture_raw, stack_raw

POLICIES = [p.value for p in NamespacePolicy]


def _namespaces(raw: dict) -> dict[str, str]:
    """name -> what the stack renders for it: Create (Namespace), Label (NamespacePatch); absent: External."""
    out = {}
    for item in render_stack(load_settings(raw)):
        if item.kind == "Namespace" and item.source and item.source[0] in ("inferenceTraining", "sharedPool"):
            out[item.name] = "Label" if item.patch else "Create"
    return out


@settings(max_examples=40, deadline=None)
@given(default=st.sampled_from(POLICIES), overrides=st.dictionaries(
    st.sampled_from(["c12-inference", "c12-training"]), st.sampled_from(POLICIES), max_size=2))
def test_each_namespace_of_the_dev_stack_follows_its_own_policy(default, overrides):
    raw = copy.deepcopy(stack_raw("dev"))
    raw["inferenceTraining"]["namespacePolicy"] = default
    if overrides:
        raw["inferenceTraining"]["namespacePolicies"] = overrides
    rendered = _namespaces(raw)
    for ns in ("c12-inference", "c12-training"):
        policy = overrides.get(ns, default)
        assert rendered.get(ns, "External") == policy, (ns, rendered)


def test_one_tenant_adopted_in_a_shared_pool_leaves_the_others_created():
    raw = copy.deepcopy(fixture_raw("guide-shared-pool"))
    raw["sharedPool"]["namespacePolicies"] = {"ns-a": "Label"}
    assert _namespaces(raw) == {"ns-a": "Label", "ns-b": "Create"}


@pytest.mark.parametrize("layout, name, names", [
    ("inferenceTraining", "c12-infer", "c12-inference, c12-training"),
    ("inferenceTraining", "default", "c12-inference, c12-training"),
    ("sharedPool", "ns-c", "ns-a, ns-b"),
])
def test_a_policy_for_a_namespace_the_layout_does_not_have_is_refused_at_its_key(layout, name, names):
    raw = copy.deepcopy(stack_raw("dev") if layout == "inferenceTraining" else fixture_raw("guide-shared-pool"))
    raw[layout]["namespacePolicies"] = {name: "Label"}
    problems = [p for p in validate(raw).problems if "namespacePolicies" in p.key]
    assert [(p.key, p.value, p.fix) for p in problems] == [
        (f"kueue-cohorts:{layout}.namespacePolicies.{name}", name, f"use one of {names}, or remove the entry")]
