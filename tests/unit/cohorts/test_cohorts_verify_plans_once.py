"""`cohorts verify` plans the stack once (issue 40 item 1): the settings check's render is the one every check reads
(the Context carries the assembled stack), whatever the stack's layouts and MultiKueue workers. Counted on the real
functions (tests.helpers.counting_calls), nothing patched."""
from __future__ import annotations

import importlib

import pytest

from kueue_cohorts.cohorts.expected import expected_objects, worker_expected
from kueue_cohorts.cohorts.target import load_assembled, load_stack
from kueue_cohorts.cohorts.verify import WORKER_CHECKS, verify
from kueue_cohorts.cohorts.verify.unqueued import LIVE_CHECKS
from kueue_cohorts.components.checks.validation import load_settings
from kueue_cohorts.components.model.assembly import assemble
from kueue_cohorts.components.model.plans import plan_inference_training, plan_shared_pool
from tests.helpers import STACKS, counting_calls, stack_raw
from tests.unit.cohorts.test_cohorts_verify import FakeCluster, served

# the module, not the package's re-export
render = importlib.import_module("kueue_cohorts.components.model.render").render
STACK_NAMES = ("dev", "staging", "prod", "mixed")


def _plans(counts):
    return counts["plan_inference_training"] + counts["plan_shared_pool"]


def _layouts(settings):
    return sum(layout is not None for layout in (settings.inference_training, settings.shared_pool))


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_one_verify_run_renders_and_plans_the_stack_once(stack):
    """What `kueue-cohorts verify` runs: the stack file read and checked (its render kept), then every check of
    LIVE_CHECKS against the cluster; one render, one plan per layout, no second assembly."""
    path = STACKS / f"Pulumi.{stack}.yaml"
    cluster = FakeCluster(served(expected_objects(load_stack(path))))
    with counting_calls(render, plan_inference_training, plan_shared_pool, assemble) as counts:
        settings, assembled = load_assembled(path)
        differences = verify(settings, cluster, checks=LIVE_CHECKS, stack=assembled)
    assert differences == []
    assert counts["render"] == 1
    assert counts["assemble"] == 1
    assert _plans(counts) == _layouts(settings) >= 1


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_verify_without_a_stack_assembles_once_for_all_its_checks(stack):
    settings = load_stack(STACKS / f"Pulumi.{stack}.yaml")
    cluster = FakeCluster(served(expected_objects(settings)))
    with counting_calls(render, plan_inference_training, plan_shared_pool) as counts:
        assert verify(settings, cluster, checks=LIVE_CHECKS) == []
    assert counts["render"] == 1
    assert _plans(counts) == _layouts(settings)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_multikueue_verify_renders_each_cluster_once(workers):
    """The manager and each worker: one render each (a worker's stack is rendered inside the manager's), made once
    and read by the manager's checks and by every worker's."""
    raw = stack_raw("dev")
    names = [f"worker-{i}" for i in range(1, workers + 1)]
    raw["multiKueue"] = {"managerTrainer": "CRDsOnly", "workers": [{"name": n} for n in names],
                         "dispatch": [{"clusterQueue": "c12-training-cq", "workers": names}]}
    settings = load_settings(raw)
    built = assemble(settings)
    manager = FakeCluster(served(expected_objects(settings, built)))
    clusters = {n: FakeCluster(served(objects)) for n, objects in worker_expected(built).items()}
    with counting_calls(render, assemble) as counts:
        stack = assemble(settings)
        differences = verify(settings, manager, checks=LIVE_CHECKS, stack=stack)
        for worker in settings.multi_kueue.workers:
            differences += verify(settings, clusters[worker.name], worker_expected(stack)[worker.name],
                                  WORKER_CHECKS, worker=worker, stack=stack)
    assert {d.kind for d in differences} == {"MultiKueueCluster"}  # not Active: the fake cluster runs no Kueue
    assert counts == {"render": 1 + workers, "assemble": 1}
