"""Issue 14 (3): the namespace preflight refuses, before any resource is registered, a namespace this stack did not
create (namespacePolicy Create on an existing namespace without this stack's mark), a Label or External namespace
that does not exist, and External on a namespace this stack created; every problem at once, at its config key.

The cluster read is exercised on the sandbox (tests/e2e/test_23_namespaces_we_do_not_own.py); here the pure decision,
over both layouts, many tenants and every state a live namespace can be in.
"""
from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings, value_at
from kueue_cohorts.components.model.kueue import OWNER_ANNOTATION, namespace_owner
from kueue_cohorts.components.settings import NamespacePolicy
from kueue_cohorts.components.settings.errors import Problem
from kueue_cohorts.components.stack.preflight import (
    DeclaredNamespace,
    LiveNamespace,
    NamespacePreflightError,
    PreflightError,
    declared_namespaces,
    live_namespaces,
    namespace_problems,
    require_kueue_api,
    undeclared_owned,
)
from tests.helpers import fixture_raw, stack_raw

OWNER = namespace_owner("kueue-cohorts", "dev")
OTHER = namespace_owner("kueue-cohorts", "staging")
GPU_ONLY = {"resources": {"excludeResourcePrefixes": ["cpu", "memory"]}}
#: How a namespace can be in the cluster: absent, created by this stack, by another stack, by someone else (no mark),
#: or by an earlier kueue-cohorts version (managed-by label, no mark).
STATES = ("absent", "ours", "other", "unmarked", "legacy")


def _live(name: str, state: str) -> LiveNamespace | None:
    return {"absent": None, "ours": LiveNamespace(name, OWNER), "other": LiveNamespace(name, OTHER),
            "unmarked": LiveNamespace(name), "legacy": LiveNamespace(name, None, managed_by_us=True)}[state]


#: (policy, state) -> what the preflight says: None (go ahead) or the start of the rule it reports.
TABLE: dict[tuple[NamespacePolicy, str], str | None] = {
    (NamespacePolicy.CREATE, "absent"): None,
    (NamespacePolicy.CREATE, "ours"): None,
    (NamespacePolicy.CREATE, "other"): f"the namespace already exists and stack {OTHER} created it",
    (NamespacePolicy.CREATE, "unmarked"): "the namespace already exists and it has no kueue-cohorts/owner annotation",
    (NamespacePolicy.CREATE, "legacy"): "the namespace already exists and it has no kueue-cohorts/owner annotation",
    (NamespacePolicy.LABEL, "absent"): "namespacePolicy Label labels an existing namespace, and this one does not",
    (NamespacePolicy.LABEL, "ours"): None,  # Create -> Label: the stack hands its namespace over in place
    (NamespacePolicy.LABEL, "other"): None,
    (NamespacePolicy.LABEL, "unmarked"): None,
    (NamespacePolicy.LABEL, "legacy"): None,
    (NamespacePolicy.EXTERNAL, "absent"): "namespacePolicy External leaves the namespace to you, and it does not",
    (NamespacePolicy.EXTERNAL, "ours"): f"this stack created the namespace ({OWNER_ANNOTATION}={OWNER})",
    (NamespacePolicy.EXTERNAL, "other"): None,
    (NamespacePolicy.EXTERNAL, "unmarked"): None,
    (NamespacePolicy.EXTERNAL, "legacy"): None,
}


def test_the_dev_stack_declares_its_namespaces_at_their_keys():
    assert declared_namespaces(load_settings(stack_raw("dev"))) == [
        DeclaredNamespace("c12-inference", "kueue-cohorts:inferenceTraining.inference.namespaces[0]",
                          NamespacePolicy.CREATE, "kueue-cohorts:inferenceTraining.namespacePolicies.c12-inference"),
        DeclaredNamespace("c12-training", "kueue-cohorts:inferenceTraining.training.namespaces[0]",
                          NamespacePolicy.CREATE, "kueue-cohorts:inferenceTraining.namespacePolicies.c12-training"),
    ]


def test_a_tenant_without_namespaces_is_declared_by_its_name():
    declared = declared_namespaces(load_settings(fixture_raw("guide-shared-pool")))
    assert [(d.name, d.key, d.policy_key) for d in declared] == [
        ("ns-a", "kueue-cohorts:sharedPool.tenants[0].name", "kueue-cohorts:sharedPool.namespacePolicies.ns-a"),
        ("ns-b", "kueue-cohorts:sharedPool.tenants[1].name", "kueue-cohorts:sharedPool.namespacePolicies.ns-b")]


