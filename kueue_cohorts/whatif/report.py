"""What a simulation means for each queue, and what a change does to it: the numbers of the what-if report.

Per ClusterQueue and per tenant (a LocalQueue in a namespace), from a `whatif.scheduler.Result`:
- admission wait (submit -> first quota reservation) and start delay (submit -> first start: the admission plus the
  victims' termination) p50 / p95 / max over the workloads admitted; workloads never admitted are counted apart;
- GPU-hours held (quota reserved, in the device-count resource: `whatif.kueue.gpu_resource`) and, per ClusterQueue,
  GPU-hours borrowed (usage above nominalQuota, summed over flavors);
- preemptions (its workloads evicted) and training work lost (hours, and steps when the trace gives stepSeconds).

`compare` puts a base and a head report side by side and names first what got worse for inference: an inference
workload that waits (or is never admitted) where it did not before.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

from kueue_cohorts.whatif.kueue import Quota, gpu_resource
from kueue_cohorts.whatif.scheduler import RUNNING_AT_START, Result
from kueue_cohorts.whatif.trace import WorkloadKind


@dataclass(frozen=True)
class Stats:
    """p50, p95 and max of some seconds (nearest rank), over `count` values; all 0 for none."""

    count: int = 0
    p50: float = 0.0
    p95: float = 0.0
    max: float = 0.0

    @staticmethod
    def of(values: list[float]) -> Stats:
        """The Stats of `values`."""
        if not values:
            return Stats()
        ordered = sorted(values)

        def rank(p: float) -> float:
            return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]
        return Stats(len(ordered), rank(50), rank(95), ordered[-1])


@dataclass(frozen=True)
class QueueReport:
    """One row: a ClusterQueue (`local_queue` None) or one of its LocalQueues (namespace/local_queue).

    kinds: the workload kinds seen. Times in seconds, work in hours."""

    cluster_queue: str
    namespace: Optional[str] = None
    local_queue: Optional[str] = None
    kinds: tuple[str, ...] = ()
    workloads: int = 0
    admission_wait: Stats = Stats()
    start_delay: Stats = Stats()
    gpu_hours: float = 0.0
    borrowed_gpu_hours: Optional[float] = None
    preempted: int = 0
    lost_hours: float = 0.0
    lost_steps: Optional[int] = None
    never_admitted: int = 0

    @property
    def key(self) -> str:
        """`<ClusterQueue>` or `<namespace>/<LocalQueue>`."""
        return self.cluster_queue if self.local_queue is None else f"{self.namespace}/{self.local_queue}"

    @property
    def inference(self) -> bool:
        """Whether it serves inference."""
        return WorkloadKind.INFERENCE.value in self.kinds


@dataclass(frozen=True)
class Report:
    """The rows of one simulation (ClusterQueues, each followed by its LocalQueues when it has several), the GPU
    resource counted, the
    horizon (seconds) and workloads whose LocalQueue does not exist."""

    gpu: str
    horizon_seconds: float
    rows: tuple[QueueReport, ...]
    unqueued: tuple[str, ...] = ()

    def row(self, key: str) -> Optional[QueueReport]:
        """The row whose `key` is `key`, or None."""
        return next((r for r in self.rows if r.key == key), None)


def _gpus(usage: dict[tuple[str, str], int], gpu: str) -> int:
    return sum(v for (_, r), v in usage.items() if r == gpu)


def report(result: Result) -> Report:
    """The Report of a simulation Result (see the module doc)."""
    setup = result.setup
    resources = sorted({r for cq in setup.cluster_queues.values() for g in cq.groups for r in g.covered})
    gpu = gpu_resource(resources)
    horizon = result.trace.horizon_seconds
    first_admit: dict[str, float] = {}
    first_start: dict[str, float] = {}
    held: dict[str, float] = {}
    since: dict[str, float] = {}
    preempted: dict[str, int] = {}
    lost: dict[str, float] = {}
    running = {e.workload for e in result.events if e.kind == "admitted" and e.reason == RUNNING_AT_START}
    for e in result.events:
        if e.kind == "admitted":
            first_admit.setdefault(e.workload, e.time)
            since[e.workload] = e.time
        elif e.kind == "started":
            first_start.setdefault(e.workload, e.time)
        elif e.kind in ("finished", "released") and e.workload in since:
            held[e.workload] = held.get(e.workload, 0.0) + e.time - since.pop(e.workload)
        elif e.kind == "preempted":
            preempted[e.workload] = preempted.get(e.workload, 0) + 1
            lost[e.workload] = lost.get(e.workload, 0.0) + e.lost
    for name, start in since.items():
        held[name] = held.get(name, 0.0) + horizon - start
    groups: dict[tuple[str, Optional[str], Optional[str]], list[str]] = {}
    unqueued = []
    for name, wl in result.workloads.items():
        if wl.cq is None:
            unqueued.append(name)
            continue
        groups.setdefault((wl.cq, None, None), []).append(name)
        groups.setdefault((wl.cq, wl.spec.namespace, wl.spec.local_queue), []).append(name)
    rows = []
    for cq_name in sorted(setup.cluster_queues):
        tenants = sorted(k for k in groups if k[0] == cq_name and k[1] is not None)
        keys = [(cq_name, None, None)] + (tenants if len(tenants) > 1 else [])  # one LocalQueue: the same numbers
        for key in keys:
            names = groups.get(key, [])
            wls = [result.workloads[n] for n in names]
            steps = [lost.get(w.name, 0.0) / w.spec.step_seconds for w in wls if w.spec.step_seconds]
            rows.append(QueueReport(
                cluster_queue=cq_name, namespace=key[1], local_queue=key[2],
                kinds=tuple(sorted({w.spec.kind.value for w in wls})), workloads=len(wls),
                admission_wait=Stats.of([first_admit[w.name] - w.created for w in wls
                                         if w.name in first_admit and w.name not in running]),
                start_delay=Stats.of([first_start[w.name] - w.created for w in wls
                                      if w.name in first_start and w.name not in running]),
                gpu_hours=sum(held.get(w.name, 0.0) * w.total(gpu) for w in wls) / 3600,
                borrowed_gpu_hours=_borrowed(result, cq_name, gpu) if key[1] is None else None,
                preempted=sum(preempted.get(w.name, 0) for w in wls),
                lost_hours=sum(lost.get(w.name, 0.0) for w in wls) / 3600,
                lost_steps=round(sum(steps)) if steps else None,
                never_admitted=sum(1 for w in wls if w.name not in first_admit)))
    return Report(gpu, horizon, tuple(rows), tuple(sorted(unqueued)))


def _borrowed(result: Result, cq_name: str, gpu: str) -> float:
    """GPU-hours above nominalQuota of ClusterQueue `cq_name` over the trace."""
    quotas = result.setup.cluster_queues[cq_name].quotas
    series = result.usage[cq_name]
    total = 0.0
    for (t, usage), (t_next, _) in zip(series, series[1:] + [(result.trace.horizon_seconds, {})], strict=True):
        above = sum(max(0, v - quotas[fr].nominal) for fr, v in usage.items() if fr[1] == gpu and fr in quotas)
        total += above * max(0.0, min(t_next, result.trace.horizon_seconds) - t)
    return total / 3600


def gpu_series(result: Result, gpu: str) -> dict[str, list[tuple[float, int]]]:
    """Per ClusterQueue, (time, GPUs held) at every change, ending at the horizon (for the chart)."""
    out = {}
    for cq_name, series in result.usage.items():
        points = [(t, _gpus(u, gpu)) for t, u in series]
        points.append((result.trace.horizon_seconds, points[-1][1] if points else 0))
        out[cq_name] = points
    return out


@dataclass(frozen=True)
class Fate:
    """What became of one workload in one simulation: when it was first admitted (None: never, `why` says why),
    and each preemption it suffered as (time, preemptor, reason, seconds of work lost)."""

    admitted_at: Optional[float]
    preemptions: tuple[tuple[float, str, str, float], ...] = ()
    why: str = ""

    def text(self, created: float, step_seconds: Optional[float]) -> str:
        """One cell: `admitted after 5 s`, then each preemption `preempted at 2.1 h by x (reason), lost 100 s (20
        steps)`; or `never admitted: <why>`."""
        if self.admitted_at is None:
            return f"never admitted: {self.why}"
        parts = [f"admitted after {_fmt(self.admitted_at - created)}" if self.admitted_at > created
                 else "admitted at once"]
        for time, by, reason, lost in self.preemptions:
            steps = f" ({lost / step_seconds:.0f} steps)" if step_seconds and lost else ""
            parts.append(f"preempted at {_fmt(time)} by `{by}` ({reason}), lost {_lost(lost)} of work{steps}")
        if self.why:
            parts.append(f"pending at the end: {self.why}")
        return "; ".join(parts)


def fates(result: Result) -> dict[str, Fate]:
    """The Fate of every workload of a simulation."""
    first: dict[str, float] = {}
    preempted: dict[str, list[tuple[float, str, str, float]]] = {}
    for e in result.events:
        if e.kind == "admitted":
            first.setdefault(e.workload, e.time)
        elif e.kind == "preempted":
            preempted.setdefault(e.workload, []).append((e.time, e.by or "", e.reason or "", e.lost))
    return {name: Fate(first.get(name), tuple(preempted.get(name, ())), result.refusals.get(name, ""))
            for name in result.workloads}


@dataclass(frozen=True)
class FateChange:
    """A workload whose fate differs between base and head: admitted in one and not the other, or preempted a
    different number of times."""

    workload: str
    queue: str
    base: Fate
    head: Fate


def fate_changes(base: Result, head: Result) -> list[FateChange]:
    """Every workload whose fate changes from `base` to `head`, in trace order (submit time, name)."""
    before, after = fates(base), fates(head)
    out = []
    for spec in head.trace.workloads:
        b, h = before[spec.name], after[spec.name]
        if (b.admitted_at is None) != (h.admitted_at is None) or len(b.preemptions) != len(h.preemptions):
            out.append(FateChange(spec.name, f"{spec.namespace}/{spec.local_queue}", b, h))
    return out


def timeline_markdown(changes: list[FateChange], result: Result, limit: int = 25) -> list[str]:
    """The reviewer's timeline: one row per workload whose fate changes (the first `limit`), base and head."""
    if not changes:
        return []
    specs = {w.name: w for w in result.trace.workloads}
    lines = ["", f"Workloads whose fate changes ({len(changes)}"
             + (f", the first {limit} shown; all in `--output json`" if len(changes) > limit else "") + "):", "",
             "| workload | queue | submitted | base | head |", "|---|---|---|---|---|"]
    for change in changes[:limit]:
        spec = specs[change.workload]
        lines.append(f"| `{change.workload}` | `{change.queue}` | {_fmt(spec.submit_seconds)} | "
                     f"{change.base.text(spec.submit_seconds, spec.step_seconds)} | "
                     f"{change.head.text(spec.submit_seconds, spec.step_seconds)} |")
    return lines


