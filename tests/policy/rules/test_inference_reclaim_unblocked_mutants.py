"""inference-reclaim-unblocked: what the policy-inference-reclaim-unblocked mutation run found no test pinning down.

The Kueue manager's `--feature-gates` flag read as Kueue 0.19.2 reads it (`cmd/kueue/main.go`: a Go `flag.StringVar`,
so `-name`/`--name`, `=value` or the next argument, the last occurrence replacing the others; its value through
k8s.io/component-base `featuregate.Set`: comma-separated `key=value`, trimmed, each value `strconv.ParseBool`), the
borrowing of a whole Cohort subtree (child Cohorts, Cohorts without members, a cycle), the ancestor that blocks, the
borrowWithinCohort thresholds and the priority classes. Every test asserts whole findings (policy, object, field,
value, message written out by hand).
"""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.inference_reclaim_unblocked import INFERENCE_RECLAIM_UNBLOCKED, fair_sharing_settings
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef, Violation
from tests.policy.fixtures import SAFE_MANAGER_CONFIG, UNKNOWN, cluster_queue, compliant, kueue_config_map, stack
from tests.policy.rules.test_inference_reclaim_unblocked import CONFIG, ZERO, cohort, fair_sharing, nested

POLICY = "inference-reclaim-unblocked"
CONFIG_MAP = ObjectRef("ConfigMap", "kueue-system", "kueue-manager-config")
GATE_FIELD = "data['controller_manager_config.yaml'].featureGates.FairSharingPreemptWithinNominal"
TRAINING = ObjectRef("ClusterQueue", None, "c12-training-cq")


def whole(manifests: dict[str, dict], **options: Any) -> list[tuple[str, Any, str, Any, str]]:
    """The policy's findings through the rule book: (policy, subject, field, value, message) each; `options` added to
    the policy's config."""
    config = {POLICY: {**CONFIG[POLICY], **options}}
    return [(v.policy, v.subject, v.field, v.value, v.message) for rule, v in run(stack(manifests), config)
            if rule is INFERENCE_RECLAIM_UNBLOCKED]


def blocked(ancestor: str, who: str) -> tuple[str, Any, str, Any, str]:
    """The fair-sharing finding on the ConfigMap when Cohort `ancestor` holds the borrower `who` (cpu borrowed)."""
    return (POLICY, CONFIG_MAP, GATE_FIELD, False,
            "The ConfigMap 'kueue-system/kueue-manager-config' has data['controller_manager_config.yaml']."
            "featureGates.FairSharingPreemptWithinNominal = False: with fair sharing on and "
            "FairSharingPreemptWithinNominal off, Kueue 0.19.2 lets the inference ClusterQueue 'c12-inference-cq' "
            f"preempt a borrower outside Cohort '{ancestor}' only when the share of '{ancestor}' (which counts what "
            f"its other members borrow) is not above the borrower's, and ClusterQueue '{who}' in that subtree may "
            "borrow 'cpu' of flavor 'c12-default', so inference's reclaim can be refused; remove "
            "featureGates.FairSharingPreemptWithinNominal: false (Kueue's default is on), or set borrowingLimit 0 "
            f"for 'cpu' of flavor 'c12-default' on Cohort '{ancestor}', or put 'c12-inference-cq' directly under the "
            "root of its tree.")


def manager(args: list[str], command: list[str] | None = None, sidecar: bool = False) -> dict:
    """Kueue's manager Deployment (kueue-system/kueue-controller-manager) with these container args/command."""
    container: dict = {"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.19.2", "args": args}
    if command is not None:
        container["command"] = command
    containers = [container] + ([{"name": "proxy", "image": "proxy", "args": ["--v=2"]}] if sidecar else [])
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
            "spec": {"template": {"spec": {"containers": containers}}}}


def with_flags(args: list[str], command: list[str] | None = None, sidecar: bool = False) -> dict[str, dict]:
    """The nested stack ('serving' under 'c12-shared' with borrower 'batch-cq'), fair sharing on in the
    Configuration, the gate only on the manager's command line."""
    manifests = compliant()
    manifests["kueue-config"] = kueue_config_map(fair_sharing(None))
    manifests["kueue-manager"] = manager(args, command, sidecar)
    nested(manifests, None)
    return manifests


