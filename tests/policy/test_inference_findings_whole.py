"""Whole findings of the inference rules (inference-reclaim-any, inference-borrowing-limit-zero,
inference-fits-nominal) and of the quota reader they share (`vocabulary.quota`).

Each test asserts every part of a finding (policy, field, value, rule, fix, message, URN), written out by hand, so
a dropped argument, a changed field path or a reworded rule fails (issue 42: the mutants of these modules that
survived asserted messages only). `flavor_fit` is judged against hand tables of Kueue's flavor assignment (one
flavor per resource group, the first that holds the whole group; `pkg/scheduler/flavorassigner`, Kueue v0.19.2).
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

import pytest

from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import check_inference_borrowing_limit_zero
from kueue_cohorts.policy.rules.inference_fits_nominal import check_inference_fits_nominal
from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.policy.rules.vocabulary.quantity import parse
from kueue_cohorts.policy.rules.vocabulary.quota import FlavorFit, QuotaEntry, flavor_fit, quota_entries
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import compliant, kube, stack, urn

CQ_URN = "urn:pulumi:test::kueue-cohorts::kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue::inference-cq"


def whole(violation: Any) -> tuple[Any, ...]:
    """Every part of a finding (Violation's equality leaves `value` out)."""
    return (violation.policy, violation.field, violation.value, violation.rule, violation.fix, violation.message,
            violation.urn)


# --- inference-reclaim-any --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, now", [(MISSING, "not set (Kueue's default is Never)"), ("Never", "'Never'"),
                                        ("LowerPriority", "'LowerPriority'")])
def test_reclaim_any_finding_whole(value, now):
    manifest = compliant()["inference-cq"]
    if value is MISSING:
        del manifest["spec"]["preemption"]["reclaimWithinCohort"]
    else:
        manifest["spec"]["preemption"]["reclaimWithinCohort"] = value
    assert [whole(v) for v in check_inference_reclaim_any(kube("inference-cq", manifest))] == [(
        "inference-reclaim-any", "spec.preemption.reclaimWithinCohort", value,
        "the inference ClusterQueue must reclaim its nominalQuota from any borrower, whatever its priority "
        "(Kueue's default is Never)",
        "set reclaimWithinCohort to Any",
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set spec.preemption.reclaimWithinCohort "
        f"to Any, but it is {now}; set it to Any so that inference takes its nominal quota back from borrowing "
        "workloads in the cohort whatever their priority.", CQ_URN)]


# --- inference-borrowing-limit-zero -----------------------------------------------------------------------------------

BORROW_RULE = ("the inference ClusterQueue must never borrow: its borrowingLimit must be an explicit 0 on every "
               "resource of every flavor (Kueue reads a missing borrowingLimit as unlimited)")
BORROW_FIX = "set borrowingLimit to 0 (or leave it out of the stack config: the component writes 0)"


@pytest.mark.parametrize("raw, problem", [
    ("2", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit is '2'"),
    ("lots", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit is 'lots', which is not a Kubernetes "
             "quantity"),
    (MISSING, "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit is missing, which Kueue reads as "
              "unlimited borrowing from cohort 'c12-shared'")])
def test_borrowing_limit_finding_whole(raw, problem):
    manifest = compliant()["inference-cq"]
    entry = manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    if raw is MISSING:
        del entry["borrowingLimit"]
    else:
        entry["borrowingLimit"] = raw
    assert [whole(v) for v in check_inference_borrowing_limit_zero(kube("inference-cq", manifest))] == [(
        "inference-borrowing-limit-zero", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", raw,
        BORROW_RULE, BORROW_FIX,
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0 for resource "
        f"'cpu' of flavor 'c12-default', but {problem}; set borrowingLimit: \"0\" so that inference never runs on "
        "quota it can lose.", CQ_URN)]


@pytest.mark.parametrize("kind", ["Cohort", "LocalQueue", "ResourceFlavor", "Workload"])
def test_only_a_cluster_queue_is_judged_for_borrowing(kind):
    # The same inference-labelled body with no borrowingLimit anywhere, as another Kueue kind: not a queue that
    # borrows, so nothing to find.
    manifest = compliant()["inference-cq"]
    manifest["kind"] = kind
    for entry in manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        del entry["borrowingLimit"]
    assert check_inference_borrowing_limit_zero(kube("inference-cq", manifest)) == []
    assert check_inference_reclaim_any(kube("inference-cq", manifest)) == []


# --- vocabulary.quota ------------------------------------------------------------------------------------------------

def _cq(groups: list[list[tuple[str, dict[str, str]]]]) -> Any:
    """A ClusterQueue whose resource groups are `groups`: per group, (flavor, {resource: nominalQuota}) in order."""
    return kube("cq", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [
            {"coveredResources": sorted({r for _, quotas in group for r in quotas}),
             "flavors": [{"name": flavor, "resources": [{"name": r, "nominalQuota": q} for r, q in quotas.items()]}
                         for flavor, quotas in group]}
            for group in groups]}})


