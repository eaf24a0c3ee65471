"""Replay a demand trace against a real Kueue, and compare what it did with what the what-if simulator predicts.

`replay` creates one batch/v1 Job per trace workload (its pods, per-pod requests, LocalQueue and
WorkloadPriorityClass labels; Kueue's webhook suspends it), at its submit time scaled by `scale` (seconds of wall
clock per trace second), and deletes it once it has run its duration (scaled) after its admission: the Job's end,
which releases its quota. Meanwhile a watch on Workloads records, in the API server's order, every quota
reservation and every preemption (the Preempted condition's reason; the preemptor from the Evicted message's
`UID`). `agreement` compares the recorded admission order and preemptions with a simulation's and names the first
difference.

On a sandbox (kwok nodes, pods Running until deleted) this checks the simulator against Kueue 0.19.2 itself.
Workloads whose duration is omitted run until their `deletedSeconds`, else until the trace's horizon.
"""
from __future__ import annotations

import heapq
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from whatif.kueue import KueueSetup
from whatif.scheduler import Result, simulate
from whatif.trace import Trace, TraceWorkload, WorkloadKind

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
_UID = re.compile(r"\(UID: ([^,)\s]+)")


@dataclass
class Observed:
    """What the real Kueue did: admissions (workload names, in the API server's order) and preemptions (victim,
    preemptor, reason), plus the wall-clock seconds the replay took."""

    admissions: list[str] = field(default_factory=list)
    preemptions: list[tuple[str, str, str]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Agreement:
    """The comparison of a simulation with a replay: equal or not, and the first difference in words."""

    admissions_equal: bool
    preemptions_equal: bool
    first_difference: Optional[str]
    admissions: int
    preemptions: int

    @property
    def equal(self) -> bool:
        """Both the admission order and the preemptions agree."""
        return self.admissions_equal and self.preemptions_equal


def _first_difference(what: str, predicted: Sequence[Any], observed: Sequence[Any]) -> Optional[str]:
    for index, (p, o) in enumerate(zip(predicted, observed, strict=False)):
        if p != o:
            return f"{what} #{index + 1}: the simulator says {p}, Kueue did {o}"
    if len(predicted) != len(observed):
        shorter, longer, who = ((predicted, observed, "Kueue") if len(predicted) < len(observed)
                                else (observed, predicted, "the simulator"))
        return f"{what} #{len(shorter) + 1}: only {who} has {longer[len(shorter)]}"
    return None


def agreement(result: Result, observed: Observed) -> Agreement:
    """Compare a simulation `result` with a replay's `observed` (admission order, then preemptions)."""
    predicted_admissions, predicted_preemptions = result.admission_order(), result.preemptions()
    first = (_first_difference("admission", predicted_admissions, observed.admissions)
             or _first_difference("preemption", predicted_preemptions, observed.preemptions))
    return Agreement(predicted_admissions == observed.admissions, predicted_preemptions == observed.preemptions,
                     first, len(predicted_admissions), len(predicted_preemptions))


def job_of(workload: TraceWorkload) -> k8s.V1Job:
    """The batch/v1 Job of a trace workload: `pods` pods of one container requesting (and limited to) its requests,
    labelled with its LocalQueue and priority class, no grace period (the kwok node removes a deleted pod at once)."""
    labels = {QUEUE_LABEL: workload.local_queue}
    if workload.priority_class:
        labels[PRIORITY_LABEL] = workload.priority_class
    container = k8s.V1Container(
        name="main", image="registry.invalid/whatif:never-pulled", command=["sleep", "infinity"],
        resources=k8s.V1ResourceRequirements(requests=dict(workload.requests), limits=dict(workload.requests)))
    return k8s.V1Job(
        metadata=k8s.V1ObjectMeta(name=workload.name, namespace=workload.namespace, labels=labels),
        spec=k8s.V1JobSpec(
            parallelism=workload.pods, completions=workload.pods, backoff_limit=0,
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[container], restart_policy="Never",
                                   node_selector=dict(workload.node_selector) or None,
                                   termination_grace_period_seconds=0))))