OFF = [  # strconv.ParseBool's false spellings, the flag's four forms, trimmed keys and values, an empty item
    ["--feature-gates=FairSharingPreemptWithinNominal=false"],
    ["-feature-gates=FairSharingPreemptWithinNominal=false"],
    ["--feature-gates", "FairSharingPreemptWithinNominal=false"],
    ["-feature-gates", "FairSharingPreemptWithinNominal=0"],
    ["--config", "/controller_manager_config.yaml", "--feature-gates", "FairSharingPreemptWithinNominal=false"],
    ["--feature-gates=FairSharingPreemptWithinNominal=f"],
    ["--feature-gates=FairSharingPreemptWithinNominal=F"],
    ["--feature-gates=FairSharingPreemptWithinNominal=FALSE"],
    ["--feature-gates=FairSharingPreemptWithinNominal=False"],
    ["--feature-gates= FairSharingPreemptWithinNominal = false ,TopologyAwareScheduling=true"],
    ["--feature-gates=TopologyAwareScheduling=true,,FairSharingPreemptWithinNominal=false"],
    ["--feature-gates=FairSharingPreemptWithinNominal=true,FairSharingPreemptWithinNominal=false"],
    ["--feature-gates=TopologyAwareScheduling=true", "--config=/c.yaml",
     "--feature-gates=FairSharingPreemptWithinNominal=false"],
]
NOT_OFF = [  # the true spellings, the last flag replacing an earlier one, values Set refuses (the manager exits)
    ["--feature-gates=FairSharingPreemptWithinNominal=1"],
    ["--feature-gates=FairSharingPreemptWithinNominal=t"],
    ["--feature-gates=FairSharingPreemptWithinNominal=T"],
    ["--feature-gates=FairSharingPreemptWithinNominal=TRUE"],
    ["--feature-gates=FairSharingPreemptWithinNominal=True"],
    ["--feature-gates=FairSharingPreemptWithinNominal=false,FairSharingPreemptWithinNominal=true"],
    ["--feature-gates=FairSharingPreemptWithinNominal=false", "--feature-gates=TopologyAwareScheduling=true"],
    ["--feature-gates=FairSharingPreemptWithinNominal=false", "--feature-gates", "TopologyAwareScheduling=true"],
    ["--feature-gates=FairSharingPreemptWithinNominal=no"],
    ["--feature-gates=FairSharingPreemptWithinNominal=false=x"],
    ["--feature-gates=FairSharingPreemptWithinNominal=false,TopologyAwareScheduling"],
    ["--feature-gates=TopologyAwareScheduling=x=true,FairSharingPreemptWithinNominal=false"],
    ["--feature-gates"],
    ["--zap-log-level", "FairSharingPreemptWithinNominal=false"],
    ["--feature-gates-x=FairSharingPreemptWithinNominal=false"],
    ["FairSharingPreemptWithinNominal=false"],
]


@pytest.mark.parametrize("args", OFF)
def test_the_gate_turned_off_on_the_command_line_as_go_parses_it(args):
    """Kills `_gate_from_flags`' mutants of the flag forms (`-`/`--`, `=` or the next argument) and of the pair
    parsing; before the fix the single-dash flag (`-feature-gates`, which Go's flag package takes) was not read."""
    assert whole(with_flags(args)) == [blocked("serving", "batch-cq")]


@pytest.mark.parametrize("args", NOT_OFF)
def test_a_command_line_that_does_not_turn_the_gate_off(args):
    """Kills `_gate_from_flags`' mutants that read another flag's value, a refused pair or an earlier flag; before the
    fix `1`, `t` and `T` (true to strconv.ParseBool) read as off, values Set refuses (the manager exits) read as off,
    and an earlier flag the last one replaces (Go's flag package keeps the last value of a string flag) still
    counted."""
    assert whole(with_flags(args)) == []


@pytest.mark.parametrize("command, args, off", [
    (["/manager", "--feature-gates=FairSharingPreemptWithinNominal=false"], [], True),
    (["/manager", "--feature-gates=FairSharingPreemptWithinNominal=false"], ["--feature-gates=A=true"], False),
    (["/manager", "--feature-gates=A=true"], ["--feature-gates=FairSharingPreemptWithinNominal=false"], True),
    (["--feature-gates=FairSharingPreemptWithinNominal=false"], [], False),
])
def test_the_command_runs_before_the_args_and_its_first_word_is_the_program(command, args, off):
    """The kubelet runs `command` then `args` (k8s.io/api core/v1 Container): args' flag comes last and wins; the
    command's first word is the program, never a flag. Kills the order and the `[1:]` of `_read_configuration`."""
    assert whole(with_flags(args, command)) == ([blocked("serving", "batch-cq")] if off else [])


def test_a_sidecar_without_the_flag_keeps_the_managers_setting():
    """A second container of the manager's Deployment that sets no gate leaves the manager's value (kills the
    mutants that make 'no gate' a value other than None)."""
    assert whole(with_flags(["--feature-gates=FairSharingPreemptWithinNominal=false"], sidecar=True)) == [
        blocked("serving", "batch-cq")]


