"""no-helm-release (kueue_cohorts/policy/rules/no_helm_release.py): a Helm v3
Release hides its objects from the book and is refused; a v4 Chart's objects are judged."""
from __future__ import annotations

from pulumi_policy.proxy import unknown_checking_proxy

from kueue_cohorts.policy.rules.no_helm_release import check_helm_release
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef, from_resource
from tests.policy.fixtures import compliant, stack


def test_helm_v3_release_is_refused_and_v4_chart_is_not():
    release = from_resource("kubernetes:helm.sh/v3:Release", unknown_checking_proxy({"chart": "kueue", "values": {}}),
                            "urn:pulumi:test::p::kubernetes:helm.sh/v3:Release::kueue", "kueue")
    [found] = check_helm_release(release, "no-helm-release")
    assert (found.subject, found.field, found.value, found.policy) == (ObjectRef("Release", None, "kueue"), "chart",
                                                                       "kueue", "no-helm-release")
    assert found.fix == ("install the chart with kubernetes:helm.sh/v4:Chart (pulumi_kubernetes.helm.v4.Chart), which "
                         "registers every object of the chart as a resource the pack judges")
    chart = from_resource("kubernetes:helm.sh/v4:Chart", {"chart": "kueue"}, "", "kueue")
    assert check_helm_release(chart, "no-helm-release") == []
    assert all(check_helm_release(o, "no-helm-release") == [] for o in stack(compliant()))
