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

import bisect
import heapq
import itertools
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from kueue_cohorts.policy.rules.vocabulary.objects import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL
from kueue_cohorts.whatif.kueue import KueueSetup, setup_from_objects
from kueue_cohorts.whatif.record import as_object
from kueue_cohorts.whatif.scheduler import Result, simulate
from kueue_cohorts.whatif.trace import Trace, TraceWorkload, WorkloadKind

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
_UID = re.compile(r"\(UID: ([^,)\s]+)")


@dataclass
class Observed:
    """What the real Kueue did: admissions (workload names, in the API server's order) and preemptions (victim,
    preemptor, reason), each with the ordinal of the trace instant whose actions caused it (`rounds`:
    admission_rounds, preemption_rounds), plus the wall-clock seconds the replay took."""

    admissions: list[str] = field(default_factory=list)
    preemptions: list[tuple[str, str, str]] = field(default_factory=list)
    admission_rounds: list[int] = field(default_factory=list)
    preemption_rounds: list[int] = field(default_factory=list)
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


def _first_difference(what: str, predicted: Sequence[tuple[int, Any]], observed: Sequence[tuple[int, Any]]
                      ) -> Optional[str]:
    """The first (round, item) pair that differs, in words; None when both are equal."""
    def shown(pair: tuple[int, Any]) -> str:
        return f"{pair[1]} (instant #{pair[0] + 1})"
    for index, (p, o) in enumerate(zip(predicted, observed, strict=False)):
        if p != o:
            return f"{what} #{index + 1}: the simulator says {shown(p)}, Kueue did {shown(o)}"
    if len(predicted) != len(observed):
        shorter, longer, who = ((predicted, observed, "Kueue") if len(predicted) < len(observed)
                                else (observed, predicted, "the simulator"))
        return f"{what} #{len(shorter) + 1}: only {who} has {shown(longer[len(shorter)])}"
    return None


def _canonical(items: Sequence[Any], rounds: Sequence[int]) -> list[tuple[int, Any]]:
    """`items` with their round, sorted within each round: what one instant's actions cause may reach the API server
    in any order (Kueue patches a cycle's admissions from goroutines, scheduler.go admit; it evicts a preemption's
    targets in parallel, preemption.go IssuePreemptions), the rounds themselves keep their order."""
    return sorted(zip(rounds, items, strict=True), key=lambda pair: (pair[0], str(pair[1])))


def predicted_rounds(result: Result) -> tuple[list[int], list[int]]:
    """The round (ordinal of the trace instant with an action: a submit, a finish, a deletion) of each admission and
    each preemption of a simulation, as `replay` numbers them: an admission Kueue makes one requeue batch after a
    finish belongs to that finish's instant."""
    instants = sorted({e.time for e in result.events if e.kind in ("submitted", "finished", "deleted")})

    def round_of(time: float) -> int:
        return bisect.bisect_right(instants, time) - 1
    return ([round_of(e.time) for e in result.events if e.kind == "admitted"],
            [round_of(e.time) for e in result.events if e.kind == "preempted"])


def agreement(result: Result, observed: Observed) -> Agreement:
    """Compare a simulation `result` with a replay's `observed`: the admissions in order, then the preemptions
    (victim, preemptor, reason), both compared instant by instant (the order within one instant's reactions is the
    API server's, see `_canonical`)."""
    admission_rounds, preemption_rounds = predicted_rounds(result)
    predicted_admissions = _canonical(result.admission_order(), admission_rounds)
    predicted_preemptions = _canonical(result.preemptions(), preemption_rounds)
    observed_admissions = _canonical(observed.admissions, observed.admission_rounds)
    observed_preemptions = _canonical(observed.preemptions, observed.preemption_rounds)
    first = (_first_difference("admission", predicted_admissions, observed_admissions)
             or _first_difference("preemption", predicted_preemptions, observed_preemptions))
    return Agreement(predicted_admissions == observed_admissions, predicted_preemptions == observed_preemptions,
                     first, len(predicted_admissions), len(predicted_preemptions))


