"""``python -m kueue_cohorts.cohorts report``: per tenant and queue, accelerator-hours owned, used, borrowed and lent,
preemptions,
inference admission wait and training steps lost, from the Prometheus HTTP API (issue 31 item 4).

What is read (Kueue v0.19.2 pkg/metrics/metrics.go; the stack's `kueue.metrics` turns the gauges on):

- owned: kueue_cluster_queue_nominal_quota integrated over time (nominalQuota x hours);
- used: kueue_cluster_queue_resource_reservation integrated (the quota the queue's admitted Workloads held);
- borrowed: the reservation above nominalQuota, integrated;
- lent: what the cohort's queues borrowed at each instant, shared among the queues that had idle nominal quota
  (nominal - reserved, at most the lendingLimit) in proportion to it (Kueue keeps no per-lender figure; in the
  asymmetric layout inference is the only lender, so it lent exactly what training borrowed);
- preempted: increments of kueue_evicted_workloads_total{reason="Preempted"} of the queue's own Workloads (the
  victims' side);
- preempting: increments of kueue_preempted_workloads_total per reason of the Workloads the queue's Workloads
  preempted (the preemptors' side: InCohortReclamation is inference taking its nominal quota back);
- admission wait p50 and p95: from the increments of kueue_admission_wait_time_seconds' buckets in the window,
  interpolated within a bucket as PromQL's histogram_quantile does;
- training steps lost: the largest kueue_cohorts_trainer_steps_lost_at_last_preemption each training pod reported
  (trainer/metrics.py), summed.

Every figure is computed here from `query_range` samples at `step` seconds (default: the Prometheus's global
scrape_interval, at least window/10,000): a gauge counts value x step per sample; a counter counts its increments
(a reset counts from 0; a series first seen inside the window, after Prometheus had already scraped Kueue's
manager there, counts from 0). The error of an integral is at most
one step per change of the gauge.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Callable, Optional, Sequence

import plotly.graph_objects as go
import requests
import yaml
from plotly.subplots import make_subplots

from kueue_cohorts.components.model.alerts import label_matcher
from kueue_cohorts.components.model.dashboard import accelerators
from kueue_cohorts.components.model.plans import stack_plans
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.quoting import html_text
from kueue_cohorts.policy.rules.vocabulary.objects import TRAINING_ROLE

HOUR = 3600.0
MAX_POINTS = 10_000
"""Points per series and query: Prometheus refuses a range query of more than 11,000."""
_DURATION = re.compile(r"^(\d+)(s|m|h|d|w)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class PrometheusUnreachable(Exception):
    """No Prometheus answered at the URL: the message is one line with the fix."""


class PrometheusError(Exception):
    """Prometheus answered with an error (a refused query, a server error): the message quotes it."""


def parse_since(text: str) -> int:
    """`--since`: a whole number with unit s, m, h, d or w (7d, 36h, 90m) -> seconds. Raises ValueError."""
    match = _DURATION.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"--since {text!r}: write a whole number and a unit s, m, h, d or w, such as 7d or 36h")
    return int(match.group(1)) * _UNIT[match.group(2)]


Series = tuple[dict[str, str], list[tuple[float, float]]]


class Prometheus:
    """The Prometheus HTTP API (/api/v1, Prometheus docs "HTTP API") at `url`, with `timeout` seconds per request."""

    def __init__(self, url: str, timeout: float = 30.0, session: Optional[requests.Session] = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        try:
            response = self.session.get(f"{self.url}{path}", params=params, timeout=self.timeout)
        except (requests.ConnectionError, requests.Timeout) as err:
            reason = type(err).__name__
            raise PrometheusUnreachable(
                f"no Prometheus answers at {self.url} ({reason}): start one (`kueue-cohorts sandbox up "
                f"--with-prometheus` for the sandbox) or pass its address with --prometheus URL") from None
        try:
            body = response.json()
        except ValueError:
            raise PrometheusError(f"{self.url}{path} answered HTTP {response.status_code} without JSON: is "
                                  "--prometheus the address of a Prometheus?") from None
        if body.get("status") != "success":
            raise PrometheusError(f"{self.url}{path} refused: {body.get('errorType', response.status_code)}: "
                                  f"{body.get('error', '')}")
        return body["data"]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        """`/api/v1/query_range` of `expr` from `start` to `end` (Unix seconds) every `step` seconds: (labels,
        [(time, value)]) per series. Raises PrometheusUnreachable or PrometheusError."""
        data = self._get("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step})
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def scrape_interval(self) -> Optional[float]:
        """The global scrape_interval in seconds from /api/v1/status/config, or None when it cannot be read."""
        try:
            config = yaml.safe_load(self._get("/api/v1/status/config", {})["yaml"]) or {}
            text = str((config.get("global") or {}).get("scrape_interval", ""))
            return float(parse_since(text)) if text else None
        except (PrometheusError, ValueError, KeyError, TypeError, yaml.YAMLError):
            return None


def unit(resource: str) -> str:
    """The unit of one resource's hours: the resource's own quantity unit x hours, as Kueue's quota gauges report it
    (Kueue v0.19.2 pkg/metrics: the quantity as a float, cpu in cores, memory in bytes) and the device plugin
    defines it (HAMi, docs/config.md of Project-HAMi/HAMi: ``nvidia.com/gpumem`` MiB of device memory,
    ``nvidia.com/gpucores`` percent of one GPU's cores; a device count such as ``nvidia.com/gpu``,
    ``nvidia.com/gpualloc`` or ``amd.com/gpu``: GPUs). Returns e.g. ``"GPU-hours"``, ``"MiB-hours"``,
    ``"core%-hours"``, ``"CPU-hours"``, ``"byte-hours"``; any other resource: ``"count-hours"``."""
    name = resource.rsplit("/", 1)[-1].lower()
    if resource == "cpu":
        return "CPU-hours"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return "byte-hours"
    if name.endswith("mem") or name.endswith("memory"):
        return "MiB-hours"
    if name.endswith("cores"):
        return "core%-hours"
    if "gpu" in name:
        return "GPU-hours"
    return "count-hours"


@dataclass
class ResourceHours:
    """Resource-hours of one ClusterQueue, flavor and resource over the window, in ``unit`` (``unit(resource)``:
    GPU-hours for a GPU count, MiB-hours for HAMi's gpumem, ...)."""

    cohort: str
    cluster_queue: str
    role: str
    flavor: str
    resource: str
    owned: float = 0.0
    used: float = 0.0
    borrowed: float = 0.0
    lent: float = 0.0
    unit: str = ""

    def __post_init__(self) -> None:
        self.unit = self.unit or unit(self.resource)


@dataclass
class QueueFacts:
    """Per ClusterQueue: how many of its Workloads were preempted, the preemptions its Workloads made per reason
    (InCohortReclamation, InClusterQueue, InCohortFairSharing, InCohortReclaimWhileBorrowing), admission wait
    percentiles (seconds, None without admissions in the window), steps lost by its training pods (None: no trainer
    metrics)."""

    cohort: str
    cluster_queue: str
    role: str
    preempted: int = 0
    preempting: dict[str, int] = field(default_factory=dict)
    admissions: int = 0
    admission_wait_p50: Optional[float] = None
    admission_wait_p95: Optional[float] = None
    steps_lost: Optional[int] = None


@dataclass
class Report:
    """The report of one stack over [start, end] (Unix seconds), sampled every `step` seconds."""

    stack: str
    prometheus: str
    start: float
    end: float
    step: float
    hours: list[ResourceHours]
    queues: list[QueueFacts]
    reserved: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """Reserved accelerators over time per "cluster_queue resource" (for the charts)."""

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (kind kueue-cohorts/report/v1), times as ISO 8601 UTC."""
        return {"kind": "kueue-cohorts/report/v1", "stack": self.stack, "prometheus": self.prometheus,
                "start": _iso(self.start), "end": _iso(self.end), "stepSeconds": self.step,
                "hours": [asdict(h) for h in self.hours], "queues": [asdict(q) for q in self.queues]}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(labels: dict[str, str], *names: str) -> tuple[str, ...]:
    return tuple(labels.get(n, "") for n in names)


def counter_increase(samples: list[tuple[float, float]], start: float, step: float,
                     scraped_from: Optional[float] = None) -> float:
    """The increments of a counter over `samples` ((unix seconds, value), time-ordered): each rise counts, a fall is a
    reset that counts from 0 (PromQL's increase() does the same, prometheus v3 promql/functions.go extrapolatedRate).

    A Kueue counter series is created at its first increment (client_golang CounterVec.WithLabelValues, as Kueue
    v0.19.2 pkg/metrics/metrics.go uses it), so a series whose first sample lies more than one `step` after the
    exporter was first scraped in the window appeared inside it: its first value counts from 0 too. `scraped_from`:
    the first time in the window the exporter was scraped (`collect` reads it from kueue_cluster_queue_status); None:
    unknown, then the first value never counts (as increase()): a Prometheus that started scraping after `start`
    sees counters that were already there, and their earlier increments are not in the window's data."""
    if not samples:
        return 0.0
    born = scraped_from is not None and samples[0][0] > max(start, scraped_from) + step
    total = samples[0][1] if born else 0.0
    for (_, before), (_, after) in zip(samples, samples[1:], strict=False):
        total += after - before if after >= before else after
    return total


def histogram_quantile(q: float, buckets: dict[float, float]) -> Optional[float]:
    """PromQL's histogram_quantile over cumulative `buckets` (upper bound -> count, +Inf included): linear
    interpolation inside the bucket that holds the q-th observation, the lower bound of the first bucket being 0;
    None without observations; the largest finite bound when it falls into +Inf."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def collect(settings: Settings, stack: str, client: Prometheus, start: float, end: float,
            step: Optional[float] = None) -> Report:
    """Read the stack's queues from Prometheus over [start, end] and compute the report (see the module docstring).

    `step`: sampling in seconds; None: the Prometheus's scrape_interval (15 s if unreadable), at least
    (end - start) / 10,000. Raises PrometheusUnreachable or PrometheusError.
    """
    step = max(step or client.scrape_interval() or 15.0, (end - start) / MAX_POINTS, 1.0)
    plans = stack_plans(settings)
    roles = {cq.name: (plan.cohort, cq.role) for plan in plans for cq in plan.cluster_queues}
    names = label_matcher(list(roles))
    covered = list(dict.fromkeys(r for plan in plans for cq in plan.cluster_queues for g in cq.resource_groups
                                 for r in g.covered_resources))
    accel = accelerators(covered) or covered
    by = "max by (cluster_queue, flavor, resource)"
    sel = f"cluster_queue{names}, resource{label_matcher(accel)}"

    def gauge(metric: str) -> dict[tuple[str, ...], dict[float, float]]:
        out: dict[tuple[str, ...], dict[float, float]] = {}
        for labels, samples in client.query_range(f"{by} ({metric}{{{sel}}})", start, end, step):
            out[_key(labels, "cluster_queue", "flavor", "resource")] = dict(samples)
        return out

    nominal = gauge("kueue_cluster_queue_nominal_quota")
    reserved = gauge("kueue_cluster_queue_resource_reservation")
    lending = gauge("kueue_cluster_queue_lending_limit")
    hours: dict[tuple[str, ...], ResourceHours] = {}
    for key in sorted(set(nominal) | set(reserved)):
        cohort, role = roles.get(key[0], ("", ""))
        hours[key] = ResourceHours(cohort, key[0], role, key[1], key[2])
    # each sample stands for the step that starts at it: the point at `end` lies outside [start, end)
    times = sorted({t for series in (*nominal.values(), *reserved.values()) for t in series if t < end})
    for t in times:
        borrowed_by: dict[tuple[str, str, str], float] = {}
        idle: dict[tuple[str, ...], float] = {}
        for key, row in hours.items():
            n = nominal.get(key, {}).get(t, 0.0)
            r = reserved.get(key, {}).get(t, 0.0)
            row.owned += n * step
            row.used += r * step
            row.borrowed += max(r - n, 0.0) * step
            group = (row.cohort, row.flavor, row.resource)
            borrowed_by[group] = borrowed_by.get(group, 0.0) + max(r - n, 0.0)
            idle[key] = min(max(n - r, 0.0), lending.get(key, {}).get(t, math.inf))
        for key, row in hours.items():
            group = (row.cohort, row.flavor, row.resource)
            pool = sum(v for k, v in idle.items() if (hours[k].cohort, hours[k].flavor, hours[k].resource) == group)
            if pool > 0 and borrowed_by.get(group):
                row.lent += min(borrowed_by[group], pool) * idle[key] / pool * step
    for row in hours.values():
        row.owned, row.used, row.borrowed, row.lent = (round(v / HOUR, 6) for v in
                                                       (row.owned, row.used, row.borrowed, row.lent))

    queues = {name: QueueFacts(cohort, name, role) for name, (cohort, role) in roles.items()}
    # when Prometheus first saw Kueue's manager in the window: a gauge every ClusterQueue has from the manager's start
    status = client.query_range(f"kueue_cluster_queue_status{{cluster_queue{names}}}", start, end, step)
    scraped_from = min((samples[0][0] for _, samples in status if samples), default=None)
    for labels, samples in client.query_range(
            f'kueue_evicted_workloads_total{{cluster_queue{names}, reason="Preempted"}}', start, end, step):
        facts = queues.get(labels.get("cluster_queue", ""))
        if facts is not None:
            facts.preempted += int(round(counter_increase(samples, start, step, scraped_from)))
    for labels, samples in client.query_range(
            f"kueue_preempted_workloads_total{{preempting_cluster_queue{names}}}", start, end, step):
        facts = queues.get(labels.get("preempting_cluster_queue", ""))
        count = int(round(counter_increase(samples, start, step, scraped_from)))
        if facts is not None and count:
            reason = labels.get("reason", "")
            facts.preempting[reason] = facts.preempting.get(reason, 0) + count
    buckets: dict[str, dict[float, float]] = {}
    for labels, samples in client.query_range(
            f"sum by (cluster_queue, le) (kueue_admission_wait_time_seconds_bucket{{cluster_queue{names}}})",
            start, end, step):
        per_queue = buckets.setdefault(labels.get("cluster_queue", ""), {})
        per_queue[float(labels.get("le", "+Inf"))] = counter_increase(samples, start, step, scraped_from)
    for name, cumulative in buckets.items():
        if name in queues and cumulative:
            queues[name].admissions = int(round(cumulative.get(math.inf, 0.0)))
            queues[name].admission_wait_p50 = histogram_quantile(0.5, cumulative)
            queues[name].admission_wait_p95 = histogram_quantile(0.95, cumulative)
    training_ns = {ns: plan.cohort for plan in plans for ns, _ in plan.checkpoints}
    if training_ns:
        lost = client.query_range(
            f"max by (namespace, pod) (kueue_cohorts_trainer_steps_lost_at_last_preemption"
            f"{{namespace{label_matcher(sorted(training_ns))}}})", start, end, step)
        for plan in plans:
            pods = [max(v for _, v in samples) for labels, samples in lost
                    if training_ns.get(labels.get("namespace", "")) == plan.cohort and samples]
            for cq in plan.cluster_queues:
                if cq.role == TRAINING_ROLE and pods:
                    queues[cq.name].steps_lost = int(sum(pods))
    charts = {f"{key[0]} {key[2]}": sorted(series.items()) for key, series in reserved.items()}
    return Report(stack, client.url, start, end, step, list(hours.values()), list(queues.values()), charts)


# --- outputs ---------------------------------------------------------------------------------------------------------


def _fmt(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(report: Report) -> str:
    """The report as text: a header line, the resource-hours table, the per-queue facts table (PREEMPTED: the
    queue's Workloads preempted; PREEMPTING: the preemptions its Workloads made, per reason)."""
    lines = [f"stack {report.stack} · {report.prometheus} · {_iso(report.start)} .. {_iso(report.end)} · step "
             f"{report.step:g} s", "", "resource-hours (quantity x hours, in each row's UNIT)"]
    head = ("COHORT", "CLUSTERQUEUE", "ROLE", "FLAVOR", "RESOURCE", "UNIT", "OWNED", "USED", "BORROWED", "LENT")
    rows = [head] + [(h.cohort, h.cluster_queue, h.role, h.flavor, h.resource, h.unit, _fmt(h.owned), _fmt(h.used),
                      _fmt(h.borrowed), _fmt(h.lent)) for h in report.hours]
    lines += _columns(rows)
    lines += ["", "queues"]
    queue_head = ("COHORT", "CLUSTERQUEUE", "ROLE", "PREEMPTED", "PREEMPTING", "ADMISSIONS", "WAIT P50 S",
                  "WAIT P95 S", "STEPS LOST")
    queue_rows = [queue_head] + [(q.cohort, q.cluster_queue, q.role, str(q.preempted),
                      ", ".join(f"{n} {reason}" for reason, n in sorted(q.preempting.items())) or "0",
                      str(q.admissions), _fmt(q.admission_wait_p50, 1), _fmt(q.admission_wait_p95, 1),
                      "-" if q.steps_lost is None else str(q.steps_lost)) for q in report.queues]
    return "\n".join(lines + _columns(queue_rows))


def _columns(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def as_csv(report: Report) -> str:
    """One CSV row per ClusterQueue, flavor and resource: the hours and the queue's facts beside them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["cohort", "cluster_queue", "role", "flavor", "resource", "unit", "owned_hours", "used_hours",
                     "borrowed_hours", "lent_hours", "preempted", "preempting", "admissions",
                     "admission_wait_p50_seconds",
                     "admission_wait_p95_seconds", "steps_lost"])
    facts = {q.cluster_queue: q for q in report.queues}
    for h in report.hours:
        q = facts.get(h.cluster_queue) or QueueFacts(h.cohort, h.cluster_queue, h.role)
        writer.writerow([h.cohort, h.cluster_queue, h.role, h.flavor, h.resource, h.unit, h.owned, h.used, h.borrowed,
                         h.lent, q.preempted, ";".join(f"{r}={n}" for r, n in sorted(q.preempting.items())),
                         q.admissions,
                         "" if q.admission_wait_p50 is None else q.admission_wait_p50,
                         "" if q.admission_wait_p95 is None else q.admission_wait_p95,
                         "" if q.steps_lost is None else q.steps_lost])
    return out.getvalue()


def html(report: Report) -> str:
    """One self-contained HTML page (plotly.js embedded, no network): owned / used / borrowed / lent hours per queue
    and resource as bars, reserved accelerators over time, and the two tables as text."""
    fig = make_subplots(rows=2, cols=1, subplot_titles=("Resource-hours per ClusterQueue",
                                                        "Reserved over time"), vertical_spacing=0.15)
    labels = [f"{h.cluster_queue} {h.resource} ({h.unit})" for h in report.hours]
    for name in ("owned", "used", "borrowed", "lent"):
        fig.add_trace(go.Bar(name=name, x=labels, y=[getattr(h, name) for h in report.hours]), row=1, col=1)
    for series, samples in sorted(report.reserved.items()):
        fig.add_trace(go.Scatter(name=series, mode="lines", line_shape="hv",
                                 x=[datetime.fromtimestamp(t, UTC) for t, _ in samples], y=[v for _, v in samples]),
                      row=2, col=1)
    fig.update_layout(title=f"kueue-cohorts report: stack {report.stack}", barmode="group", height=900)
    body = fig.to_html(full_html=False, include_plotlyjs=True)
    text = html_text(table(report))
    data = base64.b64encode(json.dumps(report.as_json()).encode()).decode()
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kueue-cohorts report "
            f"{html_text(report.stack)}</title></head><body>{body}<pre>{text}</pre>"
            f"<script type=\"application/json\" id=\"report\" data-base64=\"{data}\"></script></body></html>\n")


RENDERERS: dict[str, Callable[[Report], str]] = {
    "table": table, "json": lambda r: json.dumps(r.as_json(), indent=2), "csv": as_csv, "html": html}
"""--output name -> renderer."""
