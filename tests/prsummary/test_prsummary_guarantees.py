"""The Guarantees section: who reclaims from whom, priorities, and quota totals against capacity, per stack file."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.prsummary import guarantees

STACKS = Path(__file__).resolve().parents[2] / "stacks"


def _raw(name: str) -> dict:
    doc = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())
    return {k.split(":", 1)[1]: v for k, v in doc["config"].items() if k.startswith("kueue-cohorts:")}


def test_inference_reclaims_from_any_borrower_and_training_owns_nothing():
    settings = load_settings(_raw("staging"))
    rows = {q.name: q for q in guarantees.queue_guarantees(settings)["serving"]}
    assert rows["serving-inference-cq"] == guarantees.QueueGuarantee(
        "serving-inference-cq", "inference", "serving-inference (1000)", "Any", "any borrower", False)
    assert rows["serving-training-cq"].reclaims_from == "nothing (no nominalQuota)"
    assert rows["serving-training-cq"].borrows and rows["serving-training-cq"].priority == "serving-training (10)"


@pytest.mark.parametrize("name", ["dev", "staging", "prod"])
def test_every_queue_of_every_stack_is_listed_once(name):
    settings = load_settings(_raw(name))
    text = "\n".join(guarantees.section(None, settings))
    for plan_queues in guarantees.queue_guarantees(settings).values():
        for q in plan_queues:
            assert text.count(f"| `{q.name}` |") == 1


def test_totals_compare_before_after_and_capacity():
    before = load_settings(_raw("staging"))
    raw = copy.deepcopy(_raw("staging"))
    raw["sharedPool"]["tenants"][0]["floor"]["cpu"] = "6"
    after = load_settings(raw)
    lines = guarantees.section(before, after)
    assert "| `cpu` | 48 | 50 | 96 | yes |" in lines
    assert "| `memory` | 192Gi | 192Gi | 384Gi | yes |" in lines
    assert guarantees.section(before, None) == []


def test_a_total_beyond_capacity_says_no():
    settings = load_settings(_raw("staging"))
    totals = guarantees.nominal_totals(settings)
    assert totals["nvidia.com/gpu"] == settings.capacity()["nvidia.com/gpu"]
    shrunk = settings.model_copy(update={"node_pools": [settings.node_pools[0].model_copy(update={"count": 1})]})
    assert "| `nvidia.com/gpu` | – | 8 | 4 | **no** |" in guarantees.section(None, shrunk)