def job_of(workload: TraceWorkload) -> k8s.V1Job:
    """The batch/v1 Job of a trace workload: `pods` pods of one container requesting (and limited to) its requests,
    labelled with its LocalQueue and priority class, no grace period (the kwok node removes a deleted pod at once)."""
    labels = {QUEUE_NAME_LABEL: workload.local_queue}
    if workload.priority_class:
        labels[PRIORITY_CLASS_LABEL] = workload.priority_class
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
        self.existing: set[str] = set()
        self.round = -1
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
            self.existing.add(name)  # its Workload exists (Kueue may park it without a condition: equivalence)
            self.evicted[name] = (conditions.get("Evicted") or {}).get("status") == "True"
            reserved = (conditions.get("QuotaReserved") or {}).get("status") == "True"
            if reserved and not self.reserved.get(name):
                self.observed.admissions.append(name)
                self.observed.admission_rounds.append(self.round)
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
                self.observed.preemption_rounds.append(self.round)
                self.on_preempted(name)

    def run(self) -> None:
        try:
            listed = as_object(self.custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloads"))
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
    cluster has settled: no Workload changed for `quiet` seconds, every Job created has its Workload and no evicted
    one still holds its quota. The LocalQueues, ClusterQueues,
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
                if not actions:
                    continue  # the end of a run that was preempted: nothing happens
                recorder.round += 1
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
    """Wait until no Workload changed for `quiet` seconds, each of `alive` has its Workload and no evicted
    Workload holds quota. Raises TimeoutError after `timeout` seconds, the watch's error at once."""
    deadline = clock() + timeout
    while True:
        if recorder.error is not None:
            raise recorder.error
        with recorder.lock:
            settled = (clock() - recorder.last_change >= quiet and alive <= set(recorder.existing)
                       and not any(recorder.evicted.get(n) and recorder.reserved.get(n) for n in alive))
        if settled:
            return
        if clock() > deadline:
            with recorder.lock:
                quiet_for = clock() - recorder.last_change
                unevaluated = sorted(alive - set(recorder.existing))
                holding = sorted(n for n in alive if recorder.evicted.get(n) and recorder.reserved.get(n))
            raise TimeoutError(f"the cluster did not settle within {timeout:.0f}s after trace instant {at:g}s: "
                               f"last Workload change {quiet_for:.1f}s ago, no Workload yet {unevaluated}, evicted "
                               f"but holding quota {holding}")
        sleep(0.1)


def agreement_trace(setup: KueueSetup, queues: Sequence[tuple[str, str, str, WorkloadKind]], seed: int,
                    count: int = 8, step: float = 60.0, cpu: Sequence[int] = (1, 2),
                    pods: Sequence[int] = (1, 2), min_gap: float = 6.0) -> Trace:
    """A seeded trace for an agreement run on `setup`: `count` workloads on `queues` ((namespace, LocalQueue,
    priority class, kind)), submitted on distinct multiples of `step` seconds, each of `pods` pods of `cpu` cores,
    running 1.5 to 3.5 steps (inference) or 2.5 to 6.5 (training) plus a few seconds, without checkpoints (a
    preempted workload runs its whole duration again). Its horizon is the simulation's last finish (every workload
    done). A seed whose simulation has two actions (submits, ends) less than `min_gap` seconds apart is replaced by
    the next sub-seed: the replay times an end from the instant that caused the admission, which the simulation may
    place a requeue batch (1 s) later, and two actions at one instant would reach Kueue one after the other."""
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
        instants = sorted([w.submit_seconds for w in out] + [e.time for e in result.events if e.kind == "finished"])
        if len(instants) == 2 * len(out) and all(b - a >= min_gap for a, b in itertools.pairwise(instants)):
            return Trace.build(out, max(instants) + 1.0, f"agreement trace, seed {seed} (attempt {attempt})", seed,
                               "kueue_cohorts.whatif.replay.agreement_trace")
    raise ValueError(f"no trace without simultaneous actions for seed {seed} in 100 attempts")

# --- the agreement layouts: the test's and the benchmark's own Kueue objects (cpu quotas: kwok pods need no device)

RECLAIM_WHILE_BORROWING = {"policy": "LowerPriority", "maxPriorityThreshold": 100}


def _flavor(name: str, labels: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    return {"apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": dict(labels)} if labels else {}}


def _cq(name: str, cohort: str, namespaces: list[str], flavors: list[tuple[str, int, int]],
        borrow_within: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """`flavors`: [(flavor, nominal cpu, borrowingLimit cpu)] in order; reclaimWithinCohort Any."""
    preemption: dict[str, Any] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    if borrow_within:
        preemption["borrowWithinCohort"] = dict(borrow_within)
    return {"apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {
                "cohortName": cohort,
                "namespaceSelector": {"matchExpressions": [{"key": NAME_LABEL, "operator": "In",
                                                            "values": namespaces}]},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": f, "resources": [{"name": "cpu", "nominalQuota": str(n), "borrowingLimit": str(b)}]}
                    for f, n, b in flavors]}],
                "preemption": preemption}}


