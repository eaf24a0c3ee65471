"""The simulator: Kueue's queues and scheduling cycles driven by a demand trace, event by event.

What each part follows (kubernetes-sigs/kueue v0.19.2):
- queues, pkg/cache/queue/cluster_queue.go: one heap per ClusterQueue ordered by `baseCompareFunc` (a sticky
  preemptor first in BestEffortFIFO, then priority, then creation time, then the name); `RequeueIfNotPresent` and
  `requeueIfNotPresent` (StrictFIFO puts every head back at once, so a head that does not fit blocks the queue;
  BestEffortFIFO parks it as inadmissible, except after a skip or while its preemptions are pending);
  `pw.set` (the preemptor stays sticky until admitted);
- requeueing, pkg/controller/core/workload_controller.go `Update`/`Delete` and pkg/cache/queue/manager.go
  `QueueAssociatedInadmissibleWorkloadsAfter`: when a workload finishes or its quota is released after an eviction,
  the inadmissible workloads of every ClusterQueue in its cohort tree go back to their heaps one batch period
  (REQUEUE_BATCH_SECONDS) later (pkg/cache/queue/inadmissible_workloads.go, a delaying queue); the released
  workload itself is requeued at once;
- the cycle, pkg/scheduler/scheduler.go `schedule`: `Heads` (one head per active ClusterQueue), `nominate` (flavor
  assignment on the snapshot, `getInitialAssignments`: preemption targets when the mode is Preempt),
  `makeClassicalIterator` (not borrowing before borrowing, higher priority, older first), `processEntry` (NoFit;
  Preempt without candidates, then `reserveCapacityForUnreclaimablePreempt` unless reclaimWithinCohort is Any;
  overlapping targets and "no longer fits" skips; `fits` with the cycle's victims removed; `issuePreemptions`;
  `admit`), `requeueAndUpdate`;
- evictions, pkg/scheduler/preemption/preemption.go `IssuePreemptions` (a target already evicted is not evicted
  again) and pkg/controller/jobframework/reconciler.go (the quota is released once the job has no active pod:
  batch/v1 counts a terminating pod as inactive, so at once here, `release_seconds` later if set).

Time: events (submissions, finishes, quota releases) are applied in time order; after the events of one instant,
scheduling cycles run until one changes nothing (Kueue runs them back to back while there are heads). A preempted
workload is requeued with its creation time, and resumes from its last checkpoint. The preemptor's pods start
only once its victims' pods have let go of the devices (`terminationSeconds` of each victim): the start delay.

Deterministic: every tie Kueue breaks by UID (random on a cluster) is broken by the workload name here.
"""
from __future__ import annotations

import gc
import heapq
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

from kueue_cohorts.whatif.cluster import Cluster, Workload, workload_of
from kueue_cohorts.whatif.flavors import Assignment, Mode, assign, flavor_matches
from kueue_cohorts.whatif.kueue import KueueSetup
from kueue_cohorts.whatif.preemption import Preemptor, Target
from kueue_cohorts.whatif.quota import available
from kueue_cohorts.whatif.trace import Trace

# requeue reasons (pkg/cache/queue RequeueReason)
NO_FIT = "NoFit"
NO_CANDIDATES = "PreemptionNoCandidates"
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
PENDING_PREEMPTION = "PendingPreemption"

RUNNING_AT_START = "RunningAtStart"
"""The `reason` of the `admitted` event of a workload the trace says was running at its start."""

REQUEUE_BATCH_SECONDS = 1.0
"""How long after a workload finishes (or its quota is released) the inadmissible workloads of its cohort tree are
requeued (pkg/cache/queue/inadmissible_workloads.go requeueBatchPeriod, v0.19.2)."""

