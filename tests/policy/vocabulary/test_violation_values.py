"""`objects.violation`: the value a finding carries and shows is plain data, whatever the rule handed over.

At preview the policy SDK wraps every property in `pulumi_policy.proxy` objects; a rule that passed a map or list as
read (inference-reclaim-unblocked's `spec.preemption.borrowWithinCohort`) printed
"<pulumi_policy.proxy._DictProxy object at 0x...>" in its message. `violation` now makes every value plain first.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.vocabulary.objects import violation
from kueue_cohorts.policy.rules.vocabulary.values import get
from tests.policy.fixtures import compliant, kube

scalars = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.text("abcz-/", max_size=5))  # (null reads as missing)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3)),
    max_leaves=8)


@settings(max_examples=50, deadline=None)
@given(value=values.filter(lambda v: v is not None))  # a field set to null reads as absent (values.get): MISSING
def test_a_value_read_through_the_proxies_is_shown_and_kept_plain(value):
    """Any map, list or scalar read through the SDK's proxies: the message shows its plain repr and `value` equals the
    plain data (a list proxy compares by identity, so it never would)."""
    manifest = compliant()["training-cq"]
    manifest["spec"]["preemption"]["borrowWithinCohort"] = value
    obj = kube("training-cq", manifest)
    found = violation(obj, "p", "spec.preemption.borrowWithinCohort", get(obj.spec, "preemption", "borrowWithinCohort"),
                      "the rule", "the fix")
    assert found.value == value and type(found.value) is type(value)
    assert found.message.startswith("The ClusterQueue 'c12-training-cq' has spec.preemption.borrowWithinCohort = ")
    assert found.message.endswith(": the rule; the fix.") and "proxy" not in found.message


def test_the_borrow_within_cohort_finding_shows_the_setting_as_written():
    """The finding that showed the proxy: the whole message, the setting written out."""
    manifest = compliant()["training-cq"]
    manifest["spec"]["preemption"]["borrowWithinCohort"] = {"policy": "LowerPriority"}
    obj = kube("training-cq", manifest)
    found = violation(obj, "p", "spec.preemption.borrowWithinCohort", get(obj.spec, "preemption", "borrowWithinCohort"),
                      "r", "f")
    assert found.message == ("The ClusterQueue 'c12-training-cq' has spec.preemption.borrowWithinCohort = "
                             "{'policy': 'LowerPriority'}: r; f.")
