"""inference-reclaim-any (kueue_cohorts/policy/rules/inference_reclaim_any.py):
an inference ClusterQueue reclaims within its cohort from any priority (`reclaimWithinCohort: Any`; missing is
Never), each finding asserted whole."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, kube, messages
from tests.policy.rules.test_inference_borrowing_limit_zero import CQ_URN, _inference
from tests.policy.rules.test_inference_fits_nominal import whole


def test_reclaim_missing_is_never_and_fails():
    def drop(m):
        del m["spec"]["preemption"]["reclaimWithinCohort"]
    assert messages(check_inference_reclaim_any(_inference(drop))) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set spec.preemption.reclaimWithinCohort "
        "to Any, but it is not set (Kueue's default is Never); set it to Any so that inference takes its nominal "
        "quota back from borrowing workloads in the cohort whatever their priority."]


def test_reclaim_lower_priority_fails():
    def lower(m):
        m["spec"]["preemption"]["reclaimWithinCohort"] = "LowerPriority"
    assert messages(check_inference_reclaim_any(_inference(lower))) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set spec.preemption.reclaimWithinCohort "
        "to Any, but it is 'LowerPriority'; set it to Any so that inference takes its nominal quota back from "
        "borrowing workloads in the cohort whatever their priority."]


def test_reclaim_unknown_fails_closed():
    def unknown(m):
        m["spec"]["preemption"] = UNKNOWN
    [violation] = check_inference_reclaim_any(_inference(unknown))
    assert violation.message.startswith("The ClusterQueue 'c12-inference-cq' has spec.preemption unknown at preview")


@pytest.mark.parametrize("value, now", [(MISSING, "not set (Kueue's default is Never)"), ("Never", "'Never'"),
                                        ("LowerPriority", "'LowerPriority'")])
def test_reclaim_any_finding_whole(value, now):
    manifest = compliant()["inference-cq"]
    if value is MISSING:
        del manifest["spec"]["preemption"]["reclaimWithinCohort"]
    else:
        manifest["spec"]["preemption"]["reclaimWithinCohort"] = value
    assert [whole(v) for v in check_inference_reclaim_any(kube("inference-cq", manifest))] == [(
        "inference-reclaim-any", "spec.preemption.reclaimWithinCohort", value,
        "the inference ClusterQueue must reclaim its nominalQuota from any borrower, whatever its priority "
        "(Kueue's default is Never)",
        "set reclaimWithinCohort to Any",
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set spec.preemption.reclaimWithinCohort "
        f"to Any, but it is {now}; set it to Any so that inference takes its nominal quota back from borrowing "
        "workloads in the cohort whatever their priority.", CQ_URN)]
