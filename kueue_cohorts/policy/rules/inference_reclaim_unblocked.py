"""INFERENCE_RECLAIM_UNBLOCKED (stack policy): nothing in an inference ClusterQueue's cohort tree can block or outrank
its reclaim. A model of what Kueue 0.19.2's scheduler does when an inference workload needs quota that a borrower
holds, over the whole tree (ClusterQueues, Cohort objects linked by `spec.parentName`, the manager Configuration and
every WorkloadPriorityClass), and the verdict derived from it.

What Kueue 0.19.2 does (sigs.k8s.io/kueue@v0.19.2):

- Classical preemption (`pkg/scheduler/preemption/classical/hierarchical_preemption.go`,
  `candidate_generator.go`): an inference workload whose requests fit its own ClusterQueue's quota
  (`QuantitiesFitInQuota`, `pkg/cache/scheduler/resource_node.go`) has *hierarchical advantage* over every workload
  of a ClusterQueue of the tree that uses more than its nominalQuota: with `reclaimWithinCohort: Any`
  (`common/preemption_policy.go` `SatisfiesPreemptionPolicy`) each is a `HierarchicalReclaim` candidate whatever its
  priority. Candidates come only from ClusterQueues and Cohorts above their nominal quota
  (`collectCandidatesInSubtree`, `candidateIsValid`). So with borrowingLimit 0 (INFERENCE_BORROWING_LIMIT_ZERO) and
  reclaimWithinCohort Any (INFERENCE_RECLAIM_ANY), classical reclaim cannot be blocked by any other queue: neither
  by `borrowWithinCohort` (it is the *preemptor's* setting, `IsBorrowingWithinCohortForbidden`, and it only reaches
  workloads of ClusterQueues above their nominal quota, which an inference queue that never borrows never is), nor
  by a `lendingLimit` (it only lowers what is lent), nor by Cohort-level quota or nesting (a borrower that holds
  inference's quota is above nominal on every node up to the common ancestor). Those pass here.
- `borrowWithinCohort` with `maxPriorityThreshold` (`isAboveBorrowingThreshold`): a queue that borrows may preempt
  a workload of another ClusterQueue *above its nominal quota* whose priority is below its own and at most the
  threshold (none: any lower priority). That reaches inference only when an inference queue of the same tree may
  itself borrow (no borrowingLimit 0 on some resource). Reported then, when the threshold is absent or at or above
  the lowest inference priority and a WorkloadPriorityClass above it exists (fail closed when none is known).
- Fair sharing (`preemption.go` `fairPreemptions`, `fairsharing/ordering.go`, `target.go`,
  `pkg/cache/scheduler/fair_sharing.go`): on as soon as the Configuration has a `fairSharing` block
  (`fairsharing.Enabled`: non-nil). With the feature gate `FairSharingPreemptWithinNominal` (Beta, on by default
  since 0.17, `pkg/features/kube_features.go`) a preemptor ClusterQueue that stays within nominal preempts every
  cross-queue candidate whatever the shares: inference (borrowingLimit 0) always does. With the gate off, each
  candidate must pass the strategies (`LessThanOrEqualToFinalShare`, `LessThanInitialShare`), which compare the
  DominantResourceShare of the preemptor's and the target's *almost least common ancestors*: for a target in
  another subtree, the preemptor side is the inference queue's ancestor Cohort below the common ancestor, whose
  share counts what its other members borrow (and is +Inf with `fairSharing.weight: 0`). Reclaim is then blocked
  whenever such an ancestor Cohort may borrow. So the verdict: fair sharing on, the gate off, and an inference
  ClusterQueue in a nested subtree (a Cohort on its path that has a parent) that may borrow: some queue below it may
  borrow a resource on which neither that Cohort nor a Cohort between them sets borrowingLimit 0. A flat tree (the
  inference queue's almost-LCA is the queue itself, share 0) passes; so do the ClusterQueue/Cohort
  `fairSharing.weight` and admission fair sharing (`admissionFairSharing`, ClusterQueue `admissionScope`), which only
  order candidates and admission (`common/ordering.go`), never remove one.
- WorkloadPriorityClasses (`apis/kueue/v1beta2/workloadpriorityclass_types.go`; Kueue 0.19.2 lets any namespace name
  any class in `kueue.x-k8s.io/priority-class`, `pkg/util/priority`): a class at or above the lowest inference
  priority that is not an inference class lets every training or tenant namespace run workloads Kueue ranks with
  inference: in admission order, in `withinClusterQueue` and `borrowWithinCohort` preemption and in the candidate
  order (`CandidatesOrdering`), and the book's own ranking (WORKLOAD_PRIORITY_CLASS, roles) no longer holds. Reported
  for every such class of the stack or of the pack config's `priorityClasses` when the stack has a LocalQueue of a
  non-inference ClusterQueue; classes declared or labelled training are WORKLOAD_PRIORITY_CLASS's findings.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

import yaml

from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.kueue_configuration import configurations
from .vocabulary.kueue_manager import chart_gate, is_kueue_manager, manager_gate
from .vocabulary.objects import (
    INFERENCE_ROLE,
    ROLE_LABEL,
    TRAINING_ROLE,
    KubeObject,
    cohort_of,
    cohort_parents,
    guarded,
    unknown_violation,
    violation,
)
from .vocabulary.priority import PRIORITY_CLASSES, TRAINING_PRIORITY_CLASSES, priority_value
from .vocabulary.quantity import parse
from .vocabulary.quota import quota_entries
from .vocabulary.roles import ROLE_OPTIONS, Roles, roles_of
from .vocabulary.values import MISSING, UnknownValueError, Violation, as_map, get, is_map

PREEMPT_WITHIN_NOMINAL = "FairSharingPreemptWithinNominal"
"""The Kueue feature gate (Beta, default on since 0.17) that lets a within-nominal preemptor bypass the fair-sharing
strategies (`pkg/features/kube_features.go`, `preemption.go` `runFirstFsStrategy`)."""
FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class FairSharing:
    """What the stack's Kueue manager Configuration(s) say about fair sharing.

    carrier: the object holding the Configuration (ConfigMap or Chart) and `where` the field inside it. enabled: a
    `fairSharing` block is present (v1beta1: without `enable: false`). within_nominal: the value of the feature gate
    `FairSharingPreemptWithinNominal` (Configuration `featureGates`, or a manager `--feature-gates` flag of the
    same object), None when not set (Kueue's default: on).
    """

    carrier: KubeObject
    where: str
    enabled: bool
    within_nominal: Optional[bool]


def fair_sharing_settings(objects: Iterable[KubeObject], unknown: Optional[list[Violation]] = None
                          ) -> list[FairSharing]:
    """Every Kueue manager Configuration of the stack (`kueue_configuration.configurations`: ConfigMap data, chart
    values) as a `FairSharing`, plus the `--feature-gates` the Kueue manager Deployment runs with
    (``kueue_manager.manager_gate``) and a Helm chart's `values.controllerManager.featureGates`
    (``kueue_manager.chart_gate``: the chart renders them as that flag); the flag and the Configuration's map cannot be
    used together, so either decides. A Configuration or flag unknown at preview adds its fail-closed violation to
    `unknown` (when given) and is skipped; YAML that does not parse is skipped (KUEUE_MANAGER_CONFIG reports it)."""
    found: list[FairSharing] = []
    flag_gate: Optional[bool] = None
    for obj in objects:
        try:
            flag_gate = _read_configuration(obj, found, flag_gate)
        except UnknownValueError as err:
            if unknown is not None:
                unknown.append(unknown_violation(obj, err))
    if flag_gate is not None:
        found = [FairSharing(f.carrier, f.where, f.enabled, f.within_nominal if f.within_nominal is not None
                             else flag_gate) for f in found]
    return found


def _read_configuration(obj: KubeObject, found: list[FairSharing], flag_gate: Optional[bool]) -> Optional[bool]:
    """Append `obj`'s Configurations to `found`; return the manager flag's gate value (else `flag_gate`)."""
    if is_kueue_manager(obj):
        gate = manager_gate(obj, PREEMPT_WITHIN_NOMINAL)
        return flag_gate if gate is None else gate
    chart = chart_gate(obj, PREEMPT_WITHIN_NOMINAL)  # the chart renders its featureGates as --feature-gates
    if chart is not None:
        flag_gate = chart
    for where, text in configurations(obj):
        try:
            config = yaml.safe_load(text) if isinstance(text, str) else text
        except yaml.YAMLError:
            continue
        if not is_map(config):
            continue
        block = get(config, "fairSharing")
        enabled = is_map(block) and get(block, "enable") is not False
        gates = as_map(get(config, "featureGates"))
        gate = gates.get(PREEMPT_WITHIN_NOMINAL)
        found.append(FairSharing(obj, where, enabled, gate if isinstance(gate, bool) else None))
    return flag_gate


def _limit_zero(entry_value: Any) -> bool:
    value = parse(entry_value) if entry_value is not MISSING else None
    return value is not None and value == 0


def may_borrow(owner: KubeObject) -> set[FlavorResource]:
    """The (flavor, resource) pairs a ClusterQueue or Cohort may borrow beyond its own subtree's quota: every quota
    entry without `borrowingLimit: 0` (Kueue: a missing borrowingLimit is unlimited). Raises UnknownValueError."""
    return {(e.flavor, e.resource) for e in quota_entries(owner) if not _limit_zero(e.field("borrowingLimit"))}


def _closed(owner: KubeObject) -> set[FlavorResource]:
    """The (flavor, resource) pairs on which a Cohort sets borrowingLimit 0 (its subtree never borrows them)."""
    return {(e.flavor, e.resource) for e in quota_entries(owner) if _limit_zero(e.field("borrowingLimit"))}


@dataclass
class Tree:
    """The cohort forest of a stack: Cohort parents and the ClusterQueues of each cohort."""

    parents: dict[str, str]
    members: dict[str, list[KubeObject]]
    borrowing: dict[int, set[FlavorResource]]
    """id(ClusterQueue) -> what it may borrow (`may_borrow`); a queue whose quota is unknown holds nothing here."""
    closed: dict[str, set[FlavorResource]]
    """Cohort name -> the pairs its borrowingLimit 0 closes."""

    @classmethod
    def build(cls, objects: Iterable[KubeObject], found: list[Violation]) -> Tree:
        """Index `objects`; unknown parents, names or cohort names become fail-closed violations in `found`."""
        objects = list(objects)
        parents = cohort_parents(objects, found)
        members: dict[str, list[KubeObject]] = defaultdict(list)
        borrowing: dict[int, set[FlavorResource]] = {}
        closed: dict[str, set[FlavorResource]] = {}
        for obj in objects:
            try:
                if obj.is_kueue("Cohort"):
                    closed[obj.name] = _closed(obj)
                elif obj.is_kueue("ClusterQueue"):
                    cohort = cohort_of(obj)
                    if cohort is not None:
                        members[cohort].append(obj)
                        borrowing[id(obj)] = may_borrow(obj)
            except UnknownValueError as err:
                found.append(unknown_violation(obj, err))
        return cls(parents, members, borrowing, closed)

    def path(self, cohort: str) -> list[str]:
        """`cohort` and its ancestors up to the root (a cycle stops at the first repeated name)."""
        out = [cohort]
        while out[-1] in self.parents and self.parents[out[-1]] not in out:
            out.append(self.parents[out[-1]])
        return out

    def children(self, cohort: str) -> list[str]:
        """The Cohorts whose parent is `cohort`."""
        return [name for name, parent in self.parents.items() if parent == cohort]

    def borrows(self, cohort: str, seen: Optional[set[str]] = None) -> dict[FlavorResource, str]:
        """What the subtree of `cohort` may borrow from its parent: (flavor, resource) -> the ClusterQueue that may
        borrow it. A member queue's may-borrow pairs, minus those a Cohort on the way (this one included) closes
        with borrowingLimit 0."""
        seen = seen if seen is not None else set()
        if cohort in seen:
            return {}
        seen.add(cohort)
        out: dict[FlavorResource, str] = {}
        for cq in self.members.get(cohort, []):
            for pair in sorted(self.borrowing.get(id(cq), set())):
                out.setdefault(pair, f"ClusterQueue '{cq.name}'")
        for child in self.children(cohort):
            for pair, who in self.borrows(child, seen).items():
                out.setdefault(pair, who)
        closed = self.closed.get(cohort, set())
        return {pair: who for pair, who in out.items() if pair not in closed}


def _fair_sharing_findings(objects: list[KubeObject], tree: Tree, inference: list[KubeObject]) -> list[Violation]:
    found: list[Violation] = []
    settings = [f for f in fair_sharing_settings(objects, found) if f.enabled and f.within_nominal is False]
    for cq in inference:

        def judge(cq: KubeObject = cq) -> list[Violation]:
            out: list[Violation] = []
            cohort = cohort_of(cq)
            if cohort is None:
                return out
            for ancestor in tree.path(cohort):
                if ancestor not in tree.parents:
                    break  # the root: its share is never compared
                borrowed = tree.borrows(ancestor)
                if not borrowed:
                    continue
                (flavor, resource), who = sorted(borrowed.items())[0]
                for fs in settings:
                    field = f"{fs.where}.featureGates.{PREEMPT_WITHIN_NOMINAL}"
                    out.append(violation(
                        fs.carrier, INFERENCE_RECLAIM_UNBLOCKED.name, field, False,
                        f"with fair sharing on and {PREEMPT_WITHIN_NOMINAL} off, Kueue 0.19.2 lets the inference "
                        f"ClusterQueue '{cq.name}' preempt a borrower outside Cohort '{ancestor}' only when the "
                        f"share of '{ancestor}' (which counts what its other members borrow) is not above the "
                        f"borrower's, and {who} in that subtree may borrow '{resource}' of flavor '{flavor}', so "
                        "inference's reclaim can be refused",
                        f"remove featureGates.{PREEMPT_WITHIN_NOMINAL}: false (Kueue's default is on), or set "
                        f"borrowingLimit 0 for '{resource}' of flavor '{flavor}' on Cohort '{ancestor}', or put "
                        f"'{cq.name}' directly under the root of its tree"))
                break  # one finding per inference queue: the lowest ancestor that can block it
            return out

        found.extend(guarded(cq, judge))
    return found


def _floor(roles: Roles, classes: Mapping[str, int]) -> Optional[int]:
    values = [classes[n] for n in roles.inference_priority_classes if n in classes]
    return min(values) if values else None


def _borrow_within_cohort_findings(tree: Tree, roles: Roles, inference: list[KubeObject],
                                   classes: Mapping[str, int]) -> list[Violation]:
    floor = _floor(roles, classes)
    found: list[Violation] = []
    roots: dict[str, list[tuple[KubeObject, set[FlavorResource]]]] = defaultdict(list)
    for cq in inference:
        pairs = tree.borrowing.get(id(cq), set())
        if pairs:  # only queues in a cohort are in `borrowing`
            roots[tree.path(str(cohort_of(cq)))[-1]].append((cq, pairs))
    if not roots:
        return found
    outranking = [v for v in classes.values() if floor is None or v > floor]
    for cohort, queues in tree.members.items():
        root = tree.path(cohort)[-1]
        if root not in roots:
            continue
        exposed = {q.name for q, _ in roots[root]}
        for cq in queues:

            def judge(cq: KubeObject = cq, root: str = root, exposed: set[str] = exposed) -> list[Violation]:
                if cq.name in exposed:
                    return []
                bwc = get(cq.spec, "preemption", "borrowWithinCohort")
                if get(bwc, "policy") in (MISSING, "Never"):
                    return []
                threshold = get(bwc, "maxPriorityThreshold")
                limit = priority_value(threshold) if threshold is not MISSING else None
                if floor is not None and limit is not None and limit < floor:
                    return []  # only workloads at or below the threshold, all below inference
                if floor is not None and not outranking:
                    return []  # no class outranks inference, so LowerPriority never reaches it
                target, pairs = roots[root][0]
                flavor, resource = sorted(pairs)[0]
                shown = "no maxPriorityThreshold" if threshold is MISSING else f"maxPriorityThreshold {threshold}"
                lowest = "unknown" if floor is None else str(floor)
                return [violation(
                    cq, INFERENCE_RECLAIM_UNBLOCKED.name, "spec.preemption.borrowWithinCohort", bwc,
                    "while borrowing, this queue may preempt the workloads of any ClusterQueue above its nominal "
                    f"quota that have a lower priority ({shown}; lowest inference priority {lowest}), and the "
                    f"inference ClusterQueue '{target.name}' of the same cohort tree '{root}' may borrow "
                    f"'{resource}' of flavor '{flavor}', so its workloads can be preempted by a borrower",
                    f"set borrowingLimit 0 on every resource of '{target.name}', or set maxPriorityThreshold below "
                    f"{'the inference priority' if floor is None else floor} (or borrowWithinCohort policy Never) "
                    "here")]

            found.extend(guarded(cq, judge))
    return found


def _priority_findings(objects: list[KubeObject], roles: Roles, classes: Mapping[str, int],
                       outside: Mapping[str, int], declared_training: set[str]) -> list[Violation]:
    floor = _floor(roles, classes)
    if floor is None:
        return []
    training_queues = []
    for lq in (o for o in objects if o.is_kueue("LocalQueue")):
        try:
            if roles.role(str(get(lq.spec, "clusterQueue"))) != INFERENCE_ROLE:
                training_queues.append(lq)
        except UnknownValueError:
            training_queues.append(lq)  # it may be a training queue (fail closed)
    if not training_queues:
        return []
    example = f"LocalQueue '{training_queues[0].resource_name}'"
    try:
        example = training_queues[0].describe()
    except UnknownValueError:
        pass
    found: list[Violation] = []
    rule = (f"any training or tenant namespace may name it in kueue.x-k8s.io/priority-class (Kueue 0.19.2 has no "
            f"per-namespace restriction on WorkloadPriorityClasses; e.g. {example}), and its value is at or above "
            f"the lowest inference priority {floor}, so such workloads rank with inference in Kueue's admission and "
            "preemption order")
    for wpc in (o for o in objects if o.is_kueue("WorkloadPriorityClass")):

        def check(wpc: KubeObject = wpc) -> list[Violation]:
            value = priority_value(get(wpc.props, "value"))
            if value is None or value < floor or wpc.name in roles.inference_priority_classes:
                return []
            if wpc.name in declared_training or get(wpc.labels, ROLE_LABEL) == TRAINING_ROLE:
                return []  # WORKLOAD_PRIORITY_CLASS ranks the declared training classes
            return [violation(
                wpc, INFERENCE_RECLAIM_UNBLOCKED.name, "value", value, rule,
                f"lower its value below {floor}, or delete it, or label it {ROLE_LABEL}: {INFERENCE_ROLE} when only "
                "inference uses it")]

        found.extend(guarded(wpc, check))
    in_stack: set[str] = set()
    for wpc in (o for o in objects if o.is_kueue("WorkloadPriorityClass")):
        try:
            in_stack.add(wpc.name)
        except UnknownValueError:
            continue  # its name is reported above (fail closed)
    for name, value in sorted(outside.items()):
        if name in in_stack or name in roles.inference_priority_classes or name in declared_training:
            continue
        if value >= floor:
            fix = f"lower its value below {floor}, or delete it from the cluster"
            found.append(Violation(
                f"The WorkloadPriorityClass '{name}' of the cluster (policy config priorityClasses, value {value}): "
                f"{rule}; {fix}.", None, None, f"priorityClasses['{name}']", value, rule, fix,
                INFERENCE_RECLAIM_UNBLOCKED.name))
    return found


def check_inference_reclaim_unblocked(objects: Iterable[KubeObject], roles: Roles,
                                      priority_classes: Optional[Mapping[str, Any]] = None,
                                      training_priority_classes: Iterable[str] = ()) -> list[Violation]:
    """INFERENCE_RECLAIM_UNBLOCKED over the whole stack (see the module docstring for the model).

    Args:
        objects: every Kubernetes object of the stack (ClusterQueues, Cohorts, LocalQueues, WorkloadPriorityClasses,
            the Kueue manager Configuration and its Deployment).
        roles: `roles.classify` of the same objects (which ClusterQueues and classes are inference).
        priority_classes: WorkloadPriorityClasses of the cluster outside the stack, name -> value (pack config).
        training_priority_classes: the classes the stack declares for training (WORKLOAD_PRIORITY_CLASS ranks them).
    Returns:
        Violations: the Configuration that turns fair sharing on with FairSharingPreemptWithinNominal off while an
        inference queue sits under a Cohort that may borrow; a queue whose borrowWithinCohort can preempt an
        inference queue of its tree that may borrow; a WorkloadPriorityClass at or above the lowest inference
        priority that training namespaces can name; fail-closed violations for values unknown at preview (each
        finding once: an inference queue whose cohortName is unknown is read by the tree and by its judge).
    """
    objects = list(objects)
    found: list[Violation] = []
    tree = Tree.build(objects, found)
    inference = [cq for name, cq in roles.cluster_queues.items() if roles.role(name) == INFERENCE_ROLE]
    classes: dict[str, int] = {}
    outside: dict[str, int] = {}
    for name, raw in (priority_classes or {}).items():
        value = priority_value(raw)
        if value is not None:
            outside[str(name)] = value
            classes[str(name)] = value
    for wpc in (o for o in objects if o.is_kueue("WorkloadPriorityClass")):
        try:
            value = priority_value(get(wpc.props, "value"))
            if value is not None:
                classes[wpc.name] = value
        except UnknownValueError as err:
            found.append(unknown_violation(wpc, err))
    found.extend(_fair_sharing_findings(objects, tree, inference))
    found.extend(_borrow_within_cohort_findings(tree, roles, inference, classes))
    found.extend(_priority_findings(objects, roles, classes, outside, set(training_priority_classes)))
    return list(dict.fromkeys(found))  # once each: a value unknown at preview is met by the tree and by a judge


__all__ = ["INFERENCE_RECLAIM_UNBLOCKED", "PREEMPT_WITHIN_NOMINAL", "FairSharing", "Tree",
           "check_inference_reclaim_unblocked", "fair_sharing_settings", "may_borrow"]


INFERENCE_RECLAIM_UNBLOCKED: Declaration = Declaration(
    name="inference-reclaim-unblocked",
    description="Nothing in an inference ClusterQueue's cohort tree can block or outrank its reclaim: fair sharing "
                "without FairSharingPreemptWithinNominal over a borrowing subtree, another queue's "
                "borrowWithinCohort, or a WorkloadPriorityClass at or above inference that training namespaces can "
                "name.",
    promise=Promise.RECLAIM, level=Level.MANDATORY, scope=Scope.STACK,
    check=lambda objects, options: check_inference_reclaim_unblocked(
        objects, roles_of(objects, options), PRIORITY_CLASSES.read(options),
        TRAINING_PRIORITY_CLASSES.read(options)),
    options=(*ROLE_OPTIONS, TRAINING_PRIORITY_CLASSES, PRIORITY_CLASSES))
