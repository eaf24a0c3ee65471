"""Kueue's flavor assignment: which ResourceFlavor each resource of a pending workload gets, and whether it fits,
needs preemption, or cannot fit.

A port of kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go for one pod set:
`assignFlavors`, `findFlavorForPodSets` (flavors of a resource group in the ClusterQueue's order, stopping per
flavorFungibility: `shouldTryNextFlavor`, keeping the best by `isPreferred`), `checkFlavorForPodSets` (the pods'
nodeSelector against the flavor's nodeLabels, its NoSchedule/NoExecute taints against their tolerations),
`fitsResourceQuota` (Fit, borrowing height, preemption possibility through the preemption oracle, NoFit above the
potential capacity), `canPreemptWhileBorrowing`; `Assignment.RepresentativeMode` and `Borrows`.

Not modelled: the scan progress a skipped workload resumes from (`LastAssignment`,
FlavorFungibilityPreserveScanProgress): every attempt starts at the first flavor; partial admission; TAS.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Mapping, Optional, Sequence

from kueue_cohorts.whatif.cluster import Cluster, Workload
from kueue_cohorts.whatif.kueue import Flavor, FlavorResource, Fungibility
from kueue_cohorts.whatif.preemption import Preemptor
from kueue_cohorts.whatif.quota import CQNode, available, lowest_subtree_that_fits, potential_available


class Mode(IntEnum):
    """FlavorAssignmentMode (NoFit < Preempt < Fit; DeferredFit needs RecomputeAssignmentUponPreemptionTargets
    Overlap, off by default)."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 3


