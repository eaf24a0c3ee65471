"""The report and the dashboard against a real Prometheus (the pinned build, toolchain/versions.toml): a known hour of
Kueue's and the trainer's series is backfilled with `promtool tsdb create-blocks-from openmetrics`, Prometheus serves
it, and `cohorts.report.collect` must find exactly the hours, the preemption, the wait and the lost steps written
in; every query of the stack's dashboard must return data from it."""
from __future__ import annotations

import math
import socket
import subprocess
import time
from typing import Iterator

import pytest
import requests

from kueue_cohorts import toolchain
from kueue_cohorts.cohorts import report
from kueue_cohorts.components.model import dashboard
from kueue_cohorts.components.settings import parse_settings
from tests.helpers import stack_raw

STEP = 15
HOUR = 3600
GPU = "nvidia.com/gpualloc"
INF, TRN = "c12-inference-cq", "c12-training-cq"
QUEUE = {"cohort": "c12-shared", "flavor": "c12-default", "replica_role": "standalone"}


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _between(t: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= t < b for a, b in spans)


def openmetrics(t0: int) -> str:
    """One hour from t0, a sample every STEP seconds: inference owns 1 GPU slice and uses it in [1800, 2400);
    training (nominal 0) borrows it in [600, 1800) and [2400, 3000), is preempted once (InCohortReclamation) at
    1800; one inference admission waited 3 s; the trainer reports 2 steps lost. Every resource of the stack is
    written (cpu and memory with nominal and nothing reserved) so every dashboard panel has data."""
    ticks = range(0, HOUR + 1, STEP)
    families: dict[str, tuple[str, list[str]]] = {}

    def add(name: str, kind: str, labels: str, value_at) -> None:
        sample = f"{name}_total" if kind == "counter" else name  # OpenMetrics: a counter's sample ends in _total
        families.setdefault(name, (kind, []))[1].extend(f"{sample}{labels} {value_at(t)} {t0 + t}" for t in ticks)

    training = [(600, 1800), (2400, 3000)]
    for resource in ("cpu", "memory", GPU, "nvidia.com/gpucores", "nvidia.com/gpumem"):
        for cq, nominal in ((INF, 1), (TRN, 0)):
            labels = _labels(cluster_queue=cq, resource=resource, **QUEUE)
            gpu = resource == GPU
            add("kueue_cluster_queue_nominal_quota", "gauge", labels, lambda t, n=nominal: n)
            spans = training if cq == TRN else [(1800, 2400)]
            add("kueue_cluster_queue_resource_reservation", "gauge", labels,
                lambda t, s=spans, g=gpu: int(g and _between(t, s)))
            add("kueue_cluster_queue_resource_usage", "gauge", labels,
                lambda t, s=spans, g=gpu: int(g and _between(t, s)))
    for cq in (INF, TRN):
        for status in ("active", "inadmissible"):
            add("kueue_pending_workloads", "gauge", _labels(cluster_queue=cq, status=status, replica_role="standalone"),
                lambda t: 0)
    add("kueue_evicted_workloads", "counter",  # Kueue v0.19.2: underlying_cause is "" for a preemption
        _labels(cluster_queue=TRN, reason="Preempted", underlying_cause="", priority_class="p",
                replica_role="standalone"), lambda t: int(t >= 1800))
    add("kueue_preempted_workloads", "counter",
        _labels(preempting_cluster_queue=INF, reason="InCohortReclamation", replica_role="standalone"),
        lambda t: int(t >= 1800))
    wait = _labels(cluster_queue=INF, priority_class="p", replica_role="standalone")[:-1]
    histogram = families.setdefault("kueue_admission_wait_time_seconds", ("histogram", []))[1]
    for t in ticks:  # one observation of 3 s at 1800: in the buckets from le 5 up
        seen = int(t >= 1800)
        histogram += [f'kueue_admission_wait_time_seconds_bucket{wait},le="{le}"}} {seen if up else 0} {t0 + t}'
                      for le, up in (("1.0", False), ("2.5", False), ("5.0", True), ("10.0", True), ("+Inf", True))]
        histogram += [f"kueue_admission_wait_time_seconds_sum{wait}}} {3 * seen} {t0 + t}",
                      f"kueue_admission_wait_time_seconds_count{wait}}} {seen} {t0 + t}"]
    pod = _labels(namespace="c12-training", pod="finetune-node-0-0")
    add("kueue_cohorts_trainer_steps_lost_at_last_preemption", "gauge", pod, lambda t: 2 if t >= 2400 else 0)
    add("kueue_cohorts_trainer_checkpoint_age_seconds", "gauge", pod, lambda t: t % 500)
    lines = []
    for name, (kind, samples) in families.items():
        lines += [f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines + ["# EOF", ""])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory) -> Iterator[tuple[str, int]]:
    """(URL, t0) of a real Prometheus serving the backfilled hour starting at t0 (two hours ago, on a minute)."""
    bins = toolchain.ensure(["prometheus", "promtool"])
    root = tmp_path_factory.mktemp("prometheus")
    t0 = (int(time.time()) - 2 * HOUR) // 60 * 60
    (root / "data.om").write_text(openmetrics(t0))
    made = subprocess.run([str(bins["promtool"]), "tsdb", "create-blocks-from", "openmetrics", str(root / "data.om"),
                           str(root / "tsdb")], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    (root / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\n")
    port = _free_port()
    server = subprocess.Popen([str(bins["prometheus"]), f"--config.file={root / 'prometheus.yml'}",
                               f"--storage.tsdb.path={root / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
                               "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=open(root / "log", "w"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, (root / "log").read_text()
            time.sleep(0.2)
        yield url, t0
    finally:
        server.terminate()
        server.wait(30)


def test_the_report_finds_what_was_written(backfilled):
    url, t0 = backfilled
    settings = parse_settings(stack_raw("dev"))
    got = report.collect(settings, "dev", report.Prometheus(url), t0, t0 + HOUR)
    assert got.step == 15  # the Prometheus's scrape_interval
    hours = {(h.cluster_queue, h.resource): h for h in got.hours}
    training, inference = hours[(TRN, GPU)], hours[(INF, GPU)]
    assert (training.owned, training.used, training.borrowed, training.lent) == (0, 0.5, 0.5, 0)
    assert (inference.owned, inference.borrowed) == (1, 0)
    assert inference.used == pytest.approx(600 / HOUR, abs=1e-6)  # hours are rounded to 6 decimals
    assert inference.lent == pytest.approx(0.5)  # inference lent exactly what training borrowed
    queues = {q.cluster_queue: q for q in got.queues}
    assert (queues[TRN].preempted, queues[TRN].preempting, queues[TRN].steps_lost) == (1, {}, 2)
    assert queues[INF].admissions == 1 and queues[INF].admission_wait_p50 == pytest.approx(3.75)
    assert (queues[INF].preempted, queues[INF].preempting) == (0, {"InCohortReclamation": 1})
    assert set(hours) == {(cq, r) for cq in (INF, TRN) for r in ("nvidia.com/gpualloc", "nvidia.com/gpucores",
                                                                "nvidia.com/gpumem")}


def test_every_dashboard_query_returns_data(backfilled):
    url, t0 = backfilled
    settings = parse_settings(stack_raw("dev"))
    end = t0 + HOUR
    for query in dashboard.queries(settings):
        expr = query.expr.replace("$__rate_interval", "1m").replace("$__range", "1h")
        if query.instant:
            body = requests.get(f"{url}/api/v1/query", params={"query": expr, "time": end}, timeout=10).json()
            values = [float(r["value"][1]) for r in body["data"]["result"]]
        else:
            body = requests.get(f"{url}/api/v1/query_range", params={"query": expr, "start": t0, "end": end,
                                                                    "step": 60}, timeout=10).json()
            values = [float(v) for r in body["data"]["result"] for _, v in r["values"]]
        assert body["status"] == "success", (expr, body)
        assert any(not math.isnan(v) for v in values), f"no data for {query.panel!r}: {expr}"


def test_the_training_hours_panel_agrees_with_the_report(backfilled):
    url, t0 = backfilled
    settings = parse_settings(stack_raw("dev"))
    (stat,) = [q for q in dashboard.queries(settings) if "accelerator-hours" in q.panel]
    expr = stat.expr.replace("$__range", "1h")
    body = requests.get(f"{url}/api/v1/query", params={"query": expr, "time": t0 + HOUR - 1}, timeout=10).json()
    held = {r["metric"]["resource"]: float(r["value"][1]) for r in body["data"]["result"]}
    assert held[GPU] == pytest.approx(0.5, abs=1 / 60)  # one-minute subquery steps