def _fair_sharing_off(manifests: dict[str, dict]) -> dict[str, dict]:
    manifests["kueue-config"] = kueue_config_map(fair_sharing(False))
    return manifests


def test_a_borrower_in_a_child_cohort_blocks_through_a_cohort_without_members():
    """'serving' holds only the inference queue; its child Cohort 'research' has no ClusterQueue and its grandchild
    'lab' the borrower: the share of 'serving' counts the whole subtree (Kueue 0.19.2
    `pkg/cache/scheduler/fair_sharing.go`, a Cohort's usage is its children's). Kills `Tree.borrows`' mutants of the
    child walk, the members default and the pair bookkeeping."""
    manifests = _fair_sharing_off(compliant())
    manifests["inference-cq"]["spec"]["cohortName"] = "serving"
    manifests["serving"] = cohort("serving", "c12-shared")
    manifests["research"] = cohort("research", "serving")
    manifests["lab"] = cohort("lab", "research")
    manifests["lab-cq"] = cluster_queue("lab-cq", "training", {**ZERO, "cpu": "1"}, None, cohort="lab")
    assert whole(manifests) == [blocked("serving", "lab-cq")]


def test_a_borrower_in_a_sibling_cohort_does_not_count_for_the_share():
    """A borrower in 'research', a sibling of 'serving' under the root, is not in the share of 'serving': nothing
    blocks (kills `Tree.children`' `!=`)."""
    manifests = _fair_sharing_off(compliant())
    manifests["inference-cq"]["spec"]["cohortName"] = "serving"
    manifests["serving"] = cohort("serving", "c12-shared")
    manifests["research"] = cohort("research", "c12-shared")
    manifests["research-cq"] = cluster_queue("research-cq", "training", {**ZERO, "cpu": "1"}, None,
                                             cohort="research")
    assert whole(manifests) == []


def test_the_lowest_ancestor_that_borrows_is_named_above_one_that_does_not():
    """'serving' borrows nothing, its parent 'platform' (under the root) holds a borrower: the finding names
    'platform' (kills the `continue` made `break` in `_fair_sharing_findings`)."""
    manifests = _fair_sharing_off(compliant())
    manifests["inference-cq"]["spec"]["cohortName"] = "serving"
    manifests["serving"] = cohort("serving", "platform")
    manifests["platform"] = cohort("platform", "c12-shared")
    manifests["platform-cq"] = cluster_queue("platform-cq", "training", {**ZERO, "cpu": "1"}, None,
                                             cohort="platform")
    assert whole(manifests) == [blocked("platform", "platform-cq")]


def test_a_cycle_of_cohorts_is_walked_once():
    """Cohorts 'serving' and 'batch' naming each other as parent (a manifest error) must not send the walk round for
    ever: each Cohort counts once. Kills `Tree.borrows`' mutants of `seen`."""
    manifests = _fair_sharing_off(compliant())
    manifests["inference-cq"]["spec"]["cohortName"] = "serving"
    manifests["serving"] = cohort("serving", "batch")
    manifests["batch"] = cohort("batch", "serving")
    manifests["batch-cq"] = cluster_queue("batch-cq", "training", {**ZERO, "cpu": "1"}, None, cohort="batch")
    assert whole(manifests) == [blocked("serving", "batch-cq")]


def test_a_cohort_whose_quota_is_unknown_still_judges_its_borrowers():
    """'serving' with resourceGroups unknown at preview: its fail-closed finding, and the borrower below it still
    blocks (kills `Tree.borrows`' `closed` default mutants)."""
    manifests = _fair_sharing_off(compliant())
    nested(manifests, None)
    manifests["serving"]["spec"]["resourceGroups"] = UNKNOWN
    unknown = "The Cohort 'serving' has spec.resourceGroups unknown at preview, so this policy cannot check it and " \
              "fails closed; give spec.resourceGroups a value known at preview (a literal or stack config, not an " \
              "output of another resource)."
    assert whole(manifests) == [("unknown-at-preview", ObjectRef("Cohort", None, "serving"), "spec.resourceGroups",
                                 MISSING, unknown), blocked("serving", "batch-cq")]


def test_an_inference_queue_whose_cohort_is_unknown_fails_closed_on_that_queue():
    """Kills `guarded(None, judge)` in `_fair_sharing_findings`: the fail-closed finding names the inference queue."""
    manifests = _fair_sharing_off(compliant())
    manifests["inference-cq"]["spec"]["cohortName"] = UNKNOWN
    found = whole(manifests)
    assert found == [("unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-inference-cq"), "spec.cohortName",
                      MISSING,
                      "The ClusterQueue 'c12-inference-cq' has spec.cohortName unknown at preview, so this policy "
                      "cannot check it and fails closed; give spec.cohortName a value known at preview (a literal or "
                      "stack config, not an output of another resource).")]


