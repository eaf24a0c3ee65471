"""The pack's per-call cost (issue 15 item 3): it parses the engine's PULUMI_CONFIG once, not on every call the SDK
serves, and it judges a stack once per AnalyzeStack call, not once per stack policy.

pulumi-policy's analyzer servicer re-reads the whole stack config (`pulumi.runtime.get_config_env()`, a JSON parse
of PULUMI_CONFIG, which lists every tenant) at the start of each Analyze and Remediate call, i.e. twice per resource:
tenants x resources. These tests drive the SDK's own servicer and count the parses (no timing); they restore
`pulumi.runtime.get_config_env` afterwards (monkeypatch).
"""
from __future__ import annotations

import json

import pulumi.runtime
import pytest
from google.protobuf import struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from kueue_cohorts.policy.rules import book
from kueue_cohorts.policy.rules.book import catalog
from kueue_cohorts.policy.rules.book.catalog import (
    PACK_NAME,
    build_policies,
    judge_each_stack_once,
    parse_config_env_once,
)
from kueue_cohorts.policy.rules.vocabulary import roles
from tests.policy.fixtures import UNKNOWN, compliant, type_token, urn


def _stack_config(tenants: int) -> str:
    """PULUMI_CONFIG as the engine sets it: key -> the JSON text of the value."""
    pool = {"cohort": "pool", "tenants": [{"name": f"t{i:04d}", "floor": {"cpu": "1"}} for i in range(tenants)]}
    return json.dumps({"kueue-cohorts:sharedPool": json.dumps(pool), "kueue-cohorts:cluster": '{"mode":"sandbox"}'})


@pytest.fixture
def parses(monkeypatch):
    """Count json.loads calls on the exact PULUMI_CONFIG text (the SDK's and ours); PULUMI_* of a preview set."""
    counted: list[str] = []
    real = json.loads

    def counting(text, *args, **kwargs):
        if isinstance(text, str) and text == counting.config:  # type: ignore[attr-defined]
            counted.append(text)
        return real(text, *args, **kwargs)

    counting.config = None  # type: ignore[attr-defined]
    monkeypatch.setattr(json, "loads", counting)
    monkeypatch.setattr(pulumi.runtime, "get_config_env", pulumi.runtime.get_config_env)  # restored after the test
    catalog._parsed_config_env.cache_clear()
    for key, value in {"PULUMI_PROJECT": "kueue-cohorts", "PULUMI_STACK": "bench", "PULUMI_DRY_RUN": "true"}.items():
        monkeypatch.setenv(key, value)

    def use(config: str) -> list[str]:
        monkeypatch.setenv("PULUMI_CONFIG", config)
        counting.config = config  # type: ignore[attr-defined]
        counted.clear()
        # a fresh analyzer process each time: a hypothesis example drawing the same config as an earlier one
        # would otherwise find it parsed already (a CI run drew tenants=1 twice and counted 0 parses)
        catalog._parsed_config_env.cache_clear()
        return counted

    return use


def _requests(n: int) -> list:
    requests = []
    for i in range(n):
        manifest = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                    "metadata": {"name": f"q{i}", "namespace": f"t{i:04d}"}, "spec": {"clusterQueue": f"t{i:04d}"}}
        props = struct_pb2.Struct()
        props.update(manifest)
        requests.append(proto.AnalyzeRequest(type=type_token(manifest), properties=props, urn=urn(f"q{i}", manifest),
                                             name=f"q{i}"))
    return requests


# `parses(...)` resets the counter and PULUMI_CONFIG for every example, so the function-scoped fixture is safe here.
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tenants=st.integers(min_value=1, max_value=300), resources=st.integers(min_value=2, max_value=12))
def test_analyze_and_remediate_parse_the_stack_config_once(parses, tenants, resources):
    counted = parses(_stack_config(tenants))
    parse_config_env_once()
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.MANDATORY)
    for request in _requests(resources):
        servicer.Remediate(request, None)
        assert not servicer.Analyze(request, None).diagnostics
    assert len(counted) == 1
    # what the SDK put in the ambient config is the stack's config, as without the change
    assert pulumi.runtime.get_config_env() == json.JSONDecoder().decode(_stack_config(tenants))


