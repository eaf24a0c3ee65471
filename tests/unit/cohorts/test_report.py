"""`python -m kueue_cohorts.cohorts report` (cohorts/report.py, issue 31 item 4): the arithmetic on samples, the
outputs, and the
one line with the fix when no Prometheus answers. The figures against a real Prometheus are in
tests/unit/cohorts/test_report_prometheus.py and in the sandbox e2e (tests/e2e/test_27_observability.py)."""
from __future__ import annotations

import csv
import io
import json
import math
import socket

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.cohorts import cli, report
from kueue_cohorts.components.settings import parse_settings
from tests.helpers import stack_raw


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@st.composite
def _counter(draw) -> tuple[list[int], int]:
    """A counter's samples built from the increments that make them, and the sum of those increments (the oracle:
    no difference of samples is taken). A restart starts from 0 and rises by less than the value it lost, so the
    drop shows in the samples (a restart that climbs past the old value cannot be told from a rise, in PromQL
    either)."""
    values, total = [draw(st.integers(0, 50))], 0
    for _ in range(draw(st.integers(0, 29))):
        if values[-1] > 0 and draw(st.booleans()):
            increment = draw(st.integers(0, values[-1] - 1))
            values.append(increment)
        else:
            increment = draw(st.integers(0, 50))
            values.append(values[-1] + increment)
        total += increment
    return values, total


@given(_counter())
def test_a_counter_counts_its_rises_and_restarts_from_zero_after_a_reset(counter):
    values, expected = counter
    samples = [(float(i), float(v)) for i, v in enumerate(values)]
    assert report.counter_increase(samples, start=0.0, step=1.0) == expected
    # a series first seen two steps after Kueue's manager was first scraped appeared there: its first value counts
    late = [(t + 2.0, v) for t, v in samples]
    assert report.counter_increase(late, start=0.0, step=1.0, scraped_from=0.0) == expected + values[0]


@given(_counter(), st.floats(0.0, 100.0))
def test_a_counter_that_was_there_when_prometheus_started_scraping_counts_only_its_rises(counter, started):
    """Prometheus started scraping after the window's start (or the exporter was unreachable until then): the
    counter's first value holds increments from before, which the window has no data on."""
    values, expected = counter
    samples = [(started + i, float(v)) for i, v in enumerate(values)]
    assert report.counter_increase(samples, start=0.0, step=1.0, scraped_from=started) == expected
    assert report.counter_increase(samples, start=0.0, step=1.0) == expected  # unknown: as PromQL's increase()


def test_histogram_quantile_interpolates_inside_the_bucket_as_promql_does():
    buckets = {1.0: 0.0, 2.0: 0.0, 4.0: 2.0, 8.0: 4.0, math.inf: 4.0}
    assert report.histogram_quantile(0.5, buckets) == 4.0       # rank 2: the top of (2, 4]
    assert report.histogram_quantile(0.75, buckets) == 6.0      # rank 3: half-way through (4, 8]
    assert report.histogram_quantile(0.5, {1.0: 0.0, math.inf: 0.0}) is None
    assert report.histogram_quantile(0.99, {1.0: 1.0, math.inf: 5.0}) == 1.0  # in +Inf: the largest finite bound


@pytest.mark.parametrize("text,seconds", [("7d", 604800), ("36h", 129600), ("90m", 5400), ("45s", 45), ("2w", 1209600)])
def test_since(text, seconds):
    assert report.parse_since(text) == seconds


@pytest.mark.parametrize("text", ["7", "0d", "1.5h", "7 days", "-1d", ""])
def test_a_bad_since_names_the_fix(text):
    with pytest.raises(ValueError, match="such as 7d or 36h"):
        report.parse_since(text)


def _report() -> report.Report:
    hours = [report.ResourceHours("c12-shared", "c12-training-cq", "training", "c12-default", "nvidia.com/gpualloc",
                                  owned=0.0, used=0.5, borrowed=0.5, lent=0.0),
             report.ResourceHours("c12-shared", "c12-inference-cq", "inference", "c12-default",
                                  "nvidia.com/gpualloc", owned=1.0, used=0.25, borrowed=0.0, lent=0.5)]
    queues = [report.QueueFacts("c12-shared", "c12-training-cq", "training", 1, {}, 2),
              report.QueueFacts("c12-shared", "c12-inference-cq", "inference", 0, {"InCohortReclamation": 1}, 1,
                                12.0, 15.5)]
    return report.Report("dev", "http://127.0.0.1:9", 0.0, 3600.0, 5.0, hours, queues,
                         {"c12-training-cq nvidia.com/gpualloc": [(0.0, 1.0), (1800.0, 0.0)]})