def _borrow_within_cohort(manifests: dict[str, dict], threshold: int | None = None) -> dict[str, dict]:
    """The inference queue may borrow cpu; the training queue preempts LowerPriority while borrowing."""
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].pop("borrowingLimit")
    bwc: dict = {"policy": "LowerPriority"}
    if threshold is not None:
        bwc["maxPriorityThreshold"] = threshold
    manifests["training-cq"]["spec"]["preemption"]["borrowWithinCohort"] = bwc
    return manifests


def test_borrow_within_cohort_with_no_inference_priority_known_fails_closed():
    """No inference WorkloadPriorityClass in the stack or the config: the lowest inference priority is unknown and
    any lower-priority preemption may reach inference. Kills `_floor`'s `or True` and the `floor is not None`
    mutant of `outranking`."""
    manifests = _borrow_within_cohort(compliant())
    manifests.pop("inference-prio")
    assert whole(manifests) == [(
        POLICY, TRAINING, "spec.preemption.borrowWithinCohort", {"policy": "LowerPriority"},
        "The ClusterQueue 'c12-training-cq' has spec.preemption.borrowWithinCohort = {'policy': 'LowerPriority'}: "
        "while borrowing, this queue may preempt the workloads of any ClusterQueue above its nominal quota that have "
        "a lower priority (no maxPriorityThreshold; lowest inference priority unknown), and the inference "
        "ClusterQueue 'c12-inference-cq' of the same cohort tree 'c12-shared' may borrow 'cpu' of flavor "
        "'c12-default', so its workloads can be preempted by a borrower; set borrowingLimit 0 on every resource of "
        "'c12-inference-cq', or set maxPriorityThreshold below the inference priority (or borrowWithinCohort policy "
        "Never) here.")]


@pytest.mark.parametrize("equal", [False, True])
def test_borrow_within_cohort_needs_a_class_strictly_above_inference(equal):
    """LowerPriority preempts only workloads of strictly lower priority (Kueue 0.19.2
    `pkg/scheduler/preemption/common/preemption_policy.go`), so with no class above 1000 (one at 1000 at most) no
    borrower outranks inference: nothing reported. Kills `outranking`'s `>=` and `floor is not None` mutants."""
    manifests = _borrow_within_cohort(compliant())
    if equal:
        manifests["peer"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                             "metadata": {"name": "peer", "labels": {"kueue-cohorts/role": "training"}},
                             "value": 1000}
    assert whole(manifests) == []


def test_every_cohort_tree_is_looked_at_not_only_the_first():
    """A ClusterQueue of another tree listed first (cohort 'other', no inference there) does not stop the search:
    the training queue of inference's tree is still reported (kills the `continue` made `break`)."""
    manifests = {"other-cq": cluster_queue("other-cq", "training", ZERO, None, cohort="other"),
                 **_borrow_within_cohort(compliant())}
    manifests["urgent"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                           "metadata": {"name": "urgent", "labels": {"kueue-cohorts/role": "training"}},
                           "value": 2000}
    assert whole(manifests) == [(
        POLICY, TRAINING, "spec.preemption.borrowWithinCohort", {"policy": "LowerPriority"},
        "The ClusterQueue 'c12-training-cq' has spec.preemption.borrowWithinCohort = {'policy': 'LowerPriority'}: "
        "while borrowing, this queue may preempt the workloads of any ClusterQueue above its nominal quota that have "
        "a lower priority (no maxPriorityThreshold; lowest inference priority 1000), and the inference "
        "ClusterQueue 'c12-inference-cq' of the same cohort tree 'c12-shared' may borrow 'cpu' of flavor "
        "'c12-default', so its workloads can be preempted by a borrower; set borrowingLimit 0 on every resource of "
        "'c12-inference-cq', or set maxPriorityThreshold below 1000 (or borrowWithinCohort policy Never) here.")]


def test_the_configuration_without_fair_sharing_is_silent_with_the_flag_off():
    """The flag alone, without a fairSharing block, turns nothing on (fairsharing.Enabled needs the block)."""
    manifests = with_flags(["--feature-gates=FairSharingPreemptWithinNominal=false"])
    manifests["kueue-config"] = kueue_config_map(SAFE_MANAGER_CONFIG)
    assert whole(manifests) == []


