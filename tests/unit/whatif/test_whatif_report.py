"""The what-if report: per-queue numbers of a hand-computed simulation, the comparison's alerts, the Markdown and
the chart."""
import pytest

from kueue_cohorts.cohorts.target import load_stack
from kueue_cohorts.whatif.chart import chart_html
from kueue_cohorts.whatif.compare import section, what_if
from kueue_cohorts.whatif.report import Stats, compare, markdown, report
from kueue_cohorts.whatif.scheduler import simulate
from kueue_cohorts.whatif.trace import Trace
from tests.helpers import STACKS
from tests.unit.whatif.kueue_objects import guide_cohort, trace, workload


def _guide_run(inference_gpus=4):
    return simulate(guide_cohort(inference_gpus=inference_gpus), trace(
        workload("train", 0, "training", gpus=1, pods=4, duration=3600, checkpoint_interval_seconds=60,
                 termination_seconds=30, step_seconds=5),
        workload("serve", 100, "inference", gpus=2, duration=1000),
        horizon=10_000))


def test_stats_are_nearest_rank():
    assert Stats.of([]) == Stats()
    assert Stats.of([5, 1, 3, 2, 4]) == Stats(count=5, p50=3, p95=5, max=5)


def test_the_numbers_of_the_guides_cohort():
    rows = {r.key: r for r in report(_guide_run()).rows}
    inference, training = rows["inference-cq"], rows["training-cq"]
    assert inference.admission_wait == Stats(1, 0, 0, 0)
    assert inference.start_delay == Stats(1, 30, 30, 30)  # the trainer's 30 s of termination
    assert inference.gpu_hours == pytest.approx(2 * 1030 / 3600)  # held from admission (100) to finish (1130)
    assert inference.borrowed_gpu_hours == 0 and inference.preempted == 0
    assert training.preempted == 1 and training.lost_hours == pytest.approx(40 / 3600) and training.lost_steps == 8
    # training held 4 GPUs 0-100 and 1130-4670 (3600 - 60 saved), all borrowed (nominalQuota 0)
    assert training.gpu_hours == pytest.approx(4 * (100 + 3540) / 3600)
    assert training.borrowed_gpu_hours == pytest.approx(training.gpu_hours)
    assert training.never_admitted == 0


def test_a_smaller_inference_quota_is_called_out_first():
    base, head = report(_guide_run(4)), report(_guide_run(1))  # 2 GPUs of inference never fit 1
    comparison = compare(base, head)
    assert comparison.alerts[0] == (  # the queues that stop admitting first, then inference that waits
        "every workload of `inference-cq` stops being admitted: 1 admitted on the base, none of its 1 on the head "
        "(GPU-hours 0.6 → 0.0)")
    assert comparison.alerts[2] == "inference on inference-cq: 1 workload(s) never admitted (base: 0)"
    text = markdown(comparison, "What-if")
    assert text.index("[!CAUTION]") < text.index("| queue |")
    assert "| `inference-cq` (inference) | 1 | 0 s / 0 s / 0 s → none |" in text
    assert "No inference waits longer" in markdown(compare(base, base), "What-if")


def test_what_if_on_a_stack_and_its_chart():
    settings = load_stack(STACKS / "Pulumi.staging.yaml")
    demand = Trace.build([workload("serve", 0, "inference").model_copy(
        update={"namespace": "serving", "local_queue": "inference", "priority_class": "serving-inference",
                "duration_seconds": 60.0})], 120)
    result = what_if(demand, settings, settings)
    assert result.base is not None and not result.comparison.alerts
    text = section(result, "t.jsonl", "origin/main", "chart.html")
    assert text.startswith("### What-if: `t.jsonl` (1 workloads, 0.00139 days) replayed on the base and the head "
                           "quotas against `origin/main`")
    assert "`chart.html`" in text
    page = chart_html(result.head, "nvidia.com/gpu", result.base, "staging")
    assert page.startswith("<!DOCTYPE html>") and 'id="whatif-chart"' in page
    assert page == chart_html(result.head, "nvidia.com/gpu", result.base, "staging")  # deterministic text
    assert "<script src=" not in page  # self-contained: plotly.js embedded, nothing fetched
