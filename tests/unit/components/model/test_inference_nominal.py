"""The inference nominal has one definition (issue 40 item 1): `CohortPlan.inference_nominal`, the rule book's own
reading of the planned inference ClusterQueue (`nominal_of`: per resource the largest nominalQuota over its flavors).
The rollout strategy a declared service is rendered with, the in-cluster guardrail's scope and the pack's
INFERENCE_ROLLOUT_FITS_NOMINAL all read it, so over any list of inference flavors the render picks the default surge
exactly when the rule accepts it."""
from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.policy.rules.book.admission import kube_object
from kueue_cohorts.policy.rules.inference_rollout_fits_nominal import (
    INFERENCE_ROLLOUT_FITS_NOMINAL,
    check_inference_rollout_fits_nominal,
)
from kueue_cohorts.policy.rules.vocabulary.quantity import parse
from tests.helpers import stack_raw

GPU = "nvidia.com/gpu"


def _stack(gpus: list[int], cpus: list[int], max_replicas: int) -> dict:
    """The mixed stack with one inference flavor per entry of `gpus` / `cpus` (in that order, each on its own node
    pool, big enough for any quota drawn here) and one served model of 1 GPU and 2 CPUs per replica."""
    raw = stack_raw("mixed")
    names = [f"flavor-{i}" for i in range(len(gpus))]
    raw["nodePools"] = [{"name": n, "count": 8, "capacity": {"cpu": "64", "memory": "256Gi", GPU: "8"},
                         "labels": {"pool": n}, "resourceFlavor": n} for n in names]
    raw["resourceFlavors"] = [{"name": n} for n in names]
    inference = raw["inferenceTraining"]["inference"]
    inference["flavors"] = [{"name": n, "nominalQuota": {"cpu": str(c), "memory": "64Gi", GPU: str(g)}}
                            for n, g, c in zip(names, gpus, cpus, strict=True)]
    inference["services"] = [{"name": "llm", "modelFormat": "huggingface", "storageUri": "s3://models/llm",
                              "requests": {"cpu": "2", "memory": "1Gi", GPU: "1"}, "minReplicas": 1,
                              "maxReplicas": max_replicas}]
    return raw


flavors = st.integers(1, 3).flatmap(lambda n: st.tuples(st.lists(st.integers(1, 8), min_size=n, max_size=n),
                                                         st.lists(st.integers(2, 24), min_size=n, max_size=n)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flavors, st.integers(1, 12))
def test_render_guardrail_and_rule_read_one_inference_nominal(quotas, max_replicas):
    gpus, cpus = quotas
    stack = assemble(load_settings(_stack(gpus, cpus, max_replicas)))
    layout = stack.rendered.inference_training
    nominal = layout.plan.inference_nominal
    assert {r: parse(v) for r, v in nominal.items()} == {
        "cpu": Decimal(max(cpus)), "memory": parse("64Gi"), GPU: Decimal(max(gpus))}
    assert stack.scopes[0].inference_nominal == nominal  # the in-cluster guardrail's constants

    objects = [kube_object(r.manifest) for r in stack.judged()]
    queues = [layout.plan.cluster_queues[0].name]
    assert check_inference_rollout_fits_nominal(objects, queues) == []  # the strategy rendered is accepted
    (service,) = layout.services
    predictor = dict(service.manifest["spec"]["predictor"])
    rendered_strategy = predictor.pop("deploymentStrategy", None)
    default = {**service.manifest, "spec": {**service.manifest["spec"], "predictor": predictor}}
    at_default = [kube_object(default) if o.kind == "InferenceService" else o for o in objects]
    refused = [v.policy for v in check_inference_rollout_fits_nominal(at_default, queues)]
    # the default surge is rendered exactly when the rule accepts it; otherwise maxSurge 0 (and the rule refuses it)
    assert refused == ([INFERENCE_ROLLOUT_FITS_NOMINAL.name] if rendered_strategy is not None else [])