@pytest.mark.parametrize("bwc", [{"policy": "Never"}, {"maxPriorityThreshold": 5000}, {}])
def test_borrow_within_cohort_never_or_without_a_policy_reaches_nothing(bwc):
    """borrowWithinCohort with policy Never, or without a policy (Kueue 0.19.2 `clusterqueue_types.go`: the default
    is Never), preempts nothing while borrowing: no finding. Kills the mutants of the policy read and of "Never"."""
    manifests = _borrow_within_cohort(compliant())
    manifests["training-cq"]["spec"]["preemption"]["borrowWithinCohort"] = bwc
    manifests["urgent"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                           "metadata": {"name": "urgent", "labels": {"kueue-cohorts/role": "training"}},
                           "value": 2000}
    assert whole(manifests) == []


def test_borrow_within_cohort_with_no_priority_class_at_all_fails_closed():
    """No WorkloadPriorityClass anywhere: the lowest inference priority is unknown and nothing says no class
    outranks it, so the queue is reported (kills `floor is None and not outranking`)."""
    manifests = _borrow_within_cohort(compliant())
    manifests.pop("inference-prio")
    manifests.pop("training-prio")
    assert [f[4] for f in whole(manifests)] == [
        "The ClusterQueue 'c12-training-cq' has spec.preemption.borrowWithinCohort = {'policy': 'LowerPriority'}: "
        "while borrowing, this queue may preempt the workloads of any ClusterQueue above its nominal quota that have "
        "a lower priority (no maxPriorityThreshold; lowest inference priority unknown), and the inference "
        "ClusterQueue 'c12-inference-cq' of the same cohort tree 'c12-shared' may borrow 'cpu' of flavor "
        "'c12-default', so its workloads can be preempted by a borrower; set borrowingLimit 0 on every resource of "
        "'c12-inference-cq', or set maxPriorityThreshold below the inference priority (or borrowWithinCohort policy "
        "Never) here."]


def test_a_threshold_at_or_above_inference_is_shown_in_the_finding():
    """maxPriorityThreshold 5000 (at or above inference's 1000) still reaches inference; the finding shows it (kills
    the mutants of `shown` and of the threshold read)."""
    manifests = _borrow_within_cohort(compliant(), threshold=5000)
    manifests["urgent"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                           "metadata": {"name": "urgent", "labels": {"kueue-cohorts/role": "training"}},
                           "value": 2000}
    [(policy, subject, field, value, message)] = whole(manifests)
    assert (policy, subject, field, value) == (POLICY, TRAINING, "spec.preemption.borrowWithinCohort",
                                               {"policy": "LowerPriority", "maxPriorityThreshold": 5000})
    assert message.endswith(
        "while borrowing, this queue may preempt the workloads of any ClusterQueue above its nominal quota that have "
        "a lower priority (maxPriorityThreshold 5000; lowest inference priority 1000), and the inference "
        "ClusterQueue 'c12-inference-cq' of the same cohort tree 'c12-shared' may borrow 'cpu' of flavor "
        "'c12-default', so its workloads can be preempted by a borrower; set borrowingLimit 0 on every resource of "
        "'c12-inference-cq', or set maxPriorityThreshold below 1000 (or borrowWithinCohort policy Never) here.")


def test_a_local_queue_whose_cluster_queue_is_unknown_counts_as_a_training_queue():
    """A LocalQueue whose spec.clusterQueue is unknown at preview may be a training queue (fail closed): a class at
    or above inference is reported with that queue as the example, and the queue's own fail-closed finding (kills
    `training_queues.append(None)`)."""
    manifests = compliant()
    mystery = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "mystery-lq", "namespace": "c12-training"}, "spec": {"clusterQueue": UNKNOWN}}
    manifests = {"mystery": mystery, **manifests}
    manifests["urgent"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                           "metadata": {"name": "urgent"}, "value": 5000}
    assert whole(manifests) == [
        (POLICY, ObjectRef("WorkloadPriorityClass", None, "urgent"), "value", 5000,
         "The WorkloadPriorityClass 'urgent' has value = 5000: any training or tenant namespace may name it in "
         "kueue.x-k8s.io/priority-class (Kueue 0.19.2 has no per-namespace restriction on WorkloadPriorityClasses; "
         "e.g. LocalQueue 'c12-training/mystery-lq'), and its value is at or above the lowest inference priority "
         "1000, so such workloads rank with inference in Kueue's admission and preemption order; lower its value "
         "below 1000, or delete it, or label it kueue-cohorts/role: inference when only inference uses it."),
        ("unknown-at-preview", ObjectRef("LocalQueue", "c12-training", "mystery-lq"), "spec.clusterQueue", MISSING,
         "The LocalQueue 'c12-training/mystery-lq' has spec.clusterQueue unknown at preview, so this policy cannot "
         "check it and fails closed; give spec.clusterQueue a value known at preview (a literal or stack config, not "
         "an output of another resource).")]


