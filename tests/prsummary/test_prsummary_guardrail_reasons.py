"""Why a change updates a guardrail (issue 39 item 5): a quota change listed an update of the CEL policy
`inference-rollout-fits-nominal` without saying why. Every guardrail a change updates now names the stack value its
CEL embeds, before and after; the summary says it under the resource table."""
from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.prsummary import document
from kueue_cohorts.prsummary.events import PreviewReport, ResourceChange
from kueue_cohorts.prsummary.guardrail_reasons import PROGRAM, reasons
from tests.helpers import stack_raw

RAIL = "kueue-cohorts.c12-shared.{}"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"


def _inference(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["inferenceTraining"]["inference"]


def _quota(raw: dict[str, Any]) -> None:
    _inference(raw)["nominalQuota"]["cpu"] = "3"


def _priority(raw: dict[str, Any]) -> None:
    _inference(raw)["priorityClass"]["value"] = 2000


def _label(raw: dict[str, Any]) -> None:
    raw["inferenceTraining"]["namespaceLabel"] = "example.com/tenant"


def _identity(raw: dict[str, Any]) -> None:
    raw.setdefault("admission", {}).setdefault("identities", {})["users"] = ["system:serviceaccount:ci:deployer"]


CASES: list[tuple[Callable[[dict[str, Any]], None], str, str]] = [
    (_quota, "inference-rollout-fits-nominal", 'the inference ClusterQueue\'s nominalQuota, {"cpu": "4"'),
    (_priority, "workload-priority-class", "the inference WorkloadPriorityClass and its value, "
                                           '{"c12-inference-prio": 1000} → {"c12-inference-prio": 2000}'),
    (_label, "tenant-label", 'the tenant namespace label (namespaceLabel), "kueue.x-k8s.io/queue" → '
                                   '"example.com/tenant"'),
    (_identity, "cohort-membership", 'the deploy identities (admission.identities), ["kueue-cohorts-admin"] → '
                                     '["system:serviceaccount:ci:deployer"]'),
]


@pytest.mark.parametrize(("edit", "policy", "why"), CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_every_guardrail_a_change_updates_names_the_value_it_embeds(edit, policy, why):
    raw = stack_raw("dev")
    before = load_settings(copy.deepcopy(raw))
    edit(raw)
    found = reasons(before, load_settings(raw))
    assert RAIL.format(policy) in found, found
    assert found[RAIL.format(policy)].startswith("its CEL embeds ") and why in found[RAIL.format(policy)]
    assert PROGRAM not in found.values()  # every update is explained by a stack value


def test_an_unchanged_stack_updates_no_guardrail():
    settings = load_settings(stack_raw("dev"))
    assert reasons(settings, settings) == {}
    assert reasons(None, settings) == {}


def test_the_summary_says_why_under_the_resource_table():
    raw = stack_raw("dev")
    before = load_settings(copy.deepcopy(raw))
    _quota(raw)
    name = RAIL.format("inference-rollout-fits-nominal")
    report = PreviewReport(ran=True, changes=[
        ResourceChange("update", "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "c12-inference-cq", "urn:a",
                       ("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",)),
        ResourceChange("update", VAP, f"guardrails-vap-{name}", "urn:b", ("spec.validations",))])
    quotas = document.QuotaSide((), guardrail_reasons=tuple(reasons(before, load_settings(raw)).items()))
    text = document.render("dev", "main", report, quotas)
    lines = text.splitlines()
    at = lines.index("Why the guardrails (ValidatingAdmissionPolicies) change:")
    assert lines[at + 1].startswith(f"- `guardrails-vap-{name}`: its CEL embeds the inference ClusterQueue's "
                                    'nominalQuota, {"cpu": "4"')
    assert '→ {"cpu": "3"' in lines[at + 1]
