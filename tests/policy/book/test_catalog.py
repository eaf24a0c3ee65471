"""The pack's assembly: policy names, default levels, config schemas, and the SDK adapters.

The last tests drive the SDK's own analyzer servicer (the object the engine talks to over gRPC) with protobuf
requests carrying Pulumi's unknown sentinel, to show that our mandatory policies report a MANDATORY violation
naming the field where the SDK alone would only print an advisory "can't run policy". `PolicyPack` itself is never
built here (its constructor serves forever).
"""
from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import unknown_checking_proxy

from kueue_cohorts.policy.rules.book import RULES
from kueue_cohorts.policy.rules.book.catalog import PACK_NAME, build_policies
from kueue_cohorts.policy.rules.book.config import SCHEMAS
from kueue_cohorts.policy.rules.checkpoint_safe_runtime import MIN_TERMINATION_GRACE_PERIOD_SECONDS
from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import COHORT_NOMINAL_WITHIN_CAPACITY, LEGACY_CAPACITY
from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import INFERENCE_BORROWING_LIMIT_ZERO
from kueue_cohorts.policy.rules.inference_peak_fits_nominal import INFERENCE_PEAK_FITS_NOMINAL
from kueue_cohorts.policy.rules.inference_reclaim_any import INFERENCE_RECLAIM_ANY
from kueue_cohorts.policy.rules.kueue_api_version import KUEUE_API_VERSION
from kueue_cohorts.policy.rules.kueue_manager_config import KUEUE_MANAGER_CONFIG
from kueue_cohorts.policy.rules.namespace_selector import CLUSTER_QUEUE_NAMESPACE_SELECTOR
from kueue_cohorts.policy.rules.vocabulary.declaration import Level, Promise
from tests.policy.fixtures import DEV_CAPACITY, UNKNOWN, compliant, type_token, urn

REPO = Path(__file__).resolve().parents[3]
MANDATORY = {rule.name for rule in RULES if rule.level is Level.MANDATORY}
ADVISORY = {rule.name for rule in RULES if rule.level is Level.ADVISORY}
CAPACITY = COHORT_NOMINAL_WITHIN_CAPACITY.name


def _policies():
    return {p.name: p for p in build_policies()}


def _opts():
    return PolicyResourceOptions(False, [], None, [], None, [], None)


def test_every_policy_has_its_default_level_and_a_schema_entry():
    policies = _policies()
    assert len(RULES) == len(policies) == 28
    assert set(policies) == MANDATORY | ADVISORY == set(SCHEMAS)
    assert ADVISORY == {CLUSTER_QUEUE_NAMESPACE_SELECTOR.name, INFERENCE_PEAK_FITS_NOMINAL.name}
    assert {n for n, p in policies.items() if p.enforcement_level == EnforcementLevel.MANDATORY} == MANDATORY
    assert {n for n, p in policies.items() if p.enforcement_level == EnforcementLevel.ADVISORY} == ADVISORY


def test_readme_lists_every_policy_with_a_failing_and_a_passing_example():
    readme = (REPO / "kueue_cohorts" / "policy" / "README.md").read_text()
    for name in _policies():
        section = readme.split(f"### `{name}`")[1].split("### ")[0]
        assert "Fails:" in section and "Passes:" in section, name


def test_readme_sections_follow_the_promises_in_book_order():
    """Each rule is documented under its promise's heading, and the promises come in `Promise` order."""
    readme = (REPO / "kueue_cohorts" / "policy" / "README.md").read_text()
    positions = [readme.index(f"\n## {promise.heading}\n") for promise in Promise]
    assert positions == sorted(positions)
    for rule in RULES:
        section = readme.split(f"\n## {rule.promise.heading}\n")[1].split("\n## ")[0]
        assert f"### `{rule.name}`" in section, (rule.name, rule.promise)


