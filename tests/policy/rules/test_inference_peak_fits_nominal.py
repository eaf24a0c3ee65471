"""inference-peak-fits-nominal (advisory,
kueue_cohorts/policy/rules/inference_peak_fits_nominal.py): the peak replicas of an inference workload against its
ClusterQueue's nominalQuota; its update is judged by inference-rollout-fits-nominal at the replicas that fit."""
from __future__ import annotations

from tests.policy.fixtures import compliant
from tests.policy.rules.test_inference_rollout_fits_nominal import peak, predictor, rollout


def test_peak_above_nominal_is_advisory_and_the_update_is_judged_at_the_replicas_that_fit():
    manifests = compliant()
    predictor(manifests)["maxReplicas"] = 3
    assert rollout(manifests) == []  # maxSurge 0: the update of the 1 replica that fits needs no more
    [finding] = peak(manifests)
    assert (finding.field, finding.value, finding.policy) == ("spec.predictor.maxReplicas", 3,
                                                              "inference-peak-fits-nominal")
    assert "replicas beyond 1 stay pending, and an update started above 1 replicas waits until the autoscaler" \
        in finding.rule
    assert finding.fix.startswith("lower maxReplicas to 1, or raise the nominalQuota of 'nvidia.com/gpualloc' to 3")
    del predictor(manifests)["deploymentStrategy"]
    [violation] = rollout(manifests)
    assert "an update of 1 replicas (maxReplicas, capped at the 1 that fit) with maxSurge the default 25%" \
        in violation.rule
