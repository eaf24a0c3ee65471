"""GPU pods Kueue never sees (issue 37, class 3): the settings check warns about GPU pools without a fence and refuses
a fence the ResourceFlavor does not open for the pods Kueue admits, each with the exact key and fix."""
from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from kueue_cohorts.components.checks.unqueued_rules import tolerates
from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.components.settings import raw_from_stack_file
from kueue_cohorts.components.settings.cluster import Taint, Toleration
from tests.helpers import ROOT, STACKS

FENCE = {"key": "kueue-cohorts/gpu", "value": "true", "effect": "NoSchedule"}
OPEN_FIX = (
    'set kueue-cohorts:nodePools[0].taints: [{key: kueue-cohorts/gpu, value: "true", effect: NoSchedule}] (and taint '
    'the real nodes so) and add {key: kueue-cohorts/gpu, operator: Equal, value: "true", effect: NoSchedule} to '
    "kueue-cohorts:resourceFlavor.tolerations, so that only the pods Kueue admits tolerate it")
TENANTS_FIX = ("; or set kueue-cohorts:kueue.manageJobsWithoutQueueName: true with a managedJobsNamespaceSelector "
               "selecting the tenant namespaces (other namespaces stay open)")


def _dev(taints=None, tolerations=None, manage=None):
    raw = copy.deepcopy(raw_from_stack_file(STACKS / "Pulumi.dev.yaml"))
    if taints is not None:
        raw["nodePools"][0]["taints"] = taints
    if tolerations is not None:
        raw["resourceFlavor"]["tolerations"] = tolerations
    if manage is not None:
        raw.setdefault("kueue", {})["manageJobsWithoutQueueName"] = manage
        if manage:
            raw["kueue"]["managedJobsNamespaceSelector"] = {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-inference", "c12-training"]}]}
    result = validate(raw)
    fence = [w for w in result.warnings if w.key.startswith("kueue-cohorts:nodePools[0].taints")]
    refused = [p for p in result.problems if "places pods there without tolerating it" in p.rule]
    return result, fence, refused


@pytest.mark.parametrize("taints", [
    None,                                                                        # the dev stack as shipped
    [{"key": "nvidia.com/gpualloc", "effect": "NoSchedule"}],                    # keyed by a resource: kueue#170
    [{"key": "kueue-cohorts/gpu", "value": "true", "effect": "PreferNoSchedule"}],  # keeps nobody off
])
def test_a_gpu_pool_without_a_fence_is_named_with_both_fixes(taints):
    result, (warning,), refused = _dev(taints=taints)
    assert result.problems == () and refused == []
    assert warning.key == "kueue-cohorts:nodePools[0].taints"
    assert "a Job or Pod without the queue-name label in a tenant namespace" in warning.rule
    assert "inference is then admitted and its pod stays Pending" in warning.rule
    assert ("is keyed by a resource name" in warning.rule) == (taints is not None and "gpualloc" in taints[0]["key"])
    assert warning.fix == OPEN_FIX + TENANTS_FIX


def test_with_manage_jobs_without_queue_name_only_unmanaged_namespaces_stay_open():
    _, (warning,), _ = _dev(manage=True)
    assert "any pod of a namespace Kueue does not manage" in warning.rule
    assert "queue-name label" not in warning.rule
    assert warning.fix == OPEN_FIX


@pytest.mark.parametrize("toleration", [
    {"key": "kueue-cohorts/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "kueue-cohorts/gpu", "operator": "Exists"},
    {"operator": "Exists"},
    {"key": "kueue-cohorts/gpu", "operator": "Equal", "value": "true"},
])
def test_a_fence_the_flavor_opens_for_admitted_pods_passes(toleration):
    result, fence, refused = _dev(taints=[FENCE], tolerations=[toleration])
    assert (result.problems, fence, refused) == ((), [], [])


@pytest.mark.parametrize("tolerations", [
    [],
    [{"key": "kueue-cohorts/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}],
    [{"key": "kueue-cohorts/gpu", "operator": "Exists", "effect": "NoExecute"}],
    [{"key": "nvidia.com/gpu", "operator": "Exists"}],
])
def test_a_fence_the_flavor_does_not_tolerate_is_refused(tolerations):
    _, fence, (problem,) = _dev(taints=[FENCE], tolerations=tolerations)
    assert fence == []
    assert problem.key == "kueue-cohorts:resourceFlavor.tolerations"
    assert problem.rule.startswith("the nodes of pool 'gpu' carry the taint kueue-cohorts/gpu=true:NoSchedule and "
                                   "ResourceFlavor 'c12-default' places pods there without tolerating it")
    assert problem.fix == ('add {key: kueue-cohorts/gpu, operator: Equal, value: "true", effect: NoSchedule} to '
                           "kueue-cohorts:resourceFlavor.tolerations (Kueue adds a flavor's tolerations to the pods it "
                           "admits)")


@pytest.mark.parametrize("toleration,taint,expected", [
    (Toleration(key="a", operator="Equal", value="1"), Taint(key="a", value="1", effect="NoSchedule"), True),
    (Toleration(key="a", operator="Equal", value="2"), Taint(key="a", value="1", effect="NoSchedule"), False),
    (Toleration(key="a", operator="Equal"), Taint(key="a", effect="NoExecute"), True),  # absent value is ""
    (Toleration(key="a", operator="Exists", effect="NoSchedule"), Taint(key="a", effect="NoExecute"), False),
    (Toleration(operator="Exists"), Taint(key="b", value="x", effect="NoExecute"), True),
    (Toleration(key="b", operator="Exists"), Taint(key="a", effect="NoSchedule"), False),
])
def test_tolerates_follows_core_v1(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_guides_real_cluster_stacks_carry_the_fence(stack):
    result = validate(raw_from_stack_file(STACKS / f"Pulumi.{stack}.yaml"))
    assert [w for w in result.warnings if ".taints" in w.key] == []


def test_kueue_cohorts_validate_prints_the_warning_and_keeps_the_stack_valid():
    run = subprocess.run([sys.executable, "-m", "kueue_cohorts", "validate", "--stack", "dev"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout == "stack dev: valid\n"
    assert "warning: kueue-cohorts:nodePools[0].taints = []: the GPU nodes of pool 'gpu' are not fenced" in run.stderr