def test_options_default_and_read_back_protobuf_numbers():
    assert MIN_TERMINATION_GRACE_PERIOD_SECONDS.read({}) == 60
    assert MIN_TERMINATION_GRACE_PERIOD_SECONDS.read({"minTerminationGracePeriodSeconds": 90.0}) == 90
    assert isinstance(MIN_TERMINATION_GRACE_PERIOD_SECONDS.read({"minTerminationGracePeriodSeconds": 90.0}), int)
    assert LEGACY_CAPACITY.read({}) == {}


def test_resource_adapter_reports_through_the_callback():
    manifest = compliant()["inference-cq"]
    manifest["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    args = ResourceValidationArgs(type_token(manifest), unknown_checking_proxy(manifest), urn("cq", manifest), "cq",
                                  _opts(), None, config={})
    reported = []
    _policies()[KUEUE_API_VERSION.name].validate(args, lambda msg, u=None: reported.append((msg, u)))
    assert len(reported) == 1 and reported[0][1] == urn("cq", manifest)
    assert reported[0][0].startswith("The ClusterQueue 'c12-inference-cq' uses kueue.x-k8s.io/v1beta1")


def test_inference_rules_judge_through_the_stack_adapter():
    manifests = compliant()
    manifests["inference-cq"]["spec"]["preemption"]["reclaimWithinCohort"] = "Never"
    resources = [PolicyResource(type_token(m), unknown_checking_proxy(m), urn(n, m), n, _opts(), None, None, [], {})
                 for n, m in manifests.items()]
    reported = []
    _policies()[INFERENCE_RECLAIM_ANY.name].validate(
        StackValidationArgs(resources, config={}), lambda msg, u=None: reported.append((msg, u)))
    assert len(reported) == 1 and reported[0][1] == urn("inference-cq", manifests["inference-cq"])
    assert reported[0][0].startswith("The ClusterQueue 'c12-inference-cq' is an inference queue")


def test_resource_adapter_ignores_non_kubernetes_resources():
    args = ResourceValidationArgs("pulumi:providers:kubernetes", {}, "urn:x", "k8s", _opts(), None)
    reported = []
    for policy in build_policies():
        if hasattr(policy, "validate") and policy.name in (KUEUE_API_VERSION.name, KUEUE_MANAGER_CONFIG.name):
            policy.validate(args, lambda msg, u=None: reported.append(msg))
    assert reported == []


def test_stack_adapter_passes_every_kubernetes_object_and_the_config():
    resources = [PolicyResource(type_token(m), unknown_checking_proxy(m), urn(n, m), n, _opts(), None, None, [], {})
                 for n, m in compliant().items()]
    resources.append(PolicyResource("pulumi:pulumi:Stack", {}, "urn:stack", "stack", _opts(), None, None, [], {}))
    pools = [{"name": "gpu", "labels": {}, "capacity": dict(DEV_CAPACITY, cpu="3")}]
    reported = []
    _policies()[CAPACITY].validate(
        StackValidationArgs(resources, config={"nodePools": pools}), lambda msg, u=None: reported.append(msg))
    assert len(reported) == 1 and "sums to 4 of 'cpu'" in reported[0] and "above the 3 of the nodes" in reported[0]


def _servicer():
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", build_policies(), EnforcementLevel.MANDATORY)
    config = {CAPACITY: proto.PolicyConfig(
        enforcementLevel=proto.MANDATORY, properties=json_format.ParseDict({"capacity": DEV_CAPACITY},
                                                                          struct_pb2.Struct()))}
    servicer.Configure(proto.ConfigureAnalyzerRequest(policyConfig=config), None)
    return servicer


def _struct(manifest):
    return json_format.ParseDict(json.loads(json.dumps(manifest)), struct_pb2.Struct())


