"""``guardrails_intact``: every guardrail the stack renders is live and as strong as rendered."""
from __future__ import annotations

import json
from typing import Any, Mapping

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import VAP_API, Context, meta, read, read_list


def guardrails_intact(ctx: Context) -> list[Difference]:
    """Every guardrail the stack renders is live and as strong as rendered: the policy's ``failurePolicy`` Fail, its
    ``matchConstraints`` (resources, operations; no exclusions, no namespace or object selector), ``matchConditions``
    and ``validations`` as rendered; its binding's ``validationActions`` still Deny when the stack's are, and no
    ``matchResources`` that narrows it. A cluster admin can always edit them: this is where it shows."""
    out: list[Difference] = []
    policies = ctx.expected_of("ValidatingAdmissionPolicy")
    if not policies:
        return out
    bindings = {m["spec"]["policyName"]: m for m in ctx.expected_of("ValidatingAdmissionPolicyBinding")}
    live_bindings = read_list(ctx, VAP_API, "ValidatingAdmissionPolicyBinding", out)
    for policy in policies:
        name = policy["metadata"]["name"]
        live = read(ctx, policy)
        if isinstance(live, Difference):
            out.append(Difference(live.kind, name, "", "", "present", None,
                                  "the guardrail is missing: " + live.rule))
            continue
        out += _policy_weakened(name, policy["spec"], live.get("spec") or {})
        want = bindings.get(name)
        mine = [b for b in live_bindings if (b.get("spec") or {}).get("policyName") == name]
        if want is None or not mine:
            continue  # admission_policies_bound names an unbound policy
        found = [_binding_weakened(meta(binding, "name"), want["spec"], binding.get("spec") or {})
                 for binding in mine]
        if all(found):  # one binding at full strength is enough: another one with Warn or a selector adds nothing
            out += [d for weakened in found for d in weakened]
    return out


def _weak(kind: str, name: str, path: str, want: Any, have: Any, why: str) -> Difference:
    return Difference(kind, name, "", path, want, have, why)


def _policy_weakened(name: str, want: Mapping[str, Any], have: Mapping[str, Any]) -> list[Difference]:
    kind = "ValidatingAdmissionPolicy"
    out = []
    if have.get("failurePolicy", "Fail") != want.get("failurePolicy", "Fail"):
        out.append(_weak(kind, name, "spec.failurePolicy", want.get("failurePolicy"), have.get("failurePolicy"),
                         "the guardrail is weakened: an error in its expressions no longer refuses"))
    match = have.get("matchConstraints") or {}
    wanted = {(g, v, o, r) for rule in (want.get("matchConstraints") or {}).get("resourceRules") or []
              for g in rule["apiGroups"] for v in rule["apiVersions"] for o in rule["operations"]
              for r in rule["resources"]}
    covered = {(g, v, o, r) for rule in match.get("resourceRules") or []
               for g in rule.get("apiGroups") or [] for v in rule.get("apiVersions") or []
               for o in rule.get("operations") or [] for r in rule.get("resources") or []}
    missing = sorted(w for w in wanted if not any(_covers(c, w) for c in covered))
    if missing:
        out.append(_weak(kind, name, "spec.matchConstraints.resourceRules", [list(m) for m in missing], None,
                         "the guardrail is narrowed: it no longer matches these (group, version, operation, "
                         "resource)"))
    for key in ("excludeResourceRules", "namespaceSelector", "objectSelector"):
        if match.get(key):
            out.append(_weak(kind, name, f"spec.matchConstraints.{key}", None, match[key],
                             f"the guardrail is narrowed: matchConstraints.{key} leaves requests unjudged"))
    if match.get("matchPolicy", "Equivalent") != "Equivalent":
        out.append(_weak(kind, name, "spec.matchConstraints.matchPolicy", "Equivalent", match.get("matchPolicy"),
                         "the guardrail is narrowed: requests through another API version are not judged"))
    for key in ("matchConditions", "validations", "variables"):
        if _normalized(want.get(key)) != _normalized(have.get(key)):
            out.append(_weak(kind, name, f"spec.{key}", want.get(key), have.get(key),
                             f"the guardrail is changed: its {key} are not the rule book's"))
    return out


def _normalized(items: Any) -> Any:
    return sorted(json.dumps(i, sort_keys=True) for i in items or [])


def _covers(have: tuple[str, ...], want: tuple[str, ...]) -> bool:
    return all(h == w or h == "*" or (i == 3 and h.endswith("/*") and w.split("/")[0] == h.split("/")[0])
               for i, (h, w) in enumerate(zip(have, want, strict=True)))


def _binding_weakened(name: str, want: Mapping[str, Any], have: Mapping[str, Any]) -> list[Difference]:
    kind = "ValidatingAdmissionPolicyBinding"
    out = []
    wanted, actions = list(want.get("validationActions") or []), list(have.get("validationActions") or [])
    if "Deny" in wanted and "Deny" not in actions:
        out.append(_weak(kind, name, "spec.validationActions", wanted, actions,
                         "the guardrail is weakened: it no longer refuses (Warn or Audit only)"))
    resources = have.get("matchResources") or {}
    for key in ("namespaceSelector", "objectSelector", "excludeResourceRules", "resourceRules"):
        if resources.get(key):
            out.append(_weak(kind, name, f"spec.matchResources.{key}", None, resources[key],
                             f"the guardrail is narrowed: the binding's matchResources.{key} leaves requests "
                             "unjudged"))
    if have.get("paramRef"):
        out.append(_weak(kind, name, "spec.paramRef", None, have["paramRef"],
                         "the guardrail is changed: the binding names parameters the policy does not take"))
    return out