def _class(name: Any, value: int, role: str | None = None) -> dict:
    meta: dict = {"name": name}
    if role is not None:
        meta["labels"] = {"kueue-cohorts/role": role}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": meta, "value": value}


RULE_1000 = ("any training or tenant namespace may name it in kueue.x-k8s.io/priority-class (Kueue 0.19.2 has no "
             "per-namespace restriction on WorkloadPriorityClasses; e.g. LocalQueue 'c12-training/c12-training-lq'), "
             "and its value is at or above the lowest inference priority 1000, so such workloads rank with inference "
             "in Kueue's admission and preemption order")


def test_a_cluster_class_from_the_config_is_a_whole_finding_of_the_policy_config():
    """The finding for a class of the cluster outside the stack (pack config priorityClasses): no URN, no object, the
    config key as field, every part written out. Kills the mutants of that Violation's arguments."""
    found = [v for rule, v in run(stack(compliant()), {POLICY: {**CONFIG[POLICY],
                                                                 "priorityClasses": {"cluster-urgent": 4000}}})
             if rule is INFERENCE_RECLAIM_UNBLOCKED]
    fix = "lower its value below 1000, or delete it from the cluster"
    assert found == [Violation(
        "The WorkloadPriorityClass 'cluster-urgent' of the cluster (policy config priorityClasses, value 4000): "
        f"{RULE_1000}; {fix}.", None, None, "priorityClasses['cluster-urgent']", 4000, RULE_1000, fix, POLICY)]
    assert found[0].value == 4000


def test_a_class_both_in_the_stack_and_in_the_config_is_reported_once_on_the_stack():
    """'urgent' is a WorkloadPriorityClass of the stack and of the pack config's priorityClasses: one finding, on the
    stack's object; an unknown-named class listed before it does not end the list of the stack's names. Kills the
    mutants of `in_stack` (the kind read, the name added, `continue` made `break`)."""
    manifests = {"nameless": _class(UNKNOWN, 5), **compliant()}
    manifests["urgent"] = _class("urgent", 5000)
    found = whole(manifests, priorityClasses={"urgent": 5000})
    assert [(f[0], f[1], f[2], f[3]) for f in found] == [
        ("unknown-at-preview", ObjectRef("WorkloadPriorityClass", None, "nameless"), "metadata.name", MISSING),
        (POLICY, ObjectRef("WorkloadPriorityClass", None, "urgent"), "value", 5000)]


def test_a_cluster_class_named_like_another_kueue_object_is_still_a_class():
    """A cluster class named 'c12-training-cq' (the name of a ClusterQueue of the stack, not of a class) is reported:
    only WorkloadPriorityClasses of the stack stand for it (kills `is_kueue(None)` in the second loop)."""
    found = whole(compliant(), priorityClasses={"c12-training-cq": 4000})
    assert [(f[0], f[1], f[2], f[3]) for f in found] == [(POLICY, None, "priorityClasses['c12-training-cq']", 4000)]


def test_a_stray_value_on_another_kueue_object_is_no_priority_class():
    """A top-level `value` on a LocalQueue manifest (the apiserver prunes it: not in the CRD's schema) does not make
    it a WorkloadPriorityClass (kills `is_kueue(None)` in the first loop)."""
    manifests = compliant()
    manifests["training-lq"]["value"] = 5000
    assert whole(manifests) == []


def test_cluster_classes_declared_training_or_inference_are_skipped_and_the_rest_still_judged():
    """priorityClasses (sorted by name): 'a-train' declared training and 'b-serve' declared inference are not this
    policy's (WORKLOAD_PRIORITY_CLASS ranks the training ones); 'c-urgent' is reported. 'b-serve' at 500 is the
    lowest inference priority, so the stack's 'urgent' at 700 is at or above it. Kills the `or`/`and` mutants of
    the skip, its `continue` made `break`, and the outside classes' values put under another name or as None."""
    manifests = compliant()
    manifests["urgent"] = _class("urgent", 700)
    found = whole(manifests, priorityClasses={"a-train": 5000, "b-serve": 500, "c-urgent": 600},
                  trainingPriorityClasses=["c12-training-prio", "a-train"],
                  inferencePriorityClasses=["c12-inference-prio", "b-serve"])
    assert [(f[0], f[1], f[2], f[3]) for f in found] == [
        (POLICY, ObjectRef("WorkloadPriorityClass", None, "urgent"), "value", 700),
        (POLICY, None, "priorityClasses['c-urgent']", 600)]
    assert found[1][4] == (
        "The WorkloadPriorityClass 'c-urgent' of the cluster (policy config priorityClasses, value 600): any training "
        "or tenant namespace may name it in kueue.x-k8s.io/priority-class (Kueue 0.19.2 has no per-namespace "
        "restriction on WorkloadPriorityClasses; e.g. LocalQueue 'c12-training/c12-training-lq'), and its value is "
        "at or above the lowest inference priority 500, so such workloads rank with inference in Kueue's admission "
        "and preemption order; lower its value below 500, or delete it from the cluster.")