def test_quota_entries_name_flavor_resource_path_and_group():
    cq = _cq([[("a", {"cpu": "1"}), ("b", {"cpu": "2"})], [("g", {"gpu": "3"})]])
    assert [(e.flavor, e.resource, e.path, e.group, e.field("nominalQuota")) for e in quota_entries(cq)] == [
        ("a", "cpu", "spec.resourceGroups[0].flavors[0].resources[0]", 0, "1"),
        ("b", "cpu", "spec.resourceGroups[0].flavors[1].resources[0]", 0, "2"),
        ("g", "gpu", "spec.resourceGroups[1].flavors[0].resources[0]", 1, "3")]


def _nominal(entry: QuotaEntry) -> Optional[Decimal]:
    return parse(entry.field("nominalQuota"))


D = Decimal
TWO_FLAVORS = [[("a", {"cpu": "4", "gpu": "1"}), ("b", {"cpu": "8", "gpu": "2"})]]
FIT_TABLE = [
    # (groups, requests, expected FlavorFit) -- written from Kueue's rule, not from the function
    (TWO_FLAVORS, {"cpu": D(2), "gpu": D(1)}, FlavorFit(True, frozenset(), {}, {0: "a"})),
    (TWO_FLAVORS, {"cpu": D(6), "gpu": D(1)}, FlavorFit(True, frozenset(), {}, {0: "b"})),
    (TWO_FLAVORS, {"cpu": D(6), "gpu": D(3)}, FlavorFit(False, frozenset(), {"gpu": (D(2), "b")}, {})),
    # a tie in misfits (a misses cpu, b misses gpu): the first flavor is the closest
    ([[("a", {"cpu": "1", "gpu": "4"}), ("b", {"cpu": "4", "gpu": "1"})]], {"cpu": D(2), "gpu": D(2)},
     FlavorFit(False, frozenset(), {"cpu": (D(1), "a")}, {})),
    # a resource the flavor lists no entry for holds 0 there; below 1 still misses
    ([[("a", {"cpu": "4"}), ("b", {"cpu": "4", "gpu": "1"})]], {"cpu": D(1), "gpu": D("0.5")},
     FlavorFit(True, frozenset(), {}, {0: "b"})),
    ([[("a", {"cpu": "4"}), ("b", {"cpu": "0"}), ("c", {"cpu": "0", "gpu": "0"})]], {"cpu": D(1), "gpu": D("0.5")},
     FlavorFit(False, frozenset(), {"gpu": (D(0), "a")}, {})),
    ([[("a", {"cpu": "0"}), ("b", {"cpu": "0", "gpu": "1"})]], {"cpu": D(1), "gpu": D("0.5")},
     FlavorFit(False, frozenset(), {"cpu": (D(0), "b")}, {})),
    # an unparsable quota holds 0
    ([[("a", {"cpu": "many"})]], {"cpu": D("0.5")}, FlavorFit(False, frozenset(), {"cpu": (D(0), "a")}, {})),
    # a zero request asks nothing: not uncovered, and no group is chosen for it
    ([[("a", {"cpu": "1"})]], {"gpu": D(0)}, FlavorFit(True, frozenset(), {}, {})),
    ([[("a", {"cpu": "1"})]], {"gpu": D(1)}, FlavorFit(False, frozenset({"gpu"}), {}, {})),
    # only the groups asked for are assigned; a later group is still judged after one not asked
    ([[("a", {"cpu": "1"})], [("g1", {"gpu": "1"}), ("g2", {"gpu": "4"})]], {"gpu": D(3)},
     FlavorFit(True, frozenset(), {}, {1: "g2"})),
    ([[("a", {"cpu": "1"})], [("g1", {"gpu": "1"})]], {"gpu": D(3)},
     FlavorFit(False, frozenset(), {"gpu": (D(1), "g1")}, {})),
    ([[("a", {"cpu": "1"})], [("g1", {"gpu": "1"})]], {"cpu": D(1), "gpu": D(1)},
     FlavorFit(True, frozenset(), {}, {0: "a", 1: "g1"})),
    # short in one group and uncovered elsewhere: does not fit
    ([[("a", {"cpu": "1"})]], {"cpu": D(2), "gpu": D(1)},
     FlavorFit(False, frozenset({"gpu"}), {"cpu": (D(1), "a")}, {})),
]