def _lq(namespace: str, name: str, cq: str) -> dict[str, Any]:
    return {"apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq}}


def _wpc(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name}, "value": value}


Layout = tuple[list[dict[str, Any]], list[tuple[str, str, str, WorkloadKind]]]
"""Kueue objects, and the (namespace, LocalQueue, priority class, kind) an agreement trace submits to."""

_I, _T = WorkloadKind.INFERENCE, WorkloadKind.TRAINING
AGREEMENT_LAYOUTS: dict[str, Layout] = {
    # the guide's asymmetric cohort: inference owns 4 cpu and never borrows, training borrows all of it
    "asymmetric": ([
        _flavor("wi-default"),
        _cq("wi-inference-cq", "wi-asym", ["wi-serving"], [("wi-default", 4, 0)],
            borrow_within=RECLAIM_WHILE_BORROWING),
        _cq("wi-training-cq", "wi-asym", ["wi-training"], [("wi-default", 0, 4)]),
        _lq("wi-serving", "inference", "wi-inference-cq"), _lq("wi-training", "training", "wi-training-cq"),
        _wpc("wi-inference", 1000), _wpc("wi-training", 10)],
        [("wi-serving", "inference", "wi-inference", _I), ("wi-training", "training", "wi-training", _T)]),
    # the symmetric floors: three tenants, 2 cpu each, borrowing the rest of the pool
    "symmetric": ([
        _flavor("wi-default"),
        *[_cq(f"wi-{t}-cq", "wi-sym", [f"wi-{t}"], [("wi-default", 2, 4)]) for t in "abc"],
        *[_lq(f"wi-{t}", f"{t}-lq", f"wi-{t}-cq") for t in "abc"],
        _wpc("wi-research", 100)],
        [(f"wi-{t}", f"{t}-lq", "wi-research", _T) for t in "abc"]),
    # two flavors, tried in order: inference owns 2 cpu of each, training borrows either
    "two-flavors": ([
        _flavor("wi-one", {"wi-flavor": "one"}), _flavor("wi-two", {"wi-flavor": "two"}),
        _cq("wi-inference2-cq", "wi-mixed", ["wi-serving2"], [("wi-one", 2, 0), ("wi-two", 2, 0)],
            borrow_within=RECLAIM_WHILE_BORROWING),
        _cq("wi-training2-cq", "wi-mixed", ["wi-training2"], [("wi-one", 0, 2), ("wi-two", 0, 2)]),
        _lq("wi-serving2", "inference", "wi-inference2-cq"), _lq("wi-training2", "training", "wi-training2-cq"),
        _wpc("wi-inference", 1000), _wpc("wi-training", 10)],
        [("wi-serving2", "inference", "wi-inference", _I), ("wi-training2", "training", "wi-training", _T)]),
}
"""The layouts the agreement check replays (tests/e2e/test_28_whatif_agrees_with_kueue.py, benchmarks/
whatif_agreement.py): both cohort layouts of the guide and two flavors, in cohorts of their own (`wi-*`)."""

PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
           "WorkloadPriorityClass": "workloadpriorityclasses"}


def _exists(custom: k8s.CustomObjectsApi, plural: str, namespace: Optional[str], name: str) -> bool:
    try:
        if namespace:
            custom.get_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, plural, name)
        else:
            custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, plural, name)
    except k8s.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.25)


def apply_objects(api: k8s.ApiClient, objects: Sequence[Mapping[str, Any]], timeout: float = 60.0) -> None:
    """Create the Kueue `objects` (and the namespaces of their LocalQueues) and wait until every ClusterQueue is
    Active. Raises kubernetes ApiException, TimeoutError."""
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    for obj in objects:
        plural, ns = PLURALS[str(obj["kind"])], obj["metadata"].get("namespace")
        if ns:
            try:
                core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns)))
            except k8s.ApiException as exc:
                if exc.status != 409:
                    raise
            custom.create_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, ns, plural, dict(obj))
        else:
            custom.create_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, plural, dict(obj))

    def active(name: str) -> Callable[[], bool]:
        def check() -> bool:
            cq = as_object(custom.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name))
            return any(c.get("type") == "Active" and c.get("status") == "True"
                       for c in (cq.get("status") or {}).get("conditions") or [])
        return check
    for obj in objects:
        if obj["kind"] == "ClusterQueue":
            name = str(obj["metadata"]["name"])
            _until(active(name), timeout, f"ClusterQueue {name} to be active")


def delete_objects(api: k8s.ApiClient, objects: Sequence[Mapping[str, Any]], timeout: float = 60.0) -> None:
    """Delete the Kueue `objects` (last first) and wait until they are gone (Kueue's finalizers: a flavor waits for
    its ClusterQueues, a ClusterQueue for its Workloads). Raises kubernetes ApiException, TimeoutError."""
    custom = k8s.CustomObjectsApi(api)
    for obj in reversed(objects):
        plural, ns, name = PLURALS[str(obj["kind"])], obj["metadata"].get("namespace"), obj["metadata"]["name"]
        try:
            if ns:
                custom.delete_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, ns, plural, name)
            else:
                custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, plural, name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
    def gone(plural: str, namespace: Optional[str], name: str) -> Callable[[], bool]:
        return lambda: not _exists(custom, plural, namespace, name)
    for obj in objects:
        plural, ns, name = PLURALS[str(obj["kind"])], obj["metadata"].get("namespace"), obj["metadata"]["name"]
        _until(gone(plural, ns, name), timeout, f"{obj['kind']} {name} to be deleted")


@dataclass(frozen=True)
class AgreementRun:
    """One agreement run: the layout, the seed, the trace's size, the agreement and the replay's seconds."""

    layout: str
    seed: int
    workloads: int
    agreement: Agreement
    replay_seconds: float


def run_agreement(api: k8s.ApiClient, layout: str, seed: int, count: int = 6, quiet: float = 1.5) -> AgreementRun:
    """Create `layout`'s objects (AGREEMENT_LAYOUTS), replay a seeded agreement trace of `count` workloads on them,
    compare with the simulation of the same objects, delete the Jobs and the objects again. Raises kubernetes
    ApiException, TimeoutError."""
    objects, queues = AGREEMENT_LAYOUTS[layout]
    setup = setup_from_objects(objects)
    demand = agreement_trace(setup, queues, seed, count=count)
    predicted = simulate(setup, demand)
    apply_objects(api, objects)
    try:
        observed = replay(api, demand, quiet=quiet)
        custom = k8s.CustomObjectsApi(api)

        def empty(namespace: str) -> Callable[[], bool]:
            def check() -> bool:
                listed = as_object(custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace,
                                                                        "workloads"))
                return not listed.get("items")
            return check
        for ns in {w.namespace for w in demand.workloads}:
            _until(empty(ns), 60, f"Workloads in {ns} to be gone")
    finally:
        delete_objects(api, objects)
    return AgreementRun(layout, seed, len(demand.workloads), agreement(predicted, observed), observed.seconds)
