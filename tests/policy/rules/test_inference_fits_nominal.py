"""inference-fits-nominal (kueue_cohorts/policy/rules/inference_fits_nominal.py):
one replica of every queued inference workload fits its ClusterQueue's nominalQuota, through the quota reader
(`vocabulary.quota`).

The `_whole` tests assert every part of a finding (policy, field, value, rule, fix, message, URN), written out, so
a dropped argument, a changed field path or a reworded rule fails (issue 42: the mutants of these modules that
survived asserted messages only). A malformed request ("NaN", "Infinity", "1e999999") is reported, never raised
(issue 13 item 11)."""
from __future__ import annotations

from typing import Any, Optional

import pytest

from kueue_cohorts.policy.rules.inference_fits_nominal import check_inference_fits_nominal
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, messages, stack, urn
from tests.policy.rules.test_cohort_nominal_within_capacity import MALFORMED


def whole(violation: Any) -> tuple[Any, ...]:
    """Every part of a finding (Violation's equality leaves `value` out)."""
    return (violation.policy, violation.field, violation.value, violation.rule, violation.fix, violation.message,
            violation.urn)


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


def test_replica_above_nominal_fails():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpucores"] = "40"
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["memory"] = "9Gi"
    violations = check_inference_fits_nominal(stack(manifests))
    head = ("The InferenceService 'c12-inference/c12-inference-demo' requests per replica more than the nominalQuota "
            "of ClusterQueue 'c12-inference-cq' behind LocalQueue 'c12-inference/c12-inference-lq': ")
    tail = ("; lower the predictor's requests or raise the ClusterQueue's nominalQuota, so that serving never runs on "
            "borrowed quota.")
    assert messages(violations) == [head + "'memory' 9Gi (nominalQuota 8Gi)" + tail,
                                    head + "'nvidia.com/gpucores' 40 (nominalQuota 20)" + tail]
    assert [v.urn for v in violations] == [urn("isvc", manifests["isvc"])] * 2
    assert [v.field for v in violations] == ["spec.predictor.model.resources.requests.memory",
                                             'spec.predictor.model.resources.requests["nvidia.com/gpucores"]']


def test_limit_counts_where_request_is_missing():
    manifests = compliant()
    resources = manifests["isvc"]["spec"]["predictor"]["model"]["resources"]
    del resources["requests"]["cpu"]
    resources["limits"]["cpu"] = "5"
    assert "'cpu' 5 (nominalQuota 4)" in messages(check_inference_fits_nominal(stack(manifests)))[0]


def test_inline_containers_are_summed():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["containers"] = [
        {"name": "sidecar", "resources": {"requests": {"cpu": "3500m"}}}]
    assert "'cpu' 4.5 (nominalQuota 4)" in messages(check_inference_fits_nominal(stack(manifests)))[0]


def test_uncovered_resource_fails():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    assert "'nvidia.com/gpu' 1 (the ClusterQueue covers no such resource)" in \
        messages(check_inference_fits_nominal(stack(manifests)))[0]


def test_queue_not_in_stack_fails_closed():
    manifests = compliant()
    del manifests["inference-lq"]
    assert messages(check_inference_fits_nominal(stack(manifests))) == [
        "The InferenceService 'c12-inference/c12-inference-demo' is queued to LocalQueue "
        "'c12-inference/c12-inference-lq', but the LocalQueue 'c12-inference/c12-inference-lq' is not in this stack, "
        "so its nominalQuota cannot be checked and the policy fails closed; define the queue in this stack or queue "
        "the InferenceService to one that is."]


def test_unknown_request_fails_closed():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpumem"] = UNKNOWN
    [violation] = check_inference_fits_nominal(stack(manifests))
    assert violation.message.startswith(
        "The InferenceService 'c12-inference/c12-inference-demo' has "
        "spec.predictor.model.resources.requests[\"nvidia.com/gpumem\"] unknown at preview")


def test_unknown_nominal_quota_is_blamed_on_the_cluster_queue():
    manifests = compliant()
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = UNKNOWN
    [violation] = check_inference_fits_nominal(stack(manifests))
    assert violation.message.startswith("The ClusterQueue 'c12-inference-cq' has spec.resourceGroups[0].flavors[0]"
                                        ".resources[2].nominalQuota unknown at preview")
    assert violation.urn == urn("inference-cq", manifests["inference-cq"])


def test_unqueued_inference_service_is_not_judged():
    manifests = compliant()
    del manifests["isvc"]["metadata"]["labels"]
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["cpu"] = "64"
    assert check_inference_fits_nominal(stack(manifests)) == []


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_request_is_reported_by_the_fit_policy(raw):
    m = compliant()
    m["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpualloc"] = raw
    [found] = check_inference_fits_nominal(stack(m))
    assert (found.subject.name, found.policy) == ("c12-inference-demo", "inference-fits-nominal")
    assert 'resources.requests["nvidia.com/gpualloc"] is ' in found.message
    assert any(why in found.message for why in ("not a Kubernetes quantity", "above the largest quantity"))