class _Recorder:
    """Watches Workloads of the trace's namespaces and records admissions and preemptions in order."""

    def __init__(self, api: k8s.ApiClient, names: set[str], on_admitted: Callable[[str], None],
                 on_preempted: Callable[[str], None]):
        self.custom = k8s.CustomObjectsApi(api)
        self.names = names
        self.on_admitted = on_admitted
        self.on_preempted = on_preempted
        self.observed = Observed()
        self.reserved: dict[str, bool] = {}
        self.preempted: dict[str, str] = {}
        self.uids: dict[str, str] = {}
        self.evicted: dict[str, bool] = {}
        self.evaluated: set[str] = set()
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.lock = threading.RLock()
        self.error: Optional[BaseException] = None
        self.last_change = time.monotonic()

    def touch(self) -> None:
        """Note that the replay just changed something (the quiet window starts again)."""
        with self.lock:
            self.last_change = time.monotonic()

    def _owner(self, obj: Mapping[str, Any]) -> Optional[str]:
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("name") in self.names:
                return str(ref["name"])
        return None

    def observe(self, obj: Mapping[str, Any]) -> None:
        name = self._owner(obj)
        if name is None:
            return
        uid = (obj.get("metadata") or {}).get("uid")
        conditions = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
        with self.lock:
            self.last_change = time.monotonic()
            if uid:
                self.uids[str(uid)] = name
            if "QuotaReserved" in conditions:
                self.evaluated.add(name)
            self.evicted[name] = (conditions.get("Evicted") or {}).get("status") == "True"
            reserved = (conditions.get("QuotaReserved") or {}).get("status") == "True"
            if reserved and not self.reserved.get(name):
                self.observed.admissions.append(name)
                self.on_admitted(name)
            self.reserved[name] = reserved
            preempted = conditions.get("Preempted") or {}
            stamp = str(preempted.get("lastTransitionTime"))
            if preempted.get("status") == "True" and self.preempted.get(name) != stamp:
                self.preempted[name] = stamp
                match = _UID.search(str((conditions.get("Evicted") or {}).get("message", ""))
                                    or str(preempted.get("message", "")))
                by = self.uids.get(match.group(1), match.group(1)) if match else "?"
                self.observed.preemptions.append((name, by, str(preempted.get("reason"))))
                self.on_preempted(name)

    def run(self) -> None:
        try:
            listed = self.custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloads")
            for item in listed.get("items") or []:
                self.observe(item)
            version = (listed.get("metadata") or {}).get("resourceVersion")
            self.ready.set()
            while not self.stop.is_set():
                stream = k8s_watch.Watch()
                for event in stream.stream(self.custom.list_cluster_custom_object, KUEUE_GROUP, KUEUE_VERSION,
                                           "workloads", resource_version=version, timeout_seconds=5):
                    obj = event["object"]
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.observe(obj)
                    if self.stop.is_set():
                        stream.stop()
                        break
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
            self.error = exc


