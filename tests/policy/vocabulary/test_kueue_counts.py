"""kueue_cohorts/policy/rules/vocabulary/kueue_counts.py: how Kueue 0.19.2
counts a transformed resource (`applyResourceTransformations`, pkg/workload/workload.go)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.vocabulary import kueue_counts
from tests.policy.rules.test_cluster_queue_covers_pod_resources import GPU, _config


@settings(max_examples=60, deadline=None)
@given(strategy=st.sampled_from(["Retain", "Replace"]), factor=st.decimals(min_value=-3, max_value=3, places=1),
       multiply=st.sampled_from([None, "cpu"]))
def test_the_transformation_model_follows_apply_resource_transformations(strategy, factor, multiply):
    """Kueue counts a request of 1 GPU as itself in full exactly when the input is retained, or replaced by at least
    1 of itself per unit without a multiplier (pkg/workload/workload.go applyResourceTransformations)."""
    item = {"input": GPU, "strategy": strategy, "outputs": {GPU: str(factor)}}
    if multiply:
        item["multiplyBy"] = multiply
    counting = kueue_counts.parse(_config(resources={"transformations": [item]}))
    full = strategy == "Retain" or (factor >= 1 and multiply is None)
    assert (counting.uncounted(GPU) is None) == full
