"""Where cohort-nominal-within-capacity gets the nodes: the pack config's nodePools (with their labels), else the
legacy capacity (labels unknown), else the stack's kueue-cohorts:nodePools from the engine."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.pack_config import render as render_pack_config
from kueue_cohorts.policy.rules.book.catalog import node_pools
from kueue_cohorts.policy.rules.vocabulary.node_pools import node_pools_from_stack_config, parse_node_pools
from tests.helpers import STACKS, stack_raw
from tests.policy.harness import REPO

STACK_NAMES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
DEV_POOLS = [{"name": "gpu", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1",
                                                     "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}}]


def test_a_pool_holds_count_times_its_capacity():
    pools, problems = parse_node_pools(
        [{"name": "a", "count": 2, "capacity": {"cpu": "48", "memory": "192Gi", "nvidia.com/gpu": "4"}},
         {"name": "b", "capacity": {"cpu": "500m", "memory": "512Mi"}}], labels_default={})
    assert problems == []
    assert [(p.count, p.total("cpu"), p.total("memory"), p.total("nvidia.com/gpu")) for p in pools] == [
        (2, Decimal(96), Decimal(2 * 192 * 2**30), Decimal(8)), (1, Decimal("0.5"), Decimal(512 * 2**20), Decimal(0))]


@pytest.mark.parametrize("bad", [None, {}, [{"name": "a"}], [{"capacity": {"cpu": "lots"}}],
                                 [{"count": 0, "capacity": {"cpu": "1"}}]])
def test_unusable_pools_are_named_as_problems(bad):
    _, problems = parse_node_pools(bad, labels_default={})
    assert problems


@pytest.mark.parametrize(("bad", "problem"), [
    ({"name": "a"}, "nodePools[0] is not a node pool with a capacity mapping"),
    ({"capacity": {"cpu": "lots"}}, "nodePools[0].capacity['cpu'] is 'lots', not a non-negative Kubernetes quantity"),
    ({"capacity": {"cpu": "-1"}}, "nodePools[0].capacity['cpu'] is '-1', not a non-negative Kubernetes quantity"),
    ({"count": 0, "capacity": {}}, "nodePools[0].count is 0, not a whole number of nodes >= 1"),
    ({"count": True, "capacity": {}}, "nodePools[0].count is True, not a whole number of nodes >= 1"),
    ({"capacity": {}, "labels": ["a"]}, "nodePools[0].labels is ['a'], not a mapping of label key -> string value"),
    ({"capacity": {}, "labels": {"a": 1}}, "nodePools[0].labels is {'a': 1}, not a mapping"),
])
def test_each_unreadable_pool_is_named(bad, problem):
    _, problems = parse_node_pools([bad])
    assert len(problems) == 1 and problems[0].startswith(problem)


def test_labels_absent_in_the_pack_config_are_unknown_and_in_the_stack_config_none():
    [pool], _ = parse_node_pools([{"name": "a", "count": 2.0, "capacity": {"nvidia.com/gpu": "4"}}])
    assert (pool.labels, pool.total("nvidia.com/gpu"), pool.total("cpu")) == (None, Decimal(8), Decimal(0))
    [pool], _ = parse_node_pools([{"name": "a", "capacity": {}}], labels_default={})
    assert pool.labels == {}


@pytest.mark.parametrize("name", STACK_NAMES)
def test_each_committed_pack_config_carries_every_pool_with_its_labels(name):
    pools = stack_raw(name)["nodePools"]
    configured = json.loads((REPO / "kueue_cohorts" / "policy" / "config" / f"{name}.json").read_text())
    written = configured["cohort-nominal-within-capacity"]["nodePools"]
    assert [(p["name"], p["labels"], p["capacity"]) for p in written] == \
        [(p["name"], p.get("labels", {}), p["capacity"]) for p in pools]
    assert "capacity" not in configured["cohort-nominal-within-capacity"]
    assert "flavorCapacity" not in configured["cohort-nominal-within-capacity"]


@pytest.mark.parametrize("name", STACK_NAMES)
def test_each_committed_pack_config_is_the_one_generated_from_its_stack_file(name):
    """policy/config/<stack>.json is generated (`kueue-cohorts validate --stack NAME --pack-config --write`): the
    pack run by hand and the program's settings check judge with the same facts."""
    generated = render_pack_config(load_stack_file(STACKS / f"Pulumi.{name}.yaml"))
    assert (REPO / "kueue_cohorts" / "policy" / "config" / f"{name}.json").read_text() == generated, (
        f"policy/config/{name}.json is stale: regenerate it with "
        f"`kueue-cohorts validate --stack {name} --pack-config --write` (our runs generate it from the stack file; "
        "the committed copy is for `pulumi preview --policy-pack kueue_cohorts/policy` run by hand)")
    assert json.loads(generated)["inference-borrowing-limit-zero"]["inferenceClusterQueues"]


def test_explicit_config_wins_over_stack_config():
    env = {"kueue-cohorts:nodePools": json.dumps(DEV_POOLS)}
    explicit = [{"name": "x", "labels": {}, "capacity": {"cpu": "1"}}]
    assert node_pools({"nodePools": explicit}, env) == explicit
    assert node_pools({"capacity": {"cpu": "1"}}, env) == []  # the legacy total stands for the nodes
    assert node_pools({}, env) == [dict(DEV_POOLS[0], labels={})]
    assert node_pools({}, {}) == []


def test_stack_config_is_read_from_the_engine_environment(monkeypatch):
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"kueue-cohorts:nodePools": json.dumps(DEV_POOLS),
                                                    "kueue-cohorts:cluster": "{\"mode\": \"sandbox\"}"}))
    assert node_pools({}) == [dict(DEV_POOLS[0], labels={})]
    assert node_pools_from_stack_config({"kueue-cohorts:nodePools": "not json"}) is None
