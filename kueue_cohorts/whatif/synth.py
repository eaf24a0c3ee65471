"""`cohorts trace synth`: a seeded demand trace for a stack's queues.

- Inference (the asymmetric layout's inference LocalQueue): serving replicas, each a one-pod Workload that lives
  until the autoscaler removes it (`deletedSeconds`: whether it ever ran or not). The replica count follows a
  diurnal curve (lowest at 04:00, highest at 16:00, weekends at 60 %) between a quarter of the inference quota and
  all of it, plus one or two seeded peaks a day that go one or two replicas beyond it; every `step_minutes` the
  count moves to the curve (scale-up: new replicas; scale-down: the newest ones are deleted). A replica requests
  the first InferenceService's requests, else one GPU and the matching share of the inference nominalQuota.
- Training (the training LocalQueue, and every tenant's of the symmetric layout): a backlog of jobs arriving as a
  Poisson process (`training_per_day`), each of 1, 2 or 4 pods (never more than the queue can ever hold),
  log-normal durations (median 1 h, 10 min to 24 h), a checkpoint every 10 minutes, 30 s to let go on SIGTERM,
  5 s steps.

Pure: the same settings, seed and parameters give the same trace.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Mapping, Optional

from kueue_cohorts.components.model.kueue import ClusterQueueSpec
from kueue_cohorts.components.model.plans import stack_plans
from kueue_cohorts.components.settings import Settings, quantity
from kueue_cohorts.policy.rules.vocabulary.objects import INFERENCE_ROLE, TENANT_ROLE, TRAINING_ROLE
from kueue_cohorts.whatif.kueue import gpu_resource
from kueue_cohorts.whatif.trace import Trace, TraceWorkload, WorkloadKind

DAY = 86400.0


@dataclass(frozen=True)
class QueueDemand:
    """Where a synthetic workload goes and what one pod requests.

    role: the ClusterQueue's role (inference, training, tenant). namespace, local_queue: the LocalQueue. kind:
    inference or training. priority_class: its WorkloadPriorityClass (None: none). unit: per-pod requests.
    capacity: how many such pods the queue can ever hold (its nominalQuota plus borrowingLimit in GPUs), at least 1.
    """

    role: str
    namespace: str
    local_queue: str
    kind: WorkloadKind
    priority_class: Optional[str]
    unit: Mapping[str, str]
    capacity: int


def _quotas(cq: ClusterQueueSpec) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """(nominalQuota, nominalQuota + borrowingLimit) of the first flavor of `cq`, per resource."""
    nominal: dict[str, Decimal] = {}
    most: dict[str, Decimal] = {}
    for rq in cq.resource_groups[0].flavors[0].resources:
        nominal[rq.name] = quantity.parse(rq.nominal_quota)
        most[rq.name] = nominal[rq.name] + (quantity.parse(rq.borrowing_limit) if rq.borrowing_limit is not None
                                            else nominal[rq.name])
    return nominal, most


def _unit(quota: Mapping[str, Decimal], gpu: str) -> dict[str, str]:
    """One GPU's share of `quota`: each resource divided by the GPU count (cpu to millicores, memory to Mi, other
    resources to whole units, at least one)."""
    gpus = quota.get(gpu) or Decimal(1)
    out = {}
    for resource, value in quota.items():
        share = value / gpus
        if resource == gpu:
            out[resource] = "1"
        elif resource == "cpu":
            out[resource] = quantity.canonical(max(Decimal("0.001"), share.quantize(Decimal("0.001"), ROUND_FLOOR)))
        elif resource == "memory":
            mib = max(1, int(share / (1 << 20)))
            out[resource] = quantity.canonical(f"{mib}Mi")
        else:
            out[resource] = quantity.canonical(max(1, int(share)))
    return out


def demand_of(settings: Settings) -> list[QueueDemand]:
    """The QueueDemand of every LocalQueue of the stack, in plan order (inference first)."""
    tenants = {t.name: t for t in settings.shared_pool.tenants} if settings.shared_pool else {}
    out = []
    for plan in stack_plans(settings):
        pcs = [pc.name for pc in plan.priority_classes]
        inference_quota: dict[str, Decimal] = {}
        for lq in plan.local_queues:
            cq = lq.cluster_queue
            nominal, most = _quotas(cq)
            gpu = gpu_resource(list(nominal))
            if cq.role == INFERENCE_ROLE:
                inference_quota = nominal
                it = settings.inference_training
                services = it.inference.services if it else []
                unit = dict(services[0].requests) if services else _unit(nominal, gpu)
                per_pod = quantity.parse(unit.get(gpu, "1")) or Decimal(1)
                out.append(QueueDemand(cq.role, lq.namespace, lq.name, WorkloadKind.INFERENCE,
                                       pcs[0] if pcs else None, unit, max(1, int(nominal.get(gpu, 1) / per_pod))))
            elif cq.role == TRAINING_ROLE:
                base = inference_quota or most
                out.append(QueueDemand(cq.role, lq.namespace, lq.name, WorkloadKind.TRAINING,
                                       pcs[1] if len(pcs) > 1 else None, _unit(base, gpu),
                                       max(1, int(most.get(gpu, 1)))))
            elif cq.role == TENANT_ROLE:
                tenant = next((t for t in tenants.values()
                               if t.cluster_queue_name == cq.name), None)
                out.append(QueueDemand(cq.role, lq.namespace, lq.name, WorkloadKind.TRAINING,
                                       tenant.priority_class if tenant else None, _unit(nominal, gpu),
                                       max(1, int(most.get(gpu, 1)))))
    return out


def _diurnal(t: float) -> float:
    """0 at 04:00, 1 at 16:00; weekends (days 5 and 6 of the week) at 60 %."""
    hour = (t % DAY) / 3600
    level = 0.5 - 0.5 * math.cos(2 * math.pi * (hour - 4) / 24)
    return level * (0.6 if int(t // DAY) % 7 in (5, 6) else 1.0)


def _inference(queue: QueueDemand, rng: random.Random, horizon: float, step: float) -> list[TraceWorkload]:
    high = queue.capacity
    low = high // 4
    peaks: list[tuple[float, float, int]] = []
    for day in range(math.ceil(horizon / DAY)):
        for _ in range(rng.choice((1, 1, 2))):
            start = day * DAY + rng.uniform(8, 20) * 3600
            peaks.append((start, start + rng.uniform(0.5, 1.5) * 3600, rng.choice((1, 2))))
    alive: list[tuple[str, float]] = []
    out: list[TraceWorkload] = []
    ends: dict[str, float] = {}
    count = 0
    t = 0.0
    while t < horizon:
        target = round(low + (high - low) * _diurnal(t) + rng.uniform(-0.4, 0.4))
        target += sum(extra for start, end, extra in peaks if start <= t < end)
        target = max(low, min(high + 2, target))
        while len(alive) < target:
            count += 1
            name = f"inf-{count:05d}"
            submit = min(horizon, t + rng.uniform(0, 60))
            alive.append((name, submit))
            out.append(_replica(queue, name, submit))
        while len(alive) > target:
            name, submit = alive.pop()
            ends[name] = max(submit + 60.0, t + rng.uniform(0, 60))
        t += step
    return [w.model_copy(update={"deleted_seconds": round(ends[w.name], 3)}) if w.name in ends else w for w in out]


def _replica(queue: QueueDemand, name: str, submit: float) -> TraceWorkload:
    return TraceWorkload(name=name, submit_seconds=round(submit, 3), namespace=queue.namespace,
                         local_queue=queue.local_queue, kind=WorkloadKind.INFERENCE, pods=1, requests=dict(queue.unit),
                         priority_class=queue.priority_class, termination_seconds=5.0)


def _training(queue: QueueDemand, prefix: str, rng: random.Random, horizon: float, per_day: float
              ) -> list[TraceWorkload]:
    out = []
    t = rng.expovariate(per_day / DAY)
    count = 0
    sizes = [p for p in (1, 1, 2, 4) if p <= queue.capacity] or [1]
    while t < horizon:
        count += 1
        duration = min(DAY, max(600.0, rng.lognormvariate(math.log(3600), 0.8)))
        out.append(TraceWorkload(
            name=f"{prefix}-{count:05d}", submit_seconds=round(t, 3), namespace=queue.namespace,
            local_queue=queue.local_queue, kind=WorkloadKind.TRAINING, pods=rng.choice(sizes),
            requests=dict(queue.unit), duration_seconds=round(duration, 3), priority_class=queue.priority_class,
            checkpoint_interval_seconds=600.0, termination_seconds=30.0, step_seconds=5.0))
        t += rng.expovariate(per_day / DAY)
    return out


def synth(settings: Settings, seed: int = 1, days: float = 7.0, step_minutes: float = 15.0,
          training_per_day: float = 60.0, tenant_per_day: float = 24.0) -> Trace:
    """A seeded demand trace of `days` days for the stack's queues (see the module doc).

    Args:
        settings: the stack. seed: the random seed. days: the trace's length (> 0). step_minutes: how often the
        inference replica count moves. training_per_day: mean training jobs a day on the training queue;
        tenant_per_day: on each tenant's queue.
    Returns:
        The Trace (horizon `days` days), about 1,000 workloads for a week of the staging stack.
    Raises:
        ValueError: days or step_minutes not positive, or rates negative.
    """
    if days <= 0 or step_minutes <= 0 or training_per_day < 0 or tenant_per_day < 0:
        raise ValueError("days and step_minutes must be above 0, the rates at least 0")
    rng = random.Random(seed)
    horizon = days * DAY
    workloads: list[TraceWorkload] = []
    for queue in demand_of(settings):
        if queue.role == INFERENCE_ROLE:
            workloads += _inference(queue, rng, horizon, step_minutes * 60)
        else:
            rate = training_per_day if queue.role == TRAINING_ROLE else tenant_per_day
            if rate:
                workloads += _training(queue, f"{queue.namespace}-job", rng, horizon, rate)
    return Trace.build(workloads, horizon, f"synthetic: {days:g} days, seed {seed}", seed, "cohorts trace synth")