def test_fair_sharing_settings_leaves_an_unset_or_malformed_gate_unset():
    """`fair_sharing_settings` (public): a Configuration with fair sharing and no gate, and one whose gate is the
    string "false" (a map[string]bool Kueue cannot load), both read as gate not set (None), with no manager flag.
    Kills the `""` start of `flag_gate` and the `or True` of the bool check."""
    objs = stack({"a": kueue_config_map(fair_sharing(None)),
                  "b": kueue_config_map(SAFE_MANAGER_CONFIG + "fairSharing: {}\nfeatureGates:\n"
                                        "  FairSharingPreemptWithinNominal: \"false\"\n")})
    assert [(f.where, f.enabled, f.within_nominal) for f in fair_sharing_settings(objs)] == [
        ("data['controller_manager_config.yaml']", True, None), ("data['controller_manager_config.yaml']", True, None)]


def test_the_configurations_own_gate_is_reported_whatever_the_flag_says():
    """The Configuration sets the gate false and the manager flag true: Kueue 0.19.2 refuses to start with both
    (`cmd/kueue/main.go`, config.ValidateFeatureGates); the Configuration's own false is what this rule reports (kills
    the mutant that lets the flag override it)."""
    manifests = with_flags(["--feature-gates=FairSharingPreemptWithinNominal=true"])
    manifests["kueue-config"] = kueue_config_map(fair_sharing(False))
    assert whole(manifests) == [blocked("serving", "batch-cq")]


def _chart(kind: str, gates: list[dict], group: str = "helm.sh/v3", config: Any = None) -> dict:
    """The kueue chart (Pulumi `kubernetes:helm.sh/v3:Release` or v4 Chart) with fair sharing in its managerConfig
    and `gates` as values.controllerManager.featureGates."""
    return {"apiVersion": group, "kind": kind, "metadata": {"name": "kueue"},
            "chart": "oci://registry.k8s.io/kueue/charts/kueue",
            "values": {"controllerManager": {"featureGates": gates},
                       "managerConfig": {"controllerManagerConfigYaml": config if config is not None
                                         else fair_sharing(None)}}}


def chart_finding(kind: str) -> tuple[str, Any, str, Any, str]:
    return (POLICY, ObjectRef(kind, None, "kueue"),
            "values.managerConfig.controllerManagerConfigYaml.featureGates.FairSharingPreemptWithinNominal", False,
            f"The {kind} 'kueue' has values.managerConfig.controllerManagerConfigYaml.featureGates."
            "FairSharingPreemptWithinNominal = False: with fair sharing on and FairSharingPreemptWithinNominal off, "
            "Kueue 0.19.2 lets the inference ClusterQueue 'c12-inference-cq' preempt a borrower outside Cohort "
            "'serving' only when the share of 'serving' (which counts what its other members borrow) is not above the "
            "borrower's, and ClusterQueue 'batch-cq' in that subtree may borrow 'cpu' of flavor 'c12-default', so "
            "inference's reclaim can be refused; remove featureGates.FairSharingPreemptWithinNominal: false (Kueue's "
            "default is on), or set borrowingLimit 0 for 'cpu' of flavor 'c12-default' on Cohort 'serving', or put "
            "'c12-inference-cq' directly under the root of its tree.")


OFF_GATE = {"name": "FairSharingPreemptWithinNominal", "enabled": False}
ON_GATE = {"name": "FairSharingPreemptWithinNominal", "enabled": True}