MAX_CYCLES_PER_INSTANT = 100_000
"""A guard: more cycles at one instant than this is a bug of the simulator (RuntimeError), never a hang."""


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened to a workload, at `time` seconds from the start of the trace.

    kind: submitted | admitted (quota reserved) | started (its pods run) | preempted (evicted: `by` the preemptor,
    `reason` InClusterQueue, InCohortReclamation or InCohortReclaimWhileBorrowing) | released (an evicted workload's
    quota given back; it is pending again) | finished (ran its duration, or deleted while admitted) | deleted
    (deleted while pending, never to run) | unqueued (no such LocalQueue). cq: its ClusterQueue.
    flavors: resource -> flavor (admitted). lost: seconds of work lost (preempted).
    """

    time: float
    kind: str
    workload: str
    cq: Optional[str] = None
    flavors: tuple[tuple[str, str], ...] = ()
    by: Optional[str] = None
    reason: Optional[str] = None
    lost: float = 0.0


@dataclass
class Result:
    """What a simulation produced: every event in order, the workloads (name -> final state), the usage of every
    ClusterQueue over time (`usage[cq]`: list of (time, {(flavor, resource): amount}) after each change), the
    setup and the trace's horizon."""

    setup: KueueSetup
    trace: Trace
    events: list[Event] = field(default_factory=list)
    workloads: dict[str, Workload] = field(default_factory=dict)
    usage: dict[str, list[tuple[float, dict[tuple[str, str], int]]]] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)
    """Workload name -> why it was last refused admission, in words (`Simulation.why_not`), for every workload
    pending at the horizon or never admitted: its own last refusal, its equivalence class's (Kueue parks the class
    with it), the StrictFIFO head that blocks its queue, or that it never reached its queue's head."""

    def admission_order(self) -> list[str]:
        """Workload names in the order Kueue reserved their quota (a workload admitted again appears again)."""
        return [e.workload for e in self.events if e.kind == "admitted"]

    def preemptions(self) -> list[tuple[str, str, str]]:
        """(victim, preemptor, reason) in order."""
        return [(e.workload, e.by or "", e.reason or "") for e in self.events if e.kind == "preempted"]


def why_not(reason: str, wl: Workload, strategy: str) -> str:
    """The flavor assigner's NoFit reason (`whatif.flavors.assign`) in a reviewer's words: larger than the queue
    can ever hold, no flavor its pods may use, a resource the queue does not cover, or the quota in use; the
    assigner's own words follow in parentheses."""
    if "exceeds the maximum capacity" in reason:
        what = ("larger than its ClusterQueue can ever hold (nominalQuota plus what it may borrow), "
                f"{wl.count} pod(s)")
    elif "unavailable in ClusterQueue" in reason:
        what = "requests a resource its ClusterQueue does not cover"
    elif reason and "quota" not in reason:
        what = "no flavor fits its pods (nodeSelector, tolerations)"
    else:
        what = "the quota it needs was in use" + (" and its StrictFIFO queue waits for it" if strategy ==
                                                  "StrictFIFO" else "")
    return f"{what} ({reason})" if reason else what


def shape(wl: Workload) -> tuple[object, ...]:
    """The workload's scheduling equivalence class, as cached on it (`whatif.cluster.scheduling_hash`)."""
    return wl.equivalence


_HeapItem = tuple[int, float, str, int]
"""(-priority, creation time, name, push number): baseCompareFunc's order; the push number tells a stale copy."""


