"""Capacity for cohort-nominal-within-capacity: explicit policy config first, else the stack's nodePools."""
from __future__ import annotations

import json

import pytest

from components.pack_config import render as render_pack_config
from components.validation import load_stack_file
from policy.rules.catalog import capacity
from policy.rules.stack_capacity import capacity_from_node_pools, capacity_from_stack_config
from tests.helpers import STACKS, stack_raw
from tests.policy.harness import REPO

STACK_NAMES = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
DEV_POOLS = [{"name": "gpu", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1",
                                                     "nvidia.com/gpucores": "20", "nvidia.com/gpumem": "2048"}}]


def test_pools_are_summed_count_times_capacity():
    pools = [{"name": "a", "count": 2, "capacity": {"cpu": "48", "memory": "192Gi", "nvidia.com/gpu": "4"}},
             {"name": "b", "capacity": {"cpu": "500m", "memory": "512Mi"}}]
    assert capacity_from_node_pools(pools) == {"cpu": "96.5", "memory": "393728Mi", "nvidia.com/gpu": "8"}


@pytest.mark.parametrize("bad", [None, {}, [{"name": "a"}], [{"capacity": {"cpu": "lots"}}],
                                 [{"count": 0, "capacity": {"cpu": "1"}}]])
def test_unusable_pools_derive_nothing(bad):
    assert capacity_from_node_pools(bad) is None


@pytest.mark.parametrize("name", STACK_NAMES)
def test_each_stack_file_and_its_derived_capacity_agree(name):
    derived = capacity_from_node_pools(stack_raw(name)["nodePools"])
    configured = json.loads((REPO / "policy" / "config" / f"{name}.json").read_text())
    assert derived == configured["cohort-nominal-within-capacity"]["capacity"]


@pytest.mark.parametrize("name", STACK_NAMES)
def test_each_committed_pack_config_is_the_one_generated_from_its_stack_file(name):
    """policy/config/<stack>.json is generated (`kueue-cohorts validate --stack NAME --pack-config --write`): the
    pack run by hand and the program's settings check judge with the same facts."""
    generated = render_pack_config(load_stack_file(STACKS / f"Pulumi.{name}.yaml"))
    assert (REPO / "policy" / "config" / f"{name}.json").read_text() == generated, (
        f"policy/config/{name}.json is stale: regenerate it with "
        f"`kueue-cohorts validate --stack {name} --pack-config --write` (our runs generate it from the stack file; "
        "the committed copy is for `pulumi preview --policy-pack policy` run by hand)")
    assert json.loads(generated)["inference-borrowing-limit-zero"]["inferenceClusterQueues"]


def test_explicit_config_wins_over_stack_config():
    env = {"kueue-cohorts:nodePools": json.dumps(DEV_POOLS)}
    assert capacity({"capacity": {"cpu": "1"}}, env) == {"cpu": "1"}
    assert capacity({}, env)["nvidia.com/gpucores"] == "20"
    assert capacity({}, {}) == {}


def test_stack_config_is_read_from_the_engine_environment(monkeypatch):
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"kueue-cohorts:nodePools": json.dumps(DEV_POOLS),
                                                    "kueue-cohorts:cluster": "{\"mode\": \"sandbox\"}"}))
    assert capacity({}) == {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                            "nvidia.com/gpumem": "2048"}
    assert capacity_from_stack_config({"kueue-cohorts:nodePools": "not json"}) is None