@pytest.mark.parametrize("groups, requests, expected", FIT_TABLE)
def test_flavor_fit_by_hand_table(groups, requests, expected):
    assert flavor_fit(_cq(groups), requests, _nominal) == expected


# --- inference-fits-nominal ------------------------------------------------------------------------------------------

ISVC_URN = urn("isvc", compliant()["isvc"])
REQUESTS = ("spec", "predictor", "model", "resources", "requests")
TAIL = ("; lower the predictor's requests or raise the ClusterQueue's nominalQuota, so that serving never runs on "
        "borrowed quota.")
NEVER = "; with borrowingLimit 0 it can never be admitted, and it does not trigger reclaim"


def _requests(manifests: dict[str, Any]) -> dict[str, str]:
    node = manifests["isvc"]
    for key in REQUESTS:
        node = node[key]
    return node


def _fits(manifests: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [whole(v) for v in check_inference_fits_nominal(stack(manifests))]


def _short(field: str, shown: str, quota: str, cq: str = "c12-inference-cq", flavor: str = "",
           isvc: str = "c12-inference/c12-inference-demo", lq: str = "c12-inference/c12-inference-lq",
           resource: str = "memory") -> tuple[Any, ...]:
    in_flavor = f" in its closest flavor '{flavor}' (no flavor holds the whole replica)" if flavor else ""
    return ("inference-fits-nominal", f"spec.predictor.model.resources.requests.{field}", shown,
            f"one replica asks for {shown}, more than the nominalQuota {quota} of ClusterQueue '{cq}'{in_flavor}"
            f"{NEVER}",
            f"request at most {quota} per replica, or raise the nominalQuota" + (f" of flavor '{flavor}'" if flavor
                                                                                 else ""),
            f"The InferenceService '{isvc}' requests per replica more than the nominalQuota of ClusterQueue '{cq}' "
            f"behind LocalQueue '{lq}': '{resource}' {shown} (nominalQuota {quota}{in_flavor}){TAIL}", ISVC_URN)


def test_a_replica_over_the_nominal_quota_whole():
    manifests = compliant()
    _requests(manifests)["memory"] = "9Gi"
    assert _fits(manifests) == [_short("memory", "9Gi", "8Gi")]


def test_the_queue_label_on_the_predictor_alone_is_read():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["labels"] = manifests["isvc"]["metadata"].pop("labels")
    _requests(manifests)["memory"] = "9Gi"
    assert _fits(manifests) == [_short("memory", "9Gi", "8Gi")]


def test_the_local_queue_of_the_service_s_own_namespace_is_used():
    # A LocalQueue of the same name in another namespace points at the training queue; the service's own one (and
    # only it) decides.
    manifests = compliant()
    manifests["other-lq"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                             "metadata": {"name": "c12-inference-lq", "namespace": "elsewhere"},
                             "spec": {"clusterQueue": "c12-training-cq"}}
    _requests(manifests)["memory"] = "9Gi"
    assert _fits(manifests) == [_short("memory", "9Gi", "8Gi")]


def test_two_flavors_name_the_closest_one_three_too():
    for extra in (1, 2):
        manifests = compliant()
        flavors = manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"]
        for n in range(extra):
            flavors.append({"name": f"c12-small-{n}", "resources": [
                {"name": entry["name"], "nominalQuota": "1", "borrowingLimit": "0"}
                for entry in flavors[0]["resources"]]})
        _requests(manifests)["memory"] = "9Gi"
        assert _fits(manifests) == [_short("memory", "9Gi", "8Gi", flavor="c12-default")]


@pytest.mark.parametrize("resource, amount", [("ephemeral-storage", "3Gi"), ("hugepages-2Mi", "2Mi"),
                                              ("hugepages-1Gi", "1Gi"), ("example.com/dongle", "2")])
def test_an_uncovered_resource_whole(resource, amount):
    manifests = compliant()
    _requests(manifests)[resource] = amount
    assert _fits(manifests) == [(
        "inference-fits-nominal", f"spec.predictor.model.resources.requests.{resource}"
        if "/" not in resource else f'spec.predictor.model.resources.requests["{resource}"]', amount,
        f"'{resource}' is not covered by ClusterQueue 'c12-inference-cq', so Kueue can never admit a replica (a limit "
        "without a request requests its limit)",
        f"add '{resource}' to the ClusterQueue's nominalQuota, or drop it from the replica",
        "The InferenceService 'c12-inference/c12-inference-demo' requests per replica more than the nominalQuota of "
        f"ClusterQueue 'c12-inference-cq' behind LocalQueue 'c12-inference/c12-inference-lq': '{resource}' {amount} "
        f"(the ClusterQueue covers no such resource){TAIL}", ISVC_URN)]


def _fails_closed(namespace: Optional[str], lq: str, missing: str, isvc: str) -> tuple[Any, ...]:
    return ("inference-fits-nominal", "metadata.namespace", namespace,
            f"an InferenceService must run where its LocalQueue is: the {missing} is not in this stack, so its quota "
            "cannot be checked",
            "put the InferenceService in a namespace of the inference ClusterQueue (or omit the namespace)",
            f"The InferenceService '{isvc}' is queued to LocalQueue '{lq}', but the {missing} is not in this stack, so "
            "its nominalQuota cannot be checked and the policy fails closed; define the queue in this stack or queue "
            "the InferenceService to one that is.", ISVC_URN)


def test_a_cluster_queue_not_in_the_stack_fails_closed_whole():
    manifests = compliant()
    del manifests["inference-cq"]
    assert _fits(manifests) == [_fails_closed("c12-inference", "c12-inference/c12-inference-lq",
                                              "ClusterQueue 'c12-inference-cq'", "c12-inference/c12-inference-demo")]


def test_a_local_queue_not_in_the_stack_without_a_namespace_fails_closed_whole():
    manifests = compliant()
    del manifests["isvc"]["metadata"]["namespace"]
    manifests["isvc"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "nope"
    assert _fits(manifests) == [_fails_closed(None, "nope", "LocalQueue 'nope'", "c12-inference-demo")]


def test_a_request_that_is_no_quantity_whole():
    manifests = compliant()
    _requests(manifests)["cpu"] = "lots"
    err = "spec.predictor.model.resources.requests.cpu is not a Kubernetes quantity"
    assert _fits(manifests) == [(
        "inference-fits-nominal", "spec.predictor", MISSING, f"has {err}", "fix the quantity",
        f"The InferenceService 'c12-inference/c12-inference-demo' has {err}; fix the quantity.", ISVC_URN)]