def replay(api: k8s.ApiClient, trace: Trace, quiet: float = 2.0, instant_timeout: float = 120.0,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Observed:
    """Replay `trace` on the cluster of `api` instant by instant (see the module doc) and return what was observed;
    every Job it created is deleted at the end.

    Time is compressed by waiting, not by a factor: the instants of the trace (submits, and the ends of the
    workloads Kueue admitted: admission instant + duration) are played in order, and the next one starts once the
    cluster has settled: no Workload changed for `quiet` seconds, every Workload created has been evaluated
    (a QuotaReserved condition) and no evicted one still holds its quota. The LocalQueues, ClusterQueues,
    priority classes and namespaces must exist.

    Raises:
        TimeoutError: an instant did not settle within `instant_timeout` seconds. kubernetes ApiException, or the
        watch's error.
    """
    batch = k8s.BatchV1Api(api)
    by_name = {w.name: w for w in trace.workloads}
    instants: list[tuple[float, int, str, str, int]] = []
    seq = [0]
    runs: dict[str, int] = {}
    now_trace = [0.0]

    def push(at: float, kind: str, name: str, run: int = 0) -> None:
        seq[0] += 1
        heapq.heappush(instants, (at, seq[0], kind, name, run))

    def admitted(name: str) -> None:  # under the recorder's lock
        runs[name] = runs.get(name, 0) + 1
        duration = by_name[name].duration_seconds
        if duration is not None:
            push(now_trace[0] + duration, "end", name, runs[name])

    def preempted(name: str) -> None:  # under the lock: its pending end is stale now
        runs[name] = runs.get(name, 0) + 1

    for w in trace.workloads:
        push(w.submit_seconds, "submit", w.name)
        if w.deleted_seconds is not None:
            push(w.deleted_seconds, "delete", w.name)
    recorder = _Recorder(api, set(by_name), admitted, preempted)
    watcher = threading.Thread(target=recorder.run, daemon=True)
    start = clock()
    watcher.start()
    created: list[TraceWorkload] = []
    deleted: set[str] = set()
    try:
        recorder.ready.wait(30)
        while True:
            with recorder.lock:
                if not instants or instants[0][0] > trace.horizon_seconds:
                    break
                at = instants[0][0]
                now_trace[0] = at
                actions = []
                while instants and instants[0][0] == at:
                    _, _, kind, name, run = heapq.heappop(instants)
                    if kind in ("submit", "delete") or (run == runs.get(name) and recorder.reserved.get(name)):
                        actions.append((kind, name))
            for kind, name in actions:
                workload = by_name[name]
                if kind == "submit":
                    batch.create_namespaced_job(workload.namespace, job_of(workload))
                    created.append(workload)
                elif name not in deleted:
                    deleted.add(name)
                    batch.delete_namespaced_job(name, workload.namespace, propagation_policy="Background")
            recorder.touch()
            _settle(recorder, {w.name for w in created} - deleted, quiet, instant_timeout, clock, sleep, at)
    finally:
        recorder.stop.set()
        for w in created:
            if w.name not in deleted:
                try:
                    batch.delete_namespaced_job(w.name, w.namespace, propagation_policy="Background")
                except k8s.ApiException as exc:
                    if exc.status != 404:
                        raise
        watcher.join(timeout=10)
    if recorder.error is not None:
        raise recorder.error
    recorder.observed.seconds = clock() - start
    return recorder.observed


def _settle(recorder: _Recorder, alive: set[str], quiet: float, timeout: float, clock: Callable[[], float],
            sleep: Callable[[float], None], at: float) -> None:
    """Wait until no Workload changed for `quiet` seconds, each of `alive` has been evaluated and no evicted
    Workload holds quota. Raises TimeoutError after `timeout` seconds, the watch's error at once."""
    deadline = clock() + timeout
    while True:
        if recorder.error is not None:
            raise recorder.error
        with recorder.lock:
            settled = (clock() - recorder.last_change >= quiet and alive <= set(recorder.evaluated)
                       and not any(recorder.evicted.get(n) and recorder.reserved.get(n) for n in alive))
        if settled:
            return
        if clock() > deadline:
            raise TimeoutError(f"the cluster did not settle within {timeout:.0f}s after trace instant {at:g}s")
        sleep(0.1)


def agreement_trace(setup: KueueSetup, queues: Sequence[tuple[str, str, str, WorkloadKind]], seed: int,
                    count: int = 8, step: float = 60.0, cpu: Sequence[int] = (1, 2),
                    pods: Sequence[int] = (1, 2)) -> Trace:
    """A seeded trace for an agreement run on `setup`: `count` workloads on `queues` ((namespace, LocalQueue,
    priority class, kind)), submitted on distinct multiples of `step` seconds, each of `pods` pods of `cpu` cores,
    running 1.5 to 3.5 steps (inference) or 2.5 to 6.5 (training) plus a few seconds, without checkpoints (a
    preempted workload runs its whole duration again). Its horizon is the simulation's last finish (every workload
    done). A seed whose simulation has two actions at one instant (a submit and an end, two ends: Kueue would see
    them one after the other) is replaced by the next sub-seed, so that instant order is never ambiguous."""
    for attempt in range(100):
        rng = random.Random(seed * 1000 + attempt)
        slots = sorted(rng.sample(range(count * 2), count))
        out = []
        for index, slot in enumerate(slots):
            namespace, queue, priority, kind = rng.choice(list(queues))
            span = rng.choice((1.5, 2.5, 3.5)) if kind == WorkloadKind.INFERENCE else rng.choice((2.5, 3.5, 4.5, 6.5))
            out.append(TraceWorkload(name=f"w{seed}-{index:02d}", submit_seconds=slot * step, namespace=namespace,
                                     local_queue=queue, kind=kind, pods=rng.choice(list(pods)),
                                     requests={"cpu": str(rng.choice(list(cpu)))},
                                     duration_seconds=span * step + rng.choice((7.0, 13.0, 19.0)),
                                     priority_class=priority))
        horizon = max(w.submit_seconds for w in out) + sum(w.duration_seconds or 0.0 for w in out) + step
        result = simulate(setup, Trace.build(out, horizon))
        instants = [w.submit_seconds for w in out] + [e.time for e in result.events if e.kind == "finished"]
        if len(set(instants)) == len(instants) and len(instants) == 2 * len(out):
            return Trace.build(out, max(instants) + 1.0, f"agreement trace, seed {seed} (attempt {attempt})", seed,
                               "cohorts.replay.agreement_trace")
    raise ValueError(f"no trace without simultaneous actions for seed {seed} in 100 attempts")
