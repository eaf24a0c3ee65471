"""INFERENCE_PEAK_FITS_NOMINAL (advisory, stack policy): an InferenceService's maxReplicas fit the nominalQuota of its
ClusterQueue, so no replica the autoscaler asks for stays pending.

The lifecycle model (the per-replica requests, the quota, the replicas that fit) is the mandatory rollout policy's
(`inference_rollout_fits_nominal.lifecycles`). Upstream: KServe `reconcilers/hpa/hpa_reconciler.go` (maxReplicas <
minReplicas reads as minReplicas).
"""
from __future__ import annotations

from typing import Iterable

from .inference_rollout_fits_nominal import amounts, lifecycles, raise_to
from .vocabulary.declaration import Declaration, Level, Promise, Scope
from .vocabulary.objects import UNKNOWN_POLICY, KubeObject, violation
from .vocabulary.roles import ROLE_OPTIONS, inference_queue_names
from .vocabulary.surge import max_replicas_that_fit, overflow
from .vocabulary.values import Violation


def check_inference_peak_fits_nominal(objects: Iterable[KubeObject], inference_names: Iterable[str]
                                      ) -> list[Violation]:
    """INFERENCE_PEAK_FITS_NOMINAL (advisory) over the whole stack: an InferenceService's maxReplicas x its
    per-replica requests fits the nominalQuota of its inference ClusterQueue. Returns a violation at
    `spec.predictor.maxReplicas` per InferenceService whose peak does not (steady-state and one-replica problems
    are the mandatory rules' findings), and one per value unknown at preview that the peak depends on."""
    found, problems = lifecycles(list(objects), inference_names)
    # Values unknown at preview fail closed here too (the peak depends on them); quantity problems are the
    # mandatory rules' findings.
    out = [p for p in problems if p.policy == UNKNOWN_POLICY]
    for life in found:
        fit = max_replicas_that_fit(life.requests, life.nominal)
        if not life.autoscaled or not fit or fit < life.steady:
            continue
        over = overflow(life.requests, life.peak, life.nominal)
        if over:
            out.append(violation(
                life.obj, INFERENCE_PEAK_FITS_NOMINAL.name, life.peak_field, life.peak_value,
                f"maxReplicas {life.peak} x the per-replica requests needs more than the nominalQuota of "
                f"ClusterQueue '{life.cluster_queue}' ({amounts(over)}); replicas beyond {fit} stay pending, and an "
                f"update started above {fit} replicas waits until the autoscaler scales down to {fit}",
                f"lower maxReplicas to {fit}, or raise the nominalQuota of {raise_to(over)}"))
    return out


INFERENCE_PEAK_FITS_NOMINAL: Declaration = Declaration(
    name="inference-peak-fits-nominal",
    description="An InferenceService's maxReplicas fit the nominalQuota of its ClusterQueue (replicas beyond it stay "
                "pending).",
    promise=Promise.RECLAIM, level=Level.ADVISORY, scope=Scope.STACK,
    check=lambda objects, options: check_inference_peak_fits_nominal(
        objects, inference_queue_names(objects, options)),
    options=ROLE_OPTIONS)