@dataclass(frozen=True)
class OverQuota:
    """A ClusterQueue whose nominalQuota of one flavor-resource is below what runs in it at the change (the
    workloads the trace says were running at its start).

    in_use, nominal, base_nominal: in Kueue's units (cpu in millicores, memory in bytes, devices). drained_seconds:
    when, in the head's simulation, its usage of that flavor-resource first falls to the nominalQuota (None: not
    within the trace). Nothing is evicted for it (kueue#5176): the usage above nominalQuota counts as borrowing, so
    the queue admits only what its cohort still lends until it drains.
    """

    cluster_queue: str
    flavor: str
    resource: str
    in_use: int
    nominal: int
    base_nominal: Optional[int]
    drained_seconds: Optional[float]


def quota_below_use(head: Result, base: Optional[Result] = None) -> list[OverQuota]:
    """Every (ClusterQueue, flavor, resource) whose head nominalQuota is below its usage at time 0 (the running
    state) and lower than the base's (or with no base): what the change puts under water. Sorted by queue."""
    out = []
    for cq_name in sorted(head.usage):
        series = head.usage[cq_name]
        at_start = next((u for t, u in reversed(series) if t <= 0), {})
        quotas = head.setup.cluster_queues[cq_name].quotas
        base_cq = base.setup.cluster_queues.get(cq_name) if base is not None else None
        for fr, used in sorted(at_start.items()):
            nominal = quotas.get(fr, Quota()).nominal
            base_nominal = base_cq.quotas.get(fr, Quota()).nominal if base_cq is not None else None
            if used <= nominal or (base is not None and (base_nominal is None or base_nominal <= nominal)):
                continue
            drained = next((t for t, u in series if t > 0 and u.get(fr, 0) <= nominal), None)
            out.append(OverQuota(cq_name, fr[0], fr[1], used, nominal, base_nominal, drained))
    return out