def test_the_dev_stack_refused_on_a_cluster_where_its_training_namespace_exists():
    """The issue's example: c12-training made by hand; the one problem names the key, the namespace and the fix."""
    declared = declared_namespaces(load_settings(stack_raw("dev")))
    problems = namespace_problems(declared, {"c12-training": LiveNamespace("c12-training")}, OWNER)
    assert [str(p) for p in problems] == [
        'kueue-cohorts:inferenceTraining.training.namespaces[0] = "c12-training": the namespace already exists and '
        "it has no kueue-cohorts/owner annotation, so this stack did not create it; with namespacePolicy Create the "
        "kubernetes provider would take it over silently, and destroy, or removing it from the config, would then "
        "delete it with everything in it. Fix: set kueue-cohorts:inferenceTraining.namespacePolicies.c12-training to "
        "Label (the "
        "stack only adds its selector label; destroy, or removing the namespace from the config, removes that label "
        "and keeps the namespace) or External (the stack leaves the namespace alone and you manage the label)."]


def test_a_namespace_of_an_earlier_version_gets_the_command_that_marks_it():
    declared = declared_namespaces(load_settings(stack_raw("dev")))
    (problem,) = namespace_problems(declared, {"c12-inference": _live("c12-inference", "legacy")}, OWNER)
    assert problem.fix.endswith("; if an earlier version of this stack did create it (it carries "
                                "app.kubernetes.io/managed-by=kueue-cohorts), mark it instead: kubectl annotate "
                                "namespace c12-inference kueue-cohorts/owner=kueue-cohorts/dev")


def test_one_message_lists_every_problem():
    problems = [Problem("kueue-cohorts:a", "x", "rule one", "fix one"),
                Problem("kueue-cohorts:b", "y", "rule two", "fix two")]
    assert str(NamespacePreflightError(problems)).splitlines() == [
        "namespace preflight: 2 problems; nothing was registered",
        '  - kueue-cohorts:a = "x": rule one. Fix: fix one.',
        '  - kueue-cohorts:b = "y": rule two. Fix: fix two.',
    ]


@st.composite
def stacks(draw):
    """A stack with an asymmetric layout, a shared pool of up to 40 tenants (some with namespaces of their own), a
    namespacePolicy per layout, and a state per namespace in the cluster."""
    tenants = []
    for i in range(draw(st.integers(1, 40))):
        tenant = {"name": f"t{i}", "floor": {"nvidia.com/gpu": "1"}}
        if draw(st.booleans()):
            tenant["namespaces"] = [f"t{i}-ns{j}" for j in range(draw(st.integers(1, 3)))]
        tenants.append(tenant)
    raw = {
        "cluster": {"mode": "render", "renderDir": "x"},
        "nodePools": [{"name": "gpu", "capacity": {"nvidia.com/gpu": str(len(tenants) + 1)}}],
        "kueue": GPU_ONLY,
        "sharedPool": {"cohort": "pool", "namespacePolicy": draw(st.sampled_from(NamespacePolicy)).value,
                       "tenants": tenants},
        "inferenceTraining": {
            "cohort": "it", "namespacePolicy": draw(st.sampled_from(NamespacePolicy)).value,
            "inference": {"clusterQueue": "inf-cq", "localQueue": "inf-lq", "nominalQuota": {"nvidia.com/gpu": "1"},
                          "namespaces": [f"inf-{j}" for j in range(draw(st.integers(1, 3)))],
                          "priorityClass": {"name": "inf-prio", "value": 1000}},
            "training": {"clusterQueue": "trn-cq", "localQueue": "trn-lq",
                         "namespaces": [f"trn-{j}" for j in range(draw(st.integers(1, 3)))],
                         "priorityClass": {"name": "trn-prio", "value": 10}},
        },
    }
    pool = [ns for t in tenants for ns in t.get("namespaces", [t["name"]])]
    it = raw["inferenceTraining"]["inference"]["namespaces"] + raw["inferenceTraining"]["training"]["namespaces"]
    names = pool + it
    states = {name: draw(st.sampled_from(STATES)) for name in names}
    for layout, mine in (("sharedPool", pool), ("inferenceTraining", it)):
        overrides = draw(st.dictionaries(st.sampled_from(mine), st.sampled_from(NamespacePolicy), max_size=3))
        if overrides:  # one namespace adopted or left alone, the others under the layout's policy
            raw[layout]["namespacePolicies"] = {k: v.value for k, v in overrides.items()}
    strays = {f"gone-{i}": draw(st.sampled_from(STATES)) for i in range(draw(st.integers(0, 3)))}
    return raw, states, strays