class PMode(IntEnum):
    """preemptionMode inside the assigner."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    def mode(self) -> Mode:
        """flavorAssignmentMode."""
        if self == PMode.NO_FIT:
            return Mode.NO_FIT
        return Mode.FIT if self == PMode.FIT else Mode.PREEMPT


@dataclass(frozen=True, slots=True)
class Granular:
    """granularMode: preemption mode and borrowing level."""

    pmode: PMode
    borrow: int


_WORST = Granular(PMode.NO_FIT, 1 << 62)
_BEST = Granular(PMode.FIT, 0)


def is_preferred(a: Granular, b: Granular, fungibility: Fungibility) -> bool:
    """isPreferred: whether mode `a` beats `b` (BorrowingOverPreemption unless preference says otherwise)."""
    if a.pmode == PMode.NO_FIT:
        return False
    if b.pmode == PMode.NO_FIT:
        return True
    a_none, b_none = a.pmode == PMode.NO_CANDIDATES, b.pmode == PMode.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.pmode > b.pmode
    if a.pmode != b.pmode:
        return a.pmode > b.pmode
    return a.borrow < b.borrow


def should_try_next(mode: Granular, fungibility: Fungibility) -> bool:
    """shouldTryNextFlavor."""
    if mode.pmode in (PMode.NO_FIT, PMode.NO_CANDIDATES):
        return True
    if mode.pmode in (PMode.PREEMPT, PMode.RECLAIM) and fungibility.when_can_preempt == "TryNextFlavor":
        return True
    return mode.borrow != 0 and fungibility.when_can_borrow == "TryNextFlavor"


@dataclass(frozen=True, slots=True)
class FlavorChoice:
    """FlavorAssignment of one resource: the flavor, its mode and borrowing height."""

    flavor: str
    mode: Mode
    borrow: int


@dataclass
class Assignment:
    """The assigner's answer for a workload: per resource its FlavorChoice, the representative mode (the worst),
    the borrowing height (the highest), the usage per (flavor, resource), and why it does not fit."""

    choices: dict[str, FlavorChoice] = field(default_factory=dict)
    mode: Mode = Mode.NO_FIT
    borrowing: int = 0
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    reason: str = ""

    def needs_preemption(self) -> frozenset[FlavorResource]:
        """flavorResourcesNeedPreemption: the (flavor, resource) pairs whose mode is Preempt."""
        return frozenset((c.flavor, r) for r, c in self.choices.items() if c.mode == Mode.PREEMPT)


def tolerated(taint: Mapping[str, object], tolerations: Sequence[object]) -> bool:
    """Whether a NoSchedule/NoExecute `taint` is tolerated (core/v1 Toleration.ToleratesTaint)."""
    for t in tolerations:
        key, operator, value, effect = (getattr(t, "key", None), getattr(t, "operator", "Equal"),
                                        getattr(t, "value", None), getattr(t, "effect", None))
        if effect is not None and effect != taint.get("effect"):
            continue
        if key is None and operator == "Exists":
            return True
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (value or "") == (taint.get("value") or ""):
            return True
    return False


def flavor_matches(flavor: Flavor, wl: Workload) -> Optional[str]:
    """checkFlavorForPodSets: None when the pods may use `flavor`, else why not (an untolerated taint, a
    nodeSelector the flavor's nodeLabels contradict: only the flavor's own label keys are compared)."""
    for taint in flavor.node_taints:
        if not tolerated(taint, wl.spec.tolerations):
            return f"untolerated taint {taint.get('key')} in flavor {flavor.name}"
    for key, value in wl.spec.node_selector.items():
        if key in flavor.node_labels and flavor.node_labels[key] != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    return None


def _can_preempt_while_borrowing(cq: CQNode) -> bool:
    """canPreemptWhileBorrowing (Fair Sharing off)."""
    return cq.spec.preemption.borrow_within_cohort not in ("Never", "")


def fits_resource_quota(cluster: Cluster, oracle: Preemptor, wl: Workload, cq: CQNode, fr: FlavorResource,
                        value: int) -> tuple[PMode, int, str]:
    """fitsResourceQuota: how `value` of `fr` could be had in `cq`: Fit (with its borrowing height), a preemption
    possibility found by the oracle, or NoFit; and the reason when it does not fit at once."""
    if value > potential_available(cq, fr):
        return PMode.NO_FIT, 0, f"insufficient quota for {fr[1]} in flavor {fr[0]} (exceeds the maximum capacity)"
    borrow, may_reclaim = lowest_subtree_that_fits(cq, fr, value)
    if value <= available(cq, fr):
        return PMode.FIT, borrow, ""
    reason = f"insufficient unused quota for {fr[1]} in flavor {fr[0]}"
    if cq.quota(fr).nominal >= value or may_reclaim or _can_preempt_while_borrowing(cq):
        possibility, after = oracle.simulate(wl, cq.name, fr, value, borrow)
        mode = {"NoCandidates": PMode.NO_CANDIDATES, "Preempt": PMode.PREEMPT, "Reclaim": PMode.RECLAIM}[possibility]
        return mode, after, reason
    return PMode.NO_FIT, borrow, reason


def assign(cluster: Cluster, oracle: Preemptor, wl: Workload) -> Assignment:
    """assignFlavors for the workload's one pod set in its ClusterQueue, on the snapshot `cluster`.

    Resources are taken in name order; the resources of one group get one flavor. A requested resource no group
    covers makes it NoFit (Kueue's default QuotaCheckStrategy). Returns the Assignment (mode NoFit with a reason
    when nothing works).
    """
    assert wl.cq is not None
    cq = cluster.cq(wl.cq)
    spec = cq.spec
    requests = {r: v * wl.count for r, v in sorted(wl.requests.items())}
    if spec.group_of("pods") is not None:
        requests["pods"] = wl.count
    out = Assignment()
    all_fit = True
    for resource, value in requests.items():
        if resource in out.choices:
            continue
        group = spec.group_of(resource)
        if group is None:
            if value == 0:
                continue
            out.reason = f"resource {resource} unavailable in ClusterQueue"
            out.mode = Mode.NO_FIT
            return out
        group_requests = {r: v for r, v in requests.items() if r in group.covered}
        best: Optional[dict[str, FlavorChoice]] = None
        best_mode = _WORST
        reasons: list[str] = []
        for flavor_name in group.flavors:
            mismatch = flavor_matches(cluster.setup.flavors[flavor_name], wl)
            if mismatch is not None:
                reasons.append(mismatch)
                continue
            choices: dict[str, FlavorChoice] = {}
            rep = _BEST
            for r, v in group_requests.items():
                fr = (flavor_name, r)
                pmode, borrow, why = fits_resource_quota(cluster, oracle, wl, cq, fr, out.usage.get(fr, 0) + v)
                if why:
                    reasons.append(why)
                mode = Granular(pmode, borrow)
                if is_preferred(rep, mode, spec.fungibility):
                    rep = mode
                if rep.pmode == PMode.NO_FIT:
                    continue
                choices[r] = FlavorChoice(flavor_name, pmode.mode(), borrow)
            if not should_try_next(rep, spec.fungibility):
                best, best_mode = choices, rep
                break
            if is_preferred(rep, best_mode, spec.fungibility):
                best, best_mode = choices, rep
        if best is None or not best:
            out.reason = "; ".join(reasons) or f"no flavor for {resource}"
            out.mode = Mode.NO_FIT
            return out
        if best_mode.pmode != PMode.FIT:
            all_fit = False
            out.reason = "; ".join(reasons)
        for r, choice in best.items():
            out.choices[r] = choice
            out.borrowing = max(out.borrowing, choice.borrow)
            fr = (choice.flavor, r)
            out.usage[fr] = out.usage.get(fr, 0) + group_requests[r]
    out.mode = Mode.FIT if all_fit else min((c.mode for c in out.choices.values()), default=Mode.NO_FIT)
    if out.mode == Mode.FIT:
        out.reason = ""
    return out