def test_a_new_config_value_is_parsed_and_callers_get_their_own_copy(parses):
    expected = {n: json.loads(_stack_config(n)) for n in (3, 7)}
    first = parses(_stack_config(3))
    parse_config_env_once()
    parse_config_env_once()  # idempotent
    env = pulumi.runtime.get_config_env()
    env["kueue-cohorts:sharedPool"] = "changed by a caller"
    assert pulumi.runtime.get_config_env() == expected[3]
    assert len(first) == 1
    second = parses(_stack_config(7))
    assert pulumi.runtime.get_config_env() == expected[7]
    assert len(second) == 1


def test_no_config_is_an_empty_mapping(parses, monkeypatch):
    parses("{}")
    monkeypatch.delenv("PULUMI_CONFIG")
    parse_config_env_once()
    assert pulumi.runtime.get_config_env() == {}


@pytest.fixture
def classified(monkeypatch):
    """Count the rule book's classifications of ClusterQueue roles (a per-stack computation); restore the SDK."""
    calls: list[int] = []
    real = roles.classify

    def counting(objects, *args, **kwargs):
        calls.append(len(objects))
        return real(objects, *args, **kwargs)

    monkeypatch.setattr(roles, "classify", counting)
    monkeypatch.setattr(_PolicyAnalyzerServicer, "AnalyzeStack", _PolicyAnalyzerServicer.AnalyzeStack)
    return calls


def _stack_request(manifests: dict) -> proto.AnalyzeStackRequest:
    resources = []
    for name, manifest in manifests.items():
        props = struct_pb2.Struct()
        props.update(json.loads(json.dumps(manifest)))
        resources.append(proto.AnalyzerResource(type=type_token(manifest), properties=props, urn=urn(name, manifest),
                                                name=name))
    return proto.AnalyzeStackRequest(resources=resources)


def _violations(response) -> set[tuple[str, str]]:
    return {(d.policyName, d.urn) for d in response.diagnostics}


@pytest.mark.parametrize("borrowing", ["1", "4"])
def test_one_analyze_stack_classifies_the_stack_once_and_a_new_call_judges_anew(classified, borrowing):
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.MANDATORY)
    good = compliant()
    before = _violations(servicer.AnalyzeStack(_stack_request(good), None))
    unpatched = len(classified)
    assert unpatched > 1  # the SDK alone: once per role-aware stack policy

    judge_each_stack_once()
    judge_each_stack_once()  # idempotent
    classified.clear()
    assert _violations(servicer.AnalyzeStack(_stack_request(good), None)) == before
    assert len(classified) == 1

    # the next call (same URNs, other content) is judged on its own content, not on the previous call's objects
    bad = compliant()
    bad["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = borrowing
    classified.clear()
    found = _violations(servicer.AnalyzeStack(_stack_request(bad), None))
    assert ("inference-borrowing-limit-zero", urn("inference-cq", bad["inference-cq"])) in found - before
    assert len(classified) == 1
    assert _violations(servicer.AnalyzeStack(_stack_request(good), None)) == before


@pytest.fixture
def conversions(monkeypatch):
    """Count pulumi-policy's per-resource conversions (`deserialize_properties` of a resource's properties) as its
    analyzer module calls them; every name `judge_each_stack_once` patches is restored after the test."""
    import pulumi_policy.policy as policy_sdk

    calls: list[int] = []
    real = policy_sdk.deserialize_properties

    def counting(props, *args):
        calls.append(1)
        return real(props, *args)

    monkeypatch.setattr(policy_sdk, "deserialize_properties", counting)
    for name in ("json_format", "unknown_checking_proxy"):
        monkeypatch.setattr(policy_sdk, name, getattr(policy_sdk, name))
    monkeypatch.setattr(_PolicyAnalyzerServicer, "AnalyzeStack", _PolicyAnalyzerServicer.AnalyzeStack)
    return calls


def _analyze_request(name: str, manifest: dict) -> proto.AnalyzeRequest:
    props = struct_pb2.Struct()
    props.update(json.loads(json.dumps(manifest)))
    return proto.AnalyzeRequest(type=type_token(manifest), properties=props, urn=urn(name, manifest), name=name)


def _diagnostics(response) -> list[tuple[str, int, str, str]]:
    return [(d.policyName, d.enforcementLevel, d.urn, d.message) for d in response.diagnostics]


def test_one_analyze_stack_deserializes_each_resource_once_with_the_same_findings(conversions):
    """pulumi-policy converts every resource once per stack policy (17 of them); patched, once per call, and every
    diagnostic (policy, level, URN, message) is the same, the unknown-at-preview one included."""
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.MANDATORY)
    manifests = compliant()
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = "2"
    manifests["training-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = UNKNOWN
    stack_policies = sum(1 for rule in book.RULES if rule.stack)
    before = _diagnostics(servicer.AnalyzeStack(_stack_request(manifests), None))
    assert len(conversions) == stack_policies * len(manifests)  # the SDK alone
    conversions.clear()
    servicer.Analyze(_analyze_request("inference-cq", manifests["inference-cq"]), None)
    per_analyze = len(conversions)
    conversions.clear()
    remediations = list(servicer.Remediate(_analyze_request("inference-cq", manifests["inference-cq"]), None)
                        .remediations)
    per_remediate = len(conversions)

    judge_each_stack_once()
    judge_each_stack_once()  # idempotent
    conversions.clear()
    assert _diagnostics(servicer.AnalyzeStack(_stack_request(manifests), None)) == before
    assert len(conversions) == len(manifests)
    # the next call converts its own request anew; Analyze (one resource) is not remembered across calls
    conversions.clear()
    servicer.AnalyzeStack(_stack_request(manifests), None)
    assert len(conversions) == len(manifests)
    conversions.clear()
    for _ in range(2):
        servicer.Analyze(_analyze_request("inference-cq", manifests["inference-cq"]), None)
    assert len(conversions) == 2 * per_analyze
    # Remediate converts with proxy_secrets=True, as it did
    conversions.clear()
    response = servicer.Remediate(_analyze_request("inference-cq", manifests["inference-cq"]), None)
    assert len(conversions) == per_remediate and list(response.remediations) == remediations


_QUOTA = st.sampled_from(["0", "1", "2", "100", UNKNOWN])


# `conversions` holds the SDK's original names for the whole test; each example swaps patched and original in.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(st.sampled_from(sorted(compliant())), min_size=1), inference_borrowing=_QUOTA,
       training_nominal=_QUOTA, inference_nominal=_QUOTA)
