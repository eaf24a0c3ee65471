"""Issue 13 item 11 in the pack: a malformed quantity ("NaN", "Infinity", "1e999999") in any quota or request is
reported by the existing stack policies, never raised (they parse with quantities.parse)."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.cohort_nominal_within_capacity import check_capacity_options
from kueue_cohorts.policy.rules.inference_fits_nominal import check_inference_fits_nominal
from kueue_cohorts.policy.rules.single_layout_per_cohort import check_single_layout_per_cohort
from tests.policy.fixtures import DEV_CAPACITY, compliant, stack

MALFORMED = ["NaN", "-NaN", "sNaN", "Infinity", "-Infinity", "inf", "1e999999", "1e9999999", "9Ei"]


@pytest.mark.timeout(10)  # a hang guard, not a timing assertion
@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_nominal_quota_is_reported_by_the_capacity_policy(raw):
    m = compliant()
    m["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = raw
    found = check_capacity_options(stack(m), {"capacity": DEV_CAPACITY})
    check_single_layout_per_cohort(stack(m))
    [v] = found
    assert (v.subject.name, v.field, v.policy) == (
        "c12-inference-cq",
        "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
        "cohort-nominal-within-capacity",
    )
    assert f"nominalQuota {raw!r}, which is not a Kubernetes quantity" in v.message


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_request_is_reported_by_the_fit_policy(raw):
    m = compliant()
    m["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpualloc"] = raw
    [found] = check_inference_fits_nominal(stack(m))
    assert (found.subject.name, found.policy) == ("c12-inference-demo", "inference-fits-nominal")
    assert 'resources.requests["nvidia.com/gpualloc"] is ' in found.message
    assert any(why in found.message for why in ("not a Kubernetes quantity", "above the largest quantity"))


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_capacity_is_reported(raw):
    found = check_capacity_options(stack(compliant()), {"capacity": dict(DEV_CAPACITY, cpu=raw)})
    assert any(f"capacity['cpu'] is {raw!r}, not a non-negative Kubernetes quantity" in v.message for v in found)
    found = check_capacity_options(stack(compliant()), {"nodePools": [{"name": "n", "labels": {},
                                                                       "capacity": dict(DEV_CAPACITY, cpu=raw)}]})
    assert any(f"nodePools[0].capacity['cpu'] is {raw!r}, not a non-negative" in v.message for v in found)