def test_unknown_gpu_quota_is_a_mandatory_violation_through_the_sdk_servicer():
    manifest = compliant()["inference-cq"]
    manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["borrowingLimit"] = UNKNOWN
    request = proto.AnalyzeStackRequest(resources=[proto.AnalyzerResource(
        type=type_token(manifest), properties=_struct(manifest), urn=urn("cq", manifest), name="cq")])
    response = _servicer().AnalyzeStack(request, None)
    found = [(d.policyName, d.enforcementLevel, d.message) for d in response.diagnostics
             if d.policyName == INFERENCE_BORROWING_LIMIT_ZERO.name]
    assert found == [(
        INFERENCE_BORROWING_LIMIT_ZERO.name, proto.MANDATORY,
        "Inference ClusterQueues set borrowingLimit 0 for every resource of every flavor.\n"
        "The ClusterQueue 'c12-inference-cq' has spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit "
        "unknown at preview, so this policy cannot check it and fails closed; give spec.resourceGroups[0].flavors[0]"
        ".resources[2].borrowingLimit a value known at preview (a literal or stack config, not an output of another "
        "resource).")]


def test_unknown_nominal_quota_fails_the_capacity_stack_policy_through_the_sdk_servicer():
    manifests = compliant()
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = UNKNOWN
    request = proto.AnalyzeStackRequest(resources=[
        proto.AnalyzerResource(type=type_token(m), properties=_struct(m), urn=urn(n, m), name=n)
        for n, m in manifests.items()])
    response = _servicer().AnalyzeStack(request, None)
    found = [(d.policyName, d.enforcementLevel) for d in response.diagnostics]
    assert (CAPACITY, proto.MANDATORY) in found
    # Every policy whose verdict depends on the quota reports it at its own level: the advisory peak rule too.
    assert (INFERENCE_PEAK_FITS_NOMINAL.name, proto.ADVISORY) in found
    assert all(level == proto.MANDATORY for name, level in found if name != INFERENCE_PEAK_FITS_NOMINAL.name)
    assert not any("can't run policy" in d.message for d in response.diagnostics)


def test_node_pools_of_the_pack_config_reach_the_capacity_policy_through_the_sdk_servicer():
    """Issue 26 promise 1: the pools' labels and counts pass the gRPC Struct (numbers as floats) intact."""
    def judged(flavor_labels: dict) -> list[str]:
        servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", build_policies(), EnforcementLevel.MANDATORY)
        pools = [{"name": "gpu", "count": 2, "labels": {"gpu": "h100"}, "capacity": dict(DEV_CAPACITY, cpu="2")}]
        config = {CAPACITY: proto.PolicyConfig(
            enforcementLevel=proto.MANDATORY,
            properties=json_format.ParseDict({"nodePools": pools}, struct_pb2.Struct()))}
        servicer.Configure(proto.ConfigureAnalyzerRequest(policyConfig=config), None)
        manifests = compliant()
        manifests["flavor"]["spec"] = {"nodeLabels": flavor_labels}
        request = proto.AnalyzeStackRequest(resources=[
            proto.AnalyzerResource(type=type_token(m), properties=_struct(m), urn=urn(n, m), name=n)
            for n, m in manifests.items()])
        return [d.message for d in servicer.AnalyzeStack(request, None).diagnostics
                if d.policyName == CAPACITY]

    assert judged({"gpu": "h100"}) == []  # cpu 4 fits 2 nodes x 2
    [message] = judged({"gpu": "a100"})
    assert "selects nodes labelled gpu=a100, which no node pool carries" in message


def test_analyzer_info_carries_every_policy_with_its_schema():
    info = _servicer().GetAnalyzerInfo(None, None)
    policies = {p.name: p for p in info.policies}
    assert set(policies) == MANDATORY | ADVISORY
    schema = json_format.MessageToDict(policies[CAPACITY].configSchema.properties)
    assert schema["capacity"]["default"] == {} and schema["nodePools"]["default"] == []
    assert policies[CLUSTER_QUEUE_NAMESPACE_SELECTOR.name].enforcementLevel == proto.ADVISORY