class _Queue:
    """One ClusterQueue's pending workloads (pkg/cache/queue/cluster_queue.go): the heap, the inadmissible ones, the
    sticky preemptor and the equivalence classes bulk-moved to inadmissible (SchedulingEquivalenceHashing).

    Kept per equivalence class, so that what Kueue does one workload at a time costs one step per class here:
    every pending workload is in its class's heap (`members`: name -> (push number, workload)); a class in
    `bulk_moved` is inadmissible as a whole (cluster_queue.go handleInadmissibleHash moves every heap workload of
    the class, and pushOrUpdate sends a new one of the class straight there, l.443), the others are the heap.
    In BestEffortFIFO a workload is inadmissible only through NoFit or PreemptionNoCandidates, which bulk-move its
    class, so "inadmissible" and "its class was bulk-moved" are the same set; StrictFIFO never parks. `_tops`
    always holds an entry for the best pending workload of every class in the heap (entries that are not, or no
    longer, their class's best are skipped when popped), so `pop` is Kueue's heap pop: the least (-priority,
    creation, name) of the heap's workloads. Kueue's handleInadmissibleHash walks the whole heap once per NoFit
    (l.722); a week of 10,000 workloads with a long backlog made that walk, with the key recomputed for every
    workload it passed, 60 % of the simulation (issue 41).
    """

    def __init__(self, strategy: str):
        self.strategy = strategy
        self._classes: dict[tuple[object, ...], list[_HeapItem]] = {}
        self._tops: list[tuple[_HeapItem, tuple[object, ...]]] = []
        self.members: dict[str, tuple[int, Workload]] = {}
        self.sticky: Optional[str] = None
        self.bulk_moved: set[tuple[object, ...]] = set()
        self._seq = 0

    def __len__(self) -> int:
        return len(self.members)

    def push(self, wl: Workload) -> None:
        """PushOrUpdate of a new or requeued workload: to the heap, or straight to the inadmissible ones when its
        equivalence class was bulk-moved there (BestEffortFIFO)."""
        self._heap_push(wl)

    def _valid_top(self, key: tuple[object, ...]) -> Optional[_HeapItem]:
        """The class's best entry still pending (stale copies dropped), or None."""
        heap = self._classes[key]
        while heap:
            item = heap[0]
            member = self.members.get(item[2])
            if member is not None and member[0] == item[3]:
                return item
            heapq.heappop(heap)
        return None

    def _heap_push(self, wl: Workload) -> None:
        self._seq += 1
        self.members[wl.name] = (self._seq, wl)
        key = wl.equivalence
        item = (-wl.priority, wl.created, wl.name, self._seq)
        heap = self._classes.setdefault(key, [])
        heapq.heappush(heap, item)
        if key not in self.bulk_moved:
            heapq.heappush(self._tops, (item, key))

    def inadmissible(self) -> list[Workload]:
        """The workloads parked as inadmissible (their class bulk-moved), in no particular order."""
        return [wl for _, wl in self.members.values() if wl.equivalence in self.bulk_moved]

    def pop(self) -> Optional[Workload]:
        """Pop the head: the sticky preemptor if pending, else by priority, creation time, name."""
        if self.sticky is not None and self.sticky in self.members:
            wl = self.members[self.sticky][1]
            if wl.equivalence not in self.bulk_moved:
                del self.members[self.sticky]
                self._refresh(wl.equivalence)
                return wl
        while self._tops:
            item, key = heapq.heappop(self._tops)
            if key in self.bulk_moved or self._valid_top(key) is not item:
                continue
            heapq.heappop(self._classes[key])
            wl = self.members.pop(item[2])[1]
            self._refresh(key)
            return wl
        return None

    def _refresh(self, key: tuple[object, ...]) -> None:
        """After a class lost its best pending workload: an entry in `_tops` for its new best one (a class in the
        heap always has one for its best)."""
        if key in self.bulk_moved:
            return
        top = self._valid_top(key)
        if top is not None:
            heapq.heappush(self._tops, (top, key))

    def requeue(self, wl: Workload, reason: str) -> bool:
        """RequeueIfNotPresent; True when it went to the inadmissible set (the cycle made progress)."""
        if reason == PENDING_PREEMPTION:
            self.sticky = wl.name if self.strategy == "BestEffortFIFO" else None
        immediate = True if self.strategy == "StrictFIFO" else reason in (FAILED_AFTER_NOMINATION, PENDING_PREEMPTION)
        if immediate:
            self._heap_push(wl)
            return False
        if reason in (NO_FIT, NO_CANDIDATES):
            self.bulk_moved.add(wl.equivalence)
        self._heap_push(wl)
        return True

    def remove(self, name: str) -> None:
        """Delete: the workload leaves the heap or the inadmissible set; a sticky preemptor is forgotten."""
        member = self.members.pop(name, None)
        if member is not None:
            self._refresh(member[1].equivalence)
        if self.sticky == name:
            self.sticky = None

    def retry_inadmissible(self) -> None:
        """queueInadmissibleWorkloads: every inadmissible workload back to the heap; the bulk-moved classes are
        forgotten (pkg/cache/queue/inadmissible_workloads.go l.169)."""
        parked, self.bulk_moved = self.bulk_moved, set()
        for key in parked:
            self._refresh(key)