def test_findings_are_the_same_with_each_resource_deserialized_once(conversions, names, inference_borrowing,
                                                                    training_nominal, inference_nominal):
    """Any stack (a subset of the compliant objects, quotas changed or unknown at preview): AnalyzeStack reports
    exactly the same diagnostics whether the SDK converts each resource once per call or once per stack policy."""
    import pulumi_policy.policy as policy_sdk

    manifests = {name: manifest for name, manifest in compliant().items() if name in names}
    if "inference-cq" in manifests:
        gpu = manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
        gpu["borrowingLimit"], gpu["nominalQuota"] = inference_borrowing, inference_nominal
    if "training-cq" in manifests:
        manifests["training-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = (
            training_nominal)
    names_patched = ("json_format", "deserialize_properties", "unknown_checking_proxy")
    original = {name: getattr(policy_sdk, name) for name in names_patched}
    analyze_stack = _PolicyAnalyzerServicer.AnalyzeStack
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.MANDATORY)
    try:
        unpatched = _diagnostics(servicer.AnalyzeStack(_stack_request(manifests), None))
        judge_each_stack_once()
        patched = _diagnostics(servicer.AnalyzeStack(_stack_request(manifests), None))
    finally:
        for name, value in original.items():
            setattr(policy_sdk, name, value)
        _PolicyAnalyzerServicer.AnalyzeStack = analyze_stack  # type: ignore[method-assign]
    assert patched == unpatched


def test_one_analyze_stack_walks_each_objects_label_sets_once(conversions, monkeypatch):
    """Every role-aware stack policy reads each object's label sets: within one AnalyzeStack call (one
    `memo.judging()` scope over the shared, once-converted resources) each object is walked once, not once per
    policy; the next call walks its own request again."""
    from kueue_cohorts.policy.rules.vocabulary import queues

    walks: list[int] = []
    real = queues.label_sets

    def counting(props, *args):
        walks.append(id(props))
        return real(props, *args)

    monkeypatch.setattr(queues, "label_sets", counting)
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.MANDATORY)
    manifests = compliant()
    judge_each_stack_once()
    for _ in range(2):
        walks.clear()
        servicer.AnalyzeStack(_stack_request(manifests), None)
        assert len(walks) == len(set(walks)) == len(manifests)