@settings(max_examples=60, deadline=None)
@given(stacks())
def test_every_namespace_is_judged_by_its_policy_and_state_at_its_own_key(case):
    raw, states, strays = case
    declared = declared_namespaces(load_settings(raw))
    assert sorted(d.name for d in declared) == sorted(states)
    live = {name: ns for name, state in {**states, **strays}.items() if (ns := _live(name, state)) is not None}

    problems = namespace_problems(declared, live, OWNER)
    for d in declared:  # each namespace under its own policy: its namespacePolicies entry, else its layout's
        layout = raw["sharedPool"] if d.key.startswith("kueue-cohorts:sharedPool") else raw["inferenceTraining"]
        assert d.policy.value == layout.get("namespacePolicies", {}).get(d.name, layout["namespacePolicy"])
        assert d.policy_key.endswith(f".namespacePolicies.{d.name}")

    expected = [d for d in declared if TABLE[(d.policy, states[d.name])] is not None]
    assert [p.value for p in problems] == [d.name for d in expected]  # every one, in config order, in one go
    for problem, ns in zip(problems, expected, strict=True):
        assert problem.key == ns.key
        # the key path is where the config writes this namespace
        top, _, rest = ns.key.removeprefix("kueue-cohorts:").partition(".")
        path = [top] + [int(p) if p.isdigit() else p for p in rest.replace("[", ".").replace("]", "").split(".")]
        assert value_at(raw, tuple(path)) == ns.name
        assert problem.rule.startswith(TABLE[(ns.policy, states[ns.name])])
        assert ns.policy_key in problem.fix
        if ns.policy == NamespacePolicy.CREATE:
            assert "to Label (" in problem.fix and "or External (" in problem.fix
        if states[ns.name] == "legacy":
            assert problem.fix.endswith(f"kubectl annotate namespace {ns.name} {OWNER_ANNOTATION}={OWNER}")
    # A stray namespace this stack created and no longer declares is a warning, never a problem.
    assert undeclared_owned(declared, live, OWNER) == sorted(n for n, s in strays.items() if s == "ours")


def test_the_preview_identity_namespace_is_not_adopted_either():
    """previewIdentity with create ServiceAccountAndNamespace (the default for a ServiceAccount) creates its
    namespace: an existing one without this stack's mark is refused at previewIdentity.namespace, with a fix of its
    own; with create ServiceAccount the stack only creates the ServiceAccount in it, and the preflight lets it be."""
    raw = stack_raw("staging")
    raw["previewIdentity"] = {"kind": "ServiceAccount", "name": "preview", "namespace": "team-preview"}
    declared = declared_namespaces(load_settings(raw))
    assert [(d.name, d.key) for d in declared if d.name == "team-preview"] == \
        [("team-preview", "kueue-cohorts:previewIdentity.namespace")]
    for state in STATES:
        problems = namespace_problems(declared, {"team-preview": live} if (live := _live("team-preview", state))
                                      else {}, OWNER)
        if state in ("absent", "ours"):
            assert problems == []
        else:
            [problem] = problems
            assert problem.key == "kueue-cohorts:previewIdentity.namespace"
            assert problem.value == "team-preview"
            assert problem.fix.startswith(
                "set kueue-cohorts:previewIdentity.create to ServiceAccount (the stack creates only the "
                "ServiceAccount, in the existing namespace) or Nothing, or give previewIdentity a namespace of its own")
    raw["previewIdentity"]["create"] = "ServiceAccount"
    assert "team-preview" not in [d.name for d in declared_namespaces(load_settings(raw))]


@pytest.mark.parametrize("read, failed, advice", [
    (lambda kubeconfig: live_namespaces(kubeconfig, None, timeout_seconds=5),
     "Cannot list the Namespaces of the cluster",
     "The stack checks that it adopts no namespace it did not create; give its identity list on namespaces, or use "
     "cluster mode render to work offline."),
    (lambda kubeconfig: require_kueue_api(kubeconfig, None, "0.19.2", timeout_seconds=5),
     "Cannot read the API groups of the cluster",
     "Check the kubeconfig, or use cluster mode render to work offline."),
])
def test_a_cluster_that_cannot_be_read_is_one_preflight_error_naming_the_kubeconfig(tmp_path, read, failed, advice):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],  # nothing listens on port 1
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    with pytest.raises(PreflightError) as caught:
        read(kubeconfig)
    message = str(caught.value)
    assert message.startswith(f"{failed} (kubeconfig {kubeconfig}, context current): ") and message.endswith(
        f". {advice}"), message