@pytest.mark.parametrize("kind, gates, off", [
    ("Release", [OFF_GATE], True),
    ("Chart", [OFF_GATE], True),
    ("Chart", [ON_GATE], False),
    ("Chart", [{"name": "TopologyAwareScheduling", "enabled": False}], False),
    ("Chart", [OFF_GATE, {"name": "TopologyAwareScheduling", "enabled": True}], True),
])
def test_the_kueue_charts_feature_gates_as_the_chart_renders_them(kind, gates, off):
    """The kueue chart renders values.controllerManager.featureGates ([{name, enabled}]) as the manager's
    --feature-gates (kueue chart templates/manager/manager.yaml); a Pulumi helm.sh/v3 Release carries it as well as a
    v4 Chart. Only FairSharingPreemptWithinNominal's own entry counts, with its own `enabled`. Kills the mutants of
    "Release", of the name check's `and` and of the `enabled` read."""
    manifests = compliant()
    manifests.pop("kueue-config")
    manifests["kueue"] = _chart(kind, gates)
    nested(manifests, None)
    assert whole(manifests) == ([chart_finding(kind)] if off else [])


def test_a_chart_of_another_api_group_renders_no_flag():
    """An object of kind Chart outside helm.sh (some other operator's CRD) is not the kueue chart: its featureGates
    values render nothing (kills the `or` of the helm.sh check)."""
    manifests = with_flags([])
    manifests["other"] = _chart("Chart", [OFF_GATE], group="charts.example.com/v1")
    assert whole(manifests) == []


def test_a_configuration_given_as_a_map_in_the_charts_values_is_read_as_written():
    """values.managerConfig.controllerManagerConfigYaml given as a map rather than YAML text is judged as the map it
    is (kills the `or True` that would hand the map to the YAML parser)."""
    manifests = compliant()
    manifests.pop("kueue-config")
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "fairSharing": {},
              "featureGates": {"FairSharingPreemptWithinNominal": False}}
    manifests["kueue"] = _chart("Chart", [], config=config)
    nested(manifests, None)
    assert whole(manifests) == [chart_finding("Chart")]


@pytest.mark.parametrize("first", ["config.kueue.x-k8s.io: [", "- config.kueue.x-k8s.io"])
def test_a_broken_configuration_before_the_real_one_does_not_hide_it(first):
    """A ConfigMap key whose text mentions config.kueue.x-k8s.io but is not YAML, or not a map, before the real
    Configuration: the real one is still read (kills the `continue`s made `break`)."""
    manifests = compliant()
    manifests["kueue-config"]["data"] = {"a-broken.yaml": first,
                                         "controller_manager_config.yaml": fair_sharing(False)}
    nested(manifests, None)
    assert whole(manifests) == [blocked("serving", "batch-cq")]


def test_a_local_queue_whose_name_is_unknown_is_named_by_its_resource():
    """The only training LocalQueue's name unknown at preview: the example in the class finding names it by its
    Pulumi resource name (kills `example = None`)."""
    manifests = compliant()
    manifests["training-lq"]["metadata"]["name"] = UNKNOWN
    manifests["urgent"] = _class("urgent", 5000)
    found = [f for f in whole(manifests) if f[0] == POLICY]
    assert [f[4] for f in found] == [
        "The WorkloadPriorityClass 'urgent' has value = 5000: any training or tenant namespace may name it in "
        "kueue.x-k8s.io/priority-class (Kueue 0.19.2 has no per-namespace restriction on WorkloadPriorityClasses; "
        "e.g. LocalQueue 'training-lq'), and its value is at or above the lowest inference priority 1000, so such "
        "workloads rank with inference in Kueue's admission and preemption order; lower its value below 1000, or "
        "delete it, or label it kueue-cohorts/role: inference when only inference uses it."]


def test_a_stray_cohort_name_on_another_kueue_kind_borrows_nothing():
    """A LocalQueue manifest carrying `spec.cohortName` and quota (not in its schema: the apiserver prunes them) is no
    member of Cohort 'serving': the inference queue alone there borrows nothing, so fair sharing cannot block it
    (kills `is_kueue(None)` in `Tree.build`)."""
    manifests = _fair_sharing_off(compliant())
    manifests["inference-cq"]["spec"]["cohortName"] = "serving"
    manifests["serving"] = cohort("serving", "c12-shared")
    stray = cluster_queue("stray", "training", {**ZERO, "cpu": "1"}, None, cohort="serving")
    manifests["training-lq"]["spec"].update(cohortName="serving", resourceGroups=stray["spec"]["resourceGroups"])
    assert whole(manifests) == []


def test_a_stray_value_on_another_kueue_object_outranks_nothing():
    """borrowWithinCohort that would reach inference, and no WorkloadPriorityClass above inference's 1000: a top-level
    `value: 5000` on a LocalQueue manifest (pruned by the apiserver) is no class that outranks it, so nothing is
    reported (kills `is_kueue(None)` where the classes are collected)."""
    manifests = _borrow_within_cohort(compliant())
    manifests["training-lq"]["value"] = 5000
    assert whole(manifests) == []
