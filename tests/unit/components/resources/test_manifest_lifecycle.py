"""Issue 28 finding 10: the Kueue kinds whose delete Kueue holds back (ClusterQueue, ResourceFlavor) are registered
with a bounded delete, whatever component registers them (components/resources/manifest.py `lifecycle`); deploy
explains a delete that ran out (tests/unit/deploy/test_queue_holders.py, tests/e2e/test_20_queues_in_use.py)."""
from __future__ import annotations

import pulumi
import pytest

from kueue_cohorts.components.model.kueue import RELEASE_WAIT_S
from kueue_cohorts.components.resources.manifest import lifecycle


@pytest.mark.parametrize("kind,bounded", [("ClusterQueue", True), ("ResourceFlavor", True), ("LocalQueue", False),
                                          ("Cohort", False), ("WorkloadPriorityClass", False)])
def test_the_kinds_kueue_holds_are_registered_with_a_bounded_delete(kind, bounded):
    timeouts = lifecycle("kueue.x-k8s.io/v1beta2", kind).custom_timeouts
    if bounded:
        assert isinstance(timeouts, pulumi.CustomTimeouts) and timeouts.delete == f"{RELEASE_WAIT_S}s"
    else:
        assert timeouts is None
    assert lifecycle("v1", kind).custom_timeouts is None


@pytest.mark.parametrize("api_version,kind,bounded", [
    ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", True),
    ("trainer.kubeflow.org/v1alpha2", "TrainingRuntime", True),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob", False),
    ("kueue.x-k8s.io/v1beta2", "TrainingRuntime", False),
    ("v1", "PersistentVolumeClaim", False)])
def test_a_training_runtime_the_trainer_holds_has_a_bounded_delete(api_version, kind, bounded):
    """Issue 39 item 2: a destroy after HoldAndDrain sat 10 minutes (the provider's default) on the TrainingRuntime,
    which the Trainer keeps behind trainer.kubeflow.org/resource-in-use while a suspended TrainJob names it."""
    timeouts = lifecycle(api_version, kind).custom_timeouts
    if bounded:
        assert isinstance(timeouts, pulumi.CustomTimeouts) and timeouts.delete == f"{RELEASE_WAIT_S}s"
    else:
        assert timeouts is None
