"""services[].rollout and the predictor's deploymentStrategy: a declared service whose update cannot fit the
inference nominalQuota is rendered with maxSurge 0 / maxUnavailable 1; a team that keeps a surge gets it rendered
and must have the headroom (rule inference-rollout-fits-nominal, reported at the exact config key)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings, validate
from kueue_cohorts.components.model.render import render_stack
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import surge_pods
from tests.helpers import run_main, stack_raw

SLICE = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
         "nvidia.com/gpumem": "2048"}
SAFE = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
KEY = "kueue-cohorts:inferenceTraining.inference.services[0]"


def dev_with(service: dict, nominal_scale: int = 1) -> dict:
    raw = stack_raw("dev")
    inference = raw["inferenceTraining"]["inference"]
    inference["services"] = [{"name": "tiny-llm", "modelFormat": "huggingface", "storageUri": "pvc://m",
                              "requests": dict(SLICE), **service}]
    if nominal_scale != 1:
        for resource, value in list(inference["nominalQuota"].items()):
            if resource.startswith("nvidia.com/"):
                inference["nominalQuota"][resource] = str(int(value) * nominal_scale)
        raw["nodePools"][0]["count"] = nominal_scale  # capacity for the bigger quota
    return raw


def predictor(raw: dict) -> dict:
    [isvc] = [r.manifest for r in render_stack(load_settings(raw)) if r.kind == "InferenceService"]
    return isvc["spec"]["predictor"]


def test_a_service_that_holds_the_whole_quota_is_rendered_without_surge():
    assert predictor(dev_with({}))["deploymentStrategy"] == SAFE


def test_a_service_with_headroom_for_the_default_surge_keeps_kserves_default():
    assert "deploymentStrategy" not in predictor(dev_with({}, nominal_scale=2))


def test_a_peak_above_quota_is_rendered_for_the_replicas_that_fit():
    # 3 x 300Gi fit 900Gi, the 4th replica pends: an update of the 3 with 25% surge (1 pod) would not fit
    raw = stack_raw("prod")
    assert predictor(raw)["deploymentStrategy"] == SAFE
    result = validate(raw)
    assert result.problems == ()
    assert [(w.key, w.policy) for w in result.warnings] == [
        ("kueue-cohorts:inferenceTraining.inference.services[0].maxReplicas", "inference-peak-fits-nominal")]


def test_staging_llama_at_max_replicas_is_rendered_without_surge():
    assert predictor(stack_raw("staging"))["deploymentStrategy"] == SAFE  # 4 x 1 GPU of 4: no room for a 5th


def test_a_declared_service_with_headroom_keeps_its_surge():
    raw = dev_with({"maxReplicas": 2, "rollout": {"maxSurge": "25%", "maxUnavailable": 0}}, nominal_scale=3)
    assert validate(raw).problems == ()
    assert predictor(raw)["deploymentStrategy"] == {"type": "RollingUpdate",
                                                    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}


def test_the_component_registers_the_same_strategy_as_the_render():
    for scale, expected in ((1, SAFE), (2, None)):
        raw = dev_with({}, nominal_scale=scale)
        raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
        mocks = run_main({f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()})
        [isvc] = [r.inputs for r in mocks.registered
                  if r.typ == "kubernetes:serving.kserve.io/v1beta1:InferenceService"]
        assert isvc["spec"]["predictor"].get("deploymentStrategy") == expected


def test_a_kept_surge_without_headroom_is_refused_at_its_key():
    result = validate(dev_with({"rollout": {"maxSurge": 1, "maxUnavailable": 0}}))
    assert [(p.key, p.value, p.policy) for p in result.problems] == [
        (f"{KEY}.rollout.maxSurge", 1, "inference-rollout-fits-nominal")]
    [problem] = result.problems
    assert problem.rule.startswith("an update of 1 replicas with maxSurge 1 starts 1 surge pod(s) and needs 2 "
                                   "replicas' worth of quota, more than the nominalQuota of ClusterQueue "
                                   "'c12-inference-cq' ('nvidia.com/gpualloc' 2 > 1,")
    assert problem.fix == ("set the rolling update's maxSurge to 0 and maxUnavailable to 1 (one replica is down "
                           "while it is replaced), or reserve headroom: raise the nominalQuota of "
                           "'nvidia.com/gpualloc' to 2, 'nvidia.com/gpucores' to 40, 'nvidia.com/gpumem' to 4096")


def test_min_replicas_above_quota_is_refused_at_min_replicas():
    result = validate(dev_with({"minReplicas": 2, "maxReplicas": 2}))
    assert [(p.key, p.value, p.policy) for p in result.problems] == [
        (f"{KEY}.minReplicas", 2, "inference-rollout-fits-nominal")]


@pytest.mark.parametrize("rollout, key, rule", [
    ({"maxSurge": 0, "maxUnavailable": 0}, "rollout", "maxSurge and maxUnavailable cannot both be 0"),
    ({"maxSurge": "0%", "maxUnavailable": "0%"}, "rollout", "maxSurge and maxUnavailable cannot both be 0"),
    ({"maxSurge": "25"}, "rollout.maxSurge", "must be an integer >= 0 or a percentage"),
    ({"maxSurge": -1}, "rollout.maxSurge", "must be an integer >= 0 or a percentage"),
    ({"maxSurge": True}, "rollout.maxSurge", "must be an integer >= 0 or a percentage"),
    ({"maxSurge": 0, "maxUnavailable": "101%"}, "rollout.maxUnavailable", "maxUnavailable cannot be above 100%"),
    ({"maxSurge": 0, "maxUnavailable": "one"}, "rollout.maxUnavailable", "must be an integer >= 0 or a percentage"),
    ({"surge": 1}, "rollout.surge", "unknown key (a typo?)"),
])
def test_rollout_shape_problems_name_their_key(rollout, key, rule):
    problems = validate(dev_with({"rollout": rollout})).problems
    assert [p.key for p in problems] == [f"{KEY}.{key}"]
    assert problems[0].rule.startswith(rule) or rule in problems[0].rule


@settings(max_examples=60, deadline=None)
@given(low=st.integers(1, 3), extra=st.integers(0, 3), scale=st.integers(1, 6))
def test_what_is_rendered_always_passes_the_rule_book(low, extra, scale):
    # cpu 500m and 1Gi per replica against 4 / 8Gi: the GPU resources (1 x scale replicas) bind
    raw = dev_with({"minReplicas": low, "maxReplicas": low + extra, "requests": {**SLICE, "cpu": "500m"}},
                   nominal_scale=scale)
    result = validate(raw)
    if low > scale:
        assert [p.key for p in result.problems] == [f"{KEY}.minReplicas"]
        return
    assert result.problems == ()
    strategy = predictor(raw).get("deploymentStrategy")
    replicas = min(low + extra, scale)
    if replicas + surge_pods("25%", replicas) <= scale:
        assert strategy is None
    else:
        assert strategy == SAFE
