"""settings-checks (`components.checks.settings_rules`): what the settings-checks mutation run left to timeouts.

Five mutants were stopped at their CPU limit in every mutant run (counted killed) and pass the target's test files
when run alone: `check_preemption` replacing, not adding, the problems of a later queue. A stack with every queue's
borrowWithinCohort refused must name each of them (Kueue's ClusterQueue webhook refuses each ClusterQueue whose
borrowWithinCohort.policy is not Never while reclaimWithinCohort is Never)."""
from __future__ import annotations

from typing import Any

from kueue_cohorts.components.checks import settings_rules
from kueue_cohorts.components.settings import parse_settings
from tests.helpers import fixture_raw, stack_raw

RULE = "Kueue rejects borrowWithinCohort.policy other than Never when reclaimWithinCohort is Never"
FIX = "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never"
REFUSED = {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority",
                                                                   "maxPriorityThreshold": 100}}


def _problems(raw: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(p.key, p.value, p.rule, p.fix, p.policy) for p in settings_rules.check_preemption(parse_settings(raw))]


def test_both_queues_of_the_inference_training_layout_are_named():
    raw = stack_raw("dev")
    for side in ("inference", "training"):
        raw["inferenceTraining"][side]["preemption"] = dict(REFUSED)
    assert _problems(raw) == [
        (f"kueue-cohorts:inferenceTraining.{side}.preemption.borrowWithinCohort.policy", "LowerPriority", RULE, FIX, "")
        for side in ("inference", "training")]


def test_the_shared_pool_is_named_after_the_inference_training_queues():
    raw = stack_raw("dev")
    raw["inferenceTraining"]["training"]["preemption"] = dict(REFUSED)
    raw["sharedPool"] = fixture_raw("guide-shared-pool")["sharedPool"]
    raw["sharedPool"]["preemption"] = dict(REFUSED)
    assert _problems(raw) == [
        ("kueue-cohorts:inferenceTraining.training.preemption.borrowWithinCohort.policy", "LowerPriority", RULE, FIX,
         ""),
        ("kueue-cohorts:sharedPool.preemption.borrowWithinCohort.policy", "LowerPriority", RULE, FIX, "")]
