"""Every stack in stacks/, as our real __main__.py registers it (under Pulumi mocks, render mode), passes every
policy with its policy/config/<stack>.json; and that file's capacity is the stack's nodePools capacity.

The real-CLI counterpart is tests/policy/pack/test_policy_cli.py. Under mocks a Helm Chart's children are not produced,
so the Kueue manager Configuration is judged here through the Chart's values (the CLI test sees the ConfigMap too).
"""
from __future__ import annotations

import copy
import json

import pytest

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from tests.helpers import STACKS, run_main, stack_raw
from tests.policy.harness import REPO, evaluate, pack_config

STACK_NAMES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
#: Advisory findings a committed stack is known to have: prod's llama-70b peaks at maxReplicas 4 x 300Gi of memory
#: against a nominalQuota of 900Gi, so its 4th replica stays pending (a warning, by design).
KNOWN_ADVISORY = {"prod": {"inference-peak-fits-nominal"}}


def _config(raw: dict) -> dict[str, str]:
    raw = dict(raw)
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/policy-unit"}
    return {f"kueue-cohorts:{key}": json.dumps(value) for key, value in raw.items()}


def test_there_are_stacks_and_each_has_a_policy_config():
    assert STACK_NAMES
    for name in STACK_NAMES:
        assert (REPO / "kueue_cohorts" / "policy" / "config" / f"{name}.json").is_file(), name


@pytest.mark.parametrize("name", STACK_NAMES)
def test_capacity_config_equals_node_pools(name):
    settings = load_stack_file(STACKS / f"Pulumi.{name}.yaml")
    config = pack_config(REPO / "kueue_cohorts" / "policy" / "config" / f"{name}.json")
    pools = config["cohort-nominal-within-capacity"]["nodePools"]
    parsed, problems = parse_node_pools(pools, labels_default={})
    assert problems == [] and parsed
    resources = {resource for pool in parsed for resource in pool.capacity}
    assert {r: sum(pool.total(r) for pool in parsed) for r in resources} == settings.capacity()
    assert [p["labels"] for p in pools] == [dict(p.labels) for p in settings.node_pools]


@pytest.mark.parametrize("name", STACK_NAMES)
def test_stack_passes_every_policy(name):
    mocks = run_main(_config(stack_raw(name)))
    resources = [(r.typ, r.urn, r.name, r.inputs) for r in mocks.registered]
    assert any(t == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue" for t, *_ in resources)
    assert set(evaluate(resources, pack_config(REPO / "kueue_cohorts" / "policy" / "config" / f"{name}.json"))) == \
        KNOWN_ADVISORY.get(name, set())


def test_the_harness_does_catch_a_broken_stack():
    """components/settings/ already refuses such a config, so break the registered inputs instead: what a
    hand-written resource next to our components could look like."""
    mocks = run_main(_config(stack_raw("dev")))
    resources = [(r.typ, r.urn, r.name, copy.deepcopy(r.inputs)) for r in mocks.registered]
    [cq] = [
        p for t, _, _, p in resources if t.endswith(":ClusterQueue") and p["metadata"]["name"] == "c12-inference-cq"
    ]
    cq["spec"]["preemption"]["reclaimWithinCohort"] = "LowerPriority"
    found = evaluate(resources, pack_config(REPO / "kueue_cohorts" / "policy" / "config" / "dev.json"))
    assert list(found) == ["inference-reclaim-any"]


@pytest.mark.parametrize("name", STACK_NAMES)
def test_stack_passes_without_a_config_file_from_its_own_node_pools(name, monkeypatch):
    """`pulumi preview --policy-pack kueue_cohorts/policy` with no --policy-pack-config: the analyzer gets the stack
    config in
    PULUMI_CONFIG and derives the capacity from kueue-cohorts:nodePools."""
    raw = stack_raw(name)
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()}))
    mocks = run_main(_config(raw))
    assert set(evaluate([(r.typ, r.urn, r.name, r.inputs) for r in mocks.registered], pack_config())) == \
        KNOWN_ADVISORY.get(name, set())