@dataclass
class _Entry:
    wl: Workload
    assignment: Assignment
    targets: list[Target]


class Simulation:
    """One run of a trace against a KueueSetup. `run()` returns the Result.

    release_seconds: how long after an eviction Kueue releases the victim's quota (the job controller's reaction;
    default 0: a batch Job's terminating pods are inactive at once).
    """

    def __init__(self, setup: KueueSetup, trace: Trace, release_seconds: float = 0.0):
        self.setup = setup
        self.trace = trace
        self.release_seconds = release_seconds
        self.cluster = Cluster(setup)
        self.queues = {name: _Queue(cq.queueing_strategy) for name, cq in setup.cluster_queues.items()}
        self.result = Result(setup, trace, usage={name: [(0.0, {})] for name in setup.cluster_queues})
        self._events: list[tuple[float, int, str, Workload, int]] = []
        self._seq = 0
        self._requeue_pending: set[str] = set()
        self._class_refusals: dict[tuple[str, tuple[object, ...]], str] = {}
        self._blockers: dict[str, Workload] = {}
        self._ever_admitted: set[str] = set()
        self.now = 0.0

    # -- events --------------------------------------------------------------------------------------------------
    def _push(self, time: float, kind: str, wl: Workload, token: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._events, (time, self._seq, kind, wl, token))

    def _record(self, kind: str, wl: Workload, flavors: tuple[tuple[str, str], ...] = (), by: Optional[str] = None,
                reason: Optional[str] = None, lost: float = 0.0) -> None:
        self.result.events.append(Event(self.now, kind, wl.name, wl.cq, flavors, by, reason, lost))

    def _record_usage(self, cq: str) -> None:
        series = self.result.usage[cq]
        snapshot = dict(self.cluster.cq(cq).usage)
        if series and series[-1][0] == self.now:
            series[-1] = (self.now, snapshot)
        else:
            series.append((self.now, snapshot))

    def _tree_of(self, cq: str) -> tuple[str, list[str]]:
        """The root of `cq`'s cohort tree (or `cq` alone) and its ClusterQueues."""
        node = self.cluster.cq(cq)
        if node.parent is None:
            return cq, [cq]
        root = node.parent.root()
        return f"cohort:{root.name}", [c.name for c in root.subtree_cqs()]

    def _retry_cohort(self, wl: Workload) -> None:
        """QueueAssociatedInadmissibleWorkloadsAfter: the inadmissible workloads of every ClusterQueue of `wl`'s
        cohort tree go back to their heaps REQUEUE_BATCH_SECONDS later (the requeuer's delaying queue: a second
        notice before then changes nothing)."""
        assert wl.cq is not None
        root, _ = self._tree_of(wl.cq)
        if root not in self._requeue_pending:
            self._requeue_pending.add(root)
            self._push(self.now + REQUEUE_BATCH_SECONDS, "requeue", wl)

    def _requeue(self, wl: Workload) -> None:
        assert wl.cq is not None
        root, names = self._tree_of(wl.cq)
        self._requeue_pending.discard(root)
        for name in names:
            self.queues[name].retry_inadmissible()

    def _submit(self, wl: Workload) -> None:
        self._record("submitted", wl)
        if wl.cq is None or wl.cq not in self.queues:
            self._record("unqueued", wl)
            return
        self.queues[wl.cq].push(wl)

    def _finish(self, wl: Workload, token: int) -> None:
        if token != wl.run or wl.finished or wl.reserved_at is None or wl.evicted:
            return  # a stale finish of an earlier run
        assert wl.cq is not None
        wl.finished = True
        self.cluster.remove(wl)
        wl.reserved_at = None
        self._record("finished", wl)
        self._record_usage(wl.cq)
        self._retry_cohort(wl)

    def _delete(self, wl: Workload) -> None:
        """The workload is deleted: out of its queue when pending (workload_controller.go Delete: the queues forget
        it, a sticky preemptor included), its quota given back when admitted (as a finish)."""
        if wl.finished or wl.cq is None or wl.cq not in self.queues:
            return
        if wl.reserved_at is not None and not wl.evicted:
            self._finish(wl, wl.run)
            return
        wl.finished = True
        self.queues[wl.cq].remove(wl.name)
        self._record("deleted", wl)

    def _release(self, wl: Workload) -> None:
        """The victim's job is no longer active: its quota goes back and it is pending again (Requeued), unless it
        was deleted meanwhile."""
        assert wl.cq is not None
        self.cluster.remove(wl)
        wl.evicted = False
        wl.reserved_at = None
        wl.flavors, wl.usage = {}, {}
        self._record("released", wl)
        self._record_usage(wl.cq)
        self._retry_cohort(wl)
        if wl.finished:
            return
        self.queues[wl.cq].push(wl)

    # -- admission and eviction ----------------------------------------------------------------------------------
    def _admit(self, entry: _Entry) -> None:
        wl = entry.wl
        assert wl.cq is not None
        wl.flavors = {r: c.flavor for r, c in entry.assignment.choices.items()}
        wl.usage = dict(entry.assignment.usage)
        wl.reserved_at = self.now
        wl.run += 1
        self._ever_admitted.add(wl.name)
        if self._blockers.get(wl.cq) is wl:
            del self._blockers[wl.cq]
        self.cluster.add(wl)
        queue = self.queues[wl.cq]
        if queue.sticky == wl.name:
            queue.sticky = None
        self._record("admitted", wl, flavors=tuple(sorted(wl.flavors.items())))
        released = [v.evicted_at + v.spec.termination_seconds for v in wl.victims if v.evicted_at is not None]
        start = max([self.now, *released])
        wl.victims = ()
        wl.started_at = start
        self._push(start, "start", wl, wl.run)
        if wl.spec.duration_seconds is not None:
            remaining = max(0.0, wl.spec.duration_seconds - wl.saved)
            self._push(start + remaining, "finish", wl, wl.run)

    def _evict(self, victim: Workload, preemptor: Workload, reason: str) -> None:
        victim.evicted = True
        victim.evicted_at = self.now
        lost = 0.0
        if victim.started_at is not None and victim.started_at <= self.now:
            progress = self.now - victim.started_at
            reached = victim.saved + progress
            spec = victim.spec
            if spec.checkpoint_on_termination:
                saved = reached
            elif spec.checkpoint_interval_seconds:
                saved = max(victim.saved, math.floor(reached / spec.checkpoint_interval_seconds)
                            * spec.checkpoint_interval_seconds)
            else:
                saved = 0.0
            if spec.duration_seconds is not None:
                saved = min(saved, spec.duration_seconds)
            lost = reached - saved if spec.duration_seconds is not None or spec.checkpoint_interval_seconds else 0.0
            victim.saved = saved
        victim.started_at = None
        victim.run += 1  # its pending finish is stale now
        self._record("preempted", victim, by=preemptor.name, reason=reason, lost=lost)
        self._push(self.now + self.release_seconds, "release", victim)

    # -- one scheduling cycle ------------------------------------------------------------------------------------
    def _cycle(self) -> bool:
        """One `schedule` call; True when it changed anything (an admission, an eviction, a head parked)."""
        heads = []
        for name in sorted(self.queues):
            if not self.setup.cluster_queues[name].active:
                continue
            head = self.queues[name].pop()
            if head is not None:
                heads.append(head)
        if not heads:
            return False
        saved = self.cluster.tree.copy_usage()
        oracle = Preemptor(self.cluster, self.now)
        entries = []
        for wl in heads:
            assignment = assign(self.cluster, oracle, wl)
            targets: list[Target] = []
            if assignment.mode == Mode.PREEMPT:
                assert wl.cq is not None
                targets = oracle.targets(wl, wl.cq, assignment.needs_preemption(), assignment.usage)
            entries.append(_Entry(wl, assignment, targets))
        entries.sort(key=lambda e: (e.assignment.borrowing, -e.wl.priority, e.wl.created, e.wl.name))
        changed = False
        preempted: dict[str, Workload] = {}
        admitted: list[_Entry] = []
        requeue: list[tuple[Workload, str]] = []
        evictions: list[tuple[Workload, Workload, str]] = []
        for entry in entries:
            wl, assignment, targets = entry.wl, entry.assignment, entry.targets
            assert wl.cq is not None
            if assignment.mode == Mode.NO_FIT:
                self._refused(wl, why_not(assignment.reason, wl, self.setup.cluster_queues[wl.cq].queueing_strategy))
                requeue.append((wl, NO_FIT))
                continue
            if assignment.mode == Mode.PREEMPT and not targets:
                self._refused(wl, "needs preemption, and nothing it may preempt makes room ("
                              + (assignment.reason or "no candidates") + ")")
                requeue.append((wl, NO_CANDIDATES))
                if self.setup.cluster_queues[wl.cq].preemption.reclaim_within_cohort != "Any":
                    self.cluster.add_usage(wl.cq, self._to_reserve(entry))
                continue
            if any(t.workload.name in preempted for t in targets):
                requeue.append((wl, FAILED_AFTER_NOMINATION))
                continue
            if not self._fits(entry, preempted):
                requeue.append((wl, FAILED_AFTER_NOMINATION))
                continue
            for t in targets:
                preempted[t.workload.name] = t.workload
            self.cluster.add_usage(wl.cq, assignment.usage)
            if assignment.mode == Mode.PREEMPT:
                wl.victims = tuple(t.workload for t in targets)
                for t in targets:
                    if not t.workload.evicted:
                        evictions.append((t.workload, wl, t.reason))
                requeue.append((wl, PENDING_PREEMPTION))
                continue
            admitted.append(entry)
        self.cluster.tree.restore_usage(saved)
        for entry in admitted:
            self._admit(entry)
            assert entry.wl.cq is not None
            self._record_usage(entry.wl.cq)
            changed = True
        for victim, preemptor, reason in evictions:
            self._evict(victim, preemptor, reason)
            changed = True
        for wl, reason in requeue:
            assert wl.cq is not None
            changed = self.queues[wl.cq].requeue(wl, reason) or changed
        return changed

    def _refused(self, wl: Workload, why: str) -> None:
        """Remember why `wl` (and its equivalence class in its ClusterQueue) was refused; in a StrictFIFO queue it
        now blocks every workload behind it."""
        assert wl.cq is not None
        self.result.refusals[wl.name] = why
        self._class_refusals[(wl.cq, wl.equivalence)] = why
        if self.setup.cluster_queues[wl.cq].queueing_strategy == "StrictFIFO":
            self._blockers[wl.cq] = wl

    def _settle_refusals(self) -> None:
        """At the horizon: a reason for every workload never admitted (see Result.refusals); none for the ones
        admitted and not pending."""
        for name, wl in self.result.workloads.items():
            pending = wl.reserved_at is None and not wl.finished
            if wl.cq is None:
                self.result.refusals[name] = ("its LocalQueue or WorkloadPriorityClass does not exist in this "
                                              "configuration")
                continue
            if not pending and name in self._ever_admitted:
                self.result.refusals.pop(name, None)
                continue
            if wl.finished and name not in self._ever_admitted:
                self.result.refusals[name] = "deleted before it was admitted" + (
                    f" (last refused: {self.result.refusals[name]})" if name in self.result.refusals else "")
                continue
            if name in self.result.refusals:
                continue
            blocker = self._blockers.get(wl.cq)
            if blocker is not None and blocker is not wl:
                self.result.refusals[name] = (f"blocked behind the head of its StrictFIFO queue, `{blocker.name}` "
                                              f"(priority {blocker.priority}), which does not fit")
            elif (wl.cq, wl.equivalence) in self._class_refusals:
                self.result.refusals[name] = self._class_refusals[(wl.cq, wl.equivalence)]
            else:
                self.result.refusals[name] = "never reached the head of its queue before the end of the trace"

    def _fits(self, entry: _Entry, preempted: dict[str, Workload]) -> bool:
        """scheduler.go `fits`: the assignment's usage fits with this cycle's victims and its own targets removed."""
        removed = {**preempted, **{t.workload.name: t.workload for t in entry.targets}}
        saved = self.cluster.tree.copy_usage()
        for wl in removed.values():
            assert wl.cq is not None
            self.cluster.remove_usage(wl.cq, wl.usage)
        assert entry.wl.cq is not None
        cq = self.cluster.cq(entry.wl.cq)
        from_quota = all(available(cq, fr) >= value for fr, value in entry.assignment.usage.items())
        self.cluster.tree.restore_usage(saved)
        return from_quota


    def _to_reserve(self, entry: _Entry) -> dict[tuple[str, str], int]:
        """quotaResourcesToReserve for a Preempt entry without candidates."""
        wl = entry.wl
        assert wl.cq is not None
        cq = self.cluster.cq(wl.cq)
        out = {}
        for fr, value in entry.assignment.usage.items():
            quota = cq.quota(fr)
            used = cq.usage.get(fr, 0)
            if entry.assignment.borrowing > 0:
                out[fr] = value if quota.borrowing_limit is None else min(
                    value, quota.nominal + quota.borrowing_limit - used)
            else:
                out[fr] = max(0, min(value, quota.nominal - used))
        return out

    # -- the loop ------------------------------------------------------------------------------------------------
    def run(self) -> Result:
        """Replay the trace to its horizon and return the Result. Raises RuntimeError if one instant needs more
        than MAX_CYCLES_PER_INSTANT cycles (a simulator bug)."""
        for spec in self.trace.workloads:
            wl = workload_of(spec, self.setup)
            self.result.workloads[wl.name] = wl
            if spec.running_since_seconds is not None:
                self._place_running(wl)
            else:
                self._push(spec.submit_seconds, "submit", wl)
            if spec.deleted_seconds is not None:
                self._push(spec.deleted_seconds, "delete", wl)
        horizon = self.trace.horizon_seconds
        while self._events and self._events[0][0] <= horizon:
            self.now = self._events[0][0]
            cycles = 0
            while True:
                while self._events and self._events[0][0] == self.now:
                    _, _, kind, wl, token = heapq.heappop(self._events)
                    self._apply(kind, wl, token)
                if not self._cycle():
                    if not (self._events and self._events[0][0] == self.now):
                        break
                cycles += 1
                if cycles > MAX_CYCLES_PER_INSTANT:
                    raise RuntimeError(f"the simulation did not settle at t={self.now}s")
        self.now = horizon
        self._settle_refusals()
        return self.result

    def _running_usage(self, wl: Workload) -> tuple[dict[str, str], dict[tuple[str, str], int]]:
        """The flavors and usage of a workload running at the start: per resource group of its ClusterQueue, the
        flavor its line names for a resource of the group, else the group's first flavor its pods may use
        (`flavor_matches`); resources no group covers are left out (Kueue would not have admitted them)."""
        assert wl.cq is not None
        cq = self.setup.cluster_queues[wl.cq]
        totals = {r: v * wl.count for r, v in wl.requests.items()}
        if cq.group_of("pods") is not None:
            totals["pods"] = wl.count
        flavors: dict[str, str] = {}
        usage: dict[tuple[str, str], int] = {}
        for resource, value in sorted(totals.items()):
            group = cq.group_of(resource)
            if group is None:
                continue
            named = [wl.spec.flavors[r] for r in group.covered if r in wl.spec.flavors]
            fitting = [f for f in group.flavors if flavor_matches(self.setup.flavors[f], wl) is None]
            flavor = named[0] if named else (fitting or list(group.flavors))[0]
            flavors[resource] = flavor
            usage[(flavor, resource)] = usage.get((flavor, resource), 0) + value
        return flavors, usage

    def _place_running(self, wl: Workload) -> None:
        """A workload running when the trace starts: admitted at time 0 in its flavors whatever the quota (Kueue
        keeps admitted workloads when a ClusterQueue's quota is lowered: pkg/cache/scheduler/cache.go
        UpdateClusterQueue, v0.19.2, kueue#5176), started at runningSinceSeconds (its work so far counts), finishing
        durationSeconds after that start. One whose LocalQueue or priority class does not exist is unqueued."""
        spec = wl.spec
        assert spec.running_since_seconds is not None
        self._record("submitted", wl)
        if wl.cq is None or wl.cq not in self.queues:
            self._record("unqueued", wl)
            return
        wl.flavors, wl.usage = self._running_usage(wl)
        wl.reserved_at = spec.running_since_seconds
        wl.run += 1
        self._ever_admitted.add(wl.name)
        wl.started_at = spec.running_since_seconds
        self.cluster.add(wl)
        self._record("admitted", wl, flavors=tuple(sorted(wl.flavors.items())), reason=RUNNING_AT_START)
        self._record("started", wl)
        self._record_usage(wl.cq)
        if spec.duration_seconds is not None:
            self._push(spec.running_since_seconds + spec.duration_seconds, "finish", wl, wl.run)

    def _apply(self, kind: str, wl: Workload, token: int) -> None:
        if kind == "submit":
            self._submit(wl)
        elif kind == "finish":
            self._finish(wl, token)
        elif kind == "release":
            self._release(wl)
        elif kind == "requeue":
            self._requeue(wl)
        elif kind == "delete":
            self._delete(wl)
        elif kind == "start":
            if token == wl.run and wl.reserved_at is not None and not wl.evicted:
                self._record("started", wl)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the block runs (`gc.disable`), back on after it if it was on.

    What a simulation allocates is freed by reference counting or kept in its Result; the only reference cycles it
    leaves are its quota tree's (a node and its parent point at each other: a few objects per ClusterQueue and
    Cohort whatever the trace's length; tests/unit/whatif/test_whatif_oracle_shortcuts.py checks it), so nothing
    piles up while the collector is off, and its next pass frees the tree. Left on, the collector walks every
    object of the process (the libraries, the trace, the results so far) each time the results have grown by a
    quarter: never in a week of 1,000 workloads, about 8 % of the time of a week of 10,000 and 20 % of ten weeks of
    1,000 a week, so the time grew faster than the trace (issue 41).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def simulate(setup: KueueSetup, trace: Trace, release_seconds: float = 0.0) -> Result:
    """Replay `trace` against `setup` (see the module doc) and return the Result. Pure and deterministic. The
    garbage collector is paused while it runs (`collector_paused`)."""
    with collector_paused():
        return Simulation(setup, trace, release_seconds).run()