def amount_text(resource: str, value: int) -> str:
    """An amount in Kueue's units as a person reads it: cpu in cores, memory in GiB, anything else as is."""
    if resource == "cpu":
        return f"{value / 1000:g}"
    if resource == "memory":
        return f"{value / 2**30:g}Gi"
    return str(value)


def over_quota_alert(over: OverQuota) -> str:
    """The one-line warning of an OverQuota: what runs, the new nominalQuota, that nothing is evicted, how long
    until it drains."""
    base = f" (base {amount_text(over.resource, over.base_nominal)})" if over.base_nominal is not None else ""
    drained = (f"drains {fmt_seconds(over.drained_seconds)} after the change in this trace"
               if over.drained_seconds is not None else "does not drain within the trace")
    return (f"`{over.cluster_queue}` quota below its current use: {amount_text(over.resource, over.in_use)} "
            f"{over.resource} in flavor {over.flavor} running at the change, nominalQuota "
            f"{amount_text(over.resource, over.nominal)}{base}; nothing running is evicted (kueue#5176), its new "
            f"workloads get in only on what the cohort still lends until its use falls to the nominalQuota: "
            f"{drained}")


@dataclass(frozen=True)
class Change:
    """One row of the comparison: the same queue in the base and the head report (None where it does not
    exist)."""

    key: str
    base: Optional[QueueReport]
    head: Optional[QueueReport]

    @property
    def row(self) -> QueueReport:
        """The head row, else the base row (one of them exists)."""
        row = self.head or self.base
        assert row is not None
        return row


