"""A timeline a reviewer reads (issue 41, item 2): per workload whose fate changes between base and head, when it
was admitted, each preemption (by whom, why, work lost in seconds and steps, never rounded to nothing) or why it was
never admitted; the headline names first a queue that loses most of its GPU-hours or stops admitting at all."""
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.cohorts.cli import main as cohorts_main
from kueue_cohorts.whatif.kueue import setup_from_objects
from kueue_cohorts.whatif.report import Fate, compare, fate_changes, markdown, report, timeline_markdown
from kueue_cohorts.whatif.scheduler import simulate
from tests.unit.whatif.kueue_objects import (
    cluster_queue,
    flavor,
    guide_cohort,
    local_queue,
    priority,
    trace,
    workload,
)


def test_a_reclaimed_trainer_and_an_oversized_one_read_as_a_timeline():
    demand = trace(workload("train", 0, "training", gpus=4, duration=1000, checkpoint_interval_seconds=60,
                            step_seconds=5),
                   workload("serve", 100, "inference", gpus=2, duration=100), horizon=5000)
    base, head = simulate(guide_cohort(4), demand), simulate(guide_cohort(2), demand)
    [change] = fate_changes(base, head)
    assert change.workload == "train" and change.queue == "training/training"
    assert change.base.text(0, 5) == ("admitted at once; preempted at 100 s by `serve` (InCohortReclamation), lost "
                                      "40 s of work (8 steps)")
    assert change.head.text(0, 5) == (
        "never admitted: larger than its ClusterQueue can ever hold (nominalQuota plus what it may borrow), 1 pod(s) "
        "(insufficient quota for nvidia.com/gpu in flavor gpu (exceeds the maximum capacity))")
    lines = timeline_markdown([change], head)
    assert lines[1] == "Workloads whose fate changes (1):"
    assert lines[-1].startswith("| `train` | `training/training` | 0 s | admitted at once; preempted at 100 s")


@given(st.floats(0.01, 100_000))
def test_lost_work_is_never_shown_as_nothing(lost):
    text = Fate(0.0, ((10.0, "p", "InClusterQueue", lost),)).text(0, None)
    shown = text.split("lost ")[1].split(" of work")[0]
    assert shown not in ("0", "0 s", "0.0", "0.0 h") and shown.split()[0].replace(".", "").strip("0")


def test_a_workload_behind_a_strict_fifo_head_that_does_not_fit_is_blocked_by_it():
    setup = setup_from_objects([
        flavor("gpu"), cluster_queue("a-cq", None, [("gpu", {"nvidia.com/gpu": (4, None)})], strategy="StrictFIFO"),
        local_queue("a", "a-lq", "a-cq"), priority("research", 100)])
    demand = trace(workload("w1", 0, "a", gpus=1, duration=1000), workload("w2", 10, "a", gpus=4, duration=10),
                   workload("w3", 20, "a", gpus=1, duration=10), horizon=500)
    result = simulate(setup, demand)
    assert result.refusals["w2"] == ("needs preemption, and nothing it may preempt makes room (insufficient unused "
                                     "quota for nvidia.com/gpu in flavor gpu)")  # w1 has its priority
    assert result.refusals["w3"] == ("blocked behind the head of its StrictFIFO queue, `w2` (priority 100), which "
                                     "does not fit")
    assert "w1" not in result.refusals


@pytest.mark.parametrize("selector, why", [
    ({"gpu": "v100"}, "no flavor fits its pods (nodeSelector, tolerations)"),
    ({"gpu": "h100"}, None),
])
def test_a_workload_no_flavor_fits_says_so(selector, why):
    setup = setup_from_objects([
        flavor("h100", labels={"gpu": "h100"}), flavor("a100", labels={"gpu": "a100"}),
        cluster_queue("a-cq", None, [("h100", {"nvidia.com/gpu": (2, None)}), ("a100", {"nvidia.com/gpu": (2, None)})]),
        local_queue("a", "a-lq", "a-cq"), priority("research", 100)])
    result = simulate(setup, trace(workload("w", 0, "a", duration=10, node_selector=selector), horizon=100))
    if why is None:
        assert "w" not in result.refusals
    else:
        assert result.refusals["w"].startswith(why)


@pytest.mark.parametrize("base_gpus, head_gpus, first", [
    (4, 1, "every workload of `inference-cq` stops being admitted"),
    (4, 4, None),
])
def test_the_headline_names_a_queue_that_stops_admitting_before_anything_else(base_gpus, head_gpus, first):
    demand = trace(*[workload(f"s{i}", i * 100, "inference", gpus=2, duration=50) for i in range(5)], horizon=1000)
    comparison = compare(report(simulate(guide_cohort(base_gpus), demand)),
                         report(simulate(guide_cohort(head_gpus), demand)))
    text = markdown(comparison, "What-if")
    if first is None:
        assert not comparison.alerts and "No inference waits longer" in text
    else:
        assert comparison.alerts[0].startswith(first) and text.index(first) < text.index("| queue |")


def test_the_headline_names_a_queue_that_loses_most_of_its_gpu_hours():
    demand = trace(workload("big", 0, "training", gpus=4, duration=3600),
                   workload("small", 0, "training", gpus=1, duration=3600), horizon=7200)
    comparison = compare(report(simulate(guide_cohort(4), demand)), report(simulate(guide_cohort(2), demand)))
    assert comparison.alerts[0] == ("`training-cq` loses most of its GPU-hours: 5.0 → 1.0 (-80%), 1 workload(s) "
                                    "never admitted (base: 0)")


def test_the_json_output_carries_the_timeline_and_every_refusal(tmp_path):
    line = {"submitSeconds": 0, "namespace": "c12-inference", "localQueue": "c12-inference-lq", "kind": "inference",
            "requests": {"cpu": 1000}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"name": "huge", **line}) + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert cohorts_main(["whatif", "--stack", "dev", "--trace", str(path), "-o", "json"], out=out, err=err) == 0
    doc = json.loads(out.getvalue())
    assert doc["timeline"] == []  # no base: nothing to compare
    assert doc["refusals"]["huge"].startswith("larger than its ClusterQueue can ever hold")
