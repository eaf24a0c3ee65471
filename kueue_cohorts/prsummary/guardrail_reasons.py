"""Why a change updates the in-cluster guardrails: the stack values each ValidatingAdmissionPolicy embeds.

The guardrails' CEL carries constants taken from the stack (policy/rules/book/admission.py: `LayoutScope` holds what one
layout's guardrails know; `Identities` is `admission.identities`): a quota change updates
INFERENCE_ROLLOUT_FITS_NOMINAL, whose expression embeds the inference ClusterQueue's nominalQuota. The preview lists
that update like any other; this module says why, by counterfactual: for each input of the guardrail that differs
between the base and the change, the base's guardrail is rebuilt with only that input changed, and the input is a
reason when the policy changes with it. An update no stack input explains is the program's own rule changing.
"""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Optional

from kueue_cohorts.components.model.admission import identities, layout_scopes
from kueue_cohorts.components.settings import Settings
from kueue_cohorts.components.settings.errors import shown
from kueue_cohorts.policy.rules.book.admission import Guardrail, Identities, LayoutScope, guardrails

#: What each input of a layout's guardrails is, in a reader's words (the LayoutScope field, or `identities`).
WORDS: dict[str, str] = {
    "cohort": "the cohort's name",
    "cluster_queues": "the layout's ClusterQueue names",
    "inference_cluster_queues": "the inference ClusterQueue's name",
    "inference_priority_classes": "the inference WorkloadPriorityClass and its value",
    "training_priority_classes": "the training WorkloadPriorityClass and its value",
    "tenant_label": "the tenant namespace label (namespaceLabel)",
    "inference_namespaces": "the inference namespaces",
    "inference_nominal": "the inference ClusterQueue's nominalQuota",
    "cohort_tree": "the cohort tree",
    "kueue_namespace": "Kueue's namespace (kueue.namespace)",
    "identities": "the deploy identities (admission.identities)",
}
PROGRAM = "the guardrail's rule itself changed in the program (no stack value it embeds differs)"


def _policy(rails: list[Guardrail], name: str) -> Optional[dict[str, Any]]:
    return next((rail.policy_manifest() for rail in rails if rail.name == name), None)


def _why(name: str, old: dict[str, Any], base: LayoutScope, after: LayoutScope, base_ids: Identities,
         after_ids: Identities) -> str:
    found = []
    for field in fields(LayoutScope):
        was, now = getattr(base, field.name), getattr(after, field.name)
        if was != now and _policy(guardrails(replace(base, **{field.name: now}), base_ids), name) not in (None, old):
            found.append(f"{WORDS.get(field.name, field.name)}, {shown(was)} → {shown(now)}")
    if base_ids != after_ids and _policy(guardrails(base, after_ids), name) not in (None, old):
        found.append(f"{WORDS['identities']}, {shown(base_ids.users + base_ids.groups)} → "
                     f"{shown(after_ids.users + after_ids.groups)}")
    return "its CEL embeds " + "; ".join(found) if found else PROGRAM


def reasons(before: Optional[Settings], after: Optional[Settings]) -> dict[str, str]:
    """Guardrail name (`kueue-cohorts.<cohort>.<policy>`, the ValidatingAdmissionPolicy's and its Pulumi resource's
    suffix) -> why the change updates it: `its CEL embeds <input>, <before> → <after>` for every stack input whose
    change alone changes the policy, else PROGRAM. Only guardrails present on both sides and different are listed;
    empty when a side does not validate (None)."""
    if before is None or after is None:
        return {}
    base_scopes = {scope.cohort: scope for scope in layout_scopes(before)}
    base_ids, after_ids = identities(before), identities(after)
    out: dict[str, str] = {}
    for scope in layout_scopes(after):
        base = base_scopes.get(scope.cohort)
        if base is None:
            continue
        base_rails = guardrails(base, base_ids)
        for rail in guardrails(scope, after_ids):
            old = _policy(base_rails, rail.name)
            if old is not None and old != rail.policy_manifest():
                out[rail.name] = _why(rail.name, old, base, scope, base_ids, after_ids)
    return out