def test_the_outputs_carry_the_same_figures():
    r = _report()
    text = report.table(r)
    assert "c12-training-cq" in text and "1 InCohortReclamation" in text and "15.5" in text
    data = json.loads(report.RENDERERS["json"](r))
    assert data["kind"] == "kueue-cohorts/report/v1" and data["start"] == "1970-01-01T00:00:00Z"
    assert data["hours"][0]["borrowed"] == 0.5 and data["queues"][1]["admission_wait_p95"] == 15.5
    rows = list(csv.DictReader(io.StringIO(report.as_csv(r))))
    assert rows[0]["borrowed_hours"] == "0.5" and rows[0]["preempted"] == "1" and rows[0]["preempting"] == ""
    assert rows[1]["lent_hours"] == "0.5" and rows[1]["admission_wait_p50_seconds"] == "12.0"
    assert rows[1]["preempting"] == "InCohortReclamation=1"


def test_html_is_one_self_contained_file():
    page = report.html(_report())
    assert page.startswith("<!DOCTYPE html>")
    assert "<script src=" not in page  # plotly.js is embedded, nothing is fetched
    assert "Plotly.newPlot" in page and "c12-training-cq" in page


def test_an_unreachable_prometheus_is_one_line_with_the_fix():
    port = _free_port()  # nothing listens there
    out, errors = io.StringIO(), io.StringIO()
    code = cli.main(["report", "--stack", "dev", "--prometheus", f"http://127.0.0.1:{port}"], out, errors)
    err = errors.getvalue()
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"no Prometheus answers at http://127.0.0.1:{port}" in err and "--prometheus URL" in err


def test_no_prometheus_known_is_a_usage_error_naming_the_three_ways(monkeypatch, tmp_path):
    monkeypatch.delenv(cli.PROMETHEUS_ENV, raising=False)
    monkeypatch.setenv("KUEUE_COHORTS_SANDBOX_DIR", str(tmp_path))  # a sandbox that never ran
    errors = io.StringIO()
    assert cli.main(["report", "--stack", "dev"], io.StringIO(), errors) == 2
    err = errors.getvalue()
    assert "--prometheus URL" in err and cli.PROMETHEUS_ENV in err and "--with-prometheus" in err


def test_monitoring_writes_the_alerts_the_dashboard_and_the_trainers_podmonitor(tmp_path):
    assert cli.main(["monitoring", "--stack", "dev", "--out", str(tmp_path)], io.StringIO(), io.StringIO()) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dashboard-configmap.yaml", "dashboard.json", "podmonitor.yaml", "prometheusrule.yaml", "rules.yaml"]
    monitor = yaml.safe_load((tmp_path / "podmonitor.yaml").read_text())
    assert (monitor["kind"], monitor["spec"]["namespaceSelector"], monitor["spec"]["podMetricsEndpoints"][0]["port"]) \
        == ("PodMonitor", {"matchNames": ["c12-training"]}, "metrics")
    assert monitor["spec"]["selector"] == {"matchLabels": {"kueue-cohorts/metrics": "trainer"}}
    board = json.loads((tmp_path / "dashboard.json").read_text())
    assert board["uid"] == "kueue-cohorts-dev"
    settings = parse_settings(stack_raw("dev"))
    assert settings.monitoring.namespace in (tmp_path / "dashboard-configmap.yaml").read_text()


@pytest.mark.parametrize(("resource", "expected"), [
    ("nvidia.com/gpu", "GPU-hours"), ("nvidia.com/gpualloc", "GPU-hours"), ("amd.com/gpu", "GPU-hours"),
    ("nvidia.com/gpumem", "MiB-hours"), ("nvidia.com/gpucores", "core%-hours"), ("cpu", "CPU-hours"),
    ("memory", "byte-hours"), ("hugepages-2Mi", "byte-hours"), ("example.com/fpga", "count-hours")])
def test_each_row_says_its_unit_and_no_header_calls_every_row_gpu_hours(resource, expected):
    """Issue 39 item 5: the table's header said "a GPU resource: GPU-hours" over HAMi's gpumem rows (MiB-hours) and
    gpucores rows (percent of a GPU x hours). Each row now carries its unit, in every output."""
    r = report.Report("dev", "http://127.0.0.1:9", 0.0, 3600.0, 5.0,
                      [report.ResourceHours("c", "q", "training", "f", resource, owned=2048.0)], [], {})
    text = report.table(r)
    assert "GPU-hours" not in text.splitlines()[2]
    head, row = text.splitlines()[3:5]
    assert head.split()[5] == "UNIT" and row.split()[4:7] == [resource, expected, "2048.000"]
    assert json.loads(report.RENDERERS["json"](r))["hours"][0]["unit"] == expected
    assert next(csv.DictReader(io.StringIO(report.as_csv(r))))["unit"] == expected