@dataclass(frozen=True)
class Comparison:
    """Base and head side by side: the rows in head order (queues only in base last) and the alerts, worst first:
    inference that waits or is never admitted where it was not before, then inference that starts later."""

    base: Report
    head: Report
    changes: tuple[Change, ...]
    alerts: tuple[str, ...] = field(default=())


def fmt_seconds(seconds: float) -> str:
    """Seconds as a person reads them: `95 s`, `12.5 min`, `3.2 h`."""
    return _fmt(seconds)


def _fmt(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def compare(base: Report, head: Report, first: tuple[str, ...] = ()) -> Comparison:
    """Compare two Reports of the same trace (see Comparison); `first`: alerts to put before every other (the
    quotas a change puts below their current use)."""
    keys = [r.key for r in head.rows] + [r.key for r in base.rows if head.row(r.key) is None]
    changes = tuple(Change(k, base.row(k), head.row(k)) for k in keys)
    alerts = list(first)
    for change in changes:
        b, h = change.base, change.head
        if b is None or h is None or h.local_queue is not None or not b.workloads:
            continue
        admitted_before, admitted_now = b.workloads - b.never_admitted, h.workloads - h.never_admitted
        if admitted_before and not admitted_now:
            alerts.append(f"every workload of `{h.key}` stops being admitted: {admitted_before} admitted on the base, "
                          f"none of its {h.workloads} on the head (GPU-hours {b.gpu_hours:.1f} → {h.gpu_hours:.1f})")
        elif b.gpu_hours > 0 and h.gpu_hours < 0.5 * b.gpu_hours:
            alerts.append(f"`{h.key}` loses most of its GPU-hours: {b.gpu_hours:.1f} → {h.gpu_hours:.1f} "
                          f"({(h.gpu_hours - b.gpu_hours) / b.gpu_hours:+.0%}), {h.never_admitted} workload(s) never "
                          f"admitted (base: {b.never_admitted})")
    for change in changes:
        b, h = change.base, change.head
        if h is None or not h.inference or h.local_queue is not None:
            continue
        if b is None:
            continue
        if h.never_admitted > b.never_admitted:
            alerts.append(f"inference on {h.key}: {h.never_admitted} workload(s) never admitted "
                          f"(base: {b.never_admitted})")
        if h.admission_wait.max > b.admission_wait.max + 1 or h.admission_wait.p95 > b.admission_wait.p95 + 1:
            alerts.append(f"inference on {h.key} waits longer for admission: p95 {_fmt(b.admission_wait.p95)} -> "
                          f"{_fmt(h.admission_wait.p95)}, max {_fmt(b.admission_wait.max)} -> "
                          f"{_fmt(h.admission_wait.max)}")
    for change in changes:
        b, h = change.base, change.head
        if h is None or b is None or not h.inference or h.local_queue is not None:
            continue
        if h.start_delay.max > b.start_delay.max + 1:
            alerts.append(f"inference on {h.key} starts later: start delay max {_fmt(b.start_delay.max)} -> "
                          f"{_fmt(h.start_delay.max)} (admission plus the victims' termination)")
    return Comparison(base, head, changes, tuple(alerts))


def _lost(seconds: float) -> str:
    """Work lost as a person reads it, never rounded to nothing: `0`, `100 s`, `12.5 min`, `3.2 h`."""
    if seconds == 0:
        return "0"
    return f"{seconds:.2g} s" if seconds < 1 else _fmt(seconds)


def _cell(base: Optional[float], head: Optional[float], text: str = "{:.1f}",
          shown: Optional[Callable[[float], str]] = None) -> str:
    if base is None and head is None:
        return ""

    def one(value: Optional[float]) -> str:
        if value is None:
            return "—"
        return shown(value) if shown is not None else text.format(value)
    b, h = one(base), one(head)
    return b if b == h else f"{b} → {h}"


def _stats_cell(base: Optional[Stats], head: Optional[Stats]) -> str:
    def one(s: Optional[Stats]) -> str:
        if s is None:
            return "—"
        if not s.count:
            return "none"
        return f"{_fmt(s.p50)} / {_fmt(s.p95)} / {_fmt(s.max)}"
    b, h = one(base), one(head)
    return b if b == h else f"{b} → {h}"


def markdown(comparison: Comparison, title: str) -> str:
    """The what-if section as Markdown: the title, the alerts first (a CAUTION block), then one table row per
    queue and tenant: inference rows first, each cell `base → head` where they differ."""
    head = comparison.head
    lines = [f"### {title}", ""]
    if comparison.alerts:
        lines += ["> [!CAUTION]"] + [f"> - {a}" for a in comparison.alerts] + [""]
    else:
        lines += ["No inference waits longer with this change.", ""]
    lines += [f"| queue | workloads | admission wait p50 / p95 / max | start delay p50 / p95 / max | "
              f"{head.gpu}-hours | borrowed | preempted | training lost | never admitted |",
              "|---|---|---|---|---|---|---|---|---|"]
    ordered = sorted(comparison.changes, key=lambda c: not c.row.inference)
    for change in ordered:
        b, h, row = change.base, change.head, change.row
        label = f"`{change.key}`" + (" (inference)" if row.inference else "")
        lines.append("| " + " | ".join([
            label if row.local_queue is None else f"&nbsp;&nbsp;↳ {label}",
            _cell(b.workloads if b else None, h.workloads if h else None, "{:d}"),
            _stats_cell(b.admission_wait if b else None, h.admission_wait if h else None),
            _stats_cell(b.start_delay if b else None, h.start_delay if h else None),
            _cell(b.gpu_hours if b else None, h.gpu_hours if h else None),
            _cell(b.borrowed_gpu_hours if b else None, h.borrowed_gpu_hours if h else None),
            _cell(b.preempted if b else None, h.preempted if h else None, "{:d}"),
            _cell(b.lost_hours * 3600 if b else None, h.lost_hours * 3600 if h else None, "{}", _lost),
            _cell(b.never_admitted if b else None, h.never_admitted if h else None, "{:d}"),
        ]) + " |")
    if head.unqueued:
        lines += ["", f"{len(head.unqueued)} workload(s) name a LocalQueue the stack does not have: "
                  + ", ".join(f"`{n}`" for n in head.unqueued[:10]) + (" ..." if len(head.unqueued) > 10 else "")]
    return "\n".join(lines) + "\n"
