"""The fuzzer's pure parts (benchmarks/fuzz.py): the generator stays inside the settings schema and reaches both
verdicts, every kind of stack the issue names; inference's ask is its whole nominalQuota in its declared pod shapes."""
from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts.benchmarks.fuzz import (
    GPU,
    PLACEHOLDER,
    Batch,
    Outcome,
    draw_batch,
    inference_pods,
    renamed,
    stack_configs,
    training_pod,
    verdict,
)
from kueue_cohorts.components.settings import quantity


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(stack_configs(prefix=PLACEHOLDER), st.integers(0, 999))
def test_every_generated_stack_has_a_valid_shape_and_its_own_names(raw, n):
    raw = renamed(raw, f"fz{n}")
    assert PLACEHOLDER not in str(raw)
    result = verdict(raw)
    assert result.settings is not None, [str(p) for p in result.problems]  # the rules judge it, not the schema
    names = [p["name"] for p in raw["nodePools"]] + [raw["inferenceTraining"]["cohort"]]
    assert all(name.startswith(f"fz{n}") for name in names)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(stack_configs(prefix=PLACEHOLDER))
def test_inference_asks_its_whole_nominal_quota_in_its_declared_shapes(raw):
    result = verdict(renamed(raw, "fz1"))
    if result.settings is None or result.problems:
        return
    s = result.settings
    it = s.inference_training
    nominal = sum((quantity.parse(f.nominal_quota[GPU]) for f in it.inference.flavors), Decimal(0)) \
        if it.inference.flavors else quantity.parse(it.inference.nominal_quota[GPU])
    pods = inference_pods(s)
    asked = sum((quantity.parse(p[GPU]) for p in pods), Decimal(0))
    assert asked <= nominal
    shapes = [dict(svc.requests) for svc in it.inference.services]
    if shapes:
        assert all(p in shapes for p in pods)
    else:
        assert asked == nominal and all(p[GPU] == "1" for p in pods)
    shape, per_job, grace = training_pod(s)
    assert per_job >= 1 and grace >= 60 and GPU in shape


def test_a_seeded_draw_is_the_same_every_time_and_reaches_both_verdicts():
    first = draw_batch(37, 3, 2)
    again = draw_batch(37, 3, 2)
    assert [(n, raw) for n, raw, _ in first[1]] == [(n, raw) for n, raw, _ in again[1]]
    verdicts = [not v.problems for _, _, v in first[1]]
    assert sorted(verdicts) == [False, False, True, True, True]


def test_the_batch_summary_counts_false_accepts_over_the_accepted_stacks_run():
    batch = Batch(7, drawn=10, accepted=3, refused=7, outcomes=[
        Outcome("a", True, held=True), Outcome("b", True, held=False), Outcome("c", False, held=True),
        Outcome("d", False, held=False)])
    assert [o.name for o in batch.false_accepts] == ["b"]
    assert [o.name for o in batch.false_refusal_candidates] == ["c"]
    summary = batch.summary()
    assert (summary["seed"], summary["accepted_run"], summary["false_accepts"], summary["false_accept_rate"]) == \
        (7, 2, 1, 0.5)
