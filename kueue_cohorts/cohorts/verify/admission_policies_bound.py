"""``admission_policies_bound``: every rendered ValidatingAdmissionPolicy has a live binding naming it."""
from __future__ import annotations

from kueue_cohorts.cohorts.verify.compare import Difference
from kueue_cohorts.cohorts.verify.live import VAP_API, Context, KindNotServed, Unreadable


def admission_policies_bound(ctx: Context) -> list[Difference]:
    """Every expected ValidatingAdmissionPolicy has at least one live ValidatingAdmissionPolicyBinding whose
    spec.policyName names it (a policy without a binding validates nothing)."""
    policies = ctx.expected_of("ValidatingAdmissionPolicy")
    if not policies:
        return []
    try:
        bindings = ctx.live.list(VAP_API, "ValidatingAdmissionPolicyBinding")
    except (KindNotServed, Unreadable) as err:
        return [Difference("ValidatingAdmissionPolicyBinding", "*", "", "", "readable", None,
                           f"cannot list bindings ({err or 'not served'})")]
    bound = {(b.get("spec") or {}).get("policyName") for b in bindings}
    return [Difference("ValidatingAdmissionPolicy", p["metadata"]["name"], "", "(binding)",
                       f"a ValidatingAdmissionPolicyBinding with spec.policyName {p['metadata']['name']}", None,
                       "the policy is not bound, so it validates nothing")
            for p in policies if p["metadata"]["name"] not in bound]
